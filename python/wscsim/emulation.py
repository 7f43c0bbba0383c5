"""`wscsim emulate`: a scenario run in real time, its hosts Linux network namespaces in
which real programs run and talk through the emulated fabric (docs/emulation.md).

Every namespace a run makes is named `wscsim-<pid>-h<host>`; each holds only its loopback
and the TAP device `eth0` whose far end is the emulator. Everything is removed when the run
ends, fails or is interrupted; after a crash, `wscsim emulate --cleanup` removes what a
dead run left.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from . import _native, privileges
from .errors import ScenarioError
from .folders import Destination, _pid_alive
from .results import Result, frames_from_native, write
from .scenario import duration_seconds, to_json

PREFIX = "wscsim-"
IFNAME = "eth0"
MAX_HOSTS = 1024
SLICE_PS = 20 * 10**9  # 20 ms of real time between looks at the programs and at Ctrl-C
STOP_GRACE_S = 2.0


class MissingPrivilege(Exception):
    """What the machine or the user lacks for namespaces, in one line."""


def host_ip(h: int) -> str:
    n = h + 1
    return f"10.0.{n >> 8}.{n & 255}"


def host_mac(h: int) -> str:
    return f"02:57:53:00:{h >> 8:02x}:{h & 255:02x}"


def namespace_names(n: int, pid: int | None = None) -> list[str]:
    return [f"{PREFIX}{pid or os.getpid()}-h{h}" for h in range(n)]


def check_privileges() -> None:
    if os.geteuid() != 0:
        raise MissingPrivilege("emulate needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) to make network namespaces; run it as root")
    if shutil.which("ip") is None:
        raise MissingPrivilege("emulate needs the ip command of iproute2 (apt-get install iproute2)")
    if not Path("/dev/net/tun").exists():
        raise MissingPrivilege("emulate needs /dev/net/tun (the tun kernel module) for its hosts' interfaces")
    if shutil.which("setpriv") is None:
        raise MissingPrivilege("emulate needs setpriv of util-linux to start programs with less privilege than its own (apt-get install util-linux)")


def _ip(*args: str, stdin: str | None = None) -> str:
    r = subprocess.run(["ip", *args], input=stdin, capture_output=True, text=True)
    if r.returncode != 0:
        raise OSError(f"ip {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


class Namespaces:
    """The run's namespaces: made on entry, removed (with whatever still runs in them) on
    exit, however the run ends."""

    def __init__(self, n: int):
        self.names = namespace_names(n)
        self.made: list[str] = []

    def __enter__(self) -> Namespaces:
        try:
            for name in self.names:
                _ip("netns", "add", name)
                self.made.append(name)
                _ip("-n", name, "link", "set", "lo", "up")
                # No IPv6: its router and neighbour solicitations would be the only
                # traffic nobody asked for.
                refused = _sysctl(name, "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
                if refused:
                    raise OSError(f"sysctl in {name}: {refused}")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def configure(self, h: int, mtu: int) -> None:
        """Host h's interface: its address, MAC and MTU, up, and every other host's MAC
        given (no ARP: frames go only to hosts the emulation knows)."""
        lines = [f"link set {IFNAME} address {host_mac(h)} mtu {mtu}", f"addr add {host_ip(h)}/16 dev {IFNAME}", f"link set {IFNAME} up"]
        lines += [f"neigh replace {host_ip(j)} lladdr {host_mac(j)} dev {IFNAME} nud permanent" for j in range(len(self.names)) if j != h]
        _ip("-n", self.names[h], "-batch", "-", stdin="\n".join(lines) + "\n")

    def settings(self, path: str, hosts: list[int], settings: dict) -> None:
        """Kernel settings in some hosts' namespaces; one the kernel refuses is the
        scenario's error, naming what this kernel offers where it can."""
        pairs = [f"{name}={value}" for name, value in settings.items()]
        for h in hosts:
            refused = _sysctl(self.names[h], *pairs)
            if refused:
                raise ScenarioError(f"{path}.settings", f"given {', '.join(pairs)}; the kernel refused: {refused}{_offered(settings)}")

    def __exit__(self, *exc) -> None:
        remove(self.made)
        self.made = []


