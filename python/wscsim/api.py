"""The Python entry points: `run` and `sweep`."""

from __future__ import annotations

from pathlib import Path

from .results import Result
from .runner import run_point
from .scenario import apply_overrides, load, split_sweep
from .sweep import run_sweep


def _prepare(scenario, overrides, seed):
    sc = load(scenario)
    sc = apply_overrides(sc, overrides)
    if seed is not None:
        sc["seed"] = seed
    return split_sweep(sc)


def run(scenario=None, *, out: str | Path | None = None, seed: int | None = None, overrides=None, progress: bool = False, workers: int | None = None) -> Result:
    """Runs a scenario (a TOML path, a bundled name, or a dict) and returns its Result.

    A scenario with a `[sweep]` table runs every point (in parallel processes) and returns
    the combined tables, with the swept parameters as columns. With `out`, the results
    folder is written there; without it nothing is written.
    """
    base, axes = _prepare(scenario, overrides, seed)
    if axes:
        return run_sweep(base, axes, Path(out) if out else None, workers=workers, progress=progress)
    return run_point(base, Path(out) if out else None, progress=progress)


def sweep(scenario=None, vary: dict | None = None, **kwargs) -> Result:
    """Like `run`, adding (or replacing) sweep axes: `vary={"workload.senders": [1, 8, 24]}`."""
    sc = apply_overrides(load(scenario), kwargs.pop("overrides", None))
    if vary:
        sc.setdefault("sweep", {}).update(vary)
    return run(sc, **kwargs)
