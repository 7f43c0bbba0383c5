"""Sweeps: every combination of swept values, run in parallel local processes, combined
into one table per kind with the swept parameters as columns."""

from __future__ import annotations

import json
import os
import time

import pandas as pd

from .errors import ScenarioError
from .folders import Destination
from .pool import LocalPool
from .report import write_html
from .results import Result, write, write_captures
from .runner import simulate
from .scenario import CASE_AXIS, expand
from .schemes import check_points


def _key(v) -> str:
    """A swept value as a dict key (tables and lists are not hashable)."""
    return json.dumps(v, sort_keys=True)


def _column_names(paths: list[str], table_columns: set[str]) -> dict[str, str]:
    """Swept parameter -> result column: its last key ("transport.rto_min" -> "rto_min"),
    or the whole path with underscores when that would clash with a table's own column or
    another swept parameter ("transport.kind" -> "transport_kind", as tables have `kind`)."""
    last = [p.split(".")[-1] for p in paths]
    return {p: (s if s not in table_columns and last.count(s) == 1 else p.replace(".", "_")) for p, s in zip(paths, last)}


def column_values(values: list) -> list:
    """A swept axis's values as one table column can hold them: numbers, strings and
    booleans of one kind stay as they are; tables, lists and mixed kinds become their
    compact JSON text ("droptail", {kind = "red"} -> "droptail", '{"kind":"red"}')."""
    kinds = {type(v) for v in values}
    if len(kinds) == 1 and kinds <= {bool, int, float, str}:
        return list(values)
    if kinds <= {int, float}:
        return [float(v) for v in values]
    return [v if isinstance(v, str) else json.dumps(v, sort_keys=True, separators=(",", ":")) for v in values]


def _run(job):
    i, sc, allow_python = job
    try:
        return i, simulate(sc, allow_python=allow_python), None
    except ScenarioError as e:
        return i, None, (e.path, e.message)


def run_sweep(base: dict, axes, dest: Destination | None, workers: int | None = None, progress: bool = False, allow_python: bool = False,
              make_plots: bool = True, ray: str | None = None) -> Result:
    """Runs every point of a sweep: in `workers` local processes, or as tasks on the Ray
    cluster at address `ray`; the tables are the same either way."""
    points = expand(base, axes)
    check_points(points, allow_python, for_run=True)  # every point, before any runs
    t0 = time.perf_counter()
    jobs = [(i, sc, allow_python) for i, (sc, _) in enumerate(points)]
    label = str(base.get("name", "sweep"))
    results = _run_all(jobs, max(1, workers or min(len(points), os.cpu_count() or 1)), ray, label if progress else None)
    tables, names = _combine(points, axes, results)
    summary = {
        "sweep": [{"path": p, "values": v, "column": names[p]} for p, v in axes],
        "points": len(points),
        "scenario": base,
        "seed": base.get("seed", 1),
        "wall_seconds": time.perf_counter() - t0,
        "version": results[0].summary["version"],
        "point_summaries": [r.summary for r in results],
        "invariants": {"ok": all(r.summary["invariants"]["ok"] for r in results)},
        "headline": {},
    }
    swept = [names[p] for p, _ in axes]
    width = max(3, len(str(len(points) - 1)))

    def point_folders(tables, summary, folder):
        # Each point also gets a folder of its own, as a single run would write it.
        for i, (point_summary, frames, captures) in enumerate(results):
            sub = folder / "points" / f"{i:0{width}d}"
            sub.mkdir(parents=True)
            for name, df in frames.items():
                df.to_parquet(sub / f"{name}.parquet", index=False, compression="zstd")
            write_captures(sub, captures)
            write_html(sub, point_summary, frames)
            (sub / "summary.json").write_text(json.dumps(point_summary, indent=2, sort_keys=True) + "\n")

    def draw(tables, summary, folder):
        from . import drawing  # matplotlib loads only when a folder gets plots

        summary["plots"] = drawing.draw(drawing.sweep_figures(tables, summary, swept), folder, workers, progress)

    # The point folders are part of the result; the plots, drawn last, may be cut short.
    return write(dest, summary, tables, point_folders, plots=draw if make_plots else None, points_width=width)


def _run_all(jobs: list, workers: int, ray: str | None, progress_label: str | None) -> list:
    """Every job's Outcome, in job order; a point's scenario error stops the sweep."""
    results: list = [None] * len(jobs)
    # Workers start before the progress bar's thread does (they are forked).
    pool = LocalPool(_run, workers) if workers > 1 and ray is None else None
    if ray is not None:
        from . import ray_pool

        outcomes = ray_pool.outcomes(_run, jobs, ray)
    else:
        outcomes = pool.outcomes(jobs) if pool else map(_run, jobs)
    bar = None
    if progress_label is not None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        bar = Progress(TextColumn(progress_label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), transient=True)
        bar.start()
        task = bar.add_task("points", total=len(jobs))
    try:
        for i, res, error in outcomes:
            if error:
                raise ScenarioError(*error)
            results[i] = res
            if bar is not None:
                bar.advance(task)
    finally:
        if pool is not None:
            pool.stop()
        if hasattr(outcomes, "close"):
            outcomes.close()
        if bar is not None:
            bar.stop()
    return results


def _combine(points: list, axes, results: list) -> tuple[dict, dict]:
    """One table per kind over all points, with `point` and the swept values as columns,
    and the `points` table; returns (tables, swept path -> column name)."""
    labels = {p: [v["name"] for v in vals] if p is CASE_AXIS else vals for p, vals in axes}
    columns = {p: dict(zip(map(_key, vals), column_values(vals))) for p, vals in labels.items()}
    table_columns = {c for r in results for df in r.tables.values() for c in df.columns} | {"point"}
    names = _column_names([p for p, _ in axes], table_columns)
    combined: dict[str, list[pd.DataFrame]] = {}
    point_rows = []
    for i, ((sc, params), r) in enumerate(zip(points, results)):
        params = {k: columns[k][_key(v)] for k, v in params.items()}
        row = {"point": i, **{names[k]: v for k, v in params.items()}}
        row.update({f"headline_{k}": v for k, v in r.summary["headline"].items()})
        row["invariants_ok"] = r.summary["invariants"]["ok"]
        point_rows.append(row)
        for name, df in r.tables.items():
            df = df.copy()
            df.insert(0, "point", i)
            for k, v in reversed(list(params.items())):
                df.insert(1, names[k], [v] * len(df))
            combined.setdefault(name, []).append(df)
    tables = {name: pd.concat(dfs, ignore_index=True) for name, dfs in combined.items()}
    tables["points"] = pd.DataFrame(point_rows)
    return tables, names