def _offered(settings: dict) -> str:
    """What this kernel offers for the congestion control, if that was the setting."""
    if "net.ipv4.tcp_congestion_control" not in settings:
        return ""
    allowed = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control").read_text().split()
    offered = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    others = [c for c in offered if c not in allowed]
    per_socket = f" (the kernel's others, {', '.join(others)}, only per socket: TCP_CONGESTION, iperf3 -C)" if others else ""
    return f"; allowed as a namespace's default on this machine: {', '.join(allowed)}{per_socket}"


def _sysctl(netns: str, *settings: str) -> str | None:
    """Sets `name=value` settings in a namespace; what sysctl said if it refused."""
    r = subprocess.run(["ip", "netns", "exec", netns, "sysctl", "-qw", *settings], capture_output=True, text=True)
    return (r.stderr.strip() or "refused") if r.returncode != 0 else None


def remove(names: list[str]) -> None:
    """Kills what runs in each namespace, then deletes it."""
    for name in names:
        r = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True)
        for pid in r.stdout.split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


def cleanup() -> list[str]:
    """Removes the namespaces of wscsim runs whose process is gone; returns their names."""
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    stale = []
    for line in out.splitlines():
        name = line.split()[0] if line.split() else ""
        m = re.fullmatch(rf"{PREFIX}(\d+)-h\d+", name)
        if m and not _pid_alive(int(m.group(1))):
            stale.append(name)
    remove(stale)
    return stale


