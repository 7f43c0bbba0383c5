"""Rates over time: each RoCEv2 queue pair's sending rate as it sent (`roce_rates`, when
`roce.rate_samples` asks), a line per queue pair, a panel per sweep point."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from . import figure as fg


def plot_roce_rates(rates: pd.DataFrame, points: pd.DataFrame | None, swept: list[str], path: Path,
                    title: str | None = None) -> bool:
    if rates is None or rates.empty:
        return False
    if points is None or "point" not in rates.columns:
        panels = [("", rates)]
    else:
        panels = [(fg.label(swept, [p[k] for k in swept]), fg.in_point(rates, p["point"]))
                  for _, p in points.sort_values("point").iterrows()]
    fig, axes = fg.panels(len(panels), panel=(6.4, 3.6) if len(panels) == 1 else (4.6, 3.2), sharey=True)
    for ax, (name, sub) in zip(axes, panels):
        for qp, line in sub.groupby("qp", sort=True):
            ax.step(line["time_us"] / 1e3, line["rate_gbps"], where="post", lw=0.9, label=f"queue pair {qp}")
        ax.set_title(name, fontsize=8)
        ax.set_xlabel("time (ms)")
        ax.set_ylabel("rate (Gbit/s)")
        ax.set_ylim(bottom=0)
        ax.grid(True, which="major", lw=0.3, color="0.85")
    axes[0].legend(fontsize=7, loc="upper right")
    fg.titled(fig, title, "RoCEv2 queue pairs' rates as they send", "each queue pair's rate when it sent, at most once per roce.rate_samples")
    fg.save(fig, path)
    return True
