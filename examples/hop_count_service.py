"""A CamCubeOS service written in Python: every server sends one packet to every other,
each server on the way adds one to a counter in the packet, and the destination records
the count. Run it with

    wscsim run hop_count.toml --allow-python

The run's summary has the service's results (`services`), and the invariants show every
packet delivered. Prototyping speed: every call crosses into the interpreter.
"""

import wscsim


class HopCount(wscsim.Service):
    def __init__(self, packet_size=100, gap_ps=1_000_000):
        super().__init__(packet_size=packet_size, gap_ps=gap_ps)
        self.size = packet_size
        self.gap_ps = gap_ps
        self.counts = {}

    def start(self, ctx):
        # One timer per source server, spread so sources do not all send at once.
        for src in range(ctx.servers):
            ctx.after(src * self.gap_ps, tag=src)

    def on_timer(self, ctx, tag):
        src = tag
        for dst in range(ctx.servers):
            if dst != src:
                ctx.send(src=src, dst=dst, size=self.size)

    def on_path(self, ctx, host, packet):
        packet.fields = [packet.fields[0] + 1, packet.fields[1]]
        return None

    def deliver(self, ctx, host, packet):
        self.counts[f"{packet.src}->{host}"] = [packet.fields[0], packet.hops]

    def results(self):
        return {"packets": len(self.counts), "forwarded_by_count": self.counts}
