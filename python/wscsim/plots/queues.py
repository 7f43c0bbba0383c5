"""Queue occupancy per switch port as a complementary CDF on log axes."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..queue_curves import DRAWN_PORTS, queue_curves
from . import figure as fg


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
    most DRAWN_PORTS), the fg.NAMED_PORTS busiest in colour and named, the rest grey. Returns
    how many ports that is, for the panel's title."""
    busy = ports[ports["peak"] > 0]
    drawn = busy.head(DRAWN_PORTS)
    for rank, r in enumerate(drawn.itertuples()):
        xs, ys = curves[(r.point, r.node, r.port)]
        if rank < fg.NAMED_PORTS:
            ax.plot(xs / 1e3, ys, lw=1.5, color=f"C{rank}", zorder=3, label=f"{r.name} (mean {_kb(r.mean)})", **_CCDF_STYLE)
        else:
            ax.plot(xs / 1e3, ys, lw=0.6, color="0.7", zorder=2, label="other ports" if rank == fg.NAMED_PORTS else None, **_CCDF_STYLE)
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
    sweep of up to fg.MAX_PANELS points) gets a panel per point with every port that ever held
    a queue, the busiest named; a larger sweep a panel per case with the busiest port of
    each point. Nothing is drawn if no sampled queue ever held a byte. From the queue
    samples, or from `prepared` queue_curves instead."""
    if swept and points is not None and not points.empty:
        panels, curve = fg.facets(points, swept)
    else:
        panels, curve = [("", pd.DataFrame({"point": [0]}))], None
    if prepared is None:
        if queues.empty or not (queues["queue_bytes"] > 0).any():
            return False
        prepared = queue_curves(queues, links, 1 if curve else DRAWN_PORTS)
    ports, samples = prepared
    if ports.empty or not (ports["peak"] > 0).any():
        return False
    fig, axes = fg.panels(len(panels), panel=(4.2, 3.0) if len(panels) > 1 else (7.0, 4.2), sharex=True, sharey=True)
    for ax, (name, pts) in zip(axes, panels):
        if curve is None:
            count = _draw_ports(ax, ports[ports["point"] == pts["point"].iloc[0]], samples)
            name = f"{name}\n{count}" if name else count
        else:
            _draw_bottlenecks(ax, ports, samples, pts, curve, fg.colours(points[curve]))
        ax.set_title(name, fontsize=8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.grid(True, which="major", lw=0.3, color="0.85")
    if curve is not None:
        fg.value_legend(fig, curve, fg.colours(points[curve]))
    fig.supxlabel("queue occupancy x (KB, of 1000 bytes)", fontsize=9)
    fig.supylabel("fraction of samples with queue \u2265 x", fontsize=9)
    what = "queue occupancy CCDF per switch port" if curve is None else "queue occupancy CCDF of each point's busiest switch port"
    fg.titled(fig, title, what, _truncation_note(queues, summary or {}))
    fg.save(fig, path)
    return True
