"""The PCIe fabric's DMA (transport/dma.rs) against its own parameters, worked by hand:
TLP framing, the local and remote read round trips, windows; then against the PCIe
paper's measurements (1.56 GB/s writes, 1.06 GB/s reads, about 2 us loads)."""

import pytest

from conftest import run

LINK_BPS = 16e9  # PCIe Gen2 x4: 4 lanes x 5 GT/s after 8b/10b
TLP_PAYLOAD, TLP_HEADER = 256, 24
ADAPTER_S, HOST_READ_S, CPU_TO_PORT_S = 140e-9, 1e-6, 100e-9  # [dma] defaults
TAGS, REQUEST = 4, 512
CABLE_S, SWITCH_S = 5e-9, 140e-9


def frame(payload: int) -> int:
    """Bytes of `payload` on a PCIe link: one 24-byte header per TLP of up to 256 bytes."""
    return payload + max(1, -(-payload // TLP_PAYLOAD)) * TLP_HEADER


def ser_s(payload: int) -> float:
    return frame(payload) * 8 / LINK_BPS


def dma(op, size="64MiB", count=4, peers=None, dma_cfg=None, forwarding="store_and_forward"):
    sc = {
        "name": "dma", "seed": 1, "duration": "10s",
        "topology": {"kind": "single_switch", "hosts": 4, "link": {"technology": "pcie_gen2", "delay": "5ns"}},
        "switch": {"forwarding": forwarding, "port_to_port_latency": "140ns"},
        "workload": {"kind": "dma", "op": op, "size": size, "count": count},
    }
    if peers:
        sc["workload"]["peers"] = peers
    if dma_cfg:
        sc["dma"] = dma_cfg
    return run(sc).headline


def remote_round_trip_s(payload: int) -> float:
    """A read request out (header only) and its completion back, each crossing two links
    store-and-forward with the switch between, and the peer's adapter and host between."""
    one_way = lambda p: 2 * (ser_s(p) + CABLE_S) + SWITCH_S
    return one_way(0) + 2 * ADAPTER_S + HOST_READ_S + one_way(payload)


def test_writes_are_bound_by_the_local_fetch_or_the_link():
    # Fetching from local memory: four 512-byte requests per local round trip.
    local_s = 2 * ADAPTER_S + HOST_READ_S
    fetch_gbs = TAGS * REQUEST / local_s / 1e9
    assert fetch_gbs < REQUEST / ser_s(REQUEST) / 1e9  # with the defaults, fetching binds
    h = dma("write")
    assert h["dma_write_gbytes_per_s"] == pytest.approx(fetch_gbs, rel=0.01)
    assert h["dma_packets_dropped"] == 0
    # A faster host: the link binds, at the TLPs' share of 16 Gbit/s.
    h = dma("write", dma_cfg={"host_read": "200ns"})
    assert h["dma_write_gbytes_per_s"] == pytest.approx(REQUEST / ser_s(REQUEST) / 1e9, rel=0.01)
    assert REQUEST / frame(REQUEST) == pytest.approx(512 / 560)


def test_reads_take_a_round_trip_per_four_requests():
    h = dma("read")
    expected = TAGS * REQUEST / remote_round_trip_s(REQUEST) / 1e9
    assert h["dma_read_gbytes_per_s"] == pytest.approx(expected, rel=0.01)
    # More tags in flight, more bandwidth, until the link binds.
    more = dma("read", dma_cfg={"read_tags": 8})["dma_read_gbytes_per_s"]
    assert more > 1.5 * h["dma_read_gbytes_per_s"]


def test_a_load_is_the_round_trip_plus_the_way_to_the_core():
    h = dma("load", count=50)
    # The first load also remaps a window; the others do not.
    per_load_s = remote_round_trip_s(4) + 2 * (ADAPTER_S + CPU_TO_PORT_S)
    mean_s = (49 * per_load_s + per_load_s + 5e-6) / 50
    assert h["dma_load_mean_us"] * 1e-6 == pytest.approx(mean_s, rel=1e-3)


def test_more_peers_than_windows_remap_on_every_transfer():
    two = dma("write", size="64KiB", count=60, peers=[1, 2])
    three = dma("write", size="64KiB", count=60, peers=[1, 2, 3])
    assert two["dma_remaps"] == 2 and three["dma_remaps"] == 60
    # Each transfer waits dma.remap (5 us) more, the first few aside.
    assert (three["dma_write_mean_us"] - two["dma_write_mean_us"]) == pytest.approx(5.0 * (60 - 2) / 60, rel=0.01)
    four_windows = dma("write", size="64KiB", count=60, peers=[1, 2, 3], dma_cfg={"windows": 4})
    assert four_windows["dma_remaps"] == 3


def test_the_paper_s_fabric_figures():
    """Byrne et al., section 3: DMA writes at 1.56 GB/s, reads at 1.06 GB/s, a remote
    4-byte load in about 2 us, on the bundled fabric (cut-through switch)."""
    w = dma("write", forwarding="cut_through")["dma_write_gbytes_per_s"]
    r = dma("read", forwarding="cut_through")["dma_read_gbytes_per_s"]
    load = dma("load", count=100, forwarding="cut_through")["dma_load_mean_us"]
    assert w == pytest.approx(1.56, rel=0.05)
    assert r == pytest.approx(1.06, rel=0.05)
    assert 1.5 < load < 2.5
    assert w > r  # a read's round trip costs what a write's one way does not


def test_a_shuffle_by_dma_moves_every_share():
    phases = [{"kind": "shuffle", "bytes": "30MB", "via": "dma"}]
    sc = {
        "name": "dma-shuffle", "seed": 1, "duration": "10s",
        "topology": {"kind": "single_switch", "hosts": 3, "link": {"technology": "pcie_gen2", "delay": "5ns"}},
        "switch": {"forwarding": "cut_through", "port_to_port_latency": "140ns"},
        "workload": {"kind": "job", "phases": phases},
    }
    res = run(sc)
    d = res.tables["dma"]
    # Three nodes each keep a third of their 30 MB and write 10 MB to each of the others.
    assert len(d) == 6 and (d["bytes"] == 10_000_000).all()
    assert res.headline["dma_packets_dropped"] == 0
    # Each node sends 20 MB and receives 20 MB; its link carries at most 512/560 of 2 GB/s.
    assert res.headline["job_seconds"] > 20e6 / (REQUEST / ser_s(REQUEST))


def test_credits_hold_senders_back_instead_of_dropping():
    """Two nodes write to a third at once, each faster than half its link: PCIe drops
    nothing, so the receiver's link is shared, not overrun, with the switch's default
    buffers."""
    phases = [{"kind": "shuffle", "bytes": "40MB", "pattern": "to_one", "root": 0, "via": "dma"}]
    sc = {
        "name": "dma-incast", "seed": 1, "duration": "10s",
        "topology": {"kind": "single_switch", "hosts": 3, "link": {"technology": "pcie_gen2", "delay": "5ns"}},
        "workload": {"kind": "job", "phases": phases},
    }
    res = run(sc)
    h = res.headline
    assert h["dma_packets_dropped"] == 0 and h["drops"] == 0
    link_gbs = REQUEST / ser_s(REQUEST) / 1e9
    # Each sender gets about half the receiver's link; together they fill it.
    assert h["dma_write_gbytes_per_s"] == pytest.approx(link_gbs / 2, rel=0.03)
    assert h["job_seconds"] == pytest.approx(80e6 / (link_gbs * 1e9), rel=0.03)


@pytest.mark.parametrize("model, technology, cut_through_s", [("pex8696", "pcie_gen2", 140e-9), ("is5024", "ib_qdr_4x", 100e-9)])
def test_a_switch_model_sets_forwarding_and_latency_unless_given(model, technology, cut_through_s):
    def resolved(switch):
        sc = {
            "name": "model", "seed": 1, "duration": "1ms",
            "topology": {"kind": "single_switch", "hosts": 2, "link": {"technology": technology}},
            "switch": switch,
            "workload": {"kind": "job", "phases": [{"kind": "shuffle", "bytes": "10KB"}]},
        }
        return run(sc).summary["scenario"]["switch"]

    s = resolved({"model": model})
    assert (s["forwarding"], s["port_to_port_latency"]) == ("cut_through", f"{cut_through_s * 1e9:.0f}ns")
    s = resolved({"model": model, "forwarding": "store_and_forward", "port_to_port_latency": "2us"})
    assert (s["forwarding"], s["port_to_port_latency"]) == ("store_and_forward", "2us")
    # Without a model, DIABLO's store-and-forward gigabit switch.
    s = resolved({})
    assert (s["model"], s["forwarding"], s["port_to_port_latency"]) == ("generic", "store_and_forward", "1us")
