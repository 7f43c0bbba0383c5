"""Services of CamCubeOS's runtime written in Python (`[[runtime.services]]`): what they
see on the path and at the destination, what they send, and their bad input."""

import subprocess
import sys
from pathlib import Path

import pytest

import wscsim
from wscsim.errors import ScenarioError

from conftest import run

ROOT = Path(__file__).resolve().parent.parent


def torus_distance(dims, a, b):
    """Hops between servers a and b of a torus, h = x + X (y + Y z)."""
    def coords(h):
        return h % dims[0], h // dims[0] % dims[1], h // (dims[0] * dims[1])
    return sum(min(abs(p - q), k - abs(p - q)) for p, q, k in zip(coords(a), coords(b), dims))


def scenario(dims, cls: str, params=None, duration="100ms"):
    return {"name": "python-service", "duration": duration,
            "topology": {"kind": "torus3d", "dims": dims},
            "workload": {"kind": "services"},
            "runtime": {"services": [{"class": cls, "params": params or {}}]}}


def refused(name, cls, sc=None, **kw) -> ScenarioError:
    """Registers `cls` as `name` and runs it (in `sc`, else alone on a 3 x 3 x 3 torus, with
    `scenario`'s keywords); the error the run must end with."""
    wscsim.register_service(name, cls)
    with pytest.raises(ScenarioError) as e:
        run(sc or scenario([3, 3, 3], name, **kw))
    return e.value


class Everyone(wscsim.Service):
    """Every server sends one packet to every other (or to keys); each server on the path
    adds one to fields[0]; `drop_at` takes packets off the path at that server."""

    made: list = []

    def __init__(self, drop_at=-1, keys=0):
        super().__init__()
        self.drop_at, self.keys = drop_at, keys
        self.seen = []
        Everyone.made.append(self)

    def start(self, ctx):
        ctx.after(1000, tag=0)

    def on_timer(self, ctx, tag):
        for src in range(ctx.servers):
            if self.keys:
                for i in range(self.keys):
                    ctx.send(src=src, key=(src * 7919 + i * 104729 + 1) * 0x9E3779B97F4A7C15 % 2**64, size=64)
            else:
                for dst in range(ctx.servers):
                    if dst != src:
                        ctx.send(src=src, dst=dst, size=64, seq=dst)

    def on_path(self, ctx, host, packet):
        packet.fields = [packet.fields[0] + 1, 0]
        return "drop" if host == self.drop_at else "forward"

    def deliver(self, ctx, host, packet):
        self.seen.append((packet.src, host, packet.hops, packet.fields[0], packet.seq, packet.key))

    def results(self):
        return {"delivered": len(self.seen)}


@pytest.mark.parametrize("dims", [[3, 3, 3], [4, 4, 2]])
def test_every_server_on_the_path_sees_the_packet_once(dims):
    Everyone.made.clear()
    wscsim.register_service("everyone", Everyone)
    res = run(scenario(dims, "everyone"))
    (svc,) = Everyone.made
    n = dims[0] * dims[1] * dims[2]
    assert len(svc.seen) == n * (n - 1)
    for src, dst, hops, counted, seq, key in svc.seen:
        d = torus_distance(dims, src, dst)
        # Every packet takes a shortest path; each server between the ends counts it once.
        assert (hops, counted, seq, key) == (d, d - 1, dst, 0)
    assert res.summary["services"] == {"6": {"delivered": n * (n - 1)}}


def test_a_service_may_take_packets_off_the_path():
    Everyone.made.clear()
    wscsim.register_service("dropper", Everyone)
    res = run(scenario([3, 3, 3], "dropper", {"drop_at": 13}))
    (svc,) = Everyone.made
    inv = res.summary["invariants"]
    dims = [3, 3, 3]
    arrived = {(s, d) for s, d, *_ in svc.seen}
    lost = {(s, d) for s in range(27) for d in range(27) if s != d} - arrived
    # Only packets that crossed server 13 can have been taken: pairs with 13 on a shortest
    # path between them, not at either end.
    for s, d in lost:
        assert 13 not in (s, d)
        assert torus_distance(dims, s, 13) + torus_distance(dims, 13, d) == torus_distance(dims, s, d)
    assert len(lost) == inv["packets_dropped"] > 0


