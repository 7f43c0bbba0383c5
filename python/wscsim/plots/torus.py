"""CamCubeOS torus figures: all-to-all throughput (Figure 5a), failures, churn, ping
round trips, per-link load and TCP inbound throughput per server."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from . import figure as fg


# CamCubeOS (HPDC 2013) section 5.2, Figure 5(a): the throughput per server the paper
# reports for all-to-all traffic on 3D tori of 1 Gbit/s links, by number of servers (from
# its text: "2.7 Gbps", "1 Gbps", "500 Mbps").
CAMCUBE_FIGURE_5A_GBPS = {27: 2.7, 512: 1.0, 4096: 0.5}
_RATE_UNITS = {"": 1, "K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def _rate_bps(text) -> float | None:
    """A resolved rate ("1Gbps", "2876742.642Kbps") in bit/s; None if it is not one."""
    import re

    m = re.fullmatch(r"\s*([0-9.]+)\s*([KkMGT]?)bps\s*", str(text))
    return float(m.group(1)) * _RATE_UNITS[m.group(2)] if m else None


def torus_throughput(headlines: list[dict], summaries: list[dict], labels: list[str]) -> pd.DataFrame:
    """One row per run (or sweep point) that has an all-to-all headline: its label,
    servers and dims (when its summary is known), and the expected (a torus's), delivered
    (mean and least over servers) and reported (CamCubeOS Figure 5a, for the paper's cubes
    of 1 Gbit/s links only) rates per server in Gbit/s. A switched network's row (Figure 5a's
    comparison) has no expected rate, and its oversubscription in `switched` (NaN on a
    torus)."""
    rows = []
    for head, summary, label in zip(headlines, summaries, labels):
        expected = head.get("expected_gbps_per_server")
        delivered = head.get("delivered_gbps_per_server")
        if expected is None or not np.isfinite(expected):
            if delivered is None or not np.isfinite(delivered):
                continue
            expected = np.nan
        topo = ((summary or {}).get("scenario") or {}).get("topology") or {}
        dims = topo.get("dims") if isinstance(topo.get("dims"), list) else None
        servers = (summary or {}).get("hosts")
        cube = dims is not None and len(set(dims)) == 1 and _rate_bps((topo.get("link") or {}).get("rate")) == 1e9
        n = int(np.prod(dims)) if dims else servers
        rows.append({"label": label, "servers": servers, "dims": "x".join(map(str, dims)) if dims else None,
                     "expected": expected, "delivered": head.get("delivered_gbps_per_server", np.nan),
                     "least": head.get("min_delivered_gbps_per_server", np.nan),
                     "reported": CAMCUBE_FIGURE_5A_GBPS.get(servers, np.nan) if cube else np.nan,
                     "median_live": head.get("median_delivered_gbps_per_live_server", np.nan),
                     "failed": head.get("failed_servers", 0) or 0, "n": n,
                     # A switched network's oversubscription (a leaf-spine's own; the others are 1:1).
                     "switched": (float(topo.get("oversubscription", 1.0)) if topo.get("kind") == "leaf_spine" else 1.0)
                     if not np.isfinite(expected) else np.nan})
    return pd.DataFrame(rows, columns=["label", "servers", "dims", "expected", "delivered", "least", "reported",
                                       "median_live", "failed", "n", "switched"])


# CamCubeOS Figure 5b: the median per-server throughput falls about linearly with the
# fraction of servers failed, by 38.77% at 20%.
CAMCUBE_FIGURE_5B_DROP_AT_20 = 0.3877


def torus_failures(t: pd.DataFrame) -> pd.DataFrame | None:
    """The points of a torus run with servers failed (Figure 5b): percent failed and the
    median over surviving servers, relative to the point with none failed; None when no
    point has a failed server or none has zero."""
    t = t[t["switched"].isna()]
    if t.empty or not (t["failed"] > 0).any() or not (t["failed"] == 0).any() or t["n"].isna().any():
        return None
    t = t.assign(percent=100.0 * t["failed"] / t["n"].astype(float)).sort_values("percent")
    base = t.loc[t["failed"] == 0, "median_live"].iloc[0]
    return t.assign(relative=t["median_live"] / base)


def plot_torus_failures(t: pd.DataFrame, path: Path, title: str | None = None) -> bool:
    """Median throughput per surviving server against the percentage of servers failed,
    relative to none failed, with CamCubeOS Figure 5b's reported line."""
    f = torus_failures(t)
    if f is None:
        return False
    fig, ax = fg.subplots(figsize=(6.4, 4.4))
    ax.plot(f["percent"], 100 * f["relative"], color="C0", marker="o", label="wscsim: median over surviving servers")
    top = max(20.0, float(f["percent"].max()))
    ax.plot([0, 20], [100, 100 * (1 - CAMCUBE_FIGURE_5B_DROP_AT_20)], color="C3", ls="--",
            label="CamCubeOS Figure 5b (reported: -38.77% at 20%)")
    for r in f.itertuples():
        ax.annotate(f"{r.median_live:.3f} Gbit/s", (r.percent, 100 * r.relative), textcoords="offset points",
                    xytext=(4, 6), fontsize=7, color="C0")
    ax.set_xlim(-0.5, top + 3.5)
    ax.set_ylim(0, 110)
    ax.set_xlabel("servers failed at random (%)")
    ax.set_ylabel("median throughput per surviving server\n(% of none failed)")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower left", fontsize=8)
    fg.titled(fig, title, "all-to-all throughput on a torus with servers failed",
           "what each surviving server receives as the destination, second half of the run")
    return bool(fg.save(fig, path))


