"""Hadoop-style sort (workload kind "mapreduce"): task times against their formulas, the
shuffle's bytes conserved over TCP and DMA, and the PCIe paper's Table 4 trends at a twentieth
of the data (docs/energy.md compares the values)."""

import copy

import pytest

from conftest import run
from wscsim.scenario import load

# Table 1 of the PCIe paper: Fusion-IO reads at 0.75 GB/s and writes at 0.7 GB/s; the
# access latency is the device's (docs/energy.md).
FIO_READ_BPS, FIO_WRITE_BPS, FIO_LATENCY_S = 750e6, 700e6, 26e-6


def mapreduce(hosts=3, technology="1gbe", host=None, **workload):
    return {
        "name": "mapreduce",
        "seed": 1,
        "duration": "600s",
        "topology": {"kind": "single_switch", "hosts": hosts, "link": {"technology": technology}},
        "host": {"storage": "fusion_io", "clock_ghz": 2.0, "cores": 2, **(host or {})},
        "metrics": {"max_queue_samples": 0},
        "workload": {"kind": "mapreduce", **workload},
    }


def test_one_slot_runs_maps_one_after_another_then_the_reduce():
    # One node, one map slot, one reduce: 83 MB in 40 MB splits (40, then 43: 43/40 is
    # within Hadoop's 10% slop) over 16 MB blocks. Each map starts (0.5 s), reads one
    # request per block it touches, computes on one core, writes; the reduce (started at
    # 0) then merges everything and writes it.
    res = run(mapreduce(hosts=2, nodes=[0], data="83MB", file="83MB", block="16MB", split="40MB", map_slots=1, reduces=1,
                        task_startup="0.5s", map_cycles_per_byte=10, reduce_cycles_per_byte=4))
    tasks = res.tables["tasks"]
    maps = tasks[tasks["kind"].astype(str) == "map"]
    assert maps["bytes"].tolist() == [40e6, 43e6]

    def map_s(nbytes, pieces):
        return 0.5 + pieces * FIO_LATENCY_S + nbytes / FIO_READ_BPS + nbytes * 10 / 2e9 + FIO_LATENCY_S + nbytes / FIO_WRITE_BPS

    # 0..40 MB touches blocks 0, 1, 2 (3 reads); 40..83 MB blocks 2 to 5 (4 reads).
    assert maps["duration_us"].tolist() == pytest.approx([1e6 * map_s(40e6, 3), 1e6 * map_s(43e6, 4)], rel=1e-9)
    maps_done = map_s(40e6, 3) + map_s(43e6, 4)
    h = res.headline
    assert h["mapreduce_maps_done_seconds"] == pytest.approx(maps_done, rel=1e-9)
    reduce_s = 83e6 * 4 / 2e9 + FIO_LATENCY_S + 83e6 / FIO_WRITE_BPS
    assert h["job_seconds"] == pytest.approx(maps_done + reduce_s, rel=1e-9)
    assert h["mapreduce_segments_sent"] == 0


@pytest.mark.parametrize("technology", ["1gbe", "pcie_gen2"])
def test_every_map_output_byte_reaches_one_reduce(technology):
    res = run(mapreduce(technology=technology, data="81MB", file="40.5MB", block="8MB", split="10MB", reduces=2,
                        task_startup="10ms", map_cycles_per_byte=1, reduce_cycles_per_byte=1))
    tasks = res.tables["tasks"]
    maps = tasks[tasks["kind"].astype(str) == "map"]
    reduces = tasks[tasks["kind"].astype(str) == "reduce"]
    # 40.5 MB files in 10 MB splits: 10, 10, 10, then 10.5 (within the slop); 2 files.
    assert len(maps) == 3 * 2 * 4
    assert maps["bytes"].sum() == reduces["bytes"].sum() == 3 * 81e6
    # Every reduce gets an even share of every map (6 reduces, remainders to the first).
    assert reduces["bytes"].max() - reduces["bytes"].min() <= len(maps)
    # Each map sends one segment to each reduce on the other two nodes.
    assert res.headline["mapreduce_segments_sent"] == len(maps) * 4
    if technology == "pcie_gen2":
        dma = res.tables["dma"]
        assert len(dma) == len(maps) * 4 and dma["bytes"].sum() == pytest.approx(3 * 81e6 * 4 / 6, abs=len(maps))


def test_the_job_ends_the_run_and_its_energy_is_the_jobs():
    res = run(mapreduce(data="30MB", file="30MB", block="10MB", split="10MB", task_startup="1ms"))
    h = res.headline
    assert h["job_seconds"] == pytest.approx(res.summary["simulated_seconds"], rel=1e-9)
    assert h["mapreduce_shuffle_done_seconds"] >= h["mapreduce_maps_done_seconds"]
    assert h["energy_j"] == pytest.approx(h["mean_power_w"] * h["job_seconds"], rel=1e-9)


SCALE = 20


def scaled_table_4() -> dict:
    """pcie_hadoop at a twentieth of every size and of the task start-up: the same tasks in
    the same waves, each a twentieth as long."""
    sc = copy.deepcopy(load("pcie_hadoop"))
    w = sc["workload"]
    w.update(data=f"{10 / SCALE:g}GB", file=f"{1000 / SCALE:g}MB", task_startup=f"{4 / SCALE:g}s")
    sweep = sc["sweep"]
    sweep["workload.block"] = [f"{int(b[:-3]) / SCALE:g}MiB" for b in sweep["workload.block"]]
    sweep["workload.split"] = [f"{int(s[:-3]) / SCALE:g}MiB" for s in sweep["workload.split"]]
    w["block"], w["split"] = sweep["workload.block"][0], sweep["workload.split"][0]
    return sc


@pytest.fixture(scope="module")
def table_4():
    pts = run(scaled_table_4(), plots=False).tables["points"]
    unscaled = lambda size: round(float(size.removesuffix("MiB")) * SCALE)  # noqa: E731
    return {(p.case, unscaled(p.block), unscaled(p.split)): p for p in pts.itertuples()}


def test_table_4_pcie_is_faster_and_more_so_with_large_splits(table_4):
    t = {k: p.headline_job_seconds for k, p in table_4.items()}
    speedup = {bs: t[("1GbE", *bs)] / t[("PCIe", *bs)] - 1 for bs in [(256, 256), (256, 550), (512, 550)]}
    # Table 4: 9%, 20%, 16%: PCIe is faster in every setting, least with small splits.
    assert all(s > 0.01 for s in speedup.values()), speedup
    assert speedup[(256, 256)] < speedup[(256, 550)] and speedup[(256, 256)] < speedup[(512, 550)]
    # Larger splits are faster on both networks; the block size matters less than the split.
    for net in ("1GbE", "PCIe"):
        assert t[(net, 256, 550)] < t[(net, 256, 256)]
        assert abs(t[(net, 512, 550)] - t[(net, 256, 550)]) < (t[(net, 256, 256)] - t[(net, 256, 550)]) / 3


def test_table_4_efficiency_gains_exceed_speedups_slightly(table_4):
    # The nodes draw about 80 W, of which the network is 3.9 W (1GbE) or 1 W (PCIe): the
    # gain in work per joule is the speedup and a few percent more (Table 4: 11/24/20% for
    # 9/20/16%).
    for bs in [(256, 256), (256, 550), (512, 550)]:
        gbe, pcie = table_4[("1GbE", *bs)], table_4[("PCIe", *bs)]
        speedup = gbe.headline_job_seconds / pcie.headline_job_seconds - 1
        gain = gbe.headline_energy_j / pcie.headline_energy_j - 1
        assert speedup < gain < speedup + 0.08, (bs, speedup, gain)
