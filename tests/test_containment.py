"""Every file a run writes stays inside its results folder, whatever the scenario names
(issue 34, item 1): node names of an edge list are plain words, and capture files are
named from a sanitised form of them."""

import subprocess
import sys
from pathlib import Path

import pytest

from wscsim.results import capture_file_stem

WSCSIM = [sys.executable, "-m", "wscsim.cli"]

SCENARIO = """
name = "escape"
duration = "2ms"
[topology]
kind = "edge_list"
file = "{edges}"
[workload]
kind = "incast"
senders = 2
iterations = 1
[metrics.capture]
ports = ["{switch}:0"]
"""


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.mark.parametrize("switch", ["../../ESCAPED", "/tmp/ESCAPED", "a/b", "..", ".hidden"])
def test_a_switch_named_like_a_path_is_refused_naming_the_line(tmp_path, switch):
    work = tmp_path / "work"
    work.mkdir()
    edges = work / "net.edges"
    edges.write_text(f"host h0\nhost h1\nhost h2\nswitch {switch}\nlink h0 {switch}\nlink h1 {switch}\nlink h2 {switch}\n")
    sc = work / "sc.toml"
    sc.write_text(SCENARIO.format(edges=edges, switch=switch))
    before = _tree(tmp_path)
    for cmd in ("check", "run"):
        args = [cmd, str(sc)] + (["--no-plots"] if cmd == "run" else [])
        p = subprocess.run(WSCSIM + args,
                           capture_output=True, text=True, cwd=work, timeout=120)
        assert p.returncode == 2, (cmd, p.stdout, p.stderr)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
        assert "topology.file" in lines[0] and "line 4" in lines[0], lines[0]
    assert _tree(tmp_path) == before


def test_plain_switch_names_capture_inside_the_folder(tmp_path):
    edges = tmp_path / "net.edges"
    edges.write_text("host h0\nhost h1\nhost h2\nswitch tor-0.a\nlink h0 tor-0.a\nlink h1 tor-0.a\nlink h2 tor-0.a\n")
    sc = tmp_path / "sc.toml"
    sc.write_text(SCENARIO.format(edges=edges, switch="tor-0.a"))
    out = tmp_path / "out"
    p = subprocess.run(WSCSIM + ["run", str(sc), "--no-plots", "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert (out / "capture" / "tor-0.a-port0.pcap").is_file()
    assert _tree(tmp_path) - {"net.edges", "sc.toml"} == {"out"} | {f"out/{x}" for x in _tree(out)}


@pytest.mark.parametrize("name", ["../../x-port0", "/abs", "a\x01b", ".", "..", "", "ok-port1"])
def test_capture_file_stems_never_leave_the_capture_folder(name):
    stem = capture_file_stem(name)
    assert stem and "/" not in stem and not stem.startswith(".")
    assert all(c.isascii() and (c.isalnum() or c in "_-.") for c in stem)
