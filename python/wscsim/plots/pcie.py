"""The PCIe paper's plots: where a run's joules went, by component (CPU, memory, storage,
NICs, switch ports, chassis), from the `energy` table (a bar per component, or in a sweep
a stacked bar per point); a job sweep's energy-efficiency gain and speedup; and a DMA
sweep's sustained rate and transfer time per point."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from . import figure as fg

# Components in the order the native core lists them, with a fixed colour each.
COMPONENTS = ["cpu", "memory", "storage", "nic", "chassis", "switch_ports", "switch_chassis"]
COLOURS = dict(zip(COMPONENTS, ["#4c72b0", "#55a868", "#c44e52", "#8172b2", "#937860", "#dd8452", "#64b5cd"]))


def _joules(unit_j: float) -> tuple[float, str]:
    """A scale and unit that keep the axis readable (uJ for a microsecond run, kJ for an hour)."""
    for scale, unit in ((1e3, "kJ"), (1.0, "J"), (1e-3, "mJ"), (1e-6, "uJ")):
        if unit_j >= scale:
            return scale, unit
    return 1e-9, "nJ"


def _sweep_size(points: int) -> tuple[float, float]:
    """A figure wide enough for a bar per point, and tall enough for slanted labels."""
    return min(11.0, max(4.5, 0.45 * points + 3.0)), 4.4


def _point_ticks(ax, labels: list[str]) -> None:
    slanted = len(labels) > 3
    ax.set_xticks(range(len(labels)), labels, rotation=40 if slanted else 0, ha="right" if slanted else "center", rotation_mode="anchor", fontsize=6.5)


def by_component(energy: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Joules per component (columns, in COMPONENTS order) for each group of `keys`
    (one row; a single run has no keys)."""
    e = energy.assign(component=energy["component"].astype(str))
    if keys:
        t = e.pivot_table(index=keys, columns="component", values="joules", aggfunc="sum", sort=False, observed=True)
    else:
        t = e.groupby("component", observed=True)["joules"].sum().to_frame().T
    present = [c for c in COMPONENTS if c in t.columns and t[c].sum() > 0]
    return t[present].fillna(0.0)


def plot_energy(energy: pd.DataFrame | None, path: Path, title: str | None = None, swept: list[str] | None = None, note: str | None = None,
                points: pd.DataFrame | None = None) -> bool:
    """Energy by component; a stacked bar per sweep point when `swept` names the swept keys,
    with each point's energy per byte delivered (from the `points` table) on a second axis:
    a run's joules grow with its length (an incast point that waits out 200 ms timeouts
    uses more), what it cost to deliver each byte is the efficiency."""
    if energy is None or energy.empty or energy["joules"].sum() <= 0:
        return False
    keys = [k for k in (swept or []) if k in energy.columns]
    t = by_component(energy, keys)
    scale, unit = _joules(float(t.sum(axis=1).max()))
    per_byte = None
    if keys:
        labels = [fg.label(keys, k if isinstance(k, tuple) else (k,)) for k in t.index]
        per_byte = _per_byte(points, keys, t.index)
        width, height = _sweep_size(len(labels))
        fig, ax = fg.subplots(figsize=(width + (1.8 if per_byte is not None else 0.0), height))
        bottom = np.zeros(len(t))
        for c in t.columns:
            ax.bar(range(len(t)), t[c] / scale, bottom=bottom, color=COLOURS[c], label=c, width=0.7)
            bottom += t[c].to_numpy() / scale
        _point_ticks(ax, labels)
        if per_byte is None:
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
        else:  # beside the right-hand axis and its label, which constrained layout keeps clear
            fig.legend(handles=ax.get_legend_handles_labels()[0] + _per_byte_markers(ax, per_byte), fontsize=7,
                       loc="outside right center", frameon=False)
    else:
        row = t.iloc[0]
        fig, ax = fg.subplots(figsize=(4.8, 3.2))
        ax.bar(range(len(row)), row / scale, color=[COLOURS[c] for c in row.index], width=0.7)
        ax.set_xticks(range(len(row)), list(row.index), fontsize=7)
        for i, v in enumerate(row):
            ax.annotate(f"{v / scale:.3g}", (i, v / scale), ha="center", va="bottom", fontsize=7)
    ax.set_ylabel(f"energy ({unit})")
    ax.grid(axis="y", alpha=0.3)
    fg.titled(fig, title, "energy by component" + (", and per byte delivered" if per_byte is not None else ""), note)
    fg.save(fig, path)
    return True


def _per_byte(points: pd.DataFrame | None, keys: list[str], index) -> np.ndarray | None:
    """Each point's energy per byte delivered, nJ, in the order of `index` (the swept
    values); None if the points table lacks it or no point delivered a byte."""
    column = "headline_energy_per_byte_nj"
    if points is None or column not in points.columns or not set(keys) <= set(points.columns):
        return None
    nj = points.groupby(keys, sort=False)[column].mean().reindex(index).to_numpy(dtype=float)
    return nj if np.isfinite(nj).any() else None


def _per_byte_markers(ax, nj: np.ndarray) -> list:
    """Energy per byte delivered as markers on a right-hand axis; returns their legend handle."""
    scale, unit = next(((d, u) for d, u in ((1e6, "mJ"), (1e3, "uJ")) if np.nanmax(nj) >= d), (1.0, "nJ"))
    right = ax.twinx()
    line = right.plot(range(len(nj)), nj / scale, ls="none", marker="o", ms=5, mfc="white", mec="black", mew=1.2,
                      label="energy per byte delivered (right axis)", zorder=4)
    right.set_ylabel(f"energy per byte delivered ({unit})")
    finite = nj[np.isfinite(nj) & (nj > 0)]
    if len(finite) > 1 and finite.max() >= fg.DECADES_RATIO * finite.min():
        right.set_yscale("log")
    else:
        right.set_ylim(bottom=0)
    return line


