"""wscsim: a fast, deterministic packet-level simulator of warehouse-scale datacenter networks.

    >>> import wscsim
    >>> r = wscsim.run("diablo_incast", overrides={"workload.senders": 4, "sweep": {}})
    >>> r.incast.head()
"""

from ._native import VERSION as __version__
from .errors import ScenarioError

__all__ = ["run", "sweep", "emulate", "read", "Result", "ScenarioError", "Scheme", "register_scheme", "Service", "register_service",
           "__version__"]


def __getattr__(name):
    # pandas and matplotlib load only when results are needed, so that `wscsim check`
    # and error paths answer at once.
    if name in ("run", "sweep", "emulate"):
        from . import api

        return getattr(api, name)
    if name in ("Scheme", "register_scheme", "register_service"):
        from . import schemes

        return getattr(schemes, name)
    if name == "Service":
        from . import services

        return services.Service
    if name in ("read", "Result"):
        from . import results

        return getattr(results, name)
    raise AttributeError(f"module 'wscsim' has no attribute {name!r}")
