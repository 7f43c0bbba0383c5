"""Results folders that never cost a user a file.

- A scenario's `name` is a label: the default folder is `results/<safe name>`, derived
  from it by keeping letters, digits, `-`, `_` and `.` (never `.` or `..`), and numbered
  (`-2`, `-3`, ...) when that folder already exists, so that runs never replace each other
  by default.
- A folder is written beside its destination (`<out>.partial-<pid>`), marked as wscsim's
  with a `.wscsim` file, and renamed into place only when complete.
- An existing destination is replaced only when the caller asks (`--force`,
  `overwrite=True`) and only if it is a wscsim results folder; a folder holding anything
  else is never touched. The old folder is renamed aside (`<out>.old-<pid>`), the new one
  renamed in, then the old one removed. A kill at any instant leaves the old folder, the
  new one, or the old one aside, which the next run writing there puts back.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import signal
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .errors import ScenarioError

MARKER = ".wscsim"
RESULTS_ROOT = Path("results")
MAX_NAME_CHARS = 100


@dataclass(frozen=True)
class Destination:
    """Where a run's folder goes: `path`; whether an earlier wscsim folder there may be
    replaced (`overwrite`); or whether a free name next to it is taken instead (`unique`,
    for default folders)."""

    path: Path
    overwrite: bool = False
    unique: bool = False


def safe_name(label: object) -> str:
    """A folder name from a scenario's name: runs of anything but letters, digits, `-`,
    `_` and `.` become one `-`; leading dots and dashes go (no hidden folders, no `..`)."""
    text = label if isinstance(label, str) else ""
    slug = re.sub(r"[^\w.-]+", "-", text, flags=re.ASCII).strip("-.")
    slug = re.sub(r"\.{2,}", ".", slug)[:MAX_NAME_CHARS].strip("-.")
    return slug or "unnamed"


def default_out(label: object, root: Path = RESULTS_ROOT) -> Path:
    """`results/<safe name>`, or the first free `results/<safe name>-N`."""
    base = root / safe_name(label)
    return _next_free(base)


def _next_free(base: Path) -> Path:
    out, n = base, 1
    while out.exists() or out.is_symlink():
        n += 1
        out = base.with_name(f"{base.name}-{n}")
    return out


def is_results_folder(path: Path) -> bool:
    """A folder wscsim wrote (it holds the marker file)."""
    return path.is_dir() and not path.is_symlink() and (path / MARKER).is_file()


def check_destination(out: Path, overwrite: bool, field: str = "--out") -> None:
    """Refuses, before anything runs, a destination that this run may not write."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise ScenarioError(field, f"given {str(out)!r}, which is not a folder; allowed: a new folder, or a wscsim results folder with --force")
    if not out.exists() or not any(out.iterdir()):
        return
    if not is_results_folder(out):
        raise ScenarioError(field, f"given {str(out)!r}, which holds files wscsim did not write; allowed: a new or empty folder (wscsim replaces only its own results folders)")
    if not overwrite:
        raise ScenarioError(field, f"given {str(out)!r}, which holds an earlier run; allowed: a new folder, or --force (overwrite=True) to replace it")


def chosen_destination(out: object, overwrite: bool, field: str) -> Destination:
    """The folder a caller named (`--out`, `out=`), checked before anything runs."""
    if not isinstance(out, (str, Path)) or not str(out) or "\0" in str(out):
        raise ScenarioError(field, f"given {out!r}; allowed: the path of a folder")
    dest = Destination(Path(out), overwrite=overwrite)
    check_destination(dest.path, overwrite, field)
    return dest


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stale_siblings(out: Path, kind: str) -> list[Path]:
    """`<out>.<kind>-<pid>` folders of wscsim's whose process is gone."""
    found: list[Path] = []
    if not out.parent.is_dir():
        return found
    pattern = re.compile(re.escape(out.name) + r"\." + kind + r"-(\d+)$")
    for p in out.parent.iterdir():
        m = pattern.match(p.name)
        if m and is_results_folder(p) and not _pid_alive(int(m.group(1))):
            found.append(p)
    return sorted(found)


def recover(out: Path, say=None) -> None:
    """Cleans up after a run that was killed while writing `out`: its partial folders are
    removed, and an old folder it had set aside is put back if `out` is missing."""
    say = say or (lambda msg: print(msg, file=sys.stderr))
    for p in _stale_siblings(out, "partial"):
        shutil.rmtree(p, ignore_errors=True)
        say(f"note: removed {p}, left incomplete by an interrupted run")
    for p in _stale_siblings(out, "old"):
        if not out.exists():
            os.rename(p, out)
            say(f"note: restored {out}, which an interrupted run had set aside to replace it")
        else:
            shutil.rmtree(p, ignore_errors=True)
            say(f"note: removed {p}, the earlier run an interrupted run had replaced")


