#!/usr/bin/env python3
"""Flexplane's Figure 3 with wscsim's emulator: sockperf's one-way latency (RTT / 2) of
MTU-sized UDP packets from one client to one server, at several offered rates, through the
emulated fabric (one switch, DropTail) and through a direct veth pair between the same two
namespaces (the "hardware" baseline: no fabric at all, only the kernels).

    .venv/bin/python scripts/flexplane_fig3.py --out results/flexplane_fig3   # as root; needs sockperf

Writes fig3.json (every point), fig3.png (medians, with bars from the minimum to the 99th
percentile, as the paper draws them) and prints a table. wscsim's added latency is the
emulated median less the direct median less what the modelled fabric itself takes (two
10 Gbit/s links and the switch each way): what the emulator adds by being software.
A tool for developers, not a test: docs/emulation.md records its output.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

from emulation_runs import PIN_PROGRAMS, arguments, emulate_pinned, measure, veth_pair

RATES_PPS = [10_000, 20_000, 50_000, 100_000]
MESSAGE_BYTES = 1472  # a 1,500-byte IP packet: MTU-sized, as in the paper
LINK = {"rate": "10Gbps", "delay": "100ns"}
SWITCH_LATENCY_S = 1e-6  # the generic switch's port-to-port latency
PORT = 11111


def fabric_one_way_s() -> float:
    """What the modelled fabric takes one way: two links (serialisation of the 1,538 bytes
    a 1,514-byte frame takes on the wire, and 100 ns each) and the switch between them."""
    wire_bytes = MESSAGE_BYTES + 8 + 20 + 14 + 4 + 20
    return 2 * (wire_bytes * 8 / 10e9 + 100e-9) + SWITCH_LATENCY_S


def client_command(pps: int, seconds: float) -> str:
    return f"{PIN_PROGRAMS} sockperf ul -i {{ip:1}} -p {PORT} --mps {pps} -t {seconds} -m {MESSAGE_BYTES} --full-rtt"


def parse(output: str) -> dict | None:
    """sockperf's round-trip minimum, median and 99th percentile, in microseconds."""
    def value(pattern: str) -> float | None:
        m = re.search(pattern + r"\s*=\s*([0-9.]+)", output)
        return float(m.group(1)) if m else None

    p50, p99, low = value(r"percentile 50\.000"), value(r"percentile 99\.000"), value(r"<MIN> observation")
    if p50 is None or p99 is None or low is None:
        return None
    sent = re.search(r"SentMessages=(\d+)", output)
    return {"min_us": low, "p50_us": p50, "p99_us": p99, "sent": int(sent.group(1)) if sent else None}


def emulated(pps: int, seconds: float, work: Path, busy_poll: bool) -> dict | None:
    sc = {
        "name": "flexplane-fig3",
        "duration": f"{seconds + 5}s",
        "topology": {"kind": "single_switch", "hosts": 2, "link": LINK},
        "workload": {"kind": "none"},
        "emulation": {"busy_poll": busy_poll, "apps": [
            {"hosts": [1], "command": f"{PIN_PROGRAMS} sockperf sr -i {{ip}} -p {PORT}", "daemon": True},
            {"hosts": [0], "command": client_command(pps, seconds), "start": "0.5s"},
        ]},
    }
    out = emulate_pinned(sc, work / f"fig3-{pps}", check=False)
    summary = json.loads((out / "summary.json").read_text())
    point = parse((out / "programs" / "app1-host0.out").read_text())
    if point is not None:
        e = summary["emulation"]
        point.update(lateness_p99_us=e["lateness_p99_us"], within_bound=e["within_bound"])
    return point


def direct(pps: int, seconds: float) -> dict | None:
    """The same namespaces and addresses, joined by a veth pair instead of the emulator."""
    from wscsim import emulation as em

    with veth_pair() as ns:
        server = subprocess.Popen(["ip", "netns", "exec", ns.names[1], *PIN_PROGRAMS.split(), "sockperf", "sr", "-i", em.host_ip(1), "-p", str(PORT)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            time.sleep(0.5)
            command = client_command(pps, seconds).replace("{ip:1}", em.host_ip(1)).split()
            r = subprocess.run(["ip", "netns", "exec", ns.names[0], *command], capture_output=True, text=True, timeout=seconds + 30)
            return parse(r.stdout + r.stderr)
        finally:
            server.kill()
            server.wait()


def plot(points: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    series = (("wscsim emulation", "emulated", "#4c72b0", 0.94), ("direct veth pair", "direct", "#dd8452", 1.06))
    for label, key, colour, nudge in series:
        xs, med, lo, hi = [], [], [], []
        for p in points:
            q = p.get(key)
            if q:
                xs.append(p["offered_pps"] * nudge)  # side by side, not on top of each other
                med.append(q["p50_us"] / 2)
                lo.append((q["p50_us"] - q["min_us"]) / 2)
                hi.append((q["p99_us"] - q["p50_us"]) / 2)
        ax.errorbar(xs, med, yerr=[lo, hi], fmt="o-", capsize=3, color=colour, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks([p["offered_pps"] for p in points], [f"{p['offered_pps'] // 1000}k" for p in points])
    ax.minorticks_off()
    ax.set_xlabel(f"offered load (packets/s of {MESSAGE_BYTES}-byte UDP messages)")
    ax.set_ylabel("one-way latency, RTT / 2 (us, log)")
    ax.set_title("Flexplane Figure 3 in wscsim: median, bars from min to p99", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> int:
    seconds = lambda p: p.add_argument("--seconds", type=float, default=5.0, help="seconds of load per rate (default 5; the paper's 30)")  # noqa: E731
    args = arguments(__doc__.splitlines()[0], "folder for fig3.json and fig3.png", "sockperf", seconds)
    if args is None:
        return 2
    out = Path(args.out)
    points = measure(RATES_PPS, lambda pps, work: {
        "offered_pps": pps, "emulated": emulated(pps, args.seconds, work, args.busy_poll), "direct": direct(pps, args.seconds)})
    fabric_us = fabric_one_way_s() * 1e6
    (out / "fig3.json").write_text(json.dumps({"fabric_one_way_us": fabric_us, "points": points}, indent=2) + "\n")
    plot(points, out / "fig3.png")
    print("| offered pkt/s | emulated median (min, p99) | direct median (min, p99) | fabric | wscsim adds |")
    print("| --- | --- | --- | --- | --- |")
    for pt in points:
        e, d = pt["emulated"], pt["direct"]
        fmt = lambda q: f"{q['p50_us'] / 2:.1f} ({q['min_us'] / 2:.1f}, {q['p99_us'] / 2:.1f}) us" if q else "no result"  # noqa: E731
        added = f"{(e['p50_us'] - d['p50_us']) / 2 - fabric_us:.1f} us" if e and d else "-"
        print(f"| {pt['offered_pps']:,} | {fmt(e)} | {fmt(d)} | {fabric_us:.2f} us | {added} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