class Programs:
    """The scenario's programs: started in their hosts' namespaces when due, their output
    kept per host, stopped at the end."""

    def __init__(self, apps: list[dict], names: list[str], logs: Path, user: str | None = None):
        self.pending = [(int(a.get("start_ps", 0)), k, a) for k, a in enumerate(apps)]
        self.pending.sort(key=lambda x: (x[0], x[1]))
        self.names = names
        self.logs = logs
        self.user = user  # None: root, without the capabilities an app does not ask for
        self.running: list[dict] = []

    def start_due(self, now_ps: int) -> None:
        while self.pending and self.pending[0][0] <= now_ps:
            _, k, app = self.pending.pop(0)
            for h in app["hosts"]:
                self._start(k, app, int(h), now_ps)

    def _start(self, k: int, app: dict, h: int, now_ps: int) -> None:
        command = substitute(app["command"], h)
        stem = self.logs / f"app{k}-host{h}"
        caps = privileges.capabilities(app.get("capabilities", []), f"emulation.apps[{k}].capabilities")
        lowered = privileges.setpriv_argv(self.user, caps)
        out, err = open(f"{stem}.out", "wb"), open(f"{stem}.err", "wb")
        proc = subprocess.Popen(["ip", "netns", "exec", self.names[h], *lowered, "sh", "-c", command], stdin=subprocess.DEVNULL,
                                stdout=out, stderr=err, start_new_session=True, env=privileges.program_environment(self.user, dict(os.environ)))
        out.close()
        err.close()
        self.running.append({"app": k, "host": h, "command": command, "daemon": bool(app.get("daemon")), "proc": proc,
                             "started_s": now_ps / 1e12, "capabilities": caps})

    def all_done(self) -> bool:
        """Every program that is meant to exit has (there is one at least), and none is
        still to start: with daemons only, the run lasts its whole duration."""
        exiting = [r for r in self.running if not r["daemon"]]
        return not self.pending and bool(exiting) and all(r["proc"].poll() is not None for r in exiting)

    def stop(self) -> list[dict]:
        """Stops what still runs (SIGTERM, then SIGKILL) and reports each program."""
        self.note_exits()
        for r in self.running:
            if "exit" not in r:
                _signal_group(r["proc"], signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        report = []
        for r in self.running:
            p = r["proc"]
            try:
                p.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(p, signal.SIGKILL)
                p.wait()
            stopped = "exit" not in r  # still running at the end: we stopped it
            exit_status = r.setdefault("exit", p.returncode)
            # A daemon is meant to run until stopped (how it takes SIGTERM is its own
            # business); one that ended by itself before that must have succeeded.
            ok = (r["daemon"] and stopped) or (exit_status == 0 and not stopped)
            report.append({"app": r["app"], "host": r["host"], "command": r["command"], "daemon": r["daemon"],
                           "started_s": r["started_s"], "exit_status": exit_status, "stopped": stopped, "ok": ok,
                           "user": self.user or "root", "capabilities": r["capabilities"]})
        return report

    def note_exits(self) -> None:
        for r in self.running:
            if "exit" not in r and r["proc"].poll() is not None:
                r["exit"] = r["proc"].returncode


def _signal_group(p: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(p.pid, sig)
    except ProcessLookupError:
        pass


def substitute(command: str, h: int) -> str:
    """`{host}`, `{ip}` and `{ip:N}` in a command line."""
    command = re.sub(r"\{ip:(\d+)\}", lambda m: host_ip(int(m.group(1))), command)
    return command.replace("{host}", str(h)).replace("{ip}", host_ip(h))


def refuse_commands(resolved: dict, allow_commands: bool) -> None:
    """A scenario's commands run only when the caller says so: a scenario file from
    elsewhere is not a shell script."""
    apps = (resolved.get("emulation") or {}).get("apps", [])
    if apps and not allow_commands:
        raise ScenarioError("emulation.apps[0].command", f"given {apps[0]['command']!r}; allowed: {privileges.ALLOW_COMMANDS_HINT}")


def commands_to_run(resolved: dict) -> list[str]:
    """What `emulate` would start, one line a program and host, for `wscsim check`."""
    emulation = resolved.get("emulation") or {}
    user = emulation.get("user")
    return [f"host {h} at {a.get('start', '0s')} {privileges.who(user, a.get('capabilities', []))}: {substitute(a['command'], h)}"
            for a in emulation.get("apps", []) for h in a["hosts"]]


def run(sc: dict, out: Destination | None, allow_python: bool = False, allow_commands: bool = False) -> Result:
    """Runs scenario `sc` in real time over namespaces; returns its Result. Raises
    MissingPrivilege, ScenarioError, or KeyboardInterrupt (everything removed)."""
    from .schemes import check, classes_for, native_simulation

    resolved = check(sc, allow_python)  # all a check refuses, before anything is asked of the machine
    refuse_commands(resolved, allow_commands)
    check_privileges()
    probe = native_simulation(sc, allow_python)  # says how many hosts
    classes = classes_for(sc, allow_python)
    text = to_json(sc)
    n, mtus = probe.hosts, probe.host_mtus
    del probe
    if n > MAX_HOSTS:
        raise ScenarioError("topology", f"given {n} hosts; allowed: at most {MAX_HOSTS} for emulate (a network namespace each)")
    apps = (resolved.get("emulation") or {}).get("apps", [])
    for a in apps:
        a["start_ps"] = round(duration_seconds(a.get("start", "0s")) * 1e12)  # resolved: always a duration
    with tempfile.TemporaryDirectory(prefix="wscsim-emulate-") as logs, Namespaces(n) as ns:
        emu = _native.Emulation(text, ns.names, IFNAME, classes)
        for h in range(n):
            ns.configure(h, mtus[h])
        for k, s in enumerate((resolved.get("emulation") or {}).get("sysctls", [])):
            ns.settings(f"emulation.sysctls[{k}]", s["hosts"], s["settings"])
        programs = Programs(apps, ns.names, Path(logs), (resolved.get("emulation") or {}).get("user"))
        try:
            _loop(emu, programs)
        finally:
            report = programs.stop()
        summary = json.loads(emu.summary_json())
        summary["emulation"]["programs"] = report
        summary["emulation"]["programs_ok"] = all(r["ok"] for r in report)
        summary["emulation"]["hosts"] = [{"host": h, "namespace": ns.names[h], "ip": host_ip(h), "mac": host_mac(h)} for h in range(n)]
        tables = frames_from_native(emu.tables())
        captures = {name: bytes(data) for name, data in emu.captures()}

        def fill(_tables, _summary, folder: Path) -> None:
            shutil.copytree(logs, folder / "programs")

        return write(out, summary, tables, fill=fill, captures=captures)


def _loop(emu, programs: Programs) -> None:
    """Real time until the scenario's end, or until every program meant to exit has (the
    daemons then stop)."""
    programs.start_due(0)
    while True:
        done = emu.run_for(SLICE_PS)
        programs.note_exits()
        programs.start_due(emu.now_ps)
        if done or programs.all_done():
            return
