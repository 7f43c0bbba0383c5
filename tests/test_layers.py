"""The Python front end has no import cycle (docs/architecture.md, "The Python front
end"): the package's modules, with the imports inside functions counted too, form no loop."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "python" / "wscsim"


def _imports() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (`from . import x` counts as x, not as
    the package, whose own file only maps names lazily)."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = path
    graph = {}
    for name, path in modules.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
                named = [f"{target}.{a.name}" for a in node.names]
                found |= {t for t in (named if node.module is None else [target, *named]) if t in modules and t != name}
        graph[name] = found
    return graph


def _a_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(v: str) -> list[str] | None:
        state[v] = 1
        path.append(v)
        for w in sorted(graph[v]):
            if state.get(w) == 1:
                return path[path.index(w):] + [w]
            if w not in state and (found := visit(w)):
                return found
        state[v] = 2
        path.pop()
        return None

    for v in sorted(graph):
        if v not in state and (found := visit(v)):
            return found
    return None


def test_no_module_imports_one_that_imports_it_back():
    graph = _imports()
    assert "wscsim.plots.figure" in graph and graph["wscsim.plots.queues"] >= {"wscsim.plots.figure", "wscsim.queue_curves"}
    assert _a_cycle(graph) is None, " -> ".join(_a_cycle(graph))


def test_the_cycle_finder_finds_one():
    assert _a_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _a_cycle({"a": {"b"}, "b": set()}) is None
