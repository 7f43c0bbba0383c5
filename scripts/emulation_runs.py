"""What the emulation experiment scripts (flexplane_fig3.py, flexplane_queues.py,
flexplane_memcached.py) share: where the emulator and the programs run, one emulation run
from a scenario dict, and the check for the programs they need."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

# The emulator runs on CPU 0, the programs on CPU 1: on a 2-core machine they would
# otherwise take turns on each other's core, and latencies would measure that.
PIN_PROGRAMS = "taskset -c 1"


def emulate_pinned(sc: dict, out: Path, check: bool = True) -> Path:
    """Runs scenario `sc` with `wscsim emulate` on CPU 0, its results folder at `out` (the
    scenario beside it, `out`.toml). Its commands are this script's own, so they are
    allowed to run. With `check`, a failed run stops the script with its error. Returns
    `out`."""
    from wscsim.toml_text import dumps

    path = out.with_suffix(".toml")
    path.write_text(dumps(sc))
    r = subprocess.run(["taskset", "-c", "0", sys.executable, "-m", "wscsim.cli", "emulate", str(path), "--allow-commands", "--out", str(out), "-q"],
                       capture_output=True, text=True)
    if check and r.returncode != 0:
        raise SystemExit(f"emulate {out.name} failed ({r.returncode}): {r.stderr.strip()}")
    return out


def missing_tools(*tools: str) -> bool:
    """Says on stderr which of `tools` are not installed; True if any is not."""
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        print(f"error: needs {' and '.join(missing)} (apt-get install {' '.join(missing)})", file=sys.stderr)
    return bool(missing)


def measure(cases: list, point: Callable[[object, Path], dict]) -> list[dict]:
    """`point(case, scratch)` for each case, with a scratch folder for emulation runs;
    prints each point as it comes (a run takes seconds) and returns them all."""
    points = []
    with tempfile.TemporaryDirectory() as work:
        for case in cases:
            points.append(point(case, Path(work)))
            print(json.dumps(points[-1]), flush=True)
    return points


@contextmanager
def veth_pair() -> Iterator:
    """Two namespaces with the addresses an emulation gives hosts 0 and 1, joined directly
    by a veth pair instead of the emulator: the baseline with no fabric at all."""
    from wscsim import emulation as em

    with em.Namespaces(2) as ns:
        em._ip("link", "add", em.IFNAME, "netns", ns.names[0], "type", "veth", "peer", "name", em.IFNAME, "netns", ns.names[1])
        for h in range(2):
            ns.configure(h, 1500)
        yield ns


def arguments(description: str, out_help: str, tool: str, more: Callable[[argparse.ArgumentParser], None] = lambda p: None) -> argparse.Namespace | None:
    """The experiment scripts' command line: `--out` (made here), the script's own options
    (`more`) and `--busy-poll`. None if `tool` is not installed (said on stderr)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--out", required=True, help=out_help)
    more(p)
    p.add_argument("--busy-poll", action="store_true", help="the emulator polls without sleeping (emulation.busy_poll)")
    args = p.parse_args()
    if missing_tools(tool):
        return None
    Path(args.out).mkdir(parents=True, exist_ok=True)
    return args
