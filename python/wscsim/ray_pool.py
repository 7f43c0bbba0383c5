"""Sweep points on an existing Ray cluster (`wscsim sweep ... --ray ADDRESS`).

Every point runs `fn(job)` as one Ray task of one CPU; outcomes come back as they finish,
exactly as from local processes, so a sweep's tables are the same whichever ran it. Ray is
an optional extra (`pip install wscsim[ray]`). The cluster's nodes need the same wscsim
version installed (checked before any point is sent), and any Python scheme file at the
same path; schemes given to `register_scheme` exist only in this process and cannot run
there.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator

from .errors import ScenarioError


def _version() -> str:
    from . import __version__

    return __version__


def _reachable(address: str, timeout_s: float = 10.0) -> None:
    """Refuses at once an address nothing listens on (Ray itself retries for minutes)."""
    import socket

    hostport = address.removeprefix("ray://")
    if address == "auto" or ":" not in hostport:
        return
    host, _, port = hostport.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            pass
    except (OSError, ValueError) as e:
        raise ScenarioError("--ray", f"given {address!r}, where nothing answers ({e.strerror if isinstance(e, OSError) and e.strerror else e}); allowed: the address of a running Ray cluster") from None


def _init(ray, address: str, attempts: int = 3) -> None:
    """ray.init, tried again when a Ray client server fails to start the server for this
    client (it gives up after 30 s, which a busy head node can take)."""
    for attempt in range(attempts):
        try:
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False, logging_level=logging.ERROR)
            return
        except ConnectionAbortedError:
            ray.shutdown()
            if attempt + 1 < attempts:
                time.sleep(2.0 * (attempt + 1))
                continue
            why = "its client server failed to start a server for this client, three times"
        except Exception as e:  # Ray raises ConnectionError, RuntimeError, ValueError...
            why = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        raise ScenarioError("--ray", f"given {address!r}, which could not be reached ({why}); allowed: the address of a running Ray cluster")


def connect(address: str):
    """Connects to the cluster at `address` ("auto", "HOST:PORT" or "ray://HOST:PORT")."""
    try:
        import ray
    except ImportError:
        raise ScenarioError("--ray", f"given {address!r}, but Ray is not installed; allowed: an address once `pip install wscsim[ray]` has installed it") from None
    if not address or not isinstance(address, str):
        raise ScenarioError("--ray", f"given {address!r}; allowed: a Ray address such as 127.0.0.1:6379, ray://host:10001 or auto")
    _reachable(address)
    _init(ray, address)
    remote = ray.get(ray.remote(num_cpus=0)(_version).remote())
    if remote != _version():
        ray.shutdown()
        raise ScenarioError("--ray", f"given {address!r}, whose workers run wscsim {remote}; allowed: a cluster with wscsim {_version()} installed")
    return ray


def outcomes(fn: Callable, jobs: Iterable, address: str) -> Iterator:
    """Yields `fn(job)` for every job as Ray tasks finish; on any exit (done, error,
    Ctrl-C) unfinished tasks are cancelled and the connection closed."""
    ray = connect(address)
    task = ray.remote(num_cpus=1, max_retries=0)(fn)
    pending = [task.remote(job) for job in jobs]
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield ray.get(done[0])
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)
        ray.shutdown()
