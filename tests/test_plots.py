"""Plots: made when there is something to show and not otherwise, an SVG beside each PNG,
the same bytes from run to run, a title naming the scenario, per-port queue CCDFs that
leave idle ports out, log axes where values span decades, and never a change to the
caller's matplotlib backend."""

import filecmp
import json
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

import wscsim
from wscsim import plots, queue_curves

# An incast through one shallow switch: queues build at the client's port, a few ms long.
INCAST = {
    "name": "tiny-incast",
    "duration": "50ms",
    "topology": {"kind": "single_switch", "hosts": 5, "link": {"rate": "1Gbps", "delay": "500ns"}},
    "switch": {"buffer": "per_input_port", "buffer_per_port": "4KiB"},
    "transport": {"rto_min": "1ms"},
    "workload": {"kind": "incast", "senders": 4, "block": "32KiB", "iterations": 3},
    "metrics": {"queue_sample_interval": "20us"},
}

# Web-search flows on a small fat tree: flows of several sizes, queues on many ports.
FLOWS = {
    "name": "tiny-flows",
    "duration": "10ms",
    "topology": {"kind": "fat_tree", "k": 4},
    "transport": {"rto_min": "1ms"},
    "workload": {"kind": "flows", "load": 0.5, "size_cdf": "websearch", "flows": 60},
    "metrics": {"queue_sample_interval": "50us"},
}


def _with(sc: dict, **changes) -> dict:
    out = json.loads(json.dumps(sc))
    for path, value in changes.items():
        *parents, leaf = path.split("__")
        d = out
        for p in parents:
            d = d.setdefault(p, {})
        d[leaf] = value
    return out


def _images(folder):
    return sorted(p.name for p in folder.iterdir() if p.suffix in (".png", ".svg"))


class Captured:
    """Stands in for plots.figure.save: keeps each figure instead of writing it."""

    def __init__(self):
        self.figures = {}

    def __call__(self, fig, path):
        self.figures[path.name] = fig
        return [path.name]


@pytest.fixture
def captured(monkeypatch):
    c = Captured()
    monkeypatch.setattr(plots.figure, "save", c)
    return c


# --- Results folders -----------------------------------------------------------------


