"""What a Python class in a user's file defines, read from its source without running it.

`wscsim check` validates a scenario's Python schemes and services this way (it never
imports them: their top-level code would run), and `wscsim run` does the same before it
imports them, so that both refuse the same classes with the same line. Only what is
certain from the source counts: a class whose members could be made when the file runs
(a decorator, a metaclass, a base from another module, members bound in an `if`, the
class changed after its definition) is not judged, and its import at run time decides.
"""

from __future__ import annotations

import ast
import importlib.util
from importlib.machinery import PathFinder
from pathlib import Path

# A member defined with `def` (or a nested class): callable whatever it does.
METHOD = object()

# Statements in a class body that bind nothing, or only names this module reads.
_PLAIN = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign, ast.Expr, ast.Pass)
_MAX_BASES_DEPTH = 32


def module_source(mod_name: str) -> Path | None:
    """The source file of module `mod_name`, found as `import` would find it but without
    importing anything (a package's `__init__` included); None where there is none (a
    built-in or compiled module, or a submodule a package makes when it runs)."""
    parts = mod_name.split(".")
    try:
        spec = importlib.util.find_spec(parts[0])
        for k in range(1, len(parts)):
            if spec is None or not spec.submodule_search_locations:
                return None
            spec = PathFinder.find_spec(".".join(parts[: k + 1]), list(spec.submodule_search_locations))
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin)


def members(tree: ast.Module, cls_name: str) -> dict[str, object] | None:
    """Class `cls_name`'s members as its source defines them, its bases' (in the same file,
    or wscsim's Scheme and Service) included: name -> METHOD, or the expression assigned
    to it. None when the source alone cannot say (see the module's docstring)."""
    top = _top_level_bindings(tree)
    cls = top.get(cls_name)
    if not isinstance(cls, ast.ClassDef) or _changed_after_definition(tree, cls_name):
        return None
    return _class_members(cls, top, _wscsim_names(tree), 0)


def _top_level_bindings(tree: ast.Module) -> dict[str, ast.AST | None]:
    """Each name bound at the top of the file -> its class definition; None for a name
    bound more than once or otherwise (its final value is only known by running)."""
    seen: dict[str, ast.AST | None] = {}
    for node in tree.body:
        names: list[str] = []
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names = [node.name]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [(a.asname or a.name).split(".")[0] for a in node.names]
        else:  # an if, for, try or with: whatever it may bind
            names = [_bound_name(n) for n in ast.walk(node)]
            names = [n for n in names if n]
        for name in names:
            seen[name] = node if name not in seen and isinstance(node, ast.ClassDef) else None
    return seen


def _bound_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
        return node.id
    if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
        return node.name
    if isinstance(node, ast.alias):
        return (node.asname or node.name).split(".")[0]
    if isinstance(node, ast.ExceptHandler):
        return node.name
    return None


def _changed_after_definition(tree: ast.Module, cls_name: str) -> bool:
    """Whether the file may change the class once it is made: `Cls.x = ...`, `setattr`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in ("setattr", "delattr", "globals", "exec", "eval"):
            return True
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
            if isinstance(node.value, ast.Name) and node.value.id == cls_name:
                return True
    return False


def _wscsim_names(tree: ast.Module) -> dict[str, str]:
    """Local names of wscsim's base classes (`from wscsim import Scheme as S` -> S:
    Scheme) and of the wscsim module itself (`import wscsim as w` -> w: "")."""
    names = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module in ("wscsim", "wscsim.schemes", "wscsim.services") and not node.level:
            names.update({a.asname or a.name: a.name for a in node.names if a.name in ("Scheme", "Service")})
        elif isinstance(node, ast.Import):
            names.update({a.asname or a.name: "" for a in node.names if a.name == "wscsim"})
    return names


def _wscsim_base(name: str) -> dict[str, object]:
    from .scheme_base import Scheme
    from .services import Service

    cls = {"Scheme": Scheme, "Service": Service}[name]
    found: dict[str, object] = {}
    for k in reversed(cls.__mro__[:-1]):
        for attr, value in vars(k).items():
            if not (attr.startswith("__") and attr.endswith("__")) or attr == "__init__":
                found[attr] = METHOD if callable(value) else ast.Constant(value)
    return found


def _base_members(base: ast.expr, top: dict, wscsim: dict[str, str], depth: int) -> dict[str, object] | None:
    if isinstance(base, ast.Name):
        if base.id == "object":
            return {}
        if wscsim.get(base.id):
            return _wscsim_base(wscsim[base.id])
        if isinstance(top.get(base.id), ast.ClassDef):
            return _class_members(top[base.id], top, wscsim, depth + 1)
    if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name) and wscsim.get(base.value.id) == "":
        if base.attr in ("Scheme", "Service"):
            return _wscsim_base(base.attr)
    return None


def _class_members(cls: ast.ClassDef, top: dict, wscsim: dict[str, str], depth: int) -> dict[str, object] | None:
    if cls.decorator_list or cls.keywords or depth > _MAX_BASES_DEPTH:
        return None
    found: dict[str, object] = {}
    for base in reversed(cls.bases):  # the first base's members win, as in its MRO
        inherited = _base_members(base, top, wscsim, depth)
        if inherited is None:
            return None
        found.update(inherited)
    for node in cls.body:
        if not isinstance(node, _PLAIN):
            return None
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found[node.name] = METHOD
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if not all(isinstance(t, ast.Name) for t in targets):
                return None
            if node.value is not None:
                found.update({t.id: node.value for t in targets})
    return found


def maybe_callable(member: object) -> bool:
    """False only for a member that is surely not callable (a literal such as None or 1)."""
    if member is METHOD:
        return True
    try:
        value = ast.literal_eval(member)  # type: ignore[arg-type]
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return True
    return callable(value)


def literal(member: object) -> tuple[bool, object]:
    """(True, value) for a member assigned a literal; (False, None) otherwise."""
    if member is METHOD:
        return False, None
    try:
        return True, ast.literal_eval(member)  # type: ignore[arg-type]
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return False, None
