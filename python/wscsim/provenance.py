"""Where a result came from, recorded in its summary.json under "provenance" (as OMNeT++'s
result files record their run's attributes): the command line, wscsim's version and the
commit it was built from, the machine, and the date. None of it enters the tables, which
stay byte-identical for the same scenario and seed.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from functools import lru_cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
GIT_SECONDS = 5

# The command line of the `wscsim` command running in this process (set by the CLI; None
# when wscsim is used from Python).
_command_line: list[str] | None = None


def set_command_line(argv: list[str] | None) -> None:
    global _command_line
    _command_line = None if argv is None else list(argv)


def record() -> dict:
    """The provenance of a result written now."""
    from . import _native

    out = {
        "command_line": _command_line,
        # Where the command's relative paths (a scenario file, --out) start.
        "working_directory": None if _command_line is None else os.getcwd(),
        "wscsim_version": _native.VERSION,
        # From the checkout it runs from; else the commit the core was built from, once the
        # native module records it (GIT_COMMIT; dirty unknown).
        "git": source_checkout() or _built_from(_native),
        "platform": machine(),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
    }
    rustc = getattr(_native, "RUSTC_VERSION", None)  # present once the core is built to say it
    if rustc:
        out["platform"] = {**out["platform"], "rustc": rustc}
    return out


def _built_from(native) -> dict | None:
    commit = getattr(native, "GIT_COMMIT", None)
    return {"commit": commit, "dirty": None} if commit else None


@lru_cache(maxsize=1)
def source_checkout() -> dict | None:
    """The commit of the checkout wscsim runs from, and whether its tracked files differ from
    it (`dirty`), when it runs from one (an editable install); None otherwise, and when git
    is missing or slow. A checkout that merely contains the installed package (a project
    with its virtual environment inside) is not wscsim's: its top must hold this package."""
    top = _git("rev-parse", "--show-toplevel")
    if top is None or (Path(top) / "python" / "wscsim").resolve() != PACKAGE:
        return None
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no")
    if commit is None:
        return None
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def _git(*args: str) -> str | None:
    try:
        p = subprocess.run(["git", "-C", str(PACKAGE), *args], capture_output=True, text=True, timeout=GIT_SECONDS,
                           stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return p.stdout.strip() if p.returncode == 0 else None


@lru_cache(maxsize=1)
def machine() -> dict:
    """The CPU, its cores (all, and those this process may use), the OS and Python."""
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = None
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "cores_usable": usable,
        "machine": platform.machine(),
        "os": f"{platform.system()} {platform.release()}",
        "os_release": _os_release(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
    }


def _cpu_model() -> str | None:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or None
    for key in ("model name", "Hardware", "cpu model", "Model"):  # x86; then Arm, MIPS, Raspberry Pi
        for line in text.splitlines():
            name, sep, value = line.partition(":")
            if sep and name.strip() == key and value.strip():
                return value.strip()
    return platform.processor() or None


def _os_release() -> str | None:
    """The distribution's name and version (/etc/os-release's PRETTY_NAME)."""
    try:
        text = Path("/etc/os-release").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"') or None
    return None
