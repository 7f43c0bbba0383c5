"""Every command and code block in the documentation runs as written (issue 12).

Each document (README.md, docs/*.md, examples/README.md) is run from top to bottom in an
empty temporary folder, as a reader would run it in a fresh shell with wscsim's virtual
environment active:

- a fenced block whose first line is `# NAME: ...`, NAME being a file name (`my.toml`,
  `my.edges`, `two_class.py`), is written to NAME for the commands after it;
- each line of a ```sh block is run by bash and must exit with status 0;
- in a ```console block, a `$ ` line is a command and the lines after it are its whole
  output (stdout and stderr together; `...` matches anything). The command must exit with
  status 2 if that output starts with `error:` and 0 otherwise;
- a ```python block is run by the Python running these tests and must exit with status 0;
- a ```toml block that names no file is a fragment and must parse as TOML;
- an inline code span that is a whole command, `wscsim SUBCOMMAND ARGUMENT...`, is run
  and must exit with status 0 (a bare `wscsim run` names the subcommand; it is not run);
- an inline `python3 scripts/...` or `python3 benchmarks/...` is run from the repository.

`wscsim`, `python` and `python3` on the PATH, and `.venv/bin/wscsim` in the folder, are
small scripts that run the Python running these tests, so the documents are tested
against the wscsim that the tests import. examples/README.md starts in a copy of the
examples folder, since it documents the files there.

Two kinds of command are not run as written; both lists are explicit, and
`test_the_lists_of_commands_not_run_as_written_are_current` checks that every entry is
still in the documents.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from procs import reap

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "examples" / "README.md"]

# The README's install and test commands (the user guide repeats them): they build the
# package and run this whole suite, which is what CI does.
NOT_RUN = {
    "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/wscsim run",
    "./scripts/test.sh",
}

# Documented commands that take minutes, or tens of seconds and appear in several documents.
# The test runs each with `check` in place of `run` or `sweep` (same arguments, without the
# options only a run takes), which reads and validates every point of the same scenario
# without simulating it.
LONG = {
    "wscsim run diablo_incast_hosts": "72 points, about 30 s on 2 cores",
    "wscsim run flexplane_fct": "40 points, about 40 to 60 s on 2 cores",
    "wscsim run flexplane_fct --set 'host.stack=\"linux_3_5\"' --set host.cores=40 --set 'host.interrupt_moderation=\"adaptive\"'": "40 points with Linux hosts, about 1 minute 45 s on 2 cores",
    "wscsim run diablo_memcached": "6 points of up to 1,984 hosts, over 2 minutes",
    "wscsim run diablo_memcached_factors": "6 points of 1,984 hosts, about 2 minutes",
    "wscsim run diablo_memcached_reconnect": "4 points of up to 1,984 hosts, about 30 s on 2 cores",
    "wscsim run diablo_memcached_rack": "8 points of a 16-host rack, about 15 s on 2 cores",
    "wscsim run diablo_memcached_120": "2 points of 120 hosts, about 20 s on 2 cores",
    "wscsim run diablo_memcached --set 'sweep={\"topology.racks\"=[16,64]}' --set workload.closed_loop=true --set workload.gap_scale=80": "2 points of up to 1,984 hosts, about a minute",
    "wscsim run diablo_memcached --set 'sweep={\"topology.racks\"=[16,64]}' --set workload.closed_loop=true --set workload.gap_scale=80 --set 'switch.buffer=\"per_voq\"'": "2 points of up to 1,984 hosts, about a minute",
    "wscsim run diablo_memcached --set 'sweep={\"topology.racks\"=[16,64]}' --set workload.closed_loop=true --set workload.gap_scale=80 --set 'switch.overrides=[{tiers=[1,2],buffer_per_port=\"470KB\"}]'": "2 points of up to 1,984 hosts, about a minute",
    "wscsim run diablo_memcached --set 'sweep={\"topology.racks\"=[64],\"workload.gap_scale\"=[60,70,75,80]}' --set workload.closed_loop=true --set 'switch.overrides=[{tiers=[1,2],buffer_per_port=\"470KB\"}]'": "4 points of 1,984 hosts, about 3 minutes",
    "wscsim run camcube_all_to_all": "5 points of up to 4,096 servers (three tori, two switched networks), about 15 s on 2 cores, and named in four places",
    "wscsim run camcube_churn": "5 points of 512 servers for 10 simulated seconds, about 35 s on 2 cores",
    "wscsim run camcube_image_store_failures": "140 simulated seconds of image inserts, about 90 s",
    "wscsim run camcube_churn --set 'sweep={}' --set churn.rate=30 --set failure_detection.keepalive=100ms": "10 simulated seconds of 512 servers, about 10 s",
    "wscsim run diablo_memcached --set 'sweep={}' --set workload.requests_per_client=30000": "14 minutes and 6 GB",
    "wscsim run camcube_image_store": "16 points of image inserts, about 16 s on 2 cores",
    "wscsim run camcube_image_store --set 'host.stack=\"camcube\"'": "the same 16 points with costed hosts, about 16 s",
    "wscsim run camcube_tcp": "27 servers all-to-all over TCP, two points, about 14 s",
    "wscsim run camcube_links": "18 points, about 10 s on 2 cores",
    "wscsim run camcube_image_lookups": "3 points of 23,300 stored images, about 9 s",
    "wscsim run pcie_sort": "18 points of seconds-long jobs, about 25 s on 2 cores",
    "wscsim run": "the default scenario, diablo_incast's 10 points with plots, about 20 s",
    "wscsim run websearch_fat_tree": "about 11 s, and named in two documents",
    ".venv/bin/wscsim run websearch_fat_tree": "the same, in the README",
    ".venv/bin/wscsim sweep diablo_incast --vary workload.senders=1,8,24": "diablo_incast swept over three sender counts, with plots, about 13 s",
    "wscsim run flexplane_priority --set workload.flows=1000": "1,000 flows at three loads, about 25 s",
    "wscsim run flexplane_priority --set workload.flows=1000 --set 'host.stack=\"linux_3_5\"' --set host.cores=40 --set 'host.interrupt_moderation=\"adaptive\"'": "the same with Linux hosts, about 15 s",
    "wscsim run pcie_hadoop": "8 points of minute-long jobs, about 3 minutes on 2 cores",
    "wscsim run pcie_grep": "24 points of seconds-long jobs, about 10 s on 2 cores",
    "wscsim run ramcloud_rpc": "40 points and their plots, about 25 s on 2 cores",
    "wscsim run hpcc_fct --out hpcc-fct": "8 points of RoCE flows at 100 Gbit/s, about 20 s on 2 cores",
    "wscsim run collective_allreduce --out collective": "3 points of 16 MB collectives at 100 Gbit/s, about 25 s on 2 cores",
    "wscsim run collective_allreduce": "the same, named in docs/validation.md",
    "wscsim run swift_latency --out swift-latency": "9 points of RoCE flows at up to 90% load, about 10 s on 2 cores",
    "wscsim run swift_latency": "the same, named in docs/validation.md",
    "wscsim run hpcc_fct --set 'workload.size_cdf=\"hadoop\"' --out hpcc-fct-hadoop": "the same with Hadoop flows, about 20 s",
}

# Documented developer tools that take minutes (a benchmark, whose `--record` rewrites
# benchmarks/RESULTS.md; a fit that runs two sweeps): the test runs each with `--help`
# instead, which loads the script and its options.
BENCHMARKS = {
    "python3 benchmarks/schemes.py --record": "python3 benchmarks/schemes.py --help",
    "python3 scripts/fit_pcie_jobs.py": "python3 scripts/fit_pcie_jobs.py --help",
    "python3 scripts/fit_pcie_jobs.py hadoop": "python3 scripts/fit_pcie_jobs.py --help",
    "python3 benchmarks/run.py --only torus512 --only torus4096 --only churn512 --only k12 --only k24": "python3 benchmarks/run.py --help",
    "python3 benchmarks/peers/htsim_rdma.py --htsim /tmp/htsim/sim/datacenter --k 4 --k 8": "python3 benchmarks/peers/htsim_rdma.py --help",
}

# Options that only a run or a sweep takes, with whether each takes a value.
RUN_ONLY = {"--out": True, "--force": False, "--workers": True, "--no-plots": False, "-q": False,
            "--quiet": False, "-v": False, "--verbose": False, "--vary": True}

TIMEOUT_S = 900  # far above any documented command; only stops a hung one
INLINE_COMMAND = re.compile(r"^(?:\.venv/bin/)?wscsim (?:run|sweep|check|list)\s+\S")
REPO_SCRIPT = re.compile(r"^python3 (?:scripts|benchmarks)/\S+\.py\b")
NAMED_FILE = re.compile(r"^# ([\w.-]+\.\w+): ")


@dataclass
class Snippet:
    kind: str  # file, sh, console, python, toml, inline
    text: str
    line: int
    name: str = ""


def snippets(doc: Path) -> list[Snippet]:
    """The document's fenced blocks and inline commands, in the order they appear."""
    text = doc.read_text()
    out = []
    fence = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
    pos = 0
    for m in fence.finditer(text):
        out += inline_commands(text, pos, m.start())
        lang, body = m.group(1), m.group(2)
        line = text.count("\n", 0, m.start()) + 2
        named = NAMED_FILE.match(body)
        if named:
            out.append(Snippet("file", body, line, named.group(1)))
        elif lang in ("sh", "console", "python", "toml"):
            out.append(Snippet(lang, body, line))
        pos = m.end()
    out += inline_commands(text, pos, len(text))
    return out


