//! RoCEv2 end to end on small networks, driven through the transport's own calls.

use super::*;
use crate::sim::Sim;

/// Runs `f` on the run's RoCE transport with a host path into the run.
fn with_roce<R>(
    s: &mut Sim,
    f: impl FnOnce(&mut Roce, &mut HostPath<'_, crate::engine::EventQueue<crate::sim::SimEvent>>) -> R,
) -> R {
    s.with_transports(|t, path| f(&mut t.roce, path))
}

/// `senders` hosts (1..) each sending `bytes` to host 0 at time 0 through one 10 Gbit/s
/// switch; `switch` and `roce` are JSON objects of those sections. Returns the run.
fn incast(senders: u32, bytes: u64, switch: &str, roce: &str) -> (Sim, Vec<u32>) {
    let mut s = Sim::from_json(&format!(
        r#"{{"duration":"100ms","topology":{{"kind":"single_switch","hosts":{},
        "link":{{"rate":"10Gbps","delay":"500ns"}}}},"switch":{switch},"transport":{{"kind":"roce"}},"roce":{roce},
        "workload":{{"kind":"none"}}}}"#,
        senders + 1
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let qps = with_roce(&mut s, |roce, path| {
        (1..=senders)
            .map(|src| roce.send(path, src, 0, None, bytes))
            .collect()
    });
    s.run();
    let inv = s.invariants();
    assert!(inv.ok(), "{inv:?}");
    (s, qps)
}

const LOSSLESS: &str = r#"{"buffer":"shared","shared_buffer":"300KiB","port_to_port_latency":"500ns","pfc":{},
    "scheme":{"kind":"dctcp","k_packets":20}}"#;

