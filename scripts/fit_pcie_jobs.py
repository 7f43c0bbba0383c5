#!/usr/bin/env python3
"""Fits the compute of the PCIe paper's sort and grep (pcie_sort, pcie_grep) to its Tables 2
and 3, and prints the tables the fitted scenarios give beside the paper's.

Everything but the compute comes from the sources (storage bandwidths, link rates, power);
the compute phases' cycles per byte and parallel fraction are not in the paper. The fit:

1. run every point of the scenario with (almost) no compute: the simulated time of reading,
   shuffling and writing, and the point's power (constant: every part at its maximum);
2. a compute phase adds cycles x (1 - f + f / cores) / clock to a node's time, and phases do
   not overlap, so each candidate's job time is that time plus its compute;
3. efficiency gain over the baseline point is E_base / E - 1 with E = power x time (the same
   work in every point); choose the candidate that minimises the squared error of
   log(1 + gain) against the paper, over a grid.

    python3 scripts/fit_pcie_jobs.py            # both; a few minutes on 2 cores
    python3 scripts/fit_pcie_jobs.py sort       # or one

A tool for developers, not a test. Its output is recorded in docs/energy.md.
"""

from __future__ import annotations

import argparse
import copy
import math
import sys

# Table 2: sort's efficiency gain over 1GbE / Fusion-IO / 1 core, by (network, storage, cores).
TABLE_2 = {
    ("1GbE", "fusion_io"): (0, -25, -51), ("1GbE", "ramfs"): (12, 11, -14),
    ("10GbE", "fusion_io"): (4, -5, -31), ("10GbE", "ramfs"): (16, 46, 33),
    ("PCIe", "fusion_io"): (83, 45, -9), ("PCIe", "ramfs"): (105, 124, 78),
}
# Table 3: grep's gain over 1GbE / 1 core of the same variant, by (variant, network, cores).
TABLE_3 = {
    "LoN LoC": {("1gbe", 1): 0, ("1gbe", 2): 19, ("pcie_gen2", 1): 31, ("pcie_gen2", 2): 66, ("pcie_gen2", 4): 66},
    "LoN HiC": {("1gbe", 1): 0, ("1gbe", 2): 45, ("pcie_gen2", 1): 14, ("pcie_gen2", 2): 60, ("pcie_gen2", 4): 99},
    "HiN LoC": {("1gbe", 1): 0, ("1gbe", 2): -4, ("pcie_gen2", 1): 77, ("pcie_gen2", 2): 90, ("pcie_gen2", 4): 55},
    "HiN HiC": {("1gbe", 1): 0, ("1gbe", 2): 39, ("pcie_gen2", 1): 16, ("pcie_gen2", 2): 62, ("pcie_gen2", 4): 98},
}
CORES = (1, 2, 4)
TINY = 1e-6  # cycles per byte: a compute phase that takes no time to speak of


def compute_phases(sc: dict):
    """Every compute phase of the scenario, its cases' included."""
    lists = [sc["workload"]["phases"]] + [c["workload.phases"] for c in sc.get("sweep", {}).get("cases", []) if "workload.phases" in c]
    return [p for phases in lists for p in phases if p["kind"] == "compute"]


def without_compute(name: str) -> tuple[dict, float, float]:
    """The scenario with no compute to speak of; the compute bytes per node and clock (Hz)."""
    from wscsim.scenario import load

    sc = copy.deepcopy(load(name))
    phases = compute_phases(sc)
    for p in phases:
        p["cycles_per_byte"] = TINY
    return sc, float(_bytes(phases[0]["bytes"])), sc["host"]["clock_ghz"] * 1e9


def _bytes(text: str) -> int:
    units = {"KB": 1e3, "MB": 1e6, "GB": 1e9, "B": 1}
    for u, m in units.items():
        if text.endswith(u):
            return int(float(text[: -len(u)]) * m)
    raise ValueError(text)


def measured(sc: dict):
    """The sweep's points table: each point's keys, job seconds and mean power."""
    import wscsim

    return wscsim.run(sc, plots=False).tables["points"]


