#!/usr/bin/env python3
"""RoCEv2 over PFC, HPCC, and NDP and EQDS over trimming switches, side by side in htsim and
wscsim: the same fat tree, the same connection matrix (a permutation, and an 8-to-1
incast), htsim's defaults restated for wscsim. Prints each flow set's completion times in both, and both simulators' wall
time and peak memory on the same traffic. See benchmarks/peers/README.md for building
htsim and for what differs between the two models.

    python3 benchmarks/peers/htsim_rdma.py --htsim /tmp/htsim/sim/datacenter
    python3 benchmarks/peers/htsim_rdma.py --htsim DIR --k 8 --protocol roce --json out.json

wscsim runs through its Python API (for the flows table) and through target/release/
wscsim-bench (for speed: its run loop alone, as htsim's wall time includes its set-up).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
BIN = ROOT / "target" / "release" / "wscsim-bench"
sys.path.insert(0, str(ROOT / "python"))

# htsim's defaults (datacenter/main_roce.cpp, main_hpcc.cpp), but a 4,096-byte MTU,
# wscsim's largest RoCE payload: 100 Gbit/s links of 1 us, no switch latency, PAUSE
# above 15 MTUs held by an input and resume below 12.
LINK_GBPS, HOP_US, MTU, PFC_LOW, PFC_HIGH = 100, 1, 4096, 12, 15
HTSIM_BIN = {"roce": "htsim_roce", "hpcc": "htsim_hpcc", "ndp": "htsim_ndp", "eqds": "htsim_eqds"}
# NDP (main_ndp.cpp): data queues of 8 MTUs, header queues of twice that served 100,000:1,
# an initial window of 30 packets (htsim's default 15 is below a round trip at 100 Gbit/s),
# each packet on one of 256 ECMP entropy values in turn.
NDP_QUEUE, NDP_CWND, NDP_PATHS = 8, 30, 256
# EQDS (main_eqds.cpp) on the same switches, with the same window of speculative
# packets; its -mtu is the packet with its 64-byte header, NDP's the payload. Its
# timeout: 150 us and six drains of a switch's data queue (htsim's own rule).
EQDS_RTO_US = 150 + 6 * NDP_QUEUE * (MTU + 64) * 8 / (LINK_GBPS * 1e3)
# A flow's line; htsim's progress dots may sit in front of it.
FINISHED = re.compile(r"Flow (\S+?)_(\d+)_(\d+) .*?finished at ([\d.e+]+)")


def derangement(n: int, rng: random.Random) -> list[int]:
    while True:
        p = list(range(n))
        rng.shuffle(p)
        if all(i != d for i, d in enumerate(p)):
            return p


def matrix(kind: str, hosts: int, seed: int) -> list[tuple[int, int]]:
    """(src, dst) pairs: a permutation, or eight hosts of other pods into host 0."""
    if kind == "permutation":
        return list(enumerate(derangement(hosts, random.Random(seed))))
    return [(hosts // 4 + i, 0) for i in range(8)]


def write_matrix(pairs, hosts: int, size: int, path: Path) -> None:
    lines = [f"Nodes {hosts}", f"Connections {len(pairs)}"]
    lines += [f"{s}->{d} id {i + 1} start 0 size {size}" for i, (s, d) in enumerate(pairs)]
    path.write_text("\n".join(lines) + "\n")


def timed(cmd: list[str], cwd: Path, keep=lambda line: True) -> tuple[str, float, float]:
    """Runs `cmd` under /usr/bin/time -v, its stdout to a file (htsim prints tens of
    megabytes of warnings; a pipe read as it runs would slow it); the lines of it that
    `keep` takes, its wall seconds and its peak resident MiB."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as t, open(cwd / "stdout.txt", "w+") as out:
        p = subprocess.run(["/usr/bin/time", "-v", "-o", t.name, *cmd], cwd=cwd, stdout=out)
        if p.returncode != 0:
            sys.exit(f"{cmd[0]} failed (exit {p.returncode})")
        out.seek(0)
        kept = [line for line in out if keep(line)]
        usage = t.read()
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", usage)
    h, m, s = (float(x) if x else 0.0 for x in wall.groups())
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", usage).group(1)) / 1024
    return "".join(kept), h * 3600 + m * 60 + s, rss