def test_a_run_writes_png_plots_and_svg_only_when_asked(tmp_path):
    res = wscsim.run(dict(INCAST), out=tmp_path / "png")
    assert {"incast_goodput.png", "queue_cdf.png"} <= set(res.summary["plots"])
    assert not any(name.endswith(".svg") for name in res.summary["plots"])
    assert _images(tmp_path / "png") == sorted(res.summary["plots"])
    res = wscsim.run(dict(INCAST), out=tmp_path / "r", svg=True)
    made = res.summary["plots"]
    assert {"incast_goodput.png", "incast_goodput.svg", "queue_cdf.png", "queue_cdf.svg"} <= set(made)
    assert _images(tmp_path / "r") == sorted(made)
    for name in made:
        if name.endswith(".png"):
            assert name[:-4] + ".svg" in made
    svg = (tmp_path / "r" / "queue_cdf.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg


def test_no_plot_without_something_to_show(tmp_path):
    # No queue samples at all, and no flows: only the incast plot and the run's energy.
    res = wscsim.run(_with(INCAST, metrics__queue_sample_interval="0s"), out=tmp_path / "a")
    assert sorted(res.summary["plots"]) == ["energy.png", "incast_goodput.png"]
    # One request and one reply at a time never queue behind each other: every sampled port
    # is idle, so no queue plot.
    one = _with(INCAST, workload__senders=1, workload__block="100B", workload__request="30B", workload__iterations=50)
    res = wscsim.run(one, out=tmp_path / "b")
    assert len(res.queues) and (res.queues["queue_bytes"] == 0).all()
    assert "queue_cdf.png" not in res.summary["plots"]
    assert not (tmp_path / "b" / "queue_cdf.png").exists()


def test_same_scenario_and_seed_same_plot_bytes(tmp_path):
    for name in ("a", "b"):
        wscsim.run(dict(FLOWS), out=tmp_path / name, seed=3, svg=True)
    images = _images(tmp_path / "a")
    assert {"fct_slowdown.png", "fct_slowdown.svg", "queue_cdf.png", "queue_cdf.svg"} <= set(images)
    assert images == _images(tmp_path / "b")
    for name in images:
        assert filecmp.cmp(tmp_path / "a" / name, tmp_path / "b" / name, shallow=False), name


def test_a_sweep_gets_a_panel_per_point(tmp_path, captured):
    # One worker: the figures are drawn in this process, where `captured` keeps them.
    res = wscsim.run(_with(INCAST, sweep={"transport.rto_min": ["200ms", "1ms"]}), out=tmp_path / "s", workers=1)
    fig = captured.figures["queue_cdf.png"]
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert len(panels) == 2
    assert [ax.get_title().splitlines()[0] for ax in panels] == ["rto_min=200ms", "rto_min=1ms"]
    # Ports are named from the links table ("switch port 0 -> h0"), in every panel.
    assert all("\u2192" in ax.get_legend().get_texts()[0].get_text() for ax in panels)
    assert "tiny-incast" in fig.get_suptitle()
    assert "incast_time.png" in captured.figures  # senders are not swept: time per point
    assert res.summary["plots"]


def test_importing_and_writing_a_folder_keeps_the_backend(tmp_path):
    code = textwrap.dedent(f"""
        import matplotlib
        matplotlib.use("pdf")
        import wscsim
        wscsim.run({INCAST!r}, out={str(tmp_path / "r")!r}, svg=True)
        print(matplotlib.get_backend())
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().lower() == "pdf"
    assert (tmp_path / "r" / "queue_cdf.svg").exists()


# --- What the figures show -----------------------------------------------------------


def _queues(samples: dict) -> pd.DataFrame:
    """A queues table from {(node, port): [bytes per tick]}."""
    rows = [(t * 100.0, node, port, b) for (node, port), values in samples.items() for t, b in enumerate(values)]
    return pd.DataFrame(rows, columns=["time_us", "node", "port", "queue_bytes"])


LINKS = pd.DataFrame({
    "node": [0, 0, 0], "node_name": ["tor7", "tor7", "tor7"], "kind": ["switch"] * 3, "port": [0, 1, 2],
    "peer_name": ["h0", "h1", "agg2"], "tx_bytes": [10**6, 10**5, 0],
})


def test_queue_ccdf_leaves_idle_ports_out_and_names_the_busiest(tmp_path, captured):
    q = _queues({(0, 0): [0, 3000, 6000, 1500] * 25, (0, 1): [0] * 100})
    assert plots.plot_queue_ccdf(q, LINKS, tmp_path / "queue_cdf.png", title="demo")
    ax = captured.figures["queue_cdf.png"].axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    lines = [ln for ln in ax.get_lines() if len(ln.get_xdata())]
    assert len(lines) == 1  # the idle port draws nothing
    assert lines[0].get_label().startswith("tor7 port 0 \u2192 h0")
    # A quarter of the samples are empty: the curve starts at 0.75, at the smallest queue.
    assert lines[0].get_ydata()[0] == pytest.approx(0.75)
    assert lines[0].get_xdata()[0] == pytest.approx(1.5)
    assert "1 of 2 sampled ports" in ax.get_title()


def test_queue_ccdf_needs_a_queue(tmp_path):
    assert not plots.plot_queue_ccdf(_queues({}), LINKS, tmp_path / "a.png")
    assert not plots.plot_queue_ccdf(_queues({(0, 0): [0] * 10, (0, 1): [0] * 10}), LINKS, tmp_path / "b.png")
    assert not list(tmp_path.iterdir())


def test_queue_ccdf_values():
    xs, ys = queue_curves.queue_ccdf(np.array([100, 200, 200, 400]), samples=8)
    assert list(xs) == [100, 200, 400]
    assert list(ys) == [4 / 8, 3 / 8, 1 / 8]


def test_incast_goodput_spanning_decades_gets_a_log_axis(tmp_path, captured):
    rows = []
    for rto, mbps in (("200ms", [900, 5, 4, 6]), ("1ms", [900, 450, 500, 520])):
        for senders, g in zip((1, 4, 8, 16), mbps):
            rows.append({"point": len(rows), "senders": senders, "rto_min": rto, "block_bytes": 1_000_000, "duration_us": 8e6 / g})
    inc = pd.DataFrame(rows)
    assert plots.plot_incast_sweep(inc, ["senders", "rto_min"], tmp_path / "g.png", title="demo")
    ax = captured.figures["g.png"].axes[0]
    assert ax.get_yscale() == "log"
    assert [ln.get_label() for ln in ax.get_lines()] == ["rto_min=200ms", "rto_min=1ms"]
    inc["duration_us"] = 8e6 / 900
    assert plots.plot_incast_sweep(inc, ["senders", "rto_min"], tmp_path / "h.png")
    assert captured.figures["h.png"].axes[0].get_yscale() == "linear"


def test_slowdown_shows_the_flows_in_each_bucket(tmp_path, captured):
    flows = pd.DataFrame({"size_bytes": [5e3] * 7 + [50e3] * 3 + [2e6], "slowdown": [1.5] * 7 + [3.0] * 3 + [np.nan]})
    assert plots.plot_slowdown(flows, tmp_path / "s.png", title="demo")
    fig = captured.figures["s.png"]
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    # Each bucket's count under its name; the axis says what the count is.
    assert ticks == ["<10KB\n7", "10-100KB\n3"]
    assert "finished flows in each bucket" in fig.axes[0].get_xlabel()
    assert fig.get_suptitle().startswith("demo: ") and "10 of 11 flows finished" in fig.get_suptitle()
    assert not plots.plot_slowdown(flows.assign(slowdown=np.nan), tmp_path / "t.png")


def test_large_sweeps_draw_curves_per_value_within_a_panel_per_case():
    points = pd.DataFrame({"point": range(40), "load": [0.1 * (i % 8 + 1) for i in range(40)], "case": [f"c{i // 8}" for i in range(40)]})
    panels, curve = plots.facets(points, ["load", "case"])
    assert curve == "load" and [name for name, _ in panels] == ["c0", "c1", "c2", "c3", "c4"]
    assert all(len(pts) == 8 for _, pts in panels)
    panels, curve = plots.facets(points.head(6), ["load", "case"])
    assert curve is None and len(panels) == 6


def test_large_sweeps_of_text_values_draw_curves_too_in_the_sweeps_order():
    # RAMCloud's 40 points: sizes given as text, no numeric column; 40 panels were unreadable.
    sizes = ["100B", "1KB", "10KB", "100KB", "1MB"]
    points = pd.DataFrame({"point": range(40), "case": [f"c{i // 10}" for i in range(40)], "op": [["read", "write"][i // 5 % 2] for i in range(40)],
                           "size": [sizes[i % 5] for i in range(40)]})
    panels, curve = plots.facets(points, ["case", "op", "size"])
    assert curve == "size" and len(panels) == 8 and panels[0][0] == "c0, op=read"
    assert list(plots.figure.colours(points["size"])) == sizes


def _torus_summary(dims, rate="1Gbps"):
    n = int(np.prod(dims))
    return {"hosts": n, "scenario": {"topology": {"kind": "torus3d", "dims": dims, "link": {"rate": rate}}}}


def test_torus_throughput_against_servers_with_the_papers_values(tmp_path, captured):
    heads = [{"expected_gbps_per_server": e, "delivered_gbps_per_server": 0.98 * e, "min_delivered_gbps_per_server": 0.8 * e}
             for e in (2.889, 0.998, 0.5)]
    summaries = [_torus_summary(d) for d in ([3, 3, 3], [8, 8, 8], [16, 16, 16])]
    t = plots.torus_throughput(heads, summaries, ["27", "512", "4096"])
    assert list(t["servers"]) == [27, 512, 4096] and list(t["reported"]) == [2.7, 1.0, 0.5]
    assert plots.plot_torus_throughput(t, tmp_path / "torus_throughput.png", title="demo")
    fig = captured.figures["torus_throughput.png"]
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and [tk.get_text() for tk in ax.get_xticklabels()] == ["27\n(3x3x3)", "512\n(8x8x8)", "4,096\n(16x16x16)"]
    assert "Gbit/s" in ax.get_ylabel() and fig.get_suptitle().startswith("demo: ")
    labels = [text.get_text() for text in fig.legends[0].get_texts()]
    assert "CamCubeOS Figure 5a (reported)" in labels and any(lb.startswith("expected") for lb in labels)
    assert ax.get_ylim()[0] == 0 and ax.get_ylim()[1] > 2.889


def test_torus_throughput_leaves_the_paper_out_where_it_has_no_value(tmp_path, captured):
    # 10 Gbit/s links, and a 2D torus: not the paper's setting. Same size at every point:
    # one position per point.
    heads = [{"expected_gbps_per_server": 1.3, "delivered_gbps_per_server": d} for d in (0.3, 1.2)]
    t = plots.torus_throughput(heads, [_torus_summary([6, 6, 1], "10Gbps")] * 2, ["load=0.25", "load=1.0"])
    assert t["reported"].isna().all()
    assert plots.plot_torus_throughput(t, tmp_path / "t.png")
    fig = captured.figures["t.png"]
    assert not any("CamCubeOS" in text.get_text() for text in fig.legends[0].get_texts())
    assert [tk.get_text() for tk in fig.axes[0].get_xticklabels()] == ["load=0.25\n(36 servers)", "load=1.0\n(36 servers)"]
    # No torus headline, no plot.
    assert plots.torus_throughput([{"drops": 0}], [{}], ["x"]).empty
    assert not plots.plot_torus_throughput(plots.torus_throughput([], [], []), tmp_path / "u.png")
    from wscsim.plots import plot_energy

    assert not plot_energy(None, tmp_path / "e.png")


def test_a_torus_run_and_sweep_get_the_throughput_plot(tmp_path):
    sc = {"name": "tiny-torus", "duration": "2ms", "topology": {"kind": "torus3d", "dims": [3, 3, 3]}, "transport": {"kind": "udp"},
          "workload": {"kind": "udp", "destination": "random", "load": 0.5}, "metrics": {"max_queue_samples": 0}}
    res = wscsim.run(dict(sc), out=tmp_path / "r")
    assert res.summary["plots"] == ["torus_throughput.png", "energy.png"]
    res = wscsim.run(_with(sc, sweep={"topology.dims": [[3, 3, 3], [4, 4, 4]]}), out=tmp_path / "s")
    assert "torus_throughput.png" in res.summary["plots"]


def test_torus_failures_against_the_percentage_failed(tmp_path, captured):
    # Figure 5b: points with servers failed draw the failure plot, relative to none failed.
    heads = [{"expected_gbps_per_server": 0.998, "delivered_gbps_per_server": 0.9 - f / 1000,
              "median_delivered_gbps_per_live_server": 1.0 - f / 200, "failed_servers": f} for f in (0, 51, 102)]
    t = plots.torus_throughput(heads, [_torus_summary([8, 8, 8])] * 3, ["0%", "10%", "20%"])
    f = plots.torus_failures(t)
    assert f is not None and list(f["percent"].round(1)) == [0.0, 10.0, 19.9]
    assert f["relative"].iloc[0] == 1.0 and f["relative"].iloc[-1] < f["relative"].iloc[1] < 1.0
    assert plots.plot_torus_failures(t, tmp_path / "torus_failures.png", title="demo")
    ax = captured.figures["torus_failures.png"].axes[0]
    assert "(%)" in ax.get_xlabel() and "surviving" in ax.get_ylabel()
    assert any("Figure 5b" in text.get_text() for text in ax.get_legend().get_texts())
    # Without a point with none failed there is nothing to be relative to: no plot.
    assert plots.torus_failures(t[t["failed"] > 0]) is None
