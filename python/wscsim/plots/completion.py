"""Completion of workloads that end: the iterations of a collective (all-reduce or
all-to-all), per iteration or per sweep point, and a synchronised incast's last flow
against the number of senders (NDP's incast figure)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from . import figure as fg


def plot_collective(collective: pd.DataFrame, path: Path, title: str | None = None) -> bool:
    """A single run's collective: each iteration's time, and its slowest transfer."""
    done = collective.dropna(subset=["time_us"]) if not collective.empty else collective
    if done.empty:
        return False
    fig, ax = fg.subplots(figsize=(6.4, 3.9))
    x = done["iteration"].to_numpy()
    ax.bar(x, done["time_us"] / 1e3, color="C0", width=0.6, label="iteration (all hosts' steps)")
    ax.plot(x, done["slowest_transfer_us"] / 1e3, "o", color="C3", ms=4, label="its slowest transfer")
    ax.set_xlabel("iteration")
    ax.set_ylabel("time (ms)")
    ax.set_ylim(bottom=0)
    ax.set_xticks(x)
    fig.legend(fontsize=7, loc="outside lower center", ncols=2)
    fg.titled(fig, title, "collective: time of each iteration")
    fg.save(fig, path)
    return True


def plot_collective_sweep(collective: pd.DataFrame, points: pd.DataFrame, swept: list[str], path: Path,
                          title: str | None = None) -> bool:
    """A sweep's collectives: per point, the mean iteration time with whiskers from the
    shortest to the longest, and the slowest transfer."""
    if collective.empty:
        return False
    rows = []
    for _, p in points.sort_values("point").iterrows():
        t = fg.in_point(collective, p["point"])["time_us"].dropna().to_numpy() / 1e3
        slow = fg.in_point(collective, p["point"])["slowest_transfer_us"].max() / 1e3
        rows.append((fg.label(swept, [p[k] for k in swept]), len(t), *(
            (t.mean(), t.min(), t.max()) if len(t) else (np.nan,) * 3), slow))
    t = pd.DataFrame(rows, columns=["label", "iterations", "mean", "lo", "hi", "slowest"])
    done = t[t["iterations"] > 0]
    if done.empty:
        return False
    fig, ax = fg.subplots(figsize=(6.4, 1.7 + 0.4 * len(t)))
    yd = fg.point_bars(ax, t, "iterations", "lo", "hi", lambda ms: f"{ms:.3g} ms", "no iteration finished",
                       label="iteration: mean, whiskers from shortest to longest")
    ax.plot(done["slowest"], yd, "o", color="C3", ms=4, label="slowest transfer")
    ax.set_xlim(0, done["hi"].max() * 1.3)
    ax.set_xlabel("time (ms)")
    fig.legend(fontsize=7, loc="outside lower center", ncols=2)
    fg.titled(fig, title, "collective iteration time per point (finished iterations in brackets)")
    fg.save(fig, path)
    return True


def last_completions(flows: pd.DataFrame, points: pd.DataFrame, swept: list[str]) -> pd.DataFrame:
    """Per sweep point: its swept values, flows, the last flow's completion after the first
    start (us; NaN if a flow did not finish) and the bytes they carried."""
    rows = []
    for _, p in points.sort_values("point").iterrows():
        f = fg.in_point(flows, p["point"])
        end = (f["start_us"] + f["fct_us"]).max() - f["start_us"].min() if f["fct_us"].notna().all() else np.nan
        rows.append({**{k: p[k] for k in swept}, "flows": len(f), "last_us": end, "bytes": f["size_bytes"].sum()})
    return pd.DataFrame(rows)


def plot_incast_completion(flows: pd.DataFrame, points: pd.DataFrame, swept: list[str], path: Path,
                           title: str | None = None) -> bool:
    """For sweeps of a synchronised incast (`workload.incast.senders`): the last flow's
    completion against the number of senders, a line per value of the other swept
    columns; a log axis when the times span decades."""
    if flows.empty or "senders" not in swept or "point" not in flows.columns:
        return False
    others = [k for k in swept if k != "senders"]
    c = last_completions(flows, points, swept)
    fig, ax = fg.subplots(figsize=(6.4, 4.0))
    groups = c.groupby(others, sort=False) if others else [("", c)]
    for name, line in groups:
        line = line.sort_values("senders")
        label = fg.label(others, list(name) if isinstance(name, tuple) else [name]) if others else None
        ax.plot(line["senders"], line["last_us"] / 1e3, marker="o", ms=4, label=label)
    if fg.spans_decades(c["last_us"].dropna()):
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
    ax.set_xlabel("senders")
    ax.set_ylabel("last flow's completion (ms)")
    ax.grid(True, which="major", lw=0.3, color="0.85")
    if others:
        ax.legend(fontsize=7, loc="best")
    fg.titled(fig, title, "incast: the last flow's completion against senders",
              "from the first flow's start to the last flow's last byte; a point with a flow unfinished is left out")
    fg.save(fig, path)
    return True
