"""What the command prints: a sweep's table in a narrow terminal, one number format per
column, and a closed stdout pipe (`| head`) that is not a failed run (issue 34, item 13)."""

import json
import os
import re
import subprocess
import sys

import pandas as pd
import pytest

WSCSIM = [sys.executable, "-m", "wscsim.cli"]
SWEEP = ["sweep", "diablo_incast", "--vary", "workload.senders=1,8", "--set", "workload.iterations=2", "--set", "duration=2s",
         "--no-plots"]


@pytest.fixture(scope="module")
def sweep_folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep") / "s"
    p = subprocess.run(WSCSIM + SWEEP + ["--out", str(out), "-q"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return out


def _printed(folder, columns: int, verbose: bool) -> list[str]:
    code = f"import wscsim; from wscsim.terminal import print_summary; print_summary(wscsim.read({str(folder)!r}), verbose={verbose})"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "COLUMNS": str(columns)},
                       timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines()


def _figures(folder, verbose: bool) -> list[str]:
    from wscsim.terminal import first_keys, points_columns

    swept, heads = points_columns(pd.read_parquet(folder / "points.parquet"))
    return heads if verbose else [h for h in heads if h in first_keys(heads)]


def _one_format(values: list[str]) -> bool:
    """Values printed alike: all or none in scientific notation, all with the same decimals."""
    decimals = {len(v.split(".")[1]) if "." in v and "e" not in v else 0 for v in values}
    return len({"e" in v for v in values}) == 1 and len(decimals) == 1


def test_a_wide_table_in_80_columns_becomes_records(sweep_folder):
    lines = _printed(sweep_folder, 80, verbose=True)
    assert all(len(ln) <= 80 for ln in lines), lines
    figures = _figures(sweep_folder, verbose=True)
    assert len(figures) > 8  # would not fit as columns
    blocks = [i for i, ln in enumerate(lines) if ln.startswith("point ")]
    # The bundled scenario sweeps rto_min over two values too.
    assert [lines[i].split(":")[0] for i in blocks] == ["point 0", "point 1", "point 2", "point 3"]
    assert lines[blocks[0]] == "point 0: senders=1, rto_min=200ms"
    values: dict[str, list[str]] = {}
    for ln in lines[blocks[0]:blocks[0] + 4 * (len(figures) + 1)]:
        if ln.startswith("point "):
            continue
        m = re.fullmatch(r"  (\w+): +(\S+)", ln)  # a whole name, a whole value
        assert m, ln
        values.setdefault(m.group(1), []).append(m.group(2))
    assert sorted(values) == sorted(figures)
    numeric = {k: v for k, v in values.items() if re.fullmatch(r"[-\d.,e+]+", v[0])}
    assert numeric and all(_one_format(v) for v in numeric.values()), numeric


@pytest.mark.parametrize("columns, verbose", [(80, False), (60, False), (250, True)])
def test_a_table_that_fits_breaks_headers_between_words(sweep_folder, columns, verbose):
    lines = _printed(sweep_folder, columns, verbose)
    assert all(len(ln) <= columns for ln in lines), lines
    assert not any(ln.startswith("point 0:") for ln in lines)
    rule = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("━"))
    head = [[c.strip() for c in ln.split("┃")] for ln in lines[1:rule]]
    names = ["senders", "rto_min", *_figures(sweep_folder, verbose)]
    for j, name in enumerate(names):
        pieces = [row[j] for row in head if row[j]]
        assert "".join(pieces) == name and all(p.endswith("_") for p in pieces[:-1]), pieces
    rows = [[c.strip() for c in ln.split("│")] for ln in lines[rule + 1:rule + 5]]
    assert len(rows) == 4 and all(len(r) == len(names) and all(" " not in c for c in r) for r in rows), rows
    for j in range(2, len(names)):
        assert _one_format([r[j] for r in rows]), [r[j] for r in rows]


def test_one_format_per_column_and_lists_as_words():
    from wscsim.terminal import column_format, fmt_value

    fmt = column_format([2229.3, 545083.2, 7345.9])
    assert [fmt(v) for v in (2229.3, 545083.2)] == ["2,229", "545,083"]
    fmt = column_format([2.855, 424.8, 940.75])
    assert _one_format([fmt(v) for v in (2.855, 424.8, 940.75)])
    fmt = column_format([1e-7, 3.5e-5])
    assert [fmt(v) for v in (1e-7, 3.5e-5)] == ["1.000e-07", "3.500e-05"]
    assert fmt_value(783_400.0) == "783,400" and fmt_value(["ethernet", "pcie"]) == "ethernet, pcie"


def _with_stdout_closed(args: list[str]) -> subprocess.CompletedProcess:
    """Runs wscsim with a stdout pipe whose reader has gone, as `| head` leaves it once it
    has its lines: every write fails."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(WSCSIM + args, stdout=write, stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(write)


@pytest.mark.parametrize("args", [["check", "diablo_incast", "--show"], ["list"]])
def test_a_closed_pipe_after_a_check_or_list_is_not_an_error(args):
    p = _with_stdout_closed(args)
    assert p.returncode == 0 and p.stderr == "", p.stderr


@pytest.mark.parametrize("quiet", [[], ["-q"], ["-v"]])
def test_a_closed_pipe_after_a_run_is_not_an_error(tmp_path, quiet):
    out = tmp_path / "r"
    p = _with_stdout_closed(SWEEP + ["--out", str(out), *quiet])
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert json.loads((out / "summary.json").read_text())["complete"] is True
