#!/usr/bin/env python3
"""The emulator's capacity: the highest rate of real frames `wscsim emulate` carries in
real time on one core, with its lateness within bound, for 1,500-byte and 64-byte frames.

For each frame size and each offered rate on a ladder, one emulation: an iperf3 UDP
client on host 0 sends to an iperf3 server on host 1 for a few seconds through one switch
with 100 Gbit/s links (so the fabric is never the limit). The emulator runs pinned to
CPU 0, the programs to CPU 1. A rate is carried when the emulator stays within its
lateness bound (at most 1% of frames more than 100 us late) and iperf3 loses under 1%.

    .venv/bin/python benchmarks/emulate_capacity.py               # as root; a few minutes; needs iperf3
    .venv/bin/python benchmarks/emulate_capacity.py --seconds 2 --sizes 1500

A tool for developers, not a test: the figures are this machine's. Its output is recorded
in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

LADDER_PPS = [10_000, 25_000, 50_000, 100_000, 200_000, 400_000, 800_000]
ETH_IP_UDP = 14 + 20 + 8  # a frame's bytes before its UDP payload (FCS not counted)


def scenario(frame_bytes: int, pps: int, seconds: float) -> str:
    payload = frame_bytes - 4 - ETH_IP_UDP  # frame sizes count the FCS, as Ethernet's do
    bps = pps * payload * 8
    server = "taskset -c 1 iperf3 -s -1 --json"
    client = f"taskset -c 1 iperf3 -c {{ip:1}} -u -b {bps} -l {payload} -t {seconds} --json"
    return f"""
name = "emulate-capacity"
duration = "{seconds + 5}s"
[topology]
kind = "single_switch"
hosts = 2
link = {{ rate = "100Gbps", delay = "1us" }}
[switch]
buffer_per_port = "16MiB"
[workload]
kind = "none"
[[emulation.apps]]
hosts = [1]
command = "{server}"
[[emulation.apps]]
hosts = [0]
start = "0.5s"
command = "{client}"
"""


def one(frame_bytes: int, pps: int, seconds: float, work: Path) -> dict:
    sc = work / f"cap-{frame_bytes}-{pps}.toml"
    sc.write_text(scenario(frame_bytes, pps, seconds))
    out = work / f"out-{frame_bytes}-{pps}"
    r = subprocess.run(["taskset", "-c", "0", sys.executable, "-m", "wscsim.cli", "emulate", str(sc), "--out", str(out), "-q"],
                       capture_output=True, text=True)
    if r.returncode not in (0, 1):
        raise SystemExit(f"emulate failed: {r.stderr}")
    e = json.loads((out / "summary.json").read_text())["emulation"]
    server = json.loads((out / "programs" / "app0-host1.out").read_text() or "{}")
    udp = (server.get("end") or {}).get("sum") or {}
    lost = udp.get("lost_percent", 100.0)
    return {"frame_bytes": frame_bytes, "offered_pps": pps, "frames_in": e["frames_in"], "late_fraction": e["late_fraction"],
            "lateness_p99_us": e["lateness_p99_us"], "within_bound": e["within_bound"], "lost_percent": lost,
            "carried_gbps": e["bytes_out"] * 8 / seconds / 1e9}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=3.0, help="length of each offered load (default 3)")
    p.add_argument("--sizes", type=int, nargs="*", default=[1500, 64], help="frame sizes in bytes, FCS included (default 1500 64)")
    args = p.parse_args()
    if shutil.which("iperf3") is None or shutil.which("taskset") is None:
        print("error: needs iperf3 and taskset (apt-get install iperf3 util-linux)", file=sys.stderr)
        return 2
    print("| frame | offered pkt/s | frames in | lost | late > 100 us | p99 lateness | carried | within bound |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as work:
        for size in args.sizes:
            for pps in LADDER_PPS:
                r = one(size, pps, args.seconds, Path(work))
                ok = r["within_bound"] and r["lost_percent"] < 1.0
                print(f"| {size} B | {pps:,} | {r['frames_in']:,} | {r['lost_percent']:.2f}% | {100 * r['late_fraction']:.2f}% "
                      f"| {r['lateness_p99_us']:.1f} us | {r['carried_gbps']:.3f} Gbit/s | {'yes' if ok else 'no'} |", flush=True)
                if not ok:
                    break
    return 0


if __name__ == "__main__":
    sys.exit(main())
