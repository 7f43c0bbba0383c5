"""The Flexplane figures: normalised FCT against load (Figures 4 and 7) and the
short/long request trade-off (Figure 6)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from . import figure as fg
from .slowdown import finished_note


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
    from .. import dataplane

    if not {"case", "load"} <= set(flows.columns):
        return False
    t = dataplane.fct_by_load(flows)
    if t.empty or t[["small_mean", "small_p99", "large_mean"]].isna().all().all():
        return False
    panels = [("small_mean", "small_flows", "small flows (<100 KB): mean"), ("small_p99", "small_flows", "small flows (<100 KB): 99th percentile"),
              ("large_mean", "large_flows", "large flows (>10 MB): mean")]
    fig, axes = fg.subplots(1, 3, figsize=(12, 3.9))
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
    fg.titled(fig, title, what + (" (Flexplane Figures 4 and 7)" if title == "flexplane-fct" else ""), finished_note(flows))
    fg.save(fig, path)
    return True


def plot_priority_tradeoff(flows: pd.DataFrame, path: Path, title: str | None = None) -> bool:
    """Flexplane Figure 6: per case, the mean FCT of high-priority (DSCP > 0) requests
    against that of low-priority ones; down and left is better. Each case has a marker and
    colour of its own, named in the legend (cases often land on the same spot)."""
    from .. import dataplane

    if "case" not in flows.columns or "dscp" not in flows.columns or flows["dscp"].nunique() < 2:
        return False
    t = dataplane.priority_tradeoff(flows).dropna(subset=["high_mean_fct_us", "low_mean_fct_us"])
    if t.empty:
        return False
    # The scenario's order of cases, not the alphabet's.
    t = t.set_index("case").loc[[c for c in pd.unique(flows["case"]) if c in set(t["case"])]].reset_index()
    fig, ax = fg.subplots(figsize=(7.2, 4.4))
    # Hollow markers of different shapes and sizes: cases that land on the same spot stay
    # visible one around the other.
    markers = "osD^vPXh<>p*"
    for i, r in enumerate(t.itertuples()):
        ax.scatter(r.low_mean_fct_us / 1e3, r.high_mean_fct_us, s=30 + 12 * i, marker=markers[i % len(markers)], facecolors="none",
                   edgecolors=f"C{i % 10}", linewidths=1.3, label=str(r.case), zorder=3)
    if fg.spans_decades(t["high_mean_fct_us"]):
        ax.set_yscale("log")
    if fg.spans_decades(t["low_mean_fct_us"]):
        ax.set_xscale("log")
    ax.set_xlabel("low-priority (long) requests: mean FCT (ms)")
    ax.set_ylabel("high-priority (short) requests: mean FCT (us)")
    ax.grid(True, which="major", lw=0.3, color="0.85")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    note = "lower left is better" + (f"; {finished_note(flows)}" if finished_note(flows) else "")
    fg.titled(fig, title, "short vs long request FCT per scheme" + (" (Flexplane Figure 6)" if title == "flexplane-priority" else ""), note)
    fg.save(fig, path)
    return True
