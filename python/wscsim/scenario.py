"""Loading scenarios: TOML files, bundled names or dicts; `--set` overrides; sweeps.

A scenario is a nested dict. The native core validates it (unknown keys, units, ranges)
and names the field of any error; this module only handles what comes before: finding the
file, parsing TOML, applying overrides and expanding `[sweep]`.
"""

from __future__ import annotations

import copy
import datetime
import itertools
import json
import math
import re
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from .errors import ScenarioError

SCENARIO_DIR = Path(__file__).parent / "scenarios"
DEFAULT_SCENARIO = "diablo_incast"


def bundled() -> dict[str, Path]:
    """Bundled scenario names and their files."""
    return {p.stem: p for p in sorted(SCENARIO_DIR.glob("*.toml"))}


# A scenario file larger than this is not a scenario (the largest bundled one is 3 KB).
MAX_SCENARIO_BYTES = 1 << 20
# Deepest nesting of tables and lists accepted (a scenario needs 4).
MAX_DEPTH = 32
# Most points a sweep may have (each point is a whole simulation).
MAX_SWEEP_POINTS = 10_000


def load(source: str | Path | dict | None) -> dict:
    """Reads a scenario from a dict, a TOML path, or the name of a bundled scenario, and
    checks that it is plain data (tables, lists, strings, finite numbers, booleans)."""
    if source is None:
        source = DEFAULT_SCENARIO
    if isinstance(source, dict):
        check_plain(source)
        return copy.deepcopy(source)
    if not isinstance(source, (str, Path)):
        raise ScenarioError("scenario", f"given {type(source).__name__}; allowed: a TOML file, a bundled scenario name or a dict")
    text_source = str(source)
    path = Path(text_source)
    if "\0" in text_source or not path.exists():
        named = bundled().get(text_source.removesuffix(".toml"))
        if named is None:
            names = ", ".join(bundled())
            raise ScenarioError("scenario", f"given {text_source!r}; allowed: a TOML file or a bundled scenario ({names})")
        path = named
    data = _parse_toml(path)
    check_plain(data)
    _resolve_relative_paths(data, path.parent)
    return data


def _parse_toml(path: Path) -> dict:
    def refuse(why: str) -> ScenarioError:
        return ScenarioError("scenario", f"given {str(path)!r}; allowed: a readable TOML file of at most {MAX_SCENARIO_BYTES // 1024} KB ({why})")

    try:
        if not path.is_file():
            raise refuse("it is not a regular file")
        with path.open("rb") as f:
            raw = f.read(MAX_SCENARIO_BYTES + 1)
    except OSError as e:
        raise refuse(e.strerror or str(e)) from None
    if len(raw) > MAX_SCENARIO_BYTES:
        raise refuse("it is larger")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise refuse(f"it is not UTF-8 text: byte {e.start} is not") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError("scenario", f"{path} is not valid TOML ({e})") from None
    except RecursionError:
        raise refuse(f"it nests tables or lists more than {MAX_DEPTH} deep") from None


def _resolve_relative_paths(data: dict, base: Path) -> None:
    """Relative file references are relative to the scenario file, not the current folder."""
    for section, key in (("topology", "file"), ("workload", "size_cdf"), ("workload", "matrix")):
        val = data.get(section, {}).get(key) if isinstance(data.get(section), dict) else None
        if isinstance(val, str) and ("/" in val or key == "matrix" or val.endswith((".csv", ".txt", ".edges"))):
            p = Path(val)
            if not p.is_absolute():
                data[section][key] = str((base / p).resolve())
    resolve_scheme_paths(data, base)


def _kind(v: Any) -> str:
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return f"a TOML {type(v).__name__} ({v.isoformat()})"
    return f"a Python {type(v).__name__}"


def join_path(path: str, key: str) -> str:
    """`path.key`, with a key that is not a plain word quoted (`duration.":"`), so that a
    message's field is unambiguous whatever the user named a key."""
    if not re.fullmatch(r"[A-Za-z0-9_-]+", key):
        key = json.dumps(key)
    return f"{path}.{key}" if path else key


