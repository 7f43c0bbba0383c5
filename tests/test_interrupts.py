"""Ctrl-C and SIGTERM at any moment of a run: one line that says what is on disk, exit 130,
never a traceback, never a half folder. Verdicts do not depend on when the signal lands:
each trial accepts every outcome the moment could give, and checks that what the command
said matches the disk.

Where a moment must be hit exactly (while plots are drawn, during the final rename), the
child is the CLI run from a small module that sends the signal itself from a wrapped
library call (matplotlib's `Figure.savefig`, `os.rename`): no hook in wscsim's code. It
sends it from code run from a string, as dataclasses and namedtuples run theirs, which
CPython then remembers as an unhandled interrupt (run with -m, as the tests run the CLI,
the process would die by SIGINT after printing its line).
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from procs import reap

SMALL = """name = "small"
duration = "10s"
[topology]
kind = "single_switch"
hosts = 5
link = {{ rate = "1Gbps" }}
[switch]
buffer_per_port = "32KiB"
[transport]
rto_min = "1ms"
[workload]
kind = "incast"
iterations = {iterations}
"""

# A module that runs the CLI with argv from the command line, after wrapping `target`
# (module:attribute) so that the first of its calls for which `when` holds, after `skip`
# such calls (counted in each process: plots are drawn in forked workers), first sends
# `signal` to the CLI's process.
CHILD = """
import importlib, os, signal, sys
CLI = os.getpid()
module, attr = {target!r}.split(":")
owner = importlib.import_module(module)
for part in attr.split(".")[:-1]:
    owner = getattr(owner, part)
name = attr.split(".")[-1]
real = getattr(owner, name)
calls = [0]

def wrapped(*args, **kwargs):
    if {when}:
        calls[0] += 1
        if calls[0] == {skip} + 1:
            exec("import os, signal\\nos.kill(%d, signal.{signal})\\nsent = True" % CLI, {{}})
    return real(*args, **kwargs)

setattr(owner, name, wrapped)
from wscsim.cli import console_main
sys.argv = ["wscsim"] + sys.argv[1:]
sys.exit(console_main())
"""


def _in_a_terminal():
    """The default SIGINT action, as a program started from a terminal has (a suite run in
    the background by a non-interactive shell passes SIGINT on ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(cmd: list[str], cwd: Path | None = None) -> subprocess.Popen:
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=_in_a_terminal, cwd=cwd)


def _run_child(tmp_path: Path, args: list[str], **wrap) -> tuple[int, str]:
    """Runs the CLI (with -m) with `args`, signalling itself as `wrap` says (see CHILD)."""
    (tmp_path / "signalling_child.py").write_text(CHILD.format(**wrap))
    proc = _start([sys.executable, "-m", "signalling_child", *args], cwd=tmp_path)
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        reap(proc)
    return proc.returncode, err


def _catches(pid: int, sig: int) -> bool:
    """Whether process `pid` has a handler of its own for `sig` (Linux's SigCgt mask)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    except OSError:
        pass
    return False


def _scenario(tmp_path: Path, iterations: int) -> Path:
    path = tmp_path / f"small-{iterations}.toml"
    path.write_text(SMALL.format(iterations=iterations))
    return path


def _complete(out: Path) -> dict:
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] is True
    names = {p.name for p in out.iterdir()}
    assert {"incast.parquet", "flows.parquet", "report.html", ".wscsim"} <= names, names
    for plot in summary.get("plots", []):
        assert (out / plot).is_file(), plot
    return summary


def _no_leftovers(out: Path) -> None:
    assert not [p.name for p in out.parent.iterdir() if p.name.startswith(out.name + ".")]


def _agrees_with_disk(rc: int, err: str, out: Path) -> str:
    """What a trial ended as: 'finished', 'nothing', 'plots cut' or 'complete'; fails if
    the command's last words and the disk disagree."""
    assert "Traceback" not in err and "Exception ignored" not in err, err
    _no_leftovers(out)
    if rc == 0:
        _complete(out)
        return "finished"
    assert rc == 130, (rc, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    if lines[0] == "interrupted: no results were written":
        assert not out.exists()
        return "nothing"
    summary = _complete(out)
    if lines[0].startswith(f"interrupted while drawing plots: {out} "):
        assert summary["plots_status"] == "incomplete (interrupted)"
        return "plots cut"
    assert lines[0] == f"interrupted: the results were written completely to {out}", err
    assert summary["plots_status"] in ("complete", "none (not asked for)")
    return "complete"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_at_any_moment_ends_in_one_true_line(tmp_path, sig):
    sc = _scenario(tmp_path, iterations=40)
    seen = []
    # Delays from the moment the command's first lines have run (its handlers in place):
    # its imports, the scenario's check, the simulation, the tables, the plots, the end.
    for i, delay in enumerate((0.0, 0.02, 0.05, 0.1, 0.2, 0.4, 0.7, 1.0, 1.5, 2.5)):
        out = tmp_path / f"out{i}"
        proc = _start([sys.executable, "-m", "wscsim.cli", "run", str(sc), "--out", str(out)])
        try:
            while not _catches(proc.pid, signal.SIGTERM) and proc.poll() is None:
                time.sleep(0.001)
            time.sleep(delay)
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=120)
        finally:
            reap(proc)
        seen.append(_agrees_with_disk(proc.returncode, err, out))
    # The earliest signal lands before anything runs.
    assert seen[0] == "nothing", seen


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("workers", ["1", "2"])
def test_an_interrupt_while_plots_are_drawn_keeps_the_results(tmp_path, sig, workers):
    out = tmp_path / "out"
    # With --svg, a process's third save is its second plot's PNG: its first plot (PNG and
    # SVG) is whole.
    rc, err = _run_child(tmp_path, ["run", str(_scenario(tmp_path, iterations=5)), "--out", str(out), "--workers", workers, "--svg"],
                         target="matplotlib.figure:Figure.savefig", skip=2, when="True", signal=sig)
    assert rc == 130, err
    assert _agrees_with_disk(rc, err, out) == "plots cut"
    plots = json.loads((out / "summary.json").read_text())["plots"]
    assert plots and all(Path(p).with_suffix(".svg").name in plots and Path(p).with_suffix(".png").name in plots for p in plots)
    if workers == "1":
        assert len(plots) == 2
    # No image but the ones listed (the PNG being written when the signal came is gone).
    assert sorted(p.name for p in out.iterdir() if p.suffix in (".png", ".svg")) == sorted(plots)
    assert "incomplete" in (out / "report.html").read_text()