def plot_torus_throughput(t: pd.DataFrame, path: Path, title: str | None = None) -> bool:
    """Delivered against expected throughput per server on a torus under all-to-all traffic
    (CamCubeOS Figure 5a), against the number of servers when every torus point has its own
    (else one position per point), with the paper's reported values where it has them and
    switched networks' points (triangles, by their oversubscription) beside them. Nothing
    without a torus point."""
    if t.empty or t["switched"].notna().all():
        return False
    tor, sw = t[t["switched"].isna()], t[t["switched"].notna()]
    by_servers = t["servers"].notna().all() and tor["servers"].is_unique and sw["servers"].is_unique
    if by_servers:
        tor = tor.sort_values("servers")
        x = tor["servers"].astype(float).to_numpy()
        # A switched point sits right of the torus of its size, clear of its label.
        x_sw = sw["servers"].astype(float).to_numpy() * 1.9
        ticks = [f"{int(n):,}" + (f"\n({d})" if d else "") for n, d in zip(tor["servers"], tor["dims"])]
        tick_x = x
    else:
        pos = {i: float(k) for k, i in enumerate(t.index)}
        x = np.array([pos[i] for i in tor.index])
        x_sw = np.array([pos[i] for i in sw.index])
        tick_x = np.arange(len(t), dtype=float)
        ticks = [f"{r.label}\n({int(r.servers):,} servers)" if pd.notna(r.servers) else r.label for r in t.itertuples()]
    fig, ax = fg.subplots(figsize=(6.4, 4.8))
    ax.plot(x, tor["expected"], ls="--", color="0.45", marker="o", ms=10, mfc="none", mew=1.2, label="expected: links x rate x (N-1) / sum of hops", zorder=2)
    ax.plot(x, tor["delivered"], color="C0", marker="o", ms=5, label="delivered, mean over servers", zorder=4)
    if tor["least"].notna().any():
        # A whisker from the mean down to the least-served server.
        low = (tor["delivered"] - tor["least"]).clip(lower=0).fillna(0).to_numpy()
        ax.errorbar(x, tor["delivered"], yerr=[low, np.zeros(len(tor))], fmt="none", ecolor="C0", elinewidth=0.8, capsize=3, alpha=0.6,
                    label="delivered, least-served server", zorder=3)
    if tor["reported"].notna().any():
        ax.plot(x, tor["reported"], ls="none", color="C3", marker="s", ms=8, mfc="none", mew=1.3, label="CamCubeOS Figure 5a (reported)", zorder=3)
    for xi, r in zip(x, tor.itertuples()):
        if np.isfinite(r.delivered):
            ax.annotate(f"{r.delivered / r.expected:.1%}", (xi, r.delivered), xytext=(9, 0), textcoords="offset points", va="center", fontsize=7, color="C0")
    if not sw.empty:
        ax.plot(x_sw, sw["delivered"], ls="none", color="C2", marker="^", ms=7,
                label="switched network, all-to-all: delivered", zorder=4)
        for xi, r in zip(x_sw, sw.itertuples()):
            ax.annotate(f"1:{r.switched:g}\n{r.delivered:.3f}", (xi, r.delivered), xytext=(0, -9), textcoords="offset points", ha="center", va="top",
                        fontsize=7, color="C2")
    if by_servers:
        all_x = np.concatenate([x, x_sw])
        if len(all_x) > 1 and fg.spans_decades(all_x):
            ax.set_xscale("log")
            ax.set_xlim(all_x.min() / 2, all_x.max() * 1.6)
        else:
            ax.set_xlim(all_x.min() - max(1.0, 0.6 * all_x.min()), all_x.max() + max(1.0, 0.6 * all_x.max()))
        ax.set_xlabel("servers (torus dims)")
    else:
        ax.set_xlim(-0.6, len(t) - 0.4)
        ax.set_xlabel("sweep point")
    ax.set_xticks(tick_x, ticks, fontsize=7)
    ax.minorticks_off()
    top = np.nanmax(t[["expected", "delivered", "reported"]].to_numpy(dtype=float))
    ax.set_ylim(0, top * 1.2)
    ax.set_ylabel("throughput per server (Gbit/s)")
    ax.grid(True, which="major", axis="y", lw=0.3, color="0.85")
    # Below the axes: inside, it would cover a point (a single run's sits in the middle).
    handles, names = ax.get_legend_handles_labels()
    fig.legend(handles, names, loc="outside lower center", ncols=2, fontsize=7)
    fg.titled(fig, title, "all-to-all throughput per server on the torus",
           "delivered: what a server receives as destination, on the wire, in the second half of the run\n"
           "(mean over servers, % of expected beside it; whisker down to the least-served server)")
    fg.save(fig, path)
    return True


