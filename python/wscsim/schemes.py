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
params = {...} }` (or "module:MyScheme", or a name given to `register_scheme`). A file path
is relative to the scenario file. Running a scenario imports the class only when the user
says so (`--allow-python`, `allow_python=True`): a scenario file alone never runs code, and
`wscsim check` never imports it, with or without `--allow-python`: it reads the class
from its source (defined, with its methods and queue count) and refuses what a run would
refuse. The packet
and port arguments are views: `packet.dscp`, `packet.priority` and `packet.fields` (two
integers) may be changed and travel on with the packet. The framework still enforces the
port's buffer: an accepted packet that does not fit is dropped.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

from . import static_class
from .errors import ScenarioError, from_core
from .scenario import python_schemes, to_json
from .scheme_base import Scheme  # noqa: F401 (wscsim.schemes.Scheme, as before)

REQUIRED = ("classify", "enqueue", "schedule")

_registry: dict[str, type] = {}
MAX_SOURCE_BYTES = 4 << 20


def register_scheme(name: str, cls: type) -> None:
    """Makes `cls` available to scenarios as `class = name`."""
    _registry[name] = cls


def register_service(name: str, cls: type) -> None:
    """Makes service class `cls` available to `[[runtime.services]]` as `class = name`."""
    _registry[name] = cls
ALLOW_HINT = "pass --allow-python (allow_python=True from Python) to run the scheme's code: a scenario runs code only when you say so"


def _split(spec: str, where: str) -> tuple[str, str]:
    if ":" not in spec:
        raise ScenarioError(where, f"given {spec!r}; allowed: \"module:Class\", \"path/to/file.py:Class\" or a name given to wscsim.register_scheme ({', '.join(_registry) or 'none registered'})")
    mod_name, _, cls_name = spec.rpartition(":")
    if not cls_name.isidentifier():
        raise ScenarioError(where, f"given {spec!r}; allowed: a class name after the colon (a Python identifier)")
    if not mod_name.endswith(".py") and not all(part.isidentifier() for part in mod_name.split(".")):
        raise ScenarioError(where, f"given {spec!r}; allowed: a dotted module name or a path ending in .py before the colon")
    return mod_name, cls_name


def check_statically(spec: str, where: str) -> None:
    """Checks a Python scheme's class string without running any of its code: the file
    exists and parses, and defines the class at its top level; for a module, that its top
    package can be found (finding a package does not import it)."""
    if spec in _registry:
        return
    mod_name, cls_name = _split(spec, where)
    if not mod_name.endswith(".py"):
        top = mod_name.split(".")[0]
        if importlib.util.find_spec(top) is None:
            raise ScenarioError(where, f"given {spec!r}; allowed: an installed module ({top} not found)")
        # A module's source is read where it can be found without importing; what it
        # binds otherwise (a class imported from elsewhere) is left to the import.
        source = static_class.module_source(mod_name)
        tree = _parsed(source) if source is not None and source.stat().st_size <= MAX_SOURCE_BYTES else None
        if tree is not None:
            _check_source(tree, cls_name, spec, where)
        return
    path = Path(mod_name)
    if not path.is_file():
        raise ScenarioError(where, f"given {spec!r}; allowed: an existing Python file ({path} not found)")
    if path.stat().st_size > MAX_SOURCE_BYTES:
        raise ScenarioError(where, f"given {spec!r}; allowed: a Python file of at most 4 MB")
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError, RecursionError) as e:
        raise ScenarioError(where, f"given {spec!r}; allowed: a Python file that parses ({type(e).__name__} at line {getattr(e, 'lineno', '?')})") from None
    if not any(isinstance(n, ast.ClassDef) and n.name == cls_name for n in tree.body):
        raise ScenarioError(where, f"given {spec!r}; allowed: a class defined at the top of {path.name} (it has no class {cls_name})")
    _check_source(tree, cls_name, spec, where)


def _parsed(source: Path) -> ast.Module | None:
    try:
        return ast.parse(source.read_bytes(), filename=str(source))
    except (OSError, SyntaxError, ValueError, RecursionError):
        return None


def _check_source(tree: ast.Module, cls_name: str, spec: str, where: str) -> None:
    """`_check` of a class as its source defines it (where the source alone can say)."""
    found = static_class.members(tree, cls_name)
    if found is None:
        return
    queues = static_class.literal(found["queues"]) if "queues" in found else (True, 1)
    _judge(spec, where, lambda m: m in found and static_class.maybe_callable(found[m]), queues)


def _import(spec: str, where: str) -> type:
    if spec in _registry:
        return _registry[spec]
    check_statically(spec, where)
    mod_name, cls_name = _split(spec, where)
    try:
        if mod_name.endswith(".py"):
            path = Path(mod_name)
            s = importlib.util.spec_from_file_location(f"wscsim_user_scheme_{path.stem}", path)
            if s is None or s.loader is None:
                raise ScenarioError(where, f"given {spec!r}; allowed: a Python file that can be imported")
            module = importlib.util.module_from_spec(s)
            s.loader.exec_module(module)
        else:
            module = importlib.import_module(mod_name)
    except BaseException as e:  # the user's module failed, or exited: say so in one line
        if isinstance(e, (KeyboardInterrupt, ScenarioError)):
            raise
        raise ScenarioError(where, f"given {spec!r}; importing it raised {type(e).__name__}: {e}") from None
    cls = getattr(module, cls_name, None)
    if cls is None:
        raise ScenarioError(where, f"given {spec!r}; allowed: a class defined in {mod_name} (it has no {cls_name})")
    return cls


def _check(cls: type, spec: str, where: str) -> None:
    _judge(spec, where, lambda m: callable(getattr(cls, m, None)), (True, getattr(cls, "queues", 1)))


def _judge(spec: str, where: str, is_callable, queues: tuple[bool, object]) -> None:
    """Refuses a scheme's or service's class from what is known of it: `is_callable(name)`
    for its methods, `queues` (known, value) for a scheme's queue count. The same lines
    whether the class was imported (run) or read from its source (check)."""
    if where.startswith("runtime.services"):
        if not is_callable("deliver"):
            raise ScenarioError(where, f"given {spec!r}; allowed: a class with a deliver method (see wscsim.Service)")
        return
    missing = [m for m in REQUIRED if not is_callable(m)]
    if missing:
        raise ScenarioError(where, f"given {spec!r}; allowed: a class with methods classify, enqueue and schedule (missing: {', '.join(missing)})")
    known, q = queues
    if known and (not isinstance(q, int) or not 1 <= q <= 64):
        raise ScenarioError(where.rsplit(".", 1)[0] + ".class", f"{spec}.queues given {q!r}; allowed: an integer from 1 to 64")


def classes_for(sc: dict, allow_python: bool = False) -> dict | None:
    """Class objects for every `kind = "python"` scheme and Python service in scenario
    `sc`, keyed by their class strings; None if there are none. Without `allow_python`,
    only classes given to `register_scheme` or `register_service` (code the caller already
    ran) are accepted."""
    found = {}
    for path, spec in python_schemes(sc):
        where = f"{path}.class"
        _refuse_unless_allowed(spec, where, allow_python)
        cls = _import(spec, where)
        _check(cls, spec, where)
        found[spec] = cls
    return found or None


def _refuse_unless_allowed(spec: str, where: str, allow_python: bool) -> None:
    """The class string checked from its source, and refused unless its code may run."""
    check_statically(spec, where)
    if spec not in _registry and not allow_python:
        raise ScenarioError(where, f"given {spec!r}; allowed: {ALLOW_HINT}")


def check(sc: dict, allow_python: bool = False, for_run: bool = False, build: bool = False) -> dict:
    """Validates a scenario as running it would before it starts, without running any of
    its code: Python schemes and services are read from their source, not imported, and
    refused unless `allow_python`, as a run refuses them. With `build` (wscsim check), its
    simulation is built too, and dropped, so that every refusal the start of a run makes
    is made (a Python scheme stood in for). Returns the scenario with every default filled
    in. `for_run` (a sweep about to run its points) also imports the classes, which needs
    `allow_python`."""
    import json

    from . import _native

    if for_run:
        classes_for(sc, allow_python)
    else:
        for path, spec in python_schemes(sc):
            _refuse_unless_allowed(spec, f"{path}.class", allow_python)
    try:
        resolved = json.loads(_native.check(to_json(sc), build))
    except _native.ScenarioError as e:
        raise from_core(*e.args) from None
    return resolved


def check_points(points: list[tuple[dict, dict]], allow_python: bool = False, for_run: bool = False,
                 base: dict | None = None, build: bool = False) -> list[dict]:
    """`check` of every (scenario, swept values) point, before any runs; an error that
    comes from a point's values names the point. One that the sweep's `base` scenario
    gives as it is (a typo in the file, shared by every point) is not blamed on a point.
    Returns each point's resolved scenario."""
    resolved = []
    for sc, params in points:
        try:
            resolved.append(check(sc, allow_python, for_run, build))
        except ScenarioError as e:
            if not params or _same_error(e, base, allow_python, build):
                raise
            where = f" (in sweep point {', '.join(f'{k}={v!r}' for k, v in params.items())})"
            raise ScenarioError(e.path, e.message + where) from None
    return resolved


def _same_error(error: ScenarioError, base: dict | None, allow_python: bool, build: bool = False) -> bool:
    """Whether checking `base` (a sweep without its axes) refuses it just as a point was."""
    if base is None:
        return False
    try:
        check(base, allow_python, build=build)
    except ScenarioError as e:
        return (e.path, e.message) == (error.path, error.message)
    return False


def native_simulation(sc: dict, allow_python: bool = False):
    """Builds the native simulation for scenario dict `sc`, loading its Python schemes
    (which needs `allow_python` unless they were registered)."""
    from . import _native

    classes = classes_for(sc, allow_python)
    try:
        return _native.Simulation(to_json(sc), classes)
    except _native.ScenarioError as e:
        raise from_core(*e.args) from None
