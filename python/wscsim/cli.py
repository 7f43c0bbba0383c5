"""The `wscsim` command: run, sweep, check, list, emulate, plot.

Every error a user can cause is one line on stderr, `error: FIELD: given X; allowed: Y`,
with exit status 2; an interrupted run (Ctrl-C, SIGTERM) exits 130 and leaves nothing
that looks complete.
"""

from __future__ import annotations

import os
import signal
import sys

# A signal that comes before main() can act on it (while this module's imports load) is
# noted here and acted on as soon as main() starts.
_SIGNALLED = 0


def _note_signal(signum, frame):
    global _SIGNALLED
    _SIGNALLED = signum


def _note_signals_from_now() -> None:
    """Ctrl-C and SIGTERM are noted instead of stopping the import halfway (a traceback, or
    for SIGTERM a silent exit) from here on; main() then reports them as interrupts."""
    signal.signal(signal.SIGTERM, _note_signal)
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, _note_signal)


# As early as the `wscsim` command can: before the imports below, which take most of the
# first tenth of a second. Not when another program imports this module (a notebook's
# Ctrl-C must stay its own).
if __name__ == "__main__" or os.path.basename(sys.argv[0]) in ("wscsim", "wscsim.exe"):
    _note_signals_from_now()

import argparse  # noqa: E402
import faulthandler  # noqa: E402
import json  # noqa: E402

from .errors import ScenarioError  # noqa: E402
from .pool import WorkerDied  # noqa: E402


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
    p.add_argument("--svg", action="store_true", help="write each plot as SVG too (for papers), beside its PNG")
    p.add_argument("--seeds", type=int, default=None, metavar="N",
                   help="run every point with N seeds (seed, seed+1, ...): per-seed rows, means with 95%% confidence intervals")
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
    if args.seeds is not None:
        from .seeds import checked

        checked(args.seeds, "--seeds")
    res = api.run(sc, out=_destination(args, sc), seed=args.seed, seeds=args.seeds, progress=sys.stderr.isatty() and not args.quiet,
                  workers=args.workers, allow_python=args.allow_python, plots=not args.no_plots, svg=args.svg, ray=args.ray)
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
    # Each point's simulation is built too (not run): check refuses what a run's start would.
    resolved = check_points(points, args.allow_python, base=base, build=True)
    n = len(points)
    if args.show or args.json:
        # The scenario itself with every default filled in, and its sweep as written; not
        # any one point of it.
        shown = _defaults_every_point_shares(check(base, args.allow_python), base, resolved) if axes else resolved[0]
        if axes:
            shown["sweep"] = sc["sweep"]
        print(json.dumps(shown, indent=2) if args.json else _as_toml(shown), end="\n" if args.json else "")
    else:
        print(f"ok: {base.get('name', 'unnamed')} ({n} point{'s' if n > 1 else ''})")
        _list_commands(resolved)
    return 0


def _defaults_every_point_shares(shown: dict, written: dict, points: list[dict]) -> dict:
    """A sweep's base with the defaults filled in that every point resolves to as well: a
    default that depends on a swept value (a link's rate follows its technology) is left
    out, so that the file, with its [sweep] table, runs as the sweep does."""

    def keep(v, w, others: list, at_top: bool):
        if isinstance(v, dict):
            out = {}
            for k, x in v.items():
                if at_top and k == "sweep":
                    continue
                mine = w.get(k) if isinstance(w, dict) else None
                theirs = [o.get(k) if isinstance(o, dict) else None for o in others]
                if mine is not None or all(t == x for t in theirs):
                    out[k] = keep(x, mine, theirs, False) if isinstance(x, dict) else x
            return out
        return v

    return keep(shown, written, points, True)


def _as_toml(scenario: dict) -> str:
    """A scenario as a TOML file that `wscsim run` takes back (TOML has no null: a key
    whose value is none is left out, which means the same)."""
    from .toml_text import dumps

    def without_nulls(v):
        if isinstance(v, dict):
            return {k: without_nulls(x) for k, x in v.items() if x is not None}
        return [without_nulls(x) for x in v] if isinstance(v, list) else v

    return "# the scenario as it would run, every default filled in (wscsim check --show)\n" + dumps(without_nulls(scenario))