# CamCubeOS Figure 5c: drops at 2 failures/s (a bound) and at about 15 failures/s.
CAMCUBE_FIGURE_5C_BOUND = (2.0, 1.0)
CAMCUBE_FIGURE_5C_HIGH = (15.0, 27.41)


def torus_churn(points: pd.DataFrame, summary: dict) -> pd.DataFrame | None:
    """The points of a churn sweep (Figure 5c): failures per second (half the churn, which
    counts failures and rejoins), the percentage of key-addressed packets dropped and the
    number misdelivered; None unless every point sent packets to keys under churn."""
    if points.empty or "headline_key_drop_fraction" not in points.columns:
        return None
    per_point = summary.get("point_summaries") or []
    rows = []
    for r in points.sort_values("point").to_dict("records"):
        p = int(r["point"])
        churn = ((per_point[p] if p < len(per_point) else {}).get("scenario") or {}).get("churn") or {}
        if "rate" not in churn or not np.isfinite(r.get("headline_key_drop_fraction", np.nan)):
            return None
        rows.append({"failures_per_s": churn["rate"] / 2.0, "dropped_pct": 100.0 * r["headline_key_drop_fraction"],
                     "misdelivered": int(r.get("headline_key_packets_misdelivered", 0)),
                     "sent": int(r.get("headline_key_packets_sent", 0))})
    return pd.DataFrame(rows).sort_values("failures_per_s") if rows else None


