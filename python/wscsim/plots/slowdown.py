"""Flow completion time slowdown by flow-size bucket, per run or per sweep point."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from . import figure as fg


def slowdown_by_bucket(flows: pd.DataFrame) -> pd.DataFrame:
    done = flows[np.isfinite(flows["slowdown"]) & (flows["size_bytes"] > 0)]
    rows = []
    for lo, hi, label in fg.SIZE_BUCKETS:
        b = done[(done["size_bytes"] >= lo) & (done["size_bytes"] < hi)]["slowdown"]
        if len(b):
            rows.append({"bucket": label, "flows": len(b), "mean": b.mean(), "p50": b.median(), "p99": b.quantile(0.99)})
    return pd.DataFrame(rows)


def finished_note(flows: pd.DataFrame) -> str | None:
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
    # The axis label says what the second line counts: the word itself would make
    # neighbouring labels run into each other when panels sit side by side.
    ax.set_xticks(x, [f"{b}\n{n:,}" for b, n in zip(t["bucket"], t["flows"])], fontsize=7)
    ax.set_yscale("log")
    ax.axhline(1, color="0.5", lw=0.6, ls=":")


def _slowdown_lines(ax, tables: dict, curve: str, colours: dict) -> None:
    """Per value of `curve`: median (solid) and 99th percentile (dashed) by size bucket;
    the flow counts of each bucket (their range over the curves) beneath."""
    order = [label for _, _, label in fg.SIZE_BUCKETS]
    present = [b for b in order if any(b in set(t["bucket"]) for t in tables.values())]
    x = {b: i for i, b in enumerate(present)}
    for v, t in tables.items():
        xs = [x[b] for b in t["bucket"]]
        ax.plot(xs, t["p50"], marker="o", ms=3, color=colours[v])
        ax.plot(xs, t["p99"], marker="^", ms=3, ls="--", color=colours[v])
    counts = {b: [int(n) for t in tables.values() for bb, n in zip(t["bucket"], t["flows"]) if bb == b] for b in present}
    ticks = [f"{b}\n{min(c):,}" + (f"-{max(c):,}" if max(c) != min(c) else "") for b, c in counts.items()]
    ax.set_xticks(range(len(present)), ticks, fontsize=6)
    ax.set_yscale("log")
    ax.axhline(1, color="0.5", lw=0.6, ls=":")


def plot_slowdown(flows: pd.DataFrame, path: Path, title: str | None = None) -> bool:
    """A run's FCT slowdown by flow-size bucket (median and 99th percentile)."""
    t = slowdown_by_bucket(flows)
    if t.empty:
        return False
    fig, ax = fg.subplots(figsize=(6.4, 3.9))
    _slowdown_bars(ax, t)
    ax.set_ylabel("FCT slowdown (FCT / ideal FCT)")
    ax.set_xlabel("flow size, and finished flows in each bucket")
    ax.legend(loc="best", fontsize=8)
    fg.titled(fig, title, "flow completion time slowdown by flow size", finished_note(flows))
    fg.save(fig, path)
    return True


def plot_slowdown_sweep(flows: pd.DataFrame, points: pd.DataFrame, swept: list[str], path: Path, title: str | None = None) -> bool:
    """A sweep's FCT slowdown by size bucket: a panel of bars per point, or, for many
    points, a panel per case with median and 99th-percentile lines per load (or senders)."""
    if flows.empty or slowdown_by_bucket(flows).empty:
        return False
    panels, curve = fg.facets(points, swept)
    fig, axes = fg.panels(len(panels), sharey=True)
    for ax, (name, pts) in zip(axes, panels):
        tables = {p: slowdown_by_bucket(fg.in_point(flows, p)) for p in pts["point"]}
        tables = {p: t for p, t in tables.items() if not t.empty}
        ax.set_title(name, fontsize=8)
        if not tables:
            ax.text(0.5, 0.5, "no finished flows", transform=ax.transAxes, ha="center", fontsize=8)
        elif curve is None:
            _slowdown_bars(ax, next(iter(tables.values())))
        else:
            by_value = {pts.loc[pts["point"] == p, curve].iloc[0]: t for p, t in tables.items()}
            _slowdown_lines(ax, dict(sorted(by_value.items())), curve, fg.colours(points[curve]))
    if curve is None:
        axes[0].legend(fontsize=6, loc="best")
    else:
        fg.value_legend(fig, curve, fg.colours(points[curve]), "solid: median\ndashed: 99th percentile")
    fig.supylabel("FCT slowdown (FCT / ideal FCT)", fontsize=9)
    fig.supxlabel("flow size, and finished flows in each bucket", fontsize=9)
    fg.titled(fig, title, "flow completion time slowdown by flow size, per point", finished_note(flows))
    fg.save(fig, path)
    return True