def _same_work_baselines(p: pd.DataFrame, summaries: list[dict]) -> list[int]:
    """For each point (rows of `p`), the row of the first point that ran the same job: the
    same [workload] table. Points of other jobs did other work and are not compared."""
    first: dict[str, int] = {}
    out = []
    for row, point in enumerate(p["point"]):
        s = summaries[point] if point < len(summaries) else {}
        work = json.dumps((s.get("scenario") or {}).get("workload"), sort_keys=True)
        out.append(first.setdefault(work, row))
    return out


def plot_job_efficiency(points: pd.DataFrame | None, swept: list[str], path: Path, title: str | None = None, summaries: list[dict] | None = None) -> bool:
    """For a sweep of jobs: each point's energy-efficiency gain, E_base / E - 1, as bars,
    and its speedup, T_base / T - 1, as markers, over the first point that ran the same job
    (the same work): the PCIe paper's Tables 2 and 3 and its speedups, for any job."""
    need = {"headline_energy_j", "headline_job_seconds"}
    if points is None or points.empty or not need <= set(points.columns) or len(points) < 2:
        return False
    p = points.sort_values("point").reset_index(drop=True)
    keys = [k for k in swept if k in p.columns]
    labels = [fg.label(keys, [r[k] for k in keys]) for r in p.to_dict("records")]
    base = _same_work_baselines(p, summaries or [])
    energy, seconds = p["headline_energy_j"].to_numpy(), p["headline_job_seconds"].to_numpy()
    gain = 100 * (energy[base] / energy - 1)
    speedup = 100 * (seconds[base] / seconds - 1)
    fig, ax = fg.subplots(figsize=_sweep_size(len(p)))
    x = np.arange(len(p))
    ax.bar(x, gain, width=0.7, color=["#4c72b0" if g >= 0 else "#c44e52" for g in gain], label="energy-efficiency gain")
    ax.plot(x, speedup, "k_", ms=14, mew=2, ls="none", label="speedup")
    ax.axhline(0, color="black", lw=0.8)
    _point_ticks(ax, labels)
    ax.set_ylabel("% over the job's first point")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, frameon=False)
    bases = sorted(set(base))
    if len(bases) == 1:
        note = "over " + labels[bases[0]]
    else:  # one label each would run off the figure
        note = f"each over the first point with the same workload ({len(bases)} such baselines, at 0)"
    fg.titled(fig, title, "energy-efficiency gain (E_base / E - 1) and speedup (T_base / T - 1)", note)
    fg.save(fig, path)
    return True


def _first_present(p: pd.DataFrame, cols: list[str]) -> tuple[np.ndarray, list[str]]:
    """Per row, the first of `cols` that has a value, and which operation it names."""
    values, ops = [], []
    for _, r in p.iterrows():
        c = next((c for c in cols if c in p.columns and pd.notna(r[c])), None)
        values.append(float(r[c]) if c else np.nan)
        ops.append(c.removeprefix("headline_dma_").split("_")[0] if c else "")
    return np.array(values), ops


def plot_dma(points: pd.DataFrame | None, swept: list[str], path: Path, title: str | None = None) -> bool:
    """A DMA sweep: per point, the sustained rate of its writes or reads (GB/s) and the
    mean time of one transfer or load (us, on a log axis when they span decades), with the
    windows remapped."""
    if points is None or points.empty or len(points) < 2 or not any(c.startswith("headline_dma_") for c in points.columns):
        return False
    p = points.sort_values("point").reset_index(drop=True)
    keys = [k for k in swept if k in p.columns]
    labels = [fg.label(keys, [r[k] for k in keys]) for r in p.to_dict("records")]
    rates, rate_ops = _first_present(p, ["headline_dma_write_gbytes_per_s", "headline_dma_read_gbytes_per_s"])
    times, time_ops = _first_present(p, ["headline_dma_write_mean_us", "headline_dma_read_mean_us", "headline_dma_load_mean_us"])
    if not np.isfinite(times).all():
        return False  # a sweep over networks, some without DMA: not a DMA experiment
    colours = {"write": "#4c72b0", "read": "#dd8452", "load": "#55a868", "": "#999999"}
    fig, (ax_rate, ax_time) = fg.subplots(1, 2, figsize=(min(11.0, 3.0 + 0.8 * len(p)), 3.8))
    x = np.arange(len(p))
    for ax, values, ops, unit in ((ax_rate, rates, rate_ops, "sustained rate (GB/s, decimal)"), (ax_time, times, time_ops, "mean time of one (us)")):
        ax.bar(x, np.nan_to_num(values), width=0.7, color=[colours[o] for o in ops])
        for i, (v, o) in enumerate(zip(values, ops)):
            if np.isfinite(v):
                ax.annotate(f"{o} {v:.3g}", (i, v), xytext=(0, 2), textcoords="offset points", ha="center", fontsize=6.5)
        _point_ticks(ax, labels)
        ax.set_ylabel(unit)
        ax.grid(axis="y", alpha=0.3)
    finite = times[np.isfinite(times) & (times > 0)]
    if len(finite) and finite.max() / finite.min() >= fg.DECADES_RATIO:
        ax_time.set_yscale("log")
    note = None
    if "headline_dma_remaps" in p.columns:
        note = "windows remapped, point by point: " + ", ".join(f"{r:.0f}" for r in p["headline_dma_remaps"])
    fg.titled(fig, title, "DMA through the PCIe fabric", note)
    fg.save(fig, path)
    return True
