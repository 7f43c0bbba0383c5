#!/usr/bin/env python3
"""A memcached load generator with Facebook's ETC model (python/wscsim/data/
memcached_etc.json: key and value sizes, 30 GETs to 1 SET), for real memcached servers.

It stores `--keys` keys, waits until `--begin` seconds after its launch, then for
`--seconds` sends requests at Poisson times (`--rate`
a second) over `--connections` TCP connections (a request waits for a free connection;
its latency counts from when it was sent), and writes one JSON object: the requests, the
misses, the errors and the latency percentiles in microseconds. `--dscp` sets the DSCP
class of its packets (IP_TOS), so that a priority scheme can tell them apart.

    python3 scripts/etc_load.py --server 10.0.0.1 --seconds 10 --rate 200 --dscp 1

Used by scripts/flexplane_memcached.py inside an emulated host. Standard library only,
so that it runs under any python3.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import socket
import sys
import time
from pathlib import Path

ETC = Path(__file__).resolve().parent.parent / "python" / "wscsim" / "data" / "memcached_etc.json"
PERCENTILES = (50, 90, 99, 99.9)


class Etc:
    """Draws from the ETC model's distributions by inverting their CDFs."""

    def __init__(self, model: dict, rng: random.Random):
        self.m, self.rng = model, rng

    def key_bytes(self) -> int:
        k = self.m["key_size_bytes"]
        u = self.rng.random() or 1e-12
        x = k["location"] + k["scale"] * ((-math.log(u)) ** (-k["shape"]) - 1) / k["shape"]
        return min(k["max"], max(k["min"], round(x)))

    def value_bytes(self) -> int:
        v = self.m["value_size_bytes"]
        small, tail = v["discrete_small_values"], v["tail"]
        u = self.rng.random()
        for size, p in zip(small["sizes"], small["probabilities"]):
            if u < p:
                return size
            u -= p
        g = (1 - self.rng.random()) ** (-tail["shape"]) - 1
        return min(tail["max"], tail["offset"] + int(tail["scale"] * g / tail["shape"]))

    def is_get(self) -> bool:
        return self.rng.random() < self.m["operation_mix"]["get"]


def key_name(i: int, size: int) -> bytes:
    """Key i padded to its ETC size (memcached keys: at most 250 bytes, no spaces)."""
    stem = f"k{i}:".encode()
    return (stem + b"x" * max(0, size - len(stem)))[:250]


async def connect(server: str, port: int, dscp: int):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, dscp << 2)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (server, port))
    return await asyncio.open_connection(sock=sock)


async def request(conn, key: bytes, value: bytes | None) -> bool:
    """One GET (value None) or SET; True if it found (or stored) the key."""
    reader, writer = conn
    if value is None:
        writer.write(b"get " + key + b"\r\n")
        await writer.drain()
        line = await reader.readline()
        if line.startswith(b"VALUE"):
            await reader.readexactly(int(line.split()[3]) + 2)
            line = await reader.readline()
            return line == b"END\r\n"
        if line != b"END\r\n":
            raise OSError(f"memcached answered {line[:80]!r}")
        return False
    writer.write(b"set %s 0 0 %d\r\n%s\r\n" % (key, len(value), value))
    await writer.drain()
    line = await reader.readline()
    if line != b"STORED\r\n":
        raise OSError(f"memcached answered {line[:80]!r}")
    return True


async def preload(conns: list, keys: list[bytes], etc: Etc) -> None:
    """Stores every key first (GETs then hit, as in a warm cache), over every connection."""
    values = [b"v" * etc.value_bytes() for _ in keys]

    async def share(c, j: int) -> None:
        for i in range(j, len(keys), len(conns)):
            await request(c, keys[i], values[i])

    await asyncio.gather(*(share(c, j) for j, c in enumerate(conns)))


async def load(args, etc: Etc) -> dict:
    launched = time.perf_counter()
    conns = [await connect(args.server, args.port, args.dscp) for _ in range(args.connections)]
    keys = [key_name(i, etc.key_bytes()) for i in range(args.keys)]
    await preload(conns, keys, etc)
    await asyncio.sleep(max(0.0, launched + args.begin - time.perf_counter()))
    free: asyncio.Queue = asyncio.Queue()
    for c in conns:
        free.put_nowait(c)
    latencies_ns: list[int] = []
    counts = {"get": 0, "set": 0, "miss": 0, "waited_for_connection": 0}

    async def one(key: bytes, value: bytes | None) -> None:
        if free.empty():
            counts["waited_for_connection"] += 1
        conn = await free.get()
        t0 = time.perf_counter_ns()
        hit = await request(conn, key, value)
        latencies_ns.append(time.perf_counter_ns() - t0)
        free.put_nowait(conn)
        counts["set" if value is not None else "get"] += 1
        counts["miss"] += not hit

    tasks = []
    start = time.perf_counter()
    due = 0.0
    while due < args.seconds:
        delay = start + due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        key = keys[etc.rng.randrange(len(keys))]
        value = None if etc.is_get() else b"v" * etc.value_bytes()
        tasks.append(asyncio.ensure_future(one(key, value)))
        due += etc.rng.expovariate(args.rate)
    await asyncio.gather(*tasks)
    for _, w in conns:
        w.close()
    raw = {"latencies_us": [round(x / 1e3, 1) for x in latencies_ns]} if args.raw else {}
    return {"requests": len(latencies_ns), **counts, "seconds": args.seconds, "rate": args.rate, "dscp": args.dscp,
            **summary_us(latencies_ns), **raw}


def summary_us(latencies_ns: list[int]) -> dict:
    s = sorted(latencies_ns)
    if not s:
        return {}
    out = {"min_us": s[0] / 1e3, "mean_us": sum(s) / len(s) / 1e3, "max_us": s[-1] / 1e3}
    for p in PERCENTILES:
        out[f"p{p:g}_us"] = s[min(len(s) - 1, math.ceil(p / 100 * len(s)) - 1)] / 1e3
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--server", required=True)
    p.add_argument("--port", type=int, default=11211)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--rate", type=float, default=200.0, help="requests a second (Poisson)")
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--keys", type=int, default=1000)
    p.add_argument("--dscp", type=int, default=0, choices=range(64), metavar="0..63")
    p.add_argument("--begin", type=float, default=0.0, help="seconds after launch the requests begin (after the keys are stored)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--raw", action="store_true", help="every request's latency too, in the order sent")
    args = p.parse_args()
    etc = Etc(json.loads(ETC.read_text()), random.Random(args.seed))
    print(json.dumps(asyncio.run(load(args, etc))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