@contextmanager
def _signals_held():
    """Holds Ctrl-C and SIGTERM for the few renames that swap folders, so that they are
    never interrupted halfway; a signal that arrives meanwhile is acted on afterwards.

    Held by handlers that note the signal, not by a signal mask: a process-wide signal goes
    to any thread that does not block it (Arrow's and BLAS's threads), whose C handler then
    has Python run the main thread's handler between two renames, mask or not."""
    noted: list[int] = []
    held = {}
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            action = signal.getsignal(sig)
            if action not in (signal.SIG_IGN, None):
                held[sig] = action
                signal.signal(sig, lambda signum, frame: noted.append(signum))
    except ValueError:  # not the main thread, where no signal handler runs anyway
        yield
        return
    try:
        yield
    finally:
        for sig, action in held.items():
            signal.signal(sig, action)
        for sig in noted[:1]:
            action = held[sig]
            if callable(action):
                action(sig, None)  # Python's Ctrl-C handler or the CLI's: raises KeyboardInterrupt
            else:
                os.kill(os.getpid(), sig)  # the default action, now restored


# Results folders this process has moved into place, in order: what an interrupt that
# comes late (during the swap's last step, or while the outcome is printed) has left.
_COMMITTED: list[Path] = []


def committed_folders() -> list[Path]:
    """The results folders this process has completed and moved into place."""
    return list(_COMMITTED)


class ResultFolder:
    """A results folder under construction at `<out>.partial-<pid>`: `commit()` moves it to
    `out` (a free name next to it if `unique`), `abort()` removes it."""

    def __init__(self, out: Path, overwrite: bool = False, unique: bool = False):
        self.out = Path(out)
        self.overwrite = overwrite
        self.unique = unique
        #: The path the folder was moved to, once it was (None before).
        self.committed: Path | None = None
        self._aside: Path | None = None
        if not unique:
            check_destination(self.out, overwrite)
        self.out.parent.mkdir(parents=True, exist_ok=True)
        recover(self.out)
        self.tmp = self.out.with_name(self.out.name + f".partial-{os.getpid()}")
        if self.tmp.exists():
            # Left by an earlier process with this pid: ours only if marked as such.
            if not is_results_folder(self.tmp):
                raise ScenarioError("--out", f"given {str(self.out)!r}, but {self.tmp} exists and is not wscsim's; allowed: a folder whose neighbour names are free")
            shutil.rmtree(self.tmp)
        self.tmp.mkdir()
        (self.tmp / MARKER).write_text(json.dumps({"wscsim_results": True}) + "\n")

    def commit(self) -> Path:
        """Moves the folder into place. A Ctrl-C or SIGTERM held during the swap is raised
        once the swap is done and the replaced folder removed: by then the new folder is in
        place, and `committed_folders()` says so to whoever reports the interrupt."""
        interrupt = None
        while True:
            try:
                with _signals_held():
                    self._swap_in()
                break
            except KeyboardInterrupt as e:  # released with the signals, after the swap
                if self.committed is None:
                    raise
                interrupt = e
                break
            except OSError as e:
                if e.errno not in (errno.ENOTEMPTY, errno.EEXIST) or not self.unique:
                    raise
                # Another run took the name meanwhile: take the next free one.
                self.out = _next_free(self.out)
        if self._aside is not None:
            shutil.rmtree(self._aside, ignore_errors=True)
        if interrupt is not None:
            raise interrupt
        return self.out

    def _swap_in(self) -> None:
        """Renames the new folder in (the old one aside first when replacing it, kept in
        `_aside` for removal once the swap is done). Runs with signals held, so the folder
        is recorded as committed in the same step as it is renamed."""
        aside = None
        if self.overwrite and is_results_folder(self.out):
            aside = self.out.with_name(self.out.name + f".old-{os.getpid()}")
            os.rename(self.out, aside)
        elif self.out.exists() and not self.unique:
            check_destination(self.out, self.overwrite)  # changed since the run began
        try:
            # rename() replaces only an empty folder: anything else raises ENOTEMPTY.
            os.rename(self.tmp, self.out)
        except BaseException:
            if aside is not None:
                os.rename(aside, self.out)
            raise
        self._aside = aside
        self.committed = self.out
        _COMMITTED.append(self.out)

    def abort(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)
