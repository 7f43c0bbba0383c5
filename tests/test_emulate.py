"""`wscsim emulate`: real programs in network namespaces talk through the emulated fabric.

The tests that make namespaces need root, iproute2 and /dev/net/tun (network namespaces
and TAP devices). Where those are missing they skip and say so, unless
WSCSIM_REQUIRE_EMULATION=1 (CI sets it: there they must run). The refusals that come
before anything is made, and check's list of commands, run anywhere. Bounds on time are one-sided where they can be (a frame never
arrives before the emulated fabric lets it) and generous where they cannot (a busy
machine's kernel and Python add milliseconds).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import tomli_w

TOOLS = Path(__file__).with_name("emu_tools.py")
PY = sys.executable
WSCSIM = [PY, "-m", "wscsim.cli"]


def _missing() -> str | None:
    if os.geteuid() != 0:
        return "not root"
    if shutil.which("ip") is None:
        return "no ip command (iproute2)"
    if not Path("/dev/net/tun").exists():
        return "no /dev/net/tun"
    return None


MISSING = _missing()
needs_namespaces = pytest.mark.skipif(
    MISSING is not None and os.environ.get("WSCSIM_REQUIRE_EMULATION") != "1",
    reason=f"emulation needs root, iproute2 and /dev/net/tun ({MISSING}); CI sets WSCSIM_REQUIRE_EMULATION=1",
)


def our_namespaces() -> list[str]:
    if shutil.which("ip") is None:
        return []
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith("wscsim-")]


# These tests make network namespaces and check that none is left behind, so they run in
# a pytest run of their own, one after another (scripts/test.sh), never beside others.
pytestmark = pytest.mark.emulation


@pytest.fixture(autouse=True)
def nothing_left_behind():
    before = set(our_namespaces())
    yield
    left = set(our_namespaces()) - before
    if left:  # remove them so that one failure does not spoil the others, then fail
        subprocess.run(WSCSIM + ["emulate", "--cleanup"], capture_output=True)
    assert not left, f"namespaces left behind: {sorted(left)}"


def scenario(apps, link=None, duration="20s", switch=None, hosts=2):
    sc = {
        "name": "emu",
        "duration": duration,
        "topology": {"kind": "single_switch", "hosts": hosts, "link": link or {"rate": "1Gbps", "delay": "2ms"}},
        "workload": {"kind": "none"},
        "emulation": {"apps": apps},
    }
    if switch:
        sc["switch"] = switch
    return sc


def program_output(res, app: int, host: int) -> dict:
    return json.loads((Path(res.path) / "programs" / f"app{app}-host{host}.out").read_text())


@needs_namespaces
def test_udp_round_trips_take_the_emulated_delay(tmp_path):
    import wscsim

    apps = [
        {"hosts": [1], "command": f"{PY} {TOOLS} udp-echo 7000", "daemon": True},
        {"hosts": [0], "command": f"{PY} {TOOLS} udp-ping {{ip:1}} 7000 20", "start": "0.3s"},
    ]
    res = wscsim.emulate(scenario(apps), out=tmp_path / "r", allow_commands=True)
    e = res.summary["emulation"]
    assert e["programs_ok"], e["programs"]
    rtts = program_output(res, 1, 0)["rtts_s"]
    assert len(rtts) >= 18
    # Each way: two links of 2 ms and 1 Gbit/s (a 106-byte frame: under 1 us each), the
    # switch's 1 us. Never faster than that; within 5 ms of it at the quickest (the
    # kernel's and Python's time on a busy machine, and the emulator's lateness).
    frame_s = (106 + 4 + 20) * 8 / 1e9
    modelled = 2 * (2 * (2e-3 + frame_s) + 1e-6)
    assert min(rtts) >= modelled
    assert min(rtts) < modelled + 5e-3
    assert e["frames_in"] >= 2 * len(rtts) and e["frames_out"] >= 2 * len(rtts)


DROP_CLASSED = """
import wscsim


class DropClassed(wscsim.Scheme):
    # One FIFO; drops every packet with a DSCP class other than 0.
    def classify(self, packet, port):
        return 0

    def enqueue(self, packet, port, queue):
        return "drop" if packet.dscp else "accept"

    def schedule(self, port):
        return 0 if port.queue_packets[0] else None