def inline_commands(text: str, start: int, end: int) -> list[Snippet]:
    found = []
    for m in re.finditer(r"`([^`\n]+(?:\n[^`\n]+)?)`", text[start:end]):
        cmd = " ".join(m.group(1).split())
        if INLINE_COMMAND.match(cmd) or REPO_SCRIPT.match(cmd):
            found.append(Snippet("inline", cmd, text.count("\n", 0, start + m.start()) + 1))
    return found


def as_check(command: str) -> str:
    """`wscsim run ...` or `wscsim sweep ...` as `wscsim check ...`, without run-only options."""
    words = shlex.split(command)
    assert words[0].endswith("wscsim") and words[1] in ("run", "sweep"), command
    kept, i = [words[0], "check"], 2
    while i < len(words):
        w = words[i]
        if w in RUN_ONLY:
            i += 2 if RUN_ONLY[w] else 1
            continue
        kept.append(w)
        i += 1
    return shlex.join(kept)


def bare(command: str) -> str:
    """A command without its trailing `# comment`, as the lists above name it."""
    return re.sub(r"\s+#.*$", "", command).strip()


def commands(block: str) -> list[str]:
    """The commands of a ```sh block: its lines, joining those continued with a backslash,
    without blank lines and comment lines."""
    out, pending = [], ""
    for raw in block.splitlines():
        line = pending + raw
        if line.endswith("\\"):
            pending = line[:-1]
            continue
        pending = ""
        if line.strip() and not line.lstrip().startswith("#"):
            out.append(line.strip())
    return out


