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
# (global events) on a fat tree, a torus.
CASES = {
    "tcp_permutation_fat_tree": {"duration": "5ms"},
    "diablo_memcached": {"workload.requests_per_client": 20, "topology.racks": 32},
    "websearch_fat_tree": {"duration": "20ms"},
    "camcube_all_to_all": {"duration": "1ms", "topology.dims": [8, 8, 8]},
}


def _run(name, overrides, order, out, threads=None):
    """One point: the bundled scenario without its sweep, with `overrides`."""
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
    a = _run(name, CASES[name], "forward", tmp_path / "a")
    b = _run(name, CASES[name], "reverse", tmp_path / "b")
    _same_tables(a, b, tmp_path / "a", tmp_path / "b")
    assert a.summary["scenario"]["engine"]["partitioned"] is True


@pytest.mark.parametrize("name", sorted(CASES))
def test_threads_change_no_table(name, tmp_path):
    """Two threads (helpers run the switches' partitions) write the same bytes as one."""
    a = _run(name, CASES[name], "forward", tmp_path / "a", threads=1)
    b = _run(name, CASES[name], "reverse", tmp_path / "b", threads=2)
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


def test_partitioned_runs_are_refused_with_link_failures():
    sc = {
        "duration": "1ms",
        "topology": {"kind": "fat_tree", "k": 4},
        "workload": {"kind": "permutation"},
        "engine": {"partitioned": True},
        "failures": [{"link": ["h0", "edge0_0"], "at": "0.5ms"}],
    }
    with pytest.raises(wscsim.ScenarioError, match=r"engine\.partitioned.*\[\[failures\]\]"):
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
