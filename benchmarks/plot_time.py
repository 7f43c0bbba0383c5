#!/usr/bin/env python3
"""Plot time per bundled scenario: what drawing the plots costs next to the run itself.

Each bundled scenario is run shortened as scripts/fingerprint.py shortens it, with
`wscsim run --no-plots` (timed as a whole command, wall seconds). Then its tables are read
back and its plots drawn as a run draws them once its tables are in memory (in worker
processes, one per core), each timed, and the whole `wscsim plot` command on the folder
(reading the tables, drawing, Python's start and imports). The table printed is the one
benchmarks/RESULTS.md records:

    .venv/bin/python benchmarks/plot_time.py --out /tmp/plot-time        # every scenario
    .venv/bin/python benchmarks/plot_time.py diablo_incast --out /tmp/pt  # some of them

Results folders are written under --out (a new or empty folder), one per scenario.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from fingerprint import SHORTER  # noqa: E402


def _wscsim() -> list[str]:
    """The wscsim command of the interpreter running this script."""
    return [sys.executable, "-c", "import sys; from wscsim.cli import console_main; sys.exit(console_main())"]


def _toml(v) -> str:
    """A value as TOML text for --set (inline tables and arrays included)."""
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {_toml(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    if isinstance(v, bool):
        return "true" if v else "false"
    return json.dumps(v)


def _timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _drawn(folder: Path) -> tuple[float, float, int]:
    """Reads the folder's tables and draws its plots into a scratch folder inside it, as
    a run draws them once its tables are in memory: (read s, draw s, figures drawn)."""
    import shutil

    from wscsim import drawing
    from wscsim.results import read

    t0 = time.perf_counter()
    res = read(folder)
    t1 = time.perf_counter()
    if isinstance(res.summary.get("points"), int):
        figures = drawing.sweep_figures(res.tables, res.summary, drawing.swept_columns(res.summary, res.tables.get("points")))
    else:
        figures = drawing.run_figures(res.tables, res.summary)
    scratch = folder / "plot-time-scratch"
    scratch.mkdir()
    try:
        made = drawing.draw(figures, scratch)
    finally:
        shutil.rmtree(scratch)
    return t1 - t0, time.perf_counter() - t1, len([m for m in made if m.endswith(".png")])


def measure(name: str, out: Path) -> dict:
    """Runs one scenario shortened without plots; times reading its tables and drawing its
    plots (as a run does, in worker processes), and the whole `wscsim plot` command."""
    folder = out / name
    sets = [f"--set={k}={_toml(v)}" for k, v in SHORTER.get(name, {}).items()]
    run = _timed([*_wscsim(), "run", name, *sets, "--no-plots", "--out", str(folder), "-q"])
    read_s, draw_s, figures = _drawn(folder)
    command = _timed([*_wscsim(), "plot", str(folder), "-q"])
    summary = json.loads((folder / "summary.json").read_text())
    points = summary["points"] if isinstance(summary.get("points"), int) else 1
    return {"scenario": name, "points": points, "run_s": run, "read_s": read_s, "draw_s": draw_s, "command_s": command, "figures": figures}


def main() -> int:
    from wscsim.scenario import bundled

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("scenarios", nargs="*", help="bundled scenario names (default: all)")
    p.add_argument("--out", required=True, help="a new or empty folder for the results folders")
    args = p.parse_args()
    out = Path(args.out)
    if out.exists() and any(out.iterdir()):
        p.error(f"--out {out} is not empty")
    out.mkdir(parents=True, exist_ok=True)
    print("| scenario | points | run, --no-plots (s) | draw plots (s) | draw / run | figures | read tables (s) | wscsim plot (s) |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.scenarios or sorted(bundled()):
        r = measure(name, out)
        print(f"| {r['scenario']} | {r['points']} | {r['run_s']:.1f} | {r['draw_s']:.2f} | {r['draw_s'] / r['run_s']:.2f} | {r['figures']} "
              f"| {r['read_s']:.2f} | {r['command_s']:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
