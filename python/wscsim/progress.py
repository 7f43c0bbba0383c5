"""Progress of one simulated point: simulated time against the run's end, events per
second and the time left, then the phases after the simulation (tables, plots).

In a terminal it is a rich progress bar that appears once a point has run for a second;
in Jupyter, rich draws it with ipywidgets when they are installed and otherwise this
falls back to a line of text every few seconds (rich's notebook display needs them)."""

from __future__ import annotations

import sys
import time

#: A point shorter than this shows no bar at all (no flicker on quick runs).
SHOW_AFTER_S = 1.0
#: How often the text fallback prints a line.
TEXT_EVERY_S = 5.0


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    try:
        return shell is not None and type(shell.get_ipython()).__name__ == "ZMQInteractiveShell"
    except Exception:  # an IPython without a running shell
        return False


def _has_widgets() -> bool:
    import importlib.util

    return importlib.util.find_spec("ipywidgets") is not None


def _seconds(ps: int) -> str:
    """Simulated time in its natural unit."""
    for unit, scale in (("s", 10**12), ("ms", 10**9), ("us", 10**6)):
        if ps >= scale:
            return f"{ps / scale:.3g} {unit}"
    return f"{ps / 10**3:.3g} ns"


def _rate(events_per_s: float) -> str:
    if events_per_s >= 1e6:
        return f"{events_per_s / 1e6:.1f} M events/s"
    return f"{events_per_s / 1e3:.0f} K events/s"


class PointProgress:
    """Shows one point's progress (nothing when `enabled` is false)."""

    def __init__(self, label: str, end_ps: int, enabled: bool):
        self.label, self.end_ps, self.enabled = label, max(1, end_ps), enabled
        self.t0 = time.perf_counter()
        self.bar = None
        self.task = None
        self.text = enabled and _in_notebook() and not _has_widgets()
        self.last_text = self.t0

    def _fields(self, now_ps: int, events: int) -> dict:
        wall = max(1e-9, time.perf_counter() - self.t0)
        return {"sim": f"{_seconds(now_ps)} of {_seconds(self.end_ps)}", "rate": _rate(events / wall)}

    def update(self, now_ps: int, events: int) -> None:
        if not self.enabled or time.perf_counter() - self.t0 < SHOW_AFTER_S:
            return
        f = self._fields(now_ps, events)
        if self.text:
            self._text_line(now_ps, f)
            return
        if self.bar is None:
            self._start_bar()
        self.bar.update(self.task, completed=min(now_ps, self.end_ps), **f)

    def _start_bar(self) -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(bar_width=12), TextColumn("{task.percentage:>3.0f}%"),
                            TextColumn("{task.fields[sim]}"), TextColumn("{task.fields[rate]}"),
                            TextColumn("ETA"), TimeRemainingColumn(compact=True), transient=True)
        self.bar.start()
        self.task = self.bar.add_task(self.label, total=self.end_ps, sim="", rate="")

    def _text_line(self, now_ps: int, f: dict) -> None:
        t = time.perf_counter()
        if t - self.last_text < TEXT_EVERY_S:
            return
        self.last_text = t
        done = now_ps / self.end_ps
        left = (t - self.t0) * (1 - done) / done if done > 0 else float("nan")
        print(f"{self.label}: {100 * done:.0f}% ({f['sim']}), {f['rate']}, about {left:.0f} s left", file=sys.stderr, flush=True)

    def phase(self, name: str) -> None:
        """The simulation is over and `name` (building tables, plotting) is under way: the
        bar stands at 100% and says so."""
        if self.bar is not None:
            self.bar.update(self.task, completed=self.end_ps, description=f"{self.label}: {name}", rate="")
        elif self.text:
            print(f"{self.label}: {name}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


class SweepProgress:
    """A sweep's bar: the points finished, with the running points' own progress counted
    in, so that a sweep of a few long points moves and its time left is estimated from
    the start. Each point's worker writes its fraction done and its events per second into
    memory shared with this process (`report`) after every slice of its run; a thread here
    reads them four times a second. Points run on Ray report only when they finish.

    Make it before the workers fork (they inherit the shared memory), `start` it after."""

    def __init__(self, label: str | None, points: int):
        import multiprocessing

        self.label, self.points = label, points
        # Per point: fraction done, events per second (0 when not running).
        self.shared = multiprocessing.RawArray("d", 2 * points) if label is not None else None
        self.bar = self.task = self.thread = None
        self.stopping = False

    def report(self, point: int):
        """In a worker: what `simulate` calls after each slice of point `point`."""
        shared = self.shared

        def report(fraction: float, events_per_s: float) -> None:
            shared[2 * point], shared[2 * point + 1] = min(fraction, 0.999), events_per_s

        return report if shared is not None else None

    def start(self) -> None:
        if self.shared is None:
            return
        import threading

        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self.bar = Progress(TextColumn(self.label), BarColumn(bar_width=20), MofNCompleteColumn(), TimeElapsedColumn(),
                            TextColumn("ETA"), TimeRemainingColumn(compact=True), TextColumn("{task.fields[running]}"),
                            transient=True)
        self.bar.start()
        self.task = self.bar.add_task("points", total=self.points, running="")
        self.thread = threading.Thread(target=self._tick, name="wscsim-sweep-progress", daemon=True)
        self.thread.start()

    def finished(self, point: int) -> None:
        if self.shared is not None:
            self.shared[2 * point], self.shared[2 * point + 1] = 1.0, 0.0
            self._show()

    def _show(self) -> None:
        values = list(self.shared)
        fractions, rates = values[0::2], values[1::2]
        running = [f for f in fractions if 0 < f < 1]
        text = ""
        if running:
            text = f"running {', '.join(f'{100 * f:.0f}%' for f in running[:4])}{' ...' if len(running) > 4 else ''}"
            text += f" · {_rate(sum(rates))}"
        self.bar.update(self.task, completed=sum(fractions), running=text)

    def _tick(self) -> None:
        while not self.stopping:
            self._show()
            time.sleep(0.25)

    def stop(self) -> None:
        self.stopping = True
        if self.thread is not None:
            self.thread.join()
        if self.bar is not None:
            self.bar.stop()
