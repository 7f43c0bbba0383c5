"""Running one scenario point with the native core, in slices of simulated time so that a
progress bar can follow it and Ctrl-C can stop it."""

from __future__ import annotations

import contextlib
import json
import os
import time
from typing import NamedTuple

from . import _native
from .errors import ScenarioError
from .folders import Destination
from .progress import PointProgress
from .results import Result, frames_from_native, write
from .scenario import python_schemes
from .schemes import native_simulation

SLICES = 200


class Outcome(NamedTuple):
    """What one simulated point produced: its summary, tables and pcap files by name."""

    summary: dict
    tables: dict
    captures: dict[str, bytes]


def simulate(sc: dict, progress: bool = False, label: str | None = None, allow_python: bool = False, report=None):
    """Runs a scenario dict; returns its Outcome. `report(fraction done, events per
    second)` is called after each slice of the run (a sweep's progress)."""
    sim = native_simulation(sc, allow_python)
    t0 = time.perf_counter()
    end = sim.end_ps
    step = max(1, end // SLICES)
    shown = PointProgress(label or str(sc.get("name", "run")), end, progress)
    try:
        while True:
            t_slice = time.perf_counter()
            try:
                with _exit_refused():
                    done = sim.run_until(min(end, sim.now_ps + step))
            except _native.SchemeError as e:
                raise _python_error(sc, e) from None
            except _native.ScenarioError as e:  # the engine stopped a run making no progress
                raise ScenarioError(*e.args) from None
            if done:
                break
            # Keep slices between about 50 and 200 ms of wall time, so that the progress bar
            # moves and Ctrl-C is answered quickly whatever the scenario.
            took = time.perf_counter() - t_slice
            if took > 0.2:
                step = max(1, step // 2)
            elif took < 0.05:
                step = min(end, step * 2)
            shown.update(sim.now_ps, sim.events)
            if report is not None:
                report(sim.now_ps / max(1, end), sim.events / max(1e-9, time.perf_counter() - t0))
        # A run whose workload finished early ends at 100%, naming what comes next.
        shown.phase("building tables")
        return _outcome(sc, sim, time.perf_counter() - t0)
    finally:
        shown.close()


def _outcome(sc: dict, sim, wall: float) -> Outcome:
    """The finished simulation's summary, tables and captures (consumes `sim`)."""
    try:
        summary = json.loads(sim.summary_json())
    except _native.SchemeError as e:
        raise _python_error(sc, e) from None
    summary["wall_seconds"] = wall
    summary["version"] = _native.VERSION
    summary["events_per_second"] = summary["events"] / wall if wall > 0 else None
    summary["packet_hops_per_second"] = summary["packet_hops"] / wall if wall > 0 else None
    points = sim.captures()
    captures = {name: data for name, data, _, _ in points}
    if points:
        from .results import capture_file_stem

        summary["captures"] = [{"name": name, "file": f"capture/{capture_file_stem(name)}.pcap", "packets": kept, "packets_seen": seen}
                               for name, _, kept, seen in points]
    native = sim.tables()
    del sim  # tables() consumed the simulation (its memory went before the largest table was built)
    return Outcome(summary, frames_from_native(native), captures)


class UserCodeExit(Exception):
    """A Python scheme or service called os._exit, which would end wscsim without a word."""


@contextlib.contextmanager
def _exit_refused():
    """While the core runs (and calls user code), os._exit raises UserCodeExit, which fails
    the hook that called it like any exception, naming it; restored after each slice, so
    the worker pool's own use of os._exit is untouched."""
    real = os._exit

    def refused(status):
        raise UserCodeExit(f"os._exit({status}) called; allowed: return or raise (a run cannot be ended from a hook)")

    os._exit = refused
    try:
        yield
    finally:
        os._exit = real


def _python_error(sc: dict, e: Exception) -> ScenarioError:
    """A Python scheme's or service's error as a ScenarioError naming the field that set its
    class. A service's message starts with its entry (`runtime.services[i].class: `); a
    scheme's with its class string."""
    msg = str(e).strip()
    head, sep, rest = msg.partition(": ")
    if sep and head.startswith("runtime.services["):
        return ScenarioError(head, rest)
    path = next((f"{p}.class" for p, c in python_schemes(sc) if msg.startswith(f"{c}.")), "switch.scheme.class")
    return ScenarioError(path, msg)


def plots_for_run(workers: int | None = None, progress: bool = False, svg: bool = False):
    """What draws a run's plots into its folder (in up to `workers` processes; as SVG
    too with `svg`), listing them in summary["plots"]."""

    def draw(frames, summary, folder):
        from . import drawing  # matplotlib loads only when a folder gets plots

        summary["plots"] = drawing.draw(drawing.run_figures(frames, summary), folder, workers, progress, svg)

    return draw


def run_point(sc: dict, dest: Destination | None, progress: bool = False, allow_python: bool = False, make_plots: bool = True,
              workers: int | None = None, svg: bool = False) -> Result:
    """Runs one point and, if `dest` is given, writes its folder (atomically); its plots
    are drawn in up to `workers` processes."""
    summary, frames, captures = simulate(sc, progress=progress, allow_python=allow_python)
    return write(dest, summary, frames, plots=plots_for_run(workers, progress, svg) if make_plots else None, captures=captures)
