"""Plots fitted to what a run or sweep recorded: incast goodput (per iteration, or against
senders) and iteration time per case, FCT slowdown by flow-size bucket with the number of
flows in each, queue occupancy per switch port as a complementary CDF on log axes, and for
data-plane sweeps over named cases the Flexplane figures: normalised FCT against load
(Figures 4 and 7) and the short/long request trade-off (Figure 6).

Every figure is titled with the scenario's name and written twice, as PNG and as SVG (for
papers), byte for byte the same from run to run. A figure is made only when there is
something to show. In a sweep, points are never pooled: each point gets a panel of its own
(small multiples), or, when there are many, a curve of its own in the panel of its case."""

from __future__ import annotations

import math
import re
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from .queue_curves import DRAWN_PORTS, queue_curves


SIZE_BUCKETS = [(0, 10e3, "<10KB"), (10e3, 100e3, "10-100KB"), (100e3, 1e6, "100KB-1MB"), (1e6, 10e6, "1-10MB"), (10e6, np.inf, ">10MB")]

# Every format a plot may be written in; PNG always, SVG when asked for (`svg=True`,
# `--svg`): an SVG of a large figure cost as much again as its PNG.
FORMATS = (".png", ".svg")
# The formats the figures being drawn are written in (set by drawing.draw around a draw,
# before its workers fork, so that they inherit it).
written_formats: tuple[str, ...] = (".png",)
DPI = 110
# Up to this many sweep points, each gets a panel; beyond it, one numeric swept parameter
# (senders, load) becomes curves within a panel per combination of the others.
MAX_PANELS = 12
# A panel of ports names its busiest few and draws at most DRAWN_PORTS in all.
NAMED_PORTS = 4
# Values whose largest is at least this many times the smallest get a log axis.
DECADES_RATIO = 20
# Fixed metadata and a fixed SVG id salt keep the files identical from run to run.
_PNG_METADATA = {"Software": None}
_SVG_METADATA = {"Date": None, "Creator": None}
_SVG_RC = {"svg.hashsalt": "wscsim", "svg.fonttype": "path"}


# ---------------------------------------------------------------------------------------
# Figures, titles and layouts


def subplots(*grid, figsize, layout: str | None = "constrained", **kw):
    """A figure of its own, outside pyplot: drawing never changes the backend or the
    figures of a notebook that imported wscsim. Constrained layout leaves room for titles,
    panel labels and legends."""
    # Laid out at the resolution it is saved at: text measures differently at another.
    fig = Figure(figsize=figsize, dpi=DPI, layout=layout)
    return fig, fig.subplots(*grid, **kw)


def _log_label(v: float, _pos=None) -> str:
    """A log axis's tick as a plain number where one reads easily (0.05, 20, 5000)."""
    if v <= 0:
        return ""
    if 1e-3 <= v < 1e6:
        return f"{v:,.0f}" if v >= 1e4 else f"{v:g}"
    exponent = math.log10(v)
    return f"$10^{{{exponent:.0f}}}$" if abs(exponent - round(exponent)) < 1e-9 else f"{v:.0e}"


def _tidy_log_axes(fig) -> None:
    """Plain-number labels on log axes, with 2 and 5 labelled too when an axis spans less
    than about two decades (matplotlib's default then labels every minor tick in
    overlapping scientific notation, or labels nothing at all). An axis over more decades
    has a labelled tick and a grid line at each and no minor ticks: eight unlabelled ticks
    a decade added little to read and were most of the time spent drawing a figure of
    several log-log panels (each tick is laid out at every pass)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter, NullLocator

    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for axis, limits in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            # An axis whose ticks a plot placed itself (at its data) keeps them.
            if axis.get_scale() != "log" or min(limits) <= 0 or isinstance(axis.get_major_locator(), FixedLocator):
                continue
            decades = math.log10(max(limits) / min(limits))
            axis.set_major_locator(LogLocator(10, subs=(1.0, 2.0, 5.0) if decades < 2.2 else (1.0,)))
            axis.set_major_formatter(FuncFormatter(_log_label))
            axis.set_minor_formatter(NullFormatter())
            if decades >= 2.2:
                axis.set_minor_locator(NullLocator())


def _save(fig, path: Path) -> list[str]:
    """Writes the figure as PNG at `path` and, when SVGs are wanted, as SVG beside it;
    returns the file names."""
    files = [Path(path).with_suffix(s) for s in written_formats]
    _tidy_log_axes(fig)
    if getattr(fig, "wscsim_grid", None):
        if fig.legends:
            fig.set_layout_engine("constrained")
        else:
            _lay_out_grid(fig, fig.wscsim_grid)
    # Lay the figure out once, as the PNG is drawn, and keep that layout for the SVG: the
    # same positions in both, and each file costs one pass over the figure (a layout pass
    # of its own before them was a third of the time a figure of many panels took).
    # A local rc_context: the SVG settings apply to this save only, never to the caller's
    # rcParams (and rc_context never touches the backend).
    with matplotlib.rc_context(_SVG_RC):
        fig.savefig(files[0], dpi=DPI, metadata=_PNG_METADATA)
        if len(files) > 1:
            fig.set_layout_engine("none")
            fig.savefig(files[1], metadata=_SVG_METADATA)
    return [f.name for f in files]


def _title(fig, title: str | None, what: str, note: str | None = None) -> None:
    """`scenario: what the figure shows`, and an optional note as a second line (in the
    title, where constrained layout keeps it clear of axes and labels)."""
    text = f"{title}: {what}" if title else what
    fig.suptitle(f"{text}\n{note}" if note else text, fontsize=9)


def scenario_name(summary: dict) -> str | None:
    return (summary.get("scenario") or {}).get("name")


def _label(keys: list[str], values) -> str:
    """A sweep point as text: a named case reads best as its name, numbers keep theirs."""
    return ", ".join(str(v) if k == "case" else f"{k}={v}" for k, v in zip(keys, values))


def _grid(n: int) -> tuple[int, int]:
    """Rows and columns for n panels: at most four columns, rows as even as they go."""
    rows = math.ceil(n / 4)
    return rows, math.ceil(n / rows)


def _panels(n: int, panel=(3.3, 2.6), **kw):
    """A figure of n panels (axes in reading order; the unused ones hidden)."""
    rows, cols = _grid(n)
    fig, axes = subplots(rows, cols, figsize=(panel[0] * cols, panel[1] * rows + 0.7), squeeze=False, layout=None, **kw)
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    # Shared x axes label only the bottom row; a panel above a hidden one is the bottom of
    # its column and needs its labels back.
    for ax in flat[max(0, n - cols):n] if rows > 1 else []:
        ax.tick_params(axis="x", labelbottom=True)
    fig.wscsim_grid = (rows, cols, flat[:n])
    return fig, flat[:n]


# Space (inches) between a grid's texts and panels where constrained layout would pad.
_PAD_IN = 0.07


def _lay_out_grid(fig, grid) -> None:
    """Places a grid of panels sharing their y axis (`_panels`) from a few measurements
    instead of constrained layout, which measured every tick label of every panel and was
    a third of the time of the largest figure (the queue CCDF of a sweep): the margins come
    from the bottom-left panel's tick labels, the tallest panel title and the figure's own
    title and axis labels. A figure with a legend beside its panels keeps constrained
    layout (it alone places \"outside\" legends)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    rows, cols, axes = grid
    renderer = FigureCanvasAgg(fig).get_renderer()  # the PNG's renderer: text measures as drawn
    width, height = fig.get_size_inches()

    def extent(text) -> tuple[float, float]:
        if text is None or not text.get_visible() or not text.get_text():
            return 0.0, 0.0
        box = text.get_window_extent(renderer)
        return box.width / fig.dpi, box.height / fig.dpi

    for _ in range(2):  # tick labels depend a little on the panels' size: measure twice
        corner = axes[(rows - 1) * cols] if len(axes) > (rows - 1) * cols else axes[0]
        tight, box = corner.get_tightbbox(renderer), corner.get_window_extent(renderer)
        tick_left, tick_below = (box.x0 - tight.x0) / fig.dpi, (box.y0 - tight.y0) / fig.dpi
        title = max(extent(ax.title)[1] for ax in axes)
        inner_x_labels = any(ax.xaxis.get_tick_params()["labelbottom"] for ax in axes[:max(0, len(axes) - cols)])
        left = _PAD_IN + extent(getattr(fig, "_supylabel", None))[0] + _PAD_IN + tick_left
        bottom = _PAD_IN + extent(getattr(fig, "_supxlabel", None))[1] + _PAD_IN + tick_below
        top = _PAD_IN + extent(getattr(fig, "_suptitle", None))[1] + 2 * _PAD_IN + title
        right = 0.2  # half the last x tick label
        gap_x = 0.15 if all(ax.get_shared_y_axes().joined(axes[0], ax) for ax in axes) else tick_left + _PAD_IN
        gap_y = title + 2 * _PAD_IN + (tick_below if inner_x_labels else 0.05)
        panel_w = (width - left - right - (cols - 1) * gap_x) / cols
        panel_h = (height - top - bottom - (rows - 1) * gap_y) / rows
        fig.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height, top=1 - top / height,
                            wspace=gap_x / panel_w, hspace=gap_y / panel_h if rows > 1 else 0.2)
    # The figure's texts at the edges the margins were measured from.
    for text, place in ((getattr(fig, "_suptitle", None), {"y": 1 - _PAD_IN / height, "va": "top"}),
                        (getattr(fig, "_supxlabel", None), {"y": _PAD_IN / height, "va": "bottom"}),
                        (getattr(fig, "_supylabel", None), {"x": _PAD_IN / width, "ha": "left"})):
        if text is not None:
            text.set(**place)


