"""EQDS over trimming switches (docs/transports.md): an incast however many send and a
permutation on a fat tree end near their ideal, as NDP's do, and the combinations it
refuses. (Its side-by-side with htsim_eqds is benchmarks/peers/htsim_rdma.py's.)"""

import pytest

import wscsim
from wscsim.scenario import load

EQDS = {"transport.kind": "eqds"}


def _incast(senders, seed, tmp_path):
    sc = load("ndp_incast")
    sc.pop("sweep")
    o = {"seed": seed, "workload.incast.senders": senders, **EQDS}
    r = wscsim.run(sc, out=tmp_path / f"{senders}-{seed}", overrides=o, plots=False)
    assert r.summary["invariants"]["ok"]
    f = r.tables["flows"]
    assert f.fct_us.notna().all(), "every flow finished"
    ideal_us = senders * 450e3 * 8 / 10e9 * 1e6
    return f.fct_us.max() / ideal_us, r


@pytest.mark.parametrize("seed", [1, 2])
def test_an_eqds_incast_ends_near_the_ideal_however_many_send(seed, tmp_path):
    for senders in (8, 32, 100):
        ratio, r = _incast(senders, seed, tmp_path)
        h = r.summary["headline"]
        # No losses; at 100 senders the speculative bursts' headers, served 10:1 behind
        # jumbo data, may keep a sender's first word past its timeout (500 us).
        assert h["drops"] == 0 and h["eqds_timeouts"] <= (0 if senders < 100 else 2), h
        # Jumbo frames' headers and framing, and a round trip more than the bytes take.
        assert ratio < 1.06, (senders, ratio)
        # Each sender speculates a round trip's bytes (one packet more at most), no
        # more: the rest is pulled.
        per_sender = -(-h["eqds_speculative_bytes"] // 9064) + 1
        assert 0 < h["eqds_speculative_packets"] <= senders * per_sender, h
        assert r.tables["links"].trims.sum() == h["eqds_nacks"] + h["eqds_bounced"]


def test_a_permutation_over_eqds_runs_near_line_rate(tmp_path):
    """Every host sends 1 MB to another of a k=4 fat tree at once: each flow ends within
    30% of its ideal (sprayed packets meet at random in the fabric and are trimmed, and a
    trimmed packet costs a pull more; NDP's ends within 25%, test_ndp.py)."""
    sc = load("ndp_incast")
    sc.pop("sweep")
    sc["topology"]["k"] = 4
    sc["transport"] = {"kind": "eqds"}
    sc["workload"] = {"kind": "flows", "matrix": str(tmp_path / "perm.cm")}
    pairs = [(i, (i + 5) % 16) for i in range(16)]
    lines = ["Nodes 16", "Connections 16"] + [f"{s}->{d} id {i + 1} start 0 size 1000000" for i, (s, d) in enumerate(pairs)]
    (tmp_path / "perm.cm").write_text("\n".join(lines) + "\n")
    r = wscsim.run(sc, out=tmp_path / "perm", plots=False)
    f = r.tables["flows"]
    assert f.fct_us.notna().all() and r.summary["headline"]["drops"] == 0
    assert (f.slowdown < 1.3).all(), f.slowdown.describe()


SMALL = {
    "duration": "10ms",
    "topology": {"kind": "single_switch", "hosts": 4, "link": {"rate": "10Gbps", "delay": "500ns"}},
    "switch": {"scheme": "trim"},
    "transport": {"kind": "eqds"},
    "workload": {"kind": "flows", "incast": {"senders": 3, "size": "100KB"}},
}


@pytest.mark.parametrize("change,field", [
    ({"transport": {"kind": "tcp"}, "eqds": {}}, "eqds"),
    ({"eqds": {"payload": "9000B"}}, "eqds.payload"),  # more than a 1,500-byte MTU carries
    ({"eqds": {"speculative": "0B"}}, "eqds.speculative"),
    ({"eqds": {"paths": 0}}, "eqds.paths"),
    ({"eqds": {"rto": "0s"}}, "eqds.rto"),
    ({"workload": {"kind": "incast", "senders": 2}}, "transport.kind"),
])
def test_eqds_refuses_what_it_does_not_model(change, field, tmp_path):
    with pytest.raises(wscsim.ScenarioError, match=rf"^{field.replace('.', chr(92) + '.')}\b"):
        wscsim.run({**SMALL, **change}, out=tmp_path / "bad", plots=False)


def test_the_small_incast_runs(tmp_path):
    r = wscsim.run(SMALL, out=tmp_path / "ok", plots=False)
    assert r.tables["flows"].fct_us.notna().all()
    assert (r.tables["eqds"].pulled_bytes > 0).all()