def normalised(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def runtime_distributions() -> set[str]:
    """The distributions a virtual environment made by the README's install holds: wscsim's
    [project].dependencies for this Python, what they need in turn, and what `python3 -m
    venv` brings (pip, and setuptools before Python 3.12). Not the test or Ray extras."""
    import importlib.metadata as md

    from packaging.requirements import Requirement

    todo = [Requirement(r) for r in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]]
    have = {"wscsim", "pip", "setuptools"}
    while todo:
        req = todo.pop()
        if (req.marker and not req.marker.evaluate({"extra": ""})) or normalised(req.name) in have:
            continue
        have.add(normalised(req.name))
        try:
            todo += [Requirement(r) for r in md.requires(req.name) or []]
        except md.PackageNotFoundError:
            pass
    return have


def modules_outside_the_install() -> set[str]:
    """Top-level modules installed here that the README's install would not give a user
    (pytest, hypothesis, tomli_w and what they need)."""
    import importlib.metadata as md

    allowed = runtime_distributions()
    return {m for m, dists in md.packages_distributions().items()
            if m not in sys.stdlib_module_names and not any(normalised(d) in allowed for d in dists)}


# Loaded by every Python the documents' commands start: a module the README's install
# would not have cannot be imported, as in a user's environment.
HIDE_MODULES = """import sys


class _NotInstalled:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.partition(".")[0] in {hidden!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (the README's install has no such module)", name=name)
        return None


sys.meta_path.insert(0, _NotInstalled)
"""


