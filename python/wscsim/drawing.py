"""Which figures a results folder gets, and drawing them.

A run's or a sweep's plots are a list of figures, each drawn on its own from the tables:
so several are drawn at once in worker processes (forked once the tables are in memory,
so nothing is copied to them), the heaviest started first, and a bar on the terminal says
which phase is running. `redraw` draws a finished folder's plots again from its parquet
tables and summary.json (`wscsim plot FOLDER`).
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple

import pandas as pd

from . import plots
from .folder_tables import columns_of, table_rows, table_shape
from .plots import FORMATS, scenario_name
from .plots.figure import in_point, label
from .plots.kv import size_bytes
from .scenario import duration_seconds
from .seeds import SEED


class Figure(NamedTuple):
    """One plot: its PNG's file name, what draws it there (False when there is nothing to
    show) and how many table rows it reads (the heaviest are started first)."""

    name: str
    draw: Callable[[Path], bool]
    rows: int = 0


def _files(png: str, svg: bool) -> list[str]:
    """The files one plot is written as (PNG, and SVG if asked for)."""
    return [str(Path(png).with_suffix(s)) for s in (FORMATS if svg else FORMATS[:1])]


def _memcached_figures(requests: Callable[[], pd.DataFrame | None], rows: int, title: str | None) -> list[Figure]:
    """Latency tail and PMF of a memcached run's `requests` (read when drawn)."""
    if not rows:
        return []
    return [Figure("latency_tail.png", lambda p: plots.plot_tail(requests(), p, title=title), rows),
            Figure("latency_pmf.png", lambda p: plots.plot_pmf(requests(), p, title=title), rows)]


def run_figures(frames: Mapping, summary: dict) -> list[Figure]:
    """The figures a single run's folder gets; each reads its tables when drawn."""
    title, sc = scenario_name(summary), summary.get("scenario")
    empty = pd.DataFrame()

    def rows(name: str) -> int:
        return table_rows(frames, name)

    figures = _memcached_figures(lambda: frames.get("requests"), rows("requests"), title)
    figures.append(Figure("incast_goodput.png", lambda p: plots.plot_incast_iterations(frames.get("incast", empty), p, title, sc), rows("incast")))
    if "flows" in frames:
        figures.append(Figure("fct_slowdown.png", lambda p: plots.plot_slowdown(frames["flows"], p, title), rows("flows")))
    if "queues" in frames:
        figures.append(Figure("queue_cdf.png", lambda p: plots.plot_queue_ccdf(frames["queues"], frames.get("links"), p, title=title, summary=summary),
                              rows("queues")))
    torus = plots.torus_throughput([summary.get("headline") or {}], [summary], [title or "run"])
    figures.append(Figure("torus_throughput.png", lambda p: plots.plot_torus_throughput(torus, p, title)))
    figures.append(Figure("collective_time.png", lambda p: plots.plot_collective(frames.get("collective", empty), p, title),
                          rows("collective")))
    figures.append(Figure("roce_rates.png", lambda p: plots.plot_roce_rates(frames.get("roce_rates", empty), None, [], p, title),
                          rows("roce_rates")))
    figures.append(Figure("ping_rtt.png", lambda p: plots.plot_ping_rtt(frames.get("pings"), p, title), rows("pings")))
    figures.append(Figure("kv_timeline.png", lambda p: _kv_timeline_plot(frames, summary, p, title), rows("kv_ops")))
    if "median_inbound_gbps_per_server" in (summary.get("headline") or {}) and "flows" in frames:
        def inbound(p: Path) -> bool:
            per_server = plots.tcp_inbound_per_server(frames["flows"], 1e6 * summary.get("simulated_seconds", 0.0))
            return plots.plot_tcp_inbound([(title or "run", per_server)], p, title)

        figures.append(Figure("tcp_inbound.png", inbound, rows("flows")))
    figures.append(_energy_figure(lambda: frames.get("energy"), rows("energy"), title, [], summary.get("headline") or {}))
    return figures


