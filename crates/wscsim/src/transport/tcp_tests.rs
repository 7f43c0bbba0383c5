//! TCP's rules one at a time: a connection between two hosts of a switch whose ACKs the
//! test writes by hand (nothing runs in between), so that what the sender sends in answer
//! to each ACK is counted exactly. Segment numbers stand for byte ranges of one MSS.

use super::*;
use crate::engine::{PS_PER_MS, PS_PER_US};
use crate::Sim;

struct Bench {
    sim: Sim,
    conn: u32,
    mss: u64,
}

impl Bench {
    /// A connection from host 0 to host 1 with the given extra `[transport]` keys (JSON),
    /// no delayed ACKs and a receive window that never limits.
    fn new(transport: &str) -> Bench {
        let delack = if transport.contains("delayed_ack") {
            ""
        } else {
            r#""delayed_ack":false,"#
        };
        let json = format!(
            r#"{{"duration":"10s","topology":{{"kind":"single_switch","hosts":2,"link":{{"rate":"10Gbps"}}}},
            "transport":{{{delack}"rcv_window":"64MiB"{transport}}},"workload":{{"kind":"none"}}}}"#
        );
        let mut sim = Sim::from_json(&json).unwrap_or_else(|e| panic!("{e}"));
        let conn = sim.tcp.open(0, 1, 0, 0);
        let mss = u64::from(sim.tcp.params.mss_bytes);
        Bench { sim, conn, mss }
    }

    /// Runs `f` on the connection's TCP with the network, hosts and event queue.
    fn with<R>(
        &mut self,
        f: impl FnOnce(
            &mut Tcp,
            &mut Network,
            &mut Hosts,
            &mut crate::engine::EventQueue<crate::sim::SimEvent>,
        ) -> R,
    ) -> R {
        let Sim {
            net,
            hosts,
            ev,
            tcp,
            ..
        } = &mut self.sim;
        f(tcp, net, hosts, ev)
    }

    /// The retransmission timer's event fires now.
    fn fire_rto(&mut self) {
        let conn = self.conn;
        self.with(|t, n, h, e| t.on_timer(n, h, e, conn, TIMER_RTO));
    }

    fn sent(&self) -> u64 {
        self.sim.net.counters.sent
    }

    fn sender(&self) -> &Sender {
        &self.sim.tcp.senders[self.conn as usize]
    }

    /// The application writes `segments` segments; returns how many went at once.
    fn write(&mut self, segments: u64) -> u64 {
        let before = self.sent();
        let (conn, bytes) = (self.conn, segments * self.mss);
        self.with(|t, n, h, e| t.write(n, h, e, conn, bytes));
        self.sent() - before
    }

    /// An ACK of everything below segment `una`, SACKing segments [a, b) for each of
    /// `sacked` (at most two blocks), echoing a timestamp of `echo_ps` (NEVER: none).
    /// Returns the segments sent in answer and how many of them were retransmissions.
    fn ack_echo(&mut self, una: u64, sacked: &[(u64, u64)], echo_ps: TimePs) -> (u64, u64) {
        let mut pkt = Packet {
            src_host: 1,
            dst_host: 0,
            proto: Proto::Tcp,
            tcp_flags: tcp_flags::ACK,
            flow_id: self.conn,
            ack: una * self.mss,
            ts_echo_ps: echo_ps,
            ..Default::default()
        };
        for (i, &(a, b)) in sacked.iter().enumerate() {
            pkt.sack[2 * i] = ((a - una) * self.mss) as u32;
            pkt.sack[2 * i + 1] = ((b - a) * self.mss) as u32;
        }
        let (sent, rexmits) = (self.sent(), self.sender().retransmits);
        self.with(|t, n, h, e| t.on_packet(n, h, e, &pkt));
        (self.sent() - sent, self.sender().retransmits - rexmits)
    }

    /// Data segment `seg` reaches the receiver now; returns the ACKs sent in answer.
    fn data(&mut self, seg: u64) -> u64 {
        let pkt = Packet {
            src_host: 0,
            dst_host: 1,
            proto: Proto::Tcp,
            flow_id: self.conn,
            seq: seg * self.mss,
            payload_bytes: self.mss as u32,
            ts_ps: self.sim.ev.now(),
            ..Default::default()
        };
        let sent = self.sent();
        self.with(|t, n, h, e| t.on_packet(n, h, e, &pkt));
        self.sent() - sent
    }

    /// Every segment connection `conn` has queued leaves its host's NIC.
    fn drain_nic(&mut self, conn: u32) {
        // Departures the NIC reported already (a segment it started at once), then the rest.
        self.with(|t, n, h, e| t.on_nic_departures(n, h, e));
        let bytes = self.sim.tcp.senders[conn as usize].nic_bytes;
        if bytes > 0 {
            self.sim.net.nic_departures.push((conn, bytes as u32));
            self.with(|t, n, h, e| t.on_nic_departures(n, h, e));
        }
    }

    fn ack(&mut self, una: u64, sacked: &[(u64, u64)]) -> (u64, u64) {
        self.ack_echo(una, sacked, NEVER)
    }

    /// Segment 0 of a full window is lost: duplicate ACKs SACK segments 1, 2, ... one at a
    /// time. Returns the segments sent in answer to each.
    fn lose_first_of(&mut self, window: u64, acks: u64) -> Vec<u64> {
        assert_eq!(self.write(4 * window), window);
        (1..=acks).map(|k| self.ack(0, &[(1, k + 1)]).0).collect()
    }
}

