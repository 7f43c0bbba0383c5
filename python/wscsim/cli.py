"""The `wscsim` command: run, sweep, check, list, emulate.

Every error a user can cause is one line on stderr, `error: FIELD: given X; allowed: Y`,
with exit status 2; an interrupted run (Ctrl-C, SIGTERM) exits 130 and leaves nothing
that looks complete.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import signal
import sys

from .errors import ScenarioError
from .pool import WorkerDied


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line like every other error."""

    def error(self, message: str):
        print(f"error: {self.prog}: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", nargs="?", default=None, help="TOML file or bundled scenario name (default: diablo_incast)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE", help="override a field, e.g. --set transport.rto_min=1ms")
    p.add_argument("--seed", type=int, default=None, help="random seed (default: the scenario's)")
    p.add_argument("--allow-python", action="store_true", help="let the scenario's Python schemes run (a scenario runs code only when you say so)")


def _running(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default=None, help="results folder (default: results/NAME, numbered if it exists)")
    p.add_argument("--force", action="store_true", help="replace the --out folder if it holds an earlier wscsim run")
    p.add_argument("--workers", type=int, default=None, help="parallel processes for sweeps (default: cores)")
    p.add_argument("--no-plots", action="store_true", help="write tables and summary only")
    p.add_argument("--ray", metavar="ADDRESS", default=None, help="run a sweep's points on this Ray cluster (HOST:PORT, ray://HOST:PORT or auto; pip install wscsim[ray])")
    loud = p.add_mutually_exclusive_group()
    loud.add_argument("-q", "--quiet", action="store_true", help="print only the results folder")
    loud.add_argument("-v", "--verbose", action="store_true", help="also print invariants and the files written")


def _destination(args, sc: dict):
    from .folders import Destination, chosen_destination, default_out

    if args.out is None:
        return Destination(default_out(sc.get("name")), unique=True)
    return chosen_destination(args.out, args.force, field="--out")


def cmd_run(args, vary=None) -> int:
    from . import api
    from .scenario import apply_overrides, load, split_sweep

    if args.workers is not None and args.workers < 1:
        raise ScenarioError("--workers", f"given {args.workers}; allowed: at least 1")
    sc = load(args.scenario)
    sc = apply_overrides(sc, args.overrides)
    if vary:
        sweep = sc.setdefault("sweep", {})
        if not isinstance(sweep, dict):
            raise ScenarioError("sweep", f"given {sweep!r}; allowed: a table of dotted paths to lists of values")
        sweep.update(vary)
    api.refuse_ray_without_sweep(args.ray, split_sweep(sc)[1], field="--ray", sweep_hint="wscsim sweep --vary")
    res = api.run(sc, out=_destination(args, sc), seed=args.seed, progress=sys.stderr.isatty() and not args.quiet,
                  workers=args.workers, allow_python=args.allow_python, plots=not args.no_plots, ray=args.ray)
    if args.quiet:
        print(res.path)
    else:
        from .terminal import print_summary

        print_summary(res, verbose=args.verbose)
    return 0


def cmd_sweep(args) -> int:
    from .scenario import check_plain, parse_value

    vary = {}
    for v in args.vary:
        if "=" not in v:
            raise ScenarioError("--vary", f"given {v!r}; allowed: path=v1,v2,..., such as workload.senders=1,8,24")
        path, values = v.split("=", 1)
        vary[path.strip()] = [parse_value(x.strip()) for x in values.split(",") if x.strip()]
        check_plain(vary[path.strip()], f"--vary {path.strip()}")
    if not vary:
        raise ScenarioError("--vary", "given nothing; allowed: at least one --vary path=v1,v2,...")
    return cmd_run(args, vary=vary)


def cmd_check(args) -> int:
    from .scenario import apply_overrides, expand, load, split_sweep
    from .schemes import check, check_points

    sc = apply_overrides(load(args.scenario), args.overrides)
    if args.seed is not None:
        sc["seed"] = args.seed
    base, axes = split_sweep(sc)
    points = expand(base, axes) if axes else [(base, {})]
    resolved = check_points(points, args.allow_python)
    n = len(points)
    if args.show:
        # The scenario itself with every default filled in, and its sweep as written; not
        # any one point of it.
        shown = check(base, args.allow_python) if axes else resolved[0]
        if axes:
            shown["sweep"] = sc["sweep"]
        print(json.dumps(shown, indent=2))
    else:
        print(f"ok: {base.get('name', 'unnamed')} ({n} point{'s' if n > 1 else ''})")
    return 0


