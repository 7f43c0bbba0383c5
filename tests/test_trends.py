"""Seed trends on reduced sizes: DIABLO's incast collapse (section 4.1, Figure 6a)."""

import pytest

from conftest import run
from wscsim.plots import incast_goodput

SENDERS = [1, 2, 4, 8, 16, 24]


def incast(buffer: str, rto_min: str, iterations: int = 10) -> dict:
    return {
        "name": "incast-trend",
        "duration": "60s",
        "topology": {"kind": "single_switch", "hosts": 25, "link": {"rate": "1Gbps", "delay": "500ns"}},
        "switch": {"buffer": "per_input_port", "buffer_per_port": buffer, "port_to_port_latency": "1us"},
        "transport": {"rto_min": rto_min},
        "workload": {"kind": "incast", "block": "256KiB", "iterations": iterations},
        "metrics": {"max_queue_samples": 0},
        "sweep": {"workload.senders": SENDERS},
    }


def goodput_by_senders(sc: dict) -> dict:
    res = run(sc, workers=2)
    g = incast_goodput(res.incast, ["senders"])
    return dict(zip(g["senders"], g["goodput_mbps"]))


@pytest.fixture(scope="module")
def shallow_200ms():
    return goodput_by_senders(incast("4KiB", "200ms"))


def test_shallow_buffers_with_200ms_rto_collapse(shallow_200ms):
    g = shallow_200ms
    peak = max(g.values())
    # One sender runs near line rate (940 Mbit/s of TCP payload at most).
    assert g[1] > 850
    assert g[24] < 0.3 * peak, g


def test_1ms_rto_collapses_much_less(shallow_200ms):
    g = goodput_by_senders(incast("4KiB", "1ms"))
    # Tolerance: at 24 senders the 1 ms floor keeps at least five times the goodput.
    assert g[24] > 5 * shallow_200ms[24], (g, shallow_200ms)
    assert g[24] > 0.3 * max(g.values()), g


def test_deep_buffers_collapse_much_less(shallow_200ms):
    g = goodput_by_senders(incast("256KiB", "200ms"))
    assert g[24] > 0.8 * max(g.values()), g
    assert g[24] > 5 * shallow_200ms[24]
