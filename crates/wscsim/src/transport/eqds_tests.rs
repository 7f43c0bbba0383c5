//! EQDS end to end on small networks, driven through the transport's own calls.

use crate::sim::Sim;

/// `senders` hosts (1..) each sending `bytes` to host 0 at time 0 through one 10 Gbit/s
/// switch (`switch`: JSON members of its section); `eqds` is the `[eqds]` section.
fn incast(senders: u32, bytes: u64, switch: &str, eqds: &str) -> (Sim, Vec<u32>) {
    let mut s = Sim::from_json(&format!(
        r#"{{"duration":"100ms","topology":{{"kind":"single_switch","hosts":{},
        "link":{{"rate":"10Gbps","delay":"500ns"}}}},"switch":{{"port_to_port_latency":"500ns",{switch}}},
        "transport":{{"kind":"eqds"}},"eqds":{eqds},"workload":{{"kind":"none"}}}}"#,
        senders + 1
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let flows = s.with_transports(|t, path| {
        (1..=senders)
            .map(|src| t.eqds.send(path, (src, 0), None, bytes))
            .collect()
    });
    s.run();
    let inv = s.invariants();
    assert!(inv.ok(), "{inv:?}");
    (s, flows)
}

const TRIM: &str = r#""scheme":{"kind":"trim"}"#;

#[test]
fn one_flow_runs_at_line_rate_speculating_only_its_first_round_trip() {
    let (s, flows) = incast(1, 1_000_000, TRIM, "{}");
    let e = &s.transports.eqds;
    let fct = e.received_ps(flows[0]).expect("done");
    // 1 MB in payloads of 1,436 bytes (1,538 bytes on the wire: 1,230.4 ns at 10 Gbit/s).
    let packets = 1_000_000u64.div_ceil(1436);
    let serial = packets * 1_230_400;
    assert!(
        fct > serial && fct < serial * 102 / 100,
        "{fct} ps against {serial} ps"
    );
    // A round trip's bytes speculatively, the rest pulled.
    let rtt_packets = e.speculative_bytes.div_ceil(1500);
    assert!(
        e.stats.speculative_packets <= rtt_packets + 2,
        "{:?}",
        e.stats
    );
    assert_eq!(e.stats.data_packets, packets);
    assert_eq!(
        (e.stats.nacks, e.stats.timeouts, e.stats.resent_packets),
        (0, 0, 0)
    );
}

#[test]
fn an_incast_is_trimmed_then_pulled_at_line_rate_in_turn() {
    // Eight senders' speculative round trips meet an 8-packet data queue: some are
    // trimmed, NACKed and pulled first; the pulls then clock all eight at line rate.
    let (s, flows) = incast(8, 2_000_000, TRIM, "{}");
    let e = &s.transports.eqds;
    assert_eq!(s.net.counters().dropped, 0);
    assert!(e.stats.nacks > 0 && e.stats.resent_packets == e.stats.nacks);
    let done: Vec<u64> = flows
        .iter()
        .map(|&f| e.received_ps(f).expect("done"))
        .collect();
    let serial = 8 * 2_000_000u64.div_ceil(1436) * 1_230_400;
    let last = *done.iter().max().unwrap();
    let first = *done.iter().min().unwrap();
    assert!(last < serial * 102 / 100, "{last} ps against {serial}");
    assert!(first > last * 9 / 10, "fair: {done:?}");
    assert_eq!(e.stats.timeouts, 0);
}

#[test]
fn lost_headers_are_asked_for_again_after_a_timeout() {
    // Sixteen senders of 30 KB speculative windows into 8 KiB ports with no return to
    // sender: trimmed headers that find no room are dropped; each sender's timeout queues
    // what it misses, and every flow completes.
    let sw = r#""buffer_per_port":"8KiB","scheme":{"kind":"trim","data_packets":2,"return_to_sender":false}"#;
    let (s, flows) = incast(16, 200_000, sw, r#"{"rto":"100us","speculative":"30KB"}"#);
    let e = &s.transports.eqds;
    assert!(s.net.counters().dropped > 0);
    assert!(e.stats.timeouts > 0, "{:?}", e.stats);
    assert!(flows.iter().all(|&f| e.received_ps(f).is_some()));
}

#[test]
fn a_sender_its_receiver_never_heard_of_asks_to_send() {
    // One speculative packet each from sixteen senders into a port with room for one
    // packet and one header: most are lost whole, so their receivers never pull for
    // them; after `rto` their senders, holding no credit, send an RTS, and are pulled.
    let sw = r#""buffer_per_port":"1600B","scheme":{"kind":"trim","data_packets":1,"return_to_sender":false}"#;
    let (s, flows) = incast(16, 20_000, sw, r#"{"rto":"100us","speculative":"1B"}"#);
    let e = &s.transports.eqds;
    assert!(s.net.counters().dropped > 0);
    assert!(e.stats.rts > 0, "{:?}", e.stats);
    assert!(flows.iter().all(|&f| e.received_ps(f).is_some()));
}
