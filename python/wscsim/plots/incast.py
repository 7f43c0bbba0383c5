"""TCP incast: goodput per iteration or against senders, and iteration times per case."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from . import figure as fg


def _goodput_axis(ax, values) -> None:
    """Goodput in Mbit/s: a log axis when the values span decades (a 200 ms timeout gives
    a few Mbit/s where 1 ms gives hundreds), otherwise linear from zero."""
    if fg.spans_decades(values):
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
    fig, ax = fg.subplots(figsize=(6.4, 3.8))
    ax.bar(incast["iteration"], incast["goodput_mbps"], width=1.0 if len(incast) > 50 else 0.8, color="C0")
    overall = incast["block_bytes"].sum() * 8 / incast["duration_us"].sum()
    ax.axhline(overall, color="C1", lw=1, ls="--")
    _goodput_axis(ax, incast["goodput_mbps"])
    ax.set_xlabel("iteration")
    # In the title rather than a legend, which would cover bars.
    note = f"dashed: overall goodput {overall:.4g} Mbit/s; mean iteration time {_us(incast['duration_us'].mean())}"
    fg.titled(fig, title, f"goodput of each incast iteration{_incast_what(scenario, len(incast))}", note)
    fg.save(fig, path)
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
    return [(fg.label(keys, key), g) for key, g in df.groupby(keys, sort=False)]


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
    fig, axes = fg.panels(len(panels), panel=(6.4, 3.8) if len(panels) == 1 else (4.6, 3.4), sharey=True)
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
    fg.titled(fig, title, f"incast goodput against senders{_incast_what(scenario)}", note)
    fg.save(fig, path)
    return True


def over_seeds(g: pd.DataFrame, keys: list[str], value: str) -> pd.DataFrame:
    """Rows of several seeds as one per combination of `keys` (in the order they come): the
    mean of `value`, the half-width of its 95% interval (`ci95`, 0 for one seed), `seeds`."""
    from ..seeds import mean_ci95

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
        d = fg.in_point(incast, p["point"])["duration_us"].to_numpy()
        stats = (d.mean(), np.percentile(d, 1), np.percentile(d, 99)) if len(d) else (np.nan,) * 3
        rows.append((fg.label(swept, [p[k] for k in swept]), len(d), *stats))
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
    fig, ax = fg.subplots(figsize=(6.4, 1.2 + 0.35 * len(t)))
    fg.point_bars(ax, t, "iterations", "p1", "p99", _us, "no iteration finished")
    log = fg.spans_decades(done["mean"])
    if log:
        ax.set_xscale("log")
    ax.set_xlim(right=done["p99"].max() * (3 if log else 1.25))
    ax.set_xlabel("iteration time (us): mean, whiskers from 1st to 99th percentile", fontsize=9)
    fg.titled(fig, title, "incast iteration time per point (finished iterations in brackets)")
    fg.save(fig, path)
    return True
