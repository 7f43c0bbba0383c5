"""CamCubeOS key-value store figures: inserts (Figure 6a), throughput over time across
failures (Figure 6c) and operation latency."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from . import figure as fg


# CamCubeOS Figure 6a: inserts at 150 in flight, the cube over the switch.
CAMCUBE_FIGURE_6A_RATIO = {"disk": 1.31, "no disk": 1.93}


def kv_inserts(points: pd.DataFrame, summary: dict) -> pd.DataFrame | None:
    """The points of a key-value insert sweep (Figure 6a): case, operations in flight in
    all (per client x clients) and images stored per second in Gbit/s; None unless the
    sweep has cases and kv_write_gbps."""
    if points.empty or "headline_kv_write_gbps" not in points.columns or "case" not in points.columns:
        return None
    per_point = summary.get("point_summaries") or []
    rows = []
    for r in points.sort_values("point").to_dict("records"):
        p = int(r["point"])
        w = ((per_point[p] if p < len(per_point) else {}).get("scenario") or {}).get("workload") or {}
        if "outstanding" not in w or "clients" not in w:
            return None
        rows.append({"case": r["case"], "in_flight": int(w["outstanding"]) * len(w["clients"]),
                     "gbps": float(r["headline_kv_write_gbps"])})
    return pd.DataFrame(rows)


def plot_kv_inserts(t: pd.DataFrame, path: Path, title: str | None = None) -> bool:
    """Insert throughput against operations in flight, a line per case, with the ratios
    of the cube over the switch at the most in flight beside CamCubeOS Figure 6a's."""
    fig, ax = fg.subplots(figsize=(6.4, 4.4))
    for case, g in t.groupby("case", sort=False):
        g = g.sort_values("in_flight")
        ls = "-" if "camcube" in case else "--"
        color = "C1" if "no disk" in case else "C0"
        ax.plot(g["in_flight"], g["gbps"], marker="o", ms=3, ls=ls, color=color, label=f"wscsim: {case}")
    top = t[t["in_flight"] == t["in_flight"].max()].set_index("case")["gbps"]
    notes = []
    for kind, paper in CAMCUBE_FIGURE_6A_RATIO.items():
        cube, sw = top.get(f"camcube, {kind}"), top.get(f"switch, {kind}")
        if cube is not None and sw is not None and sw > 0:
            notes.append(f"{kind}: cube/switch {cube / sw:.2f} (CamCubeOS {paper})")
    if notes:
        ax.text(0.02, 0.97, f"at {int(t['in_flight'].max())} in flight\n" + "\n".join(notes), transform=ax.transAxes,
                va="top", fontsize=7, bbox={"facecolor": "white", "edgecolor": "0.8"})
    ax.set_xlabel("inserts in flight (all load generators)")
    ax.set_ylabel("images stored (Gbit/s)")
    ax.set_ylim(0, float(t["gbps"].max()) * 1.4)
    ax.set_xlim(0, None)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=7)
    fg.titled(fig, title, "image store inserts: the cube against a switch",
           "1.47 MB images, 3 replicas; load generators on the external switch, front ends drawn at random")
    return bool(fg.save(fig, path))


# CamCubeOS Figure 6c: insert throughput after nine permanent failures.
CAMCUBE_FIGURE_6C_DROP_PCT = 38.85
_SIZE_UNITS = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}


def size_bytes(text) -> float | None:
    """A scenario size ("1470000B", "1.47MB") in bytes."""
    m = re.fullmatch(r"\s*([0-9.]+)\s*(B|KB|MB|GB|KiB|MiB|GiB)\s*", str(text))
    return float(m.group(1)) * _SIZE_UNITS[m.group(2)] if m else None


def kv_timeline(ops: pd.DataFrame, value_bytes: float, end_s: float) -> pd.DataFrame:
    """Writes (inserts and compare-and-swaps that succeeded) completed in each second of
    the run, as Gbit/s of values stored."""
    done = ops[ops["latency_us"].notna() & ops["op"].isin(["insert", "cas"]) & (ops["status"] == "ok")]
    end = (done["start_us"] + done["latency_us"]) / 1e6
    edges = np.arange(0.0, math.floor(end_s) + 1.0, 1.0)
    counts = np.histogram(end, bins=edges)[0] if len(edges) > 1 else np.array([])
    return pd.DataFrame({"t_s": edges[1:], "gbps": counts * value_bytes * 8 / 1e9})