def _is_number_column(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def facets(points: pd.DataFrame, swept: list[str]) -> tuple[list[tuple[str, pd.DataFrame]], str | None]:
    """How a sweep's points are laid out: (panels as (title, their rows of `points`), the
    swept column drawn as curves within a panel or None). Up to MAX_PANELS points, one panel
    each; beyond, the numeric swept column with the most values (senders, load) becomes
    curves, in one panel per combination of the other swept columns; with no numeric one,
    the swept column with the most values (sizes given as text: "100B" to "1MB"). Forty
    log-log panels took half a minute to lay out, and were too small to read."""
    points = points.sort_values("point")
    numeric = [k for k in swept if _is_number_column(points[k])]
    if len(points) <= MAX_PANELS or not swept:
        # Rows as records, not iterrows: a row of an integer and a float column would show
        # the integer as a float ("seed=1.0").
        return [(_label(swept, [r[k] for k in swept]), points[points["point"] == r["point"]]) for r in points.to_dict("records")], None
    curve = max(numeric or swept, key=lambda k: points[k].nunique())
    rest = [k for k in swept if k != curve]
    if not rest:
        return [("", points)], curve
    return [(_label(rest, key), g) for key, g in points.groupby(rest, sort=False)], curve


def _colours(values) -> dict:
    """A colour per value of an ordered parameter, light to dark as the value grows (values
    given as text in the order they come, which is the sweep's)."""
    values = list(dict.fromkeys(values))
    if all(isinstance(v, (int, float, np.number)) and not isinstance(v, (bool, np.bool_)) for v in values):
        values = sorted(values)
    cmap = matplotlib.colormaps["viridis"]
    return {v: cmap(0.85 * (1 - i / max(1, len(values) - 1))) for i, v in enumerate(values)}


def _value_legend(fig, curve: str, colours: dict, title: str | None = None) -> None:
    """One legend for the whole figure, beside the panels: the colour of each value of
    `curve` is the same in every panel, and a legend inside each would hide curves."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=c, marker="o", ms=3, label=f"{curve}={v}") for v, c in colours.items()]
    fig.legend(handles=handles, loc="outside right upper", fontsize=7, title=title, title_fontsize=7)


def _spans_decades(values) -> bool:
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    return len(v) > 1 and v.max() >= DECADES_RATIO * v.min()


def sweep_points(tables: dict, swept: list[str]) -> pd.DataFrame:
    """The sweep's points (point and swept columns), from `points` or else any table."""
    if "points" in tables and not tables["points"].empty:
        return tables["points"][["point", *swept]]
    for df in tables.values():
        if "point" in df.columns and not df.empty:
            return df[["point", *swept]].drop_duplicates("point")
    return pd.DataFrame(columns=["point", *swept])


def _in(df: pd.DataFrame, point) -> pd.DataFrame:
    return df[df["point"] == point]


# ---------------------------------------------------------------------------------------
# Flow completion time slowdown


def slowdown_by_bucket(flows: pd.DataFrame) -> pd.DataFrame:
    done = flows[np.isfinite(flows["slowdown"]) & (flows["size_bytes"] > 0)]
    rows = []
    for lo, hi, label in SIZE_BUCKETS:
        b = done[(done["size_bytes"] >= lo) & (done["size_bytes"] < hi)]["slowdown"]
        if len(b):
            rows.append({"bucket": label, "flows": len(b), "mean": b.mean(), "p50": b.median(), "p99": b.quantile(0.99)})
    return pd.DataFrame(rows)


def _finished_note(flows: pd.DataFrame) -> str | None:
    """Says how many flows are left out for not finishing (their slowdown is unknown)."""
    done = int(np.isfinite(flows["slowdown"]).sum())
    if done == len(flows):
        return None
    return f"{done:,} of {len(flows):,} flows finished; the {len(flows) - done:,} unfinished (still running at the end, or long-lived) are left out"


def _slowdown_bars(ax, t: pd.DataFrame) -> None:
    """Median and 99th-percentile bars per size bucket, the bucket's flow count beneath."""
    x = np.arange(len(t))
    ax.bar(x - 0.2, t["p50"], 0.4, label="median", color="C0")
    ax.bar(x + 0.2, t["p99"], 0.4, label="99th percentile", color="C1")
    ax.set_xticks(x, [f"{b}\n{n:,} flows" for b, n in zip(t["bucket"], t["flows"])], fontsize=7)
    ax.set_yscale("log")
    ax.axhline(1, color="0.5", lw=0.6, ls=":")


def _slowdown_lines(ax, tables: dict, curve: str, colours: dict) -> None:
    """Per value of `curve`: median (solid) and 99th percentile (dashed) by size bucket;
    the flow counts of each bucket (their range over the curves) beneath."""
    order = [label for _, _, label in SIZE_BUCKETS]
    present = [b for b in order if any(b in set(t["bucket"]) for t in tables.values())]
    x = {b: i for i, b in enumerate(present)}
    for v, t in tables.items():
        xs = [x[b] for b in t["bucket"]]
        ax.plot(xs, t["p50"], marker="o", ms=3, color=colours[v])
        ax.plot(xs, t["p99"], marker="^", ms=3, ls="--", color=colours[v])
    counts = {b: [int(n) for t in tables.values() for bb, n in zip(t["bucket"], t["flows"]) if bb == b] for b in present}
    ticks = [f"{b}\n{min(c):,}" + (f"-{max(c):,}" if max(c) != min(c) else "") + " flows" for b, c in counts.items()]
    ax.set_xticks(range(len(present)), ticks, fontsize=6)
    ax.set_yscale("log")
    ax.axhline(1, color="0.5", lw=0.6, ls=":")


def plot_slowdown(flows: pd.DataFrame, path: Path, title: str | None = None) -> bool:
    """A run's FCT slowdown by flow-size bucket (median and 99th percentile)."""
    t = slowdown_by_bucket(flows)
    if t.empty:
        return False
    fig, ax = subplots(figsize=(6.4, 3.9))
    _slowdown_bars(ax, t)
    ax.set_ylabel("FCT slowdown (FCT / ideal FCT)")
    ax.set_xlabel("flow size, and finished flows in each bucket")
    ax.legend(loc="best", fontsize=8)
    _title(fig, title, "flow completion time slowdown by flow size", _finished_note(flows))
    _save(fig, path)
    return True


def plot_slowdown_sweep(flows: pd.DataFrame, points: pd.DataFrame, swept: list[str], path: Path, title: str | None = None) -> bool:
    """A sweep's FCT slowdown by size bucket: a panel of bars per point, or, for many
    points, a panel per case with median and 99th-percentile lines per load (or senders)."""
    if flows.empty or slowdown_by_bucket(flows).empty:
        return False
    panels, curve = facets(points, swept)
    fig, axes = _panels(len(panels), sharey=True)
    for ax, (name, pts) in zip(axes, panels):
        tables = {p: slowdown_by_bucket(_in(flows, p)) for p in pts["point"]}
        tables = {p: t for p, t in tables.items() if not t.empty}
        ax.set_title(name, fontsize=8)
        if not tables:
            ax.text(0.5, 0.5, "no finished flows", transform=ax.transAxes, ha="center", fontsize=8)
        elif curve is None:
            _slowdown_bars(ax, next(iter(tables.values())))
        else:
            by_value = {pts.loc[pts["point"] == p, curve].iloc[0]: t for p, t in tables.items()}
            _slowdown_lines(ax, dict(sorted(by_value.items())), curve, _colours(points[curve]))
    if curve is None:
        axes[0].legend(fontsize=6, loc="best")
    else:
        _value_legend(fig, curve, _colours(points[curve]), "solid: median\ndashed: 99th percentile")
    fig.supylabel("FCT slowdown (FCT / ideal FCT)", fontsize=9)
    fig.supxlabel("flow size, and finished flows in each bucket", fontsize=9)
    _title(fig, title, "flow completion time slowdown by flow size, per point", _finished_note(flows))
    _save(fig, path)
    return True


# ---------------------------------------------------------------------------------------
# Queue occupancy per switch port


# A CCDF of samples is a staircase; a dot marks each port's largest sample, so that a port
# seen with a queue once is a dot rather than nothing.


_CCDF_STYLE = {"drawstyle": "steps-pre", "marker": ".", "markevery": [-1], "ms": 4}


def _kb(b: float) -> str:
    """Bytes as KB (of 1000 bytes) with three significant figures, without exponents
    (bytes below 1 KB: a port that is nearly always empty has a mean of a few bytes)."""
    if b < 1e3:
        return f"{b:.3g} B"
    kb = b / 1e3
    return f"{kb:,.0f} KB" if kb >= 100 else f"{kb:.3g} KB"


def _draw_ports(ax, ports: pd.DataFrame, curves: dict) -> str:
    """One point's panel: the CCDF of each port that ever held a queue (busiest first, at
    most DRAWN_PORTS), the NAMED_PORTS busiest in colour and named, the rest grey. Returns
    how many ports that is, for the panel's title."""
    busy = ports[ports["peak"] > 0]
    drawn = busy.head(DRAWN_PORTS)
    for rank, r in enumerate(drawn.itertuples()):
        xs, ys = curves[(r.point, r.node, r.port)]
        if rank < NAMED_PORTS:
            ax.plot(xs / 1e3, ys, lw=1.5, color=f"C{rank}", zorder=3, label=f"{r.name} (mean {_kb(r.mean)})", **_CCDF_STYLE)
        else:
            ax.plot(xs / 1e3, ys, lw=0.6, color="0.7", zorder=2, label="other ports" if rank == NAMED_PORTS else None, **_CCDF_STYLE)
    if len(busy):
        ax.legend(fontsize=6, loc="best")
    else:
        ax.text(0.5, 0.5, "queues empty at every sample", transform=ax.transAxes, ha="center", fontsize=8)
    shown = f"; busiest {len(drawn)} drawn" if len(drawn) < len(busy) else ""
    return f"{len(busy)} of {len(ports)} sampled ports ever held a queue{shown}"


def _draw_bottlenecks(ax, ports: pd.DataFrame, curves: dict, pts: pd.DataFrame, curve: str, colours: dict) -> None:
    """One panel of a large sweep: the busiest port's CCDF for each point, coloured by the
    point's value of `curve` (senders, load)."""
    names = set()
    for _, p in pts.sort_values(curve).iterrows():
        top = ports[(ports["point"] == p["point"]) & (ports["peak"] > 0)].head(1)
        for r in top.itertuples():
            xs, ys = curves[(r.point, r.node, r.port)]
            ax.plot(xs / 1e3, ys, lw=1.2, color=colours[p[curve]], **_CCDF_STYLE)
            names.add(r.name)
    if names:
        where = names.pop() if len(names) == 1 else "the busiest of each point"
        ax.text(0.02, 0.02, f"port: {where}", transform=ax.transAxes, fontsize=6, color="0.35")
    else:
        ax.text(0.5, 0.5, "queues empty at every sample", transform=ax.transAxes, ha="center", fontsize=8)


def _truncation_note(queues: pd.DataFrame, summary: dict) -> str | None:
    """Says when queue sampling stopped early (metrics.max_queue_samples)."""
    summaries = summary.get("point_summaries") or [summary]
    cut = sum(bool(s.get("queue_samples_truncated")) for s in summaries)
    if not cut:
        return None
    if len(summaries) == 1 and queues is not None and "time_us" in queues.columns:
        where = f"at {queues['time_us'].max() / 1e3:.4g} ms"
    else:
        where = f"early in {cut} of {len(summaries)} points"
    return f"queue sampling stopped {where} (metrics.max_queue_samples)"


def plot_queue_ccdf(queues: pd.DataFrame | None, links: pd.DataFrame | None, path: Path, points: pd.DataFrame | None = None,
                    swept: list[str] | None = None, title: str | None = None, summary: dict | None = None,
                    prepared: tuple[pd.DataFrame, dict] | None = None) -> bool:
    """Queue occupancy as a complementary CDF per switch port, on log axes. A run (or a
    sweep of up to MAX_PANELS points) gets a panel per point with every port that ever held
    a queue, the busiest named; a larger sweep a panel per case with the busiest port of
    each point. Nothing is drawn if no sampled queue ever held a byte. From the queue
    samples, or from `prepared` queue_curves instead."""
    if swept and points is not None and not points.empty:
        panels, curve = facets(points, swept)
    else:
        panels, curve = [("", pd.DataFrame({"point": [0]}))], None
    if prepared is None:
        if queues.empty or not (queues["queue_bytes"] > 0).any():
            return False
        prepared = queue_curves(queues, links, 1 if curve else DRAWN_PORTS)
    ports, samples = prepared
    if ports.empty or not (ports["peak"] > 0).any():
        return False
    fig, axes = _panels(len(panels), panel=(4.2, 3.0) if len(panels) > 1 else (7.0, 4.2), sharex=True, sharey=True)
    for ax, (name, pts) in zip(axes, panels):
        if curve is None:
            count = _draw_ports(ax, ports[ports["point"] == pts["point"].iloc[0]], samples)
            name = f"{name}\n{count}" if name else count
        else:
            _draw_bottlenecks(ax, ports, samples, pts, curve, _colours(points[curve]))
        ax.set_title(name, fontsize=8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.grid(True, which="major", lw=0.3, color="0.85")
    if curve is not None:
        _value_legend(fig, curve, _colours(points[curve]))
    fig.supxlabel("queue occupancy x (KB, of 1000 bytes)", fontsize=9)
    fig.supylabel("fraction of samples with queue \u2265 x", fontsize=9)
    what = "queue occupancy CCDF per switch port" if curve is None else "queue occupancy CCDF of each point's busiest switch port"
    _title(fig, title, what, _truncation_note(queues, summary or {}))
    _save(fig, path)
    return True


# ---------------------------------------------------------------------------------------
# Incast


def _goodput_axis(ax, values) -> None:
    """Goodput in Mbit/s: a log axis when the values span decades (a 200 ms timeout gives
    a few Mbit/s where 1 ms gives hundreds), otherwise linear from zero."""
    if _spans_decades(values):
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
    ax.set_ylabel("goodput (Mbit/s)")


def _incast_what(sc: dict | None, iterations: int | None = None) -> str:
    """The workload in words, for a title: " (24 senders, 256KiB blocks, 40 iterations)"."""
    w = (sc or {}).get("workload") or {}
    words = []
    if iterations is not None and isinstance(w.get("senders"), int):
        words.append(f"{w['senders']} sender{'s' if w['senders'] != 1 else ''}")
    if isinstance(w.get("block"), (str, int)):
        words.append(f"{w['block']} blocks")
    if iterations is not None:
        words.append(f"{iterations} iterations")
    return f" ({', '.join(words)})" if words else ""


def _us(t: float) -> str:
    """A time in microseconds, in the unit that reads best."""
    return f"{t / 1e6:.3g} s" if t >= 1e6 else f"{t / 1e3:.3g} ms" if t >= 1e3 else f"{t:.3g} us"


def plot_incast_iterations(incast: pd.DataFrame, path: Path, title: str | None = None, scenario: dict | None = None) -> bool:
    """A run's goodput of each incast iteration, with the overall goodput (and the mean
    iteration time: a small block's answer is its latency) as a line."""
    if incast.empty:
        return False
    fig, ax = subplots(figsize=(6.4, 3.8))
    ax.bar(incast["iteration"], incast["goodput_mbps"], width=1.0 if len(incast) > 50 else 0.8, color="C0")
    overall = incast["block_bytes"].sum() * 8 / incast["duration_us"].sum()
    ax.axhline(overall, color="C1", lw=1, ls="--")
    _goodput_axis(ax, incast["goodput_mbps"])
    ax.set_xlabel("iteration")
    # In the title rather than a legend, which would cover bars.
    note = f"dashed: overall goodput {overall:.4g} Mbit/s; mean iteration time {_us(incast['duration_us'].mean())}"
    _title(fig, title, f"goodput of each incast iteration{_incast_what(scenario, len(incast))}", note)
    _save(fig, path)
    return True


def incast_goodput(incast: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Overall goodput per point: all blocks' bytes over all iterations' time."""
    g = incast.groupby(keys, sort=True).agg(bytes=("block_bytes", "sum"), us=("duration_us", "sum"))
    g["goodput_mbps"] = g["bytes"] * 8 / g["us"]
    return g.reset_index()


def _incast_layout(others: list[str]) -> tuple[list[str], list[str]]:
    """(panel columns, line columns) for goodput against senders: lines per case (or the
    last other swept column), one panel per combination of the rest (rto_min)."""
    if len(others) < 2:
        return [], others
    line = "case" if "case" in others else others[-1]
    return [k for k in others if k != line], [line]


def _groups(df: pd.DataFrame, keys: list[str]):
    """(label, rows) per combination of `keys`, in the order they first appear."""
    if not keys:
        return [("", df)]
    return [(_label(keys, key), g) for key, g in df.groupby(keys, sort=False)]


def plot_incast_sweep(incast: pd.DataFrame, swept: list[str], path: Path, title: str | None = None, scenario: dict | None = None) -> bool:
    """Goodput against the number of senders, a line per value of the other swept columns
    (a panel per value of a third one); a log axis when goodput spans decades."""
    if incast.empty or "senders" not in swept:
        return False
    seeded = "seed" in swept  # several seeds per point: their mean, with its 95% interval
    others = [k for k in swept if k not in ("senders", "seed")]
    # In the order of the sweep's points, so that lines and panels follow the scenario.
    g = incast_goodput(incast, ["point", *swept] if "point" in incast.columns else swept)
    if seeded:
        g = over_seeds(g, ["senders", *others], "goodput_mbps")
    panel_keys, line_keys = _incast_layout(others)
    panels = _groups(g, panel_keys)
    fig, axes = _panels(len(panels), panel=(6.4, 3.8) if len(panels) == 1 else (4.6, 3.4), sharey=True)
    for ax, (name, sub) in zip(axes, panels):
        for label, line in _groups(sub, line_keys):
            line = line.sort_values("senders")
            if seeded:
                ax.errorbar(line["senders"], line["goodput_mbps"], yerr=line["ci95"], marker="o", ms=4, capsize=2, label=label or None)
            else:
                ax.plot(line["senders"], line["goodput_mbps"], marker="o", ms=4, label=label or None)
        _goodput_axis(ax, g["goodput_mbps"])
        ax.set_title(name, fontsize=8)
        ax.set_xlabel("senders")
        ax.grid(True, which="major", lw=0.3, color="0.85")
        if line_keys:
            ax.legend(fontsize=7, loc="best")
    note = "goodput of a point: all blocks' bytes over all iterations' time"
    if seeded:
        note += f"\nmean of {int(g['seeds'].max())} seeds; bars: its 95% confidence interval (Student's t)"
    _title(fig, title, f"incast goodput against senders{_incast_what(scenario)}", note)
    _save(fig, path)
    return True


def over_seeds(g: pd.DataFrame, keys: list[str], value: str) -> pd.DataFrame:
    """Rows of several seeds as one per combination of `keys` (in the order they come): the
    mean of `value`, the half-width of its 95% interval (`ci95`, 0 for one seed), `seeds`."""
    from .seeds import mean_ci95

    rows = []
    for key, sub in g.groupby(keys, sort=False):
        mean, half = mean_ci95([float(v) for v in sub[value]])
        rows.append({**dict(zip(keys, key)), value: mean, "ci95": 0.0 if half is None else half, "seeds": len(sub)})
    return pd.DataFrame(rows)


def iteration_times(incast: pd.DataFrame, points: pd.DataFrame, swept: list[str]) -> pd.DataFrame:
    """Per sweep point, in point order: its label, finished iterations, and the mean, 1st
    and 99th percentile of their times (us; NaN when none finished)."""
    rows = []
    for _, p in points.sort_values("point").iterrows():
        d = _in(incast, p["point"])["duration_us"].to_numpy()
        stats = (d.mean(), np.percentile(d, 1), np.percentile(d, 99)) if len(d) else (np.nan,) * 3
        rows.append((_label(swept, [p[k] for k in swept]), len(d), *stats))
    return pd.DataFrame(rows, columns=["label", "iterations", "mean", "p1", "p99"])


def plot_incast_times(incast: pd.DataFrame, points: pd.DataFrame, swept: list[str], path: Path, title: str | None = None) -> bool:
    """For sweeps that do not vary senders (ramcloud_read's cases): the time of one
    iteration (request to the last byte of every block) per point, mean with 1st-99th
    percentile whiskers; a log axis when the times span decades. A point where no
    iteration finished (a timeout longer than the run) says so."""
    if incast.empty or "senders" in swept:
        return False
    t = iteration_times(incast, points, swept)
    done = t[t["iterations"] > 0]
    if done.empty:
        return False
    fig, ax = subplots(figsize=(6.4, 1.2 + 0.35 * len(t)))
    y = np.arange(len(t))[::-1]
    yd = y[t["iterations"].to_numpy() > 0]
    ax.barh(yd, done["mean"], color="C0", height=0.6)
    ax.errorbar(done["mean"], yd, xerr=[done["mean"] - done["p1"], done["p99"] - done["mean"]], fmt="none", ecolor="0.2", capsize=3, lw=0.8)
    for yi, r in zip(y, t.itertuples()):
        if r.iterations:
            ax.text(r.p99, yi, f"  {_us(r.mean)}", va="center", fontsize=7)
        else:  # at the left edge, in axes units along x (a log axis has no zero)
            ax.text(0.01, yi, "no iteration finished", va="center", fontsize=7, transform=ax.get_yaxis_transform())
    ax.set_yticks(y, [f"{r.label} ({r.iterations:,})" for r in t.itertuples()], fontsize=7)
    ax.set_ylim(-0.6, len(t) - 0.4)
    log = _spans_decades(done["mean"])
    if log:
        ax.set_xscale("log")
    ax.set_xlim(right=done["p99"].max() * (3 if log else 1.25))
    ax.set_xlabel("iteration time (us): mean, whiskers from 1st to 99th percentile", fontsize=9)
    _title(fig, title, "incast iteration time per point (finished iterations in brackets)")
    _save(fig, path)
    return True


# ---------------------------------------------------------------------------------------
# Flexplane figures


def _counts(values) -> str:
    """A range of flow counts as text: "12" or "9-14"."""
    v = [int(x) for x in values if np.isfinite(x)]
    if not v:
        return "0"
    return f"{min(v):,}" if min(v) == max(v) else f"{min(v):,}-{max(v):,}"


def plot_fct_by_load(flows: pd.DataFrame, path: Path, title: str | None = None) -> bool:
    """Flexplane Figures 4 and 7: per case, small flows' mean and 99th-percentile slowdown and
    large flows' mean slowdown against load (needs swept `case` and `load` columns). The
    title names the paper's figures only for the bundled scenario (flexplane-fct); any
    other is titled with its own name."""
    from . import dataplane

    if not {"case", "load"} <= set(flows.columns):
        return False
    t = dataplane.fct_by_load(flows)
    if t.empty or t[["small_mean", "small_p99", "large_mean"]].isna().all().all():
        return False
    panels = [("small_mean", "small_flows", "small flows (<100 KB): mean"), ("small_p99", "small_flows", "small flows (<100 KB): 99th percentile"),
              ("large_mean", "large_flows", "large flows (>10 MB): mean")]
    fig, axes = subplots(1, 3, figsize=(12, 3.9))
    cases = [c for c in pd.unique(flows["case"]) if c in set(t["case"])]  # the scenario's order
    for ax, (col, count, name) in zip(axes, panels):
        ax.set_title(f"{name}\n({_counts(t[count])} finished flows per point)", fontsize=8)
        ax.set_xlabel("offered load (fraction of the clients' link rate)", fontsize=8)
        if t[col].isna().all():
            ax.text(0.5, 0.5, "no such flow finished", transform=ax.transAxes, ha="center", fontsize=8)
            ax.set_xticks([])
            ax.set_yticks([])
            continue
        for case in cases:
            g = t[t["case"] == case].sort_values("load")
            ax.plot(g["load"], g[col], marker="o", ms=4, label=str(case))
        ax.set_yscale("log")
        ax.grid(True, which="major", lw=0.3, color="0.85")
    axes[0].set_ylabel("normalised FCT (FCT / ideal FCT)")
    axes[0].legend(fontsize=7, loc="best")
    what = "normalised flow completion time against load"
    _title(fig, title, what + (" (Flexplane Figures 4 and 7)" if title == "flexplane-fct" else ""), _finished_note(flows))
    _save(fig, path)
    return True


def plot_priority_tradeoff(flows: pd.DataFrame, path: Path, title: str | None = None) -> bool:
    """Flexplane Figure 6: per case, the mean FCT of high-priority (DSCP > 0) requests
    against that of low-priority ones; down and left is better. Each case has a marker and
    colour of its own, named in the legend (cases often land on the same spot)."""
    from . import dataplane

    if "case" not in flows.columns or "dscp" not in flows.columns or flows["dscp"].nunique() < 2:
        return False
    t = dataplane.priority_tradeoff(flows).dropna(subset=["high_mean_fct_us", "low_mean_fct_us"])
    if t.empty:
        return False
    # The scenario's order of cases, not the alphabet's.
    t = t.set_index("case").loc[[c for c in pd.unique(flows["case"]) if c in set(t["case"])]].reset_index()
    fig, ax = subplots(figsize=(7.2, 4.4))
    # Hollow markers of different shapes and sizes: cases that land on the same spot stay
    # visible one around the other.
    markers = "osD^vPXh<>p*"
    for i, r in enumerate(t.itertuples()):
        ax.scatter(r.low_mean_fct_us / 1e3, r.high_mean_fct_us, s=30 + 12 * i, marker=markers[i % len(markers)], facecolors="none",
                   edgecolors=f"C{i % 10}", linewidths=1.3, label=str(r.case), zorder=3)
    if _spans_decades(t["high_mean_fct_us"]):
        ax.set_yscale("log")
    if _spans_decades(t["low_mean_fct_us"]):
        ax.set_xscale("log")
    ax.set_xlabel("low-priority (long) requests: mean FCT (ms)")
    ax.set_ylabel("high-priority (short) requests: mean FCT (us)")
    ax.grid(True, which="major", lw=0.3, color="0.85")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    note = "lower left is better" + (f"; {_finished_note(flows)}" if _finished_note(flows) else "")
    _title(fig, title, "short vs long request FCT per scheme" + (" (Flexplane Figure 6)" if title == "flexplane-priority" else ""), note)
    _save(fig, path)
    return True


# ---------------------------------------------------------------------------------------
# Torus all-to-all (CamCubeOS Figure 5a)

# CamCubeOS (HPDC 2013) section 5.2, Figure 5(a): the throughput per server the paper
# reports for all-to-all traffic on 3D tori of 1 Gbit/s links, by number of servers (from
# its text: "2.7 Gbps", "1 Gbps", "500 Mbps").
CAMCUBE_FIGURE_5A_GBPS = {27: 2.7, 512: 1.0, 4096: 0.5}
_RATE_UNITS = {"": 1, "K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def _rate_bps(text) -> float | None:
    """A resolved rate ("1Gbps", "2876742.642Kbps") in bit/s; None if it is not one."""
    import re

    m = re.fullmatch(r"\s*([0-9.]+)\s*([KkMGT]?)bps\s*", str(text))
    return float(m.group(1)) * _RATE_UNITS[m.group(2)] if m else None


def torus_throughput(headlines: list[dict], summaries: list[dict], labels: list[str]) -> pd.DataFrame:
    """One row per run (or sweep point) that has an all-to-all headline: its label,
    servers and dims (when its summary is known), and the expected (a torus's), delivered
    (mean and least over servers) and reported (CamCubeOS Figure 5a, for the paper's cubes
    of 1 Gbit/s links only) rates per server in Gbit/s. A switched network's row (Figure 5a's
    comparison) has no expected rate, and its oversubscription in `switched` (NaN on a
    torus)."""
    rows = []
    for head, summary, label in zip(headlines, summaries, labels):
        expected = head.get("expected_gbps_per_server")
        delivered = head.get("delivered_gbps_per_server")
        if expected is None or not np.isfinite(expected):
            if delivered is None or not np.isfinite(delivered):
                continue
            expected = np.nan
        topo = ((summary or {}).get("scenario") or {}).get("topology") or {}
        dims = topo.get("dims") if isinstance(topo.get("dims"), list) else None
        servers = (summary or {}).get("hosts")
        cube = dims is not None and len(set(dims)) == 1 and _rate_bps((topo.get("link") or {}).get("rate")) == 1e9
        n = int(np.prod(dims)) if dims else servers
        rows.append({"label": label, "servers": servers, "dims": "x".join(map(str, dims)) if dims else None,
                     "expected": expected, "delivered": head.get("delivered_gbps_per_server", np.nan),
                     "least": head.get("min_delivered_gbps_per_server", np.nan),
                     "reported": CAMCUBE_FIGURE_5A_GBPS.get(servers, np.nan) if cube else np.nan,
                     "median_live": head.get("median_delivered_gbps_per_live_server", np.nan),
                     "failed": head.get("failed_servers", 0) or 0, "n": n,
                     # A switched network's oversubscription (a leaf-spine's own; the others are 1:1).
                     "switched": (float(topo.get("oversubscription", 1.0)) if topo.get("kind") == "leaf_spine" else 1.0)
                     if not np.isfinite(expected) else np.nan})
    return pd.DataFrame(rows, columns=["label", "servers", "dims", "expected", "delivered", "least", "reported",
                                       "median_live", "failed", "n", "switched"])


# CamCubeOS Figure 5b: the median per-server throughput falls about linearly with the
# fraction of servers failed, by 38.77% at 20%.
CAMCUBE_FIGURE_5B_DROP_AT_20 = 0.3877


def torus_failures(t: pd.DataFrame) -> pd.DataFrame | None:
    """The points of a torus run with servers failed (Figure 5b): percent failed and the
    median over surviving servers, relative to the point with none failed; None when no
    point has a failed server or none has zero."""
    t = t[t["switched"].isna()]
    if t.empty or not (t["failed"] > 0).any() or not (t["failed"] == 0).any() or t["n"].isna().any():
        return None
    t = t.assign(percent=100.0 * t["failed"] / t["n"].astype(float)).sort_values("percent")
    base = t.loc[t["failed"] == 0, "median_live"].iloc[0]
    return t.assign(relative=t["median_live"] / base)


def plot_torus_failures(t: pd.DataFrame, path: Path, title: str | None = None) -> bool:
    """Median throughput per surviving server against the percentage of servers failed,
    relative to none failed, with CamCubeOS Figure 5b's reported line."""
    f = torus_failures(t)
    if f is None:
        return False
    fig, ax = subplots(figsize=(6.4, 4.4))
    ax.plot(f["percent"], 100 * f["relative"], color="C0", marker="o", label="wscsim: median over surviving servers")
    top = max(20.0, float(f["percent"].max()))
    ax.plot([0, 20], [100, 100 * (1 - CAMCUBE_FIGURE_5B_DROP_AT_20)], color="C3", ls="--",
            label="CamCubeOS Figure 5b (reported: -38.77% at 20%)")
    for r in f.itertuples():
        ax.annotate(f"{r.median_live:.3f} Gbit/s", (r.percent, 100 * r.relative), textcoords="offset points",
                    xytext=(4, 6), fontsize=7, color="C0")
    ax.set_xlim(-0.5, top + 3.5)
    ax.set_ylim(0, 110)
    ax.set_xlabel("servers failed at random (%)")
    ax.set_ylabel("median throughput per surviving server\n(% of none failed)")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower left", fontsize=8)
    _title(fig, title, "all-to-all throughput on a torus with servers failed",
           "what each surviving server receives as the destination, second half of the run")
    return bool(_save(fig, path))


def plot_torus_throughput(t: pd.DataFrame, path: Path, title: str | None = None) -> bool:
    """Delivered against expected throughput per server on a torus under all-to-all traffic
    (CamCubeOS Figure 5a), against the number of servers when every torus point has its own
    (else one position per point), with the paper's reported values where it has them and
    switched networks' points (triangles, by their oversubscription) beside them. Nothing
    without a torus point."""
    if t.empty or t["switched"].notna().all():
        return False
    tor, sw = t[t["switched"].isna()], t[t["switched"].notna()]
    by_servers = t["servers"].notna().all() and tor["servers"].is_unique and sw["servers"].is_unique
    if by_servers:
        tor = tor.sort_values("servers")
        x = tor["servers"].astype(float).to_numpy()
        # A switched point sits right of the torus of its size, clear of its label.
        x_sw = sw["servers"].astype(float).to_numpy() * 1.9
        ticks = [f"{int(n):,}" + (f"\n({d})" if d else "") for n, d in zip(tor["servers"], tor["dims"])]
        tick_x = x
    else:
        pos = {i: float(k) for k, i in enumerate(t.index)}
        x = np.array([pos[i] for i in tor.index])
        x_sw = np.array([pos[i] for i in sw.index])
        tick_x = np.arange(len(t), dtype=float)
        ticks = [f"{r.label}\n({int(r.servers):,} servers)" if pd.notna(r.servers) else r.label for r in t.itertuples()]
    fig, ax = subplots(figsize=(6.4, 4.8))
    ax.plot(x, tor["expected"], ls="--", color="0.45", marker="o", ms=10, mfc="none", mew=1.2, label="expected: links x rate x (N-1) / sum of hops", zorder=2)
    ax.plot(x, tor["delivered"], color="C0", marker="o", ms=5, label="delivered, mean over servers", zorder=4)
    if tor["least"].notna().any():
        # A whisker from the mean down to the least-served server.
        low = (tor["delivered"] - tor["least"]).clip(lower=0).fillna(0).to_numpy()
        ax.errorbar(x, tor["delivered"], yerr=[low, np.zeros(len(tor))], fmt="none", ecolor="C0", elinewidth=0.8, capsize=3, alpha=0.6,
                    label="delivered, least-served server", zorder=3)
    if tor["reported"].notna().any():
        ax.plot(x, tor["reported"], ls="none", color="C3", marker="s", ms=8, mfc="none", mew=1.3, label="CamCubeOS Figure 5a (reported)", zorder=3)
    for xi, r in zip(x, tor.itertuples()):
        if np.isfinite(r.delivered):
            ax.annotate(f"{r.delivered / r.expected:.1%}", (xi, r.delivered), xytext=(9, 0), textcoords="offset points", va="center", fontsize=7, color="C0")
    if not sw.empty:
        ax.plot(x_sw, sw["delivered"], ls="none", color="C2", marker="^", ms=7,
                label="switched network, all-to-all: delivered", zorder=4)
        for xi, r in zip(x_sw, sw.itertuples()):
            ax.annotate(f"1:{r.switched:g}\n{r.delivered:.3f}", (xi, r.delivered), xytext=(0, -9), textcoords="offset points", ha="center", va="top",
                        fontsize=7, color="C2")
    if by_servers:
        all_x = np.concatenate([x, x_sw])
        if len(all_x) > 1 and _spans_decades(all_x):
            ax.set_xscale("log")
            ax.set_xlim(all_x.min() / 2, all_x.max() * 1.6)
        else:
            ax.set_xlim(all_x.min() - max(1.0, 0.6 * all_x.min()), all_x.max() + max(1.0, 0.6 * all_x.max()))
        ax.set_xlabel("servers (torus dims)")
    else:
        ax.set_xlim(-0.6, len(t) - 0.4)
        ax.set_xlabel("sweep point")
    ax.set_xticks(tick_x, ticks, fontsize=7)
    ax.minorticks_off()
    top = np.nanmax(t[["expected", "delivered", "reported"]].to_numpy(dtype=float))
    ax.set_ylim(0, top * 1.2)
    ax.set_ylabel("throughput per server (Gbit/s)")
    ax.grid(True, which="major", axis="y", lw=0.3, color="0.85")
    # Below the axes: inside, it would cover a point (a single run's sits in the middle).
    handles, names = ax.get_legend_handles_labels()
    fig.legend(handles, names, loc="outside lower center", ncols=2, fontsize=7)
    _title(fig, title, "all-to-all throughput per server on the torus",
           "delivered: what a server receives as destination, on the wire, in the second half of the run\n"
           "(mean over servers, % of expected beside it; whisker down to the least-served server)")
    _save(fig, path)
    return True


# CamCubeOS Figure 5c: drops at 2 failures/s (a bound) and at about 15 failures/s.
CAMCUBE_FIGURE_5C_BOUND = (2.0, 1.0)
CAMCUBE_FIGURE_5C_HIGH = (15.0, 27.41)


def torus_churn(points: pd.DataFrame, summary: dict) -> pd.DataFrame | None:
    """The points of a churn sweep (Figure 5c): failures per second (half the churn, which
    counts failures and rejoins), the percentage of key-addressed packets dropped and the
    number misdelivered; None unless every point sent packets to keys under churn."""
    if points.empty or "headline_key_drop_fraction" not in points.columns:
        return None
    per_point = summary.get("point_summaries") or []
    rows = []
    for r in points.sort_values("point").to_dict("records"):
        p = int(r["point"])
        churn = ((per_point[p] if p < len(per_point) else {}).get("scenario") or {}).get("churn") or {}
        if "rate" not in churn or not np.isfinite(r.get("headline_key_drop_fraction", np.nan)):
            return None
        rows.append({"failures_per_s": churn["rate"] / 2.0, "dropped_pct": 100.0 * r["headline_key_drop_fraction"],
                     "misdelivered": int(r.get("headline_key_packets_misdelivered", 0)),
                     "sent": int(r.get("headline_key_packets_sent", 0))})
    return pd.DataFrame(rows).sort_values("failures_per_s") if rows else None


def plot_torus_churn(t: pd.DataFrame, path: Path, title: str | None = None) -> bool:
    """Key-addressed packets dropped against failures per second (log scale), with the
    misdelivered count at each point and CamCubeOS Figure 5c's reported points."""
    fig, ax = subplots(figsize=(6.4, 4.4))
    ax.plot(t["failures_per_s"], t["dropped_pct"], color="C0", marker="o", label="wscsim: dropped")
    for r in t.itertuples():
        ax.annotate(f"{r.dropped_pct:.3g}%\n{r.misdelivered} misdelivered", (r.failures_per_s, r.dropped_pct),
                    textcoords="offset points", xytext=(5, -18), fontsize=7, color="C0")
    (bx, by), (hx, hy) = CAMCUBE_FIGURE_5C_BOUND, CAMCUBE_FIGURE_5C_HIGH
    ax.plot([bx], [by], ls="none", marker="v", color="C3", ms=8, label=f"CamCubeOS: under {by:g}% at {bx:g} failures/s")
    ax.plot([hx], [hy], ls="none", marker="s", mfc="none", color="C3", ms=8, label=f"CamCubeOS: {hy}% at about {hx:g} failures/s")
    ax.set_yscale("log")
    lo = min(float(t["dropped_pct"][t["dropped_pct"] > 0].min()) if (t["dropped_pct"] > 0).any() else 0.01, by)
    ax.set_ylim(lo / 3, hy * 3)
    ax.set_xlim(0, max(float(t["failures_per_s"].max()), hx) * 1.15)
    ax.set_xlabel("server failures per second (rejoins as many)")
    ax.set_ylabel("packets to keys dropped (%)")
    ax.grid(alpha=0.3, which="both", lw=0.3)
    ax.legend(loc="upper left", fontsize=7)
    _title(fig, title, "churn: packets to random keys dropped",
           "every live server sends 1,000 packets/s to random keys; misdelivered: not at the key's true root")
    return bool(_save(fig, path))


# CamCubeOS Figure 4c: mean round trip of 15-hop pings (ms).
CAMCUBE_FIGURE_4C_15_HOPS_MS = {1518: 2.22, 9018: 5.87}


def ping_rtt(pings: pd.DataFrame) -> pd.DataFrame:
    """Mean and 99th-percentile round trip by frame size and hop count (one way), in ms."""
    done = pings[np.isfinite(pings["rtt_us"])]
    g = done.groupby(["frame_bytes", "path_hops"])["rtt_us"]
    return pd.DataFrame({"mean_ms": g.mean() / 1e3, "p99_ms": g.quantile(0.99) / 1e3, "pings": g.size()}).reset_index()


def plot_ping_rtt(pings: pd.DataFrame, path: Path, title: str | None = None) -> bool:
    """Ping round trip against hops, one line per frame size, with CamCubeOS Figure 4c's
    15-hop points."""
    if pings is None or pings.empty:
        return False
    t = ping_rtt(pings)
    if t.empty:
        return False
    fig, ax = subplots(figsize=(6.4, 4.4))
    for i, (frame, g) in enumerate(t.groupby("frame_bytes")):
        name = "jumbo" if frame > 2000 else f"{frame - 18:,}-byte packets"
        ax.plot(g["path_hops"], g["mean_ms"], marker="o", ms=3, color=f"C{i}", label=f"wscsim, {name} ({frame:,}-byte frames)")
        if frame in CAMCUBE_FIGURE_4C_15_HOPS_MS:
            ax.plot([15], [CAMCUBE_FIGURE_4C_15_HOPS_MS[frame]], ls="none", marker="s", mfc="none", ms=9, color=f"C{i}",
                    label=f"CamCubeOS Figure 4c, {name}: {CAMCUBE_FIGURE_4C_15_HOPS_MS[frame]} ms at 15 hops")
    ax.set_xlabel("hops (one way)")
    ax.set_ylabel("mean round trip (ms)")
    ax.set_xlim(0, max(16, int(t["path_hops"].max()) + 1))
    ax.set_ylim(0, None)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=7)
    _title(fig, title, "ping round trip against hops",
           "sequential pings; a camcube host preset is fitted to the 15-hop points, the line through them is the model's")
    return bool(_save(fig, path))


# CamCubeOS Figures 4a and 4b (section 5.1): per-server throughput over its links' capacity
# (rx + tx), by frame kind and links saturated, and CPU busy at six links (bounds read off
# the figure: "under 22%", "above 87%", "under 45%").
CAMCUBE_FIGURE_4A = {"1,500 bytes": {1: 0.97, 2: 0.97, 3: 0.97, 4: 0.97, 5: 0.97, 6: 0.91},
                     "jumbo": {L: 1.0 for L in range(1, 7)}, "1,500 bytes, packing": {L: 1.0 for L in range(1, 7)}}
CAMCUBE_FIGURE_4B_SIX_LINKS = {"1,500 bytes": 0.87, "jumbo": 0.22, "1,500 bytes, packing": 0.45}


def torus_links(points: pd.DataFrame) -> pd.DataFrame | None:
    """The points of a links sweep (Figures 4a/4b): case, links, throughput fraction and
    CPU busy; None unless the points have them."""
    need = {"case", "links", "headline_median_link_throughput_fraction", "headline_median_cpu_utilisation"}
    if points.empty or not need <= set(points.columns):
        return None
    return pd.DataFrame({"case": points["case"], "links": points["links"].astype(int),
                         "throughput": points["headline_median_link_throughput_fraction"].astype(float),
                         "cpu": points["headline_median_cpu_utilisation"].astype(float)})


def plot_torus_links(t: pd.DataFrame, path: Path, title: str | None = None) -> bool:
    """Throughput fraction and CPU against links saturated, a line per case, with
    CamCubeOS Figures 4a and 4b's values as open markers."""
    fig, (a, b) = subplots(1, 2, figsize=(10, 4.2))
    for i, (case, g) in enumerate(t.groupby("case", sort=False)):
        g = g.sort_values("links")
        a.plot(g["links"], g["throughput"], marker="o", ms=3, color=f"C{i}", label=f"wscsim: {case}")
        b.plot(g["links"], 100 * g["cpu"], marker="o", ms=3, color=f"C{i}", label=f"wscsim: {case}")
        paper = CAMCUBE_FIGURE_4A.get(case)
        if paper:
            a.plot(list(paper), list(paper.values()), ls="none", marker="s", mfc="none", ms=7, color=f"C{i}",
                   label=f"CamCubeOS Figure 4a: {case}")
        if case in CAMCUBE_FIGURE_4B_SIX_LINKS:
            b.plot([6], [100 * CAMCUBE_FIGURE_4B_SIX_LINKS[case]], ls="none", marker="s", mfc="none", ms=9, color=f"C{i}",
                   label=f"CamCubeOS Figure 4b at six links: {case}")
    a.set_ylim(0.8, 1.02)
    a.set_ylabel("throughput / links' capacity (rx + tx, median server)")
    b.set_ylim(0, 100)
    b.set_ylabel("CPU busy, all 8 (%, median server)")
    for ax in (a, b):
        ax.set_xlabel("links saturated")
        ax.set_xticks(range(1, 7))
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right" if ax is a else "upper left", fontsize=7)
    _title(fig, title, "saturated links: throughput and CPU",
           "UDP at line rate to L neighbours; camcube host preset (its CPU costs are fitted to Figure 4b at six links)")
    return bool(_save(fig, path))


# CamCubeOS section 4, the TCP service: median inbound throughput per server, and its bound.
CAMCUBE_TCP_MEDIAN_GBPS = 1.49
CAMCUBE_TCP_MAX_GBPS = 2.7


def tcp_inbound_per_server(flows: pd.DataFrame, end_us: float) -> pd.Series:
    """What each receiving server's TCP flows delivered over the span it received, in
    Gbit/s (the headline's median_inbound_gbps_per_server is this series' lower median):
    from the first flow's start to its last byte, or `end_us` for a flow that did not finish."""
    f = flows.assign(end_us=(flows["start_us"] + flows["fct_us"]).fillna(end_us))
    g = f.groupby("dst").agg(bytes=("bytes_received", "sum"), start=("start_us", "min"), end=("end_us", "max"))
    g = g[g["end"] > g["start"]]
    return g["bytes"] * 8 / ((g["end"] - g["start"]) * 1e3)


def plot_tcp_inbound(groups: list[tuple[str, pd.Series]], path: Path, title: str | None = None) -> bool:
    """Inbound TCP throughput per server, one column of points per case, with the median
    marked and the CamCubeOS TCP service's median and maximum."""
    groups = [(n, v) for n, v in groups if not v.empty]
    if not groups:
        return False
    fig, ax = subplots(figsize=(6.4, 4.4))
    for i, (name, v) in enumerate(groups):
        jitter = np.linspace(-0.15, 0.15, len(v))
        ax.plot(i + jitter, np.sort(v.to_numpy()), ls="none", marker="o", ms=3, color="C0", alpha=0.6,
                label="wscsim: one server" if i == 0 else None)
        med = float(np.sort(v.to_numpy())[(len(v) - 1) // 2])
        ax.plot([i - 0.25, i + 0.25], [med, med], color="C0", lw=2, label="wscsim: median" if i == 0 else None)
        ax.annotate(f"{med:.3g}", (i + 0.27, med), va="center", fontsize=8, color="C0")
    ax.axhline(CAMCUBE_TCP_MEDIAN_GBPS, color="C3", ls="--", lw=1, label=f"CamCubeOS: median {CAMCUBE_TCP_MEDIAN_GBPS} Gbit/s")
    ax.axhline(CAMCUBE_TCP_MAX_GBPS, color="0.4", ls=":", lw=1, label=f"CamCubeOS: maximum {CAMCUBE_TCP_MAX_GBPS} Gbit/s")
    ax.set_xticks(range(len(groups)), [n for n, _ in groups], fontsize=8)
    ax.set_xlim(-0.6, len(groups) - 0.4)
    ax.set_ylim(0, CAMCUBE_TCP_MAX_GBPS * 1.15)
    ax.set_ylabel("inbound TCP throughput per server (Gbit/s)")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(loc="lower right", fontsize=7)
    _title(fig, title, "TCP over the torus: what each server receives",
           "every server sends to every other at once; bytes delivered over the span each server receives")
    return bool(_save(fig, path))


# CamCubeOS Figure 6a: inserts at 150 in flight, the cube over the switch.
CAMCUBE_FIGURE_6A_RATIO = {"disk": 1.31, "no disk": 1.93}


def kv_inserts(points: pd.DataFrame, summary: dict) -> pd.DataFrame | None:
    """The points of a key-value insert sweep (Figure 6a): case, operations in flight in
    all (per client x clients) and images stored per second in Gbit/s; None unless the
    sweep has cases and kv_write_gbps."""
    if points.empty or "headline_kv_write_gbps" not in points.columns or "case" not in points.columns:
        return None
    per_point = summary.get("point_summaries") or []
    rows = []
    for r in points.sort_values("point").to_dict("records"):
        p = int(r["point"])
        w = ((per_point[p] if p < len(per_point) else {}).get("scenario") or {}).get("workload") or {}
        if "outstanding" not in w or "clients" not in w:
            return None
        rows.append({"case": r["case"], "in_flight": int(w["outstanding"]) * len(w["clients"]),
                     "gbps": float(r["headline_kv_write_gbps"])})
    return pd.DataFrame(rows)


def plot_kv_inserts(t: pd.DataFrame, path: Path, title: str | None = None) -> bool:
    """Insert throughput against operations in flight, a line per case, with the ratios
    of the cube over the switch at the most in flight beside CamCubeOS Figure 6a's."""
    fig, ax = subplots(figsize=(6.4, 4.4))
    for case, g in t.groupby("case", sort=False):
        g = g.sort_values("in_flight")
        ls = "-" if "camcube" in case else "--"
        color = "C1" if "no disk" in case else "C0"
        ax.plot(g["in_flight"], g["gbps"], marker="o", ms=3, ls=ls, color=color, label=f"wscsim: {case}")
    top = t[t["in_flight"] == t["in_flight"].max()].set_index("case")["gbps"]
    notes = []
    for kind, paper in CAMCUBE_FIGURE_6A_RATIO.items():
        cube, sw = top.get(f"camcube, {kind}"), top.get(f"switch, {kind}")
        if cube is not None and sw is not None and sw > 0:
            notes.append(f"{kind}: cube/switch {cube / sw:.2f} (CamCubeOS {paper})")
    if notes:
        ax.text(0.02, 0.97, f"at {int(t['in_flight'].max())} in flight\n" + "\n".join(notes), transform=ax.transAxes,
                va="top", fontsize=7, bbox={"facecolor": "white", "edgecolor": "0.8"})
    ax.set_xlabel("inserts in flight (all load generators)")
    ax.set_ylabel("images stored (Gbit/s)")
    ax.set_ylim(0, float(t["gbps"].max()) * 1.4)
    ax.set_xlim(0, None)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=7)
    _title(fig, title, "image store inserts: the cube against a switch",
           "1.47 MB images, 3 replicas; load generators on the external switch, front ends drawn at random")
    return bool(_save(fig, path))


# CamCubeOS Figure 6c: insert throughput after nine permanent failures.
CAMCUBE_FIGURE_6C_DROP_PCT = 38.85
_SIZE_UNITS = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}


def _bytes(text) -> float | None:
    """A scenario size ("1470000B", "1.47MB") in bytes."""
    m = re.fullmatch(r"\s*([0-9.]+)\s*(B|KB|MB|GB|KiB|MiB|GiB)\s*", str(text))
    return float(m.group(1)) * _SIZE_UNITS[m.group(2)] if m else None


def kv_timeline(ops: pd.DataFrame, value_bytes: float, end_s: float) -> pd.DataFrame:
    """Writes (inserts and compare-and-swaps that succeeded) completed in each second of
    the run, as Gbit/s of values stored."""
    done = ops[ops["latency_us"].notna() & ops["op"].isin(["insert", "cas"]) & (ops["status"] == "ok")]
    end = (done["start_us"] + done["latency_us"]) / 1e6
    edges = np.arange(0.0, math.floor(end_s) + 1.0, 1.0)
    counts = np.histogram(end, bins=edges)[0] if len(edges) > 1 else np.array([])
    return pd.DataFrame({"t_s": edges[1:], "gbps": counts * value_bytes * 8 / 1e9})


def plot_kv_timeline(t: pd.DataFrame, failures_s: list[float], path: Path, title: str | None = None) -> bool:
    """Insert throughput per second with the failures marked, and its fall from the ten
    seconds before the first failure to the seconds after the last, beside CamCubeOS
    Figure 6c's."""
    if t.empty or not failures_s:
        return False
    fig, ax = subplots(figsize=(6.4, 4.4))
    ax.plot(t["t_s"], t["gbps"], color="C0", lw=1, label="wscsim: images stored, per second")
    for i, f in enumerate(sorted(failures_s)):
        ax.axvline(f, color="C3", lw=0.6, ls=":", label="a server fails" if i == 0 else None)
    first, last = min(failures_s), max(failures_s)
    before = t[(t["t_s"] > first - 10) & (t["t_s"] <= first)]["gbps"].mean()
    after = t[t["t_s"] > last + 1]["gbps"].mean()
    if np.isfinite(before) and np.isfinite(after) and before > 0:
        ax.text(0.02, 0.03, f"after {len(failures_s)} failures: {100 * (after / before - 1):+.1f}% "
                f"(CamCubeOS: -{CAMCUBE_FIGURE_6C_DROP_PCT}%)", transform=ax.transAxes, fontsize=8,
                bbox={"facecolor": "white", "edgecolor": "0.8"})
    ax.set_xlabel("time (s)")
    ax.set_ylabel("images stored (Gbit/s)")
    ax.set_ylim(0, float(t["gbps"].max()) * 1.2)
    ax.set_xlim(0, float(t["t_s"].max()))
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right", fontsize=7)
    _title(fig, title, "image store inserts as servers fail for good",
           "150 inserts in flight, store in memory; the load generators pick live front ends")
    return bool(_save(fig, path))


# CamCubeOS Figure 6b: lookup latency at 150 in flight, median and 95th percentile (ms).
CAMCUBE_FIGURE_6B_MS = {"camcube, cache": (0.83, 1.70), "camcube, no cache": (0.97, 2.13), "switch": (0.95, 2.22)}


def plot_kv_latency(ops: pd.DataFrame, path: Path, title: str | None = None) -> bool:
    """The distribution of lookup latency, a line per case (the second half of each run),
    with CamCubeOS Figure 6b's median and 95th percentile for the cases it names."""
    if ops is None or ops.empty or "case" not in ops.columns:
        return False
    looks = ops[(ops["op"] == "lookup") & ops["latency_us"].notna()]
    if looks.empty:
        return False
    fig, ax = subplots(figsize=(6.4, 4.4))
    for i, (case, g) in enumerate(looks.groupby("case", sort=False)):
        g = g[g["start_us"] > g["start_us"].max() / 2]
        x = np.sort(g["latency_us"].to_numpy()) / 1e3
        ax.plot(x, np.arange(1, len(x) + 1) / len(x), color=f"C{i}", lw=1.2,
                label=f"wscsim, {case}: median {np.median(x):.2f}, p95 {np.quantile(x, 0.95):.2f} ms")
        if case in CAMCUBE_FIGURE_6B_MS:
            med, p95 = CAMCUBE_FIGURE_6B_MS[case]
            ax.plot([med, p95], [0.5, 0.95], ls="none", marker="s", mfc="none", ms=7, color=f"C{i}",
                    label=f"CamCubeOS, {case}: {med}, {p95} ms")
    ax.set_xlabel("lookup latency (ms)")
    ax.set_ylabel("fraction of lookups")
    ax.set_ylim(0, 1.02)
    ax.set_xlim(0, None)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=6.5)
    _title(fig, title, "thumbnail lookups: latency",
           "150 in flight from 10 load generators; squares: the paper's median and 95th percentile")
    return bool(_save(fig, path))
