#!/usr/bin/env python3
"""Flexplane's Table 2 with real Linux TCP: five iperf3 senders into one receiver through
one emulated switch, under DropTail, RED with ECN and DCTCP marking; the bottleneck
port's queue, sampled every millisecond, against a simulated run of the same scenario and
against the paper's hardware and Flexplane figures.

    .venv/bin/python scripts/flexplane_queues.py --out results/flexplane_queues   # as root; needs iperf3

The scenario is the bundled `flexplane_queue_occupancy` with each of its cases, its link
rate lowered to what the emulator carries in real time on this machine (`--rate`), its
simulated senders replaced by iperf3 (workload `none`). The senders are Linux's CUBIC
(with ECN for RED and DCTCP), or Linux's DCTCP where the kernel has it. The simulated
runs use the same rate and duration; with classic-ECN senders the DCTCP case is simulated
twice: with wscsim's DCTCP senders (the paper's set-up) and with ECN CUBIC (the set-up
the emulation had). Samples from the first `--warmup` seconds are left out of both.

Writes queues.json (every row), queues.png (the occupancy over time and its distribution
per case) and prints a table. A tool for developers, not a test: docs/emulation.md
records its output.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import tempfile
from pathlib import Path

from emulation_runs import PIN_PROGRAMS, emulate_pinned, missing_tools

PAPER = {  # Table 2: median and sigma of the queue, in MTUs
    "droptail": {"hardware": (931, 73.7), "flexplane": (837, 98.6)},
    "red": {"hardware": (138, 12.9), "flexplane": (104, 32.5)},
    "dctcp": {"hardware": (61, 4.9), "flexplane": (51, 13.0)},
}
SENDERS = [1, 2, 3, 4, 5]
BASE_PORT = 5200
START_S = 0.5


def kernel_has_dctcp() -> bool:
    offered = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    return "dctcp" in offered


def cases() -> list[tuple[str, dict]]:
    from wscsim.scenario import expand, load, split_sweep

    base, axes = split_sweep(load("flexplane_queue_occupancy"))
    return [(params["case"], sc) for sc, params in expand(base, axes)]


def emulated_scenario(case: str, sc: dict, rate: str, seconds: float, dctcp: bool) -> dict:
    """The case's scenario with iperf3 in place of its simulated senders."""
    sc = copy.deepcopy(sc)
    sc["topology"]["link"]["rate"] = rate
    sc["duration"] = f"{START_S + seconds + 5}s"
    sc["workload"] = {"kind": "none"}
    servers = " ".join(f"{PIN_PROGRAMS} iperf3 -s -1 -p {BASE_PORT + h} >/dev/null &" for h in SENDERS) + " wait"
    # A namespace starts with the machine's default congestion control (BBR on this one)
    # and may make default only those net.ipv4.tcp_allowed_congestion_control lists, so
    # the senders choose theirs per socket (with the net_admin capability, any the kernel has).
    cc = "dctcp" if case == "dctcp" and dctcp else "cubic"
    client = f"{PIN_PROGRAMS} iperf3 -c {{ip:0}} -p $(({BASE_PORT} + {{host}})) -t {seconds} -C {cc} -J"
    ecn = case != "droptail"
    settings = {"net.ipv4.tcp_ecn": 1 if ecn else 0}
    sc["emulation"] = {
        "apps": [{"hosts": [0], "command": servers, "daemon": True},
                 # net_admin: a congestion control outside the machine's allowed list
                 {"hosts": SENDERS, "command": client, "start": f"{START_S}s", "capabilities": ["net_admin"]}],
        "sysctls": [{"settings": settings}],
    }
    return sc


def emulated(case: str, sc: dict, rate: str, seconds: float, dctcp: bool, work: Path) -> dict:
    import wscsim

    out = emulate_pinned(emulated_scenario(case, sc, rate, seconds, dctcp), work / f"emulated-{case}")
    res = wscsim.read(out)
    e = res.summary["emulation"]
    goodput = []
    for h in SENDERS:
        report = json.loads((out / "programs" / f"app1-host{h}.out").read_text())
        if "error" in report:  # iperf3 -J exits 0 even when it could not connect
            raise SystemExit(f"emulate {case}: iperf3 on host {h}: {report['error']}")
        goodput.append(report["end"]["sum_received"]["bits_per_second"])
    return {"queue": res, "goodput_bps": sum(goodput), "lateness_p99_us": e["lateness_p99_us"], "within_bound": e["within_bound"],
            "late_fraction": e["late_fraction"]}


def simulated(sc: dict, rate: str, seconds: float, overrides: dict | None = None) -> object:
    import wscsim

    sc = copy.deepcopy(sc)
    sc["topology"]["link"]["rate"] = rate
    sc["duration"] = f"{seconds}s"
    return wscsim.run(sc, overrides=overrides, plots=False)