def _energy_figure(energy: Callable[[], pd.DataFrame | None], rows: int, title: str | None, swept: list[str], headline: dict,
                   points: pd.DataFrame | None = None) -> Figure:
    """plots.plot_energy, with a single run's totals as the note, or a sweep's
    energy per byte delivered from its `points`."""
    note = None
    if "energy_j" in headline and "mean_power_w" in headline:
        note = f"{headline['energy_j']:.4g} J in all, {headline['mean_power_w']:.4g} W mean"
        if "energy_per_byte_nj" in headline:
            nj = headline["energy_per_byte_nj"]
            scale, unit = next(((d, u) for d, u in ((1e6, "mJ"), (1e3, "uJ")) if nj >= d), (1.0, "nJ"))
            note += f", {nj / scale:.4g} {unit} per byte delivered"
        if headline.get("power_unsourced"):
            note += f"\nno power figure for {', '.join(headline['power_unsourced'])} (counted as 0 W)"
    return Figure("energy.png", lambda p: plots.plot_energy(energy(), p, title, swept, note, points), rows)


# What the queue figure of a sweep reads of its queues table: not the swept values'
# columns, nor the sample times (only a single run's note says when sampling stopped).
QUEUE_COLUMNS = ["point", "node", "port", "queue_bytes"]


def sweep_figures(tables: Mapping, summary: dict, swept: list[str], queue_curves: tuple | None = None) -> list[Figure]:
    """The figures a sweep's folder gets. Only the `points` table is read here: each figure
    reads the tables it draws when it is drawn (a sweep's tables stay on disk until then,
    see FolderTables); the queue figure none, given the points' `queue_curves`."""
    title, sc = scenario_name(summary), summary.get("scenario")
    empty = pd.DataFrame()
    every_seed, plain = tables, [k for k in swept if k != SEED]
    if SEED in swept:
        # Several seeds per point: figures of each point show the first seed's (their labels
        # say which); goodput against senders is the mean over the seeds with its interval.
        seeded = tables["points"]
        tables = FirstSeed(tables, set(seeded.loc[seeded[SEED] == seeded[SEED].min(), "point"]))
    points, table = plots.sweep_points(tables, swept), tables.get("points", empty)

    def get(name: str) -> pd.DataFrame:
        return tables.get(name, empty)

    def rows(name: str) -> int:
        return table_rows(tables, name)

    figures = [Figure("incast_goodput.png", lambda p: plots.plot_incast_sweep(every_seed.get("incast", empty), swept, p, title, sc),
                      rows("incast")),
               Figure("incast_time.png", lambda p: plots.plot_incast_times(get("incast"), points, swept, p, title), rows("incast"))]
    if rows("flows"):
        figures.append(Figure("fct_slowdown.png", lambda p: plots.plot_slowdown_sweep(get("flows"), points, swept, p, title), rows("flows")))
    if rows("flows") and not rows("incast") and "senders" in swept:
        figures.append(Figure("incast_completion.png", lambda p: plots.plot_incast_completion(get("flows"), points, swept, p, title),
                              rows("flows")))
    figures.append(Figure("collective_time.png", lambda p: plots.plot_collective_sweep(get("collective"), points, swept, p, title),
                          rows("collective")))
    figures.append(Figure("roce_rates.png", lambda p: plots.plot_roce_rates(get("roce_rates"), points, plain, p, title),
                          rows("roce_rates")))
    if queue_curves is not None:
        # Drawn from the curves, but still the figure of most panels: started first.
        figures.append(Figure("queue_cdf.png", lambda p: plots.plot_queue_ccdf(None, None, p, points, swept, title, summary, prepared=queue_curves),
                              rows("queues")))
    elif "queues" in tables:
        figures.append(Figure("queue_cdf.png", lambda p: plots.plot_queue_ccdf(columns_of(tables, "queues", QUEUE_COLUMNS), tables.get("links"), p,
                                                                               points, swept, title, summary), rows("queues")))
    figures += _memcached_figures(lambda: tables.get("requests"), rows("requests"), title)
    if "case" in plain and "load" in plain:
        figures.append(Figure("fct_by_load.png", lambda p: plots.plot_fct_by_load(get("flows"), p, title), rows("flows")))
    elif plain == ["case"]:
        figures.append(Figure("priority_tradeoff.png", lambda p: plots.plot_priority_tradeoff(get("flows"), p, title), rows("flows")))
    figures.append(Figure("ping_rtt.png", lambda p: plots.plot_ping_rtt(tables.get("pings"), p, title), rows("pings")))
    figures.append(Figure("tcp_inbound.png", lambda p: _sweep_tcp_inbound(tables, summary, swept, p, title), rows("flows")))
    links = plots.torus_links(table)
    if links is not None:
        figures.append(Figure("torus_links.png", lambda p: plots.plot_torus_links(links, p, title)))
    inserts = plots.kv_inserts(table, summary)
    if inserts is not None:
        figures.append(Figure("kv_inserts.png", lambda p: plots.plot_kv_inserts(inserts, p, title)))
    figures.append(Figure("kv_latency.png", lambda p: plots.plot_kv_latency(tables.get("kv_ops"), p, title), rows("kv_ops")))
    figures.append(_torus_figure(table, summary, swept, title))
    figures.append(_energy_figure(lambda: tables.get("energy"), rows("energy"), title, swept, {}, table))
    figures.append(Figure("dma.png", lambda p: plots.plot_dma(table, swept, p, title)))
    figures.append(Figure("job_efficiency.png", lambda p: plots.plot_job_efficiency(table, swept, p, title, summary.get("point_summaries"))))
    return figures


