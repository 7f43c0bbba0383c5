"""No lost files, no code run by a check, no unbounded reads: issue 12's first group, each
case as it was reported."""

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wscsim import folders

WSCSIM = [sys.executable, "-m", "wscsim.cli"]

SMALL = """
name = {name}
duration = "5ms"
[topology]
kind = "single_switch"
hosts = 3
[workload]
kind = "incast"
senders = 2
iterations = 2
"""


def wscsim(*args, cwd=None, timeout=120, preexec_fn=None):
    return subprocess.run(WSCSIM + [str(a) for a in args], capture_output=True, text=True, cwd=cwd, timeout=timeout, preexec_fn=preexec_fn)


def one_line_error(p, field):
    assert p.returncode == 2, (p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert field in lines[0], (field, lines[0])
    return lines[0]


def tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


# --- 1. a name is a label ---------------------------------------------------------------

@pytest.mark.parametrize("name", ['".."', '""', '"."', '"/tmp"', '"../x"', '"a\\u0000b"', '"../../etc"', '"results"'])
def test_a_hostile_name_only_labels_a_folder_under_results(tmp_path, name):
    work = tmp_path / "work"
    work.mkdir()
    (work / "precious.txt").write_text("keep me")
    (work / "results").mkdir()
    (work / "results" / "mine.txt").write_text("keep me too")
    sc = work / "sc.toml"
    sc.write_text(SMALL.format(name=name))
    before = tree(tmp_path)
    p = wscsim("run", sc, cwd=work)
    assert p.returncode == 0, p.stderr
    made = tree(tmp_path) - before
    # Everything new is one folder directly under work/results, and nothing was removed.
    assert before <= tree(tmp_path)
    tops = {Path(m).parts[:3] for m in made}
    assert len(tops) == 1, made
    top = tops.pop()
    assert top[:2] == ("work", "results") and not top[2].startswith("."), top
    assert (work / "precious.txt").read_text() == "keep me"
    assert (work / "results" / "mine.txt").read_text() == "keep me too"


def test_safe_names():
    assert folders.safe_name("..") == "unnamed"
    assert folders.safe_name("a/../b") == "a-.-b"
    assert folders.safe_name("diablo-incast") == "diablo-incast"
    assert folders.safe_name(".hidden") == "hidden"
    assert folders.safe_name("a\0b") == "a-b"
    assert folders.safe_name(7) == "unnamed"
    assert len(folders.safe_name("x" * 5000)) <= folders.MAX_NAME_CHARS


def test_default_folders_are_numbered_not_replaced(tmp_path):
    sc = tmp_path / "sc.toml"
    sc.write_text(SMALL.format(name='"same"'))
    for _ in range(2):
        assert wscsim("run", sc, "--no-plots", cwd=tmp_path).returncode == 0
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["same", "same-2"]


# --- 2. replacing a folder ---------------------------------------------------------------

def test_out_replaces_only_wscsim_folders_and_only_with_force(tmp_path):
    sc = tmp_path / "sc.toml"
    sc.write_text(SMALL.format(name='"r"'))
    out = tmp_path / "out"
    assert wscsim("run", sc, "--out", out, "--no-plots").returncode == 0
    first = json.loads((out / "summary.json").read_text())["wall_seconds"]
    one_line_error(wscsim("run", sc, "--out", out), "--out")
    assert json.loads((out / "summary.json").read_text())["wall_seconds"] == first
    assert wscsim("run", sc, "--out", out, "--force", "--no-plots").returncode == 0
    assert json.loads((out / "summary.json").read_text())["wall_seconds"] != first
    assert not [p for p in tmp_path.iterdir() if ".old-" in p.name or ".partial-" in p.name]
    # A folder of the user's is never replaced, even with --force; nor is the current folder.
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    for target, cwd in ((mine, tmp_path), (".", mine)):
        one_line_error(wscsim("run", sc, "--out", target, "--force", cwd=cwd), "--out")
    assert (mine / "thesis.tex").read_text() == "years of work"
    assert sorted(p.name for p in mine.iterdir()) == ["thesis.tex"]


def _complete_or_restorable(out: Path) -> str:
    """After a kill: the results folder is whole (old or new), or missing with the old one
    set aside; recovery then leaves it whole. Returns which run's folder it is."""
    folders.recover(out, say=lambda msg: None)
    s = json.loads((out / "summary.json").read_text())
    assert s["complete"] is True
    names = {p.name for p in out.iterdir()}
    assert {"summary.json", "incast.parquet", "flows.parquet", folders.MARKER} <= names, names
    assert not [p for p in out.parent.iterdir() if p.name.startswith(out.name + ".")]
    return s["scenario"]["name"]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM])
