//! NDP end to end on small networks, driven through the transport's own calls.

use crate::sim::Sim;

/// `senders` hosts (1..) each sending `bytes` to host 0 at time 0 through one 10 Gbit/s
/// switch (`switch`: JSON members of its section); `ndp` is the `[ndp]` section. Returns the run
/// and the flows.
fn incast(senders: u32, bytes: u64, switch: &str, ndp: &str) -> (Sim, Vec<u32>) {
    let mut s = Sim::from_json(&format!(
        r#"{{"duration":"100ms","topology":{{"kind":"single_switch","hosts":{},
        "link":{{"rate":"10Gbps","delay":"500ns"}}}},"switch":{{"port_to_port_latency":"500ns",{switch}}},
        "transport":{{"kind":"ndp"}},"ndp":{ndp},"workload":{{"kind":"none"}}}}"#,
        senders + 1
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let flows = s.with_transports(|t, path| {
        (1..=senders)
            .map(|src| t.ndp.send(path, (src, 0), None, bytes))
            .collect()
    });
    s.run();
    let inv = s.invariants();
    assert!(inv.ok(), "{inv:?}");
    (s, flows)
}

const TRIM: &str = r#""scheme":{"kind":"trim"}"#;

fn trims(s: &Sim) -> u64 {
    s.net.schemes().iter().map(|x| x.trims()).sum()
}

#[test]
fn one_flow_sends_at_line_rate_and_nothing_is_trimmed() {
    let (s, flows) = incast(1, 1_000_000, TRIM, "{}");
    let n = &s.transports.ndp;
    let fct = n.received_ps(flows[0]).expect("done");
    // 1 MB in payloads of 1,436 bytes (1,500-byte packets, 1,538 bytes on the wire:
    // 1,230.4 ns at 10 Gbit/s), and two more hops for the last.
    let packets = 1_000_000u64.div_ceil(1436);
    let serial = packets * 1_230_400;
    assert!(
        fct > serial && fct < serial + 5_000_000,
        "{fct} ps against {serial} ps"
    );
    assert_eq!(
        (trims(&s), n.stats.nacks, n.stats.resent_packets),
        (0, 0, 0)
    );
    assert_eq!(n.stats.data_packets, packets);
}

#[test]
fn an_incast_is_trimmed_not_dropped_and_pulls_share_the_link() {
    // Eight senders' initial windows (30 packets each) meet an 8-packet data queue: most
    // are trimmed, their headers NACKed and sent again when pulled; the receiver's pulls
    // then clock all eight at its line rate, in turn.
    let (s, flows) = incast(8, 2_000_000, TRIM, "{}");
    let n = &s.transports.ndp;
    assert_eq!(s.net.counters().dropped, 0);
    assert!(trims(&s) > 100, "{} trims", trims(&s));
    assert_eq!(n.stats.nacks, trims(&s));
    assert_eq!(
        (n.stats.resent_packets, n.stats.timeouts),
        (n.stats.nacks, 0)
    );
    let fcts: Vec<u64> = flows
        .iter()
        .map(|&f| n.received_ps(f).expect("done"))
        .collect();
    let (first, last) = (*fcts.iter().min().unwrap(), *fcts.iter().max().unwrap());
    // 16 MB in 1,436-byte payloads at 10 Gbit/s, 1,538 bytes on the wire each.
    let ideal = (16_000_000f64 / 1436.0).ceil() * 1_230_400.0;
    assert!(
        (last as f64) < ideal * 1.05,
        "last {last} ps, ideal {ideal} ps"
    );
    assert!(
        first as f64 > 0.9 * last as f64,
        "first {first}, last {last}: not shared"
    );
}

/// A switch of 8 KiB ports whose data queues hold three packets: the headers of sixteen
/// initial windows do not fit beside them.
fn small_buffer(return_to_sender: bool) -> String {
    format!(
        r#""scheme":{{"kind":"trim","data_packets":3,"return_to_sender":{return_to_sender}}},"buffer_per_port":"8KiB""#
    )
}

#[test]
fn headers_sent_back_go_again_at_once() {
    // The paper's return-to-sender: the headers that find no room go back, and their
    // senders send them again without waiting for a timeout.
    let (s, flows) = incast(16, 200_000, &small_buffer(true), r#"{"rto":"200us"}"#);
    let n = &s.transports.ndp;
    for &f in &flows {
        assert!(n.received_ps(f).is_some(), "flow {f} finished");
    }
    assert!(n.stats.bounced > 0, "{:?}", n.stats);
    assert_eq!((s.net.counters().dropped, n.stats.timeouts), (0, 0));
    assert_eq!(n.stats.nacks + n.stats.bounced, trims(&s));
}

#[test]
fn lost_headers_are_sent_again_after_the_timeout() {
    // Without return-to-sender those headers are dropped; their senders hear nothing back
    // for them and send them again after the timeout.
    let (s, flows) = incast(16, 200_000, &small_buffer(false), r#"{"rto":"200us"}"#);
    let n = &s.transports.ndp;
    for &f in &flows {
        assert!(n.received_ps(f).is_some(), "flow {f} finished");
    }
    let dropped = s.net.counters().dropped;
    assert!(
        dropped > 0 && n.stats.timeouts > 0,
        "{dropped} drops, {:?}",
        n.stats
    );
    // Each trimmed packet is NACKed or its header dropped, and is sent again either way.
    let t = trims(&s);
    assert!(
        n.stats.nacks + dropped >= t && n.stats.resent_packets >= t,
        "{t} trims"
    );
}

#[test]
fn a_timeout_sends_again_what_a_nack_queued_when_its_pull_was_lost() {
    // A sender whose last packet was NACKed, and the PULL that would have let it send it
    // again lost: the packet waits with no credit. The timeout must send it.
    let mut s = Sim::from_json(
        r#"{"duration":"10ms","topology":{"kind":"single_switch","hosts":2},
        "switch":{"scheme":"trim"},"transport":{"kind":"ndp"},"workload":{"kind":"none"}}"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    s.with_transports(|t, path| {
        let ndp = &mut t.ndp;
        let id = ndp.send(path, (1, 0), None, 1000);
        let f = &mut ndp.flows[id as usize];
        assert_eq!((f.next, f.credit), (1, 29));
        // As if packet 0's header came back NACKed and its PULL never did.
        f.credit = 0;
        assert!(f.again.set(0));
        f.resend.push_back(0);
        f.deadline_ps = 0;
        let sent = ndp.stats.data_packets;
        ndp.on_timeout(path, id);
        assert_eq!(ndp.stats.data_packets, sent + 1, "{:?}", ndp.stats);
        assert!(ndp.flows[id as usize].resend.is_empty());
    });
}