def htsim(proto: str, args, hosts: int, cm: Path, end_us: int, work: Path) -> dict:
    mtu = MTU + 64 if proto == "eqds" else MTU
    cmd = [str(Path(args.htsim) / HTSIM_BIN[proto]), "-nodes", str(hosts), "-tm", str(cm), "-strat", "ecmp_host",
           "-end", str(end_us), "-mtu", str(mtu), "-linkspeed", str(LINK_GBPS * 1000),
           "-hop_latency", str(HOP_US), "-switch_latency", "0", "-seed", str(args.seed)]
    if proto in ("ndp", "eqds"):
        cmd += ["-paths", str(NDP_PATHS), "-q", str(NDP_QUEUE), "-cwnd", str(NDP_CWND)]
    else:
        cmd += ["-paths", "1", "-pfc_thresholds", str(PFC_LOW), str(PFC_HIGH)]
    out, wall, rss = timed(cmd, work, keep=lambda line: "Flow " in line or line.startswith("New: "))
    fct = [float(m.group(4)) for m in map(FINISHED.search, out.splitlines()) if m]
    # NDP's and EQDS's last line counts packets sent again (each after a trim, or a timeout).
    rtx = re.search(r"^New: \d+ Rtx: (\d+)", out, re.M)
    return {"fct_us": fct, "wall_s": wall, "peak_mib": rss, "resent": int(rtx.group(1)) if rtx else None}


def scenario(proto: str, k: int, cm: Path, end_us: int) -> dict:
    if proto in ("ndp", "eqds"):
        return trim_scenario(proto, k, cm, end_us)
    return {
        "name": f"htsim-{proto}-k{k}", "seed": 1, "duration": f"{end_us}us",
        # Jumbo frames: a 4,096-byte RoCE payload does not fit a 1,500-byte MTU.
        "topology": {"kind": "fat_tree", "k": k, "link": {"technology": f"{LINK_GBPS}gbe_jumbo", "delay": f"{HOP_US}us"}},
        # A buffer no input fills (htsim enforces none under PFC), FIFO egress queues, and
        # PFC at a fixed threshold: the reserve, with a negligible share of the pool.
        "switch": {"buffer": "shared", "shared_buffer": "64MiB", "port_to_port_latency": "0ns",
                   "scheme": {"kind": "droptail", "voqs": False},
                   "pfc": {"reserve": f"{PFC_HIGH * MTU}B", "alpha": 1e-6,
                           "resume_offset": f"{(PFC_HIGH - PFC_LOW) * MTU}B"}},
        "transport": {"kind": "roce"},
        "roce": {"payload": f"{MTU}B", "congestion": "none" if proto == "roce" else "hpcc"},
        "workload": {"kind": "flows", "matrix": str(cm)},
        "metrics": {"max_queue_samples": 0},
    }


def trim_scenario(proto: str, k: int, cm: Path, end_us: int) -> dict:
    """NDP or EQDS over htsim's trimming switches."""
    frame = MTU + 64 + 18  # NDP's (or EQDS's) 64-byte header and Ethernet's
    own = {"ndp": {"payload": f"{MTU}B", "initial_window": NDP_CWND, "paths": NDP_PATHS},
           "eqds": {"payload": f"{MTU}B", "speculative": f"{NDP_CWND * (MTU + 64)}B", "paths": NDP_PATHS,
                    "rto": f"{EQDS_RTO_US:.3f}us"}}[proto]
    return {
        "name": f"htsim-{proto}-k{k}", "seed": 1, "duration": f"{end_us}us",
        "topology": {"kind": "fat_tree", "k": k, "link": {"technology": f"{LINK_GBPS}gbe_jumbo", "delay": f"{HOP_US}us"}},
        # htsim's CompositeQueue: 8 data packets, headers in twice that many bytes beside,
        # and (without htsim's -rts) a header with no room dropped.
        "switch": {"buffer_per_port": f"{3 * NDP_QUEUE * frame}B", "port_to_port_latency": "0ns",
                   "scheme": {"kind": "trim", "data_packets": NDP_QUEUE, "header_weight": 100000,
                              "return_to_sender": False}},
        "transport": {"kind": proto},
        proto: own,
        "workload": {"kind": "flows", "matrix": str(cm)},
        "metrics": {"max_queue_samples": 0},
    }


