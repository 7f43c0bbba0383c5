"""Plots fitted to what a run or sweep recorded: incast goodput per sender count, FCT
slowdown by flow-size bucket, the queue occupancy CDF, and for data-plane sweeps over
named cases the Flexplane figures: normalised FCT against load (Figure 5) and the
short/long request trade-off (Figure 6)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

SIZE_BUCKETS = [(0, 10e3, "<10KB"), (10e3, 100e3, "10-100KB"), (100e3, 1e6, "100KB-1MB"), (1e6, 10e6, "1-10MB"), (10e6, np.inf, ">10MB")]


def subplots(*grid, figsize):
    """A figure of its own, outside pyplot: drawing never changes the backend or the
    figures of a notebook that imported wscsim."""
    fig = Figure(figsize=figsize)
    return fig, fig.subplots(*grid)


def _save(fig, path: Path) -> None:
    fig.tight_layout()
    # Fixed metadata keeps the files the same from run to run.
    fig.savefig(path, dpi=110, metadata={"Software": None})


def slowdown_by_bucket(flows: pd.DataFrame) -> pd.DataFrame:
    done = flows[np.isfinite(flows["slowdown"]) & (flows["size_bytes"] > 0)]
    rows = []
    for lo, hi, label in SIZE_BUCKETS:
        b = done[(done["size_bytes"] >= lo) & (done["size_bytes"] < hi)]["slowdown"]
        if len(b):
            rows.append({"bucket": label, "flows": len(b), "mean": b.mean(), "p50": b.median(), "p99": b.quantile(0.99)})
    return pd.DataFrame(rows)


def plot_slowdown(flows: pd.DataFrame, path: Path) -> bool:
    t = slowdown_by_bucket(flows)
    if t.empty:
        return False
    fig, ax = subplots(figsize=(6, 3.5))
    x = np.arange(len(t))
    ax.bar(x - 0.2, t["p50"], 0.4, label="median")
    ax.bar(x + 0.2, t["p99"], 0.4, label="99th percentile")
    ax.set_xticks(x, t["bucket"])
    ax.set_yscale("log")
    ax.set_ylabel("FCT slowdown (FCT / ideal)")
    ax.set_xlabel("flow size")
    ax.legend(loc="best")
    _save(fig, path)
    return True


def plot_queue_cdf(queues: pd.DataFrame, path: Path, by: str | None = None) -> bool:
    if queues.empty:
        return False
    fig, ax = subplots(figsize=(6, 3.5))
    groups = queues.groupby(by) if by else [("all switch ports", queues)]
    probs = np.linspace(0, 1, 501)
    for key, q in groups:
        # 501 quantiles draw the same curve as every sample, at a fraction of the cost.
        v = np.quantile(q["queue_bytes"].to_numpy() / 1e3, probs)
        ax.plot(v, probs, label=str(key), drawstyle="steps-post")
    ax.set_xlabel("queue occupancy (KB), sampled on switch ports that carried traffic")
    ax.set_ylabel("CDF")
    ax.legend(fontsize=7, loc="lower right")
    _save(fig, path)
    return True


def plot_incast_iterations(incast: pd.DataFrame, path: Path) -> bool:
    if incast.empty:
        return False
    fig, ax = subplots(figsize=(6, 3.5))
    ax.bar(incast["iteration"], incast["goodput_mbps"])
    ax.set_xlabel("iteration")
    ax.set_ylabel("goodput (Mbit/s)")
    _save(fig, path)
    return True


def incast_goodput(incast: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Overall goodput per point: all blocks' bytes over all iterations' time."""
    g = incast.groupby(keys, sort=True).agg(bytes=("block_bytes", "sum"), us=("duration_us", "sum"))
    g["goodput_mbps"] = g["bytes"] * 8 / g["us"]
    return g.reset_index()


def plot_incast_sweep(incast: pd.DataFrame, swept: list[str], path: Path) -> bool:
    if incast.empty or "senders" not in swept:
        return False
    others = [k for k in swept if k != "senders"]
    g = incast_goodput(incast, swept)
    fig, ax = subplots(figsize=(6, 3.5))
    for key, sub in (g.groupby(others) if others else [("", g)]):
        label = ", ".join(f"{k}={v}" for k, v in zip(others, key if isinstance(key, tuple) else (key,))) if others else None
        ax.plot(sub["senders"], sub["goodput_mbps"], marker="o", label=label)
    ax.set_xlabel("senders")
    ax.set_ylabel("goodput (Mbit/s)")
    ax.set_ylim(bottom=0)
    if others:
        ax.legend(fontsize=8, loc="upper right")
    _save(fig, path)
    return True