def shell_environment(folder: Path) -> dict:
    """PATH with `wscsim`, `python` and `python3` that run this Python, as an activated
    virtual environment has them, in `folder/.venv/bin` (so `.venv/bin/wscsim` works too).
    Modules that only the tests' extras install are hidden from them."""
    bin_dir = folder / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    site = folder / ".venv" / "hide"
    site.mkdir()
    (site / "sitecustomize.py").write_text(HIDE_MODULES.format(hidden=sorted(modules_outside_the_install())))
    scripts = {"wscsim": f'exec {shlex.quote(sys.executable)} -m wscsim.cli "$@"\n',
               "python": f'exec {shlex.quote(sys.executable)} "$@"\n'}
    scripts["python3"] = scripts["python"]
    for name, body in scripts.items():
        p = bin_dir / name
        p.write_text("#!/bin/sh\n" + body)
        p.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH")) if p)
    return env


def run(argv: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess:
    """Runs a command in a session of its own; whatever happens, kills what is left of that
    session (sweep workers included) and reaps the command."""
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=TIMEOUT_S)
    finally:
        reap(proc)
    return subprocess.CompletedProcess(argv, proc.returncode, out, None)


def where(doc: Path, s: Snippet) -> str:
    return f"{doc.relative_to(ROOT)}:{s.line}"


def can_emulate() -> bool:
    """Whether `wscsim emulate` can make namespaces here (root, ip, /dev/net/tun), or must
    (CI sets WSCSIM_REQUIRE_EMULATION=1)."""
    if os.environ.get("WSCSIM_REQUIRE_EMULATION") == "1":
        return True
    return os.geteuid() == 0 and shutil.which("ip") is not None and Path("/dev/net/tun").exists()


def shell(command: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    """Runs a documented shell command (as its stand-in if it is listed above) with bash.
    `wscsim emulate` needs root: without it, its commands are not run."""
    if command.startswith("wscsim emulate") and not can_emulate():
        command = "true"
    if REPO_SCRIPT.match(command):
        command = BENCHMARKS.get(command, command)
        cwd = ROOT
    elif bare(command) in LONG:
        command = as_check(bare(command))
    return run(["bash", "-c", command], cwd, env)


def check_shell(command: str, doc: Path, s: Snippet, cwd: Path, env: dict) -> None:
    p = shell(command, cwd, env)
    assert p.returncode == 0, f"{where(doc, s)}: `{command}` exited with {p.returncode}:\n{p.stdout[-3000:]}"


def expected_output(lines: list[str]) -> re.Pattern:
    parts = [re.escape(line).replace(re.escape("..."), ".*") for line in lines]
    return re.compile("\n".join(parts) + r"\n?", re.S)


def check_console(block: str, doc: Path, s: Snippet, cwd: Path, env: dict) -> None:
    steps: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:].strip(), []))
        else:
            assert steps, f"{where(doc, s)}: a console block must start with a `$ ` command"
            steps[-1][1].append(line)
    for command, output in steps:
        p = shell(command, cwd, env)
        want_status = 2 if output and output[0].startswith("error:") else 0
        assert p.returncode == want_status, (
            f"{where(doc, s)}: `{command}` exited with {p.returncode}, not {want_status}:\n{p.stdout[-3000:]}")
        assert expected_output(output).fullmatch(p.stdout), (
            f"{where(doc, s)}: `{command}` printed\n{p.stdout}\nnot what the document shows:\n" + "\n".join(output))