def _list_commands(resolved: list[dict]) -> None:
    """What `wscsim emulate` would run for this scenario, shown and not run."""
    from .emulation import commands_to_run

    if len(resolved) == 1 and commands_to_run(resolved[0]):
        print("wscsim emulate would run, given --allow-commands:")
        for line in commands_to_run(resolved[0]):
            print(f"  {_printable(line)}")


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
                          allow_python=args.allow_python, allow_commands=args.allow_commands, overwrite=args.force)
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


def cmd_plot(args) -> int:
    from .drawing import redraw

    if args.workers is not None and args.workers < 1:
        raise ScenarioError("--workers", f"given {args.workers}; allowed: at least 1")
    made = redraw(args.folder, workers=args.workers, progress=sys.stderr.isatty() and not args.quiet, svg=args.svg)
    if not args.quiet:
        pngs = [m for m in made if m.endswith(".png")]
        formats = "PNG and SVG" if args.svg else "PNG"
        print(f"{len(pngs)} plot{'s' if len(pngs) != 1 else ''} drawn again ({formats}): {', '.join(pngs) or 'none had anything to show'}")
    print(f"results: {args.folder}" if not args.quiet else args.folder)
    return 0


def cmd_help(args) -> int:
    """`wscsim help [COMMAND]`: what --help prints (argparse prints it and exits 0)."""
    _parser().parse_args([args.topic, "--help"] if args.topic else ["--help"])
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
    p.add_argument("--show", action="store_true", help="print the scenario with every default filled in, as TOML")
    p.add_argument("--json", action="store_true", help="print it as JSON instead")
    sub.add_parser("list", help="bundled scenarios, topologies, presets")
    p = sub.add_parser("plot", help="draw a results folder's plots again from its tables (writes only inside it)")
    p.add_argument("folder", metavar="FOLDER", help="a results folder written by wscsim run or sweep")
    p.add_argument("--workers", type=int, default=None, help="parallel processes drawing plots (default: cores)")
    p.add_argument("--svg", action="store_true", help="write each plot as SVG too (for papers), beside its PNG")
    p.add_argument("-q", "--quiet", action="store_true", help="print only the results folder")
    p = sub.add_parser("emulate", help="run a scenario in real time with real programs in network namespaces (root)")
    _common(p)
    p.add_argument("--out", default=None, help="results folder (default: results/NAME, numbered if it exists)")
    p.add_argument("--force", action="store_true", help="replace the --out folder if it holds an earlier wscsim run")
    p.add_argument("--no-write", action="store_true", help="write no results folder")
    p.add_argument("--allow-commands", action="store_true", help="let the scenario's [[emulation.apps]] commands run (a scenario runs commands only when you say so)")
    p.add_argument("-q", "--quiet", action="store_true", help="print only the results folder")
    p.add_argument("--cleanup", action="store_true", help="remove what crashed runs left (namespaces and their programs), then exit")
    p = sub.add_parser("help", help="print this help, or a command's (wscsim help run)")
    p.add_argument("topic", nargs="?", metavar="COMMAND", choices=[c for c in sub.choices if c != "help"],
                   help="a command: " + ", ".join(c for c in sub.choices if c != "help"))
    return parser


def _out_of_memory(e: BaseException | None) -> bool:
    """An import or a thread that failed because the address space or memory ran out (the
    loader's mmap or a thread's stack refused), anywhere in its chain of causes."""
    while e is not None:
        text = str(e)
        if any(w in text for w in ("failed to map segment", "Cannot allocate memory", "can't start new thread")):
            return True
        e = e.__cause__ or e.__context__
    return False


