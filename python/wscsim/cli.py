"""The `wscsim` command: run, sweep, check, list."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .errors import ScenarioError


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", nargs="?", default=None, help="TOML file or bundled scenario name (default: diablo_incast)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE", help="override a field, e.g. --set transport.rto_min=1ms")
    p.add_argument("--seed", type=int, default=None, help="random seed (default: the scenario's)")


def _out_dir(args, sc_name: str) -> Path:
    return Path(args.out) if args.out else Path("results") / sc_name


def _print_summary(res, console) -> None:
    s = res.summary
    head = s.get("headline", {})
    if "points" in s and isinstance(s["points"], int):
        console.print(f"[bold]{s['scenario'].get('name', 'sweep')}[/]: {s['points']} points in {s['wall_seconds']:.1f} s wall")
        pts = res.tables.get("points")
        if pts is not None:
            cols = [c for c in pts.columns if not c.startswith("headline_") and c not in ("point", "invariants_ok")]
            show = [c for c in ("headline_incast_goodput_mbps", "headline_mean_fct_us", "headline_aggregate_goodput_gbps", "headline_drops") if c in pts.columns]
            console.print(pts[cols + show].to_string(index=False))
    else:
        console.print(f"[bold]{s['scenario']['name']}[/]: {s['simulated_seconds']:.4g} s simulated in {s['wall_seconds']:.2f} s wall, "
                      f"{s['events']:,} events, {s['packet_hops']:,} packet-hops")
        for k, v in head.items():
            console.print(f"  {k}: {v:.4g}" if isinstance(v, float) else f"  {k}: {v}")
    if not s.get("invariants", {}).get("ok", True):
        console.print("[red]invariant check failed; see summary.json[/]")
    if res.path is not None:
        console.print(f"results: {res.path}")


def cmd_run(args, vary=None) -> int:
    from rich.console import Console

    from . import api
    from .scenario import apply_overrides, load

    sc = load(args.scenario)
    sc = apply_overrides(sc, args.overrides)
    if vary:
        sc.setdefault("sweep", {}).update(vary)
    name = sc.get("name") if isinstance(sc.get("name"), str) else "run"
    res = api.run(sc, out=_out_dir(args, name), seed=args.seed, progress=sys.stderr.isatty(), workers=getattr(args, "workers", None))
    _print_summary(res, Console())
    return 0


def cmd_sweep(args) -> int:
    from .scenario import parse_value

    vary = {}
    for v in args.vary:
        if "=" not in v:
            raise ScenarioError("--vary", f"given {v!r}; allowed: path=v1,v2,..., such as workload.senders=1,8,24")
        path, values = v.split("=", 1)
        vary[path.strip()] = [parse_value(x.strip()) for x in values.split(",") if x.strip()]
    return cmd_run(args, vary=vary)


def cmd_check(args) -> int:
    from .scenario import apply_overrides, expand, load, split_sweep
    from .schemes import native_simulation

    sc = apply_overrides(load(args.scenario), args.overrides)
    if args.seed is not None:
        sc["seed"] = args.seed
    base, axes = split_sweep(sc)
    points = expand(base, axes) if axes else [(base, {})]
    for point, params in points:
        try:
            sim = native_simulation(point)
        except ScenarioError as e:
            where = f" (in sweep point {', '.join(f'{k}={v!r}' for k, v in params.items())})" if params else ""
            raise ScenarioError(e.path, e.message + where) from None
    resolved = json.loads(sim.summary_json())["scenario"]
    print(json.dumps(resolved, indent=2) if args.show else f"ok: {resolved['name']} ({len(points)} point{'s' if len(points) > 1 else ''})")
    return 0


def cmd_list(args) -> int:
    from . import _native
    from .scenario import bundled

    cat = _native.catalogue()
    print("scenarios:")
    for name, path in bundled().items():
        first = next((ln[2:].strip() for ln in path.read_text().splitlines() if ln.startswith("# ")), "")
        print(f"  {name:28s} {first}")
    print("topologies: " + ", ".join(cat["topologies"]))
    print("diablo_array presets: 1g (1 Gbit/s, 1 us port-to-port), 10g (10 Gbit/s, 100 ns)")
    print("workloads: " + ", ".join(cat["workloads"]))
    print("flow-size distributions: " + ", ".join(cat["size_cdfs"]))
    print("switch schemes: " + ", ".join(cat["schemes"]))
    print("switch buffers: per_port, per_input_port, shared")
    print("host stacks: " + ", ".join(cat["host_stacks"]) + " (docs/hosts.md); io models: pthread, epoll")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="wscsim", description="Packet-level simulator of warehouse-scale datacenter networks.")
    sub = parser.add_subparsers(dest="command")
    p = sub.add_parser("run", help="run a scenario (a [sweep] table runs every point)")
    _common(p)
    p.add_argument("--out", default=None, help="results folder (default: results/NAME)")
    p.add_argument("--workers", type=int, default=None, help="parallel processes for sweeps (default: cores)")
    p = sub.add_parser("sweep", help="run a scenario over parameter values")
    _common(p)
    p.add_argument("--vary", action="append", default=[], metavar="PATH=V1,V2", help="a swept parameter, e.g. workload.senders=1,8,24")
    p.add_argument("--out", default=None)
    p.add_argument("--workers", type=int, default=None)
    p = sub.add_parser("check", help="validate a scenario without running it")
    _common(p)
    p.add_argument("--show", action="store_true", help="print the scenario with every default filled in")
    sub.add_parser("list", help="bundled scenarios, topologies, presets")
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["run"] + (argv or []))
    try:
        return {"run": cmd_run, "sweep": cmd_sweep, "check": cmd_check, "list": cmd_list}[args.command](args)
    except ScenarioError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: no results were written", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