class FirstSeed(Mapping):
    """A sweep's tables with only the rows of the points in `keep` (its first seed's)."""

    def __init__(self, tables: Mapping, keep: set[int]):
        self.tables, self.keep = tables, keep

    def _only(self, df: pd.DataFrame) -> pd.DataFrame:
        return df[df["point"].isin(self.keep)].reset_index(drop=True) if "point" in df.columns else df

    def __getitem__(self, name: str) -> pd.DataFrame:
        return self._only(self.tables[name])

    def load(self, name: str, columns: list[str]) -> pd.DataFrame:
        return self._only(columns_of(self.tables, name, columns))

    def shape(self, name: str) -> tuple[int, list[str]]:
        return table_shape(self.tables, name)  # rows of every seed: enough to order figures

    def __contains__(self, name: object) -> bool:
        return name in self.tables

    def __iter__(self):
        return iter(self.tables)

    def __len__(self) -> int:
        return len(self.tables)


def _torus_figure(points: pd.DataFrame, summary: dict, swept: list[str], title: str | None) -> Figure:
    """A torus sweep's one figure: churn, else failures, else throughput against servers."""
    torus = _sweep_torus_throughput(points, summary, swept)
    churn = plots.torus_churn(points, summary)
    if churn is not None:
        return Figure("torus_churn.png", lambda p: plots.plot_torus_churn(churn, p, title))
    if plots.torus_failures(torus) is not None:
        return Figure("torus_failures.png", lambda p: plots.plot_torus_failures(torus, p, title))
    return Figure("torus_throughput.png", lambda p: plots.plot_torus_throughput(torus, p, title))


def _sweep_torus_throughput(points: pd.DataFrame, summary: dict, swept: list[str]) -> pd.DataFrame:
    """torus_throughput for a sweep: headline figures from the `points` table, servers and
    dims from each point's summary."""
    if points.empty or "headline_delivered_gbps_per_server" not in points.columns:
        return plots.torus_throughput([], [], [])
    points = points.sort_values("point")
    heads = [{k.removeprefix("headline_"): v for k, v in r.items() if k.startswith("headline_")} for r in points.to_dict("records")]
    per_point = summary.get("point_summaries") or []
    summaries = [per_point[p] if p < len(per_point) else {} for p in points["point"]]
    labels = [label(swept, [r[k] for k in swept]) for _, r in points.iterrows()]
    return plots.torus_throughput(heads, summaries, labels)