def test_packets_to_keys_reach_the_keys_roots():
    Everyone.made.clear()
    wscsim.register_service("keys", Everyone)
    res = run(scenario([4, 4, 4], "keys", {"keys": 20}))
    (svc,) = Everyone.made
    h = res.summary["headline"]
    assert len(svc.seen) == 64 * 20
    assert h["key_packets_misdelivered"] == 0 and h["key_packets_delivered"] == 64 * 20
    assert all(key != 0 for *_, key in svc.seen)


class Raises(wscsim.Service):
    def start(self, ctx):
        ctx.after(10, tag=0)

    def on_timer(self, ctx, tag):
        ctx.send(src=0, dst=ctx.servers, size=64)  # no such server

    def deliver(self, ctx, host, packet):
        pass


def test_a_service_that_raises_names_its_field():
    e = refused("raises", Raises)
    assert e.path == "runtime.services[0].class"
    assert "raises.on_timer raised" in e.message and "dst given 27" in e.message


class AsksTheRuntime(wscsim.Service):
    """Asks every server's view for the replica sets of a few keys and whether it reaches
    each other server, at the start and again after the failures below are known."""

    made: list = []

    def __init__(self):
        super().__init__()
        self.answers = {}
        AsksTheRuntime.made.append(self)

    def start(self, ctx):
        self.ask(ctx, "start")
        ctx.after(50_000_000_000, tag=0)  # 50 ms: the failure at 1 ms is known everywhere

    def on_timer(self, ctx, tag):
        self.ask(ctx, "later")

    def ask(self, ctx, when):
        keys = [(i * 0x9E3779B97F4A7C15 + 12345) % 2**64 for i in range(40)]
        self.answers[when] = {
            "sets": {(h, k): ctx.servers_for_key(h, k, r=3) for h in range(ctx.servers) for k in keys},
            "reach": {(h, d): ctx.reachable(h, d) for h in range(ctx.servers) for d in range(ctx.servers)},
        }

    def deliver(self, ctx, host, packet):
        pass


def home(dims, key):
    """The key's home server by the paper's bit fields (x bits 63-60, y 59-56, z 55-52,
    each mod the axis), h = x + X (y + Y z)."""
    x, y, z = (((key >> shift) & 0xF) % k for shift, k in zip((60, 56, 52), dims))
    return x + dims[0] * (y + dims[1] * z)


def test_a_service_asks_each_servers_view_for_replica_sets_and_reachability():
    dims = [3, 3, 3]
    failed = 13
    wscsim.register_service("asks", AsksTheRuntime)
    AsksTheRuntime.made.clear()
    sc = scenario(dims, "asks")
    sc["failures"] = [{"node": f"h{failed}", "at": "1ms"}]
    run(sc)
    (svc,) = AsksTheRuntime.made
    start, later = svc.answers["start"], svc.answers["later"]
    for (h, k), got in start["sets"].items():
        # The root first, then two of its neighbours; every server agrees.
        assert got[0] == home(dims, k) and len(set(got)) == 3
        assert all(torus_distance(dims, got[0], o) == 1 for o in got[1:]), got
        assert got == start["sets"][(0, k)]
    assert all(start["reach"].values())
    for (h, k), got in later["sets"].items():
        if h == failed:
            continue
        # The failed server is in no live server's set; the rest keep their order.
        before = start["sets"][(h, k)]
        assert failed not in got and [s for s in before if s != failed] == got[: len(before) - (failed in before)]
    for (h, d), ok in later["reach"].items():
        if h != failed:
            assert ok == (d != failed), (h, d)


def test_queries_out_of_range_name_their_argument():
    class Bad(wscsim.Service):
        def start(self, ctx):
            ctx.servers_for_key(ctx.servers, 1)

        def deliver(self, ctx, host, packet):
            pass

    e = refused("bad_query", Bad)
    assert "servers_for_key: host given 27; allowed: 0 to 26" in e.message