"""


@needs_namespaces
def test_a_python_scheme_acts_on_real_frames(tmp_path):
    import wscsim

    (tmp_path / "drop_classed.py").write_text(DROP_CLASSED)
    apps = [
        {"hosts": [1], "command": f"{PY} {TOOLS} udp-echo 7000", "daemon": True},
        {"hosts": [0], "command": f"{PY} {TOOLS} udp-ping {{ip:1}} 7000 5", "start": "0.3s"},
        {"hosts": [0], "command": f"{PY} {TOOLS} udp-ping {{ip:1}} 7000 2 8", "start": "0.3s"},
    ]
    sc = scenario(apps, link={"rate": "1Gbps", "delay": "10us"}, switch={"scheme": {"kind": "python", "class": f"{tmp_path / 'drop_classed.py'}:DropClassed"}})
    res = wscsim.emulate(sc, out=tmp_path / "r", allow_python=True, allow_commands=True)
    assert res.summary["emulation"]["programs_ok"], res.summary["emulation"]["programs"]
    # Class 0 goes through; the scheme drops class 8's requests at the switch, so no
    # answers come back to them.
    assert len(program_output(res, 1, 0)["rtts_s"]) == 5
    assert program_output(res, 2, 0)["rtts_s"] == []
    drops = res.drops
    assert len(drops) == 2 and set(drops["node"]) == {0}


@needs_namespaces
def test_a_tcp_transfer_arrives_whole_at_the_link_rate_at_most(tmp_path):
    import wscsim

    size = 2_000_000
    apps = [
        {"hosts": [1], "command": f"{PY} {TOOLS} tcp-sink 7001"},
        {"hosts": [0], "command": f"{PY} {TOOLS} tcp-send {{ip:1}} 7001 {size}", "start": "0.3s"},
    ]
    sc = scenario(apps, link={"rate": "100Mbps", "delay": "1ms"})
    sc["emulation"]["busy_poll"] = True  # the emulator never sleeps: the same frames, sooner
    res = wscsim.emulate(sc, out=tmp_path / "r", allow_commands=True)
    assert res.summary["emulation"]["programs_ok"], res.summary["emulation"]["programs"]
    got, sent = program_output(res, 0, 1), program_output(res, 1, 0)
    assert got == {"bytes": size, "sha256": sent["sha256"]}
    # 2 MB at 100 Mbit/s is 160 ms of payload alone: the transfer cannot be quicker.
    assert sent["seconds"] >= size * 8 / 100e6


@needs_namespaces
def test_a_tiny_buffer_drops_real_frames_and_tcp_recovers(tmp_path):
    import wscsim

    size = 3_000_000
    # Hosts 0 and 2 send to host 1 at once: two links' worth into one, through a switch
    # port of four frames' buffer.
    apps = [
        {"hosts": [1], "command": f"{PY} {TOOLS} tcp-sink 7002"},
        {"hosts": [1], "command": f"{PY} {TOOLS} tcp-sink 7003"},
        {"hosts": [0], "command": f"{PY} {TOOLS} tcp-send {{ip:1}} 7002 {size}", "start": "0.3s"},
        {"hosts": [2], "command": f"{PY} {TOOLS} tcp-send {{ip:1}} 7003 {size}", "start": "0.3s"},
    ]
    sc = scenario(apps, link={"rate": "100Mbps", "delay": "500us"}, switch={"buffer_per_port": "6KB"}, hosts=3)
    res = wscsim.emulate(sc, out=tmp_path / "r", allow_commands=True)
    assert res.summary["emulation"]["programs_ok"], res.summary["emulation"]["programs"]
    for app, sender in ((0, 2), (1, 3)):
        assert program_output(res, app, 1) == {"bytes": size, "sha256": program_output(res, sender, 0 if sender == 2 else 2)["sha256"]}
    drops = res.tables["drops"]
    assert len(drops) > 0
    # The drops are at one port (the switch's towards host 1), and TCP sent again what
    # was lost: more frames than the data needs.
    assert drops[["node", "port"]].drop_duplicates().shape[0] == 1
    assert res.summary["emulation"]["frames_in"] > 2 * size / 1448


@needs_namespaces
def test_a_program_that_fails_is_reported_and_nothing_is_left(tmp_path):
    # A command that does not exist, and a server (daemon) that dies before the end: both
    # fail the run; a server still running at the end, stopped, does not.
    # The missing command runs once the dead server's process is gone (reaped by wscsim),
    # so that the run cannot end before the server died.
    pid_file = tmp_path / "server.pid"
    wait_dead = f"while [ ! -s {pid_file} ] || kill -0 $(cat {pid_file}) 2>/dev/null; do sleep 0.02; done"
    apps = [{"hosts": [0], "command": f"{wait_dead}; no-such-program-anywhere --help"},
            {"hosts": [1], "command": f"echo $$ > {pid_file}; exit 3", "daemon": True},
            {"hosts": [1], "command": "sleep 60", "daemon": True}]
    sc_path = tmp_path / "sc.toml"
    sc_path.write_text(tomli_w.dumps(scenario(apps, duration="5s")))
    r = subprocess.run(WSCSIM + ["emulate", str(sc_path), "--allow-commands", "--out", str(tmp_path / "r")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    assert "2 programs failed" in r.stderr
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    missing, died, server = sorted(summary["emulation"]["programs"], key=lambda p: p["app"])
    assert missing["exit_status"] == 127 and not missing["ok"]
    assert died["exit_status"] == 3 and not died["stopped"] and not died["ok"]
    assert server["stopped"] and server["ok"]


@needs_namespaces
def test_a_host_out_of_range_is_refused_before_anything_is_made(tmp_path):
    sc_path = tmp_path / "sc.toml"
    sc_path.write_text(tomli_w.dumps(scenario([{"hosts": [5], "command": "true"}])))
    r = subprocess.run(WSCSIM + ["emulate", str(sc_path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "emulation.apps[0].hosts[0]" in r.stderr and r.stderr.count("\n") == 1


def _start_long_run(tmp_path) -> subprocess.Popen:
    """An emulation with a server that runs until stopped, started as its own process;
    returns once the server runs."""
    sc_path = tmp_path / "sc.toml"
    ready = tmp_path / "echo-ready"
    sc_path.write_text(tomli_w.dumps(scenario([{"hosts": [1], "command": f"{PY} {TOOLS} udp-echo 7003 {ready}", "daemon": True}], duration="600s")))
    # The default SIGINT action, as a program started from a terminal has: a suite run in
    # the background by a non-interactive shell passes SIGINT on ignored.
    p = subprocess.Popen(WSCSIM + ["emulate", str(sc_path), "--allow-commands", "--out", str(tmp_path / "r")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    # The server has started, so the run is in its main loop (any process in a namespace
    # would not do: the set-up runs sysctl inside them).
    while not ready.exists():
        if p.poll() is not None or time.monotonic() > deadline:
            p.kill()
            p.wait()
            pytest.fail(f"the emulation did not start: {p.communicate()}")
        time.sleep(0.05)
    return p


def _communicate_or_show_where(p: subprocess.Popen, timeout_s: float) -> str:
    """The run's stderr once it exits; if it does not within `timeout_s`, its Python stack
    (SIGUSR1: faulthandler) in the failure, and it is killed."""
    try:
        return p.communicate(timeout=timeout_s)[1]
    except subprocess.TimeoutExpired:
        os.kill(p.pid, signal.SIGUSR1)
        time.sleep(2)
        os.killpg(p.pid, signal.SIGKILL)
        pytest.fail(f"the run did not end within {timeout_s} s; where it was:\n{p.communicate()[1]}")


@needs_namespaces
def test_ctrl_c_removes_everything_and_writes_nothing(tmp_path):
    p = _start_long_run(tmp_path)
    try:
        os.killpg(p.pid, signal.SIGINT)
        err = _communicate_or_show_where(p, 60)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == 130, err
    assert not (tmp_path / "r").exists()


@needs_namespaces
def test_cleanup_removes_what_a_killed_run_left(tmp_path):
    p = _start_long_run(tmp_path)
    mine = [n for n in our_namespaces() if n.startswith(f"wscsim-{p.pid}-")]
    pids = [int(x) for n in mine for x in subprocess.run(["ip", "netns", "pids", n], capture_output=True, text=True).stdout.split()]
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    assert set(mine) <= set(our_namespaces())  # a killed run cannot clean up
    r = subprocess.run(WSCSIM + ["emulate", "--cleanup"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert not set(mine) & set(our_namespaces())
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


def ce_frames(pcap: bytes) -> tuple[int, int]:
    """(IPv4 frames, of which marked Congestion Experienced) in a pcap file of Ethernet
    frames, read by hand: 24 bytes of file header, then 16 bytes before each frame."""
    at, frames, ce = 24, 0, 0
    while at + 16 <= len(pcap):
        caplen = int.from_bytes(pcap[at + 8:at + 12], "little")
        frame = pcap[at + 16:at + 16 + caplen]
        at += 16 + caplen
        if frame[12:14] == b"\x08\x00":
            frames += 1
            ce += (frame[15] & 0b11) == 0b11
    return frames, ce


@needs_namespaces
def test_dctcp_marks_reach_real_frames_and_captures_show_them(tmp_path):
    import wscsim

    size = 2_000_000
    apps = [
        {"hosts": [1], "command": f"{PY} {TOOLS} tcp-sink 7004"},
        {"hosts": [1], "command": f"{PY} {TOOLS} tcp-sink 7005"},
        {"hosts": [0], "command": f"{PY} {TOOLS} tcp-send {{ip:1}} 7004 {size}", "start": "0.3s"},
        {"hosts": [5], "command": f"{PY} {TOOLS} tcp-send {{ip:1}} 7005 {size}", "start": "0.3s"},
    ]
    # Six hosts: more than the emulator reads blindly, so it polls for the ones sending.
    sc = scenario(apps, link={"rate": "100Mbps", "delay": "200us"}, switch={"scheme": {"kind": "dctcp", "k_packets": 5}}, hosts=6)
    # Real Linux TCP with ECN (classic ECN: this kernel may have no DCTCP module).
    sc["emulation"]["sysctls"] = [{"settings": {"net.ipv4.tcp_ecn": 1}}]
    sc["emulation"]["capture"] = [1]
    res = wscsim.emulate(sc, out=tmp_path / "r", allow_commands=True)
    e = res.summary["emulation"]
    assert e["programs_ok"], e["programs"]
    assert e["frames_ce_marked"] > 0
    frames, ce = ce_frames((Path(res.path) / "capture" / "host-1.pcap").read_bytes())
    # host 1 receives every marked frame (the data), and sends and receives the rest.
    assert ce == e["frames_ce_marked"]
    assert frames > 2 * size / 1448


@needs_namespaces
def test_a_setting_the_kernel_refuses_names_the_field(tmp_path):
    sc = scenario([{"hosts": [0], "command": "true"}])
    sc["emulation"]["sysctls"] = [{"hosts": [0], "settings": {"net.ipv4.tcp_congestion_control": "no_such_algorithm"}}]
    sc_path = tmp_path / "sc.toml"
    sc_path.write_text(tomli_w.dumps(sc))
    r = subprocess.run(WSCSIM + ["emulate", str(sc_path), "--allow-commands"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("error: emulation.sysctls[0].settings") and "allowed as a namespace's default on this machine" in r.stderr



# --- a scenario's commands run only when allowed, with the least privilege asked for -----

def test_commands_are_refused_without_allow_commands_in_one_line(tmp_path):
    import wscsim

    ran = tmp_path / "ran"
    sc = scenario([{"hosts": [0], "command": f"touch {ran}"}], duration="2s")
    sc_path = tmp_path / "sc.toml"
    sc_path.write_text(tomli_w.dumps(sc))
    r = subprocess.run(WSCSIM + ["emulate", str(sc_path), "--out", str(tmp_path / "r")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("error: emulation.apps[0].command: ") and r.stderr.count("\n") == 1, r.stderr
    assert "--allow-commands" in r.stderr
    with pytest.raises(wscsim.ScenarioError) as e:
        wscsim.emulate(sc, out=tmp_path / "r")
    assert e.value.path == "emulation.apps[0].command" and "allow_commands=True" in e.value.message
    assert not ran.exists() and not (tmp_path / "r").exists()


def test_check_lists_the_commands_without_running_them(tmp_path):
    ran = tmp_path / "ran"
    apps = [{"hosts": [1], "command": f"touch {ran}", "daemon": True},
            {"hosts": [0, 1], "command": "ping -c 1 {ip:1}", "start": "0.5s", "capabilities": ["net_raw"]}]
    sc_path = tmp_path / "sc.toml"
    sc_path.write_text(tomli_w.dumps(scenario(apps)))
    r = subprocess.run(WSCSIM + ["check", str(sc_path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[1:] == [
        "wscsim emulate would run, given --allow-commands:",
        f"  host 1 at 0s as root without capabilities: touch {ran}",
        "  host 0 at 500ms as root with net_raw: ping -c 1 10.0.0.2",
        "  host 1 at 500ms as root with net_raw: ping -c 1 10.0.0.2",
    ]
    assert not ran.exists()
    sc = scenario(apps)
    sc["emulation"]["user"] = "nobody"
    sc_path.write_text(tomli_w.dumps(sc))
    r = subprocess.run(WSCSIM + ["check", str(sc_path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert f"  host 1 at 0s as nobody without capabilities: touch {ran}" in r.stdout.splitlines()


@pytest.mark.parametrize("what,change,field", [
    ("a user this machine does not have", lambda sc: sc["emulation"].update(user="no-such-user-here"), "emulation.user"),
    ("a user that is not a name", lambda sc: sc["emulation"].update(user=0), "emulation.user"),
    ("a capability beyond the network's", lambda sc: sc["emulation"]["apps"][0].update(capabilities=["sys_admin"]),
     "emulation.apps[0].capabilities[0]"),
    ("capabilities that are not a list", lambda sc: sc["emulation"]["apps"][0].update(capabilities="net_raw"),
     "emulation.apps[0].capabilities"),
], ids=lambda x: x if isinstance(x, str) else "")
def test_who_runs_the_programs_is_checked_by_check(tmp_path, what, change, field):
    sc = scenario([{"hosts": [0], "command": "true"}])
    change(sc)
    sc_path = tmp_path / "sc.toml"
    sc_path.write_text(tomli_w.dumps(sc))
    for command in (["check"], ["emulate", "--allow-commands"]):
        r = subprocess.run(WSCSIM + [*command, str(sc_path)], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2, (what, r.stderr)
        assert r.stderr.startswith(f"error: {field}: given ") and r.stderr.count("\n") == 1, (what, r.stderr)


CAPABILITIES = "grep -E '^Cap(Eff|Bnd|Amb)' /proc/self/status; id -u"


def capability_sets(res, app: int, host: int) -> tuple[dict, int]:
    lines = (Path(res.path) / "programs" / f"app{app}-host{host}.out").read_text().split("\n")
    sets = dict(line.split(":\t") for line in lines if line.startswith("Cap"))
    return {k: int(v, 16) for k, v in sets.items()}, int(lines[3])


@needs_namespaces
def test_programs_run_without_capabilities_unless_they_ask_and_as_the_user_named(tmp_path):
    import wscsim

    net_raw, net_admin = 1 << 13, 1 << 12
    apps = [{"hosts": [0], "command": CAPABILITIES},
            {"hosts": [1], "command": CAPABILITIES, "capabilities": ["net_raw", "CAP_NET_ADMIN"]}]
    res = wscsim.emulate(scenario(apps, duration="5s"), out=tmp_path / "root", allow_commands=True)
    assert res.summary["emulation"]["programs_ok"], res.summary["emulation"]["programs"]
    assert capability_sets(res, 0, 0) == ({"CapEff": 0, "CapBnd": 0, "CapAmb": 0}, 0)
    both = net_raw | net_admin
    assert capability_sets(res, 1, 1) == ({"CapEff": both, "CapBnd": both, "CapAmb": both}, 0)
    sc = scenario(apps, duration="5s")
    sc["emulation"]["user"] = "nobody"
    res = wscsim.emulate(sc, out=tmp_path / "nobody", allow_commands=True)
    assert res.summary["emulation"]["programs_ok"], res.summary["emulation"]["programs"]
    nobody = __import__("pwd").getpwnam("nobody").pw_uid
    assert capability_sets(res, 0, 0) == ({"CapEff": 0, "CapBnd": 0, "CapAmb": 0}, nobody)
    assert capability_sets(res, 1, 1) == ({"CapEff": both, "CapBnd": both, "CapAmb": both}, nobody)
    assert {(p["user"], tuple(p["capabilities"])) for p in res.summary["emulation"]["programs"]} == {
        ("nobody", ()), ("nobody", ("net_admin", "net_raw"))}
