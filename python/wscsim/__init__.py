"""wscsim: a fast, deterministic packet-level simulator of warehouse-scale datacenter networks.

    >>> import wscsim
    >>> r = wscsim.run("diablo_incast", overrides={"workload.senders": 4})
    >>> r.incast.head()
"""

from ._native import VERSION as __version__
from .api import run, sweep
from .errors import ScenarioError
from .results import Result, read

__all__ = ["run", "sweep", "read", "Result", "ScenarioError", "__version__"]
