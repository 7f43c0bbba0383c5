"""Priority flow control (`switch.pfc`, docs/model-reference.md): a lossless fabric drops
nothing where the same fabric without it drops, pauses spread to the senders in proportion
to the contention, and a fat tree's up-down routes never deadlock."""

import pytest

import wscsim
from wscsim.scenario import load

INCAST = {
    "duration": "50ms",
    "topology": {"kind": "single_switch", "hosts": 9, "link": {"rate": "10Gbps", "delay": "500ns"}},
    "switch": {"buffer": "shared", "shared_buffer": "300KiB", "port_to_port_latency": "500ns"},
    "transport": {"kind": "tcp", "variant": "cubic", "rto_min": "1ms"},
    "workload": {"kind": "incast", "senders": 8, "block": "4MiB", "iterations": 3},
}


def _incast(senders, pfc, tmp_path):
    sc = {**INCAST, "switch": {**INCAST["switch"], **({"pfc": {}} if pfc else {})},
          "workload": {**INCAST["workload"], "senders": senders}}
    r = wscsim.run(sc, out=tmp_path / f"{senders}-{pfc}", plots=False)
    assert r.summary["invariants"]["ok"], r.summary["invariants"]
    return r


def test_pfc_makes_an_incast_lossless(tmp_path):
    lossy = _incast(8, False, tmp_path).summary["headline"]
    assert lossy["drops"] > 0 and lossy["tcp_retransmits"] > 0
    r = _incast(8, True, tmp_path)
    h = r.summary["headline"]
    assert h["drops"] == 0 and h["tcp_retransmits"] == 0 and h["pfc_headroom_drops"] == 0
    assert h["pfc_pause_frames"] > 0 and h["pfc_deadlocked_ports"] == 0
    pfc = r.tables["pfc"]
    # The switch paused every sender; the senders' NICs obeyed.
    senders = pfc[pfc.pauses_received > 0]
    assert sorted(senders.node_name) == [f"h{i}" for i in range(1, 9)]
    assert (pfc.deadlocked == 0).all()


def test_senders_are_paused_more_the_more_share_the_client(tmp_path):
    """Eight senders share the client's link and each may send an eighth of the time: its
    NIC is held about 7/8 of the incast; with two, about half. Never more than n-1 of n."""
    paused = {}
    for n in (2, 4, 8):
        r = _incast(n, True, tmp_path)
        pfc = r.tables["pfc"]
        held = pfc[pfc.pauses_received > 0]
        incast_s = r.summary["simulated_seconds"]
        paused[n] = held.paused_us.mean() / 1e6 / incast_s
        assert paused[n] < (n - 1) / n + 0.05, (n, paused[n])
    assert paused[2] < paused[4] < paused[8], paused
    assert paused[8] > 0.6, paused


@pytest.mark.parametrize("seed", [1, 2])
def test_a_fat_tree_under_pfc_drops_nothing_and_never_deadlocks(seed, tmp_path):
    sc = load("tcp_permutation_fat_tree")
    sc.pop("sweep", None)
    over = {"duration": "3ms", "seed": seed, "switch.buffer": "shared",
            "switch.shared_buffer": "200KiB", "switch.pfc": {}}
    r = wscsim.run(sc, out=tmp_path / "ft", overrides=over, plots=False)
    h = r.summary["headline"]
    assert r.summary["invariants"]["ok"]
    assert h["drops"] == 0 and h["pfc_pause_frames"] > 0
    assert h["pfc_deadlocked_ports"] == 0


def test_a_headroom_too_small_for_the_links_delay_loses_packets(tmp_path):
    """The default headroom covers what arrives while a PAUSE takes effect; one frame's
    worth does not, and the lossless packets that overflow it are counted."""
    sc = load("tcp_permutation_fat_tree")
    sc.pop("sweep", None)
    over = {"duration": "3ms", "switch.buffer": "shared", "switch.shared_buffer": "200KiB",
            "switch.pfc": {"headroom": "1600B"}}
    h = wscsim.run(sc, out=tmp_path / "small", overrides=over, plots=False).summary["headline"]
    assert h["pfc_headroom_drops"] > 0 and h["drops"] == h["pfc_headroom_drops"]


ROCE_FLOWS = {
    "duration": "10ms",
    "topology": {"kind": "fat_tree", "k": 4, "link": {"rate": "10Gbps", "delay": "500ns"}},
    "switch": {"buffer": "shared", "shared_buffer": "300KiB", "port_to_port_latency": "500ns",
               "scheme": {"kind": "dctcp", "k_packets": 20}, "pfc": {}},
    "transport": {"kind": "roce"},
    "workload": {"kind": "flows", "load": 0.5, "size_cdf": "websearch"},
}


def test_flows_over_roce_and_pfc_lose_nothing_and_dcqcn_reacts(tmp_path):
    r = wscsim.run(ROCE_FLOWS, out=tmp_path / "roce", plots=False)
    h = r.summary["headline"]
    assert r.summary["invariants"]["ok"]
    assert h["drops"] == 0 and h["roce_naks"] == 0 and h["roce_timeouts"] == 0
    assert h["roce_qps"] == h["flows"] and h["roce_completed"] > 0.5 * h["flows"]
    assert h["roce_cnps"] > 0
    roce = r.tables["roce"]
    done = roce.dropna(subset=["fct_us"])
    assert (done.acked_bytes == done.size_bytes).all()
    flows = r.tables["flows"]
    assert len(flows) == len(roce)


@pytest.mark.parametrize("change,field", [
    ({"workload": {"kind": "incast", "senders": 2}}, "transport.kind"),
    ({"transport": {"kind": "tcp"}, "roce": {}}, "roce"),
    ({"roce": {"payload": "100B"}}, "roce.payload"),
    ({"roce": {"payload": "4096B"}}, "roce.payload"),  # more than a 1,500-byte MTU carries
    ({"roce": {"congestion": "bbr"}}, "roce.congestion"),
    ({"roce": {"recovery": "sack"}}, "roce.recovery"),
    ({"roce": {"congestion": "dcqcn", "hpcc": {}}}, "roce.hpcc"),
    ({"roce": {"congestion": "hpcc"}, "switch": {"scheme": "pfabric"}}, "roce.congestion"),
    ({"roce": {"congestion": "hpcc"}, "topology": {"kind": "single_switch", "hosts": 4, "link": {"rate": "2.5Gbps"}}},
     "roce.congestion"),
    ({"roce": {"dcqcn": {"preset": "vendor"}}}, "roce.dcqcn.preset"),
])
def test_roce_refuses_what_it_does_not_model(change, field, tmp_path):
    with pytest.raises(wscsim.ScenarioError, match=rf"^{field.replace('.', chr(92) + '.')}\b"):
        wscsim.run({**ROCE_FLOWS, **change}, out=tmp_path / "bad", plots=False)


def test_a_large_fat_tree_under_pfc_runs(tmp_path):
    """k=16 (1,024 hosts): large enough that the event loop prefetches each arrival's
    route, which a PAUSE frame does not have."""
    sc = load("tcp_permutation_fat_tree")
    sc.pop("sweep", None)
    over = {"duration": "0.3ms", "topology.k": 16, "switch.buffer": "shared",
            "switch.shared_buffer": "600KiB", "switch.pfc": {}}
    r = wscsim.run(sc, out=tmp_path / "k16", overrides=over, plots=False)
    assert r.summary["invariants"]["ok"]
    assert r.summary["headline"]["pfc_pause_frames"] > 0 and r.summary["headline"]["drops"] == 0
