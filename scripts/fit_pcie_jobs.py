#!/usr/bin/env python3
"""Fits the compute of the PCIe paper's sort, grep and Hadoop/sort (pcie_sort, pcie_grep,
pcie_hadoop) to its Tables 2, 3 and 4, and prints the tables the fitted scenarios give beside
the paper's.

Everything but the compute comes from the sources (storage bandwidths, link rates, power);
the compute phases' cycles per byte and parallel fraction are not in the paper. The fit:

1. run every point of the scenario with (almost) no compute: the simulated time of reading,
   shuffling and writing, and the point's power (constant: every part at its maximum);
2. a compute phase adds cycles x (1 - f + f / cores) / clock to a node's time, and phases do
   not overlap, so each candidate's job time is that time plus its compute;
3. efficiency gain over the baseline point is E_base / E - 1 with E = power x time (the same
   work in every point); choose the candidate that minimises the squared error of
   log(1 + gain) against the paper, over a grid.

Hadoop/sort's maps, shuffle and reduces overlap, so its fit runs the simulator for each
candidate instead (fit_hadoop says how).

    python3 scripts/fit_pcie_jobs.py sort grep  # a few minutes on 2 cores
    python3 scripts/fit_pcie_jobs.py hadoop     # about 10 minutes

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


# Table 4: Hadoop/sort's seconds by (network, block MiB, split MiB).
TABLE_4 = {
    ("1GbE", 256, 256): 114.8, ("1GbE", 256, 550): 101.2, ("1GbE", 512, 550): 101.2,
    ("PCIe", 256, 256): 105.2, ("PCIe", 256, 550): 84.2, ("PCIe", 512, 550): 87.0,
}


def hadoop(task_startup_s: float, map_cpb: float, reduce_cpb: float, one_node: bool = False) -> dict:
    """pcie_hadoop with the given fit (without its sweep); `one_node`: the job on node 0
    alone, with no network to cross."""
    from wscsim.scenario import load

    sc = copy.deepcopy(load("pcie_hadoop"))
    sc["workload"].update(task_startup=f"{task_startup_s}s", map_cycles_per_byte=map_cpb, reduce_cycles_per_byte=reduce_cpb)
    if one_node:
        sc["workload"]["nodes"] = [0]
        sc.pop("sweep")
    return sc


def hadoop_seconds(sc: dict, block: int, split: int) -> float:
    import wscsim

    sc = copy.deepcopy(sc)
    sc["workload"].update(block=f"{block}MiB", split=f"{split}MiB")
    return wscsim.run(sc, plots=False).headline["job_seconds"]


def fit_hadoop() -> None:
    """Three figures, fitted in two steps:

    1. PCIe's shuffle hides under the maps (its segments cross in milliseconds), so the PCIe
       row is about the job on one node with no network at all, which runs in milliseconds:
       for each reduce cost on a grid, the task start-up (on a grid) and the map cost (by
       bisection) that bring the one-node job to the PCIe row's 256/256 and 256/550;
    2. over 1GbE the shuffle is the bottleneck and hides the maps instead, so the 1GbE row
       tells the map cost from the reduce cost: run the three-node 1GbE job (about 12 s a
       point) for each candidate and keep the one closest to both rows.
    """
    cands = []
    for reduce_cpb in (0, 10, 20, 30):
        best = None
        for startup in _grid(3, 5, 0.5):
            lo, hi = 1.0, 80.0
            for _ in range(12):
                m = (lo + hi) / 2
                sc = hadoop(startup, m, reduce_cpb, one_node=True)
                t = [hadoop_seconds(sc, 256, s) for s in (256, 550)]
                lo, hi = (lo, m) if sum(t) > TABLE_4[("PCIe", 256, 256)] + TABLE_4[("PCIe", 256, 550)] else (m, hi)
            err = sum(math.log(a / TABLE_4[("PCIe", 256, s)]) ** 2 for a, s in zip(t, (256, 550)))
            if best is None or err < best[0]:
                best = (err, startup, round(m), reduce_cpb)
        cands.append(best[1:])
    scored = []
    for startup, m, r in cands:
        sc = hadoop(startup, m, r)
        sc.pop("sweep")
        err = 0.0
        for s in (256, 550):
            pcie = hadoop_seconds(hadoop(startup, m, r, one_node=True), 256, s)
            gbe = hadoop_seconds(sc, 256, s)
            err += math.log(pcie / TABLE_4[("PCIe", 256, s)]) ** 2 + math.log(gbe / TABLE_4[("1GbE", 256, s)]) ** 2
        print(f"  candidate task_startup {startup}s, map {m}, reduce {r} cycles/B: error {err:.4f}", flush=True)
        scored.append((err, startup, m, r))
    _, startup, m, r = min(scored)
    print(f"hadoop: task_startup = {startup}s, map_cycles_per_byte = {m}, reduce_cycles_per_byte = {r}")
    import wscsim

    pts = wscsim.run(hadoop(startup, m, r), plots=False).tables["points"]
    mb = 1 << 20
    got = {(p.case, int(p.block) // mb, int(p.split) // mb): p.headline_job_seconds for p in pts.itertuples()}
    for k, paper in TABLE_4.items():
        print(f"  {' / '.join(map(str, k)):20s} wscsim {got[k]:6.1f} s   paper {paper:6.1f} s   {100 * (got[k] / paper - 1):+5.1f}%")


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
    p.add_argument("which", nargs="*", help="sort, grep, hadoop (default: sort and grep)")
    which = p.parse_args().which or ["sort", "grep"]
    if not set(which) <= {"sort", "grep", "hadoop"}:
        p.error(f"given {which}; allowed: sort, grep, hadoop")
    for w in which:
        {"sort": fit_sort, "grep": fit_grep, "hadoop": fit_hadoop}[w]()
    return 0


if __name__ == "__main__":
    sys.exit(main())
