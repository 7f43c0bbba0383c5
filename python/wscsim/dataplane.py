"""Summaries of the data-plane experiments (Flexplane sections 5.1 and 5.2): bottleneck
queue occupancy in MTUs, normalised flow completion times by load, and the short/long
request trade-off. Each takes a Result (a run or a sweep) and returns a DataFrame."""

from __future__ import annotations

import numpy as np
import pandas as pd

# Frame bytes of one full-size packet (a 1,500-byte IP MTU in an Ethernet frame).
MTU_FRAME_BYTES = 1518
SMALL_BYTES = 100e3
LARGE_BYTES = 10e6


def _keys(df: pd.DataFrame) -> list[str]:
    return [c for c in ("case", "load") if c in df.columns and df[c].nunique() > 0]


def queue_occupancy(res) -> pd.DataFrame:
    """Median and standard deviation of the busiest switch port's queue, in MTU frames,
    per case (the bottleneck: the switch port that sent the most bytes)."""
    q, links = res.queues, res.links
    keys = [k for k in ("point", "case") if k in q.columns]
    rows = []
    groups = q.groupby(keys) if keys else [((), q)]
    for key, g in groups:
        lk = links
        if keys:
            key = key if isinstance(key, tuple) else (key,)
            for k, v in zip(keys, key):
                lk = lk[lk[k] == v]
        sw = lk[lk["kind"] == "switch"].sort_values("tx_bytes", ascending=False).iloc[0]
        b = g[(g["node"] == sw["node"]) & (g["port"] == sw["port"])]["queue_bytes"] / MTU_FRAME_BYTES
        row = dict(zip(keys, key)) if keys else {}
        row.update({"median_mtu": b.median(), "std_mtu": b.std(), "samples": len(b)})
        rows.append(row)
    return pd.DataFrame(rows).drop(columns=["point"], errors="ignore")


def fct_by_load(res) -> pd.DataFrame:
    """Per case and load: mean and 99th-percentile slowdown of small flows (< 100 KB) and
    mean slowdown of large flows (> 10 MB). `res` is a Result or its flows table."""
    f = res if isinstance(res, pd.DataFrame) else res.flows
    f = f[np.isfinite(f["slowdown"])]
    rows = []
    keys = _keys(f)
    for key, g in f.groupby(keys) if keys else [((), f)]:
        small = g[g["size_bytes"] < SMALL_BYTES]["slowdown"]
        large = g[g["size_bytes"] > LARGE_BYTES]["slowdown"]
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        row.update({"small_mean": small.mean(), "small_p99": small.quantile(0.99), "small_flows": len(small), "large_mean": large.mean(), "large_flows": len(large)})
        rows.append(row)
    return pd.DataFrame(rows)


def priority_tradeoff(res) -> pd.DataFrame:
    """Per case: mean FCT (us) of the high-priority (DSCP > 0) and low-priority requests.
    `res` is a Result or its flows table."""
    flows = res if isinstance(res, pd.DataFrame) else res.flows
    f = flows[np.isfinite(flows["fct_us"])]
    keys = [k for k in ("case",) if k in f.columns]
    rows = []
    for key, g in f.groupby(keys) if keys else [((), f)]:
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        row.update({"high_mean_fct_us": g[g["dscp"] > 0]["fct_us"].mean(), "low_mean_fct_us": g[g["dscp"] == 0]["fct_us"].mean(), "unfinished": int(flows["fct_us"].isna().sum())})
        rows.append(row)
    return pd.DataFrame(rows)