def _sweep_tcp_inbound(tables: dict, summary: dict, swept: list[str], path: Path, title: str | None) -> bool:
    """plot_tcp_inbound for a sweep of TCP runs on a torus: a column per point."""
    points = tables.get("points", pd.DataFrame())
    if points.empty or "headline_median_inbound_gbps_per_server" not in points.columns or not table_rows(tables, "flows"):
        return False
    flows = tables["flows"]
    per_point = summary.get("point_summaries") or []
    groups = []
    for r in points.sort_values("point").to_dict("records"):
        p = int(r["point"])
        end_us = 1e6 * (per_point[p] if p < len(per_point) else {}).get("simulated_seconds", 0.0)
        groups.append((label(swept, [r[k] for k in swept]), plots.tcp_inbound_per_server(in_point(flows, p), end_us)))
    return plots.plot_tcp_inbound(groups, path, title)


def _kv_timeline_plot(frames: dict, summary: dict, path: Path, title: str | None) -> bool:
    """plot_kv_timeline for a key-value run with failures."""
    ops, sc = frames.get("kv_ops"), summary.get("scenario") or {}
    failures = [f for f in (duration_seconds(x.get("at")) for x in sc.get("failures") or [] if isinstance(x, dict)) if f is not None]
    if ops is None or ops.empty or not failures:
        return False
    value = size_bytes((sc.get("workload") or {}).get("value_size", ""))
    if value is None:
        return False
    t = plots.kv_timeline(ops, value, float(summary.get("simulated_seconds", 0.0)))
    return plots.plot_kv_timeline(t, failures, path, title)


# ---------------------------------------------------------------------------------------
# Drawing, in worker processes when there are several figures and cores

# The figures a forked worker draws, by index: set before the workers fork, so that they
# inherit the figures and the tables they read instead of being sent them.
_FIGURES: list[Figure] = []


def _draw_one(job: tuple[int, str]) -> tuple[int, bool | str]:
    """In a worker: draws figure i into the folder; its error as text (a plotting bug must
    not look like a worker killed by the system)."""
    i, folder = job
    try:
        return i, _FIGURES[i].draw(Path(folder) / _FIGURES[i].name)
    except Exception:
        return i, traceback.format_exc()


def draw(figures: list[Figure], folder: Path, workers: int | None = None, progress: bool = False, svg: bool = False) -> list[str]:
    """Draws `figures` into `folder` as PNG (and SVG with `svg`) in up to `workers`
    processes (default: one per core; 1 draws them in this process); returns the files
    written, in the figures' order."""
    from . import plots

    before = plots.figure.written_formats
    plots.figure.written_formats = FORMATS if svg else FORMATS[:1]
    try:
        return [f for fig, ok in zip(figures, _draw_all(figures, folder, workers, progress)) if ok for f in _files(fig.name, svg)]
    finally:
        plots.figure.written_formats = before


def _draw_all(figures: list[Figure], folder: Path, workers: int | None, progress: bool) -> list[bool | str]:
    """Draws the figures (see draw); whether each drew anything."""
    global _FIGURES
    from .pool import LocalPool

    order = sorted(range(len(figures)), key=lambda i: -figures[i].rows)
    n = min(len(figures), workers or os.cpu_count() or 1)
    drawn: list[bool | str] = [False] * len(figures)
    if n <= 1:
        with _PlotsBar(progress, len(figures)) as advance:
            for i in order:
                drawn[i] = figures[i].draw(folder / figures[i].name)
                advance()
        return drawn
    _FIGURES = figures
    pool = LocalPool(_draw_one, n)  # forked before the bar starts its thread
    try:
        with _PlotsBar(progress, len(figures)) as advance:
            for i, ok in pool.outcomes([(i, str(folder)) for i in order]):
                if isinstance(ok, str):
                    raise RuntimeError(f"drawing {figures[i].name} failed in a worker process:\n{ok}")
                drawn[i] = ok
                advance()
    finally:
        pool.stop()
        _FIGURES = []
    return drawn


