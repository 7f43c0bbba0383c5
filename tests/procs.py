"""Helpers for tests that start processes: whatever a test's outcome, what it started is
killed and reaped."""

import os
import signal


def reap(proc) -> None:
    """Kills a child started in a session of its own, with everything left in that session
    (sweep workers included), and reaps it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.kill()
    proc.wait()
