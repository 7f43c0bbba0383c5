"""Summaries of memcached runs (DIABLO section 4.2): latency percentiles per case (scale,
protocol, ...) and per hop class, and what the figures draw from (plots/memcached.py):
the upper quantiles and the per-class histograms, taken a slice at a time. Each takes a
Result or its requests table."""

from __future__ import annotations

import numpy as np
import pandas as pd

HOP_CLASSES = ("local", "same_array", "cross_array")


def requests_table(res) -> pd.DataFrame:
    return res if isinstance(res, pd.DataFrame) else res.requests


def case_keys(q: pd.DataFrame) -> list[str]:
    """The swept columns of a sweep's requests table (everything before `client`)."""
    cols = list(q.columns)
    return [c for c in cols[: cols.index("client")] if c != "point"]


def percentiles(res, by_hops: bool = False) -> pd.DataFrame:
    """p50, p99 and p99.9 latency (us), mean, and request counts per case (and hop class);
    with cases, `lost` counts the requests never answered. A case with no answered request
    has no row."""
    q = requests_table(res)
    keys = case_keys(q) + (["hops_class"] if by_hops else [])
    rows = []
    for key, a in cases(q, keys, ["latency_us"], sort=True):
        lat = a["latency_us"]
        done = lat[~np.isnan(lat)]  # one copy per case, partitioned in place below
        if not len(done):
            continue
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,))) if keys else {}
        row.update({"requests": len(done), "mean_us": done.mean()})
        p50, p99, p999 = np.percentile(done, [50, 99, 99.9], overwrite_input=True)
        row.update({"p50_us": p50, "p99_us": p99, "p999_us": p999})
        if keys:
            row["lost"] = len(lat) - len(done)
        rows.append(row)
    return pd.DataFrame(rows)


def cases(q: pd.DataFrame, keys: list[str], columns: list[str], sort: bool = False):
    """(case, {column: numpy array}) per case of a requests table (in the order cases
    first appear, or sorted), `hops_class` as its codes in HOP_CLASSES. A single run's
    arrays are the table's own, not copies (a full-length run's requests table is
    gigabytes); a sweep's are copied per case."""

    def arrays(g: pd.DataFrame) -> dict:
        return {c: pd.Categorical(g[c], categories=HOP_CLASSES).codes if c == "hops_class" else g[c].to_numpy() for c in columns}

    if not keys:
        yield "all requests", arrays(q)
        return
    for key, g in q[keys + columns].groupby(keys, observed=True, sort=sort):
        yield key, arrays(g)


def _slices(step: int, *arrays: np.ndarray):
    """The arrays (of one length) a slice of `step` rows at a time, side by side: a
    full-length run's columns are hundreds of megabytes, and a temporary the size of a
    whole column is what these passes avoid."""
    for start in range(0, len(arrays[0]), step):
        yield tuple(a[start : start + step] for a in arrays)


def upper_quantiles(values: np.ndarray, probs: np.ndarray, step: int = 1 << 20) -> np.ndarray:
    """np.quantile's (linear) quantiles at `probs` of the values that are not NaN, for
    probabilities near the top (the tail plot's 0.95 to 1), without copying `values`
    whole (a full-length run's latencies are hundreds of megabytes): a pass over slices
    counts values below bounds taken from a sample, the largest bound with no more values
    below it than the lowest rank needed is kept, and a second pass keeps only the values
    at or above it, which are sorted."""
    stride = max(1, len(values) // 100_000)
    sample = values[::stride]
    sample = np.unique(sample[~np.isnan(sample)])
    cum = np.zeros(len(sample) + 1, dtype=np.int64)
    for (x,) in _slices(step, values):
        x = x[~np.isnan(x)]
        # Index k counts the values below sample[k]; the last, every value.
        cum += np.bincount(np.searchsorted(sample, x, side="right"), minlength=len(sample) + 1)
    cum = np.cumsum(cum)
    n = int(cum[-1])
    if n == 0:
        return np.full(len(probs), np.nan)
    ranks = (n - 1) * np.asarray(probs, dtype=float)
    k = int(np.searchsorted(cum[:-1], np.floor(ranks.min()), side="right")) - 1
    bound, below = (sample[k], int(cum[k])) if k >= 0 else (-np.inf, 0)
    kept = np.sort(np.concatenate([x[x >= bound] for (x,) in _slices(step, values)]))
    lo = np.floor(ranks).astype(np.int64)
    hi = np.minimum(lo + 1, n - 1)
    a, b = kept[lo - below], kept[hi - below]
    return a + (ranks - lo) * (b - a)


def class_histograms(codes: np.ndarray, lat: np.ndarray, bins: np.ndarray, step: int = 1 << 20) -> list:
    """Per hop class (by category code): its number of requests with a positive latency
    and np.histogram's counts of their latencies over `bins` (increasing; the last bin
    includes its right edge; NaN, the latency of a lost request, is in none), taken a
    slice at a time: np.histogram sorts a copy of its data for uneven bins, which for a
    full-length run's tens of millions of latencies is gigabytes."""
    nbins = len(bins) - 1
    counts = np.zeros((len(HOP_CLASSES), nbins), dtype=np.int64)
    sizes = np.zeros(len(HOP_CLASSES), dtype=np.int64)
    for x, c in _slices(step, lat, codes):
        sizes += np.bincount(c[x > 0], minlength=len(HOP_CLASSES))
        i = np.searchsorted(bins, x, side="right") - 1
        i[x == bins[-1]] = nbins - 1
        inside = (i >= 0) & (i < nbins)
        cell = c[inside].astype(np.int64) * nbins + i[inside]
        counts += np.bincount(cell, minlength=len(HOP_CLASSES) * nbins).reshape(len(HOP_CLASSES), nbins)
    return [(int(sizes[k]), counts[k]) for k in range(len(HOP_CLASSES))]


def positive_range(lat: np.ndarray, step: int = 1 << 20) -> tuple[float, float] | None:
    """The least and greatest positive latency (NaN is neither), a slice at a time."""
    lo, hi = np.inf, -np.inf
    for (x,) in _slices(step, lat):
        x = x[x > 0]
        if len(x):
            lo, hi = min(lo, x.min()), max(hi, x.max())
    return (lo, hi) if lo <= hi else None
