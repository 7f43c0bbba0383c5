"""Services of CamCubeOS's runtime written in Python, for prototyping.

A service is a class; the simulator makes one instance for the whole torus,
`Cls(**params)`, and calls it as the built-in services are called:

    class HopCount(wscsim.Service):
        def start(self, ctx):                  # at the start of the run
            ctx.after(1_000_000, tag=0)        # a timer 1 us from now

        def on_timer(self, ctx, tag):
            ctx.send(src=0, dst=13, size=100, seq=tag)   # or key=... for the key's root

        def on_path(self, ctx, host, packet):  # at every server the packet crosses
            packet.fields = [packet.fields[0] + 1, 0]
            return None                        # or "forward"; "drop" takes it off the path

        def deliver(self, ctx, host, packet):  # at its destination (the key's root)
            self.hops.append(packet.fields[0])

        def results(self):                     # optional: goes into the run's summary
            return {"hops": self.hops}

A scenario runs it on a torus with `[[runtime.services]]` (`class = "file.py:HopCount"`,
`params = {...}`) and, when the services make all the traffic, `workload.kind =
"services"`. Services take the ids after the built-in ones, in order. `ctx` is valid during
the call: `ctx.now_ps`, `ctx.servers`, `ctx.max_size` (payload bytes a packet may carry)
and `ctx.service` are read-only; `ctx.send(src, size, dst=None, key=None, seq=0,
fields=(0, 0))`, `ctx.timer(at_ps, tag)` and `ctx.after(delay_ps, tag)` are carried out
when the method returns. Two questions are answered at once, by a server's own view of the
torus: `ctx.servers_for_key(host, key, r=1)` (GetServersForKey: the key's root first, then
the servers that would take its keys over in turn) and `ctx.reachable(host, dst)`. A packet's `seq` and `fields` (two integers) may be changed on the
path; `src`, `dst` (None while addressed to a key), `key` (its routing bits; 0 for a
packet sent to a server), `size`, `hops` and `sent_ps` are read-only. Running a scenario imports the class only with `--allow-python`
(`allow_python=True`), as for Python schemes. Each call crosses into the interpreter.
"""

from __future__ import annotations


class Service:
    """Optional base class for Python services: keeps the constructor's parameters, and
    does nothing at the start, on the path (the packet goes on) or on a timer. A subclass
    writes `deliver` at least."""

    def __init__(self, **params):
        self.params = params

    def start(self, ctx) -> None:
        pass

    def on_path(self, ctx, host: int, packet) -> str | None:
        return None

    def on_timer(self, ctx, tag: int) -> None:
        pass

    def deliver(self, ctx, host: int, packet) -> None:
        raise NotImplementedError("a service's deliver")