def _printable(text: str) -> str:
    """A message on one line whatever it quotes: control characters (newlines, record
    separators and the like in a user's keys or values) are shown escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _missing_privilege(e: Exception) -> bool:
    """Whether `e` is emulate's refusal to run without root. Looked up only if emulation was
    imported (it alone raises it): importing it here would load numpy in an except clause,
    and fail again after an import that an interrupt broke."""
    emulation = sys.modules.get(f"{__package__}.emulation")
    return emulation is not None and isinstance(e, emulation.MissingPrivilege)


_IN_UNRAISABLE_HOOK = False
_OTHER_UNRAISABLE_HOOK = sys.unraisablehook


def _interrupted(signum, frame):
    global _SIGNALLED
    _SIGNALLED = signum
    if _IN_UNRAISABLE_HOOK:  # raised there, it would be discarded again
        _interrupt_again_soon()
        return
    raise KeyboardInterrupt


def _interrupt_discarded(unraisable) -> None:
    """sys.unraisablehook. An interrupt raised where Python discards exceptions (in a
    weakref callback or a __del__ that ran when the signal came, as import's module locks
    have) would be lost after a traceback on stderr: it is raised again instead, once that
    code has returned."""
    global _IN_UNRAISABLE_HOOK
    if not (_SIGNALLED and issubclass(unraisable.exc_type, KeyboardInterrupt)):
        _OTHER_UNRAISABLE_HOOK(unraisable)
        return
    _IN_UNRAISABLE_HOOK = True
    try:
        _interrupt_again_soon()
    finally:
        _IN_UNRAISABLE_HOOK = False


def _interrupt_again_soon() -> None:
    """Has the signal's handler run again in the main thread in 10 ms, by which time the
    code that discarded it has returned."""
    import _thread
    import threading

    timer = threading.Timer(0.01, _thread.interrupt_main, args=(_SIGNALLED,))
    timer.daemon = True
    timer.start()
    _RETRY_TIMERS.append(timer)


_RETRY_TIMERS: list = []


def _stop_retry_timers() -> None:
    """Ends the timers `_interrupt_again_soon` started, so that none is left to wake while
    the interpreter shuts down."""
    while _RETRY_TIMERS:
        timer = _RETRY_TIMERS.pop()
        timer.cancel()
        timer.join()


def _stop_on_signals() -> None:
    """SIGTERM stops a run as Ctrl-C does: partial output removed, exit 130. Both are
    remembered, because an interrupt that lands inside a library's import can come out as
    another exception (numpy turns it into an ImportError), or be discarded (see
    `_interrupt_discarded`). One noted before this (see `_note_signals_from_now`) is raised
    now."""
    global _OTHER_UNRAISABLE_HOOK
    _OTHER_UNRAISABLE_HOOK = sys.unraisablehook
    sys.unraisablehook = _interrupt_discarded
    signal.signal(signal.SIGTERM, _interrupted)
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, _interrupted)
    if _SIGNALLED:
        raise KeyboardInterrupt


def _what_an_interrupt_left() -> str:
    """The line an interrupt ends with, saying what is on disk: nothing, or a results folder
    that was complete when the interrupt came (after the simulation, while plots were drawn,
    or as the outcome was printed)."""
    folders = sys.modules.get(f"{__package__}.folders")
    kept = folders.committed_folders() if folders is not None else []
    if not kept:
        return "interrupted: no results were written"
    path = kept[-1]
    try:
        status = json.loads((path / "summary.json").read_text()).get("plots_status", "")
    except (OSError, ValueError):
        status = ""
    if status.startswith("incomplete"):
        return (f"interrupted while drawing plots: {path} holds the complete results, with the plots drawn until then "
                f"(summary.json: plots_status {status!r})")
    return f"interrupted: the results were written completely to {path}"


def _stdout_closed(command: str | None) -> int:
    """Standard output was closed before all was printed (`wscsim run | head -1`): the rest is
    dropped without Python's error at exit. Not a failure once what the command was for is
    done: a check's, list's or help's output (or --help's, before there is a command), or a
    run whose results are written."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    folders = sys.modules.get(f"{__package__}.folders")
    if command in (None, "check", "list", "help") or (folders is not None and folders.committed_folders()):
        return 0
    print("error: stdout: closed before the command finished; no results were written", file=sys.stderr)
    return 1


