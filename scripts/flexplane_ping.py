#!/usr/bin/env python3
"""Flexplane's ping observation (section 5.2) with wscsim's emulator: ping's average round
trip with one ping every 2 ms and one every 50 us, through the emulated fabric (one
switch, 10 Gbit/s links, DropTail) and through a direct veth pair between the same two
namespaces. Flexplane's network gave 77 us and 14 us: real endpoints answer faster when
they are kept busy, which is why its small flows' normalised completion times start near
2.5 rather than 1.

    .venv/bin/python scripts/flexplane_ping.py --out results/flexplane_ping   # as root; needs ping

Writes ping.json and prints a table. A tool for developers, not a test: docs/emulation.md
records its output.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

from emulation_runs import PIN_PROGRAMS, arguments, emulate_pinned, measure, veth_pair

# (interval in seconds, pings): the paper's two rates, about a second of pings each at
# the faster rate's achieved pace and two seconds at the slower.
INTERVALS = [(0.002, 1_000), (0.00005, 20_000)]
LINK = {"rate": "10Gbps", "delay": "100ns"}


def ping_command(interval_s: float, count: int) -> str:
    return f"{PIN_PROGRAMS} ping -q -i {interval_s} -c {count} {{ip:1}}"


def parse(output: str) -> dict | None:
    """ping's summary: round-trip minimum, average, maximum and mean deviation in us, and
    the packets received."""
    m = re.search(r"= ([0-9.]+)/([0-9.]+)/([0-9.]+)/([0-9.]+) ms", output)
    got = re.search(r"(\d+) received", output)
    if not m or not got:
        return None
    low, avg, high, mdev = (float(v) * 1000 for v in m.groups())
    return {"min_us": low, "avg_us": avg, "max_us": high, "mdev_us": mdev, "received": int(got.group(1))}


def emulated(interval_s: float, count: int, work: Path, busy_poll: bool) -> dict | None:
    sc = {
        "name": "flexplane-ping",
        "duration": "30s",
        "topology": {"kind": "single_switch", "hosts": 2, "link": LINK},
        "workload": {"kind": "none"},
        "emulation": {"busy_poll": busy_poll, "apps": [
            {"hosts": [0], "command": ping_command(interval_s, count), "start": "0.5s", "capabilities": ["net_raw"]},
        ]},
    }
    out = emulate_pinned(sc, work / f"ping-{round(interval_s * 1e6)}us", check=False)
    return parse((out / "programs" / "app0-host0.out").read_text())


def direct(interval_s: float, count: int) -> dict | None:
    """The same namespaces and addresses, joined by a veth pair instead of the emulator."""
    from wscsim import emulation as em

    with veth_pair() as ns:
        time.sleep(0.2)
        command = ping_command(interval_s, count).replace("{ip:1}", em.host_ip(1)).split()
        try:
            r = subprocess.run(["ip", "netns", "exec", ns.names[0], *command], capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            return None
        return parse(r.stdout + r.stderr)


def main() -> int:
    args = arguments(__doc__.splitlines()[0], "folder for ping.json", "ping")
    if args is None:
        return 2
    out = Path(args.out)
    points = measure(INTERVALS, lambda case, work: {
        "interval_us": case[0] * 1e6, "pings": case[1],
        "emulated": emulated(*case, work, args.busy_poll), "direct": direct(*case)})
    (out / "ping.json").write_text(json.dumps({"points": points}, indent=2) + "\n")
    print("| one ping every | emulated: average (min, mdev) | direct: average (min, mdev) |")
    print("| --- | --- | --- |")
    fmt = lambda q: f"{q['avg_us']:.0f} ({q['min_us']:.0f}, {q['mdev_us']:.0f}) us" if q else "no result"  # noqa: E731
    for pt in points:
        print(f"| {pt['interval_us']:g} us | {fmt(pt['emulated'])} | {fmt(pt['direct'])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