def bottleneck(res, after_s: float, until_s: float):
    """The queue, in MTU frames, of the switch port that sent the most bytes, sampled
    between `after_s` and `until_s`: a pandas Series indexed by time in seconds."""
    from wscsim.dataplane import MTU_FRAME_BYTES

    links = res.links
    sw = links[links["kind"] == "switch"].sort_values("tx_bytes", ascending=False).iloc[0]
    q = res.queues
    q = q[(q["node"] == sw["node"]) & (q["port"] == sw["port"])]
    t = q["time_us"] / 1e6
    keep = (t >= after_s) & (t <= until_s)
    return (q["queue_bytes"][keep] / MTU_FRAME_BYTES).set_axis(t[keep])


def row(label: str, case: str, series, extra: dict) -> dict:
    return {"case": case, "run": label, "median_mtu": float(series.median()), "std_mtu": float(series.std()),
            "samples": int(len(series)), **extra}


def plot(series: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    names = list(PAPER)
    fig, axes = plt.subplots(2, len(names), figsize=(11, 5.6), squeeze=False)
    colours = {"emulated": "#4c72b0", "simulated": "#dd8452", "simulated, ECN CUBIC": "#55a868"}
    for j, case in enumerate(names):
        top, bottom = axes[0][j], axes[1][j]
        for label, s in series.get(case, {}).items():
            t0 = s.index.min()
            top.plot(s.index - t0, s.to_numpy(), lw=0.6, alpha=0.8, color=colours[label], label=label)
            v = np.sort(s.to_numpy())
            bottom.plot(v, np.arange(1, len(v) + 1) / len(v), color=colours[label], label=label)
        for who, style in (("hardware", ":"), ("flexplane", "--")):
            med = PAPER[case][who][0]
            bottom.axvline(med, color="grey", ls=style, lw=1, label=f"paper {who} median")
        top.set_title(case, fontsize=10)
        top.set_xlabel("time (s)")
        bottom.set_xlabel("queue (MTU frames)")
        top.grid(alpha=0.3)
        bottom.grid(alpha=0.3)
    axes[0][0].set_ylabel("bottleneck queue (MTUs)")
    axes[1][0].set_ylabel("CDF of 1 ms samples")
    axes[0][-1].legend(fontsize=7, loc="upper right")  # the last case has every run
    axes[1][-1].legend(fontsize=7, loc="lower right")
    fig.suptitle("Flexplane Table 2 in wscsim: five real TCP senders, one emulated switch", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="folder for queues.json and queues.png")
    p.add_argument("--rate", default="200Mbps", help="link rate (default 200Mbps: what the emulator carries within its bound here)")
    p.add_argument("--seconds", type=float, default=20.0, help="seconds of iperf3 per case (default 20)")
    p.add_argument("--warmup", type=float, default=2.0, help="seconds left out at the start (default 2)")
    args = p.parse_args()
    if missing_tools("iperf3"):
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    dctcp = kernel_has_dctcp()
    rows, series = [], {}
    with tempfile.TemporaryDirectory() as work:
        for case, sc in cases():
            e = emulated(case, sc, args.rate, args.seconds, dctcp, Path(work))
            s = bottleneck(e.pop("queue"), START_S + args.warmup, START_S + args.seconds)
            senders = "Linux DCTCP" if case == "dctcp" and dctcp else "Linux CUBIC" + (" + ECN" if case != "droptail" else "")
            rows.append(row("emulated", case, s, {"senders": senders, **e}))
            series.setdefault(case, {})["emulated"] = s
            runs = [("simulated", None)]
            if case == "dctcp" and not dctcp:
                runs.append(("simulated, ECN CUBIC", {"transport.variant": "cubic", "transport.ecn": True}))
            for label, overrides in runs:
                res = simulated(sc, args.rate, args.seconds, overrides)
                s = bottleneck(res, args.warmup, args.seconds)
                rows.append(row(label, case, s, {}))
                series[case][label] = s
            for r in rows[-len(runs) - 1:]:
                print(json.dumps(r), flush=True)
    (out / "queues.json").write_text(json.dumps({"rate": args.rate, "seconds": args.seconds, "warmup": args.warmup, "rows": rows,
                                                  "paper": PAPER}, indent=2) + "\n")
    plot(series, out / "queues.png")
    print("| case | run | median (sigma), MTUs | paper hardware | paper Flexplane |")
    print("| --- | --- | --- | --- | --- |")
    for r in rows:
        hw, fp = PAPER[r["case"]]["hardware"], PAPER[r["case"]]["flexplane"]
        print(f"| {r['case']} | {r['run']} | {r['median_mtu']:.0f} ({r['std_mtu']:.1f}) | {hw[0]} ({hw[1]}) | {fp[0]} ({fp[1]}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