/// RFC 3042: with limited transmit the first two duplicate ACKs each send one new
/// segment (not a retransmission); without it they send nothing. The third starts
/// recovery with the retransmission of the hole either way.
#[test]
fn limited_transmit_sends_one_new_segment_on_each_of_two_duplicate_acks() {
    for lt in [true, false] {
        let mut b = Bench::new(&format!(r#","initial_window":4,"limited_transmit":{lt}"#));
        assert_eq!(b.write(20), 4);
        let expect = u64::from(lt);
        assert_eq!(b.ack(0, &[(1, 2)]), (expect, 0), "first duplicate, lt {lt}");
        assert_eq!(
            b.ack(0, &[(1, 3)]),
            (expect, 0),
            "second duplicate, lt {lt}"
        );
        assert_eq!(
            b.sender().cwnd,
            4.0 * b.mss as f64,
            "the window is not changed"
        );
        let (_, rexmits) = b.ack(0, &[(1, 4)]);
        assert_eq!(rexmits, 1, "third duplicate: fast retransmit");
        assert!(b.sender().in_recovery);
    }
}

/// The same without SACK (NewReno's duplicate ACKs).
#[test]
fn limited_transmit_works_without_sack() {
    let mut b = Bench::new(r#","initial_window":4,"limited_transmit":true,"sack":false"#);
    assert_eq!(b.write(20), 4);
    assert_eq!(b.ack(0, &[]), (1, 0));
    assert_eq!(b.ack(0, &[]), (1, 0));
    assert_eq!(b.ack(0, &[]).1, 1);
}

/// RFC 6937: while the bytes in flight exceed ssthresh, PRR has sent, after each ACK of
/// recovery, ceil(delivered x ssthresh / RecoverFS) in all (the fast retransmission
/// included; in whole segments, as Linux counts). NewReno halves: ssthresh = 10 of
/// RecoverFS = 20 segments, one segment for every two delivered, starting with the ACK
/// that starts recovery. Once the flight is down to ssthresh (ACK 15: 20 sent + 5 new -
/// 15 SACKed), the slow-start reduction bound keeps it there: one segment per ACK.
#[test]
fn prr_sends_in_proportion_to_what_is_delivered() {
    let mut b = Bench::new(
        r#","variant":"newreno","initial_window":20,"recovery":"prr","limited_transmit":false"#,
    );
    let sent = b.lose_first_of(20, 17);
    assert_eq!(&sent[..2], &[0, 0], "before recovery");
    assert_eq!(b.sender().ssthresh, 10.0 * b.mss as f64);
    let mut total = 0;
    for (k, &n) in sent.iter().enumerate().take(14).skip(2) {
        total += n;
        let delivered = k as u64 - 1; // segments SACKed since recovery began, this one's included
        assert_eq!(
            total,
            delivered.div_ceil(2),
            "after duplicate ACK {}",
            k + 1
        );
    }
    assert_eq!(&sent[14..], &[0, 1, 1], "{sent:?}");
}

/// RFC 6675 without PRR: the window falls to ssthresh at once, so after the fast
/// retransmission nothing goes until the bytes in flight fall under it, then one
/// segment for each segment delivered.
#[test]
fn rfc6675_waits_until_the_flight_falls_under_ssthresh() {
    let mut b = Bench::new(
        r#","variant":"newreno","initial_window":20,"recovery":"rfc6675","limited_transmit":false"#,
    );
    let sent = b.lose_first_of(20, 15);
    // ACK 3: the retransmission; in flight 17 (20 sent, 3 SACKed, the hole resent), so
    // ACKs 4 to 10 bring it to 10 and send nothing; from then one for one.
    assert_eq!(sent, [0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1]);
}

/// Linux's rate halving (before 3.2): the window falls by one segment for every two ACKs
/// that deliver data and never exceeds the flight plus one segment, so recovery sends
/// one segment for every two ACKs, and the window stays at ssthresh or above.
#[test]
fn rate_halving_sends_every_other_ack() {
    let mut b = Bench::new(
        r#","variant":"newreno","initial_window":20,"recovery":"rate_halving","limited_transmit":false"#,
    );
    let sent = b.lose_first_of(20, 17);
    assert_eq!(sent[2], 1, "the fast retransmission alone");
    for pair in sent[3..].chunks(2) {
        assert_eq!(pair.iter().sum::<u64>(), 1, "{sent:?}");
    }
    assert!(b.sender().cwnd >= b.sender().ssthresh);
    // Recovery ends when the hole is acknowledged: the window is at most ssthresh.
    let top = b.sender().snd_max / b.mss;
    b.ack(top, &[]);
    assert!(!b.sender().in_recovery && b.sender().cwnd <= b.sender().ssthresh);
}

/// A timer clock of 4 ms (Linux's jiffy at HZ 250): a timer armed for d fires on a tick,
/// more than ceil(d / 4 ms) - 1 and at most ceil(d / 4 ms) ticks later; without a clock,
/// exactly d later.
#[test]
fn timers_fire_on_the_clocks_ticks() {
    let g = 4 * PS_PER_MS;
    let b = Bench::new(r#","rto_granularity":"4ms","rto_min":"1ms""#);
    let tcp = &b.sim.tcp;
    let phase = tcp.clock_phase(0);
    assert!(phase < g);
    for (i, delay) in [PS_PER_MS, 200 * PS_PER_MS, 4 * PS_PER_MS, 5 * PS_PER_MS]
        .into_iter()
        .enumerate()
    {
        for now in (0..50).map(|k| k * 997 * PS_PER_US + i as u64) {
            let at = tcp.timer_deadline(0, now, delay);
            let ticks = delay.div_ceil(g);
            assert_eq!((at - phase) % g, 0, "on a tick");
            assert!(
                at - now <= ticks * g && at - now > (ticks - 1) * g,
                "{now} {delay} {at}"
            );
        }
    }
    let exact = Bench::new("");
    assert_eq!(
        exact.sim.tcp.timer_deadline(0, 123, PS_PER_MS),
        123 + PS_PER_MS
    );
}

/// Linux's timeout is srtt + max(4 rttvar, rto_min), RFC 6298's max(rto_min, srtt + 4
/// rttvar): after one 100 us RTT sample, 200.1 ms against 200 ms.
#[test]
fn linux_timeout_adds_the_floor_to_the_smoothed_rtt() {
    for (formula, expect_us) in [("linux", 200_100), ("rfc6298", 200_000)] {
        let mut b = Bench::new(&format!(r#","rto_formula":"{formula}""#));
        b.write(1);
        b.sim.ev.advance_to(100 * PS_PER_US);
        b.ack_echo(1, &[], 0);
        assert_eq!(b.sender().rto_ps, expect_us * PS_PER_US, "{formula}");
    }
}

/// With a timer clock, RTTs are counted in ticks, at least one: a 100 us RTT measures as
/// one 4 ms tick.
#[test]
fn rtt_samples_are_whole_ticks_on_a_clock() {
    let mut b = Bench::new(r#","rto_granularity":"4ms","rto_formula":"rfc6298""#);
    b.write(1);
    b.sim.ev.advance_to(100 * PS_PER_US);
    b.ack_echo(1, &[], 0);
    assert_eq!(b.sender().srtt_ps, 4 * PS_PER_MS);
    // The statistics keep the true RTT.
    assert_eq!(b.sender().rtt.max_ps, 100 * PS_PER_US);
}

/// A Linux host stack brings its kernel's rules; they are written back; a bad value is
/// refused with the field's name.
#[test]
fn rules_follow_the_host_kernel() {
    let resolve = |host: &str, transport: &str| {
        let json = format!(
            r#"{{"topology":{{"kind":"single_switch","hosts":2}},"host":{{"stack":"{host}"}},
            "transport":{{"kind":"tcp"{transport}}},"workload":{{"kind":"none"}}}}"#
        );
        Sim::from_json(&json).map(|s| (s.tcp.params.clone(), s.scenario.transport.clone()))
    };
    let (p, t) = resolve("linux_2_6_39", "").unwrap();
    assert_eq!(p.recovery, Recovery::RateHalving);
    assert!(p.limited_transmit && p.linux_rto && p.quickack);
    assert_eq!(p.rto_granularity_ps, 4 * PS_PER_MS);
    assert_eq!(t.rules.as_deref(), Some("linux_2_6_39"));
    let (p, _) = resolve("linux_3_5", "").unwrap();
    assert_eq!(p.recovery, Recovery::Prr);
    let (p, t) = resolve("ideal", "").unwrap();
    assert_eq!(
        (p.recovery, p.limited_transmit, p.linux_rto),
        (Recovery::Rfc6675, false, false)
    );
    assert_eq!((t.rules.as_deref(), p.rto_granularity_ps), (Some("rfc"), 0));
    let (p, _) = resolve(
        "linux_3_5",
        r#","recovery":"rfc6675","rto_granularity":"0s""#,
    )
    .unwrap();
    assert_eq!((p.recovery, p.rto_granularity_ps), (Recovery::Rfc6675, 0));
    let e = resolve("ideal", r#","recovery":"fast""#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("transport.recovery"), "{e}");
}

/// Linux's quick-ack mode: with delayed ACKs, the first 5 segments (half the first
/// receive window of 10) are each ACKed at once, then every second one; after a gap
/// longer than the timeout floor (a sender coming back from a timeout), on a segment
/// already held and on one out of order, at once again, for up to 16 (TCP_MAX_QUICKACKS).
/// Without it, every second segment from the start.
#[test]
fn quickack_mode_acks_at_once_at_the_start_and_after_a_gap() {
    let mut b = Bench::new(r#","delayed_ack":true,"quickack":true"#);
    let acks: Vec<u64> = (0..9).map(|k| b.data(k)).collect();
    assert_eq!(acks, [1, 1, 1, 1, 1, 0, 1, 0, 1]);
    b.sim.ev.advance_to(201 * PS_PER_MS);
    let acks: Vec<u64> = (9..27).map(|k| b.data(k)).collect();
    assert!(acks[..16].iter().all(|&a| a == 1), "{acks:?}");
    assert_eq!(&acks[16..], &[0, 1]);
    let mut b = Bench::new(r#","delayed_ack":true,"quickack":true"#);
    (0..9).for_each(|k| {
        b.data(k);
    });
    assert_eq!(b.data(3), 1, "a duplicate is ACKed at once");
    assert_eq!((b.data(9), b.data(10)), (1, 1), "and starts a burst");
    let mut b = Bench::new(r#","delayed_ack":true,"quickack":true"#);
    (0..9).for_each(|k| {
        b.data(k);
    });
    assert_eq!(b.data(10), 1, "out of order: at once");
    assert_eq!(b.data(9), 1, "the hole filled: at once");
    assert_eq!((b.data(11), b.data(12)), (1, 1), "then a burst, in order");
    let mut b = Bench::new(r#","delayed_ack":true,"quickack":false"#);
    let acks: Vec<u64> = (0..6).map(|k| b.data(k)).collect();
    assert_eq!(acks, [0, 1, 0, 1, 0, 1]);
}

/// Linux's interactive mode: once the receiving side answers on the reverse half within
/// the delayed-ACK timeout, its ACKs wait to ride on answers (no quick-acks); a duplicate
/// segment ends it.
#[test]
fn answers_within_the_ack_timeout_turn_quick_acks_off() {
    let mut b = Bench::new(r#","delayed_ack":true,"quickack":true"#);
    let rev = b.sim.tcp.open(1, 0, 0, 0);
    b.sim.tcp.link_reverse(b.conn, rev);
    assert_eq!(b.data(0), 1, "the first segment: a quick ACK");
    // Host 1 answers at once: the answer carries the ACK of nothing new, and the
    // exchange is interactive from now on.
    b.with(|t, n, h, e| t.write(n, h, e, rev, 100));
    assert!(b.sim.tcp.receivers[b.conn as usize].pingpong);
    b.sim.ev.advance_to(PS_PER_US);
    assert_eq!(b.data(1), 0, "interactive: the ACK waits for an answer");
    assert_eq!(b.data(1), 1, "a duplicate is ACKed at once");
    assert!(
        !b.sim.tcp.receivers[b.conn as usize].pingpong,
        "and ends interactive mode"
    );
    assert_eq!(b.data(2), 1, "quick-acks again");
}

/// Tail loss probe: with ten segments out and no ACK, one probe (the last segment again,
/// nothing new to send) goes after max(2 SRTT, 10 ms), before any timeout; its SACK would
/// start recovery. Without probes the timer is the timeout. One probe at a time.
#[test]
fn a_tail_loss_probe_goes_before_the_timeout() {
    for tlp in [true, false] {
        let mut b = Bench::new(&format!(r#","tlp":{tlp},"initial_window":10"#));
        assert_eq!(b.write(1), 1);
        b.sim.ev.advance_to(100 * PS_PER_US);
        b.ack_echo(1, &[], 0); // an RTT sample of 100 us
        assert_eq!(b.write(10), 10);
        let now = b.sim.ev.now();
        let at = b.sender().rto_deadline;
        if !tlp {
            assert_eq!(at, now + b.sender().rto_ps, "the timeout");
            continue;
        }
        assert_eq!(at, now + 10 * PS_PER_MS, "max(2 x 100 us, 10 ms)");
        b.sim.ev.advance_to(at);
        let (sent, rexmits) = (b.sent(), b.sender().retransmits);
        b.fire_rto();
        assert_eq!((b.sent() - sent, b.sender().retransmits - rexmits), (1, 1));
        assert_eq!((b.sender().tail_probes, b.sender().timeouts), (1, 0));
        // The probe is unanswered: next comes the timeout.
        let timeout_at = b.sender().rto_deadline;
        assert_eq!(timeout_at, at + b.sender().rto_ps);
        // After the timeout the sender goes back over its data: no probe then, the timer is
        // the (doubled) timeout.
        b.sim.ev.advance_to(timeout_at);
        b.fire_rto();
        assert_eq!(b.sender().timeouts, 1);
        assert!(!b.sender().probe_armed);
        assert_eq!(b.sender().rto_deadline, timeout_at + b.sender().rto_ps);
    }
}

/// What host `host` sent since `since` packets were allocated: (flags, payload) of each.
fn sent_by(b: &Bench, host: u32, since: usize) -> Vec<(u8, u32)> {
    let pool = &b.sim.net.pool;
    (since as u32..pool.capacity_used() as u32)
        .map(|id| pool.get(id))
        .filter(|p| p.src_host == host)
        .map(|p| (p.tcp_flags, p.payload_bytes))
        .collect()
}

/// The three-way handshake: a SYN goes at connect; data written meanwhile waits; the
/// listener answers with a SYN-ACK echoing the SYN's time; the SYN-ACK gives the first
/// RTT sample and lets the data out, the first segment carrying the third ACK.
#[test]
fn a_handshake_holds_data_until_the_syn_ack() {
    let mut b = Bench::new(r#","initial_window":4"#);
    let before = b.sim.net.pool.capacity_used();
    b.conn = b.with(|t, n, h, e| t.connect(n, h, e, 0, 1, 0, 0));
    assert_eq!(b.write(3), 0, "nothing before the SYN-ACK");
    let syn = sent_by(&b, 0, before);
    assert_eq!(syn, [(tcp_flags::SYN, 0)]);
    // The listener's answer.
    b.sim.ev.advance_to(30 * PS_PER_US);
    let syn_pkt = *b.sim.net.pool.get(before as u32);
    let mark = b.sim.net.pool.capacity_used();
    b.with(|t, n, h, e| t.on_packet(n, h, e, &syn_pkt));
    let answer = sent_by(&b, 1, mark);
    assert_eq!(answer, [(tcp_flags::SYN | tcp_flags::ACK, 0)]);
    let syn_ack = *b.sim.net.pool.get(mark as u32);
    assert_eq!(syn_ack.ts_echo_ps, 0);
    // Its arrival: an RTT sample of 60 us, and the three segments go.
    b.sim.ev.advance_to(60 * PS_PER_US);
    let sent = b.sent();
    b.with(|t, n, h, e| t.on_packet(n, h, e, &syn_ack));
    assert_eq!(b.sent() - sent, 3);
    assert_eq!(b.sender().srtt_ps, 60 * PS_PER_US);
}

/// A lost SYN goes again after the initial RTO (3 s for Linux 2.6.39, 1 s from 3.1), then
/// after twice that.
#[test]
fn a_lost_syn_waits_out_the_initial_rto() {
    for (rules, initial_s) in [("linux_2_6_39", 3), ("linux_3_5", 1), ("rfc", 1)] {
        let mut b = Bench::new(&format!(r#","rules":"{rules}","rto_granularity":"0s""#));
        b.conn = b.with(|t, n, h, e| t.connect(n, h, e, 0, 1, 0, 0));
        let first = b.sender().rto_deadline;
        assert_eq!(first, initial_s * crate::engine::PS_PER_S, "{rules}");
        b.sim.ev.advance_to(first);
        let sent = b.sent();
        b.fire_rto();
        assert_eq!((b.sent() - sent, b.sender().syn_retransmits), (1, 1));
        assert_eq!(
            b.sender().timeouts,
            0,
            "a SYN's timeout is not a data timeout"
        );
        assert_eq!(
            b.sender().rto_deadline,
            first + 2 * initial_s * crate::engine::PS_PER_S
        );
    }
}

/// Delivers every packet `host` sent since `since` packets were allocated, in order, to
/// its destination; returns (flags, payload) of what was sent in answer and the mark
/// after which the answers lie.
fn pass(b: &mut Bench, host: u32, since: usize) -> (Vec<(u8, u32)>, usize) {
    let mark = b.sim.net.pool.capacity_used();
    let pkts: Vec<Packet> = (since as u32..mark as u32)
        .map(|id| *b.sim.net.pool.get(id))
        .filter(|p| p.src_host == host)
        .collect();
    for p in pkts {
        b.with(|t, n, h, e| t.on_packet(n, h, e, &p));
    }
    (sent_by(b, 1 - host, mark), mark)
}

/// A one-way connection's close: the FIN follows the data at once, carries the data's
/// end as its sequence number, is ignored by a receiver still missing data and
/// acknowledged at once by one that has it all (the application reads the end of the
/// stream); its acknowledgement frees the slot, which the next connection takes with
/// another port, so a packet of the old connection is dropped on arrival.
#[test]
fn a_closed_connection_sends_its_fin_after_its_data_and_frees_its_slot() {
    let mut b = Bench::new(r#","initial_window":4"#);
    let start = b.sim.net.pool.capacity_used();
    assert_eq!(b.write(2), 2);
    let conn = b.conn;
    b.with(|t, n, h, e| t.close(n, h, e, conn));
    let sent = sent_by(&b, 0, start);
    assert_eq!(sent.len(), 3);
    assert_eq!(sent[2], (tcp_flags::FIN, 0), "the FIN after the data");
    let fin = *b.sim.net.pool.get(start as u32 + 2);
    assert_eq!(fin.seq, 2 * b.mss);
    // The FIN alone, ahead of the data: acknowledged at once, not taken.
    let mark = b.sim.net.pool.capacity_used();
    b.with(|t, n, h, e| t.on_packet(n, h, e, &fin));
    assert_eq!(sent_by(&b, 1, mark), [(tcp_flags::ACK, 0)]);
    assert!(b.sim.tcp.notes.is_empty());
    // The data, then the FIN: the end of the stream, acknowledged with the FIN.
    assert_eq!(b.data(0) + b.data(1), 2);
    b.sim.tcp.notes.clear();
    let mark = b.sim.net.pool.capacity_used();
    b.with(|t, n, h, e| t.on_packet(n, h, e, &fin));
    assert_eq!(
        sent_by(&b, 1, mark),
        [(tcp_flags::ACK | tcp_flags::FIN_ACKED, 0)]
    );
    assert!(matches!(b.sim.tcp.notes[..], [Note::Closed { conn: c, .. }] if c == conn));
    assert_eq!(b.sim.tcp.retired.connections, 0);
    let fin_ack = *b.sim.net.pool.get(mark as u32);
    b.with(|t, n, h, e| t.on_packet(n, h, e, &fin_ack));
    assert_eq!(b.sender().fin, Fin::Retired);
    assert_eq!(b.sim.tcp.retired.connections, 1);
    // Closed, the connection takes no packet; its slot waits for its segments to leave
    // the NIC (their departures name the slot).
    let mark = b.sim.net.pool.capacity_used();
    b.with(|t, n, h, e| t.on_packet(n, h, e, &fin));
    assert_eq!(
        (b.sim.tcp.stale_packets, sent_by(&b, 1, mark).len()),
        (1, 0)
    );
    assert_ne!(
        b.sim.tcp.open(0, 1, 0, 0),
        conn,
        "not before its segments left"
    );
    b.drain_nic(conn);
    // The slot again, with another port; the old connection's FIN is stale there.
    let old_port = b.sender().sport;
    assert_eq!(b.sim.tcp.open(0, 1, 0, 0), conn);
    assert_ne!(b.sender().sport, old_port);
    let mark = b.sim.net.pool.capacity_used();
    b.with(|t, n, h, e| t.on_packet(n, h, e, &fin));
    assert_eq!(b.sim.tcp.stale_packets, 2);
    assert_eq!(sent_by(&b, 1, mark), []);
}

/// A FIN whose acknowledgement is lost goes again when the retransmission timer expires
/// (a timeout, doubling the timer), even though all data is acknowledged.
#[test]
fn a_lost_fin_goes_again_on_the_timer() {
    let mut b = Bench::new(r#","initial_window":4,"rto_granularity":"0s""#);
    assert_eq!(b.write(1), 1);
    let conn = b.conn;
    b.with(|t, n, h, e| t.close(n, h, e, conn));
    assert_eq!(b.ack(1, &[]), (0, 0));
    let deadline = b.sender().rto_deadline;
    assert_ne!(deadline, NEVER, "the timer still covers the FIN");
    b.sim.ev.advance_to(deadline);
    let mark = b.sim.net.pool.capacity_used();
    b.fire_rto();
    assert_eq!(sent_by(&b, 0, mark), [(tcp_flags::FIN, 0)]);
    assert_eq!(b.sender().timeouts, 1);
    // Armed at time 0 for one RTO; now twice that, from the timeout.
    assert_eq!(b.sender().rto_ps, 2 * deadline);
    assert_eq!(b.sender().rto_deadline, 3 * deadline);
}

/// A bidirectional connection (two linked halves) closes in three packets: the client's
/// FIN carries its pending acknowledgement; the server's application reads the end of
/// the stream and closes, its FIN carrying the acknowledgement of the client's; the
/// client, closed already, acknowledges at once and is not told. Both slots are then free.
#[test]
fn a_request_connection_closes_in_three_packets() {
    let mut b = Bench::new(r#","initial_window":4,"delayed_ack":true"#);
    let (req, resp) = (b.conn, b.sim.tcp.open(1, 0, 0, 0));
    b.sim.tcp.link_reverse(req, resp);
    let start = b.sim.net.pool.capacity_used();
    b.with(|t, n, h, e| t.write(n, h, e, req, 100));
    let (answer, mark) = pass(&mut b, 0, start);
    assert_eq!(answer, [], "the request's ACK waits for the response");
    b.with(|t, n, h, e| t.write(n, h, e, resp, 200));
    let (answer, mark) = pass(&mut b, 1, mark);
    assert_eq!(answer, [], "the response's ACK waits");
    b.sim.tcp.notes.clear();
    b.with(|t, n, h, e| t.close(n, h, e, req));
    let fin = sent_by(&b, 0, mark);
    assert_eq!(
        fin,
        [(tcp_flags::FIN | tcp_flags::ACK | tcp_flags::ACK_REVERSE, 0)]
    );
    let (answer, _) = pass(&mut b, 0, mark);
    assert_eq!(
        answer,
        [],
        "the server's ACK waits for its application's close"
    );
    assert!(matches!(b.sim.tcp.notes[..], [Note::Closed { conn, .. }] if conn == req));
    b.sim.tcp.notes.clear();
    let mark = b.sim.net.pool.capacity_used();
    b.with(|t, n, h, e| t.close(n, h, e, resp));
    let server_fin = sent_by(&b, 1, mark);
    let acks_fin = tcp_flags::ACK | tcp_flags::ACK_REVERSE | tcp_flags::FIN_ACKED;
    assert_eq!(server_fin, [(tcp_flags::FIN | acks_fin, 0)]);
    let (answer, mark) = pass(&mut b, 1, mark);
    assert_eq!(answer, [(tcp_flags::ACK | tcp_flags::FIN_ACKED, 0)]);
    assert!(b.sim.tcp.notes.is_empty(), "the closed side is not told");
    assert_eq!(b.sim.tcp.senders[req as usize].fin, Fin::Acked);
    assert_eq!(b.sim.tcp.retired.connections, 0);
    pass(&mut b, 0, mark);
    assert_eq!(b.sim.tcp.retired.connections, 2);
    b.drain_nic(req);
    b.drain_nic(resp);
    let again = [b.sim.tcp.open(1, 0, 0, 0), b.sim.tcp.open(0, 1, 0, 0)];
    assert_eq!(
        again,
        [req.min(resp), req.max(resp)],
        "the freed slots, smallest first"
    );
}

/// RACK: a segment is lost once one sent after it is delivered and a round trip plus the
/// reordering window (a quarter of the least round trip) has passed since it was sent, so
/// one SACK is enough: the reordering timer fires then and the hole goes again. Without
/// RACK one duplicate ACK repairs nothing until the timeout.
#[test]
fn rack_repairs_a_loss_after_one_sack_and_the_reordering_window() {
    for rack in [true, false] {
        let mut b = Bench::new(&format!(
            r#","initial_window":10,"rto_granularity":"0s","limited_transmit":false,"rack":{rack}"#
        ));
        assert_eq!(b.write(1), 1);
        // A round trip of 100 us: the least seen, and the reordering window 25 us.
        b.sim.ev.advance_to(100 * PS_PER_US);
        b.ack_echo(1, &[], 0);
        assert_eq!(b.write(2), 2, "segments 1 and 2 at 100 us");
        // At 200 us segment 2 is SACKed, segment 1 is missing: it was sent with 2, so it
        // is lost at 100 + 100 + 25 us.
        b.sim.ev.advance_to(200 * PS_PER_US);
        assert_eq!(b.ack(1, &[(2, 3)]), (0, 0), "nothing yet");
        let at = b.sender().rto_deadline;
        if rack {
            assert_eq!(at, 225 * PS_PER_US, "the reordering timer");
        } else {
            assert!(at > PS_PER_MS, "the timeout");
        }
        b.sim.ev.advance_to(225 * PS_PER_US);
        let before = (b.sent(), b.sender().retransmits);
        if rack {
            b.fire_rto();
            assert_eq!(
                (b.sent() - before.0, b.sender().retransmits - before.1),
                (1, 1)
            );
            assert!(b.sender().in_recovery);
            assert_eq!(b.sender().timeouts, 0);
        }
    }
}

/// RACK finds a lost retransmission the same way: once data sent after it is delivered
/// and the window has passed, it goes again (the timeout would have been next).
#[test]
fn rack_resends_a_lost_retransmission() {
    let mut b = Bench::new(r#","initial_window":10,"rto_granularity":"0s","rack":true"#);
    assert_eq!(b.write(1), 1);
    b.sim.ev.advance_to(100 * PS_PER_US);
    b.ack_echo(1, &[], 0);
    assert_eq!(b.write(5), 5, "segments 1-5 at 100 us");
    // Segment 1 lost, 2-5 SACKed by 200 us: DupThresh is met, the window is 0: lost now.
    b.sim.ev.advance_to(200 * PS_PER_US);
    for k in 3..=6 {
        b.ack(1, &[(2, k)]);
    }
    assert_eq!(b.sender().retransmits, 1, "the hole went at once");
    // Its retransmission (sent at 200 us) is lost too; new data sent after it is SACKed.
    assert_eq!(b.write(1), 1, "segment 6");
    b.sim.ev.advance_to(300 * PS_PER_US);
    b.ack(1, &[(2, 7)]);
    assert_eq!(b.sender().retransmits, 2, "lost again: sent again");
}