#[test]
fn one_queue_pair_sends_at_line_rate() {
    // 1 MB in 1024-byte payloads: 977 packets of 1,086 bytes (1,106 on the wire, 884.8 ns
    // at 10 Gbit/s); the last arrives one store-and-forward hop later and its ACK returns.
    let (s, qps) = incast(1, 1_000_000, "{}", r#"{"congestion":"none"}"#);
    let fct = s.transports.roce.done_ps(qps[0]).expect("done");
    let packets = 1_000_000u64.div_ceil(1024);
    let wire_ps = 884_800;
    let serial = packets * wire_ps;
    assert!(
        fct > serial && fct < serial + 10 * wire_ps,
        "{fct} ps against {serial} ps"
    );
    assert_eq!(s.transports.roce.stats.resent_bytes, 0);
    assert_eq!(s.transports.roce.stats.data_packets, packets);
}

#[test]
fn an_incast_over_pfc_is_lossless_and_dcqcn_cuts_the_rates() {
    let (s, qps) = incast(8, 2_000_000, LOSSLESS, "{}");
    let r = &s.transports.roce;
    for &q in &qps {
        assert!(r.done_ps(q).is_some(), "qp {q} finished");
    }
    assert_eq!(s.net.counters().dropped, 0);
    assert_eq!(
        (r.stats.naks, r.stats.timeouts, r.stats.resent_bytes),
        (0, 0, 0)
    );
    assert!(r.stats.cnps > 8, "{:?}", r.stats);
    // Eight senders share 10 Gbit/s: the last ends no sooner than 16 MB take.
    let last = qps.iter().map(|&q| r.done_ps(q).unwrap()).max().unwrap();
    assert!(last as f64 > 16e6 * 8.0 / 10e9 * 1e12);
}

#[test]
fn dcqcn_leaves_pfc_less_to_pause_than_line_rate_senders() {
    // DCQCN's point (Zhu et al. section 2): PFC alone keeps the fabric lossless by pausing,
    // and congestion control takes over most of that work.
    let pauses = |roce: &str| {
        let (s, _) = incast(8, 2_000_000, LOSSLESS, roce);
        s.net.pfc().map(|_| s.net.counters().control_sent).unwrap()
    };
    let (without, with) = (pauses(r#"{"congestion":"none"}"#), pauses("{}"));
    assert!(
        with * 2 < without,
        "{with} PFC frames with DCQCN, {without} without"
    );
}

#[test]
fn losses_are_recovered_by_going_back() {
    // A lossy switch with room for a dozen frames: line-rate senders overflow it. Their
    // frames arrive in lockstep, so three of the four lose every frame while the buffer is
    // full and learn of it by the ACK timeout (here 4.096 us x 2^8, 1 ms), not by a NAK;
    // they go back (and lock step again: one more finishes per timeout), and every
    // message completes.
    let (s, qps) = incast(
        4,
        500_000,
        r#"{"buffer_per_port":"16KiB"}"#,
        r#"{"congestion":"none","timeout_exponent":8}"#,
    );
    let r = &s.transports.roce;
    assert!(s.net.counters().dropped > 0);
    assert!(
        r.stats.timeouts > 0 && r.stats.resent_bytes > 0,
        "{:?}",
        r.stats
    );
    for &q in &qps {
        assert!(r.done_ps(q).is_some(), "qp {q} finished");
    }
}

/// Hands QP 0's receiver a data packet of 1024 bytes at `seq`.
fn deliver(s: &mut Sim, seq: u64) {
    let p = Packet {
        src_host: 1,
        dst_host: 0,
        dst_port: DATA,
        proto: PROTO,
        flow_id: 0,
        payload_bytes: 1024,
        seq,
        ..Default::default()
    };
    with_roce(s, |roce, path| roce.on_data(path, &p));
}

#[test]
fn a_gap_brings_one_nak_and_a_nak_sends_all_from_its_byte_again() {
    // A QP of 8 KiB whose packets have all left (the run is over); its receiver is then
    // handed packets by hand.
    let (mut s, _) = incast(1, 8192, "{}", r#"{"congestion":"none"}"#);
    s.transports.roce.qps[0].expected = 0;
    s.transports.roce.qps[0].done_ps = None;
    s.transports.roce.qps[0].acked = 0;
    deliver(&mut s, 0);
    deliver(&mut s, 2048); // 1024..2048 lost
    deliver(&mut s, 3072);
    let r = &s.transports.roce;
    assert_eq!(r.qps[0].expected, 1024, "nothing past the gap is taken");
    assert_eq!(r.stats.naks, 1, "one NAK for the gap");
    deliver(&mut s, 1024);
    deliver(&mut s, 4096); // a new gap (2048 was dropped as out of order)
    assert_eq!(s.transports.roce.stats.naks, 2);
    // At the sender, the NAK for 2048 sends from there again.
    let sent = s.transports.roce.stats.data_packets;
    let nak = Packet {
        dst_port: NAK,
        flow_id: 0,
        seq: 2048,
        ..Default::default()
    };
    with_roce(&mut s, |roce, path| roce.on_ack(path, &nak, true));
    let r = &s.transports.roce;
    assert_eq!(r.qps[0].acked, 2048);
    assert_eq!(
        r.stats.data_packets,
        sent + 1,
        "the byte at 2048 at once, the rest paced"
    );
    assert!(r.stats.resent_bytes >= 1024);
}

#[test]
fn bad_parameters_are_named() {
    let e = Params {
        payload: Some(crate::units::Bytes(100)),
        ..Default::default()
    }
    .resolve()
    .unwrap_err()
    .to_string();
    assert!(e.contains("roce.payload"), "{e}");
    let e = Params {
        congestion: Some("none".into()),
        dcqcn: Some(Default::default()),
        ..Default::default()
    }
    .resolve()
    .unwrap_err()
    .to_string();
    assert!(e.contains("roce.dcqcn"), "{e}");
}

/// Mean queueing delay per packet (us) over the switch's ports, and the most bytes any
/// port held.
fn queueing(s: &Sim) -> (f64, u64) {
    let ports = s.net.ports();
    let (wait, pkts) = ports
        .iter()
        .filter(|p| p.switch != crate::net::NONE)
        .fold((0u64, 0u64), |(w, n), p| {
            (w + p.stats.wait_ps_sum, n + p.stats.tx_pkts)
        });
    let max = ports.iter().map(|p| p.stats.max_queue_bytes).max().unwrap();
    (wait as f64 / pkts as f64 / 1e6, max)
}

/// The 8-to-1 incast of 2 MB messages over PFC under congestion control `cc`: every
/// message done, nothing dropped or sent again. PAUSE frames sent, the mean queueing delay
/// (us) and the run.
fn lossless_incast(cc: &str) -> (u64, f64, Sim) {
    let roce = format!(r#"{{"congestion":"{cc}"}}"#);
    let (s, qps) = incast(8, 2_000_000, LOSSLESS, &roce);
    let r = &s.transports.roce;
    assert!(
        qps.iter().all(|&q| r.done_ps(q).is_some()),
        "{cc}: all finish"
    );
    assert_eq!(s.net.counters().dropped, 0, "{cc}");
    assert_eq!(r.stats.resent_bytes, 0, "{cc}");
    (s.net.counters().control_sent, queueing(&s).0, s)
}

#[test]
fn rtt_and_telemetry_controls_take_over_from_pfc_and_hpcc_keeps_queues_near_empty() {
    // TIMELY (Mittal et al.) and HPCC (Li et al.) against line-rate senders on the same
    // 8-to-1 incast over PFC: both leave PFC far less to do; HPCC, which sees the queue in
    // its telemetry and aims at 95% of the link, keeps packets' queueing delay a fraction
    // of DCQCN's, which lets the queue sit at its marking threshold.
    let (line_pauses, line_wait, _) = lossless_incast("none");
    let (_, dcqcn_wait, _) = lossless_incast("dcqcn");
    let (timely_pauses, _, _) = lossless_incast("timely");
    let (hpcc_pauses, hpcc_wait, s) = lossless_incast("hpcc");
    assert!(
        timely_pauses * 4 < line_pauses,
        "{timely_pauses} against {line_pauses}"
    );
    assert!(
        hpcc_pauses * 10 < line_pauses,
        "{hpcc_pauses} against {line_pauses}"
    );
    assert!(
        hpcc_wait * 4.0 < dcqcn_wait && dcqcn_wait < line_wait,
        "mean queueing {hpcc_wait} us (HPCC), {dcqcn_wait} (DCQCN), {line_wait} (line rate)"
    );
    // The senders measured the switch's port through the telemetry their ACKs echoed.
    let Control::Hpcc(h) = &s.transports.roce.qps[0].cc else {
        panic!("an HPCC sender")
    };
    assert!(h.util > 0.0);
}

#[test]
fn swift_holds_the_incast_near_its_delay_target_without_pfc() {
    // Swift (Kumar et al.) aims each QP's round trip at its target (20 us here plus the
    // hop and flow-scaling terms): eight QPs into one 10 Gbit/s port keep the queue near
    // that delay, well below what PFC's threshold would let build, and PFC pauses far less
    // than under line-rate senders.
    let (line_pauses, line_wait, _) = lossless_incast("none");
    let (swift_pauses, swift_wait, _) = lossless_incast("swift");
    assert!(
        swift_pauses * 4 < line_pauses,
        "{swift_pauses} against {line_pauses}"
    );
    assert!(
        swift_wait < 60.0 && swift_wait * 2.0 < line_wait,
        "mean queueing {swift_wait} us (Swift), {line_wait} us (line rate)"
    );
}

#[test]
fn hpcc_refuses_links_its_telemetry_cannot_name() {
    let e = Sim::from_json(
        r#"{"duration":"1ms","topology":{"kind":"single_switch","hosts":2,
        "link":{"rate":"2.5Gbps"}},"transport":{"kind":"roce"},"roce":{"congestion":"hpcc"},
        "workload":{"kind":"none"}}"#,
    )
    .err()
    .expect("refused")
    .to_string();
    assert!(
        e.contains("roce.congestion") && e.contains("2.5Gbps"),
        "{e}"
    );
}

#[test]
fn selective_repeat_sends_again_only_what_was_lost() {
    // Eight DCQCN senders into a lossy port with room for about 40 frames: a few packets
    // of each window are lost. Selective repeat sends again well under what go-back-N
    // does (which sends everything after each loss), and every message completes whole;
    // both also time out (a lost NAK, or a loss at a message's tail) and then go back.
    let run = |recovery: &str| {
        let (s, qps) = incast(
            8,
            2_000_000,
            r#"{"buffer_per_port":"40KiB","scheme":{"kind":"dctcp","k_packets":10}}"#,
            &format!(r#"{{"timeout_exponent":8,"recovery":"{recovery}"}}"#),
        );
        let r = &s.transports.roce;
        for &q in &qps {
            assert!(r.done_ps(q).is_some(), "{recovery}: qp {q} finished");
            assert_eq!(r.qps[q as usize].expected, 2_000_000);
        }
        (r.stats.resent_bytes, s.net.counters().dropped)
    };
    let (gbn, gbn_drops) = run("go_back_n");
    let (sr, sr_drops) = run("selective");
    assert!(gbn_drops > 0 && sr_drops > 0);
    assert!(
        sr * 3 < gbn * 2,
        "{sr} bytes sent again (selective) against {gbn} (go-back-N)"
    );
}

#[test]
fn a_receiver_holding_packets_past_gaps_takes_them_when_the_gaps_fill() {
    let (mut s, _) = incast(
        1,
        8192,
        "{}",
        r#"{"congestion":"none","recovery":"selective"}"#,
    );
    let q = &mut s.transports.roce.qps[0];
    (q.expected, q.done_ps, q.acked) = (0, None, 0);
    for seq in [0, 2048, 3072, 5120, 6144] {
        deliver(&mut s, seq); // 1024 and 4096 lost
    }
    assert_eq!(s.transports.roce.qps[0].expected, 1024);
    deliver(&mut s, 1024); // fills the first gap: 2048 and 3072 follow, 4096 is next
    assert_eq!(s.transports.roce.qps[0].expected, 4096);
    // A NAK for the first gap, and one for the second as soon as the first filled.
    assert_eq!(s.transports.roce.stats.naks, 2);
    deliver(&mut s, 4096);
    assert_eq!(s.transports.roce.qps[0].expected, 7168);
}