def plot_torus_churn(t: pd.DataFrame, path: Path, title: str | None = None) -> bool:
    """Key-addressed packets dropped against failures per second (log scale), with the
    misdelivered count at each point and CamCubeOS Figure 5c's reported points."""
    fig, ax = fg.subplots(figsize=(6.4, 4.4))
    ax.plot(t["failures_per_s"], t["dropped_pct"], color="C0", marker="o", label="wscsim: dropped")
    for r in t.itertuples():
        ax.annotate(f"{r.dropped_pct:.3g}%\n{r.misdelivered} misdelivered", (r.failures_per_s, r.dropped_pct),
                    textcoords="offset points", xytext=(5, -18), fontsize=7, color="C0")
    (bx, by), (hx, hy) = CAMCUBE_FIGURE_5C_BOUND, CAMCUBE_FIGURE_5C_HIGH
    ax.plot([bx], [by], ls="none", marker="v", color="C3", ms=8, label=f"CamCubeOS: under {by:g}% at {bx:g} failures/s")
    ax.plot([hx], [hy], ls="none", marker="s", mfc="none", color="C3", ms=8, label=f"CamCubeOS: {hy}% at about {hx:g} failures/s")
    ax.set_yscale("log")
    lo = min(float(t["dropped_pct"][t["dropped_pct"] > 0].min()) if (t["dropped_pct"] > 0).any() else 0.01, by)
    ax.set_ylim(lo / 3, hy * 3)
    ax.set_xlim(0, max(float(t["failures_per_s"].max()), hx) * 1.15)
    ax.set_xlabel("server failures per second (rejoins as many)")
    ax.set_ylabel("packets to keys dropped (%)")
    ax.grid(alpha=0.3, which="both", lw=0.3)
    ax.legend(loc="upper left", fontsize=7)
    fg.titled(fig, title, "churn: packets to random keys dropped",
           "every live server sends 1,000 packets/s to random keys; misdelivered: not at the key's true root")
    return bool(fg.save(fig, path))


# CamCubeOS Figure 4c: mean round trip of 15-hop pings (ms).
CAMCUBE_FIGURE_4C_15_HOPS_MS = {1518: 2.22, 9018: 5.87}


def _ping_keys(pings: pd.DataFrame) -> list[str]:
    """What tells a run's pings apart: the frame size, and the case when a sweep's cases
    share a frame size."""
    if "case" not in pings or pings.groupby(["case", "frame_bytes"]).ngroups == pings["frame_bytes"].nunique():
        return ["frame_bytes"]
    return ["case", "frame_bytes"]


def ping_rtt(pings: pd.DataFrame) -> pd.DataFrame:
    """Mean and 99th-percentile round trip by frame size (and case, when several) and hop
    count (one way), in ms."""
    done = pings[np.isfinite(pings["rtt_us"])]
    g = done.groupby([*_ping_keys(done), "path_hops"])["rtt_us"]
    return pd.DataFrame({"mean_ms": g.mean() / 1e3, "p99_ms": g.quantile(0.99) / 1e3, "pings": g.size()}).reset_index()


def _ping_label(key: tuple, keys: list[str]) -> str:
    named = dict(zip(keys, key))
    frame = int(named["frame_bytes"])
    size = "jumbo" if frame > 2000 else f"{frame - 18:,}-byte packets"
    case = f"{named['case']}, " if "case" in named else ""
    return f"{case}{size} ({frame:,}-byte frames)"


def plot_ping_rtt(pings: pd.DataFrame, path: Path, title: str | None = None) -> bool:
    """Ping round trip against hops, one line per frame size (and case), with CamCubeOS
    Figure 4c's 15-hop points; pings that all cross the same hops (a switched network) get
    the distribution of their round trips instead."""
    if pings is None or pings.empty:
        return False
    t = ping_rtt(pings)
    if t.empty:
        return False
    if t["path_hops"].nunique() == 1:
        return _plot_ping_cdf(pings, path, title)
    keys = _ping_keys(pings)
    fig, ax = fg.subplots(figsize=(6.4, 4.4))
    for i, (key, g) in enumerate(t.groupby(keys)):
        key = key if isinstance(key, tuple) else (key,)
        frame = int(dict(zip(keys, key))["frame_bytes"])
        ax.plot(g["path_hops"], g["mean_ms"], marker="o", ms=3, color=f"C{i}", label=f"wscsim, {_ping_label(key, keys)}")
        if frame in CAMCUBE_FIGURE_4C_15_HOPS_MS:
            name = "jumbo" if frame > 2000 else f"{frame - 18:,}-byte packets"
            ax.plot([15], [CAMCUBE_FIGURE_4C_15_HOPS_MS[frame]], ls="none", marker="s", mfc="none", ms=9, color=f"C{i}",
                    label=f"CamCubeOS Figure 4c, {name}: {CAMCUBE_FIGURE_4C_15_HOPS_MS[frame]} ms at 15 hops")
    ax.set_xlabel("hops (one way)")
    ax.set_ylabel("mean round trip (ms)")
    ax.set_xlim(0, max(16, int(t["path_hops"].max()) + 1))
    ax.set_ylim(0, None)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=7)
    fg.titled(fig, title, "ping round trip against hops",
           "sequential pings; the camcube host preset is fitted to the 15-hop points")
    return bool(fg.save(fig, path))


