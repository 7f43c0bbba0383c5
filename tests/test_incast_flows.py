"""Every incast connection is a row of the flows table (issue 34, item 17): its
retransmissions, timeouts, drops and round trips are where incast is studied."""

import wscsim

SCENARIO = {
    "name": "incast-flows", "duration": "2s",
    "topology": {"kind": "single_switch", "hosts": 9, "link": {"rate": "1Gbps", "delay": "1us"}},
    "switch": {"buffer": "per_input_port", "buffer_per_port": "4KiB"},
    "transport": {"kind": "tcp", "rto_min": "1ms"},
    "workload": {"kind": "incast", "senders": 8, "block": "256KiB", "iterations": 3},
}


def test_each_server_response_connection_is_a_flow_row_with_its_diagnostics():
    r = wscsim.run(SCENARIO)
    f, h = r.flows, r.headline
    assert len(f) == 8
    assert sorted(f.src) == list(range(1, 9)) and set(f.dst) == {0}
    # Each carries its part of every block, all of it delivered.
    assert f.size_bytes.sum() == 3 * 256 * 1024 and (f.bytes_received == f.size_bytes).all()
    assert f.fct_us.notna().all() and f.slowdown.isna().all()
    # The shallow buffer drops responses: the rows hold the run's losses. Requests are
    # one small segment each, so nearly every retransmission is a response's.
    assert f.retransmits.sum() > 0 and f.retransmits.sum() <= h["tcp_retransmits"]
    assert f.timeouts.sum() <= h["tcp_timeouts"]
    drops = r.drops.groupby("flow_id").size()
    for row in f.itertuples():
        assert row.drops == drops.get(row.flow_id, 0)
        assert row.rtt_samples > 0 and row.rtt_min_us <= row.rtt_mean_us <= row.rtt_max_us
    # Workload flow statistics do not count connections.
    assert "flows" not in h and "mean_fct_us" not in h