def run_document(doc: Path, folder: Path) -> None:
    env = shell_environment(folder)
    for s in snippets(doc):
        if s.kind == "file":
            (folder / s.name).write_text(s.text)
        elif s.kind == "toml":
            try:
                tomllib.loads(s.text)
            except tomllib.TOMLDecodeError as e:
                pytest.fail(f"{where(doc, s)}: the TOML block does not parse: {e}")
        elif s.kind == "sh":
            for command in commands(s.text):
                if command not in NOT_RUN:
                    check_shell(command, doc, s, folder, env)
        elif s.kind == "inline":
            check_shell(s.text, doc, s, folder, env)
        elif s.kind == "console":
            check_console(s.text, doc, s, folder, env)
        elif s.kind == "python":
            p = run([sys.executable, "-c", s.text], folder, env)
            assert p.returncode == 0, f"{where(doc, s)}: the Python block failed:\n{p.stdout[-3000:]}"


def _doc_param(doc: Path):
    """A document as a test case; docs/emulation.md's commands make network namespaces, so
    it runs with the emulation tests (tests/test_emulate.py), never beside them."""
    marks = [pytest.mark.emulation] if doc.name == "emulation.md" else []
    return pytest.param(doc, marks=marks, id=str(doc.relative_to(ROOT)))


@pytest.mark.parametrize("doc", [_doc_param(d) for d in DOCS])
def test_every_command_in_the_document_runs_as_written(doc, tmp_path):
    folder = tmp_path / "work"
    folder.mkdir()
    if doc.parent.name == "examples":
        for f in [*doc.parent.glob("*.py"), *doc.parent.glob("*.toml")]:
            shutil.copy(f, folder / f.name)
    run_document(doc, folder)


def test_the_lists_of_commands_not_run_as_written_are_current():
    """Each command the tests treat specially is still in a document (so the lists do not
    outlive the commands), and each runs in its `check` form here, as documented."""
    found = set()
    for doc in DOCS:
        for s in snippets(doc):
            if s.kind == "inline":
                found.add(s.text)
            elif s.kind == "sh":
                found.update(bare(c) for c in commands(s.text))
            elif s.kind == "console":
                found.update(line[2:].strip() for line in s.text.splitlines() if line.startswith("$ "))
    for command in [*NOT_RUN, *LONG, *BENCHMARKS]:
        assert command in found, f"no document has `{command}` any more: remove it from the list"
    assert as_check("wscsim run x --out a --force -q --seed 3 --no-plots") == "wscsim check x --seed 3"