class _PlotsBar:
    """A transient bar on the terminal while plots are drawn ("plotting ━━━ 3/12"),
    so that a long figure never leaves it silent; nothing without `progress`."""

    def __init__(self, progress: bool, total: int):
        self.progress, self.total, self.bar = progress, total, None

    def __enter__(self):
        if not self.progress:
            return lambda: None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        from rich.console import Console

        # On stderr, which is what says whether to show it (stdout may be a pipe).
        self.bar = Progress(TextColumn("plotting"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), transient=True, console=Console(stderr=True))
        self.bar.start()
        task = self.bar.add_task("plots", total=self.total)
        return lambda: self.bar.advance(task)

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.stop()


# ---------------------------------------------------------------------------------------
# Drawing a finished folder's plots again (`wscsim plot FOLDER`)


def swept_columns(summary: dict, points: pd.DataFrame | None) -> list[str]:
    """A sweep's swept columns, as its summary names them; for a folder written before the
    summary did, each path's last key when the points table has it, else the path."""
    names = []
    for axis in summary.get("sweep") or []:
        path = str(axis.get("path", ""))
        last = path.split(".")[-1]
        fallback = last if points is not None and last in points.columns else path.replace(".", "_")
        names.append(axis.get("column", fallback))
    return names


def _complete_folder(path: Path) -> dict:
    """The summary of a complete wscsim results folder at `path`; a one-line error for
    anything else (a folder it did not write, a partial one, a file)."""
    import json

    from .errors import ScenarioError
    from .folders import is_results_folder

    refusal = ScenarioError("FOLDER", f"given {str(path)!r}, which is not a complete wscsim results folder; "
                                      "allowed: a folder written by wscsim run or sweep")
    if not is_results_folder(path):
        raise refusal
    try:
        summary = json.loads((path / "summary.json").read_text())
    except (OSError, ValueError):
        raise refusal from None
    if not isinstance(summary, dict) or summary.get("complete") is not True:
        raise refusal
    return summary


def redraw(path: str | Path, workers: int | None = None, progress: bool = False, svg: bool = False) -> list[str]:
    """Draws a finished run's or sweep's plots again from its tables and summary.json,
    writing only inside its folder: the plots are drawn into a folder within it, then each
    file replaces its old version by a rename, and summary.json and report.html are
    rewritten the same way; SVGs too with `svg`. Returns the files drawn."""
    import json
    import shutil

    from .folder_tables import FolderTables
    from .report import write_html

    path = Path(path)
    summary = _complete_folder(path)
    # Each figure reads the tables it draws, when it is drawn (in its worker).
    names = sorted(p.stem for p in path.glob("*.parquet"))
    tables = FolderTables(path, names, {"points": pd.read_parquet(path / "points.parquet")} if "points" in names else {})
    if isinstance(summary.get("points"), int):
        figures = sweep_figures(tables, summary, swept_columns(summary, tables.get("points")))
    else:
        figures = run_figures(tables, summary)
    work = path / f".plots-partial-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        made = draw(figures, work, workers, progress, svg)
        for name in made:
            os.replace(work / name, path / name)
        for name in set(summary.get("plots") or []) - set(made):
            if Path(name).name == name and Path(name).suffix in FORMATS:  # only the folder's own plots
                (path / name).unlink(missing_ok=True)
        summary["plots"], summary["plots_status"] = made, "complete"
        write_html(path, summary, tables, points_width=max(3, len(str(summary.get("points", 1) - 1))), page=work / "report.html")
        os.replace(work / "report.html", path / "report.html")
        (work / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
        os.replace(work / "summary.json", path / "summary.json")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return made
