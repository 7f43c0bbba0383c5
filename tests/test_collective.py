"""Collective workloads (docs/transports.md): a ring all-reduce's iteration time against
its bandwidth bound, the three algorithms' order, and the group sizes they refuse."""

import pytest

import wscsim
from wscsim.scenario import load

MB16 = 16_000_000


def _run(tmp_path, **over):
    sc = load("collective_allreduce")
    sc.pop("sweep")
    r = wscsim.run(sc, out=tmp_path / "-".join(map(str, over.values())), overrides=over, plots=False)
    assert r.summary["invariants"]["ok"]
    return r


@pytest.mark.parametrize("seed", [1, 2])
def test_a_ring_all_reduce_runs_near_its_bandwidth_bound(seed, tmp_path):
    """Each host sends and receives 2(N-1)/N of the buffer, in 2(N-1) steps; on a fabric
    that sprays packets over every path nothing else slows it (NDP over trimming switches),
    so an iteration takes that volume at line rate, and at most one crossing of the fabric
    more per step (a step's data cannot go on before it has arrived): the longest path's
    six links of 1 us, each a 9,000-byte frame's time at 100 Gbit/s, and five switches'
    500 ns."""
    r = _run(tmp_path, seed=seed)
    c = r.tables["collective"]
    h = r.summary["headline"]
    assert h["collective_iterations"] == 5 and len(c) == 5
    n = 16
    bound_us = 2 * (n - 1) / n * MB16 * 8 / 100e9 * 1e6
    crossing_us = 6 * (1 + 9038 * 8 / 100e9 * 1e6) + 5 * 0.5
    assert (c.time_us > bound_us).all()
    assert (c.time_us < 1.1 * (bound_us + 2 * (n - 1) * crossing_us)).all(), (c.time_us.tolist(), bound_us)
    # Every step's transfer is in the flows table: 5 iterations x 16 hosts x 30 steps.
    assert len(r.tables["flows"]) == 5 * n * 2 * (n - 1)
    assert (c.bytes == n * 2 * (n - 1) * -(-MB16 // n)).all()


def test_halving_doubling_and_all_to_all_move_what_they_should(tmp_path):
    hd = _run(tmp_path, **{"workload.algorithm": "halving_doubling", "workload.iterations": 2})
    a2a = _run(tmp_path, **{"workload.algorithm": "all_to_all", "workload.iterations": 2})
    n = 16
    # Halving-doubling moves the ring's volume, 2(N-1)/N of the buffer per host.
    assert (hd.tables["collective"].bytes == n * 2 * (MB16 - MB16 // n)).all()
    assert len(hd.tables["flows"]) == 2 * n * 2 * 4
    # All-to-all: N(N-1) transfers of size/N at once, no less than (N-1)/N of it per link.
    c = a2a.tables["collective"]
    assert len(a2a.tables["flows"]) == 2 * n * (n - 1)
    assert (c.time_us > (n - 1) / n * MB16 * 8 / 100e9 * 1e6).all()


@pytest.mark.parametrize("transport", ["tcp", "roce"])
def test_a_collective_runs_over_every_transport(transport, tmp_path):
    sc = load("collective_allreduce")
    sc.pop("sweep")
    sc["transport"] = {"kind": transport}
    sc.pop("ndp")
    sc["switch"] = {"port_to_port_latency": "500ns"}
    sc["workload"].update({"size": "1MB", "iterations": 2})
    r = wscsim.run(sc, out=tmp_path / transport, plots=False)
    assert r.summary["headline"]["collective_iterations"] == 2


@pytest.mark.parametrize("change,field", [
    ({"algorithm": "tree"}, "workload.algorithm"),
    ({"algorithm": "halving_doubling", "hosts": [0, 1, 2]}, "workload.hosts"),
    ({"hosts": [3, 3]}, "workload.hosts"),
    ({"hosts": [0, 99]}, "workload.hosts"),
    ({"size": "10B"}, "workload.size"),
    ({"iterations": 0}, "workload.iterations"),
])
def test_collectives_refuse_what_they_cannot_run(change, field, tmp_path):
    sc = load("collective_allreduce")
    sc.pop("sweep")
    sc["workload"].update(change)
    with pytest.raises(wscsim.ScenarioError, match=rf"^{field.replace('.', chr(92) + '.')}\b"):
        wscsim.run(sc, out=tmp_path / "bad", plots=False)
