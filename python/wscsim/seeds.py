"""Several seeds per point: `seeds = N` (a scenario's top-level key, `--seeds N`, `seeds=`)
runs every point with the seeds seed, seed + 1, ..., seed + N - 1 (seed being the
scenario's, 1 by default), as one more swept axis whose column is `seed`; and each headline
figure then gets the mean over the seeds with a 95% confidence interval (Student's t).

The t quantiles are a table for 1 to 30 degrees of freedom (to four decimals) and beyond it
the Cornish-Fisher expansion of t in the normal quantile (within 0.0003 of the exact value
from 30 on); scipy is not needed.
"""

from __future__ import annotations

import math

from .errors import ScenarioError

MAX_SEEDS = 1000
# The column (and swept path) of the seed axis.
SEED = "seed"

# t such that P(T <= t) = 0.975 with df degrees of freedom, df = 1..30.
_T975 = (12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
         2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
         2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423)
_Z975 = 1.959963984540054


def t975(df: int) -> float:
    """The 97.5% quantile of Student's t with `df` degrees of freedom."""
    if df < 1:
        raise ValueError("at least one degree of freedom")
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def mean_ci95(values: list[float]) -> tuple[float, float | None]:
    """The mean of `values` and the half-width of its 95% confidence interval,
    t(0.975, n - 1) * s / sqrt(n) with s the sample standard deviation (None for one
    value, or when a value is not finite)."""
    n = len(values)
    mean = math.fsum(values) / n
    if n < 2 or not all(math.isfinite(v) for v in values):
        return mean, None
    s = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    return mean, t975(n - 1) * s / math.sqrt(n)


def checked(value: object, field: str = "seeds") -> int:
    """`seeds` as an integer from 1 to MAX_SEEDS, or a one-line error naming `field`."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SEEDS:
        raise ScenarioError(field, f"given {value!r}; allowed: an integer from 1 to {MAX_SEEDS} (runs per point, seeds seed to seed + N - 1)")
    return value


def seed_axis(sc: dict, seeds: object, swept_paths: list[str]) -> tuple[str, list[int]] | None:
    """The seed axis for `seeds` runs per point (None for one), from the scenario's seed."""
    n = checked(seeds)
    if n == 1:
        return None
    if SEED in swept_paths:
        raise ScenarioError("seeds", f"given {n} with a sweep over seed; allowed: one of them")
    first = sc.get("seed", 1)
    if isinstance(first, bool) or not isinstance(first, int) or first < 0:
        raise ScenarioError("seed", f"given {first!r}; allowed: a non-negative integer (seeds counts up from it)")
    return SEED, list(range(first, first + n))


def headline_means(rows: list[dict], keys: list[str]) -> list[dict]:
    """Per combination of the other swept values (`keys`, in the order the points come),
    every numeric headline figure's mean over its seeds and its 95% interval's half-width:
    [{**values, "seeds": n, "mean": {...}, "ci95": {...}}]."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault(tuple(row[k] for k in keys), []).append(row)
    out = []
    for values, members in groups.items():
        means, halves = {}, {}
        for name in members[0]["headline"]:
            figures = [m["headline"].get(name) for m in members]
            if all(isinstance(f, (int, float)) and not isinstance(f, bool) for f in figures):
                means[name], halves[name] = mean_ci95([float(f) for f in figures])
        out.append({**dict(zip(keys, values)), "seeds": len(members), "mean": means, "ci95": halves})
    return out
