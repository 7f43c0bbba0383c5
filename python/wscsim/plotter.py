"""A process that draws a sweep's plots, started with the sweep so that it loads the
plotting modules (matplotlib: about a second of CPU) while the points run and their
tables are combined, instead of after them. Loading them in a thread of the sweep's own
process gained nothing: the import holds the GIL, which the parent needs for its work.

The plotter draws with drawing.draw, as the parent would (its workers are forked from
it, after the import), from the folder the combined tables were written to. It ignores
Ctrl-C, as sweep workers do; stopping it (SIGTERM) stops and reaps its drawing workers
before it exits, so that once `stop` returns nothing writes into the folder any more.
"""

from __future__ import annotations

import multiprocessing
import signal
from multiprocessing.connection import wait
from pathlib import Path

from .pool import WorkerDied, started_as_worker


def _stop(_signum, _frame) -> None:
    raise SystemExit(0)  # unwinds draw(), whose `finally` stops and reaps its workers


def _main(conn) -> None:
    started_as_worker(on_term=_stop)
    try:
        from . import drawing  # the point of this process: loaded while the sweep runs
    except Exception:  # reported by the parent, which then draws itself
        drawing = None
    try:
        job = conn.recv()
    except EOFError:
        return
    if job is None:
        return
    if drawing is None:
        conn.send(("unavailable", None))
        return
    conn.send(_draw(drawing, *job))


def _draw(drawing, folder: str, summary: dict, swept: list, curves, workers, progress: bool, svg: bool):
    import traceback

    import pandas as pd

    from .folder_tables import FolderTables

    try:
        path = Path(folder)
        names = sorted(p.stem for p in path.glob("*.parquet"))
        points = {"points": pd.read_parquet(path / "points.parquet")} if "points" in names else {}
        figures = drawing.sweep_figures(FolderTables(path, names, points), summary, swept, curves)
        return "drawn", drawing.draw(figures, path, workers, progress, svg)
    except Exception:
        return "failed", traceback.format_exc()


class Plotter:
    """The plotting process of one sweep: start it before the sweep's threads start (it is
    forked), `draw` once, `stop` always."""

    def __init__(self):
        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
        self.conn, child_end = ctx.Pipe()
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            # Not a daemon: it forks drawing workers of its own (it dies with this process,
            # and `stop` always reaps it).
            self.process = ctx.Process(target=_main, args=(child_end,), daemon=False, name="wscsim-plotter")
            self.process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
            child_end.close()

    def draw(self, folder: Path, summary: dict, swept: list, curves, workers: int | None, progress: bool, svg: bool) -> list[str] | None:
        """The files drawn into `folder` (see drawing.draw); None if the plotter could not
        load the plotting modules (the caller then draws, and meets the error itself)."""
        self.conn.send((str(folder), summary, swept, curves, workers, progress, svg))
        sentinel = self.process.sentinel
        while True:
            ready = wait([self.conn, sentinel])
            if self.conn in ready or self.conn.poll():
                break
            raise WorkerDied(f"the plotting process died (exit status {self.process.exitcode}: killed, or out of memory)")
        try:
            status, made = self.conn.recv()
        except EOFError:
            raise WorkerDied(f"the plotting process died (exit status {self.process.exitcode})") from None
        if status == "failed":
            raise RuntimeError(f"drawing the plots failed in the plotting process:\n{made}")
        return made if status == "drawn" else None

    def stop(self) -> None:
        """Ends the plotter and reaps it (idempotent); its drawing workers are gone too."""
        if self.process.is_alive():
            self.process.terminate()
        self.process.join(timeout=30)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()
