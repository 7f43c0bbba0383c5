"""Small real programs for the emulation tests, run inside emulated hosts' namespaces:

    emu_tools.py udp-echo PORT                  answer every datagram (until stopped)
    emu_tools.py udp-ping IP PORT COUNT         COUNT round trips; prints their seconds (JSON)
    emu_tools.py tcp-sink PORT                  take one connection; prints bytes and SHA-256
    emu_tools.py tcp-send IP PORT BYTES         send BYTES (a fixed pattern); prints seconds
"""

import hashlib
import json
import socket
import sys
import time


def pattern(n: int) -> bytes:
    block = bytes(range(256)) * 256
    return (block * (n // len(block) + 1))[:n]


def udp_echo(port: int, ready: str | None = None) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port))
    if ready:  # tells a test that the server (and so the emulation's main loop) runs
        open(ready, "w").close()
    while True:
        data, peer = s.recvfrom(65536)
        s.sendto(data, peer)


def udp_ping(ip: str, port: int, count: int, dscp: int = 0) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, dscp << 2)
    s.settimeout(2.0)
    rtts = []
    for k in range(count):
        t0 = time.perf_counter()
        s.sendto(k.to_bytes(4, "big") * 16, (ip, port))
        try:
            data, _ = s.recvfrom(65536)
        except socket.timeout:
            continue
        rtts.append(time.perf_counter() - t0)
        time.sleep(0.02)
    print(json.dumps({"rtts_s": rtts}))


def tcp_sink(port: int) -> None:
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", port))
    srv.listen(1)
    conn, _ = srv.accept()
    h, n = hashlib.sha256(), 0
    while chunk := conn.recv(1 << 16):
        h.update(chunk)
        n += len(chunk)
    print(json.dumps({"bytes": n, "sha256": h.hexdigest()}))


def tcp_send(ip: str, port: int, nbytes: int) -> None:
    data = pattern(nbytes)
    for _ in range(100):  # the sink may not listen yet
        try:
            s = socket.create_connection((ip, port), timeout=5)
            break
        except OSError:
            time.sleep(0.05)
    t0 = time.perf_counter()
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
    s.recv(1)  # the sink closes once it has everything
    print(json.dumps({"seconds": time.perf_counter() - t0, "sha256": hashlib.sha256(data).hexdigest()}))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "udp-echo":
        udp_echo(int(args[0]), *args[1:2])
    elif cmd == "udp-ping":
        udp_ping(args[0], int(args[1]), int(args[2]), *(int(a) for a in args[3:4]))
    elif cmd == "tcp-sink":
        tcp_sink(int(args[0]))
    elif cmd == "tcp-send":
        tcp_send(args[0], int(args[1]), int(args[2]))
    else:
        sys.exit(f"unknown command {cmd}")