def cmd_emulate(args) -> int:
    from . import api
    from . import emulation as em

    if args.cleanup:
        if args.scenario is not None:
            raise ScenarioError("--cleanup", f"given with scenario {args.scenario!r}; allowed: --cleanup alone")
        em.check_privileges()
        removed = em.cleanup()
        print(f"removed {len(removed)} namespace{'s' if len(removed) != 1 else ''} of wscsim runs no longer running")
        return 0
    from .scenario import apply_overrides, load

    if args.no_write and args.out:
        raise ScenarioError("--no-write", f"given with --out {args.out!r}; allowed: one of them")
    sc = apply_overrides(load(args.scenario), args.overrides)
    try:
        res = api.emulate(sc, out=None if args.no_write else _destination(args, sc), seed=args.seed,
                          allow_python=args.allow_python, overwrite=args.force)
    except OSError as e:  # a namespace, device or program the system would not make
        print(f"error: emulate: {e}; nothing was left behind and no results were written", file=sys.stderr)
        return 1
    e = res.summary["emulation"]
    if args.quiet:
        print(res.path or "")
    else:
        print(f"{sc.get('name', 'emulation')}: {e['frames_in']:,} frames in, {e['frames_out']:,} out; lateness median "
              f"{e['lateness_p50_us']:.1f} us, p99 {e['lateness_p99_us']:.1f} us, {100 * e['late_fraction']:.2f}% over "
              f"{e['lateness_bound_us']:g} us ({'within' if e['within_bound'] else 'OVER'} bound)")
        for r in e["programs"]:
            status = "ok" if r["ok"] else "FAILED (still running at the end)" if r["stopped"] else f"FAILED (exit {r['exit_status']})"
            print(f"  host {r['host']}: {r['command']}: {status}")
        print(f"results: {res.path or 'not written (--no-write)'}")
    bad = [r for r in e["programs"] if not r["ok"]]
    if bad:
        where = f" (output under {res.path}/programs)" if res.path else ""
        print(f"error: {len(bad)} program{'s' if len(bad) > 1 else ''} failed{where}", file=sys.stderr)
        return 1
    return 0


def cmd_list(args) -> int:
    from .terminal import print_catalogue

    print_catalogue()
    return 0


def _parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = _Parser(prog="wscsim", description="Packet-level simulator of warehouse-scale datacenter networks.")
    parser.add_argument("--version", action="version", version=f"wscsim {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    p = sub.add_parser("run", help="run a scenario (a [sweep] table runs every point)")
    _common(p)
    _running(p)
    p = sub.add_parser("sweep", help="run a scenario over parameter values")
    _common(p)
    p.add_argument("--vary", action="append", default=[], metavar="PATH=V1,V2", help="a swept parameter, e.g. workload.senders=1,8,24")
    _running(p)
    p = sub.add_parser("check", help="validate a scenario without running it (runs none of its code)")
    _common(p)
    p.add_argument("--show", action="store_true", help="print the scenario with every default filled in")
    sub.add_parser("list", help="bundled scenarios, topologies, presets")
    p = sub.add_parser("emulate", help="run a scenario in real time with real programs in network namespaces (root)")
    _common(p)
    p.add_argument("--out", default=None, help="results folder (default: results/NAME, numbered if it exists)")
    p.add_argument("--force", action="store_true", help="replace the --out folder if it holds an earlier wscsim run")
    p.add_argument("--no-write", action="store_true", help="write no results folder")
    p.add_argument("-q", "--quiet", action="store_true", help="print only the results folder")
    p.add_argument("--cleanup", action="store_true", help="remove what crashed runs left (namespaces and their programs), then exit")
    return parser


def _printable(text: str) -> str:
    """A message on one line whatever it quotes: control characters (newlines, record
    separators and the like in a user's keys or values) are shown escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _missing_privilege() -> type[Exception]:
    from .emulation import MissingPrivilege

    return MissingPrivilege


_INTERRUPTED = False


def _interrupted(signum, frame):
    global _INTERRUPTED
    _INTERRUPTED = True
    raise KeyboardInterrupt


def main(argv=None) -> int:
    parser = _parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] not in ("run", "sweep", "check", "list", "emulate", "-h", "--help", "--version"):
        argv = ["run"] + argv
    args = parser.parse_args(argv)
    # SIGTERM stops a run as Ctrl-C does: partial output removed, exit 130. Both are
    # remembered, because an interrupt that lands inside a library's import can come out
    # as another exception (numpy turns it into an ImportError).
    signal.signal(signal.SIGTERM, _interrupted)
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, _interrupted)
    # `kill -USR1 <pid>` prints where a run that seems stuck is (every thread's Python
    # stack, on stderr), and the run goes on. Not where stderr is no file (called in-process
    # with its output captured).
    try:
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    except (AttributeError, ValueError, OSError):
        pass
    try:
        commands = {"run": cmd_run, "sweep": cmd_sweep, "check": cmd_check, "list": cmd_list, "emulate": cmd_emulate}
        return commands[args.command](args)
    except ScenarioError as e:
        print(f"error: {_printable(str(e))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: no results were written", file=sys.stderr)
        return 130
    except _missing_privilege() as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except WorkerDied as e:
        print(f"error: {e}; no results were written", file=sys.stderr)
        return 1
    except RecursionError:
        print("error: scenario: given tables or lists nested too deep; allowed: a scenario's few levels", file=sys.stderr)
        return 2
    except Exception:
        if _INTERRUPTED:
            print("interrupted: no results were written", file=sys.stderr)
            return 130
        raise


def console_main() -> int:
    """The `wscsim` command: `main`, after which a late Ctrl-C or SIGTERM (the run is
    complete, only the interpreter's exit is left) is ignored instead of printing a
    traceback over a finished run."""
    code = main()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    return code


if __name__ == "__main__":
    sys.exit(console_main())
