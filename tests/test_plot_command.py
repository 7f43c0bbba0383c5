"""Drawing plots: `wscsim plot FOLDER` draws a finished folder's plots again, only inside it,
the same bytes as the run drew; figures drawn in worker processes are the same as drawn in
one; the per-port queue figures come from a vectorised summary equal to pandas' groupby."""

import filecmp
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import wscsim
from wscsim import plots, queue_curves
from wscsim.drawing import swept_columns

WSCSIM = [sys.executable, "-m", "wscsim.cli"]

INCAST = {
    "name": "tiny-incast",
    "duration": "50ms",
    "topology": {"kind": "single_switch", "hosts": 5, "link": {"rate": "1Gbps", "delay": "500ns"}},
    "switch": {"buffer": "per_input_port", "buffer_per_port": "4KiB"},
    "transport": {"rto_min": "1ms"},
    "workload": {"kind": "incast", "senders": 4, "block": "32KiB", "iterations": 3},
    "metrics": {"queue_sample_interval": "20us"},
    "sweep": {"transport.rto_min": ["200ms", "1ms"]},
}


def wscsim_cmd(*args):
    return subprocess.run(WSCSIM + list(args), capture_output=True, text=True, timeout=300)


def _images(folder):
    return sorted(p.name for p in folder.iterdir() if p.suffix in (".png", ".svg"))


def _tree(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_plot_draws_a_folders_plots_again_inside_it_the_same_bytes(tmp_path):
    drawn = wscsim.run(dict(INCAST), out=tmp_path / "drawn", workers=2)
    bare = wscsim.run(dict(INCAST), out=tmp_path / "bare", plots=False)
    assert not _images(bare.path) and drawn.summary["plots"]
    before = _tree(tmp_path)
    p = wscsim_cmd("plot", str(bare.path))
    assert p.returncode == 0, p.stderr
    assert "queue_cdf.png" in p.stdout and f"results: {bare.path}" in p.stdout
    # Only the plots are new, inside the folder; nothing beside it.
    added = sorted(set(_tree(tmp_path)) - set(before))
    assert added == sorted(f"bare/{name}" for name in drawn.summary["plots"])
    summary = json.loads((bare.path / "summary.json").read_text())
    assert summary["plots"] == drawn.summary["plots"] and summary["complete"] is True
    assert "queue_cdf.png" in (bare.path / "report.html").read_text()
    for name in drawn.summary["plots"]:
        assert filecmp.cmp(drawn.path / name, bare.path / name, shallow=False), name
    # Drawing again replaces them with the same.
    assert wscsim_cmd("plot", str(bare.path), "-q").returncode == 0
    assert _tree(tmp_path) == sorted(set(before) | set(added))
    # --svg adds an SVG beside each PNG; drawing again without it takes them away.
    p = wscsim_cmd("plot", str(bare.path), "--svg")
    assert p.returncode == 0 and "(PNG and SVG)" in p.stdout, p.stderr
    pngs = [n for n in drawn.summary["plots"] if n.endswith(".png")]
    assert _images(bare.path) == sorted(pngs + [n[:-4] + ".svg" for n in pngs])
    assert wscsim_cmd("plot", str(bare.path), "-q").returncode == 0
    assert _images(bare.path) == sorted(pngs)


def test_plot_refuses_what_is_not_a_complete_result_in_one_line(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("x")
    partial = tmp_path / "r.partial-1"
    partial.mkdir()
    (partial / ".wscsim").write_text('{"wscsim_results": true}\n')
    (partial / "summary.json").write_text('{"complete": false}')
    for folder in (tmp_path / "mine", partial, tmp_path / "missing", tmp_path / "mine" / "notes.txt"):
        p = wscsim_cmd("plot", str(folder))
        assert p.returncode == 2, (folder, p.stderr)
        assert p.stderr.count("\n") == 1 and p.stderr.startswith("error: FOLDER: given ") and "allowed: " in p.stderr
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == ["notes.txt"]


def test_figures_drawn_in_worker_processes_are_the_same_bytes(tmp_path):
    # A sweep (INCAST has one): with two workers its plots come from the plotting process
    # started with the sweep (plotter.py), with one from this process.
    one = wscsim.run(dict(INCAST), out=tmp_path / "one", workers=1)
    two = wscsim.run(dict(INCAST), out=tmp_path / "two", workers=2)
    assert one.summary["plots"] == two.summary["plots"]
    assert _images(one.path) == _images(two.path) == sorted(one.summary["plots"])
    for name in one.summary["plots"]:
        assert filecmp.cmp(one.path / name, two.path / name, shallow=False), name


def test_a_sweep_summary_names_its_swept_columns(tmp_path):
    res = wscsim.run(dict(INCAST), out=tmp_path / "s", plots=False)
    assert [a["column"] for a in res.summary["sweep"]] == ["rto_min"]
    # A summary written before it named them: the path's last key, found in the points table.
    old = {"sweep": [{"path": "transport.rto_min", "values": []}, {"path": "workload.kind", "values": []}]}
    assert swept_columns(old, pd.DataFrame(columns=["point", "rto_min", "workload_kind"])) == ["rto_min", "workload_kind"]


@pytest.mark.parametrize("with_point", [True, False])
def test_port_statistics_equal_pandas_groupby(with_point):
    rng = np.random.default_rng(7)
    n = 5000
    q = pd.DataFrame({"point": rng.integers(0, 3, n), "time_us": np.arange(n, dtype=float), "node": rng.integers(0, 4, n),
                      "port": rng.integers(0, 7, n), "queue_bytes": rng.choice([0, 0, 0, 1500, 3000, 64000], n)})
    if not with_point:
        q = q.drop(columns=["point"])
    got = queue_curves.port_queues(q, None)
    keys = ["point", "node", "port"]
    ref = (q.assign(point=0) if not with_point else q).groupby(keys)["queue_bytes"].agg(samples="size", mean="mean", peak="max").reset_index()
    ref["name"] = "node " + ref["node"].astype(str) + " port " + ref["port"].astype(str)
    ref = ref.sort_values(["point", "mean", "peak", "name"], ascending=[True, False, False, True], ignore_index=True)
    pd.testing.assert_frame_equal(got, ref, check_dtype=False)


def test_the_plotting_process_is_reaped_when_stopped_at_once():
    import multiprocessing

    from wscsim.plotter import Plotter

    plotter = Plotter()
    plotter.stop()  # while it is still loading matplotlib
    assert plotter.process.exitcode is not None
    assert not multiprocessing.active_children()
