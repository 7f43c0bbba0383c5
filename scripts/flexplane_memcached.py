#!/usr/bin/env python3
"""A real memcached over the emulated fabric, under DropTail and under a priority scheme,
with background bulk TCP flows: request latency percentiles (issue 16's third experiment,
after Flexplane section 5.2's real applications).

    .venv/bin/python scripts/flexplane_memcached.py --out results/flexplane_memcached   # as root
    # needs memcached and iperf3 (apt-get install memcached iperf3)

Five hosts on one switch: memcached on host 0; on host 1 an ETC load generator
(scripts/etc_load.py: Facebook's key and value sizes and GET/SET mix, Poisson requests,
DSCP 1); hosts 2-4 each send one bulk iperf3 TCP flow (CUBIC, DSCP 0) to host 1, so that
memcached's answers share the switch port towards host 1 with them. The server's kernel
answers in the class the client asked in (net.ipv4.tcp_reflect_tos = 1). Cases: DropTail
without the bulk flows (the unloaded latency), DropTail with them, and two-class priority
(DSCP 1 first) with them; DropTail is one FIFO a port as in Flexplane, and once more with
wscsim's default virtual output queues. Every case has the same buffer (1,024 MTUs a
port).

Writes memcached.json, memcached.png (latency CDFs) and prints a table. A tool for
developers, not a test: docs/emulation.md records its output.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from emulation_runs import PIN_PROGRAMS, emulate_pinned, missing_tools

LOAD = Path(__file__).resolve().parent / "etc_load.py"
BULK_SENDERS = [2, 3, 4]
BASE_PORT = 5200
# Flexplane's DropTail: one FIFO per port, 1,024 packets. wscsim's default DropTail keeps
# a queue per input port, served round robin (DIABLO's switch), which by itself keeps
# memcached's answers out of the bulk flows' queue: it is a case of its own.
FIFO = {"kind": "droptail", "limit_packets": 1024, "voqs": False}
CASES = {
    "droptail, no bulk flows": (FIFO, False),
    "droptail": (FIFO, True),
    "droptail, VOQs": ({"kind": "droptail", "limit_packets": 1024}, True),
    "priority": ({"kind": "priority", "queues": 2}, True),
}


def scenario(scheme: dict, bulk: bool, rate: str, seconds: float, req_rate: float) -> dict:
    # The client stores its keys before the bulk flows start (at 0.5 s), and its requests
    # begin at 2.5 s, once their queue is built.
    server = f"{PIN_PROGRAMS} memcached -u root -l {{ip}} -p 11211 -t 1 -m 256 -I 2m"
    client = f"{PIN_PROGRAMS} {sys.executable} {LOAD} --server {{ip:0}} --seconds {seconds} --rate {req_rate} --dscp 1 --raw --begin 2.4 --connections 64"
    apps = [{"hosts": [0], "command": server, "daemon": True},
            {"hosts": [1], "command": client, "start": "0.1s"}]
    if bulk:
        sink = " ".join(f"{PIN_PROGRAMS} iperf3 -s -p {BASE_PORT + h} >/dev/null &" for h in BULK_SENDERS) + " wait"
        apps += [{"hosts": [1], "command": sink, "daemon": True},
                 {"hosts": BULK_SENDERS, "command": f"{PIN_PROGRAMS} iperf3 -c {{ip:1}} -p $(({BASE_PORT} + {{host}})) -t 3600 -C cubic",
                  "start": "0.5s", "daemon": True, "capabilities": ["net_admin"]}]  # -C cubic: see docs/emulation.md
    return {
        "name": "emulated-memcached",
        "seed": 1,
        "duration": f"{seconds + 60}s",  # ends when the load generator does
        "topology": {"kind": "single_switch", "hosts": 5, "link": {"rate": rate, "delay": "500ns"}},
        "switch": {"buffer_per_port": 1554432, "port_to_port_latency": "500ns", "scheme": scheme},
        "workload": {"kind": "none"},
        "emulation": {"apps": apps, "sysctls": [{"hosts": [0], "settings": {"net.ipv4.tcp_reflect_tos": 1}}]},
    }


def one(name: str, sc: dict, work: Path) -> dict:
    out = emulate_pinned(sc, work / name.replace(",", "").replace(" ", "-"))
    summary = json.loads((out / "summary.json").read_text())
    e = summary["emulation"]
    result = json.loads((out / "programs" / "app1-host1.out").read_text())
    return {"case": name, **result, "lateness_p99_us": e["lateness_p99_us"], "late_fraction": e["late_fraction"],
            "within_bound": e["within_bound"]}


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import numpy as np

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for r, colour in zip(rows, ("#55a868", "#c44e52", "#8172b2", "#4c72b0")):
        v = np.sort(np.asarray(r["latencies_us"]))
        # The complementary CDF on log axes shows the tail, where the schemes differ.
        ax.step(v, 1 - np.arange(len(v)) / len(v), where="post", color=colour, label=f"{r['case']} (p99 {r['p99_us'] / 1e3:.2f} ms)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("request latency (us, log)")
    ax.set_ylabel("fraction of requests slower (log)")
    ax.set_title("Real memcached (ETC load) over the emulated switch", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="center", bbox_to_anchor=(0.6, 0.72))
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="folder for memcached.json and memcached.png")
    p.add_argument("--rate", default="200Mbps", help="link rate (default 200Mbps)")
    p.add_argument("--seconds", type=float, default=10.0, help="seconds of requests per case (default 10)")
    p.add_argument("--requests", type=float, default=200.0, help="requests a second (default 200)")
    args = p.parse_args()
    if missing_tools("memcached", "iperf3"):
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name, (scheme, bulk) in CASES.items():
            rows.append(one(name, scenario(scheme, bulk, args.rate, args.seconds, args.requests), Path(work)))
            print(json.dumps({k: v for k, v in rows[-1].items() if k != "latencies_us"}), flush=True)
    (out / "memcached.json").write_text(json.dumps({"rate": args.rate, "seconds": args.seconds, "rows": rows}, indent=2) + "\n")
    plot(rows, out / "memcached.png")
    print("| case | requests | p50 | p90 | p99 | p99.9 | max (us) | lateness p99, within bound |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['case']} | {r['requests']:,} | {r['p50_us']:.0f} | {r['p90_us']:.0f} | {r['p99_us']:.0f} | {r['p99.9_us']:.0f} | "
              f"{r['max_us']:.0f} | {r['lateness_p99_us']:.1f} us, {'yes' if r['within_bound'] else 'no'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
