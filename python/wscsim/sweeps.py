"""Sweeps: every combination of swept values, run in parallel local processes, combined
into one table per kind with the swept parameters as columns."""

from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager

import pandas as pd

from .errors import ScenarioError
from .folder_tables import FolderTables, write_combined
from .folders import Destination, ResultFolder
from .plotter import Plotter
from .progress import SweepProgress
from .pool import LocalPool
from .report import write_html
from .results import Result, write, write_captures
from .queue_curves import joined, queue_curves, renumbered
from .runner import simulate
from .scenario import CASE_AXIS, expand
from .schemes import check_points
from .seeds import SEED, headline_means


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


# The sweep's progress, set before its workers fork so that they report into it.
_PROGRESS: SweepProgress | None = None


def _run(job):
    """In a worker: one point's Outcome, with its queue curves when the sweep draws them
    (made here, beside the samples, so that the parent, which writes every point's folder,
    does not compute them one point after another)."""
    i, sc, allow_python, with_curves = job
    try:
        outcome = simulate(sc, allow_python=allow_python, report=_PROGRESS.report(i) if _PROGRESS is not None else None)
    except ScenarioError as e:
        return i, None, (e.path, e.message)
    frames = outcome[1]
    curves = queue_curves(frames["queues"], frames.get("links")) if with_curves and "queues" in frames else None
    return i, (outcome, curves), None


def run_sweep(base: dict, axes, dest: Destination | None, workers: int | None = None, progress: bool = False, allow_python: bool = False,
              make_plots: bool = True, ray: str | None = None, svg: bool = False) -> Result:
    """Runs every point of a sweep: in `workers` local processes, or as tasks on the Ray
    cluster at address `ray`; the tables are the same either way. With a destination, each
    point's folder is written as the point finishes and its tables let go; the combined
    tables are built from those folders and read back only when asked for (FolderTables),
    so that the sweep holds about one point's tables per worker, not all of them. Its plots
    are drawn by a plotting process started with the sweep (plotter.py)."""
    points = expand(base, axes)
    check_points(points, allow_python, for_run=True, base=base)  # every point, before any runs
    t0 = time.perf_counter()
    jobs = [(i, sc, allow_python, make_plots and dest is not None) for i, (sc, _) in enumerate(points)]
    label = str(base.get("name", "sweep"))
    width = max(3, len(str(len(points) - 1)))
    folder = ResultFolder(dest.path, overwrite=dest.overwrite, unique=dest.unique) if dest is not None else None
    # With one worker everything is drawn in this process, as the API says.
    plotter = Plotter() if make_plots and folder is not None and workers != 1 else None  # forked before any thread starts
    try:
        try:
            kept = _Points(len(points), folder.tmp if folder else None, width, queue_curves=make_plots)
            _run_all(jobs, max(1, workers or min(len(points), os.cpu_count() or 1)), ray, label if progress else None, kept.take)
            with _phase("combining the points' tables" if progress and folder is not None else None):
                tables, names = kept.tables(points, axes)
        except BaseException:
            if folder is not None:
                folder.abort()
            raise
        summary = _summary(base, axes, names, kept.summaries, time.perf_counter() - t0)
        swept = [names[p] for p, _ in axes]
        if axes[-1][0] == SEED:
            _seed_summary(summary, tables["points"], swept[:-1], axes[-1][1])

        def draw(tables, summary, folder):
            curves = kept.queue_curves()
            made = plotter.draw(folder, summary, swept, curves, workers, progress, svg) if plotter is not None else None
            if made is None:
                from . import drawing  # matplotlib loads only when a folder gets plots

                made = drawing.draw(drawing.sweep_figures(tables, summary, swept, curves), folder, workers, progress, svg)
            summary["plots"] = made

        # The plots, drawn last, may be cut short.
        res = write(dest, summary, tables, plots=draw if make_plots else None, points_width=width, folder=folder)
    finally:
        if plotter is not None:
            plotter.stop()
    if isinstance(res.tables, FolderTables):
        res.tables.folder, res.tables.keep = res.path, True
    return res


def _summary(base: dict, axes, names: dict, summaries: list, wall_seconds: float) -> dict:
    """A sweep's summary.json, before its plots."""
    return {
        "sweep": [{"path": p, "values": v, "column": names[p]} for p, v in axes],
        "points": len(summaries),
        "scenario": base,
        "seed": base.get("seed", 1),
        "wall_seconds": wall_seconds,
        "version": summaries[0]["version"],
        "point_summaries": summaries,
        "invariants": {"ok": all(s["invariants"]["ok"] for s in summaries)},
        "headline": {},
    }


@contextmanager
def _phase(text: str | None):
    """A transient line on the terminal naming what runs (nothing when `text` is None)."""
    if text is None:
        yield
        return
    from rich.console import Console

    with Console(stderr=True).status(text):
        yield


def _seed_summary(summary: dict, points: pd.DataFrame, others: list[str], seeds: list[int]) -> None:
    """With several seeds per point: every headline figure's mean and 95% confidence
    interval over the seeds, per combination of the other swept values ("seed_means"); for
    seeds alone, as the headline itself ("headline", "headline_ci95")."""
    rows = [{**{k: r[k] for k in others}, "headline": s["headline"]}
            for r, s in zip(points.to_dict("records"), summary["point_summaries"])]
    means = headline_means(rows, others)
    summary["seeds"] = {"seeds": seeds, "interval": "95% confidence interval of the mean (Student's t, n - 1 degrees of freedom)"}
    summary["seed_means"] = means
    if not others:
        summary["headline"], summary["headline_ci95"] = means[0]["mean"], means[0]["ci95"]


