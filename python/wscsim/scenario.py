"""Loading scenarios: TOML files, bundled names or dicts; `--set` overrides; sweeps.

A scenario is a nested dict. The native core validates it (unknown keys, units, ranges)
and names the field of any error; this module only handles what comes before: finding the
file, parsing TOML, applying overrides and expanding `[sweep]`.
"""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from .errors import ScenarioError

SCENARIO_DIR = Path(__file__).parent / "scenarios"
DEFAULT_SCENARIO = "diablo_incast"


def bundled() -> dict[str, Path]:
    """Bundled scenario names and their files."""
    return {p.stem: p for p in sorted(SCENARIO_DIR.glob("*.toml"))}


def load(source: str | Path | dict | None) -> dict:
    """Reads a scenario from a dict, a TOML path, or the name of a bundled scenario."""
    if source is None:
        source = DEFAULT_SCENARIO
    if isinstance(source, dict):
        return copy.deepcopy(source)
    text_source = str(source)
    path = Path(text_source)
    if not path.exists():
        named = bundled().get(text_source.removesuffix(".toml"))
        if named is None:
            names = ", ".join(bundled())
            raise ScenarioError("scenario", f"given {text_source!r}; allowed: a TOML file or a bundled scenario ({names})")
        path = named
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError("scenario", f"{path} is not valid TOML ({e})") from None
    except OSError as e:
        raise ScenarioError("scenario", f"given {str(path)!r}; allowed: a readable TOML file ({e.strerror})") from None
    # Relative file references are relative to the scenario file.
    for section, key in (("topology", "file"), ("workload", "size_cdf")):
        val = data.get(section, {}).get(key) if isinstance(data.get(section), dict) else None
        if isinstance(val, str) and ("/" in val or val.endswith((".csv", ".txt", ".edges"))):
            p = Path(val)
            if not p.is_absolute():
                data[section][key] = str((path.parent / p).resolve())
    return data


def parse_value(text: str) -> Any:
    """A `--set` value: a TOML value if it parses as one (8, 0.5, true, [1, 2]), else a string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def set_path(sc: dict, path: str, value: Any) -> None:
    """Sets a dotted path (`transport.rto_min`) in a scenario dict."""
    keys = path.split(".")
    if not all(keys):
        raise ScenarioError(path or "--set", "given an empty key; allowed: a dotted path such as transport.rto_min")
    node = sc
    for i, k in enumerate(keys[:-1]):
        nxt = node.get(k)
        if nxt is None:
            nxt = node[k] = {}
        if not isinstance(nxt, dict):
            raise ScenarioError(".".join(keys[: i + 1]), f"given {nxt!r}; allowed: a table, since {path} is set inside it")
        node = nxt
    node[keys[-1]] = value


def apply_overrides(sc: dict, overrides: list[str] | dict | None) -> dict:
    if not overrides:
        return sc
    items = overrides.items() if isinstance(overrides, dict) else []
    if not isinstance(overrides, dict):
        parsed = []
        for o in overrides:
            if "=" not in o:
                raise ScenarioError("--set", f"given {o!r}; allowed: path=value, such as transport.rto_min=1ms")
            k, v = o.split("=", 1)
            parsed.append((k.strip(), parse_value(v.strip())))
        items = parsed
    for k, v in items:
        set_path(sc, k, v)
    return sc


def split_sweep(sc: dict) -> tuple[dict, list[tuple[str, list]]]:
    """Removes `[sweep]` from a scenario; returns the base and its (path, values) axes."""
    sc = copy.deepcopy(sc)
    sweep = sc.pop("sweep", None) or {}
    if not isinstance(sweep, dict):
        raise ScenarioError("sweep", f"given {sweep!r}; allowed: a table of dotted paths to lists of values")
    axes = []
    for path, values in sweep.items():
        if not isinstance(values, list) or not values:
            raise ScenarioError(f"sweep.{path}", f"given {values!r}; allowed: a non-empty list of values")
        if path == "cases":
            _check_cases(values)
            axes.append((CASE_AXIS, values))
        else:
            axes.append((path, values))
    return sc, axes


# `[[sweep.cases]]`: named variants that each set several keys together (a scheme with its
# transport, say); swept as one axis whose column is `case`.
CASE_AXIS = "case"


def _check_cases(cases: list) -> None:
    names = set()
    for i, c in enumerate(cases):
        where = f"sweep.cases[{i}]"
        if not isinstance(c, dict) or not isinstance(c.get("name"), str) or not c["name"]:
            raise ScenarioError(where, f"given {c!r}; allowed: a table with a `name` and dotted paths to values")
        if c["name"] in names:
            raise ScenarioError(f"{where}.name", f"given {c['name']!r} twice; allowed: distinct names")
        names.add(c["name"])


def _apply_case(sc: dict, case: dict) -> None:
    for k, v in case.items():
        if k != "name":
            set_path(sc, k, copy.deepcopy(v))


def expand(base: dict, axes: list[tuple[str, list]]) -> list[tuple[dict, dict]]:
    """Every combination of the axes: (point scenario, {path: value})."""
    points = []
    for combo in itertools.product(*[vals for _, vals in axes]):
        sc = copy.deepcopy(base)
        params = {}
        for (path, _), v in zip(axes, combo):
            if path == CASE_AXIS:
                _apply_case(sc, v)
                params[path] = v["name"]
            else:
                set_path(sc, path, v)
                params[path] = v
        points.append((sc, params))
    return points


def to_json(sc: dict) -> str:
    try:
        return json.dumps(sc)
    except TypeError as e:
        raise ScenarioError("scenario", f"holds a value that is not plain data ({e})") from None