def test_a_kill_while_replacing_never_leaves_a_half_folder(tmp_path, sig):
    old = tmp_path / "old.toml"
    old.write_text(SMALL.format(name='"old"'))
    new = tmp_path / "new.toml"
    new.write_text(SMALL.format(name='"new"'))
    out = tmp_path / "out"
    assert wscsim("run", old, "--out", out, "--no-plots").returncode == 0
    # Kill at delays spread over the whole run, the folder swap included; whatever the
    # moment, the folder is the old run or the new one, complete.
    seen = set()
    for delay in (0.2, 0.6, 0.9, 1.1, 1.3, 1.6, 2.0, 3.0):
        proc = subprocess.Popen(WSCSIM + ["run", str(new), "--out", str(out), "--force", "--no-plots"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            time.sleep(delay)
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
            proc.wait()
        assert "Traceback" not in err, err
        seen.add(_complete_or_restorable(out))
    assert seen <= {"old", "new"}


def test_recovery_puts_back_a_folder_set_aside_by_a_killed_run(tmp_path):
    out = tmp_path / "out"
    (tmp_path / "out.old-999999").mkdir()
    (tmp_path / "out.old-999999" / folders.MARKER).write_text("{}")
    (tmp_path / "out.old-999999" / "summary.json").write_text('{"complete": true}')
    (tmp_path / "out.partial-999998").mkdir()
    (tmp_path / "out.partial-999998" / folders.MARKER).write_text("{}")
    (tmp_path / "out.partial-999997").mkdir()  # not wscsim's: left alone
    notes = []
    folders.recover(out, say=notes.append)
    assert (out / "summary.json").exists() and len(notes) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "out.partial-999997"]


# --- 3. a check runs no code --------------------------------------------------------------

EVIL = """
import pathlib
pathlib.Path({flag!r}).write_text("ran")

class Evil:
    queues = 1
    def __init__(self, switch, ports, **params):
        pass
    def classify(self, packet, port):
        return 0
    def enqueue(self, packet, port, queue):
        return "accept"
    def schedule(self, port):
        return 0 if port.queue_packets[0] else None

class EvilService:
    def deliver(self, ctx, host, packet):
        pass
"""

PY_SCENARIO = """
name = "py"
duration = "1ms"
[topology]
kind = "single_switch"
hosts = 3
[switch]
scheme = {{ kind = "python", class = "{cls}" }}
[workload]
kind = "many_to_one"
sources = [1]
destination = 0
"""


def test_check_and_run_do_not_import_a_scheme_unless_allowed(tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    flag = tmp_path / "ran.txt"
    (sub / "evil.py").write_text(EVIL.format(flag=str(flag)))
    sc = sub / "sc.toml"
    sc.write_text(PY_SCENARIO.format(cls="evil.py:Evil"))  # relative: beside the scenario
    # Without --allow-python check refuses the scheme as run does; with it, check passes
    # without importing.
    one_line_error(wscsim("check", sc, cwd=tmp_path), "--allow-python")
    assert wscsim("check", "--allow-python", sc, cwd=tmp_path).returncode == 0
    one_line_error(wscsim("run", sc, "--out", tmp_path / "o", cwd=tmp_path), "--allow-python")
    assert not flag.exists()
    nope = _write(sub / "nope.toml", PY_SCENARIO.format(cls="evil.py:Nope"))
    one_line_error(wscsim("check", nope, cwd=tmp_path), "switch.scheme.class")
    assert not flag.exists()
    p = wscsim("run", sc, "--allow-python", "--out", tmp_path / "o", "--no-plots", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert flag.read_text() == "ran"


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_a_scheme_that_exits_on_import_is_one_line(tmp_path):
    (tmp_path / "quitter.py").write_text("import sys\nsys.exit(3)\n" + EVIL.split("\n", 3)[3])
    sc = _write(tmp_path / "sc.toml", PY_SCENARIO.format(cls="quitter.py:Evil"))
    assert wscsim("check", "--allow-python", sc).returncode == 0  # not imported: its exit never runs
    one_line_error(wscsim("run", "--allow-python", "--out", tmp_path / "o", sc), "switch.scheme.class")
    import wscsim as api

    with pytest.raises(api.ScenarioError):
        api.run(str(sc), allow_python=True)


SERVICE_SCENARIO = """
name = "py-service"
duration = "1ms"
[topology]
kind = "torus3d"
dims = [3, 3, 3]
[workload]
kind = "services"
[[runtime.services]]
class = "{cls}"
"""


@pytest.mark.parametrize("scenario", [
    PY_SCENARIO.format(cls="evil.py:Evil"),
    PY_SCENARIO.format(cls="evil.py:Evil") + '[sweep]\n"duration" = ["1ms", "2ms"]\n',
    SERVICE_SCENARIO.format(cls="evil.py:EvilService"),
], ids=["scheme", "sweep", "service"])
def test_check_never_imports_even_with_allow_python(tmp_path, scenario):
    flag = tmp_path / "ran.txt"
    (tmp_path / "evil.py").write_text(EVIL.format(flag=str(flag)))
    sc = _write(tmp_path / "sc.toml", scenario)
    for extra in ((), ("--show",)):
        p = wscsim("check", "--allow-python", sc, *extra)
        assert p.returncode == 0, p.stderr
        assert not flag.exists(), "check ran the file's top-level code"


SCHEME_HEAD = "import wscsim\nfrom wscsim import Scheme as Base\nimport pathlib\npathlib.Path({flag!r}).write_text('ran')\n\n"
ACCEPT = "    def enqueue(self, packet, port, queue):\n        return 'accept'\n"
SCHEDULE = "    def schedule(self, port):\n        return 0 if port.queue_packets[0] else None\n"


@pytest.mark.parametrize("body,refusal", [
    ("class S(Base):\n" + ACCEPT, "(missing: schedule)"),
    ("class S:\n" + ACCEPT + SCHEDULE, "(missing: classify)"),
    ("class S(wscsim.Scheme):\n    queues = 65\n" + ACCEPT + SCHEDULE, "S.queues given 65; allowed: an integer from 1 to 64"),
    ("class S(Base):\n    schedule = None\n" + ACCEPT, "(missing: schedule)"),
    ("class Half(Base):\n" + ACCEPT + "\nclass S(Half):\n    queues = 0\n" + SCHEDULE, "S.queues given 0"),
], ids=["no schedule", "no classify", "65 queues", "schedule is None", "inherited in the file"])
def test_check_reads_a_class_from_its_source(tmp_path, body, refusal):
    flag = tmp_path / "ran.txt"
    (tmp_path / "s.py").write_text(SCHEME_HEAD.format(flag=str(flag)) + body)
    sc = _write(tmp_path / "sc.toml", PY_SCENARIO.format(cls="s.py:S"))
    line = one_line_error(wscsim("check", "--allow-python", sc), "switch.scheme.class")
    assert refusal in line
    assert not flag.exists()


@pytest.mark.parametrize("body", [
    "class S(Base):\n" + ACCEPT + SCHEDULE,
    "class S(wscsim.Scheme):\n    queues = 2\n" + ACCEPT + SCHEDULE,
    # What the source cannot say is left to the import: a base from elsewhere, a decorator.
    "from collections import UserDict\nclass S(UserDict):\n    pass\n",
    "def more(cls):\n    return cls\n@more\nclass S:\n    pass\n",
], ids=["complete", "two queues", "base from elsewhere", "decorated"])
def test_check_passes_a_class_it_cannot_fault_without_running_it(tmp_path, body):
    flag = tmp_path / "ran.txt"
    (tmp_path / "s.py").write_text(SCHEME_HEAD.format(flag=str(flag)) + body)
    p = wscsim("check", "--allow-python", _write(tmp_path / "sc.toml", PY_SCENARIO.format(cls="s.py:S")))
    assert p.returncode == 0, p.stderr
    assert not flag.exists()


# --- check and run agree ------------------------------------------------------------------

PARTITIONED = '[engine]\nthreads = 2\n'
AGREE = [
    ("threads with a Python scheme", PY_SCENARIO.format(cls="evil.py:Evil") + PARTITIONED, ["--allow-python"], "engine.threads"),
    ("a swept thread count", PY_SCENARIO.format(cls="evil.py:Evil") + '[sweep]\n"engine.threads" = [1, 2]\n', ["--allow-python"],
     "engine.threads"),
    ("a Python scheme not allowed", PY_SCENARIO.format(cls="evil.py:Evil"), [], "--allow-python"),
    ("a Python service not allowed", SERVICE_SCENARIO.format(cls="evil.py:EvilService"), [], "--allow-python"),
    ("a scheme missing a method", PY_SCENARIO.format(cls="evil.py:EvilService"), ["--allow-python"], "missing: classify"),
    ("a class not in the file", PY_SCENARIO.format(cls="evil.py:Nope"), ["--allow-python"], "switch.scheme.class"),
    # Refused while the simulation is built (three hosts a leaf over two spines: uplinks at
    # 1.5 times the host links, which time slots cannot divide); check builds it too.
    ("time slots over uneven links", 'duration = "1ms"\n[engine]\nmode = "timeslots"\n[transport]\nkind = "udp"\n'
     '[topology]\nkind = "leaf_spine"\nleaves = 2\nspines = 2\nhosts_per_leaf = 3\n'
     '[workload]\nkind = "udp"\ndestination = "random"\nrate = "1Gbps"\n', [], "engine.mode"),
]


@pytest.mark.parametrize("what,scenario,flags,field", AGREE, ids=[a[0] for a in AGREE])
def test_check_refuses_what_run_refuses_with_the_same_line(tmp_path, what, scenario, flags, field):
    (tmp_path / "evil.py").write_text(EVIL.format(flag=str(tmp_path / "ran.txt")))
    sc = _write(tmp_path / "sc.toml", scenario)
    checked = one_line_error(wscsim("check", sc, *flags), field)
    ran = one_line_error(wscsim("run", sc, *flags, "--no-plots", "--out", tmp_path / "o"), field)
    assert checked == ran
    assert not (tmp_path / "o").exists()


# --- 4. bounded reads and memory ---------------------------------------------------------

def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


BASE = SMALL.format(name='"b"')


def test_devices_and_huge_topologies_are_refused_within_bounded_memory(tmp_path):
    one_line_error(wscsim("check", "/dev/zero", timeout=60, preexec_fn=_limit_memory), "scenario")
    cases = [
        (BASE.replace('kind = "single_switch"\nhosts = 3', 'kind = "edge_list"\nfile = "/dev/zero"'), "topology.file"),
        (BASE.replace('kind = "incast"\nsenders = 2\niterations = 2', 'kind = "flows"\nsize_cdf = "/dev/zero"'), "workload.size_cdf"),
        (BASE.replace('kind = "single_switch"\nhosts = 3', 'kind = "leaf_spine"\nleaves = 4096\nspines = 4096'), "topology"),
        (BASE + '[sweep]\n"workload.senders" = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n"workload.iterations" = '
         + str(list(range(1, 101))) + '\n"workload.block" = ' + str(list(range(3, 1003))) + "\n", "sweep"),
    ]
    for text, field in cases:
        f = _write(tmp_path / "t.toml", text)
        line = one_line_error(wscsim("check", f, timeout=60, preexec_fn=_limit_memory), field)
        if field == "topology":
            assert "GB" in line
    # The largest fat tree validates without being built, within the same memory.
    f = _write(tmp_path / "k72.toml", BASE.replace('kind = "single_switch"\nhosts = 3', 'kind = "fat_tree"\nk = 72'))
    p = wscsim("check", f, timeout=120, preexec_fn=_limit_memory)
    assert p.returncode == 0, p.stderr


def test_errors_never_show_file_contents(tmp_path):
    secret = _write(tmp_path / "secret.txt", "hunter2:swordfish\n")
    for text, field in (
        (BASE.replace('kind = "single_switch"\nhosts = 3', f'kind = "edge_list"\nfile = "{secret}"'), "topology.file"),
        (BASE.replace('kind = "incast"\nsenders = 2\niterations = 2', f'kind = "flows"\nsize_cdf = "{secret}"'), "workload.size_cdf"),
    ):
        line = one_line_error(wscsim("check", _write(tmp_path / "t.toml", text)), field)
        assert "hunter2" not in line and "swordfish" not in line and "line 1" in line, line


def test_keyboard_interrupt_in_a_sweep_leaves_no_worker_behind(tmp_path):
    # Ctrl-C reaches the whole process group; the parent must stop its workers and exit.
    out = tmp_path / "sweep"
    proc = subprocess.Popen(WSCSIM + ["run", "diablo_incast", "--set", "duration=600s", "--set", "workload.iterations=400", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        time.sleep(3)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert "Traceback" not in err
        # No process of the group is left (workers may take a moment to be reaped).
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.2)
        else:
            pytest.fail("a sweep worker outlived the interrupted sweep")
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    assert not list(tmp_path.iterdir())
