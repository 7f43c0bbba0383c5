"""Partitioned runs (`[engine] partitioned = true`): each partition's events are ordered on
their own, so the order in which a window's partitions run cannot change any result. That
is the property a threaded engine relies on; here the partitions of every window run
forwards, then backwards, and the written tables must be byte-identical."""

import filecmp

import pytest

import wscsim
from wscsim.scenario import load

# Bundled scenarios with several partitions each (pods, DIABLO arrays, torus slabs),
# shortened: TCP over a fat tree, memcached over TCP on two DIABLO arrays (Linux hosts,
# whose application threads hand deliveries to memcached), flows arriving at random
# (global events) on a fat tree, a torus; failures of links and whole nodes on a fat tree
# (links between pods, a host's link, a core switch, one back up within a window), under
# TCP and under UDP sources (whose packets are sent by global events), and CamCube's
# churn (servers failing and rejoining, their neighbours learning of it by keepalives).
FAILURES = [
    {"node": "core0", "at": "0.7ms", "until": "1.3ms"},
    {"link": ["h3", "edge0_0"], "at": "1ms"},
    {"link": ["agg1_0", "core1"], "at": "0.4ms", "until": "0.4004ms"},
]
CASES = {
    "tcp_permutation_fat_tree": ("tcp_permutation_fat_tree", {"duration": "5ms"}),
    "diablo_memcached": ("diablo_memcached", {"workload.requests_per_client": 20, "topology.racks": 32}),
    "websearch_fat_tree": ("websearch_fat_tree", {"duration": "20ms"}),
    "camcube_all_to_all": ("camcube_all_to_all", {"duration": "1ms", "topology.dims": [8, 8, 8]}),
    "failures_tcp": ("tcp_permutation_fat_tree", {"duration": "2ms", "failures": FAILURES}),
    "failures_udp": ("tcp_permutation_fat_tree", {
        "duration": "2ms", "failures": FAILURES, "transport.kind": "udp",
        "workload": {"kind": "udp", "destination": "random", "rate": "3Gbps"}}),
    "camcube_churn": ("camcube_churn", {"duration": "300ms"}),
    "pfc_tcp": ("tcp_permutation_fat_tree", {
        "duration": "2ms", "switch.buffer": "shared", "switch.shared_buffer": "200KiB", "switch.pfc": {}}),
}


def _run(case, order, out, threads=None):
    """One point: the bundled scenario without its sweep, with the case's overrides."""
    name, overrides = CASES[case]
    sc = load(name)
    sc.pop("sweep", None)
    over = {**overrides, "engine.partitioned": True, "engine.lane_order": order}
    if threads is not None:
        over["engine.threads"] = threads
    return wscsim.run(sc, out=out, overrides=over, plots=False)


def _same_tables(a, b, root_a, root_b):
    tables = sorted(p.relative_to(root_a) for p in root_a.rglob("*.parquet"))
    assert len(tables) >= 4
    assert a.summary["packet_hops"] > 10_000
    for t in tables:
        assert filecmp.cmp(root_a / t, root_b / t, shallow=False), t
    x, y = a.summary, b.summary
    assert x["events"] == y["events"] and x["packet_hops"] == y["packet_hops"]
    assert x["invariants"]["ok"] and x["invariants"]["lookahead_violations"] == 0


@pytest.mark.parametrize("name", sorted(CASES))
def test_partition_order_changes_no_table(name, tmp_path):
    a = _run(name, "forward", tmp_path / "a")
    b = _run(name, "reverse", tmp_path / "b")
    _same_tables(a, b, tmp_path / "a", tmp_path / "b")
    assert a.summary["scenario"]["engine"]["partitioned"] is True


@pytest.mark.parametrize("name", sorted(CASES))
def test_threads_change_no_table(name, tmp_path):
    """Two threads (helpers run the switches' partitions) write the same bytes as one."""
    a = _run(name, "forward", tmp_path / "a", threads=1)
    b = _run(name, "reverse", tmp_path / "b", threads=2)
    _same_tables(a, b, tmp_path / "a", tmp_path / "b")
    assert b.summary["scenario"]["engine"]["threads"] == 2


def test_threads_are_refused_with_captures():
    sc = {
        "duration": "1ms",
        "topology": {"kind": "fat_tree", "k": 4},
        "workload": {"kind": "permutation"},
        "engine": {"threads": 2},
        "metrics": {"capture": {"hosts": [0]}},
    }
    with pytest.raises(wscsim.ScenarioError, match=r"engine\.threads.*given 2.*capture"):
        wscsim.run(sc, plots=False)


