"""Smaller things a daily user sees (issue 34, item 20): `check --show` as TOML (`--json`
for JSON), `wscsim help [COMMAND]`, and a sweep's report page whose points table stays
within a window."""

import json
import re
import subprocess
import sys

import pytest

from wscsim import cli
from wscsim.scenario import bundled, tomllib

WSCSIM = [sys.executable, "-m", "wscsim.cli"]


def _printed(capsys, *args) -> str:
    assert cli.main(list(args)) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return out


def _without_nulls(v):
    if isinstance(v, dict):
        return {k: _without_nulls(x) for k, x in v.items() if x is not None}
    return [_without_nulls(x) for x in v] if isinstance(v, list) else v


@pytest.mark.parametrize("name", sorted(bundled()))
def test_check_show_prints_toml_that_reads_back_as_the_json(capsys, name, tmp_path):
    shown = _printed(capsys, "check", name, "--show")
    as_json = json.loads(_printed(capsys, "check", name, "--json"))
    assert tomllib.loads(shown) == _without_nulls(as_json)
    # The printed file is a scenario wscsim takes as it is, with the same result: for a
    # sweep, every point resolves as the bundled sweep's does (the base shows only the
    # defaults every point shares: a link's rate that follows a swept technology is left
    # out).
    again = tmp_path / "shown.toml"
    again.write_text(shown)
    if "sweep" not in as_json:
        assert json.loads(_printed(capsys, "check", str(again), "--json")) == as_json
        return
    from wscsim.scenario import expand, load, split_sweep
    from wscsim.schemes import check_points

    def resolved(source):
        return check_points(expand(*split_sweep(load(source))))

    assert resolved(str(again)) == resolved(name)


def test_help_prints_a_commands_help():
    for args, first in ((["help", "run"], "usage: wscsim run "), (["help", "check"], "usage: wscsim check "), (["help"], "usage: wscsim ")):
        p = subprocess.run(WSCSIM + args, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0 and p.stdout.startswith(first) and p.stderr == "", (args, p.stdout[:200], p.stderr)
    assert "--show" in subprocess.run(WSCSIM + ["help", "check"], capture_output=True, text=True, timeout=60).stdout
    p = subprocess.run(WSCSIM + ["help", "nope"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1 and "nope" in p.stderr


def test_a_sweeps_points_table_scrolls_in_its_own_box(tmp_path):
    out = tmp_path / "s"
    p = subprocess.run(WSCSIM + ["sweep", "diablo_incast", "--vary", "workload.senders=1,8", "--set", "workload.iterations=2",
                                 "--set", "duration=2s", "--no-plots", "--out", str(out), "-q"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    page = (out / "report.html").read_text()
    style = re.search(r"\.scroll \{([^}]*)\}", page)
    assert style and "overflow-x: auto" in style.group(1)
    table = re.search(r"<h2>Points</h2><div class=scroll><table>(.*?)</table></div>", page, re.S)
    assert table, "the points table is not in a scrolling box"
    # Long names may break after their underscores: no header is one unbreakable word.
    headers = re.findall(r"<th[^>]*>(.*?)</th>", table.group(1))
    assert "incast_<wbr>goodput_<wbr>mbps" in headers
    assert all("_" not in re.sub(r"_<wbr>", "", h) for h in headers), headers


@pytest.mark.parametrize("name, paper", [("flexplane-fct", "Flexplane Figures 4 and 7"), ("flexplane-priority", "Flexplane Figure 6")])
def test_only_the_bundled_scenario_is_titled_with_the_papers_figure(tmp_path, monkeypatch, name, paper):
    import pandas as pd

    from wscsim import plots

    titles = []
    monkeypatch.setattr(plots.figure, "save", lambda fig, path: titles.append(fig.get_suptitle()) or [])
    flows = pd.DataFrame({"case": ["a", "a", "b", "b"], "load": [0.2, 0.4, 0.2, 0.4], "size_bytes": [5_000, 20_000_000] * 2,
                          "slowdown": [1.5, 2.0, 1.2, 3.0], "fct_us": [10.0, 9_000.0, 12.0, 8_000.0], "dscp": [1, 0, 1, 0]})
    draw = plots.plot_fct_by_load if name == "flexplane-fct" else plots.plot_priority_tradeoff
    for title in (name, "my-experiment"):
        assert draw(flows, tmp_path / "x.png", title)
    assert paper in titles[0] and titles[0].startswith(f"{name}: ")
    assert "Flexplane" not in titles[1] and titles[1].startswith("my-experiment: ")


def test_a_sweeps_energy_plot_shows_energy_per_byte_delivered(tmp_path, monkeypatch):
    # A run's joules grow with its length; what each delivered byte cost is the efficiency.
    import pandas as pd

    from wscsim import plots

    figures = []
    monkeypatch.setattr(plots.figure, "save", lambda fig, path: figures.append(fig) or [])
    energy = pd.DataFrame({"senders": [1, 1, 8, 8], "component": ["cpu", "nic"] * 2, "joules": [2.0, 1.0, 800.0, 200.0]})
    points = pd.DataFrame({"point": [0, 1], "senders": [1, 8], "headline_energy_per_byte_nj": [5_000.0, 1_700_000.0]})
    assert plots.plot_energy(energy, tmp_path / "e.png", "mine", ["senders"], None, points)
    bars, right = figures[0].axes
    (line,) = right.get_lines()
    assert list(line.get_ydata()) == [0.005, 1.7] and "per byte delivered (mJ)" in right.get_ylabel()
    assert plots.plot_energy(energy, tmp_path / "e.png", "mine", ["senders"])  # without points: bars alone
    assert len(figures[1].axes) == 1
