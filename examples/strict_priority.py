"""A strict-priority scheme written in Python: the prototype of the built-in `priority`
scheme without push-out (`push_out = false`), for comparing speed and results
(examples/README.md)."""

import wscsim


class StrictPriority(wscsim.Scheme):
    queues = 2

    def classify(self, packet, port):
        return min(packet.dscp, self.queues - 1)

    def enqueue(self, packet, port, queue):
        return "accept" if port.bytes_queued + packet.size <= port.limit_bytes else "drop"

    def schedule(self, port):
        for q in range(self.queues - 1, -1, -1):
            if port.queue_packets[q]:
                return q
        return None
