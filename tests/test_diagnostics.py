"""Per-flow diagnostics in the flows table, and opt-in traces of windows and queues."""

import numpy as np
import pytest

import wscsim

# Four senders into one 20 KB port: losses, retransmissions and (with a 1 ms floor)
# timeouts are certain; one flow is traced along with the bottleneck port.
SCENARIO = {
    "name": "diag", "duration": "50ms",
    "topology": {"kind": "single_switch", "hosts": 5},
    "switch": {"buffer_per_port": "20KB"},
    "transport": {"rto_min": "1ms"},
    "workload": {"kind": "many_to_one", "sources": [1, 2, 3, 4], "destination": 0, "size": "1MB"},
    "metrics": {"trace": {"flows": [2], "ports": ["switch:0"]}},
}


def test_flows_table_counts_what_each_flow_suffered():
    r = wscsim.run(SCENARIO)
    f = r.flows
    # Every drop is some flow's: the per-flow counts add up to the drops table.
    assert f["drops"].sum() == len(r.drops) > 0
    assert (f.set_index("flow_id")["drops"] == r.drops.groupby("flow_id").size().reindex(f["flow_id"], fill_value=0)).all()
    assert f["retransmits"].sum() == r.summary["headline"]["tcp_retransmits"]
    assert f["timeouts"].sum() == r.summary["headline"]["tcp_timeouts"]
    assert (f["rtt_samples"] > 0).all()
    assert (f["rtt_min_us"] <= f["rtt_mean_us"]).all() and (f["rtt_mean_us"] <= f["rtt_max_us"]).all()
    # No RTT is shorter than the idle round trip: two hops each way of 500 ns plus a frame.
    assert f["rtt_min_us"].min() > 2.0


def test_traces_follow_the_chosen_flow_and_port_only():
    r = wscsim.run(SCENARIO)
    cw = r.cwnd_trace
    assert set(cw["flow_id"]) == {2}
    assert (np.diff(cw["time_us"]) >= 0).all()
    # A timeout or a loss is visible as a window that falls.
    assert (np.diff(cw["cwnd_bytes"]) < 0).any()
    q = r.queue_trace
    assert set(zip(q["node_name"], q["port"])) == {("switch", 0)}
    # The trace sees the port's largest queue, which the links table also records.
    link = r.links[(r.links["node_name"] == "switch") & (r.links["port"] == 0)]
    assert q["queue_bytes"].max() == link["max_queue_bytes"].iloc[0]


def test_traces_are_capped_and_absent_unless_asked():
    sc = dict(SCENARIO, metrics={"trace": {"flows": [2], "ports": ["switch:0"], "max_records": 50}})
    r = wscsim.run(sc)
    assert len(r.cwnd_trace) == 50 and len(r.queue_trace) == 50
    r = wscsim.run(dict(SCENARIO, metrics={}))
    assert "cwnd_trace" not in r.tables and "queue_trace" not in r.tables
    with pytest.raises(wscsim.ScenarioError) as e:
        wscsim.run(dict(SCENARIO, metrics={"trace": {"ports": ["switch:99"]}}))
    assert e.value.path == "metrics.trace.ports[0]"
