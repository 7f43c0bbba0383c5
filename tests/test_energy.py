"""Energy in every run, against hand-computed integrals of the power model."""

import pytest

from conftest import run

# Table 1 of Byrne et al. (HotPower 2011): per-node network power = NIC + one switch port.
TABLE_1_W = {"1gbe": (1.9, 2.0), "10gbe": (10.0, 7.3), "ib_qdr_4x": (15.5, 5.6)}
RATES = {"1gbe": "1Gbps", "10gbe": "10Gbps", "ib_qdr_4x": "32Gbps"}


def udp_pair(technology: str, duration_ms: float, power: dict, rate: str = "100Mbps") -> dict:
    """Host 1 sends UDP to host 0 for the whole run through one switch."""
    return {
        "seed": 1,
        "duration": f"{duration_ms}ms",
        "topology": {"kind": "single_switch", "hosts": 2, "link": {"technology": technology, "rate": RATES.get(technology)} if technology in RATES else {"technology": technology}},
        "transport": {"kind": "udp"},
        "workload": {"kind": "udp", "sources": [1], "destination": 0, "rate": rate, "packet_size": 1000},
        "power": power,
    }


@pytest.mark.parametrize("tech", sorted(TABLE_1_W))
def test_constant_power_is_table_1_times_the_run(tech):
    """With the paper's assumption (every part at its maximum all the time), a run's energy
    is its length times the sum of the parts: two nodes of one core, memory, NIC and a
    switch port each."""
    res = run(udp_pair(tech, 20, {"cpu_core_w": 9.0, "memory_w": 6.0}))
    h = res.summary["headline"]
    nic_w, port_w = TABLE_1_W[tech]
    seconds = res.summary["simulated_seconds"]
    expected_w = 2 * (9.0 + 6.0 + nic_w + port_w)
    assert h["mean_power_w"] == pytest.approx(expected_w, rel=1e-9)
    assert h["energy_j"] == pytest.approx(expected_w * seconds, rel=1e-9)
    assert h["network_power_per_server_w"] == pytest.approx(nic_w + port_w, rel=1e-9)
    e = res.tables["energy"]
    assert set(e["component"].astype(str)) == {"cpu", "memory", "nic", "switch_ports"}
    assert e["joules"].sum() == pytest.approx(h["energy_j"], rel=1e-12)


def test_pcie_node_draws_under_a_watt():
    res = run(udp_pair("pcie_gen2", 5, {}))
    assert res.summary["scenario"]["topology"]["link"]["technology"] == "pcie_gen2_x4"
    assert 0 < res.summary["headline"]["network_power_per_server_w"] <= 1.0


def test_idle_parts_draw_nothing_busy_links_their_share():
    """With idle_fraction 0 a NIC draws its power only while its link carries frames: the
    sender's NIC and the receiver's switch port are busy for the wire time of what was
    sent, the CPU (ideal stack) never, memory always."""
    duration_ms, rate_bps = 50, 100e6
    res = run(udp_pair("1gbe", duration_ms, {"idle_fraction": 0.0, "memory_w": 0.0}, rate=f"{rate_bps:.0f}bps"))
    e = res.tables["energy"]
    by = e.groupby(e["component"].astype(str), observed=True)["joules"].sum()
    links = res.tables["links"]
    # Busy time of a NIC or port is the longer of its two directions' wire time: the
    # sender's NIC and the switch port facing it carry the same frames; so do the switch's
    # port to the receiver and the receiver's NIC.
    # (the links table's tx_bytes are bytes on the wire: frame, preamble and gap).
    wire_s = links["tx_bytes"].max() * 8 / 1e9
    assert wire_s > 0
    assert by.get("cpu", 0.0) == 0.0
    assert by["nic"] == pytest.approx(2 * 1.9 * wire_s, rel=1e-6)
    assert by["switch_ports"] == pytest.approx(2 * 2.0 * wire_s, rel=1e-6)
    # The sender offers 100 Mbit/s of IP packets on a 1 Gbit/s link: a little over a tenth.
    assert 0.1 < wire_s / res.summary["simulated_seconds"] < 0.12


def test_unsourced_technology_is_named():
    res = run(udp_pair("2.5gbe", 5, {}))
    assert res.summary["headline"]["power_unsourced"] == ["2.5gbe"]


def test_storage_device_power_counts():
    sc = udp_pair("1gbe", 5, {"storage_w": 6.0})
    sc["host"] = {"storage": "fusion_io"}
    res = run(sc)
    e = res.tables["energy"]
    storage = e[e["component"].astype(str) == "storage"]
    assert len(storage) == 2
    assert storage["mean_w"].tolist() == pytest.approx([6.0, 6.0])
    sc["power"] = {}
    e = run(sc).tables["energy"]
    assert e[e["component"].astype(str) == "storage"]["max_w"].tolist() == [11.0, 11.0]


def shuffle(technology: str, **extra) -> dict:
    """`network_power`'s three-node shuffle of 10 MB per node over one switch."""
    sc = {
        "seed": 1,
        "duration": "10s",
        "topology": {"kind": "single_switch", "hosts": 3, "link": {"technology": technology}},
        "workload": {"kind": "job", "phases": [{"kind": "shuffle", "bytes": "10MB"}]},
    }
    sc.update(extra)
    return sc


def test_a_faster_fabrics_shuffle_waits_out_linuxs_minimum_timeout():
    """Why the 10GbE shuffle of `network_power` takes longer than the 1GbE one (docs/energy.md):
    every port receives from two senders at line rate, slow start overflows its buffer, and
    a loss at the end of a flow has no later segments to reveal it, so TCP waits for its
    retransmission timer, at least `rto_min` (Linux's 200 ms). On 1GbE the flows are long
    enough for fast retransmit to repair every loss. With a 1 ms floor, the faster fabric
    is faster again; with buffers that hold the burst, nothing is lost at all."""
    slow = run(shuffle("1gbe")).summary["headline"]
    fast = run(shuffle("10gbe")).summary["headline"]
    assert slow["drops"] > 0 and slow["tcp_timeouts"] == 0
    assert fast["tcp_timeouts"] >= 1 and fast["job_seconds"] > 0.2 > slow["job_seconds"]
    floor = run(shuffle("10gbe", transport={"rto_min": "1ms"})).summary["headline"]
    assert floor["tcp_timeouts"] >= 1 and floor["job_seconds"] < slow["job_seconds"] / 5
    deep = run(shuffle("10gbe", switch={"buffer_per_port": "1MB"})).summary["headline"]
    assert deep["drops"] == 0 and deep["job_seconds"] < slow["job_seconds"] / 5
