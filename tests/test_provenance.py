"""summary.json records where a result came from: the command line, wscsim's version and
commit, the machine and the date (issue 34, item 15)."""

import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import wscsim
from wscsim import provenance

REPO = Path(__file__).resolve().parent.parent
SMALL = ["diablo_incast", "--set", "sweep={}", "--set", "workload.senders=2", "--set", "workload.iterations=2", "--no-plots"]


def _head() -> str | None:
    if shutil.which("git") is None:
        return None
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()


def _expected_git() -> dict | None:
    """The checkout's commit when wscsim runs from it (an editable install, whose tree may
    differ from it: `dirty` is then known); installed from this checkout (as scripts/test.sh
    installs it), the commit it was built from, with `dirty` unknown."""
    if Path(wscsim.__file__).resolve().parent != REPO / "python" / "wscsim":
        return {"commit": _head(), "dirty": None} if _head() else None
    return {"commit": _head()} if _head() else None


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)


def _check_record(prov: dict, before: datetime.datetime, after: datetime.datetime) -> None:
    assert prov["wscsim_version"] == wscsim.__version__
    git = _expected_git()
    if git is None:
        assert prov["git"] is None
    elif "dirty" in git:
        assert prov["git"] == git
    else:
        assert prov["git"]["commit"] == git["commit"] and isinstance(prov["git"]["dirty"], bool)
    plat = prov["platform"]
    assert plat["cores"] == os.cpu_count() and plat["python"].endswith(platform.python_version())
    assert plat["os"].startswith(platform.system()) and plat["cpu"]
    # The compiler that built the core, as it names itself.
    assert plat["rustc"].startswith("rustc ")
    when = datetime.datetime.fromisoformat(prov["date_utc"].replace("Z", "+00:00"))
    assert before <= when <= after


def test_a_run_and_a_sweep_from_the_command_line_record_it(tmp_path):
    for command, extra in (("run", []), ("sweep", ["--vary", "workload.senders=1,2"])):
        out = tmp_path / command
        args = [command, *SMALL, *extra, "--out", str(out), "-q"]
        before = _now()
        p = subprocess.run([sys.executable, "-m", "wscsim.cli", *args], capture_output=True, text=True, timeout=300)
        after = _now()
        assert p.returncode == 0, p.stderr
        prov = json.loads((out / "summary.json").read_text())["provenance"]
        assert prov["command_line"] == ["wscsim", *args] and prov["working_directory"] == os.getcwd()
        _check_record(prov, before, after)
        page = (out / "report.html").read_text()
        assert "Provenance" in page and "workload.iterations=2" in page and prov["platform"]["cpu"] in page


def test_a_run_from_python_has_no_command_line(tmp_path):
    before = _now()
    r = wscsim.run("diablo_incast", overrides={"sweep": {}, "workload.senders": 2, "workload.iterations": 2}, plots=False)
    after = _now()
    assert r.summary["provenance"]["command_line"] is None and r.summary["provenance"]["working_directory"] is None
    _check_record(r.summary["provenance"], before, after)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_checkout_that_only_holds_the_package_is_not_wscsims(tmp_path, monkeypatch):
    # A project with its virtual environment inside: its commit is not wscsim's.
    site = tmp_path / "project" / ".venv" / "site-packages" / "wscsim"
    site.mkdir(parents=True)
    project = tmp_path / "project"
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run(["git", "-C", str(project), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"],
                   check=True)
    monkeypatch.setattr(provenance, "PACKAGE", site)
    provenance.source_checkout.cache_clear()
    try:
        assert provenance.source_checkout() is None
    finally:
        provenance.source_checkout.cache_clear()


def test_an_installed_wscsim_records_the_commit_it_was_built_from(monkeypatch):
    # No checkout to ask at run time (an installed wscsim): the commit the build script
    # recorded in the native module.
    from wscsim import _native

    monkeypatch.setattr(provenance, "source_checkout", lambda: None)
    head = _head()
    if head is not None:
        assert _native.GIT_COMMIT == head
    assert provenance.record()["git"] == ({"commit": _native.GIT_COMMIT, "dirty": None} if _native.GIT_COMMIT else None)