def check_plain(value: Any, path: str = "", depth: int = 0) -> None:
    """Refuses what is not plain scenario data, naming the field: NaN and infinities,
    dates and times, and (from Python) sets, bytes, complex numbers and other objects;
    keys that are not strings; nesting deeper than MAX_DEPTH."""
    where = path or "scenario"
    if depth > MAX_DEPTH:
        raise ScenarioError(where, f"given tables or lists nested more than {MAX_DEPTH} deep; allowed: a scenario's few levels")
    if isinstance(value, bool) or isinstance(value, (str, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ScenarioError(where, f"given {value}; allowed: a finite number")
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise ScenarioError(where, f"given a key {k!r} ({type(k).__name__}); allowed: keys that are strings")
            check_plain(v, join_path(path, k), depth + 1)
        return
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            check_plain(v, f"{where}[{i}]", depth + 1)
        return
    raise ScenarioError(where, f"given {_kind(value)}; allowed: a string, number, boolean, list or table")


def parse_value(text: str) -> Any:
    """A `--set` value: a TOML value if it parses as one (8, 0.5, true, [1, 2]), else a string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def set_path(sc: dict, path: str, value: Any, source: str = "--set") -> None:
    """Sets a dotted path (`transport.rto_min`) in a scenario dict; `source` is where the
    path was given, named when it is empty."""
    keys = path.split(".")
    if not all(keys):
        raise ScenarioError(path or source, "given an empty key; allowed: a dotted path such as transport.rto_min")
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
    """Applies `--set` strings ("path=value") or an API dict ({"path": value})."""
    if not overrides:
        return sc
    if isinstance(overrides, dict):
        items = list(overrides.items())
        for k, v in items:
            if not isinstance(k, str):
                raise ScenarioError("overrides", f"given a key {k!r} ({type(k).__name__}); allowed: dotted paths as strings, such as \"transport.rto_min\"")
            check_plain(v, k)
    elif isinstance(overrides, (list, tuple)):
        items = []
        for o in overrides:
            if not isinstance(o, str) or "=" not in o:
                raise ScenarioError("--set", f"given {o!r}; allowed: path=value, such as transport.rto_min=1ms")
            k, v = o.split("=", 1)
            value = parse_value(v.strip())
            check_plain(value, k.strip())
            items.append((k.strip(), value))
    else:
        raise ScenarioError("overrides", f"given {type(overrides).__name__}; allowed: a dict of dotted paths to values, or a list of \"path=value\" strings")
    for k, v in items:
        set_path(sc, k, v, "overrides" if isinstance(overrides, dict) else "--set")
    return sc


def split_sweep(sc: dict) -> tuple[dict, list[tuple[str, list]]]:
    """Removes `[sweep]` (and `seeds`) from a scenario; returns the base and its (path,
    values) axes, the seed axis last."""
    sc = copy.deepcopy(sc)
    sweep = sc.pop("sweep", None)
    if sweep is None:
        sweep = {}
    if not isinstance(sweep, dict):
        raise ScenarioError("sweep", f"given {sweep!r}; allowed: a table of dotted paths to lists of values")
    axes: list[tuple[str, list]] = []
    points = 1
    for path, values in sweep.items():
        _check_sweep_key(path, values)
        if path == "cases":
            _check_cases(values)
            axes.append((CASE_AXIS, values))
        else:
            axes.append((path, values))
        points *= len(values)
        if points > MAX_SWEEP_POINTS:
            raise ScenarioError("sweep", f"given more than {MAX_SWEEP_POINTS:,} points; allowed: at most {MAX_SWEEP_POINTS:,} (each point is a whole simulation)")
    # `seeds` is wscsim's, not the core's: it leaves the scenario here, the one place every
    # scenario passes before a point is made, and becomes the last axis (see seeds.py).
    from .seeds import seed_axis

    seeds = seed_axis(sc, sc.pop("seeds", 1), [p for p, _ in axes])
    if seeds is not None:
        axes.append(seeds)
        if points * len(seeds[1]) > MAX_SWEEP_POINTS:
            raise ScenarioError("seeds", f"given {len(seeds[1])} for {points:,} points; allowed: at most {MAX_SWEEP_POINTS:,} runs in all")
    return sc, axes


def _check_sweep_key(path: str, values: Any) -> None:
    """A sweep's key is a whole dotted path, quoted: TOML reads `workload.senders = [1, 2]`
    unquoted as a table `workload` holding `senders`."""
    from .toml_text import value as toml_value

    where = join_path("sweep", path)
    if isinstance(values, dict) and values:
        whole, inner = path, values
        while isinstance(inner, dict) and inner:
            key = next(iter(inner))
            whole, inner = f"{whole}.{key}", inner[key]
        raise ScenarioError(where, f"given {whole} = {toml_value(inner)} unquoted, which TOML reads as a table; "
                                   f"allowed: the path in quotes, \"{whole}\" = {toml_value(inner)}")
    if not all(path.split(".")):
        raise ScenarioError(where, "given an empty key or an empty part of one; allowed: a dotted path such as \"workload.senders\"")
    if not isinstance(values, list) or not values:
        raise ScenarioError(where, f"given {toml_value(values)}; allowed: a non-empty list of values")


class _CaseAxis(str):
    """The axis of `[[sweep.cases]]`; a str named "case" (its column), but not equal-by-
    identity to a user's sweep over a path named "case", which is an ordinary path."""


# `[[sweep.cases]]`: named variants that each set several keys together (a scheme with its
# transport, say); swept as one axis whose column is `case`.
CASE_AXIS = _CaseAxis("case")


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
        params: dict[str, Any] = {}
        for (path, _), v in zip(axes, combo):
            if path is CASE_AXIS:
                _apply_case(sc, v)
                params[path] = v["name"]
            else:
                set_path(sc, path, v)
                params[path] = v
        points.append((sc, params))
    return points


def to_json(sc: dict) -> str:
    """The scenario as the core is given it. Who runs an emulation's programs is the front
    end's to read (privileges.py): checked there; the core carries them as they are."""
    from .privileges import check_entries

    check_entries(sc)
    try:
        return json.dumps(sc)
    except TypeError as e:
        raise ScenarioError("scenario", f"holds a value that is not plain data ({e})") from None


_TIME_UNITS = {"ps": 1e-12, "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def duration_seconds(text) -> float | None:
    """A scenario duration ("50s", "100ms") in seconds; None if it is not one."""
    m = re.fullmatch(r"\s*([0-9.]+)\s*(ps|ns|us|ms|s)\s*", str(text))
    return float(m.group(1)) * _TIME_UNITS[m.group(2)] if m else None


def resolve_scheme_paths(data: dict, base: Path) -> None:
    """Makes the file of every `kind = "python"` scheme relative to the scenario's folder
    (as topology.file and size_cdf are), not to the current one."""
    for path, spec in python_schemes(data):
        if ":" not in spec:
            continue
        mod_name, _, cls_name = spec.rpartition(":")
        if mod_name.endswith(".py") and not Path(mod_name).is_absolute():
            table = _table_at(data, path)
            table["class"] = f"{(base / mod_name).resolve()}:{cls_name}"


def _table_at(data: dict, path: str) -> dict:
    node = data
    for part in path.split("."):
        if part.endswith("]"):
            name, _, index = part[:-1].partition("[")
            node = node[name][int(index)]
        else:
            node = node[part]
    return node


def python_schemes(sc: dict) -> list[tuple[str, str]]:
    """(field path, class string) of every Python class scenario `sc` names: its
    `kind = "python"` schemes and its runtime's services (`[[runtime.services]]`, whose
    paths start with "runtime.services")."""
    sw: dict = sc["switch"] if isinstance(sc.get("switch"), dict) else {}
    places = [("switch.scheme", sw.get("scheme"))]
    overrides = sw.get("overrides")
    for i, o in enumerate(overrides if isinstance(overrides, list) else []):
        if isinstance(o, dict):
            places.append((f"switch.overrides[{i}].scheme", o.get("scheme")))
    found = [(path, s["class"]) for path, s in places if isinstance(s, dict) and s.get("kind") == "python" and isinstance(s.get("class"), str)]
    rt = sc.get("runtime") if isinstance(sc.get("runtime"), dict) else {}
    services = rt.get("services") if isinstance(rt.get("services"), list) else []
    found += [(f"runtime.services[{i}]", s["class"]) for i, s in enumerate(services) if isinstance(s, dict) and isinstance(s.get("class"), str) and s["class"].strip()]
    return found
