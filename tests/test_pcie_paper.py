"""The PCIe paper's sort and grep (pcie_sort, pcie_grep) against its Tables 2 and 3, at a
fifth of the data: signs and orderings, not values (docs/energy.md compares the values)."""

import copy

import pytest

import wscsim
from wscsim.scenario import load

# Table 2 (sort): gain over 1GbE / Fusion-IO / 1 core, % by (network, storage) and cores 1, 2, 4.
TABLE_2 = {
    ("1GbE", "fusion_io"): (0, -25, -51), ("1GbE", "ramfs"): (12, 11, -14),
    ("10GbE", "fusion_io"): (4, -5, -31), ("10GbE", "ramfs"): (16, 46, 33),
    ("PCIe", "fusion_io"): (83, 45, -9), ("PCIe", "ramfs"): (105, 124, 78),
}
# The one cell whose sign wscsim does not reproduce (docs/energy.md says why).
SORT_SIGN_DIFFERS = {("PCIe", "fusion_io", 4)}


def scaled(name: str, factor: float) -> dict:
    """The bundled scenario with every phase's bytes scaled (decimal units, as written)."""
    sc = copy.deepcopy(load(name))
    lists = [sc["workload"]["phases"]] + [c["workload.phases"] for c in sc["sweep"].get("cases", []) if "workload.phases" in c]
    for phases in lists:
        for p in phases:
            value, unit = p["bytes"][:-2], p["bytes"][-2:]
            p["bytes"] = f"{float(value) * factor:g}{unit}"
    return sc


def gains(points, keys, base):
    e = {tuple(r[k] for k in keys): r["headline_energy_j"] for r in points.to_dict("records")}
    return {k: 100 * (e[base] / v - 1) for k, v in e.items()}


@pytest.fixture(scope="module")
def sort_gains():
    pts = wscsim.run(scaled("pcie_sort", 0.2), plots=False).tables["points"]
    return gains(pts, ["case", "storage", "cores"], ("1GbE", "fusion_io", 1))


def test_sort_gains_have_table_2s_signs(sort_gains):
    for (net, store), row in TABLE_2.items():
        for cores, paper in zip((1, 2, 4), row):
            k = (net, store, cores)
            if abs(paper) < 10 or k in SORT_SIGN_DIFFERS:
                continue  # near zero, a sign says nothing
            assert (sort_gains[k] > 0) == (paper > 0), (k, sort_gains[k], paper)


def test_sort_orderings_of_table_2(sort_gains):
    g = sort_gains
    for store in ("fusion_io", "ramfs"):
        for cores in (1, 2, 4):
            # PCIe is the most efficient network, 10GbE (PCIe's speed at 17 times its
            # power) next, except where 1GbE's low power wins on a slow disk.
            assert g[("PCIe", store, cores)] > g[("10GbE", store, cores)]
            assert g[("PCIe", store, cores)] > g[("1GbE", store, cores)]
            # RAMFS is at least as efficient as Fusion-IO on every network.
            for net in ("1GbE", "10GbE", "PCIe"):
                assert g[(net, "ramfs", cores)] > g[(net, "fusion_io", cores)]
    # The best configuration is PCIe with RAMFS, at 1 or 2 cores; 4 cores cost more than
    # they save.
    best = max(g, key=g.get)
    assert best[:2] == ("PCIe", "ramfs") and best[2] in (1, 2)
    assert g[("PCIe", "ramfs", 4)] < g[("PCIe", "ramfs", 2)]


def test_grep_pcie_gains_and_cores_follow_table_3():
    pts = wscsim.run(scaled("pcie_grep", 0.2), plots=False).tables["points"]
    for variant in ("LoN LoC", "LoN HiC", "HiN LoC", "HiN HiC"):
        mine = pts[pts["case"] == variant]
        g = gains(mine, ["technology", "cores"], ("1gbe", 1))
        # PCIe is more efficient than 1GbE at every core count (Table 3's PCIe columns are
        # all above its 1GbE ones).
        for cores in (1, 2):
            assert g[("pcie_gen2", cores)] > g[("1gbe", cores)], (variant, cores)
        high_compute = variant.endswith("HiC")
        # High compute gains most from 4 cores (Table 3's HiC rows peak there).
        if high_compute:
            assert g[("pcie_gen2", 4)] > g[("pcie_gen2", 2)], variant
        # With high compute the network hardly matters for speed (< 6% speedup, section
        # 4.3): PCIe's gain at one core is its lower power, about 24.9 / 22 - 1 = 13%.
        if high_compute:
            assert 5 < g[("pcie_gen2", 1)] < 25, (variant, g)
