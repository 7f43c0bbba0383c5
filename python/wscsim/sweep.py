"""Sweeps: every combination of swept values, run in parallel local processes, combined
into one table per kind with the swept parameters as columns."""

from __future__ import annotations

import json
import os
import time
import contextlib
import multiprocessing
import signal
from pathlib import Path

import pandas as pd

from . import plots
from .errors import ScenarioError
from .results import Result, write
from .runner import simulate
from .scenario import expand


def _column_names(paths: list[str], table_columns: set[str]) -> dict[str, str]:
    """Swept parameter -> result column: its last key ("transport.rto_min" -> "rto_min"),
    or the whole path with underscores when that would clash with a table's own column or
    another swept parameter ("transport.kind" -> "transport_kind", as tables have `kind`)."""
    last = [p.split(".")[-1] for p in paths]
    return {p: (s if s not in table_columns and last.count(s) == 1 else p.replace(".", "_")) for p, s in zip(paths, last)}


def _ignore_sigint():
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run(args):
    i, sc = args
    try:
        return i, simulate(sc), None
    except ScenarioError as e:
        return i, None, (e.path, e.message)


def run_sweep(base: dict, axes, out: Path | None, workers: int | None = None, progress: bool = False) -> Result:
    points = expand(base, axes)
    # Validate every point before running any, so a bad value fails fast with its field.
    from .schemes import native_simulation

    for sc, params in points:
        try:
            native_simulation(sc)
        except ScenarioError as e:
            path, message = e.path, e.message
            where = ", ".join(f"{k}={v!r}" for k, v in params.items())
            raise ScenarioError(path, f"{message} (in sweep point {where})") from None
    workers = workers or min(len(points), os.cpu_count() or 1)
    t0 = time.perf_counter()
    results = [None] * len(points)
    bar = None
    if progress:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        bar = Progress(TextColumn(base.get("name", "sweep")), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), transient=True)
        bar.start()
        task = bar.add_task("points", total=len(points))
    try:
        jobs = list(enumerate(sc for sc, _ in points))
        if workers <= 1:
            outcomes = map(_run, jobs)
            pool = None
        else:
            # Workers ignore Ctrl-C; the parent stops them at once by terminating the pool
            # (leaving the `with` block), so an interrupted sweep does not wait for points
            # already handed out.
            pool = multiprocessing.get_context().Pool(workers, initializer=_ignore_sigint)
            outcomes = pool.imap(_run, jobs)
        with pool if pool is not None else contextlib.nullcontext():
            for i, res, error in outcomes:
                if error:
                    raise ScenarioError(*error)
                results[i] = res
                if bar is not None:
                    bar.advance(task)
    finally:
        if bar is not None:
            bar.stop()
    combined: dict[str, list[pd.DataFrame]] = {}
    point_rows = []
    table_columns = {c for _, frames in results for df in frames.values() for c in df.columns} | {"point"}
    names = _column_names([p for p, _ in axes], table_columns)
    for i, ((sc, params), (summary, frames)) in enumerate(zip(points, results)):
        row = {"point": i, **{names[k]: v for k, v in params.items()}}
        row.update({f"headline_{k}": v for k, v in summary["headline"].items()})
        row["invariants_ok"] = summary["invariants"]["ok"]
        point_rows.append(row)
        for name, df in frames.items():
            df = df.copy()
            df.insert(0, "point", i)
            for k, v in reversed(list(params.items())):
                df.insert(1, names[k], [v] * len(df))
            combined.setdefault(name, []).append(df)
    tables = {name: pd.concat(dfs, ignore_index=True) for name, dfs in combined.items()}
    tables["points"] = pd.DataFrame(point_rows)
    summary = {
        "sweep": [{"path": p, "values": v} for p, v in axes],
        "points": len(points),
        "scenario": base,
        "seed": base.get("seed", 1),
        "wall_seconds": time.perf_counter() - t0,
        "version": results[0][0]["version"],
        "point_summaries": [s for s, _ in results],
        "invariants": {"ok": all(s["invariants"]["ok"] for s, _ in results)},
        "headline": {},
    }
    swept = [names[p] for p, _ in axes]

    def fill(tables, summary, folder):
        plots.for_sweep(tables, summary, swept, folder)
        # Each point also gets a folder of its own, as a single run would write it.
        for i, (point_summary, frames) in enumerate(results):
            sub = folder / "points" / f"{i:03d}"
            sub.mkdir(parents=True)
            for name, df in frames.items():
                df.to_parquet(sub / f"{name}.parquet", index=False, compression="zstd")
            (sub / "summary.json").write_text(json.dumps(point_summary, indent=2, sort_keys=True) + "\n")

    return write(out, summary, tables, fill)