class _Points:
    """Each point's Outcome as it finishes. With a folder, the point's own folder is written
    at once (`points/NNN`, as a single run writes it, without plots) and only its summary
    and the names of its tables and columns are kept; without, the Outcome is kept whole."""

    def __init__(self, n: int, folder, width: int, queue_curves: bool = False):
        self.folder, self.width = folder, width
        # With a folder and plots: each point's queue curves (queue_curves.queue_curves),
        # made by its worker; the queue figure then reads no samples back.
        self.curves: list | None = [None] * n if folder is not None and queue_curves else None
        self.summaries: list = [None] * n
        self.outcomes: list = [None] * n
        self.table_names: list = [None] * n
        self.columns: set[str] = {"point"}

    def point_folder(self, i: int):
        return self.folder / "points" / f"{i:0{self.width}d}"

    def take(self, i: int, outcome, curves=None) -> None:
        point_summary, frames, captures = outcome
        self.summaries[i] = point_summary
        self.table_names[i] = list(frames)
        self.columns |= {c for df in frames.values() for c in df.columns}
        if self.folder is None:
            self.outcomes[i] = outcome
            return
        if self.curves is not None and curves is not None:
            self.curves[i] = renumbered(curves, i)
        sub = self.point_folder(i)
        sub.mkdir(parents=True)
        for name, df in frames.items():
            df.to_parquet(sub / f"{name}.parquet", index=False, compression="zstd")
        write_captures(sub, captures)
        write_html(sub, point_summary, frames)
        (sub / "summary.json").write_text(json.dumps(point_summary, indent=2, sort_keys=True) + "\n")

    def queue_curves(self):
        """Every point's queue curves joined (None unless each point had a queues table)."""
        if self.curves is None or any(c is None for c in self.curves):
            return None
        return joined(self.curves)

    def tables(self, points: list, axes) -> tuple[dict, dict]:
        """One table per kind over all points, with `point` and the swept values as columns,
        and the `points` table; returns (tables, swept path -> column name)."""
        names = _column_names([p for p, _ in axes], self.columns)
        constants = _constants(points, axes, names)
        kinds = list(dict.fromkeys(n for per_point in self.table_names for n in per_point))
        rows = []
        for c, s in zip(constants, self.summaries):
            rows.append({**c, **{f"headline_{k}": v for k, v in s["headline"].items()}, "invariants_ok": s["invariants"]["ok"]})
        points_table = pd.DataFrame(rows)
        if self.folder is None:
            tables = {kind: _concat([(c, o.tables[kind]) for c, o in zip(constants, self.outcomes) if kind in o.tables]) for kind in kinds}
            return {**tables, "points": points_table}, names
        write_combined(self.folder, [self.point_folder(i) for i in range(len(points))], constants, kinds)
        points_table.to_parquet(self.folder / "points.parquet", index=False, compression="zstd")
        return FolderTables(self.folder, [*kinds, "points"], {"points": points_table}), names


def _constants(points: list, axes, names: dict) -> list[dict]:
    """Per point, its columns of constants: `point` and each swept value as a column holds it."""
    labels = {p: [v["name"] for v in vals] if p is CASE_AXIS else vals for p, vals in axes}
    columns = {p: dict(zip(map(_key, vals), column_values(vals))) for p, vals in labels.items()}
    return [{"point": i, **{names[k]: columns[k][_key(v)] for k, v in params.items()}} for i, (_, params) in enumerate(points)]


def _concat(parts: list[tuple[dict, pd.DataFrame]]) -> pd.DataFrame:
    """The points' tables one after another, their constants as the first columns (one copy
    of the rows, made by the concatenation)."""
    df = pd.concat([t for _, t in parts], ignore_index=True)
    lengths = [len(t) for _, t in parts]
    first = parts[0][0]
    for pos, key in enumerate(first):
        values = [c[key] for c, _ in parts]
        df.insert(pos, key, pd.Series(values).repeat(lengths).reset_index(drop=True))
    return df


def _run_all(jobs: list, workers: int, ray: str | None, progress_label: str | None, take) -> None:
    """Runs every job, handing each Outcome and its queue curves to `take(i, outcome,
    curves)` as it comes (in the order they finish); a point's scenario error stops the
    sweep."""
    global _PROGRESS
    # Workers start before the progress bar's thread does (they are forked), and after the
    # memory they report their progress into is made.
    _PROGRESS = progress = SweepProgress(progress_label, len(jobs))
    pool = LocalPool(_run, workers) if workers > 1 and ray is None else None
    if ray is not None:
        from . import ray_pool

        outcomes = ray_pool.outcomes(_run, jobs, ray)
    else:
        outcomes = pool.outcomes(jobs) if pool else map(_run, jobs)
    progress.start()
    try:
        for i, res, error in outcomes:
            if error:
                raise ScenarioError(*error)
            take(i, *res)  # the Outcome, and its queue curves
            del res  # the point's tables go before the next point's come
            progress.finished(i)
    finally:
        if pool is not None:
            pool.stop()
        if hasattr(outcomes, "close"):
            outcomes.close()
        progress.stop()
        _PROGRESS = None
