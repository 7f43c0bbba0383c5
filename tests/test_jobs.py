"""Jobs in phases (workload kind "job"): storage, compute and shuffle times against their
formulas, overlapping phases, and the PCIe paper's energy-efficiency trend."""

import pytest

from conftest import run

# Table 1 of the PCIe paper: Fusion-IO reads at 0.75 GB/s and writes at 0.7 GB/s; the
# access latency is the device's (docs/energy.md).
FIO_READ_BPS, FIO_WRITE_BPS, FIO_LATENCY_S = 750e6, 700e6, 26e-6


def job(phases, hosts=3, technology="1gbe", storage="fusion_io", host=None, power=None, switch=None):
    sc = {
        "name": "job",
        "seed": 1,
        "duration": "60s",
        "topology": {"kind": "single_switch", "hosts": hosts, "link": {"technology": technology}},
        "host": {"storage": storage, **(host or {})},
        "workload": {"kind": "job", "phases": phases},
    }
    if power:
        sc["power"] = power
    if switch:
        sc["switch"] = switch
    return sc


def durations_s(res):
    p = res.tables["phases"]
    return {(int(r.host), int(r.phase)): r.duration_us / 1e6 for r in p.itertuples()}


def test_storage_and_compute_phases_take_their_formulas():
    phases = [
        {"kind": "read", "bytes": "30MB"},
        {"kind": "compute", "bytes": "30MB", "cycles_per_byte": 20, "parallel_fraction": 0.5},
        {"kind": "write", "bytes": "7MB"},
    ]
    res = run(job(phases, hosts=2, host={"clock_ghz": 1.6, "cores": 4}, power={"idle_fraction": 0.0, "cpu_core_w": 10.0}))
    d = durations_s(res)
    assert d[(0, 0)] == pytest.approx(FIO_LATENCY_S + 30e6 / FIO_READ_BPS, rel=1e-9)
    serial_s = 30e6 * 20 / 1.6e9
    assert d[(1, 1)] == pytest.approx(serial_s * (0.5 + 0.5 / 4), rel=1e-9)
    assert d[(0, 2)] == pytest.approx(FIO_LATENCY_S + 7e6 / FIO_WRITE_BPS, rel=1e-9)
    h = res.headline
    assert h["job_seconds"] == pytest.approx(sum(d[(0, k)] for k in range(3)), rel=1e-9)
    assert h["job_seconds"] == pytest.approx(res.summary["simulated_seconds"], rel=1e-9)
    # A busy core draws its power: every cycle counts once, however many cores shared them.
    e = res.tables["energy"]
    cpu = e[e["component"].astype(str) == "cpu"]["joules"]
    assert cpu.tolist() == pytest.approx([10.0 * serial_s] * 2, rel=1e-9)


def test_overlapping_phases_take_the_longer():
    phases = [
        {"kind": "compute", "bytes": "10MB", "cycles_per_byte": 100},
        {"kind": "read", "bytes": "10MB", "overlap": True},
    ]
    res = run(job(phases, hosts=2, host={"clock_ghz": 2.0}))
    compute_s = 10e6 * 100 / 2e9
    assert compute_s > FIO_LATENCY_S + 10e6 / FIO_READ_BPS
    assert res.headline["job_seconds"] == pytest.approx(compute_s, rel=1e-9)


def test_shuffle_moves_every_share_and_ends_when_the_last_arrives():
    phases = [{"kind": "shuffle", "bytes": "3MB"}, {"kind": "shuffle", "bytes": "1MB", "pattern": "to_one", "root": 2}]
    # Buffers that hold every sender's window: no losses, so TCP runs at line rate.
    res = run(job(phases, hosts=4, storage="ramfs", switch={"buffer_per_port": "4MiB"}))
    assert res.headline["drops"] == 0
    # The job ended (the run with it, perhaps with the last ACKs still on the wire).
    assert res.headline["job_seconds"] == pytest.approx(res.summary["simulated_seconds"])
    p = res.tables["phases"]
    assert len(p) == 8
    # A 1 Gbit/s link carries at most 1e9/8 bytes a second: each node sends 3/4 of 3 MB
    # in the all-to-all and the root receives 3 MB in the reduce.
    line_s = 1e9 / 8
    assert p[p.phase == 0].duration_us.max() / 1e6 > 2.25e6 / line_s
    # The root starts its reduce when its own all-to-all is done, and ends when the last
    # sender's data is in: 3 MB into one link after the slowest node's all-to-all.
    all_to_all_end = p[p.phase == 0].duration_us.max() / 1e6
    reduce = p[(p.phase == 1) & (p.host == 2)]
    root = (reduce.start_us.iloc[0] + reduce.duration_us.iloc[0]) / 1e6 - all_to_all_end
    assert root > 3e6 / line_s
    # and not much more: TCP/IP and Ethernet framing cost about 6% on 1,500-byte packets.
    assert root < 1.25 * 3e6 / line_s


def sort_job(technology, storage, cores):
    """A reduced cluster sort: read, shuffle, sort and write 20 MB per node."""
    phases = [
        {"kind": "read", "bytes": "20MB"},
        {"kind": "shuffle", "bytes": "20MB", "overlap": True},
        {"kind": "compute", "bytes": "20MB", "cycles_per_byte": 30},
        {"kind": "write", "bytes": "20MB", "overlap": True},
    ]
    return job(phases, technology=technology, storage=storage, host={"clock_ghz": 1.6, "cores": cores},
               power={"cpu_core_w": 9.0, "storage_w": 6.0})


def test_pcie_beats_1gbe_on_sort_energy_efficiency_at_one_core():
    base = run(sort_job("1gbe", "fusion_io", 1)).headline
    pcie = run(sort_job("pcie_gen2", "fusion_io", 1)).headline
    assert pcie["job_seconds"] < base["job_seconds"]
    # The same work, so efficiency is work per joule: the gain is E_base / E - 1.
    assert base["energy_j"] / pcie["energy_j"] - 1 > 0.3


def test_10gbe_efficiency_falls_below_pcie_as_its_power_rises():
    """10GbE at PCIe's speed (the paper's assumption) but at 17.3 W a node."""
    pcie = run(sort_job("pcie_gen2", "ramfs", 1)).headline
    tengig = sort_job("pcie_gen2", "ramfs", 1)
    tengig["power"].update({"nic_w": 10.0, "switch_port_w": 7.3})
    ten = run(tengig).headline
    assert ten["job_seconds"] == pytest.approx(pcie["job_seconds"], rel=1e-12)
    assert ten["energy_j"] > pcie["energy_j"]
    assert ten["network_power_per_server_w"] == pytest.approx(17.3)