def plot_fct_by_load(flows: pd.DataFrame, path: Path) -> bool:
    """Flexplane Figure 5: per case, small flows' mean and 99th-percentile slowdown and
    large flows' mean slowdown against load (needs swept `case` and `load` columns)."""
    from . import dataplane

    if not {"case", "load"} <= set(flows.columns):
        return False
    t = dataplane.fct_by_load(flows)
    if t.empty:
        return False
    panels = [("small_mean", "small flows (<100 KB): mean"), ("small_p99", "small flows: 99th percentile"), ("large_mean", "large flows (>10 MB): mean")]
    fig, axes = subplots(1, 3, figsize=(12, 3.6))
    for ax, (col, title) in zip(axes, panels):
        for case, g in t.groupby("case", sort=False):
            g = g.sort_values("load")
            ax.plot(g["load"], g[col], marker="o", label=str(case))
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("load")
        ax.set_yscale("log")
    axes[0].set_ylabel("normalised FCT (FCT / ideal)")
    axes[-1].legend(fontsize=8, loc="best")
    _save(fig, path)
    return True


def plot_priority_tradeoff(flows: pd.DataFrame, path: Path) -> bool:
    """Flexplane Figure 6: per case, the mean FCT of high-priority (DSCP > 0) requests
    against that of low-priority ones; down and left is better."""
    from . import dataplane

    if "case" not in flows.columns or "dscp" not in flows.columns or flows["dscp"].nunique() < 2:
        return False
    t = dataplane.priority_tradeoff(flows).dropna(subset=["high_mean_fct_us", "low_mean_fct_us"])
    if t.empty:
        return False
    fig, ax = subplots(figsize=(6, 4))
    for _, r in t.iterrows():
        ax.scatter(r["low_mean_fct_us"] / 1e3, r["high_mean_fct_us"], s=30)
        ax.annotate(str(r["case"]), (r["low_mean_fct_us"] / 1e3, r["high_mean_fct_us"]), fontsize=8, xytext=(4, 3), textcoords="offset points")
    ax.set_yscale("log")
    ax.set_xlabel("low-priority (long) requests: mean FCT (ms)")
    ax.set_ylabel("high-priority (short) requests: mean FCT (us)")
    _save(fig, path)
    return True


def _memcached_plots(requests: pd.DataFrame, folder: Path, made: list[str]) -> None:
    from . import memcached

    if requests is None or requests.empty:
        return
    if memcached.plot_tail(requests, folder / "latency_tail.png"):
        made.append("latency_tail.png")
    if memcached.plot_pmf(requests, folder / "latency_pmf.png"):
        made.append("latency_pmf.png")


def for_run(frames: dict, summary: dict, folder: Path) -> list[str]:
    made = []
    _memcached_plots(frames.get("requests"), folder, made)
    if plot_incast_iterations(frames.get("incast", pd.DataFrame()), folder / "incast_goodput.png"):
        made.append("incast_goodput.png")
    if "flows" in frames and plot_slowdown(frames["flows"], folder / "fct_slowdown.png"):
        made.append("fct_slowdown.png")
    if "queues" in frames and plot_queue_cdf(frames["queues"], folder / "queue_cdf.png"):
        made.append("queue_cdf.png")
    summary["plots"] = made
    return made


def for_sweep(tables: dict, summary: dict, swept: list[str], folder: Path) -> list[str]:
    made = []
    if plot_incast_sweep(tables.get("incast", pd.DataFrame()), swept, folder / "incast_goodput.png"):
        made.append("incast_goodput.png")
    if "flows" in tables and plot_slowdown(tables["flows"], folder / "fct_slowdown.png"):
        made.append("fct_slowdown.png")
    if "queues" in tables and plot_queue_cdf(tables["queues"], folder / "queue_cdf.png", by=swept[0] if len(swept) == 1 else None):
        made.append("queue_cdf.png")
    _memcached_plots(tables.get("requests"), folder, made)
    flows = tables.get("flows", pd.DataFrame())
    if "case" in swept and "load" in swept and plot_fct_by_load(flows, folder / "fct_by_load.png"):
        made.append("fct_by_load.png")
    elif swept == ["case"] and plot_priority_tradeoff(flows, folder / "priority_tradeoff.png"):
        made.append("priority_tradeoff.png")
    summary["plots"] = made
    return made