def gain(base_e: float, e: float) -> float:
    return 100 * (base_e / e - 1)


def fit_sort() -> None:
    sc, data_bytes, clock = without_compute("pcie_sort")
    pts = measured(sc)
    rows = {(r.case, r.storage, int(r.cores)): (r.headline_job_seconds, r.headline_mean_power_w) for r in pts.itertuples()}
    keys = [(n, s, c) for (n, s) in TABLE_2 for c in CORES]
    paper = {(n, s, c): TABLE_2[(n, s)][CORES.index(c)] for (n, s, c) in keys}
    base = ("1GbE", "fusion_io", 1)

    def table(cpb, f):
        e = {}
        for k in keys:
            t, w = rows[k]
            t += data_bytes * cpb * (1 - f + f / k[2]) / clock
            e[k] = t * w
        return {k: gain(e[base], e[k]) for k in keys}

    best = min(
        ((cpb, f) for cpb in _grid(1, 60, 0.5) for f in _grid(0, 1, 0.05)),
        key=lambda p: _error(table(*p), paper),
    )
    print(f"sort: cycles_per_byte = {best[0]:g}, parallel_fraction = {best[1]:g}")
    _print(table(*best), paper, keys)


def fit_grep() -> None:
    sc, data_bytes, clock = without_compute("pcie_grep")
    pts = measured(sc)
    rows = {(r.case, r.technology, int(r.cores)): (r.headline_job_seconds, r.headline_mean_power_w) for r in pts.itertuples()}
    keys = [(v, n, c) for v, cells in TABLE_3.items() for (n, c) in cells]
    paper = {(v, n, c): TABLE_3[v][(n, c)] for (v, n, c) in keys}

    def table(low, high, f):
        e = {}
        for v, n, c in keys + [(v, "1gbe", 1) for v in TABLE_3]:
            t, w = rows[(v, n, c)]
            cpb = low if v.endswith("LoC") else high
            e[(v, n, c)] = (t + data_bytes * cpb * (1 - f + f / c) / clock) * w
        return {(v, n, c): gain(e[(v, "1gbe", 1)], e[(v, n, c)]) for (v, n, c) in keys}

    coarse = min(
        ((lo, hi, f) for lo in _grid(2, 80, 2) for hi in _grid(20, 800, 20) for f in _grid(0, 1, 0.05)),
        key=lambda p: _error(table(*p), paper),
    )
    best = min(
        ((lo, hi, coarse[2]) for lo in _grid(max(1, coarse[0] - 2), coarse[0] + 2, 0.5) for hi in _grid(max(5, coarse[1] - 20), coarse[1] + 20, 2)),
        key=lambda p: _error(table(*p), paper),
    )
    print(f"grep: LoC cycles_per_byte = {best[0]:g}, HiC cycles_per_byte = {best[1]:g}, parallel_fraction = {best[2]:g}")
    _print(table(*best), paper, keys)


def _grid(lo: float, hi: float, step: float):
    n = int(round((hi - lo) / step))
    return [round(lo + i * step, 6) for i in range(n + 1)]


def _error(model: dict, paper: dict) -> float:
    return sum((math.log1p(model[k] / 100) - math.log1p(paper[k] / 100)) ** 2 for k in paper)


def _print(model: dict, paper: dict, keys: list) -> None:
    for k in keys:
        sign = "" if (model[k] >= 0) == (paper[k] >= 0) or paper[k] == 0 else "  sign differs"
        print(f"  {' / '.join(map(str, k)):28s} wscsim {model[k]:6.0f}%   paper {paper[k]:4d}%{sign}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("which", nargs="*", help="sort, grep (default: both)")
    which = p.parse_args().which or ["sort", "grep"]
    if not set(which) <= {"sort", "grep"}:
        p.error(f"given {which}; allowed: sort, grep")
    for w in which:
        {"sort": fit_sort, "grep": fit_grep}[w]()
    return 0


if __name__ == "__main__":
    sys.exit(main())
