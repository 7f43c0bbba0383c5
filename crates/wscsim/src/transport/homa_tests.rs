//! Homa end to end on small networks, driven through the transport's own calls.

use crate::sim::Sim;

const PRIORITY: &str = r#"{"kind":"priority","queues":8}"#;

/// A run of `hosts` hosts on one 10 Gbit/s switch whose ports have `buffer` bytes and
/// scheme `scheme`, with `[homa]` = `homa`, that sends `msgs` (src, dst, bytes, when;
/// in order of time). Returns the run and the messages' ids.
fn run(
    hosts: u32,
    (scheme, buffer): (&str, &str),
    homa: &str,
    msgs: &[(u32, u32, u64, u64)],
) -> (Sim, Vec<u32>) {
    let mut s = Sim::from_json(&format!(
        r#"{{"duration":"50ms","topology":{{"kind":"single_switch","hosts":{hosts},
        "link":{{"rate":"10Gbps","delay":"500ns"}}}},"switch":{{"port_to_port_latency":"250ns",
        "buffer_per_port":"{buffer}","scheme":{scheme}}},
        "transport":{{"kind":"homa"}},"homa":{homa},"workload":{{"kind":"none"}}}}"#
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let mut ids = Vec::new();
    for &(src, dst, bytes, at_ps) in msgs {
        s.run_until(at_ps);
        ids.push(s.with_transports(|t, path| t.homa.send(path, (src, dst), None, bytes)));
    }
    s.run();
    let inv = s.invariants();
    assert!(inv.ok(), "{inv:?}");
    (s, ids)
}

#[test]
fn one_message_goes_at_line_rate_with_a_grant_per_packet_after_rtt_bytes() {
    let (s, ids) = run(2, (PRIORITY, "1MiB"), "{}", &[(1, 0, 1_000_000, 0)]);
    let h = &s.transports.homa;
    let fct = h.received_ps(ids[0]).expect("done");
    // 1 MB in payloads of 1,436 bytes (1,538 bytes on the wire: 1,230.4 ns at 10 Gbit/s).
    let packets = 1_000_000u64.div_ceil(1436);
    let serial = packets * 1_230_400;
    assert!(
        fct > serial && fct < serial * 102 / 100,
        "{fct} ps against {serial} ps"
    );
    let unscheduled = u64::from(h.plan.rtt_packets);
    assert_eq!(h.stats.unscheduled_packets, unscheduled);
    // A grant per packet that arrives while some remain to be granted.
    assert_eq!(h.stats.grants, packets - unscheduled);
    assert_eq!((h.stats.timeouts, h.stats.resent_packets), (0, 0));
    assert_eq!(s.net.counters().dropped, 0);
}

#[test]
fn an_incast_keeps_the_receivers_link_busy_and_finishes_shortest_first() {
    // Eight senders of 200..=900 KB to one receiver, 10 us apart, longest first: the
    // receiver grants to the shortest (overcommitment 7: all but one at once, at ranked
    // levels), so messages end in size order, and the last near the time the link needs
    // for all of them.
    let msgs: Vec<(u32, u32, u64, u64)> = (1..=8)
        .map(|i| {
            (
                i,
                0,
                100_000 * (10 - u64::from(i)),
                10_000_000 * u64::from(i),
            )
        })
        .collect();
    let (s, ids) = run(9, (PRIORITY, "1MiB"), "{}", &msgs);
    let h = &s.transports.homa;
    let done: Vec<u64> = ids
        .iter()
        .map(|&i| h.received_ps(i).expect("done"))
        .collect();
    assert!(done.windows(2).all(|w| w[0] > w[1]), "{done:?}");
    let total: u64 = msgs.iter().map(|m| m.2).sum::<u64>();
    let serial = total.div_ceil(1436) * 1_230_400;
    let end = done[0] - 10_000_000;
    assert!(end < serial * 103 / 100, "{end} ps against {serial} ps");
    assert_eq!(s.net.counters().dropped, 0);
}

#[test]
fn a_short_message_overtakes_long_ones_at_the_highest_priority() {
    // Four 2 MB messages into host 0, and a 3 KB one from host 5 among them at 200 us:
    // its unscheduled packets take a higher level than the long ones' scheduled packets,
    // so it ends within a few packet times of its time on an empty network (three
    // packets, two hops: about 7 us).
    let mut msgs: Vec<(u32, u32, u64, u64)> = (1..=4).map(|i| (i, 0, 2_000_000, 0)).collect();
    msgs.push((5, 0, 3_000, 200_000_000));
    let (s, ids) = run(6, (PRIORITY, "1MiB"), "{}", &msgs);
    let short = s.transports.homa.received_ps(ids[4]).expect("done") - 200_000_000;
    assert!(short < 10_000_000, "{short} ps");
    // Without priorities it waits behind the long ones' queue at the switch.
    let (s, ids) = run(6, (r#"{"kind":"droptail"}"#, "1MiB"), "{}", &msgs);
    let fifo = s.transports.homa.received_ps(ids[4]).expect("done") - 200_000_000;
    assert!(
        fifo > 2 * short,
        "{fifo} ps against {short} ps with priorities"
    );
}

#[test]
fn losses_are_recovered_by_resends() {
    // Eight 300 KB messages into 20 KB ports: the unscheduled packets overflow the
    // receiver's port; its timeouts ask again for what it misses, and all arrive.
    let msgs: Vec<(u32, u32, u64, u64)> = (1..=8).map(|i| (i, 0, 300_000, 0)).collect();
    let (s, ids) = run(9, (PRIORITY, "20KiB"), r#"{"rto":"200us"}"#, &msgs);
    let h = &s.transports.homa;
    assert!(s.net.counters().dropped > 0);
    assert!(ids.iter().all(|&i| h.received_ps(i).is_some()));
    assert!(h.stats.resends > 0 && h.stats.resent_packets > 0);
}