def test_scheme_lines_of_code_table_matches_the_script():
    """docs/schemes.md's lines-of-code table is what `python3 scripts/scheme_loc.py` counts."""
    p = subprocess.run([sys.executable, str(ROOT / "scripts" / "scheme_loc.py")], capture_output=True, text=True,
                       timeout=60, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    counted = {s: (a, b) for s, a, b in re.findall(r"^\| (\w+) \| (\d+) \| (\d+) \|$", p.stdout, re.M)}
    names = {"droptail": "DropTail", "red": "RED", "dctcp": "DCTCP (switch)", "priority": "priority (with push-out)",
             "drr": "DRR", "hull": "HULL", "pfabric": "pFabric"}
    rows = re.findall(r"^\| ([^|]+?) \| (\d+) \| (\d+) \| [^|]+ \|$", (ROOT / "docs" / "schemes.md").read_text(), re.M)
    table = {name: (a, b) for name, a, b in rows}
    assert len(counted) == 7, p.stdout
    for scheme, n in counted.items():
        assert table.get(names[scheme]) == n, f"docs/schemes.md says {table.get(names[scheme])} lines for {scheme}; the script counts {n}"


def github_anchor(heading: str) -> str:
    slug = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return slug.replace(" ", "-")


def test_links_and_repository_paths_exist():
    """Every relative link (and its #anchor) and every repository path the documents name
    exists."""
    repo_path = re.compile(r"(?<![\w/.])((?:python|crates|docs|examples|scripts|benchmarks|scenarios|tests)/[\w./-]*[\w/])")
    for doc in DOCS:
        text = doc.read_text()
        prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", prose):
            if re.match(r"\w+://", target):
                continue
            path, _, anchor = target.partition("#")
            file = (doc.parent / path).resolve() if path else doc
            assert file.exists(), f"{doc.relative_to(ROOT)}: link to {target}, which does not exist"
            if anchor and file.suffix == ".md":
                anchors = {github_anchor(h) for h in re.findall(r"^#+ (.+)$", file.read_text(), re.M)}
                assert anchor in anchors, f"{doc.relative_to(ROOT)}: link to {target}: no such heading"
        for path in repo_path.findall(prose):
            if any(c in path for c in "<>*{}") or "NNN" in path:
                continue
            assert (ROOT / path).exists(), f"{doc.relative_to(ROOT)} names {path}, which does not exist"


def imported_modules(script: Path, seen: set[Path] | None = None) -> dict[str, str]:
    """Top-level module -> where a script imports it (anywhere in it, unless the import is
    guarded by `except ImportError`), following the modules beside it that it imports."""
    seen = set() if seen is None else seen
    seen.add(script)
    tree = ast.parse(script.read_text(), filename=str(script))
    guarded = {id(n) for t in ast.walk(tree) if isinstance(t, ast.Try) and any(
        h.type is None or any(isinstance(x, ast.Name) and x.id in ("ImportError", "ModuleNotFoundError")
                              for x in ast.walk(h.type)) for h in t.handlers) for stmt in t.body for n in ast.walk(stmt)}
    found = {}
    for n in ast.walk(tree):
        if id(n) in guarded:
            continue
        names = [a.name for a in n.names] if isinstance(n, ast.Import) else [n.module] if isinstance(n, ast.ImportFrom) and not n.level else []
        for name in names:
            top = name.split(".")[0]
            beside = script.with_name(f"{top}.py")
            if beside.exists():
                if beside not in seen:
                    found.update(imported_modules(beside, seen))
            else:
                found.setdefault(top, f"{script.relative_to(ROOT)}:{n.lineno}")
    return found


def test_documented_scripts_import_only_what_the_install_gives():
    """A script a document tells a user to run (scripts/, benchmarks/) imports only the
    standard library, wscsim and its runtime dependencies: what the README's install gives,
    not the test extra (a user of docs/emulation.md met tomli_w missing)."""
    named = {m for doc in DOCS for m in re.findall(r"\b((?:scripts|benchmarks)/[\w-]+\.py)\b", doc.read_text())}
    assert "scripts/flexplane_queues.py" in named
    hidden = modules_outside_the_install()
    import importlib.util

    for script in sorted(named):
        for module, at in imported_modules(ROOT / script).items():
            ok = module in sys.stdlib_module_names or module == "wscsim" or (
                module not in hidden and importlib.util.find_spec(module) is not None)
            assert ok, f"{at} imports {module}, which the README's install does not give"


def test_the_documents_commands_run_without_the_test_extra(tmp_path):
    """The documents' commands see what a user's environment has: wscsim and its
    dependencies, not the test extra's modules."""
    env = shell_environment(tmp_path)
    p = run(["python3", "-c", "import wscsim, pandas, matplotlib, rich, pyarrow"], tmp_path, env)
    assert p.returncode == 0, p.stdout
    for module in ("pytest", "hypothesis", "tomli_w"):
        p = run(["python3", "-c", f"import {module}"], tmp_path, env)
        assert p.returncode == 1 and f"No module named '{module}'" in p.stdout, p.stdout
