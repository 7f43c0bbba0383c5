"""NDP over trimming switches (docs/transports.md): its paper's incast claim as a trend
over seeds on the bundled `ndp_incast` scenario (Handley et al., SIGCOMM 2017: however
many senders, the incast ends close to the ideal, where TCP waits for its timers), a
permutation on a fat tree, and the combinations it refuses."""

import numpy as np
import pytest

import wscsim
from wscsim.scenario import load

DCTCP = {"transport.kind": "tcp", "transport.variant": "dctcp", "switch.scheme": {"kind": "dctcp", "k_packets": 10}}


def _last_over_ideal(senders, seed, tmp_path, **over):
    sc = load("ndp_incast")
    sc.pop("sweep")
    o = {"seed": seed, "workload.incast.senders": senders, **over}
    r = wscsim.run(sc, out=tmp_path / f"{senders}-{seed}-{len(over)}", overrides=o, plots=False)
    assert r.summary["invariants"]["ok"]
    f = r.tables["flows"]
    assert f.fct_us.notna().all(), "every flow finished"
    size = sc["workload"]["incast"]["size"]
    ideal_us = senders * float(size.rstrip("KB")) * 1e3 * 8 / 10e9 * 1e6
    return f.fct_us.max() / ideal_us, r


@pytest.mark.parametrize("seed", [1, 2])
def test_an_ndp_incast_ends_near_the_ideal_however_many_send(seed, tmp_path):
    for senders in (8, 32, 100):
        ratio, r = _last_over_ideal(senders, seed, tmp_path)
        h = r.summary["headline"]
        assert h["drops"] == 0 and h["ndp_timeouts"] == 0
        # Jumbo frames' headers and framing, and one round trip more than the bytes take.
        assert ratio < 1.06, (senders, ratio)
        # Every trimmed header reached its receiver (a NACK) or went back (100 senders'
        # initial windows overflow the header queues).
        assert r.tables["links"].trims.sum() == h["ndp_nacks"] + h["ndp_bounced"] > 0
        assert (h["ndp_bounced"] > 0) == (senders == 100), h
    tcp, _ = _last_over_ideal(32, seed, tmp_path, **DCTCP)
    assert tcp > 5, tcp


def test_a_permutation_over_ndp_runs_at_line_rate_on_every_path(tmp_path):
    """Every host sends 1 MB to another of a k=4 fat tree at once: spraying packets over
    every path, each flow ends within a quarter of its ideal. (Not closer: sprayed packets
    meet at random in the fabric, and a receiver whose arrivals were held up has no pulls
    waiting while its pacer could send them, a slot it cannot make up.)"""
    sc = load("ndp_incast")
    sc.pop("sweep")
    sc["topology"]["k"] = 4
    sc["workload"] = {"kind": "flows", "matrix": str(tmp_path / "perm.cm")}
    pairs = [(i, (i + 5) % 16) for i in range(16)]
    lines = ["Nodes 16", "Connections 16"] + [f"{s}->{d} id {i + 1} start 0 size 1000000" for i, (s, d) in enumerate(pairs)]
    (tmp_path / "perm.cm").write_text("\n".join(lines) + "\n")
    r = wscsim.run(sc, out=tmp_path / "perm", plots=False)
    f = r.tables["flows"]
    assert f.fct_us.notna().all() and r.summary["headline"]["drops"] == 0
    assert (f.slowdown < 1.25).all(), f.slowdown.describe()


SMALL = {
    "topology": {"kind": "single_switch", "hosts": 4},
    "switch": {"scheme": "trim"},
    "transport": {"kind": "ndp"},
    "workload": {"kind": "flows", "incast": {"senders": 3, "size": "10KB"}},
}


@pytest.mark.parametrize("change,field", [
    ({"workload": {"kind": "incast", "senders": 2}}, "transport.kind"),
    ({"transport": {"kind": "tcp"}, "ndp": {}}, "ndp"),
    ({"ndp": {"payload": "9000B"}}, "ndp.payload"),  # more than a 1,500-byte MTU carries
    ({"ndp": {"initial_window": 0}}, "ndp.initial_window"),
    ({"ndp": {"rto": "0s"}}, "ndp.rto"),
    ({"switch": {"scheme": {"kind": "trim", "data_packets": 0}}}, "switch.scheme.data_packets"),
    ({"switch": {"scheme": "trim", "buffer": "shared", "shared_buffer": "1MiB", "pfc": {}}}, "switch.scheme"),
    ({"switch": {"scheme": "trim", "buffer": "per_input_port"}}, "switch.buffer"),
    ({"workload": {"kind": "flows", "incast": {"senders": 4, "size": "10KB"}}}, "workload.incast.senders"),
    ({"workload": {"kind": "flows", "incast": {"senders": 2, "size": "10KB"}, "load": 0.5}}, "workload.load"),
])
def test_ndp_refuses_what_it_does_not_model(change, field, tmp_path):
    with pytest.raises(wscsim.ScenarioError, match=rf"^{field.replace('.', chr(92) + '.')}\b"):
        wscsim.run({**SMALL, **change}, out=tmp_path / "bad", plots=False)


def test_the_small_incast_runs(tmp_path):
    r = wscsim.run(SMALL, out=tmp_path / "ok", plots=False)
    assert np.isfinite(r.tables["flows"].fct_us).all()
