"""The command line end to end: results folder contents, summary fields, interruption."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
from procs import reap

WSCSIM = [sys.executable, "-m", "wscsim.cli"]


def wscsim(*args, cwd=None, timeout=300):
    return subprocess.run(WSCSIM + list(args), capture_output=True, text=True, cwd=cwd, timeout=timeout)


def test_run_writes_a_complete_folder(tmp_path):
    out = tmp_path / "r"
    p = wscsim("run", "websearch_fat_tree", "--set", "workload.flows=80", "--set", "duration=30ms", "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert f"results: {out}" in p.stdout
    s = json.loads((out / "summary.json").read_text())
    for key in ("scenario", "version", "seed", "wall_seconds", "simulated_seconds", "events", "packet_hops", "headline", "invariants"):
        assert key in s, key
    assert s["complete"] is True and s["invariants"]["ok"]
    # The resolved scenario has every default filled in.
    assert s["scenario"]["transport"]["mss"] == "1460B"
    assert s["scenario"]["switch"]["forwarding"] == "store_and_forward"
    flows = pd.read_parquet(out / "flows.parquet")
    assert list(flows.columns)[:6] == ["flow_id", "src", "dst", "size_bytes", "start_us", "fct_us"]
    assert "slowdown" in flows.columns and len(flows) == 80
    assert (out / "fct_slowdown.png").exists() and (out / "queue_cdf.png").exists()


def test_sweep_combines_points_with_swept_columns(tmp_path):
    out = tmp_path / "s"
    p = wscsim("sweep", "diablo_incast", "--vary", "workload.senders=1,4", "--set", "workload.iterations=3",
               "--set", 'sweep={}', "--set", "transport.rto_min=1ms", "--out", str(out))
    assert p.returncode == 0, p.stderr
    inc = pd.read_parquet(out / "incast.parquet")
    assert set(inc["senders"]) == {1, 4}
    assert len(inc) == 6
    assert (out / "incast_goodput.png").exists()
    # One folder per point too, with the point's own tables and summary.
    points = sorted((out / "points").iterdir())
    assert [p.name for p in points] == ["000", "001"]
    one = json.loads((points[1] / "summary.json").read_text())
    assert one["scenario"]["workload"]["senders"] == 4
    assert len(pd.read_parquet(points[1] / "incast.parquet")) == 3


def test_check_and_list():
    p = wscsim("check", "diablo_incast")
    assert p.returncode == 0 and "ok: diablo-incast (20 points)" in p.stdout
    p = wscsim("list")
    assert p.returncode == 0 and "fat_tree" in p.stdout and "websearch" in p.stdout


def _as_in_a_terminal():
    """Gives the child the default SIGINT action, as a program started from a terminal has.
    A test suite launched in the background by a non-interactive shell inherits SIGINT
    ignored, and Python then installs no KeyboardInterrupt handler, so Ctrl-C could not be
    tested."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_interrupted_run_leaves_nothing_that_looks_complete(tmp_path):
    out = tmp_path / "long"
    sc = tmp_path / "long.toml"
    sc.write_text('name = "long"\nduration = "10s"\n[topology]\nkind = "fat_tree"\nk = 8\n'
                  '[workload]\nkind = "permutation"\n')
    proc = subprocess.Popen(WSCSIM + ["run", str(sc), "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=_as_in_a_terminal)
    try:
        time.sleep(3)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        reap(proc)
    assert proc.returncode != 0
    assert not (out / "summary.json").exists()
    assert not any(p.name.startswith("long") for p in tmp_path.iterdir() if p.is_dir())


def test_ctrl_c_during_a_parallel_sweep_leaves_nothing(tmp_path):
    # Ctrl-C in a terminal signals the whole process group: the CLI and its workers.
    out = tmp_path / "sweep"
    proc = subprocess.Popen(WSCSIM + ["run", "diablo_incast", "--set", "duration=600s", "--set", "workload.iterations=400", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=_as_in_a_terminal)
    try:
        time.sleep(4)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        reap(proc)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert not any(p.name.startswith("sweep") for p in tmp_path.iterdir())


def test_scenarios_in_the_user_guide_are_valid():
    import re

    from wscsim import _native
    from wscsim.scenario import tomllib

    guide = (Path(__file__).parent.parent / "docs" / "user-guide.md").read_text()
    blocks = [b for b in re.findall(r"```toml\n(.*?)```", guide, re.S) if "[topology]" in b and "[workload]" in b]
    assert blocks
    for b in blocks:
        sc = tomllib.loads(b)
        sc.pop("sweep", None)
        _native.Simulation(json.dumps(sc))