class RaisesAt(wscsim.Service):
    """Raises in deliver when `fail` is set (two entries of one class: only one fails)."""

    def __init__(self, fail=False):
        super().__init__()
        self.fail = fail

    def start(self, ctx):
        ctx.send(src=0, dst=1, size=64)

    def deliver(self, ctx, host, packet):
        if self.fail:
            raise RuntimeError("deliberately")


def test_an_error_names_the_entry_not_just_the_class():
    sc = scenario([3, 3, 3], "raises_at")
    sc["runtime"]["services"] = [{"class": "raises_at"}, {"class": "raises_at", "params": {"fail": True}}]
    e = refused("raises_at", RaisesAt, sc)
    assert e.path == "runtime.services[1].class", e
    assert "raises_at.deliver raised" in e.message


class KeepsContext(wscsim.Service):
    """Keeps the context of `start` and sends through it later, which must be refused."""

    def start(self, ctx):
        self.kept = ctx
        ctx.after(1000, tag=0)

    def on_timer(self, ctx, tag):
        self.kept.send(src=0, dst=1, size=64)

    def deliver(self, ctx, host, packet):
        pass


def test_a_context_kept_past_its_call_refuses_to_act():
    e = refused("keeps_context", KeepsContext)
    assert e.path == "runtime.services[0].class"
    assert "keeps_context.on_timer raised" in e.message and "has returned" in e.message


class BadResults(wscsim.Service):
    """Its results are not JSON (NaN)."""

    def deliver(self, ctx, host, packet):
        pass

    def results(self):
        return {"mean": float("nan")}


def test_results_that_are_not_json_are_an_error_not_a_silent_null():
    e = refused("bad_results", BadResults, duration="1ms")
    assert e.path == "runtime.services[0].class"
    assert "bad_results.results raised" in e.message and "JSON" in e.message


BAD = [
    ("an empty class", {"class": ""}, "runtime.services[0].class"),
    ("a file that does not exist", {"class": "no_such_file.py:X"}, "runtime.services[0].class"),
    ("a class without deliver", {"class": str(ROOT / "examples" / "strict_priority.py") + ":StrictPriority"}, "runtime.services[0].class"),
    ("an unknown key", {"class": "x.py:Y", "colour": 1}, "runtime.services"),
]


@pytest.mark.parametrize("what,entry,field", BAD, ids=[b[0] for b in BAD])
def test_bad_service_exits_2_naming_the_field(tmp_path, what, entry, field):
    fields = ", ".join(f'{k} = "{v}"' if isinstance(v, str) else f"{k} = {v}" for k, v in entry.items())
    f = tmp_path / "bad.toml"
    f.write_text(f"""
name = "bad-service"
duration = "1ms"
[topology]
kind = "torus3d"
dims = [3, 3, 3]
[workload]
kind = "services"
[[runtime.services]]
{fields.replace(", ", chr(10))}
""")
    p = subprocess.run([sys.executable, "-m", "wscsim.cli", "check", "--allow-python", str(f)], capture_output=True, text=True)
    assert p.returncode == 2, (what, p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and field in lines[0], (what, p.stderr)
    assert "Traceback" not in p.stderr


def test_the_example_runs_only_when_allowed(tmp_path):
    example = ROOT / "examples" / "hop_count.toml"
    cmd = [sys.executable, "-m", "wscsim.cli", "run", str(example), "--out", str(tmp_path / "a")]
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 2 and "--allow-python" in p.stderr and "runtime.services[0].class" in p.stderr, p.stderr
    p = subprocess.run(cmd + ["--allow-python"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    import json
    s = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert s["services"]["6"]["packets"] == 27 * 26


def test_services_need_a_torus():
    with pytest.raises(ScenarioError) as e:
        wscsim.run({"duration": "1ms", "topology": {"kind": "single_switch", "hosts": 2}, "workload": {"kind": "services"}})
    assert e.value.path == "workload.kind"
