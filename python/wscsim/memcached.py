"""Summaries and plots of memcached runs (DIABLO section 4.2): latency percentiles per
case (scale, protocol, ...) and per hop class, the latency PMF (Figure 10) and the 95th to
100th percentile CDF (Figures 11-15). Each takes a Result or its requests table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

HOP_CLASSES = ("local", "same_array", "cross_array")


def _requests(res) -> pd.DataFrame:
    return res if isinstance(res, pd.DataFrame) else res.requests


def _keys(q: pd.DataFrame) -> list[str]:
    """The swept columns of a sweep's requests table (everything before `client`)."""
    cols = list(q.columns)
    return [c for c in cols[: cols.index("client")] if c != "point"]


def percentiles(res, by_hops: bool = False) -> pd.DataFrame:
    """p50, p99 and p99.9 latency (us), mean, and request counts per case (and hop class)."""
    q = _requests(res)
    keys = _keys(q) + (["hops_class"] if by_hops else [])
    done = q[q["latency_us"].notna()]
    rows = []
    for key, g in done.groupby(keys, observed=True) if keys else [((), done)]:
        lat = g["latency_us"].to_numpy()
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        row.update({"requests": len(g), "mean_us": lat.mean(), "p50_us": np.percentile(lat, 50), "p99_us": np.percentile(lat, 99), "p999_us": np.percentile(lat, 99.9)})
        rows.append(row)
    out = pd.DataFrame(rows)
    lost = q["latency_us"].isna().groupby([q[k] for k in keys], observed=True).sum().reset_index(name="lost") if keys else None
    if lost is not None and not out.empty:
        out = out.merge(lost, on=keys, how="left")
    return out


def plot_tail(res, path: Path, by: str | None = None) -> bool:
    """The 95th to 100th percentile CDF of request latency, one curve per case."""

    from .plots import _save, subplots

    q = _requests(res)
    q = q[q["latency_us"].notna()]
    if q.empty:
        return False
    keys = [by] if by else _keys(q)
    fig, ax = subplots(figsize=(6, 4))
    probs = np.linspace(0.95, 1.0, 501)
    for key, g in q.groupby(keys, observed=True) if keys else [("all", q)]:
        label = ", ".join(f"{k}={v}" for k, v in zip(keys, key if isinstance(key, tuple) else (key,))) if keys else "all"
        ax.plot(np.quantile(g["latency_us"].to_numpy(), probs), probs, label=label)
    ax.set_xscale("log")
    ax.set_xlabel("request latency (us)")
    ax.set_ylabel("CDF")
    ax.set_ylim(0.95, 1.0)
    ax.legend(fontsize=7, loc="lower right")
    _save(fig, path)
    return True


def plot_pmf(res, path: Path) -> bool:
    """Latency PMF per hop class (DIABLO Figure 10), on log-spaced bins."""

    from .plots import _save, subplots

    q = _requests(res)
    q = q[q["latency_us"].notna() & (q["latency_us"] > 0)]
    if q.empty:
        return False
    bins = np.logspace(np.log10(q["latency_us"].min()), np.log10(q["latency_us"].max() * 1.01), 60)
    fig, ax = subplots(figsize=(6, 4))
    for hc in HOP_CLASSES:
        g = q[q["hops_class"] == hc]["latency_us"]
        if len(g):
            counts, edges = np.histogram(g, bins=bins)
            ax.step(edges[:-1], counts / len(q), where="post", label=hc)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("request latency (us)")
    ax.set_ylabel("fraction of all requests")
    ax.legend(fontsize=8)
    _save(fig, path)
    return True
