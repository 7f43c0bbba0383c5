"""Local worker processes for sweeps, small enough to reason about when interrupted.

Each worker has its own pipe and holds at most one job; the parent waits on the pipes and
on the workers' exit sentinels together, so a worker that dies is noticed at once, and
stopping the pool is: terminate every worker, reap it. No helper threads and no shared
queue locks, which is what made `multiprocessing.Pool` and `ProcessPoolExecutor` hang when
a worker was killed mid-message (issue 12: a sweep parent waiting 39 minutes on a lock).
"""

from __future__ import annotations

import multiprocessing
import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.connection import wait


class WorkerDied(RuntimeError):
    pass


def started_as_worker(on_term=signal.SIG_DFL) -> None:
    """What a forked worker does first. Ctrl-C is for the parent, which stops every worker
    itself. The worker was started with SIGINT and SIGTERM blocked, so setting their
    actions first leaves no window in which a Ctrl-C could kill it half-started; SIGTERM
    (`on_term`) is how the parent stops it; and it dies with its parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, on_term)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    _die_with_parent()


def _worker_main(fn: Callable, conn) -> None:
    started_as_worker()
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        conn.send(fn(job))


def _die_with_parent() -> None:
    """On Linux, a worker is killed when its parent dies, even by SIGKILL."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class LocalPool:
    """`workers` processes running `fn` (a module-level function) on jobs, started at once
    so that they fork before the caller starts any thread (a progress bar)."""

    def __init__(self, fn: Callable, workers: int):
        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
        self.workers = []
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            for _ in range(workers):
                parent_end, child_end = ctx.Pipe()
                p = ctx.Process(target=_worker_main, args=(fn, child_end), daemon=True)
                p.start()
                child_end.close()
                self.workers.append((p, parent_end))
        except BaseException:
            self.stop()
            raise
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)

    def outcomes(self, jobs: Iterable) -> Iterator:
        """Yields `fn(job)` for every job, in the order they finish; raises WorkerDied if
        a worker exits without answering."""
        todo = deque(jobs)
        busy = {}
        for p, conn in self.workers:
            if todo:
                conn.send(todo.popleft())
                busy[conn] = p
        while busy:
            sentinels = {p.sentinel: conn for conn, p in busy.items()}
            for ready in wait(list(busy) + list(sentinels)):
                conn = sentinels.get(ready, ready)
                if conn not in busy:
                    continue
                if ready in sentinels and not conn.poll():
                    raise WorkerDied(f"a sweep worker died (exit status {busy[conn].exitcode}: killed, or out of memory)")
                try:
                    result = conn.recv()
                except EOFError:
                    raise WorkerDied(f"a sweep worker died (exit status {busy[conn].exitcode})") from None
                if todo:
                    conn.send(todo.popleft())
                else:
                    conn.send(None)
                    del busy[conn]
                yield result

    def stop(self) -> None:
        """Terminates and reaps every worker (idempotent)."""
        for p, conn in self.workers:
            if p.is_alive():
                p.terminate()
        for p, conn in self.workers:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
                p.join()
            conn.close()
        self.workers = []
