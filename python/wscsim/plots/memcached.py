"""memcached figures (DIABLO Figures 9 and 10): the latency tail per case on a logit axis,
and the latency PMF per hop class, a panel per case."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import memcached as mc
from . import figure as fg


def case_label(keys: list[str], key) -> str:
    return fg.label(keys, key if isinstance(key, tuple) else (key,)) if keys else "all requests"


def plot_tail(res, path: Path, by: str | None = None, title: str | None = None) -> bool:
    """The 95th to 100th percentile CDF of request latency, one curve per case, on a logit
    axis: the same figure as DIABLO's, with the last tenths of a percent (where timeouts
    put requests hundreds of times slower) spread out instead of pressed against 1."""

    q = mc.requests_table(res)
    keys = [by] if by else mc.case_keys(q)
    cases = [(key, a["latency_us"]) for key, a in mc.cases(q, keys, ["latency_us"])]
    counts = [int((~np.isnan(lat)).sum()) for _, lat in cases]
    if not any(counts):
        return False
    fig, ax = fg.subplots(figsize=(6.4, 4.2))
    # The last percentile drawn: the one the smallest case's samples resolve.
    top = 1 - 1 / (2 * min(n for n in counts if n))
    # Evenly spaced percentiles, and more towards the top, where the logit axis stretches.
    probs = np.unique(np.concatenate([np.linspace(0.95, 1.0, 2001), 1 - np.logspace(np.log10(0.05), np.log10(1 - top), 400)]))
    for (key, lat), n in zip(cases, counts):
        if n:
            label = case_label(keys, key) if keys else "all"
            ax.plot(mc.upper_quantiles(lat, probs), probs, label=f"{label} ({n:,})")
    ax.set_xscale("log")
    ax.set_yscale("logit", one_half="1/2")
    ax.set_ylim(0.95, top)
    ax.set_xlabel("request latency (us)")
    ax.set_ylabel("fraction of requests at or below (CDF)")
    ax.grid(True, which="major", lw=0.3, color="0.85")
    ax.legend(fontsize=7, loc="lower right", title="case (requests)", title_fontsize=7)
    fg.titled(fig, title, "memcached request latency, 95th to 100th percentile")
    fg.save(fig, path)
    return True


def plot_pmf(res, path: Path, title: str | None = None) -> bool:
    """Latency PMF per hop class (DIABLO Figure 10), on log-spaced bins: one panel per case
    of a sweep (cases are never pooled), each normalised to that case's requests."""

    q = mc.requests_table(res)
    keys = mc.case_keys(q)
    cases, ranges = [], []
    for key, a in mc.cases(q, keys, ["hops_class", "latency_us"]):
        if (r := mc.positive_range(a["latency_us"])) is not None:
            cases.append((key, a))
            ranges.append(r)
    if not cases:
        return False
    shown = cases[: 2 * fg.MAX_PANELS]
    lo, hi = min(r[0] for r in ranges), max(r[1] for r in ranges)
    bins = np.logspace(np.log10(lo), np.log10(hi * 1.01), 60)
    fig, axes = fg.panels(len(shown), panel=(4.2, 3.0) if len(shown) > 1 else (6.4, 4.0), sharex=True, sharey=True)
    for ax, (key, a) in zip(axes, shown):
        per_class = mc.class_histograms(a["hops_class"], a["latency_us"], bins)
        total = sum(n for n, _ in per_class)
        for hc, (n, counts) in zip(mc.HOP_CLASSES, per_class):
            if n:
                ax.step(bins[:-1], counts / total, where="post", label=f"{hc} ({n:,})")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(case_label(keys, key) if keys else "", fontsize=8)
        ax.legend(fontsize=6, loc="upper right")
    fig.supxlabel("request latency (us)", fontsize=9)
    fig.supylabel("fraction of the case's requests", fontsize=9)
    more = f" (first {len(shown)} of {len(cases)} cases)" if len(shown) < len(cases) else ""
    fg.titled(fig, title, f"memcached request latency PMF by hop class (requests in brackets){more}")
    fg.save(fig, path)
    return True