def _plot_ping_cdf(pings: pd.DataFrame, path: Path, title: str | None) -> bool:
    """The round trips' CDF, one line per frame size (and case), in us."""
    done = pings[np.isfinite(pings["rtt_us"])]
    keys = _ping_keys(done)
    fig, ax = fg.subplots(figsize=(6.4, 4.4))
    for i, (key, g) in enumerate(done.groupby(keys)):
        key = key if isinstance(key, tuple) else (key,)
        rtt = np.sort(g["rtt_us"].to_numpy())
        ax.step(rtt, np.arange(1, len(rtt) + 1) / len(rtt), where="post", color=f"C{i}",
                label=f"{_ping_label(key, keys)}: mean {rtt.mean():.1f} us")
    ax.set_xscale("log")
    ax.set_xlabel("round trip (us)")
    ax.set_ylabel("fraction of pings at or below")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=7)
    hops = int(done["path_hops"].iloc[0])
    fg.titled(fig, title, "ping round trips",
           f"sequential pings, {hops} links each way; lost pings left out")
    return bool(fg.save(fig, path))


# CamCubeOS Figures 4a and 4b (section 5.1): per-server throughput over its links' capacity
# (rx + tx), by frame kind and links saturated, and CPU busy at six links (bounds read off
# the figure: "under 22%", "above 87%", "under 45%").
CAMCUBE_FIGURE_4A = {"1,500 bytes": {1: 0.97, 2: 0.97, 3: 0.97, 4: 0.97, 5: 0.97, 6: 0.91},
                     "jumbo": {L: 1.0 for L in range(1, 7)}, "1,500 bytes, packing": {L: 1.0 for L in range(1, 7)}}
CAMCUBE_FIGURE_4B_SIX_LINKS = {"1,500 bytes": 0.87, "jumbo": 0.22, "1,500 bytes, packing": 0.45}


def torus_links(points: pd.DataFrame) -> pd.DataFrame | None:
    """The points of a links sweep (Figures 4a/4b): case, links, throughput fraction and
    CPU busy; None unless the points have them."""
    need = {"case", "links", "headline_median_link_throughput_fraction", "headline_median_cpu_utilisation"}
    if points.empty or not need <= set(points.columns):
        return None
    return pd.DataFrame({"case": points["case"], "links": points["links"].astype(int),
                         "throughput": points["headline_median_link_throughput_fraction"].astype(float),
                         "cpu": points["headline_median_cpu_utilisation"].astype(float)})


