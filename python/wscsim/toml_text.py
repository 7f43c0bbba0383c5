"""Scenario dicts written as TOML text, with the standard library alone.

Python reads TOML (tomllib) but does not write it; a scenario is plain data (tables,
lists, strings, finite numbers, booleans), which this writes in TOML 1.0 such that
`tomllib.loads(dumps(d)) == d`: tables as `[section]` headers, lists of tables as
`[[section]]`, anything inside a list inline.
"""

from __future__ import annotations

import json
import math
import re

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def dumps(data: dict) -> str:
    """`data` as a TOML document."""
    lines: list[str] = []
    _table(data, [], lines)
    return "\n".join(lines).lstrip("\n") + "\n"


def _is_table_list(value) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _table(data: dict, path: list[str], lines: list[str], header: bool = False) -> None:
    """A table: its own `key = value` lines, then its tables and lists of tables under
    headers of their own (TOML gives a key to the table of the header above it). With
    `header`, the table's `[path]` header goes before its own lines, and the tables that
    come before its first own key are written before that header (TOML allows a table's
    header after its sub-tables'), so that reading the text back gives the keys in their
    order: a sweep's axes are its points' order, `[[sweep.cases]]` first or last."""
    nested = {k for k, v in data.items() if (isinstance(v, dict) and v) or _is_table_list(v)}
    keys = list(data)
    first_own = next((i for i, k in enumerate(keys) if k not in nested), len(keys))
    leading = keys[:first_own] if header else []
    for k in leading:
        _nested(k, data[k], path, lines)
    if header and first_own < len(keys):
        lines += ["", f"[{'.'.join(path)}]"]
    lines += [f"{key(k)} = {value(data[k])}" for k in keys if k not in nested]
    for k in keys:
        if k in nested and k not in leading:
            _nested(k, data[k], path, lines)


def _nested(k: str, v, path: list[str], lines: list[str]) -> None:
    """A table or a list of tables under its own headers."""
    inner = [*path, key(k)]
    if isinstance(v, dict):
        # A table of tables alone needs no header: its tables' headers make it.
        _table(v, inner, lines, header=True)
    else:
        for table in v:
            lines += ["", f"[[{'.'.join(inner)}]]"]
            _table(table, inner, lines)


def key(k) -> str:
    if not isinstance(k, str):
        raise TypeError(f"a TOML key must be a string, not {type(k).__name__}")
    return k if _BARE_KEY.fullmatch(k) else string(k)


def string(s: str) -> str:
    # JSON's escapes are TOML's, except that TOML also escapes DEL.
    return json.dumps(s, ensure_ascii=False).replace("\x7f", "\\u007f")


def value(v) -> str:
    """One value, inline."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"a scenario holds finite numbers only, not {v}")
        return repr(v)
    if isinstance(v, str):
        return string(v)
    if isinstance(v, list):
        return "[" + ", ".join(value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{key(k)} = {value(x)}" for k, x in v.items()) + "}"
    raise TypeError(f"TOML has no value for {type(v).__name__}")
