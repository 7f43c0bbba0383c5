"""The Python front end has no import cycle (docs/architecture.md, "The Python front
end"): the package's modules, with the imports inside functions counted too, form no loop."""

import ast
import re
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


# The Rust core's layers, top to bottom, as docs/architecture.md draws them; a layer may use
# those below it, and those on its own line only if it is one of them.
RUST_LAYERS = [["emulate"], ["sim"], ["config"], ["workload"], ["services"], ["metrics"], ["transport"], ["host", "topology"],
               ["net"], ["scheme"], ["packet", "units", "table", "memory", "check"], ["engine"]]
CORE = PACKAGE.parent.parent / "crates" / "wscsim" / "src"


def _non_test_source(path: Path) -> str:
    """A file's code without its test module (by convention last, after `#[cfg(test)]`);
    nothing of a file that is test code throughout (`#![cfg(test)]`, a test bench)."""
    text = path.read_text()
    if "\n#![cfg(test)]\n" in text:
        return ""
    return text.split("#[cfg(test)]", 1)[0]


def test_no_rust_module_uses_a_layer_above_it():
    level = {m: i for i, line in enumerate(RUST_LAYERS) for m in line}
    assert set(re.findall(r"^pub mod ([a-z_]+);", (CORE / "lib.rs").read_text(), re.M)) == set(level)
    up = []
    for module, i in level.items():
        files = list((CORE / module).rglob("*.rs")) if (CORE / module).is_dir() else []
        files += [CORE / f"{module}.rs"] if (CORE / f"{module}.rs").exists() else []
        assert files, module
        for f in files:
            if f.name.endswith("_tests.rs"):
                continue
            for used in set(re.findall(r"crate::([a-z_]+)", _non_test_source(f))):
                if used in level and level[used] < i:
                    up.append(f"{f.relative_to(CORE)} uses {used}")
    assert not up, up
