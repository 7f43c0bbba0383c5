"""RAMCloud's ClusterPerf on the Atom chassis (ramcloud_rpc): the slides' trends, the
transport's rules, and the chassis's two switches."""

import copy

import pytest

from conftest import run
from wscsim.scenario import load

WIRE_S_PER_BYTE = 8 / 2.5e9  # 2.5 Gbit/s
MTU_FRAME_BYTES = 1500 + 18  # a full Ethernet frame, header to FCS
CUT_THROUGH_HEADER_BYTES = 64 + 8  # what a cut-through switch waits for (docs/model-reference.md)


def point(op: str, size: str, forwarding="store_and_forward", count=20, **workload) -> dict:
    """One point of ramcloud_rpc: the user-space driver and RAMCloud's own transport."""
    sc = copy.deepcopy(load("ramcloud_rpc"))
    sc.pop("sweep")
    sc["workload"].update({"op": op, "size": size, "count": count, **workload})
    sc["switch"]["forwarding"] = forwarding
    return sc


def mean_us(sc: dict) -> float:
    h = run(sc).headline
    assert h["rpcs_unfinished"] == 0 and h["rpcs"] == sc["workload"]["count"]
    return h["rpc_mean_us"]


def test_the_slides_100_byte_reads():
    """The two figures the host presets and the RPC layer were fitted to, within 5%."""
    assert mean_us(point("read", "100B")) == pytest.approx(13.8, rel=0.05)
    kernel = point("read", "100B", transport="tcp")
    kernel["host"]["stack"] = "linux_2_6_39"
    assert mean_us(kernel) == pytest.approx(67.8, rel=0.05)


@pytest.mark.parametrize("size", ["100B", "1KB", "10KB", "100KB", "1MB"])
def test_writes_are_slower_than_reads_at_every_size(size):
    assert mean_us(point("write", size, count=5)) > mean_us(point("read", size, count=5))


def test_cut_through_saves_about_a_frame_above_the_mtu_and_nothing_for_100_bytes():
    saving = {}
    for size in ("100B", "10KB", "100KB"):
        saving[size] = mean_us(point("read", size, count=5)) - mean_us(point("read", size, "cut_through", count=5))
    # Above one MTU, the response's last frame no longer waits for its tail at the switch:
    # (frame - header) at 2.5 Gbit/s, one hop. The small request saves a little too.
    frame_us = (MTU_FRAME_BYTES - CUT_THROUGH_HEADER_BYTES) * WIRE_S_PER_BYTE * 1e6
    for size in ("10KB", "100KB"):
        assert saving[size] == pytest.approx(frame_us, rel=0.15), saving
    assert saving["100B"] < 0.15 * frame_us, saving


def test_the_window_paces_large_messages():
    """With one fragment in flight a sender waits for every acknowledgement."""
    wide = mean_us(point("read", "100KB", count=3))
    narrow = mean_us(point("read", "100KB", count=3, window=1, ack_after=1))
    assert narrow > 1.5 * wide


def test_replication_adds_a_round_trip_to_each_backup_for_writes_only():
    plain = mean_us(point("write", "1KB", count=5))
    replicated = mean_us(point("write", "1KB", count=5, replicas=2))
    assert replicated > plain + 10  # a backup's answer takes at least one more exchange
    assert mean_us(point("read", "1KB", count=5, replicas=2)) == pytest.approx(mean_us(point("read", "1KB", count=5)))


def test_a_chassis_spreads_flows_over_both_switches():
    """Each server has a NIC on each switch and picks one per flow by hash: with many
    flows both switches carry traffic, and every flow arrives (a switch reaches a server
    it hangs off directly)."""
    sc = {
        "name": "chassis", "seed": 1, "duration": "1s",
        "topology": {"kind": "chassis", "servers": 8, "link": {"rate": "2.5Gbps"}},
        "workload": {"kind": "all_to_all", "size": "20KB"},
    }
    res = run(sc)
    flows = res.tables["flows"]
    assert len(flows) == 56 and flows["fct_us"].notna().all()
    links = res.tables["links"]
    per_switch = links[links["kind"] == "switch"].groupby("node_name")["tx_packets"].sum()
    assert set(per_switch.index) == {"sw0", "sw1"}
    assert (per_switch > 0.2 * per_switch.sum()).all(), per_switch
    assert len(links[links["kind"] == "nic"]) == 2 * 8


def test_a_user_space_ping_spends_about_the_slides_driver_time():
    """The slides: about 7 us of a DPDK ping is spent inside the driver. With the
    `user_space` preset a host's whole work for a ping is its driver's (a transmit and a
    receive), so the two hosts' busy time per ping is the driver's share; the kernel
    stack's ping (interrupts and the kernel's paths) takes several times as long."""
    sc = load("ramcloud_ping")
    sc["workload"]["count"] = 200
    res = run(sc)
    pings, hosts = res.tables["pings"], res.tables["hosts"]
    rtt = pings.groupby("case")["rtt_us"].mean()
    assert rtt["kernel"] > 3 * rtt["user_space"], rtt
    user = hosts[hosts["case"] == "user_space"]
    run_us = pings[pings["case"] == "user_space"]["rtt_us"].sum()
    driver_us = (user["cpu_utilisation"] * run_us).sum() / 200
    assert 5.6 <= driver_us <= 8.4, driver_us  # within 20% of the slides' 7 us
    assert driver_us < rtt["user_space"], (driver_us, rtt["user_space"])
