"""The energy plot: where a run's joules went, by component (CPU, memory, storage, NICs,
switch ports, chassis), from the `energy` table. A single run gets one bar per component;
a sweep gets a stacked bar per point, so configurations compare at a glance (the PCIe
paper's question: what a faster network costs and saves in energy)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .plots import _label, _save, _title, subplots

# Components in the order the native core lists them, with a fixed colour each.
COMPONENTS = ["cpu", "memory", "storage", "nic", "chassis", "switch_ports", "switch_chassis"]
COLOURS = dict(zip(COMPONENTS, ["#4c72b0", "#55a868", "#c44e52", "#8172b2", "#937860", "#dd8452", "#64b5cd"]))


def _joules(unit_j: float) -> tuple[float, str]:
    """A scale and unit that keep the axis readable (uJ for a microsecond run, kJ for an hour)."""
    for scale, unit in ((1e3, "kJ"), (1.0, "J"), (1e-3, "mJ"), (1e-6, "uJ")):
        if unit_j >= scale:
            return scale, unit
    return 1e-9, "nJ"


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


def plot_energy(energy: pd.DataFrame | None, path: Path, title: str | None = None, swept: list[str] | None = None, note: str | None = None) -> bool:
    """Energy by component; a stacked bar per sweep point when `swept` names the swept keys."""
    if energy is None or energy.empty or energy["joules"].sum() <= 0:
        return False
    keys = [k for k in (swept or []) if k in energy.columns]
    t = by_component(energy, keys)
    scale, unit = _joules(float(t.sum(axis=1).max()))
    if keys:
        labels = [_label(keys, k if isinstance(k, tuple) else (k,)) for k in t.index]
        fig, ax = subplots(figsize=(max(4.5, 0.7 * len(labels) + 2.5), 3.6))
        bottom = np.zeros(len(t))
        for c in t.columns:
            ax.bar(range(len(t)), t[c] / scale, bottom=bottom, color=COLOURS[c], label=c, width=0.7)
            bottom += t[c].to_numpy() / scale
        ax.set_xticks(range(len(t)), labels, rotation=30 if len(labels) > 3 else 0, ha="right" if len(labels) > 3 else "center", fontsize=7)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    else:
        row = t.iloc[0]
        fig, ax = subplots(figsize=(4.8, 3.2))
        ax.bar(range(len(row)), row / scale, color=[COLOURS[c] for c in row.index], width=0.7)
        ax.set_xticks(range(len(row)), list(row.index), fontsize=7)
        for i, v in enumerate(row):
            ax.annotate(f"{v / scale:.3g}", (i, v / scale), ha="center", va="bottom", fontsize=7)
    ax.set_ylabel(f"energy ({unit})")
    ax.grid(axis="y", alpha=0.3)
    _title(fig, title, "energy by component", note)
    _save(fig, path)
    return True
