#!/usr/bin/env python3
"""Fingerprints of every bundled scenario, for restructurings that must not change results.

Runs every point of every bundled scenario, shortened so the whole set takes a few
minutes, straight on the native core (no plots, no folders), and records per point the
event count, packet-hops and a SHA-256 of every result table's bytes. Run it at the
reference commit and after the change, then compare:

    python3 scripts/fingerprint.py --out /tmp/before.json      # at the reference commit
                                                               # (benchmarks/fingerprints.json is one)
    python3 scripts/fingerprint.py --out /tmp/after.json       # after the change
    python3 scripts/fingerprint.py --compare /tmp/before.json /tmp/after.json

The comparison lists every point whose events, packet-hops or tables differ (exit status
1 if any do). A tool for developers, not a test: the fingerprints are of this machine's
build and change whenever a model deliberately does.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time

# How each bundled scenario is shortened (every point keeps its own parameters).
SHORTER = {
    "camcube_all_to_all": {"duration": "10ms"},  # its 4,096-server case keeps its own 20 ms
    "camcube_churn": {"duration": "300ms"},
    "camcube_multicast": {"workload.size": "20MB"},
    "camcube_multicast_groups": {"workload.size": "20MB"},
    "camcube_image_lookups": {"workload.operations": 100},
    "camcube_image_store": {"workload.operations": 10},
    "camcube_links": {"duration": "10ms"},
    "camcube_image_store_failures": {"duration": "51s", "workload.outstanding": 2, "failures": [{"node": "h25", "at": "50s"}]},
    "camcube_ping": {"workload.count": 3},
    "camcube_tcp": {"workload.size": "2MB"},
    "diablo_array_flows": {"duration": "100ms"},
    "diablo_incast": {"workload.iterations": 20},
    "diablo_incast_hosts": {"workload.iterations": 5},
    "diablo_memcached": {"workload.requests_per_client": 100},
    "diablo_memcached_factors": {"workload.requests_per_client": 100},
    "diablo_memcached_reconnect": {"workload.requests_per_client": 100},
    "diablo_memcached_rack": {"workload.requests_per_client": 300},
    "diablo_memcached_120": {"workload.requests_per_client": 300},
    "diablo_memcached_12k": {"workload.requests_per_client": 3},
    "flexplane_fct": {"duration": "50ms"},
    "flexplane_priority": {"duration": "100ms"},
    "flexplane_queue_occupancy": {"duration": "100ms"},
    "hpcc_fct": {"duration": "2ms"},
    "homa_slowdown": {"workload.flows": 300},
    "ndp_incast": {"duration": "20ms"},
    "collective_allreduce": {"workload.iterations": 1, "workload.size": "1MB"},
    "dcqcn_fairness": {"duration": "5ms", "workload.incast.stagger": "1ms"},
    "swift_latency": {"duration": "1ms"},
    "pcie_hadoop": {"workload.data": "1GB", "workload.file": "100MB"},
    "ramcloud_read": {"workload.iterations": 200},
    "ramcloud_ping": {"workload.count": 200},
    "tcp_permutation_fat_tree": {"duration": "20ms"},
    "websearch_fat_tree": {"duration": "100ms"},
}


def table_digests(native_tables: dict) -> dict[str, str]:
    out = {}
    for name, cols in sorted(native_tables.items()):
        h = hashlib.sha256()
        for col, kind, payload in cols:
            h.update(f"{col}:{kind}:".encode())
            if kind == "str":
                h.update("\x00".join(payload).encode())
            elif kind == "cat":
                levels, codes = payload
                h.update("\x00".join(levels).encode() + bytes(codes))
            else:
                h.update(bytes(payload))
        out[name] = h.hexdigest()[:16]
    return out


def fingerprint_point(sc: dict) -> dict:
    from wscsim import _native
    from wscsim.scenario import to_json

    try:
        sim = _native.Simulation(to_json(sc))
    except _native.ScenarioError as e:
        # A point the overrides (--set) make invalid: recorded, and listed by --compare.
        return {"events": -1, "packet_hops": -1, "tables": {}, "refused": str(e)}
    sim.run_until(sim.end_ps)
    s = json.loads(sim.summary_json())
    return {"events": s["events"], "packet_hops": s["packet_hops"], "tables": table_digests(sim.tables())}


def fingerprint_all(names: list[str], extra: dict | None = None) -> dict:
    from wscsim.scenario import apply_overrides, bundled, expand, load, split_sweep

    result = {}
    for name in names or sorted(bundled()):
        t0 = time.perf_counter()
        base, axes = split_sweep(apply_overrides(load(name), {**SHORTER.get(name, {}), **(extra or {})}))
        for i, (sc, params) in enumerate(expand(base, axes) if axes else [(base, {})]):
            result[f"{name}[{i}]"] = {"params": {str(k): v for k, v in params.items()}, **fingerprint_point(sc)}
        print(f"{name}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return result


def compare(a: dict, b: dict) -> int:
    differ, one_side, refused = 0, set(), []
    for key in sorted(set(a) | set(b)):
        if key not in a or key not in b:
            print(f"{key}: only in {'the second' if key not in a else 'the first'}")
            differ += 1
            continue
        x, y = a[key], b[key]
        if "refused" in x or "refused" in y:
            refused.append(key)
            continue
        what = [f for f in ("events", "packet_hops") if x[f] != y[f]]
        # A table only one side has (a new kind of result) changes no simulated result:
        # it is listed, and the point still counts as identical.
        what += [f"table {t}" for t in sorted(set(x["tables"]) & set(y["tables"])) if x["tables"][t] != y["tables"][t]]
        one_side |= set(x["tables"]) ^ set(y["tables"])
        if what:
            differ += 1
            print(f"{key} {x['params']}: differs in {', '.join(what)} (events {x['events']} -> {y['events']})")
    if one_side:
        print(f"tables on one side only (not compared): {', '.join(sorted(one_side))}")
    if refused:
        print(f"refused on one side or both (not compared): {', '.join(refused)}")
    print(f"{len(set(a) | set(b)) - differ - len(refused)} points identical, {differ} differ, {len(refused)} refused")
    return 1 if differ else 0


def _commit() -> str:
    """The checkout's commit, with "+changes" when the tree differs from it."""
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    git = lambda *a: subprocess.run(["git", *a], cwd=root, capture_output=True, text=True).stdout.strip()
    return git("rev-parse", "--short", "HEAD") + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("scenarios", nargs="*", help="bundled scenario names (default: all)")
    p.add_argument("--out", help="write the fingerprints to this JSON file")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override for every point (VALUE as JSON, else a string), e.g. engine.partitioned=true",
    )
    p.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="compare two fingerprint files")
    args = p.parse_args()
    if args.compare:
        a, b = (json.loads(open(f).read())["points"] for f in args.compare)
        return compare(a, b)
    extra = {}
    for kv in args.set:
        key, _, value = kv.partition("=")
        try:
            extra[key] = json.loads(value)
        except json.JSONDecodeError:
            extra[key] = value
    fp = {"commit": _commit(), "points": fingerprint_all(args.scenarios, extra)}
    text = json.dumps(fp, indent=1, sort_keys=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
