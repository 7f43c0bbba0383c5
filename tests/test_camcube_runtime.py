"""CamCubeOS's runtime on a torus through the Python front end: churn (Figure 5c) at a
reduced size, pings (Figure 4c) and their plots. Expectations come from the model's
definitions (zero misdelivery, drops growing with churn, a ping's round trip linear in its
hops), never from an earlier run."""

import numpy as np
import pandas as pd

from conftest import run


def churn_sweep(rates, duration="1s"):
    return {
        "name": "churn",
        "seed": 2,
        "duration": duration,
        "topology": {"kind": "torus3d", "dims": [4, 4, 4]},
        "transport": {"kind": "udp"},
        "workload": {"kind": "udp", "destination": "random_key", "rate": "8.224Mbps", "packet_size": "1000B"},
        "metrics": {"max_queue_samples": 0},
        "sweep": {"cases": [{"name": f"churn {r}", "churn": {"rate": r}} for r in rates]},
    }


def test_churn_never_misdelivers_and_drops_grow_with_it(tmp_path):
    res = run(churn_sweep([4, 60]), out=tmp_path / "churn")
    pts = pd.read_parquet(tmp_path / "churn" / "points.parquet").sort_values("point")
    assert (pts["headline_key_packets_misdelivered"] == 0).all()
    # About 64 servers x 1,000 packets/s for 1 s, less the 10% down.
    assert (pts["headline_key_packets_sent"] > 40_000).all()
    slow, fast = pts["headline_key_drop_fraction"]
    assert 0 <= slow < fast < 0.5
    plots = res.summary["plots"]
    assert any(p.endswith("torus_churn.png") for p in plots)
    assert not any(p.endswith("torus_throughput.png") for p in plots)
    assert (tmp_path / "churn" / "torus_churn.png").stat().st_size > 10_000


def test_ping_round_trips_grow_linearly_with_hops(tmp_path):
    sc = {
        "name": "ping",
        "duration": "10s",
        "topology": {"kind": "torus3d", "dims": [11, 1, 1]},
        "host": {"stack": "camcube", "clock_ghz": 2.27, "cores": 8},
        "workload": {"kind": "ping", "destinations": [1, 2, 3, 4, 5], "count": 4, "packet_size": "1468B"},
    }
    res = run(sc, out=tmp_path / "ping")
    pings = pd.read_parquet(tmp_path / "ping" / "pings.parquet")
    assert len(pings) == 20 and pings["rtt_us"].notna().all()
    assert (pings["hops_counted"] == 2 * pings["path_hops"]).all()
    mean = pings.groupby("path_hops")["rtt_us"].mean()
    steps = np.diff(mean.to_numpy())
    assert steps.min() > 0 and np.allclose(steps, steps[0], rtol=1e-9)
    assert res.summary["headline"]["pings_returned"] == 20
    assert (tmp_path / "ping" / "ping_rtt.png").stat().st_size > 10_000

