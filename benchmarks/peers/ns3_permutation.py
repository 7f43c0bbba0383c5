#!/usr/bin/env python3
"""The TCP permutation benchmark of benchmarks/run.py, run in ns-3 and in wscsim on the same
machine, with wscsim's speed printed as a ratio to ns-3's.

ns-3 comes from the `ns3` package on PyPI (the official cppyy bindings) and wants a venv of
its own; see benchmarks/peers/README.md. Run this script with that venv's Python:

    nice -n 19 /tmp/ns3venv/bin/python benchmarks/peers/ns3_permutation.py            # k=4 and k=8
    nice -n 19 /tmp/ns3venv/bin/python benchmarks/peers/ns3_permutation.py --k 4 --sim-ms 1

Each ns-3 run happens in a child process of its own (a clean Simulator, NodeList and Config).
Only Simulator::Run() is timed, as wscsim-bench times only its run loop. Packet-hops, drops
and bytes are counted by a small C++ trace sink compiled with cppyy.cppdef, so no Python code
runs inside the simulation. Then, if target/release/wscsim-bench exists, the same scenario
(benchmarks/run.py's permutation(k, duration)) runs in wscsim and a table compares the two.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
BIN = ROOT / "target" / "release" / "wscsim-bench"
DEFAULT_SIM_MS = {4: 20.0, 8: 5.0}

# What permutation() in benchmarks/run.py sets, restated for ns-3.
RATE = "10Gbps"
LINK_DELAY = "500ns"
BUFFER_BYTES = 150 * 1024  # 150 KiB per port
MSS = 1460  # wscsim's default transport.mss
RCV_WINDOW = 6 * 1024 * 1024  # wscsim's default transport.rcv_window
INITIAL_WINDOW = 10  # segments, wscsim's default
DELACK_TIMEOUT_MS = 40  # wscsim's default transport.delayed_ack_timeout
RTO_MIN_MS = 1
PORT = 5001

COUNTER_CPP = r"""
namespace wscsim_peer {
struct Counters {
  static uint64_t hops, hop_bytes, drops;
  static void OnTx(ns3::Ptr<const ns3::Packet> p) { ++hops; hop_bytes += p->GetSize(); }
  static void OnDrop(ns3::Ptr<const ns3::Packet>) { ++drops; }
  static void Hook() {
    // PhyTxBegin fires once each time a device starts sending a packet onto its link:
    // one packet-hop, as wscsim counts one at every port (host NICs included).
    ns3::Config::ConnectWithoutContext(
        "/NodeList/*/DeviceList/*/$ns3::PointToPointNetDevice/PhyTxBegin",
        ns3::MakeCallback(&Counters::OnTx));
    // A full port drops in one of two places: the device queue itself, or, since the device
    // stops its queue for flow control when no further full packet fits, the traffic-control
    // layer just above it (there is no queue disc to hold the packet).
    ns3::Config::ConnectWithoutContext(
        "/NodeList/*/DeviceList/*/$ns3::PointToPointNetDevice/TxQueue/Drop",
        ns3::MakeCallback(&Counters::OnDrop));
    ns3::Config::ConnectWithoutContext(
        "/NodeList/*/$ns3::TrafficControlLayer/TcDrop", ns3::MakeCallback(&Counters::OnDrop));
  }
};
uint64_t Counters::hops = 0, Counters::hop_bytes = 0, Counters::drops = 0;
}
"""


def derangement(n: int, rng: random.Random) -> list[int]:
    """A random permutation of range(n) with no fixed point (host i sends to dst[i])."""
    while True:
        dst = list(range(n))
        rng.shuffle(dst)
        if all(d != i for i, d in enumerate(dst)):
            return dst


# ---------------------------------------------------------------- ns-3 side (child process)


def ns3_run(k: int, sim_ms: float, seed: int, cc: str, ecmp: bool) -> dict:
    t_import = time.perf_counter()
    try:
        from ns import ns  # the stub package that ns3 installs
    except (ImportError, SystemExit):
        sys.exit("cannot import ns-3: run this with the Python of a venv that has `pip install ns3` (benchmarks/peers/README.md)")
    import cppyy

    import_s = time.perf_counter() - t_import
    t_build = time.perf_counter()
    cppyy.cppdef(COUNTER_CPP)
    counters = cppyy.gbl.wscsim_peer.Counters

    ns.RngSeedManager.SetSeed(seed)
    ns.RngSeedManager.SetRun(1)

    # TCP: the variant, MSS 1460 without timestamps (so a full segment is a 1500-byte IP
    # packet, as in wscsim, and the 1500-byte MTU never fragments), RTO min 1 ms, 6 MiB
    # buffers (wscsim's receive window), initial window 10, delayed ACK every 2nd segment or 40 ms.
    tid = ns.TypeId()
    variant = {"cubic": "ns3::TcpCubic", "newreno": "ns3::TcpNewReno"}[cc]
    if not ns.TypeId.LookupByNameFailSafe(variant, tid):
        print(f"note: {variant} is not in this ns-3; using ns3::TcpNewReno", file=sys.stderr)
        variant = "ns3::TcpNewReno"
    ns.Config.SetDefault("ns3::TcpL4Protocol::SocketType", ns.StringValue(variant))
    ns.Config.SetDefault("ns3::TcpSocket::SegmentSize", ns.UintegerValue(MSS))
    ns.Config.SetDefault("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(INITIAL_WINDOW))
    ns.Config.SetDefault("ns3::TcpSocket::SndBufSize", ns.UintegerValue(RCV_WINDOW))
    ns.Config.SetDefault("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(RCV_WINDOW))
    ns.Config.SetDefault("ns3::TcpSocket::DelAckCount", ns.UintegerValue(2))
    ns.Config.SetDefault("ns3::TcpSocket::DelAckTimeout", ns.TimeValue(ns.MilliSeconds(DELACK_TIMEOUT_MS)))
    ns.Config.SetDefault("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.MilliSeconds(RTO_MIN_MS)))
    ns.Config.SetDefault("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(False))
    # Every port (host NICs too) is a drop-tail FIFO of 150 KiB; the traffic-control queue
    # discs that ns-3 puts above each device are removed below, so this is the only buffer.
    ns.Config.SetDefault("ns3::DropTailQueue<Packet>::MaxSize", ns.QueueSizeValue(ns.QueueSize(f"{BUFFER_BYTES}B")))
    # ns-3.44's only multipath option is per-packet random spraying (wscsim hashes per flow).
    ecmp_set = ecmp and ns.Config.SetDefaultFailSafe("ns3::Ipv4GlobalRouting::RandomEcmpRouting", ns.BooleanValue(True))

    half = k // 2
    n_hosts = k * k * k // 4
    hosts = ns.NodeContainer()
    hosts.Create(n_hosts)
    edges = ns.NodeContainer()
    edges.Create(k * half)  # pod p, index i -> p*half + i
    aggs = ns.NodeContainer()
    aggs.Create(k * half)
    cores = ns.NodeContainer()
    cores.Create(half * half)  # agg i of every pod links to cores i*half .. i*half+half-1
    stack = ns.InternetStackHelper()
    for c in (hosts, edges, aggs, cores):
        stack.Install(c)

    p2p = ns.PointToPointHelper()
    p2p.SetDeviceAttribute("DataRate", ns.StringValue(RATE))
    p2p.SetChannelAttribute("Delay", ns.StringValue(LINK_DELAY))
    addr = ns.Ipv4AddressHelper()
    addr.SetBase(ns.Ipv4Address("10.0.0.0"), ns.Ipv4Mask("255.255.255.252"))
    tch = ns.TrafficControlHelper()
    host_addr = [None] * n_hosts
    n_links = 0

    def link(a, b):
        nonlocal n_links
        devs = p2p.Install(a, b)
        ifs = addr.Assign(devs)
        addr.NewNetwork()
        tch.Uninstall(devs)
        n_links += 1
        return ifs

    for p in range(k):
        for i in range(half):
            edge = edges.Get(p * half + i)
            for h in range(half):
                hid = (p * half + i) * half + h
                host_addr[hid] = link(hosts.Get(hid), edge).GetAddress(0)
            for j in range(half):
                link(edge, aggs.Get(p * half + j))
        for j in range(half):
            for c in range(half):
                link(aggs.Get(p * half + j), cores.Get(j * half + c))
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()

    # Real check that the queue size took effect.
    q = hosts.Get(0).GetDevice(1).GetObject[ns.PointToPointNetDevice]().GetQueue()
    queue_size = str(q.GetMaxSize())

    stop = ns.Seconds(sim_ms / 1e3)
    dst = derangement(n_hosts, random.Random(seed))
    sink_helper = ns.PacketSinkHelper("ns3::TcpSocketFactory", ns.InetSocketAddress(ns.Ipv4Address.GetAny(), PORT).ConvertTo())
    sinks = sink_helper.Install(hosts)
    sinks.Start(ns.Seconds(0))
    for src in range(n_hosts):
        bulk = ns.BulkSendHelper("ns3::TcpSocketFactory", ns.InetSocketAddress(host_addr[dst[src]], PORT).ConvertTo())
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(0))  # endless
        bulk.SetAttribute("SendSize", ns.UintegerValue(MSS * 16))
        app = bulk.Install(hosts.Get(src))
        app.Start(ns.Seconds(0))
        app.Stop(stop)
    counters.Hook()
    ns.Simulator.Stop(stop)
    build_s = time.perf_counter() - t_build

    t0 = time.perf_counter()
    ns.Simulator.Run()
    wall = time.perf_counter() - t0

    events = int(ns.Simulator.GetEventCount())
    rx = sum(int(sinks.Get(i).GetObject[ns.PacketSink]().GetTotalRx()) for i in range(n_hosts))
    hops = int(counters.hops)
    out = {
        "simulator": "ns-3",
        "ns3_version": ns3_version(),
        "k": k,
        "hosts": n_hosts,
        "links": n_links,
        "tcp": variant,
        "ecmp": "random per packet" if ecmp_set else "off (one path)",
        "queue": queue_size,
        "import_seconds": import_s,
        "build_seconds": build_s,
        "wall_seconds": wall,
        "simulated_seconds": sim_ms / 1e3,
        "events": events,
        "packet_hops": hops,
        "mean_hop_bytes": int(counters.hop_bytes) / hops if hops else 0.0,
        "drops": int(counters.drops),
        "events_per_second": events / wall,
        "packet_hops_per_second": hops / wall,
        "simulated_to_wall": (sim_ms / 1e3) / wall,
        "aggregate_goodput_gbps": rx * 8 / (sim_ms / 1e3) / 1e9,
    }
    ns.Simulator.Destroy()
    return out


def ns3_version() -> str:
    try:
        from importlib.metadata import version

        return version("ns3")
    except Exception:
        return "unknown"


def ns3_child(k: int, sim_ms: float, args) -> dict:
    """Runs one ns-3 scenario in a fresh interpreter (same Python) and returns its JSON."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--_child", str(k), "--sim-ms", str(sim_ms), "--seed", str(args.seed), "--cc", args.cc]
    if args.no_ecmp:
        cmd.append("--no-ecmp")
    p = subprocess.run(cmd, capture_output=True, text=True)
    # cppyy prints harmless "[runStaticInitializersOnce]: Failed to materialize symbols" lines
    # on stderr while loading ns-3; show anything else.
    err = "\n".join(l for l in p.stderr.splitlines() if "materialize symbols" not in l)
    if p.returncode != 0:
        sys.exit(f"ns-3 run for k={k} failed (exit {p.returncode}):\n{err}")
    if err.strip():
        print(err, file=sys.stderr)
    return json.loads(p.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- wscsim side


def wscsim_run(k: int, sim_ms: float) -> dict:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from run import permutation  # the scenario benchmarks/run.py runs

    scen = permutation(k, f"{sim_ms:g}ms")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(scen, f)
    try:
        out = subprocess.run([str(BIN), f.name], capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(f.name)
    r = json.loads(out)
    r["simulator"] = "wscsim"
    r["k"] = k
    r["drops"] = r.get("headline", {}).get("drops")
    r["aggregate_goodput_gbps"] = r.get("headline", {}).get("aggregate_goodput_gbps")
    return r


# ---------------------------------------------------------------- report


def table(rows: list[dict]) -> str:
    head = "| simulator | k | hosts | sim ms | wall s | events/s | packet-hops/s | hops per sim µs | goodput Gbit/s | drops | wscsim/ns-3 (hops/s) | wscsim/ns-3 (sim/wall) |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    ns3_by_k = {r["k"]: r for r in rows if r["simulator"] == "ns-3"}
    for r in rows:
        ratio_h = ratio_s = ""
        base = ns3_by_k.get(r["k"])
        if r["simulator"] == "wscsim" and base:
            ratio_h = f"{r['packet_hops_per_second'] / base['packet_hops_per_second']:.1f}x"
            ratio_s = f"{r['simulated_to_wall'] / base['simulated_to_wall']:.1f}x"
        gp = r.get("aggregate_goodput_gbps")
        lines.append(
            f"| {r['simulator']} | {r['k']} | {r['hosts']} | {r['simulated_seconds'] * 1e3:g} | {r['wall_seconds']:.3f} | "
            f"{r['events_per_second'] / 1e6:.2f} M | {r['packet_hops_per_second'] / 1e6:.3f} M | "
            f"{r['packet_hops'] / (r['simulated_seconds'] * 1e6):.0f} | {'' if gp is None else f'{gp:.0f}'} | "
            f"{'' if r.get('drops') is None else r['drops']} | {ratio_h} | {ratio_s} |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--k", type=int, action="append", help="fat-tree arity (even; repeatable); default 4 and 8")
    ap.add_argument("--sim-ms", type=float, help=f"simulated milliseconds (default {DEFAULT_SIM_MS} by k, else 5)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cc", choices=["cubic", "newreno"], default="cubic", help="ns-3 congestion control (wscsim runs the scenario's cubic)")
    ap.add_argument("--no-ecmp", action="store_true", help="ns-3: one shortest path per destination instead of per-packet random ECMP")
    ap.add_argument("--no-wscsim", action="store_true", help="run ns-3 only")
    ap.add_argument("--json", type=Path, help="also write all figures here as JSON")
    ap.add_argument("--_child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args._child is not None:
        r = ns3_run(args._child, args.sim_ms, args.seed, args.cc, not args.no_ecmp)
        print(json.dumps(r))
        return 0

    ks = args.k or [4, 8]
    for k in ks:
        if k < 2 or k % 2:
            ap.error(f"--k {k}: a fat tree needs an even k >= 2")
    rows = []
    for k in ks:
        sim_ms = args.sim_ms if args.sim_ms is not None else DEFAULT_SIM_MS.get(k, 5.0)
        print(f"ns-3: k={k}, {sim_ms:g} ms simulated ...", file=sys.stderr, flush=True)
        r = ns3_child(k, sim_ms, args)
        print(
            f"  ns-3 {r['ns3_version']}: {r['tcp']}, ECMP {r['ecmp']}, queue {r['queue']}, {r['links']} links, "
            f"mean hop {r['mean_hop_bytes']:.0f} B; import {r['import_seconds']:.1f} s, build {r['build_seconds']:.1f} s, run {r['wall_seconds']:.2f} s",
            file=sys.stderr,
        )
        rows.append(r)
        if args.no_wscsim:
            continue
        if not BIN.exists():
            print(f"  {BIN.relative_to(ROOT)} is missing: build it with `cargo build --release -p wscsim` to compare", file=sys.stderr)
            continue
        print(f"wscsim: k={k}, {sim_ms:g} ms simulated ...", file=sys.stderr, flush=True)
        rows.append(wscsim_run(k, sim_ms))
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
