"""`workload.matrix`: the flows of a connection matrix in htsim's format start at their
own times, with their own sizes, over TCP or RoCE; what the matrix cannot say is refused
naming the line."""

import pytest

import wscsim

BASE = {
    "duration": "5ms",
    "topology": {"kind": "fat_tree", "k": 4, "link": {"rate": "10Gbps", "delay": "500ns"}},
}


def _matrix(tmp_path, text):
    p = tmp_path / "flows.cm"
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize("transport", ["tcp", "roce"])
def test_flows_start_at_their_times_with_their_sizes(transport, tmp_path):
    cm = _matrix(tmp_path, "Nodes 16\nConnections 3\n4->0 id 1 start 0 size 200000\n"
                           "9->0 id 2 start 300000000 size 50000\n2->13 id 3 start 0 size 1000\n")
    sc = {**BASE, "transport": {"kind": transport}, "workload": {"kind": "flows", "matrix": cm}}
    r = wscsim.run(sc, out=tmp_path / transport, plots=False)
    f = r.tables["flows"].sort_values(["start_us", "src"])
    assert list(zip(f.src, f.dst, f.size_bytes)) == [(2, 13, 1000), (4, 0, 200000), (9, 0, 50000)]
    assert list(f.start_us) == [0.0, 0.0, 300.0]
    assert (f.bytes_received == f.size_bytes).all() and r.summary["headline"]["flows_completed"] == 3


@pytest.mark.parametrize("text,extra,field", [
    ("Nodes 16\n0->16 size 5\n", {}, "workload.matrix"),
    ("0->1 size 5 trigger 1\n", {}, "workload.matrix"),
    ("0->1 size 5\n", {"load": 0.3}, "workload.load"),
])
def test_a_matrix_the_run_cannot_follow_is_refused(text, extra, field, tmp_path):
    sc = {**BASE, "workload": {"kind": "flows", "matrix": _matrix(tmp_path, text), **extra}}
    with pytest.raises(wscsim.ScenarioError, match=rf"^{field.replace('.', chr(92) + '.')}\b"):
        wscsim.run(sc, out=tmp_path / "bad", plots=False)
