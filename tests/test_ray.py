"""A sweep on a Ray cluster gives the same tables, byte for byte, as on local processes.
The test starts a local Ray instance of its own and stops it whatever happens."""

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

HAVE_RAY = importlib.util.find_spec("ray") is not None
needs_ray = pytest.mark.skipif(not HAVE_RAY and os.environ.get("WSCSIM_REQUIRE_RAY") != "1",
                               reason="Ray is optional (pip install wscsim[ray]); CI installs it and sets WSCSIM_REQUIRE_RAY=1")
WSCSIM = [sys.executable, "-m", "wscsim.cli"]
RAY = str(Path(sys.executable).with_name("ray"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def ray_cluster():
    # A short temporary folder: Ray's socket paths must fit in 107 characters.
    temp = tempfile.mkdtemp(prefix="wr", dir="/tmp")
    port, client_port = free_port(), free_port()
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    start = [RAY, "start", "--head", f"--port={port}", f"--ray-client-server-port={client_port}", "--num-cpus=2",
             "--include-dashboard=false", f"--temp-dir={temp}", "--disable-usage-stats"]
    try:
        p = subprocess.run(start, capture_output=True, text=True, timeout=300, env=env)
        assert p.returncode == 0, p.stdout + p.stderr
        yield f"127.0.0.1:{port}", f"ray://127.0.0.1:{client_port}"
    finally:
        subprocess.run([RAY, "stop", "--force"], capture_output=True, timeout=300, env=env)
        shutil.rmtree(temp, ignore_errors=True)


SWEEP = ["sweep", "diablo_incast", "--set", "sweep={}", "--set", "workload.iterations=3", "--vary", "workload.senders=1,4,8",
         "--vary", "transport.rto_min=1ms,200ms", "--no-plots"]


def tables(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*.parquet"))}


@needs_ray
def test_a_ray_sweep_equals_a_local_one(tmp_path, ray_cluster):
    address, client_address = ray_cluster
    local = subprocess.run(WSCSIM + SWEEP + ["--out", str(tmp_path / "local")], capture_output=True, text=True, timeout=600)
    assert local.returncode == 0, local.stderr
    for name, addr in (("ray", address), ("client", client_address)):
        p = subprocess.run(WSCSIM + SWEEP + ["--out", str(tmp_path / name), "--ray", addr], capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr
        assert tables(tmp_path / name) == tables(tmp_path / "local")
    assert len(tables(tmp_path / "local")) > 6


@needs_ray
def test_an_unreachable_cluster_is_one_line():
    p = subprocess.run(WSCSIM + ["run", "diablo_incast", "--ray", f"127.0.0.1:{free_port()}"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --ray:"), p.stderr


def test_ray_on_a_single_point_is_refused_not_ignored(tmp_path):
    # Ray runs a sweep's points; a point without a sweep would run locally, the address
    # unused. Refused before anything runs, with or without Ray installed.
    p = subprocess.run(WSCSIM + ["run", "diablo_incast", "--set", "sweep={}", "--ray", "127.0.0.1:9", "--no-plots", "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith("error: --ray: given '127.0.0.1:9'") and p.stderr.count("\n") == 1, p.stderr
    assert not (tmp_path / "o").exists()
    import wscsim

    with pytest.raises(wscsim.ScenarioError) as e:
        wscsim.run("diablo_incast", overrides={"sweep": {}}, ray="auto", out=tmp_path / "o")
    assert e.value.path == "ray"
    assert not (tmp_path / "o").exists()