def plot_torus_links(t: pd.DataFrame, path: Path, title: str | None = None) -> bool:
    """Throughput fraction and CPU against links saturated, a line per case, with
    CamCubeOS Figures 4a and 4b's values as open markers."""
    fig, (a, b) = fg.subplots(1, 2, figsize=(10, 4.2))
    for i, (case, g) in enumerate(t.groupby("case", sort=False)):
        g = g.sort_values("links")
        a.plot(g["links"], g["throughput"], marker="o", ms=3, color=f"C{i}", label=f"wscsim: {case}")
        b.plot(g["links"], 100 * g["cpu"], marker="o", ms=3, color=f"C{i}", label=f"wscsim: {case}")
        paper = CAMCUBE_FIGURE_4A.get(case)
        if paper:
            a.plot(list(paper), list(paper.values()), ls="none", marker="s", mfc="none", ms=7, color=f"C{i}",
                   label=f"CamCubeOS Figure 4a: {case}")
        if case in CAMCUBE_FIGURE_4B_SIX_LINKS:
            b.plot([6], [100 * CAMCUBE_FIGURE_4B_SIX_LINKS[case]], ls="none", marker="s", mfc="none", ms=9, color=f"C{i}",
                   label=f"CamCubeOS Figure 4b at six links: {case}")
    a.set_ylim(0.8, 1.02)
    a.set_ylabel("throughput / links' capacity (rx + tx, median server)")
    b.set_ylim(0, 100)
    b.set_ylabel("CPU busy, all 8 (%, median server)")
    for ax in (a, b):
        ax.set_xlabel("links saturated")
        ax.set_xticks(range(1, 7))
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right" if ax is a else "upper left", fontsize=7)
    fg.titled(fig, title, "saturated links: throughput and CPU",
           "UDP at line rate to L neighbours; camcube host preset (its CPU costs are fitted to Figure 4b at six links)")
    return bool(fg.save(fig, path))


# CamCubeOS section 4, the TCP service: median inbound throughput per server, and its bound.
CAMCUBE_TCP_MEDIAN_GBPS = 1.49
CAMCUBE_TCP_MAX_GBPS = 2.7


def tcp_inbound_per_server(flows: pd.DataFrame, end_us: float) -> pd.Series:
    """What each receiving server's TCP flows delivered over the span it received, in
    Gbit/s (the headline's median_inbound_gbps_per_server is this series' lower median):
    from the first flow's start to its last byte, or `end_us` for a flow that did not finish."""
    f = flows.assign(end_us=(flows["start_us"] + flows["fct_us"]).fillna(end_us))
    g = f.groupby("dst").agg(bytes=("bytes_received", "sum"), start=("start_us", "min"), end=("end_us", "max"))
    g = g[g["end"] > g["start"]]
    return g["bytes"] * 8 / ((g["end"] - g["start"]) * 1e3)


def plot_tcp_inbound(groups: list[tuple[str, pd.Series]], path: Path, title: str | None = None) -> bool:
    """Inbound TCP throughput per server, one column of points per case, with the median
    marked and the CamCubeOS TCP service's median and maximum."""
    groups = [(n, v) for n, v in groups if not v.empty]
    if not groups:
        return False
    fig, ax = fg.subplots(figsize=(6.4, 4.4))
    for i, (name, v) in enumerate(groups):
        jitter = np.linspace(-0.15, 0.15, len(v))
        ax.plot(i + jitter, np.sort(v.to_numpy()), ls="none", marker="o", ms=3, color="C0", alpha=0.6,
                label="wscsim: one server" if i == 0 else None)
        med = float(np.sort(v.to_numpy())[(len(v) - 1) // 2])
        ax.plot([i - 0.25, i + 0.25], [med, med], color="C0", lw=2, label="wscsim: median" if i == 0 else None)
        ax.annotate(f"{med:.3g}", (i + 0.27, med), va="center", fontsize=8, color="C0")
    ax.axhline(CAMCUBE_TCP_MEDIAN_GBPS, color="C3", ls="--", lw=1, label=f"CamCubeOS: median {CAMCUBE_TCP_MEDIAN_GBPS} Gbit/s")
    ax.axhline(CAMCUBE_TCP_MAX_GBPS, color="0.4", ls=":", lw=1, label=f"CamCubeOS: maximum {CAMCUBE_TCP_MAX_GBPS} Gbit/s")
    ax.set_xticks(range(len(groups)), [n for n, _ in groups], fontsize=8)
    ax.set_xlim(-0.6, len(groups) - 0.4)
    ax.set_ylim(0, CAMCUBE_TCP_MAX_GBPS * 1.15)
    ax.set_ylabel("inbound TCP throughput per server (Gbit/s)")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(loc="lower right", fontsize=7)
    fg.titled(fig, title, "TCP over the torus: what each server receives",
           "every server sends to every other at once; bytes delivered over the span each server receives")
    return bool(fg.save(fig, path))