def wscsim_runs(sc: dict, work: Path) -> dict:
    import wscsim
    r = wscsim.run(sc, out=work / "wscsim", plots=False, overwrite=True)
    f = r.tables["flows"]
    h = r.summary["headline"]
    resent = h.get("ndp_resent_packets", h.get("eqds_resent_packets"))
    fct = [x for x in f.fct_us if x == x]
    with open(work / "sc.json", "w") as fp:
        json.dump(sc, fp)
    out, wall, rss = timed([str(BIN), str(work / "sc.json")], work)
    bench = json.loads(out)
    return {"fct_us": fct, "wall_s": bench["wall_seconds"], "process_wall_s": wall, "peak_mib": rss,
            "events": bench["events"], "packet_hops": bench["packet_hops"],
            "pause_frames": h.get("pfc_pause_frames"), "drops": h["drops"],
            "resent": resent, "trims": int(r.tables["links"].trims.sum()) if "trims" in r.tables["links"].columns else None}


def summary(fct: list[float]) -> str:
    if not fct:
        return "none finished"
    q = sorted(fct)
    return f"{len(q)} done, median {statistics.median(q):.1f}, p90 {q[int(0.9 * (len(q) - 1))]:.1f}, max {q[-1]:.1f} us"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--htsim", required=True, help="htsim's sim/datacenter folder, built")
    ap.add_argument("--k", type=int, action="append", help="fat-tree size (4, 8 or 16; default 4 and 8)")
    ap.add_argument("--protocol", action="append", choices=sorted(HTSIM_BIN), help="default: all four")
    ap.add_argument("--traffic", action="append", choices=["permutation", "incast"], help="default: both")
    ap.add_argument("--size", type=int, default=2_000_000, help="bytes per flow (default 2 MB)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="also write every figure to this file")
    args = ap.parse_args()
    if not BIN.exists():
        sys.exit(f"{BIN} is missing: cargo build --release -p wscsim")
    rows = []
    for k in args.k or [4, 8]:
        hosts = k ** 3 // 4
        for traffic in args.traffic or ["permutation", "incast"]:
            pairs = matrix(traffic, hosts, args.seed)
            # Time for the most bytes any host receives at line rate, four times over.
            per_dst = max(sum(1 for _, d in pairs if d == x) for x in range(hosts))
            end_us = int(4 * per_dst * args.size * 8 / (LINK_GBPS * 1e3)) + 200
            for proto in args.protocol or ["roce", "hpcc", "ndp", "eqds"]:
                with tempfile.TemporaryDirectory() as tmp:
                    work = Path(tmp)
                    cm = work / "flows.cm"
                    write_matrix(pairs, hosts, args.size, cm)
                    h = htsim(proto, args, hosts, cm, end_us, work)
                    w = wscsim_runs(scenario(proto, k, cm, end_us), work)
                rows.append({"k": k, "traffic": traffic, "protocol": proto, "htsim": h, "wscsim": w})
                again = f", {h['resent']} sent again" if h["resent"] is not None else ""
                print(f"k={k} {traffic} {proto}: htsim {summary(h['fct_us'])}; {h['wall_s']:.2f} s, {h['peak_mib']:.0f} MiB{again}")
                print(f"{'':>{len(str(k)) + len(traffic) + len(proto) + 5}}wscsim {summary(w['fct_us'])}; "
                      f"{w['wall_s']:.3f} s run loop ({w['process_wall_s']:.2f} s process), {w['peak_mib']:.0f} MiB, "
                      f"{w['packet_hops'] / w['wall_s'] / 1e6:.2f} M packet-hops/s, {w['pause_frames']} PAUSE frames, "
                      f"{w['trims']} trims, {w['resent']} sent again; "
                      f"htsim/wscsim wall {h['wall_s'] / w['process_wall_s']:.1f}x", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
