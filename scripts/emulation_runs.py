"""What the emulation experiment scripts (flexplane_fig3.py, flexplane_queues.py,
flexplane_memcached.py) share: where the emulator and the programs run, one emulation run
from a scenario dict, and the check for the programs they need."""

from __future__ import annotations

import shutil
import subprocess
import sys
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
