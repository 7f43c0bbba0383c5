#!/usr/bin/env python3
"""The standard speed benchmarks: TCP permutation at 10 Gbit/s on k=4, 8, 12, 16, 24 and 32
fat trees (k=12 and k=24 have about as many hosts as the 512- and 4,096-server tori), the
configuration closest to htsim's published NDP figures at k=8 and k=16 (htsim_k8, htsim_k16),
a 1,000-sender incast, CamCube's all-to-all on 512 and 4,096 servers and its churn run. Runs the native `wscsim-bench` binary (no Python in the loop),
prints events/s, packet-hops/s, simulated-to-wall ratio and peak memory, and with
--record appends the figures to benchmarks/RESULTS.md with the machine they ran on.

    python3 benchmarks/run.py [--record] [--only k8]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / "target" / "release" / "wscsim-bench"


def permutation(k: int, duration: str) -> dict:
    return {
        "name": f"permutation-k{k}",
        "seed": 1,
        "duration": duration,
        "topology": {"kind": "fat_tree", "k": k, "link": {"rate": "10Gbps", "delay": "500ns"}},
        "switch": {"buffer_per_port": "150KiB", "port_to_port_latency": "500ns"},
        "transport": {"variant": "cubic", "rto_min": "1ms"},
        "workload": {"kind": "permutation", "size": "infinite"},
        "metrics": {"max_queue_samples": 0},
    }


def htsim_like(k: int) -> dict:
    """The configuration closest to htsim's NDP permutation figures in issue 17 (k-ary fat
    tree, 100 Gbit/s, 4,000-byte packets, 35-packet queues, 10 ms): TCP (CUBIC) over
    100 Gbit/s jumbo-frame links, 140,000-byte port buffers, MSS 3,960. wscsim has no NDP:
    the packet-hop rate, not the protocol, is what is compared."""
    sc = permutation(k, "10ms")
    sc["name"] = f"htsim-like-k{k}"
    sc["topology"]["link"] = {"technology": "100gbe_jumbo", "delay": "500ns"}
    sc["switch"]["buffer_per_port"] = "140000B"
    sc["transport"]["mss"] = "3960B"
    return sc


def incast_1000() -> dict:
    return {
        "name": "incast-1000",
        "seed": 1,
        "duration": "2s",
        "topology": {"kind": "single_switch", "hosts": 1001, "link": {"rate": "10Gbps", "delay": "500ns"}},
        "switch": {"buffer": "per_input_port", "buffer_per_port": "64KiB", "port_to_port_latency": "100ns"},
        "transport": {"rto_min": "1ms"},
        "workload": {"kind": "incast", "senders": 1000, "block": "64MiB", "iterations": 5},
        "metrics": {"max_queue_samples": 0},
    }


def torus(k: int, duration: str) -> dict:
    """CamCube's all-to-all (Figure 5a): every server sends UDP to random servers at the
    expected rate of the torus."""
    return {
        "name": f"torus-{k}",
        "seed": 1,
        "duration": duration,
        "topology": {"kind": "torus3d", "dims": [k, k, k]},
        "transport": {"kind": "udp"},
        "workload": {"kind": "udp", "destination": "random", "load": 1.0},
        "metrics": {"max_queue_samples": 0},
    }


def churn_512() -> dict:
    """CamCube's churn (Figure 5c) at its highest rate: 512 servers, 15 failures/s, each live
    server sending 1,000 datagrams/s to random keys, keepalive detection and flooding."""
    return {
        "name": "churn-512",
        "seed": 1,
        "duration": "2s",
        "topology": {"kind": "torus3d", "dims": [8, 8, 8]},
        "transport": {"kind": "udp"},
        "workload": {"kind": "udp", "destination": "random_key", "rate": "8.224Mbps", "packet_size": "1000B"},
        "churn": {"rate": 30},
        "metrics": {"max_queue_samples": 0},
    }


def threaded(sc: dict, threads: int) -> dict:
    """`sc` as a partitioned run on `threads` threads (the same results on any number)."""
    sc["name"] += f"-threads{threads}"
    sc["engine"] = {"threads": threads}
    return sc


BENCHES = {
    "k4": lambda: permutation(4, "200ms"),
    "k8": lambda: permutation(8, "50ms"),
    "k12": lambda: permutation(12, "20ms"),
    "k16": lambda: permutation(16, "10ms"),
    "k24": lambda: permutation(24, "5ms"),
    "k32": lambda: permutation(32, "2ms"),
    "k16_threads1": lambda: threaded(permutation(16, "10ms"), 1),
    "k16_threads2": lambda: threaded(permutation(16, "10ms"), 2),
    "k32_threads1": lambda: threaded(permutation(32, "2ms"), 1),
    "k32_threads2": lambda: threaded(permutation(32, "2ms"), 2),
    "htsim_k8": lambda: htsim_like(8),
    "htsim_k16": lambda: htsim_like(16),
    "incast1000": incast_1000,
    "torus512": lambda: torus(8, "100ms"),
    "torus4096": lambda: torus(16, "10ms"),
    "churn512": churn_512,
}


def machine() -> str:
    cpu = "unknown cpu"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def native(sc: dict) -> dict:
    """Runs scenario dict `sc` in the native `wscsim-bench` binary; its JSON figures."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(sc, f)
    try:
        out = subprocess.run([str(BIN), f.name], capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(f.name)
    return json.loads(out)


def record(title: str, command: str, body: str) -> None:
    """Appends a dated section with the commit, machine and command to RESULTS.md."""
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    with open(ROOT / "benchmarks" / "RESULTS.md", "a") as f:
        f.write(f"\n## {title}{datetime.date.today()} at {rev}\n\nMachine: {machine()}. Command: `{command}`.\n\n{body}\n")


def run(name: str) -> dict:
    r = native(BENCHES[name]())
    r["bench"] = name
    r["per_hop_ns"] = 1e9 / r["packet_hops_per_second"] if r["packet_hops_per_second"] else float("nan")
    return r


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--record", action="store_true", help="append the figures to benchmarks/RESULTS.md")
    ap.add_argument("--only", action="append", choices=list(BENCHES), help="run only these")
    args = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "-p", "wscsim", "--quiet"], cwd=ROOT, check=True)
    rows = [run(n) for n in (args.only or BENCHES)]
    header = "| bench | hosts | sim time | wall s | events/s | packet-hops/s | data hops/s | ns/hop | sim/wall | peak MiB |"
    lines = [header, "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['bench']} | {r['hosts']} | {r['simulated_seconds'] * 1e3:.0f} ms | {r['wall_seconds']:.2f} | "
            f"{r['events_per_second'] / 1e6:.2f} M | {r['packet_hops_per_second'] / 1e6:.2f} M | "
            f"{r['data_packet_hops_per_second'] / 1e6:.2f} M | {r['per_hop_ns']:.0f} | "
            f"{r['simulated_to_wall']:.4f} | {r['peak_rss_mib']:.0f} |"
        )
        if not r["invariants_ok"]:
            print(f"warning: invariants failed in {r['bench']}", file=sys.stderr)
    table = "\n".join(lines)
    print(table)
    if args.record:
        record("", "python3 benchmarks/run.py --record", table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
