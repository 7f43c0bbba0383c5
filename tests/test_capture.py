"""Packet capture: pcap files that tshark reads, with the simulated fields in place."""

import os
import shutil
import subprocess

import pytest

import wscsim

TSHARK = shutil.which("tshark")
needs_tshark = pytest.mark.skipif(TSHARK is None and os.environ.get("WSCSIM_REQUIRE_TSHARK") != "1",
                                  reason="tshark is not installed (CI installs it and sets WSCSIM_REQUIRE_TSHARK=1)")

SCENARIO = {
    "name": "capture", "duration": "5ms",
    "topology": {"kind": "single_switch", "hosts": 3},
    "transport": {"ecn": True},
    "switch": {"scheme": {"kind": "dctcp", "k_packets": 5}},
    "workload": {"kind": "incast", "senders": 2, "iterations": 2, "block": "64KB"},
    "metrics": {"capture": {"hosts": [0], "ports": ["switch:1"]}},
}


def tshark_fields(path, *fields):
    p = subprocess.run([TSHARK or "tshark", "-r", str(path), "-T", "fields", *sum((["-e", f] for f in fields), [])],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return [line.split("\t") for line in p.stdout.splitlines()]


@needs_tshark
def test_tshark_reads_every_captured_packet_with_its_fields(tmp_path):
    res = wscsim.run(SCENARIO, out=tmp_path / "r")
    caps = {c["name"]: c for c in res.summary["captures"]}
    assert set(caps) == {"host-0", "switch-port1"}
    rows = tshark_fields(tmp_path / "r" / "capture" / "host-0.pcap", "frame.time_epoch", "ip.src", "ip.dst", "tcp.srcport",
                         "tcp.dstport", "tcp.seq_raw", "tcp.len", "ip.dsfield.ecn", "frame.len")
    assert len(rows) == caps["host-0"]["packets"] == caps["host-0"]["packets_seen"]
    times = [float(r[0]) for r in rows]
    assert times == sorted(times)
    # Host 0 is the incast client (10.0.0.1): it sends requests and receives both blocks.
    assert all("10.0.0.1" in (r[1], r[2]) for r in rows)
    data = [r for r in rows if r[2] == "10.0.0.1" and int(r[6]) > 0]
    received = sum(int(r[6]) for r in data)
    assert received == sum(res.incast["block_bytes"])  # every byte of both iterations
    # Sequence numbers of one connection advance by the payload of the segment before.
    by_conn = {}
    for r in data:
        by_conn.setdefault((r[1], r[3]), []).append((int(r[5]), int(r[6])))
    for segs in by_conn.values():
        length = dict(segs)
        starts = sorted(length)
        assert starts[0] == 0
        assert all(b == a + length[a] for a, b in zip(starts, starts[1:])), starts
    # Data from ECN-capable senders is ECT(0) or CE; the frame length is the frame without FCS.
    assert {r[7] for r in data} <= {"2", "3"}
    # (with the 12 bytes of the timestamps option the model carries but does not charge)
    assert {int(r[8]) for r in data} <= {int(r[6]) + 54 + 12 for r in data}
    # The switch port towards host 1 carries only what goes to host 1.
    rows = tshark_fields(tmp_path / "r" / "capture" / "switch-port1.pcap", "ip.dst")
    assert rows and {r[0] for r in rows} == {"10.0.0.2"}


def test_capture_is_capped_and_validated(tmp_path):
    sc = dict(SCENARIO, metrics={"capture": {"hosts": [0], "max_packets": 10}})
    res = wscsim.run(sc)
    (cap,) = res.summary["captures"]
    assert cap["packets"] == 10 and cap["packets_seen"] > 10
    assert res.captures["host-0"][:4] == bytes.fromhex("4d3cb2a1")
    for capture, field in (({"hosts": [7]}, "metrics.capture.hosts[0]"), ({"ports": ["nope:1"]}, "metrics.capture.ports[0]"),
                           ({"ports": ["switch:9"]}, "metrics.capture.ports[0]"), ({"hosts": [1], "ports": ["switch:1"]}, "metrics.capture.ports[0]"),
                           ({"max_packets": 0}, "metrics.capture.max_packets")):
        with pytest.raises(wscsim.ScenarioError) as e:
            wscsim.run(dict(SCENARIO, metrics={"capture": capture}))
        assert e.value.path == field, (capture, str(e.value))


LOSSY = {
    "name": "capture-losses", "duration": "1s",
    "topology": {"kind": "single_switch", "hosts": 7, "link": {"rate": "1Gbps", "delay": "1us"}},
    "switch": {"buffer": "per_input_port", "buffer_per_port": "8KiB"},
    "transport": {"kind": "tcp", "rto_min": "1ms", "sack": True},
    "workload": {"kind": "incast", "senders": 6, "block": "256KiB", "iterations": 3},
    "metrics": {"capture": {"hosts": list(range(7)), "epoch": "2026-11-27T12:00:00Z"}},
}


@needs_tshark
def test_tshark_finds_the_runs_retransmissions_in_a_capture_of_every_segment(tmp_path):
    # Every host's NIC is tapped, so every segment is captured as it was sent; tshark's
    # TCP analysis, counting at each host what that host sent, finds exactly the run's
    # retransmissions (it needs ACK on every segment, the acknowledgement numbers and SACK
    # blocks as TCP carries them). Without a captured handshake tshark takes a segment
    # sent again within 3 ms of the highest one for "out-of-order" (its default when it
    # knows no round trip); at the sender's own NIC that too is a retransmission, as a
    # sender never sends below its highest sequence number otherwise.
    res = wscsim.run(LOSSY, out=tmp_path / "r")
    h = res.headline
    assert h["tcp_retransmits"] > 0 and h["drops"] > 0
    found = 0
    for host in range(7):
        rows = tshark_fields(tmp_path / "r" / "capture" / f"host-{host}.pcap", "ip.src", "tcp.flags.ack", "tcp.flags.syn",
                             "tcp.analysis.retransmission", "tcp.analysis.fast_retransmission", "tcp.analysis.spurious_retransmission",
                             "tcp.analysis.out_of_order", "frame.time_epoch")
        mine = [r for r in rows if r[0] == f"10.0.0.{host + 1}"]
        assert all(r[1] == "1" or r[2] == "1" for r in rows), "ACK on every segment"
        found += sum(1 for r in mine if any(r[3:7]))
        assert float(rows[0][7]) >= 1795780800  # the epoch: 2026-11-27T12:00:00Z
    assert found == h["tcp_retransmits"]
    sacks = tshark_fields(tmp_path / "r" / "capture" / "host-0.pcap", "tcp.options.sack_le")
    assert any(r[0] for r in sacks), "SACK blocks in the client's ACKs"
