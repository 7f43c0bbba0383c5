"""Progress inside a point (issue 34, item 11): simulated time against the end, events per
second and the time left; the phases after the simulation; a text fallback where rich
cannot draw (Jupyter without ipywidgets)."""

import io

from wscsim import progress
from wscsim.runner import simulate


def _text_mode(monkeypatch):
    monkeypatch.setattr(progress, "SHOW_AFTER_S", 0.0)
    monkeypatch.setattr(progress, "TEXT_EVERY_S", 0.0)
    monkeypatch.setattr(progress, "_in_notebook", lambda: True)
    monkeypatch.setattr(progress, "_has_widgets", lambda: False)
    err = io.StringIO()
    monkeypatch.setattr(progress.sys, "stderr", err)
    return err


def test_the_text_fallback_says_how_far_how_fast_and_how_long(monkeypatch):
    err = _text_mode(monkeypatch)
    p = progress.PointProgress("demo", 4 * 10**9, enabled=True)
    p.update(10**9, 5_000_000)
    p.phase("building tables")
    p.close()
    first, second = err.getvalue().splitlines()
    assert first.startswith("demo: 25% (1 ms of 4 ms), ") and "events/s" in first and "s left" in first
    assert second == "demo: building tables"


def test_a_disabled_progress_prints_nothing(monkeypatch):
    err = _text_mode(monkeypatch)
    p = progress.PointProgress("demo", 10**9, enabled=False)
    p.update(10**8, 10)
    p.phase("plotting")
    p.close()
    assert err.getvalue() == ""


def test_a_run_reports_through_its_progress(monkeypatch):
    # A whole run in text mode: every line names the point, the last one the tables.
    err = _text_mode(monkeypatch)
    sc = {"name": "prog", "duration": "20ms", "topology": {"kind": "single_switch", "hosts": 3},
          "workload": {"kind": "incast", "senders": 2, "iterations": 50}}
    simulate(sc, progress=True)
    lines = err.getvalue().splitlines()
    assert lines and all(line.startswith("prog: ") for line in lines)
    assert lines[-1] == "prog: building tables"
    assert all("events/s" in line for line in lines[:-1])


def test_simulated_time_is_shown_in_its_own_unit():
    assert progress._seconds(1_500_000_000_000) == "1.5 s"
    assert progress._seconds(2_000_000_000) == "2 ms"
    assert progress._seconds(3_000) == "3 ns"


def test_a_sweeps_bar_counts_its_running_points_in():
    # Point 0 half done in its worker (written through the shared memory a forked worker
    # inherits), point 1 finished, point 2 not started: 1.5 of 3, and what runs is named.
    import multiprocessing

    sweep = progress.SweepProgress("demo", 3)
    child = multiprocessing.get_context("fork").Process(target=sweep.report(0), args=(0.5, 2e6))
    child.start()
    try:
        child.join(timeout=60)
    finally:
        child.kill()
        child.join()
    assert child.exitcode == 0
    sweep.start()
    try:
        sweep.finished(1)
        task = sweep.bar.tasks[0]
        assert task.completed == 1.5
        assert task.fields["running"] == "running 50% · 2.0 M events/s"
    finally:
        sweep.stop()
    assert not sweep.thread.is_alive()


def test_a_sweep_without_a_bar_shares_nothing():
    sweep = progress.SweepProgress(None, 3)
    assert sweep.report(0) is None
    sweep.start()
    sweep.finished(0)
    sweep.stop()
