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