def main(argv=None) -> int:
    given = argv
    argv = sys.argv[1:] if argv is None else list(argv)
    # `kill -USR1 <pid>` prints where a run that seems stuck is (every thread's Python
    # stack, on stderr), and the run goes on. Not where stderr is no file (called in-process
    # with its output captured).
    try:
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    except (AttributeError, ValueError, OSError):
        pass
    try:
        _stop_on_signals()
        if not argv or argv[0] not in ("run", "sweep", "check", "list", "emulate", "plot", "help", "-h", "--help", "--version"):
            argv = ["run"] + argv
        args = _parser().parse_args(argv)
        from .provenance import set_command_line

        set_command_line(["wscsim", *sys.argv[1:]] if given is None else ["wscsim", *given])
        commands = {"run": cmd_run, "sweep": cmd_sweep, "check": cmd_check, "list": cmd_list, "emulate": cmd_emulate, "plot": cmd_plot, "help": cmd_help}
        return commands[args.command](args)
    except ScenarioError as e:
        print(f"error: {_printable(str(e))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        _note_signals_from_now()  # a second Ctrl-C does not cut the last line short
        print(_what_an_interrupt_left(), file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _stdout_closed(args.command if "args" in locals() else None)
    except WorkerDied as e:
        print(f"error: {e}; no results were written", file=sys.stderr)
        return 1
    except RecursionError:
        print("error: scenario: given tables or lists nested too deep; allowed: a scenario's few levels", file=sys.stderr)
        return 2
    except Exception as e:
        if isinstance(e, MemoryError) or _out_of_memory(e):
            # Building tables or plots ran out (ulimit -v, a cgroup or the machine), or a
            # library loaded late (pyarrow) or a thread could not be mapped for want of
            # address space; the core's own allocations end the process with a line of
            # their own.
            print("error: memory: the run's tables or plots did not fit in this process's memory (the machine, ulimit -v or the cgroup limit); no results were written", file=sys.stderr)
            return 1
        if _SIGNALLED:
            _note_signals_from_now()
            print(_what_an_interrupt_left(), file=sys.stderr)
            return 130
        if _missing_privilege(e):
            print(f"error: {e}", file=sys.stderr)
            return 2
        raise
    finally:
        if sys.unraisablehook is _interrupt_discarded:
            sys.unraisablehook = _OTHER_UNRAISABLE_HOOK
        _stop_retry_timers()
        provenance = sys.modules.get(f"{__package__}.provenance")
        if provenance is not None:  # a later run from Python in this process has no command line
            provenance.set_command_line(None)


def console_main() -> int:
    """The `wscsim` command: `main`, after which a late Ctrl-C or SIGTERM (the run is
    complete, only the interpreter's exit is left) is ignored instead of printing a
    traceback over a finished run."""
    try:
        code = main()
    except KeyboardInterrupt:  # in the instant between main's answer and the lines below
        _note_signals_from_now()
        print(_what_an_interrupt_left(), file=sys.stderr)
        code = 130
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if _SIGNALLED:
        _exit_at_once(code)
    return code


def _exit_at_once(code: int) -> None:
    """Ends the process after an interrupt with the status main chose, without the
    interpreter's shutdown. A library stopped mid-call (Arrow writing a table) can leave
    native threads or objects that fail as the interpreter shuts down ('Fatal Python error:
    PyThreadState_Get', SIGABRT, about once in 150 interrupts); and CPython marks an
    interrupt that passed through code run from a string (dataclasses and namedtuples make
    their methods so, at import) as unhandled, though it was caught, and at exit kills
    itself with SIGINT. What had to be cleaned up was, by the handlers that ran."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


if __name__ == "__main__":
    sys.exit(console_main())