@pytest.mark.parametrize("threads", [0, 65, -1])
def test_threads_take_1_to_64(threads):
    sc = {"duration": "1ms", "topology": {"kind": "fat_tree", "k": 4},
          "workload": {"kind": "permutation"}, "engine": {"threads": threads}}
    with pytest.raises(wscsim.ScenarioError, match=rf"engine\.threads.*given {threads}.*1 to 64"):
        wscsim.run(sc, plots=False)


def test_failures_between_partitions_lose_what_an_ordinary_run_loses(tmp_path):
    """UDP sources at a steady rate (no TCP reacting to losses, paths fixed by the flows'
    hashes, which both runs number alike): a partitioned run loses as many packets to
    failed links as an ordinary run, though the partitions of a failed link between pods
    each hold part of what was on its wires (what one sent in the current window, what
    went on the wire before). Simultaneous events are ordered differently, so deliveries
    may differ by a packet or two, never by what a failed wire held."""
    sc = load("tcp_permutation_fat_tree")
    sc.pop("sweep", None)
    name, over = CASES["failures_udp"]
    runs = [wscsim.run(sc, out=tmp_path / str(p), plots=False,
                       overrides={**over, "engine.partitioned": p}) for p in (False, True)]
    serial, part = (r.summary for r in runs)
    lost = serial["headline"]["link_down_drops"]
    assert lost > 100
    assert part["headline"]["link_down_drops"] == lost
    assert abs(part["invariants"]["packets_delivered"] - serial["invariants"]["packets_delivered"]) <= 5
    assert part["invariants"]["packets_delivered"] > 0.8 * part["invariants"]["packets_sent"]


def test_partitioned_runs_are_refused_with_emulation():
    sc = {
        "duration": "1ms",
        "topology": {"kind": "single_switch", "hosts": 2},
        "workload": {"kind": "permutation"},
        "engine": {"partitioned": True},
        "emulation": {},
    }
    with pytest.raises(wscsim.ScenarioError, match=r"engine\.partitioned.*\[emulation\]"):
        wscsim.run(sc, plots=False)


def test_lane_order_takes_two_values():
    sc = {
        "duration": "1ms",
        "topology": {"kind": "fat_tree", "k": 4},
        "workload": {"kind": "permutation"},
        "engine": {"partitioned": True, "lane_order": "sideways"},
    }
    with pytest.raises(wscsim.ScenarioError, match=r"engine\.lane_order.*forward.*reverse"):
        wscsim.run(sc, plots=False)


# Scenarios whose packets global events send (an incast's client, DMA engines, CamCubeOS's
# multicast, UDP sources), shortened. Until 2026-11-28 such a packet waited for the next
# window's close while its arrival fell inside that window, which blocked its wire: these
# partitioned runs moved a fraction of an ordinary run's packets (an incast 9 hops of
# 10,879), and no comparison of partitioned runs with each other could see it.
AGAINST_SERIAL = {
    "diablo_incast": {"workload.iterations": 5, "workload.senders": 1},
    "pcie_dma": {},
    "camcube_multicast": {"workload.size": "5MB"},
    "pcie_windows": {},
}


@pytest.mark.parametrize("name", sorted(AGAINST_SERIAL))
def test_a_partitioned_run_moves_what_an_ordinary_run_moves(name, tmp_path):
    """The same model partitioned orders simultaneous events differently, nothing else:
    its packet-hops stay within 1% of an ordinary run's, and it delivers as much."""
    sc = load(name)
    sc.pop("sweep", None)
    runs = [wscsim.run(sc, out=tmp_path / str(p), plots=False,
                       overrides={**AGAINST_SERIAL[name], "engine.partitioned": p})
            for p in (False, True)]
    serial, part = (r.summary for r in runs)
    assert part["scenario"]["engine"]["partitioned"] is True
    assert serial["packet_hops"] > 1000
    assert abs(part["packet_hops"] - serial["packet_hops"]) <= 0.01 * serial["packet_hops"]
    delivered = [s["invariants"]["packets_delivered"] for s in (serial, part)]
    assert abs(delivered[1] - delivered[0]) <= 0.01 * delivered[0]
    assert part["invariants"]["ok"] and part["invariants"]["lookahead_violations"] == 0
