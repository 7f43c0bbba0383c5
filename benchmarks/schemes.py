#!/usr/bin/env python3
"""Throughput per data-plane scheme, as in Flexplane's Figure 9: one rack of 32 hosts on
one 10 Gbit/s switch at 90% load, in two ways:

- closed loop: Poisson flows between random hosts (web-search sizes), each scheme with
  its transport (TCP senders and receivers, ACKs, timers simulated too);
- open loop: Poisson UDP datagrams of 1500-byte packets, each to a random other host,
  Flexplane's own stress load (its endpoints were real machines, load came from other
  cores, and the emulator only moved abstract packets through the switch), under the
  event engine and under the timeslot engine (`engine.mode = "timeslots"`, Flexplane's
  emulator model).

Reports simulated switch throughput per wall-clock second on one core (Flexplane emulated
about 120 Gbit/s per core for DropTail and DCTCP and 85 Gbit/s for pFabric, in real time),
and the slowdown of a scheme written in Python against the same scheme built in.

    python3 benchmarks/schemes.py [--record]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from run import native, record  # noqa: E402

SCHEMES = {
    "droptail": ({"kind": "droptail"}, {"variant": "cubic"}),
    "red_ecn": ({"kind": "red", "ecn": True}, {"variant": "cubic", "ecn": True}),
    "dctcp": ({"kind": "dctcp"}, {"variant": "dctcp"}),
    "priority": ({"kind": "priority", "queues": 8}, {"variant": "cubic"}),
    "drr": ({"kind": "drr", "queues": 64}, {"variant": "cubic"}),
    "hull": ({"kind": "hull"}, {"variant": "dctcp"}),
    "pfabric": ("pfabric", {"variant": "pfabric", "initial_window": 12, "rto_min": "45us"}),
}


def rack(scheme, transport, duration="50ms") -> dict:
    t = {"rto_min": "1ms", **transport}
    sc = {
        "name": "rack32",
        "seed": 1,
        "duration": duration,
        "topology": {"kind": "single_switch", "hosts": 32, "link": {"rate": "10Gbps", "delay": "500ns"}},
        "switch": {"scheme": scheme, "buffer_per_port": "36KB" if scheme == "pfabric" else "1MB"},
        "transport": t,
        "workload": {"kind": "flows", "size_cdf": "websearch", "load": 0.9},
        "metrics": {"max_queue_samples": 0},
    }
    if scheme == "pfabric":
        sc["host"] = {"nic_scheme": "pfabric"}
    return sc


def open_loop(scheme, duration="50ms") -> dict:
    """The same rack under open-loop UDP: every host sends 9 Gbit/s of IP traffic in Poisson
    gaps, each datagram to a uniformly random other host."""
    sc = rack(scheme, {}, duration)
    sc.pop("host", None)
    sc["transport"] = {"kind": "udp"}
    sc["workload"] = {"kind": "udp", "destination": "random", "rate": "9Gbps", "packet_size": 1472, "arrival": "poisson"}
    return sc


def open_loop_timeslots(scheme, duration="50ms") -> dict:
    """The open-loop rack under the timeslot engine (Flexplane's emulator model: slots of
    one full-size frame, no time inside a slot; docs/model-reference.md)."""
    sc = open_loop(scheme, duration)
    sc["engine"] = {"mode": "timeslots"}
    return sc


def python_slowdown() -> tuple[float, float]:
    """Wall seconds of the same scenario with the built-in priority scheme and with the
    Python prototype in examples/strict_priority.py, both through the Python API."""
    import wscsim

    base = rack({"kind": "priority", "queues": 2, "push_out": False}, {"variant": "cubic"}, duration="5ms")
    py = rack({"kind": "python", "class": str(ROOT / "examples" / "strict_priority.py") + ":StrictPriority"}, {"variant": "cubic"}, duration="5ms")
    wscsim.run(rack({"kind": "priority", "queues": 2}, {"variant": "cubic"}, duration="1ms"))  # warm-up: imports
    out = []
    for sc in (base, py):
        t0 = time.perf_counter()
        r = wscsim.run(sc, allow_python=True)
        out.append((time.perf_counter() - t0, r.summary["packet_hops"]))
    assert out[0][1] == out[1][1], "the Python scheme must forward exactly like the built-in one"
    return out[0][0], out[1][0]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "-p", "wscsim", "--quiet"], cwd=ROOT, check=True)
    lines = [
        "| scheme | closed loop (TCP flows): switch Gbit/s per wall s | packet-hops/s | wall s | open loop (UDP): switch Gbit/s per wall s | packet-hops/s | wall s "
        "| open loop, timeslot engine: switch Gbit/s per wall s | packet-hops/s | wall s | peak MiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, (scheme, transport) in SCHEMES.items():
        c = native(rack(scheme, transport))
        o = native(open_loop(scheme))
        t = native(open_loop_timeslots(scheme))
        peak = max(c["peak_rss_mib"], o["peak_rss_mib"], t["peak_rss_mib"])
        cells = [f"{r['switch_gbit_per_wall_second']:.0f} | {r['packet_hops_per_second'] / 1e6:.2f} M | {r['wall_seconds']:.2f}" for r in (c, o, t)]
        lines.append(f"| {name} | {' | '.join(cells)} | {peak:.0f} |")
    table = "\n".join(lines)
    b, p = python_slowdown()
    py_line = f"Python scheme (examples/strict_priority.py) against the built-in priority scheme, same 5 ms run through the Python API: {p:.2f} s against {b:.2f} s wall ({p / b:.0f}x slower)."
    print(table)
    print(py_line)
    if args.record:
        record("Schemes, ", "python3 benchmarks/schemes.py --record", f"{table}\n\n{py_line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
