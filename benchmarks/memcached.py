#!/usr/bin/env python3
"""memcached at DIABLO's scales (section 4.2): wall time, events/s, packet-hops/s and peak
memory of the diablo_memcached setup at 500, 1,000 and 2,000 nodes over TCP and UDP, and a
12,000-server array (DIABLO's largest design, 384 racks) under a light load to show how
memory grows. DIABLO's FPGAs needed about 50 minutes per simulated second at 2,000 nodes.

    python3 benchmarks/memcached.py [--record] [--requests N] [--racks R ...] [--protocols P ...]

`--requests` is the number of requests per client (DIABLO: 30,000; default 2,000 so the
benchmark runs in a few minutes; the full run's wall time grows about linearly with it).
`--racks` and `--protocols` pick cases (default: 16, 32 and 64 racks, TCP and UDP, and the
12,000-server array); the full-length 2,000-node runs are
`--requests 30000 --racks 64` (about 20 minutes for both protocols).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from run import native, record  # noqa: E402


def scenario(racks: int, proto: str, requests: int, gap_scale: float | None = None) -> dict:
    sc = tomllib.loads((ROOT / "python" / "wscsim" / "scenarios" / "diablo_memcached.toml").read_text())
    del sc["sweep"]
    sc["topology"]["racks"] = racks
    sc["transport"]["kind"] = proto
    sc["workload"]["requests_per_client"] = requests
    if gap_scale is not None:
        sc["workload"]["gap_scale"] = gap_scale
    sc["metrics"] = {"max_queue_samples": 0}
    return sc


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--record", action="store_true")
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--racks", type=int, nargs="+", choices=(16, 32, 64, 384), default=None)
    ap.add_argument("--protocols", nargs="+", choices=("tcp", "udp"), default=("tcp", "udp"))
    args = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "-p", "wscsim", "--quiet"], cwd=ROOT, check=True)
    lines = [
        "| setup | hosts | requests | simulated s | wall s | events/s | packet-hops/s | peak MiB | p99 us |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    racks = args.racks or (16, 32, 64, 384)
    cases = [(r, p, args.requests, None) for r in racks if r != 384 for p in args.protocols]
    if 384 in racks:
        # DIABLO's 12,000-server design, 20 requests per client at a tenth of the load.
        cases.append((384, "udp", 20, 1600.0))
    for racks, proto, n, gap in cases:
        r = native(scenario(racks, proto, n, gap))
        h = r["headline"]
        lines.append(
            f"| {racks} racks, {proto}{'' if gap is None else f', gap x{gap:.0f}'} | {r['hosts']} | {h.get('requests', 0):,} | {r['simulated_seconds']:.2f} | "
            f"{r['wall_seconds']:.1f} | {r['events_per_second'] / 1e6:.2f} M | {r['packet_hops_per_second'] / 1e6:.2f} M | {r['peak_rss_mib']:.0f} | {h.get('p99_latency_us', float('nan')):.0f} |"
        )
        print(lines[-1], flush=True)
    table = "\n".join(lines)
    if args.record:
        picked = (f" --racks {' '.join(map(str, args.racks))}" if args.racks else "") + (
            f" --protocols {' '.join(args.protocols)}" if tuple(args.protocols) != ("tcp", "udp") else ""
        )
        record("memcached at scale, ", f"python3 benchmarks/memcached.py --record --requests {args.requests}{picked}", table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
