"""Analytic checks: the simulator against formulas."""

import numpy as np
import pytest

from conftest import run

LINE_BPS = 10e9


def md1_scenario(tmp_path, load: float, seed: int = 3) -> dict:
    # Eight senders on 100 Gbit/s links feed one 10 Gbit/s port: the fast access links barely
    # shape the Poisson arrivals, so the bottleneck port is an M/D/1 queue.
    edges = ["switch s", "host dst", "link dst s 10Gbps 100ns"]
    for i in range(8):
        edges += [f"host h{i}", f"link h{i} s 100Gbps 100ns"]
    f = tmp_path / "md1.edges"
    f.write_text("\n".join(edges) + "\n")
    payload = 1472
    ip_bits = (payload + 28) * 8
    wire_bits = (payload + 28 + 18 + 20) * 8
    service_s = wire_bits / LINE_BPS
    per_source_bps = load / service_s / 8 * ip_bits
    return {
        "seed": seed,
        "duration": "400ms",
        "topology": {"kind": "edge_list", "file": str(f)},
        "switch": {"buffer_per_port": "64MiB", "port_to_port_latency": "0ns"},
        "workload": {"kind": "udp", "destination": 0, "rate": f"{per_source_bps:.0f}bps", "packet_size": payload, "arrival": "poisson"},
        "metrics": {"max_queue_samples": 0},
    }, service_s


@pytest.mark.parametrize("load", [0.5, 0.8])
def test_poisson_udp_matches_md1_mean_wait(tmp_path, load):
    sc, service_s = md1_scenario(tmp_path, load)
    res = run(sc)
    links = res.links
    port = links[(links["kind"] == "switch") & (links["peer_name"] == "dst")].iloc[0]
    measured_us = port["mean_wait_us"]
    expected_us = load * service_s / (2 * (1 - load)) * 1e6
    assert port["tx_packets"] > 100_000
    assert port["drops"] == 0
    assert abs(measured_us - expected_us) / expected_us < 0.05, (measured_us, expected_us)


def test_one_tcp_flow_fills_an_idle_10g_path(tmp_path):
    cdf = tmp_path / "one_size.csv"
    size = 100_000_000
    cdf.write_text(f"size_bytes,cdf\n{size},0\n{size},1\n")
    sc = {
        "duration": "1s",
        "topology": {"kind": "single_switch", "hosts": 2, "link": {"rate": "10Gbps"}},
        "workload": {"kind": "flows", "flows": 1, "size_cdf": str(cdf), "servers": [0], "clients": [1], "load": 0.1},
    }
    res = run(sc)
    f = res.flows.iloc[0]
    assert np.isfinite(f["fct_us"])
    goodput_bps = size * 8 / (f["fct_us"] * 1e-6)
    # The most a 10 Gbit/s Ethernet link carries as TCP payload: 1460 of every 1538 wire bytes.
    max_goodput_bps = LINE_BPS * 1460 / 1538
    assert goodput_bps >= 0.95 * max_goodput_bps, goodput_bps / max_goodput_bps


@pytest.mark.parametrize("variant", ["newreno", "cubic"])
def test_long_flows_share_a_bottleneck_fairly(variant):
    n = 6
    sc = {
        "duration": "300ms",
        "topology": {"kind": "single_switch", "hosts": n + 1, "link": {"rate": "10Gbps"}},
        "transport": {"variant": variant, "rto_min": "1ms"},
        "workload": {"kind": "many_to_one", "destination": 0},
        "metrics": {"max_queue_samples": 0},
    }
    res = run(sc)
    x = res.flows["bytes_received"].to_numpy(dtype=float)
    jain = x.sum() ** 2 / (len(x) * (x ** 2).sum())
    assert jain >= 0.95, (jain, x)
    # And together they keep the bottleneck busy.
    total_bps = x.sum() * 8 / res.summary["simulated_seconds"]
    assert total_bps > 0.9 * LINE_BPS * 1460 / 1538


def test_fat_tree_paths_and_ecmp_spread():
    sc = {
        "duration": "100ms",
        "topology": {"kind": "fat_tree", "k": 4},
        "transport": {"rto_min": "1ms"},
        "workload": {"kind": "all_to_all", "size": "200KiB"},
    }
    res = run(sc)
    links = res.links
    # k=4: 16 hosts, 20 switches; every aggregation-to-core port carries a share of traffic.
    assert res.summary["hosts"] == 16 and res.summary["switches"] == 20
    up = links[links["node_name"].str.startswith("agg") & links["peer_name"].str.startswith("core")]
    assert len(up) == 16
    assert (up["tx_bytes"] > 0).all()
    # Hash uniformity itself is a Rust unit test; here each core switch's share of the
    # inter-pod bytes stays within half to one and a half times the mean.
    per_core = up.groupby("peer_name")["tx_bytes"].sum()
    assert len(per_core) == 4
    assert per_core.min() > 0.5 * per_core.mean() and per_core.max() < 1.5 * per_core.mean(), per_core
    # Every flow completed; an inter-pod flow's ideal time covers 6 links.
    assert res.flows["fct_us"].notna().all()


def test_leaf_spine_oversubscription_sets_uplink_rates():
    sc = {
        "duration": "2ms",
        "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 4, "oversubscription": 4, "link": {"rate": "10Gbps"}},
        "transport": {"rto_min": "1ms"},
        "workload": {"kind": "many_to_one", "destination": 0, "sources": [4, 5, 6, 7]},
    }
    res = run(sc)
    links = res.links
    up = links[links["node_name"].str.startswith("leaf") & links["peer_name"].str.startswith("spine")]
    # 4 hosts x 10 Gbit/s over 2 uplinks at 4:1 gives 5 Gbit/s uplinks.
    assert len(up) == 4 and (up["rate_bps"] == 5_000_000_000).all()
    # Four senders in the other leaf share the 10 Gbit/s of leaf1's two uplinks: together
    # they get at most that, and ECMP uses both.
    leaf1_up = up[up["node_name"] == "leaf1"]
    assert (leaf1_up["tx_bytes"] > 0).all()
    total_bps = res.flows["bytes_received"].sum() * 8 / res.summary["simulated_seconds"]
    assert total_bps <= 2 * 5e9