def plot_kv_timeline(t: pd.DataFrame, failures_s: list[float], path: Path, title: str | None = None) -> bool:
    """Insert throughput per second with the failures marked, and its fall from the ten
    seconds before the first failure to the seconds after the last, beside CamCubeOS
    Figure 6c's."""
    if t.empty or not failures_s:
        return False
    fig, ax = fg.subplots(figsize=(6.4, 4.4))
    ax.plot(t["t_s"], t["gbps"], color="C0", lw=1, label="wscsim: images stored, per second")
    for i, f in enumerate(sorted(failures_s)):
        ax.axvline(f, color="C3", lw=0.6, ls=":", label="a server fails" if i == 0 else None)
    first, last = min(failures_s), max(failures_s)
    before = t[(t["t_s"] > first - 10) & (t["t_s"] <= first)]["gbps"].mean()
    after = t[t["t_s"] > last + 1]["gbps"].mean()
    if np.isfinite(before) and np.isfinite(after) and before > 0:
        ax.text(0.02, 0.03, f"after {len(failures_s)} failures: {100 * (after / before - 1):+.1f}% "
                f"(CamCubeOS: -{CAMCUBE_FIGURE_6C_DROP_PCT}%)", transform=ax.transAxes, fontsize=8,
                bbox={"facecolor": "white", "edgecolor": "0.8"})
    ax.set_xlabel("time (s)")
    ax.set_ylabel("images stored (Gbit/s)")
    ax.set_ylim(0, float(t["gbps"].max()) * 1.2)
    ax.set_xlim(0, float(t["t_s"].max()))
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right", fontsize=7)
    fg.titled(fig, title, "image store inserts as servers fail for good",
           "150 inserts in flight, store in memory; the load generators pick live front ends")
    return bool(fg.save(fig, path))


# CamCubeOS Figure 6b: lookup latency at 150 in flight, median and 95th percentile (ms).
CAMCUBE_FIGURE_6B_MS = {"camcube, cache": (0.83, 1.70), "camcube, no cache": (0.97, 2.13), "switch": (0.95, 2.22)}


def plot_kv_latency(ops: pd.DataFrame, path: Path, title: str | None = None) -> bool:
    """The distribution of lookup latency, a line per case (the second half of each run),
    with CamCubeOS Figure 6b's median and 95th percentile for the cases it names."""
    if ops is None or ops.empty or "case" not in ops.columns:
        return False
    looks = ops[(ops["op"] == "lookup") & ops["latency_us"].notna()]
    if looks.empty:
        return False
    fig, ax = fg.subplots(figsize=(6.4, 4.4))
    for i, (case, g) in enumerate(looks.groupby("case", sort=False)):
        g = g[g["start_us"] > g["start_us"].max() / 2]
        x = np.sort(g["latency_us"].to_numpy()) / 1e3
        ax.plot(x, np.arange(1, len(x) + 1) / len(x), color=f"C{i}", lw=1.2,
                label=f"wscsim, {case}: median {np.median(x):.2f}, p95 {np.quantile(x, 0.95):.2f} ms")
        if case in CAMCUBE_FIGURE_6B_MS:
            med, p95 = CAMCUBE_FIGURE_6B_MS[case]
            ax.plot([med, p95], [0.5, 0.95], ls="none", marker="s", mfc="none", ms=7, color=f"C{i}",
                    label=f"CamCubeOS, {case}: {med}, {p95} ms")
    ax.set_xlabel("lookup latency (ms)")
    ax.set_ylabel("fraction of lookups")
    ax.set_ylim(0, 1.02)
    ax.set_xlim(0, None)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=6.5)
    fg.titled(fig, title, "thumbnail lookups: latency",
           "150 in flight from 10 load generators; squares: the paper's median and 95th percentile")
    return bool(fg.save(fig, path))
