"""Data-plane schemes written in Python, for prototyping.

A scheme is a class with the four methods of Flexplane's pattern API. The simulator makes
one instance per switch, `Cls(switch_name, n_ports, **params)`, and calls it for every
packet at that switch's ports:

    class MyScheme(wscsim.Scheme):
        queues = 2                        # queues per port (1 to 64)

        def classify(self, packet, port):  # -> queue index
            return 1 if packet.dscp else 0

        def enqueue(self, packet, port, queue):  # -> "accept", "mark" or "drop"
            return "accept" if port.bytes_queued + packet.size <= port.limit_bytes else "drop"

        def schedule(self, port):  # -> index of the queue whose head leaves next, or None
            for q in (1, 0):
                if port.queue_packets[q]:
                    return q
            return None

        def route(self, packet, candidates):  # optional: one of the equal-cost ports
            return candidates[0]

A scenario names it with `switch.scheme = { kind = "python", class = "file.py:MyScheme",
params = {...} }` (or "module:MyScheme", or a name given to `register_scheme`). The packet
and port arguments are views: `packet.dscp`, `packet.priority` and `packet.fields` (two
integers) may be changed and travel on with the packet. The framework still enforces the
port's buffer: an accepted packet that does not fit is dropped.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

from .errors import ScenarioError

REQUIRED = ("classify", "enqueue", "schedule")

_registry: dict[str, type] = {}


class Scheme:
    """Optional base class for Python schemes: one queue, everything classified to it, and
    the constructor's arguments kept. A subclass still writes `enqueue` and `schedule`."""

    queues = 1

    def __init__(self, switch: str, ports: int, **params):
        self.switch = switch
        self.ports = ports
        self.params = params

    def classify(self, packet, port) -> int:
        return 0


def register_scheme(name: str, cls: type) -> None:
    """Makes `cls` available to scenarios as `class = name`."""
    _registry[name] = cls


def _import(spec: str, where: str) -> type:
    if spec in _registry:
        return _registry[spec]
    if ":" not in spec:
        raise ScenarioError(where, f"given {spec!r}; allowed: \"module:Class\", \"path/to/file.py:Class\" or a name given to wscsim.register_scheme ({', '.join(_registry) or 'none registered'})")
    mod_name, _, cls_name = spec.rpartition(":")
    try:
        if mod_name.endswith(".py"):
            path = Path(mod_name)
            s = importlib.util.spec_from_file_location(f"wscsim_user_scheme_{path.stem}", path)
            if s is None or not path.exists():
                raise ScenarioError(where, f"given {spec!r}; allowed: an existing Python file ({path} not found)")
            module = importlib.util.module_from_spec(s)
            s.loader.exec_module(module)
        else:
            module = importlib.import_module(mod_name)
    except ScenarioError:
        raise
    except Exception as e:  # the user's module failed to import: say so in one line
        raise ScenarioError(where, f"given {spec!r}; importing it raised {type(e).__name__}: {e}") from None
    cls = getattr(module, cls_name, None)
    if cls is None:
        raise ScenarioError(where, f"given {spec!r}; allowed: a class defined in {mod_name} (it has no {cls_name})")
    return cls


def _check(cls: type, spec: str, where: str) -> None:
    missing = [m for m in REQUIRED if not callable(getattr(cls, m, None))]
    if missing:
        raise ScenarioError(where, f"given {spec!r}; allowed: a class with methods classify, enqueue and schedule (missing: {', '.join(missing)})")
    q = getattr(cls, "queues", 1)
    if not isinstance(q, int) or not 1 <= q <= 64:
        raise ScenarioError(where.rsplit(".", 1)[0] + ".class", f"{spec}.queues given {q!r}; allowed: an integer from 1 to 64")


def python_schemes(sc: dict) -> list[tuple[str, str]]:
    """(field path, class string) of every `kind = "python"` scheme in scenario `sc`."""
    sw = sc.get("switch") if isinstance(sc.get("switch"), dict) else {}
    places = [("switch.scheme", sw.get("scheme"))]
    for i, o in enumerate(sw.get("overrides") or []):
        if isinstance(o, dict):
            places.append((f"switch.overrides[{i}].scheme", o.get("scheme")))
    return [(path, s["class"]) for path, s in places if isinstance(s, dict) and s.get("kind") == "python" and isinstance(s.get("class"), str)]


def classes_for(sc: dict) -> dict | None:
    """Class objects for every `kind = "python"` scheme in scenario `sc`, keyed by their
    class strings; None if there are none."""
    found = {}
    for path, spec in python_schemes(sc):
        cls = _import(spec, f"{path}.class")
        _check(cls, spec, f"{path}.class")
        found[spec] = cls
    return found or None


def native_simulation(sc: dict):
    """Builds the native simulation for scenario dict `sc`, loading its Python schemes."""
    from . import _native
    from .scenario import to_json

    classes = classes_for(sc)
    try:
        return _native.Simulation(to_json(sc), classes)
    except _native.ScenarioError as e:
        path, message = e.args
        raise ScenarioError(path, message) from None