def test_an_interrupt_while_a_sweeps_plots_are_drawn_keeps_the_results(tmp_path):
    out = tmp_path / "out"
    args = ["sweep", str(_scenario(tmp_path, iterations=3)), "--vary", "workload.senders=2,4", "--out", str(out), "--svg"]
    rc, err = _run_child(tmp_path, args, target="matplotlib.figure:Figure.savefig", skip=2, when="True", signal="SIGINT")
    assert rc == 130, err
    assert _agrees_with_disk(rc, err, out) == "plots cut"
    # The points' own folders came before the plots: all there.
    assert sorted(p.name for p in (out / "points").iterdir()) == ["000", "001"]
    assert all((out / "points" / n / "summary.json").is_file() for n in ("000", "001"))


@pytest.mark.parametrize("force", [False, True])
def test_an_interrupt_during_the_final_rename_says_the_results_are_there(tmp_path, force):
    out = tmp_path / "out"
    sc = _scenario(tmp_path, iterations=3)
    args = ["run", str(sc), "--out", str(out), "--no-plots"]
    if force:
        assert subprocess.run([sys.executable, "-m", "wscsim.cli", *args], capture_output=True).returncode == 0
        args.append("--force")
    # Signals are held during the swap: this one is raised as soon as the folder is in place.
    rc, err = _run_child(tmp_path, args, target="os:rename", skip=0, when="'.partial-' in str(args[0])", signal="SIGINT")
    assert _agrees_with_disk(rc, err, out) == "complete"


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_an_interrupt_before_the_simulation_exits_130(tmp_path, sig):
    # While the scenario is read: nothing was written.
    out = tmp_path / "out"
    rc, err = _run_child(tmp_path, ["run", str(_scenario(tmp_path, iterations=3)), "--out", str(out)],
                         target="wscsim.scenario:load", skip=0, when="True", signal=sig)
    assert _agrees_with_disk(rc, err, out) == "nothing"


DISCARDED = """
import os, signal, sys
import wscsim.scenario

real = wscsim.scenario.load


class SignalsWhenCollected:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)
        collected = True  # the handler runs here, in a __del__, where Python discards exceptions


def load(*args, **kwargs):
    SignalsWhenCollected()
    return real(*args, **kwargs)


wscsim.scenario.load = load
from wscsim.cli import console_main
sys.argv = ["wscsim"] + sys.argv[1:]
sys.exit(console_main())
"""


def test_an_interrupt_that_python_discards_is_raised_again(tmp_path):
    # Raised in a __del__ (or a weakref callback, as import's module locks have), an
    # interrupt is printed as 'Exception ignored' and lost; the run would go on.
    (tmp_path / "discarding_child.py").write_text(DISCARDED)
    out = tmp_path / "out"
    proc = _start([sys.executable, "-m", "discarding_child", "run", str(_scenario(tmp_path, iterations=3)), "--out", str(out)],
                  cwd=tmp_path)
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        reap(proc)
    assert _agrees_with_disk(proc.returncode, err, out) == "nothing"


def test_an_interrupt_while_png_plots_are_drawn_keeps_the_whole_ones(tmp_path):
    out = tmp_path / "out"
    # Without --svg, the third save is the third plot's PNG: the first two are whole.
    rc, err = _run_child(tmp_path, ["run", str(_scenario(tmp_path, iterations=5)), "--out", str(out), "--workers", "1"],
                         target="matplotlib.figure:Figure.savefig", skip=2, when="True", signal="SIGINT")
    assert rc == 130, err
    assert _agrees_with_disk(rc, err, out) == "plots cut"
    plots = json.loads((out / "summary.json").read_text())["plots"]
    assert len(plots) == 2 and all(p.endswith(".png") for p in plots)
    assert sorted(p.name for p in out.iterdir() if p.suffix in (".png", ".svg")) == sorted(plots)
