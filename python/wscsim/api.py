"""The Python entry points: `run` and `sweep`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .folders import Destination, chosen_destination
from .results import Result
from .scenario import apply_overrides, check_plain, load, split_sweep

Scenario = str | Path | dict | None
Overrides = dict[str, Any] | list[str] | None


def _prepare(scenario: Scenario, overrides: Overrides, seed: int | None, seeds: int | None = None):
    sc = load(scenario)
    sc = apply_overrides(sc, overrides)
    if seed is not None:
        check_plain(seed, "seed")  # NaN is no JSON: the core would blame the scenario
        sc["seed"] = seed
    if seeds is not None:
        check_plain(seeds, "seeds")
        sc["seeds"] = seeds
    return split_sweep(sc)


def _destination(out: str | Path | Destination | None, overwrite: bool) -> Destination | None:
    if out is None or isinstance(out, Destination):
        return out
    return chosen_destination(out, overwrite, field="out")


def refuse_ray_without_sweep(ray: str | None, axes: list, field: str = "ray", sweep_hint: str = "wscsim.sweep(vary=...)") -> None:
    """Ray runs a sweep's points on a cluster; a single point runs here, so a Ray address
    given with one is refused rather than ignored."""
    if ray is not None and not axes:
        from .errors import ScenarioError

        raise ScenarioError(field, f"given {ray!r} for a scenario without a sweep; allowed: {field} only with a sweep "
                                   f"(a [sweep] table or {sweep_hint}); a single point runs in this process")


def run(
    scenario: Scenario = None,
    *,
    out: str | Path | None = None,
    seed: int | None = None,
    seeds: int | None = None,
    overrides: Overrides = None,
    overwrite: bool = False,
    allow_python: bool = False,
    plots: bool = True,
    svg: bool = False,
    progress: bool = False,
    workers: int | None = None,
    ray: str | None = None,
) -> Result:
    """Runs a scenario (a TOML path, a bundled name, or a dict) and returns its Result.

    A scenario with a `[sweep]` table runs every point (in parallel processes) and returns
    the combined tables, with the swept parameters as columns. With `out`, the results
    folder is written there (an existing one only with `overwrite=True`, and only if
    wscsim wrote it); without it nothing is written. Python schemes named by the scenario
    run only with `allow_python=True` (schemes given to `register_scheme` always do).
    A sweep's points run in `workers` local processes (default: one per core), or on the
    Ray cluster at address `ray` (`pip install wscsim[ray]`), with the same results; the
    plots are drawn in up to `workers` local processes (1: in this one), as PNG, and as SVG
    too with `svg=True`. `seeds=N` (or
    `seeds = N` in the scenario) runs every point with the seeds seed to seed + N - 1, as
    a sweep whose last axis is `seed`; its summary gives each headline figure's mean and
    95% confidence interval over the seeds.
    """
    base, axes = _prepare(scenario, overrides, seed, seeds)
    refuse_ray_without_sweep(ray, axes)
    dest = _destination(out, overwrite)
    if axes:
        from .sweeps import run_sweep

        return run_sweep(base, axes, dest, workers=workers, progress=progress, allow_python=allow_python, make_plots=plots, ray=ray, svg=svg)
    from .runner import run_point

    return run_point(base, dest, progress=progress, allow_python=allow_python, make_plots=plots, workers=workers, svg=svg)


def emulate(
    scenario: Scenario = None,
    *,
    out: str | Path | None = None,
    seed: int | None = None,
    overrides: Overrides = None,
    overwrite: bool = False,
    allow_python: bool = False,
    allow_commands: bool = False,
) -> Result:
    """Runs a scenario in real time: its hosts are Linux network namespaces, its
    `[[emulation.apps]]` real programs in them, its fabric carries their frames (needs
    root; docs/emulation.md). Returns the Result, whose summary has an "emulation" part
    (lateness, frames, each program's exit status). No sweeps. The scenario's commands
    run only with `allow_commands=True`, as root without capabilities unless the scenario
    names a user or capabilities."""
    from . import emulation as em
    from .errors import ScenarioError

    base, axes = _prepare(scenario, overrides, seed)
    if axes:
        raise ScenarioError("sweep", "given a sweep; allowed: none with emulate (one real-time run at a time)")
    return em.run(base, _destination(out, overwrite), allow_python=allow_python, allow_commands=allow_commands)


def sweep(scenario: Scenario = None, vary: dict[str, list] | None = None, **kwargs: Any) -> Result:
    """Like `run`, adding (or replacing) sweep axes: `vary={"workload.senders": [1, 8, 24]}`."""
    sc = apply_overrides(load(scenario), kwargs.pop("overrides", None))
    if vary:
        sweep_table = sc.setdefault("sweep", {})
        if not isinstance(vary, dict) or not isinstance(sweep_table, dict):
            from .errors import ScenarioError

            raise ScenarioError("vary", f"given {type(vary).__name__}; allowed: a dict of dotted paths to lists of values")
        sweep_table.update(vary)
    return run(sc, **kwargs)
