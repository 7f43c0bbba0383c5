"""What every figure shares: a figure of its own outside pyplot, panel grids and their
layout, titles, sweep facets and colours, log-axis labels, and `save`, which writes
PNG (and SVG when asked for) byte for byte the same from run to run."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure



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


def log_label(v: float, _pos=None) -> str:
    """A log axis's tick as a plain number where one reads easily (0.05, 20, 5000)."""
    if v <= 0:
        return ""
    if 1e-3 <= v < 1e6:
        return f"{v:,.0f}" if v >= 1e4 else f"{v:g}"
    exponent = math.log10(v)
    return f"$10^{{{exponent:.0f}}}$" if abs(exponent - round(exponent)) < 1e-9 else f"{v:.0e}"


def tidy_log_axes(fig) -> None:
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
            axis.set_major_formatter(FuncFormatter(log_label))
            axis.set_minor_formatter(NullFormatter())
            if decades >= 2.2:
                axis.set_minor_locator(NullLocator())


def save(fig, path: Path) -> list[str]:
    """Writes the figure as PNG at `path` and, when SVGs are wanted, as SVG beside it;
    returns the file names."""
    files = [Path(path).with_suffix(s) for s in written_formats]
    tidy_log_axes(fig)
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


def titled(fig, title: str | None, what: str, note: str | None = None) -> None:
    """`scenario: what the figure shows`, and an optional note as a second line (in the
    title, where constrained layout keeps it clear of axes and labels)."""
    text = f"{title}: {what}" if title else what
    fig.suptitle(f"{text}\n{note}" if note else text, fontsize=9)


def scenario_name(summary: dict) -> str | None:
    return (summary.get("scenario") or {}).get("name")


def label(keys: list[str], values) -> str:
    """A sweep point as text: a named case reads best as its name, numbers keep theirs."""
    return ", ".join(str(v) if k == "case" else f"{k}={v}" for k, v in zip(keys, values))


def grid(n: int) -> tuple[int, int]:
    """Rows and columns for n panels: at most four columns, rows as even as they go."""
    rows = math.ceil(n / 4)
    return rows, math.ceil(n / rows)


def panels(n: int, panel=(3.3, 2.6), **kw):
    """A figure of n panels (axes in reading order; the unused ones hidden)."""
    rows, cols = grid(n)
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
    """Places a grid of panels sharing their y axis (`panels`) from a few measurements
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


def is_number_column(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def facets(points: pd.DataFrame, swept: list[str]) -> tuple[list[tuple[str, pd.DataFrame]], str | None]:
    """How a sweep's points are laid out: (panels as (title, their rows of `points`), the
    swept column drawn as curves within a panel or None). Up to MAX_PANELS points, one panel
    each; beyond, the numeric swept column with the most values (senders, load) becomes
    curves, in one panel per combination of the other swept columns; with no numeric one,
    the swept column with the most values (sizes given as text: "100B" to "1MB"). Forty
    log-log panels took half a minute to lay out, and were too small to read."""
    points = points.sort_values("point")
    numeric = [k for k in swept if is_number_column(points[k])]
    if len(points) <= MAX_PANELS or not swept:
        # Rows as records, not iterrows: a row of an integer and a float column would show
        # the integer as a float ("seed=1.0").
        return [(label(swept, [r[k] for k in swept]), points[points["point"] == r["point"]]) for r in points.to_dict("records")], None
    curve = max(numeric or swept, key=lambda k: points[k].nunique())
    rest = [k for k in swept if k != curve]
    if not rest:
        return [("", points)], curve
    return [(label(rest, key), g) for key, g in points.groupby(rest, sort=False)], curve


def colours(values) -> dict:
    """A colour per value of an ordered parameter, light to dark as the value grows (values
    given as text in the order they come, which is the sweep's)."""
    values = list(dict.fromkeys(values))
    if all(isinstance(v, (int, float, np.number)) and not isinstance(v, (bool, np.bool_)) for v in values):
        values = sorted(values)
    cmap = matplotlib.colormaps["viridis"]
    return {v: cmap(0.85 * (1 - i / max(1, len(values) - 1))) for i, v in enumerate(values)}


def value_legend(fig, curve: str, colours: dict, title: str | None = None) -> None:
    """One legend for the whole figure, beside the panels: the colour of each value of
    `curve` is the same in every panel, and a legend inside each would hide curves."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=c, marker="o", ms=3, label=f"{curve}={v}") for v, c in colours.items()]
    fig.legend(handles=handles, loc="outside right upper", fontsize=7, title=title, title_fontsize=7)


def spans_decades(values) -> bool:
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


def in_point(df: pd.DataFrame, point) -> pd.DataFrame:
    return df[df["point"] == point]


def point_bars(ax, t: pd.DataFrame, count: str, lo: str, hi: str, text, none_text: str, label: str | None = None) -> np.ndarray:
    """Horizontal bars of each sweep point's `mean`, top row first (rows of `t`: `label`,
    `count` finished, `mean`, whiskers from `lo` to `hi`), each written as `text(mean)`
    beyond its whisker; a point with none finished says `none_text` at the left edge (in
    axes units: a log axis has no zero). The y of the finished points' bars."""
    y = np.arange(len(t))[::-1]
    finished = t[count].to_numpy() > 0
    done, yd = t[finished], y[finished]
    ax.barh(yd, done["mean"], color="C0", height=0.6, label=label)
    ax.errorbar(done["mean"], yd, xerr=[done["mean"] - done[lo], done[hi] - done["mean"]], fmt="none", ecolor="0.2", capsize=3, lw=0.8)
    for yi, r in zip(y, t.itertuples()):
        if getattr(r, count):
            ax.text(getattr(r, hi), yi, f"  {text(r.mean)}", va="center", fontsize=7)
        else:
            ax.text(0.01, yi, none_text, va="center", fontsize=7, transform=ax.get_yaxis_transform())
    ax.set_yticks(y, [f"{r.label} ({getattr(r, count):,})" for r in t.itertuples()], fontsize=7)
    ax.set_ylim(-0.6, len(t) - 0.4)
    return yd
