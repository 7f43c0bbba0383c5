//! The receiver half: in-order delivery and the out-of-order ranges, delayed and quick
//! ACKs (Linux's quick-ack and interactive modes), ECN echo (RFC 3168 and DCTCP's), and
//! the SACK blocks an ACK carries.

use super::timers::{arm_lazy, lazy_due};
use super::*;

impl TcpPart {
    /// What receiver `conn` acknowledges now (ack point, echoed timestamp, flags), with its
    /// pending-ACK state cleared: the ACK is on its way.
    pub(super) fn take_ack(&mut self, conn: u32) -> (u64, TimePs, u8) {
        let variant = self.params.variant;
        let r = &mut self.receivers[conn];
        let mut flags = tcp_flags::ACK;
        if (variant == Variant::Dctcp && r.ce_state) || (variant != Variant::Dctcp && r.ce_pending)
        {
            flags |= tcp_flags::ECE;
        }
        if r.fin_rcvd {
            flags |= tcp_flags::FIN_ACKED;
        }
        r.pending_segs = 0;
        r.ce_pending = false;
        r.delack_deadline = NEVER;
        (r.rcv_nxt, r.pending_ts, flags)
    }

    pub(super) fn on_data(&mut self, w: &mut impl Wire, pkt: &Packet) {
        let conn = pkt.flow_id;
        let delayed = self.params.delayed_ack;
        let ce = pkt.ecn == ecn::CE;
        let dctcp = self.params.variant == Variant::Dctcp;
        if dctcp && ce != self.receivers[conn].ce_state {
            // DCTCP receiver: when the CE state flips, ACK what is pending with the old
            // state at once, so the sender sees exactly which bytes were marked.
            if self.receivers[conn].pending_segs > 0 {
                self.send_ack(w, conn);
            }
            self.receivers[conn].ce_state = ce;
        }
        let r = &mut self.receivers[conn];
        let (seq, end) = (pkt.seq, pkt.seq + pkt.payload_bytes as u64);
        if ce {
            r.ce_pending = true;
        }
        if r.pending_segs == 0 {
            r.pending_ts = pkt.ts_ps;
        }
        let mut ack_now = !delayed || (ce && !dctcp);
        if self.params.quickack {
            let gap_ps = self.quickack_gap_ps(conn);
            let r = &mut self.receivers[conn];
            ack_now |= quick_ack(r, &self.params, w.now(), seq, gap_ps);
        }
        let r = &mut self.receivers[conn];
        if end <= r.rcv_nxt {
            ack_now = true; // a duplicate: tell the sender at once
        } else if seq <= r.rcv_nxt {
            let filled_hole = !r.ooo.ranges().is_empty();
            r.rcv_nxt = r.ooo.advance_through(end);
            self.notes.push(Note::Delivered {
                app: r.app,
                host: r.host,
                conn,
                total: r.rcv_nxt,
            });
            r.pending_segs += 1;
            if filled_hole || r.pending_segs >= 2 {
                ack_now = true;
            }
        } else {
            r.ooo.insert(seq, end);
            r.last_ooo = seq;
            ack_now = true; // out of order: a duplicate ACK at once
        }
        if ack_now {
            self.send_ack(w, conn);
        } else {
            self.arm_delack(w, conn);
        }
    }

    /// Starts receiver `conn`'s delayed-ACK timer unless it runs already.
    pub(super) fn arm_delack(&mut self, w: &mut impl Wire, conn: u32) {
        let timer = self.timer(conn, TIMER_DELACK);
        let r = &mut self.receivers[conn];
        if r.delack_deadline != NEVER {
            return;
        }
        r.delack_deadline = w.now() + self.params.delayed_ack_ps;
        arm_lazy(w, &mut r.delack_event_at, r.delack_deadline, timer);
    }

    /// How long a pause in `conn`'s data restarts quick-acks: Linux compares it with the
    /// receiving socket's RTO, which is the reverse half's on a bidirectional connection;
    /// a one-way connection's receiver has none, so the floor plus two timer ticks stands
    /// for it (a socket that sends small requests has about that).
    pub(super) fn quickack_gap_ps(&self, conn: u32) -> TimePs {
        match self.reverse_of(conn) {
            crate::net::NONE => self.params.rto_min_ps + 2 * self.params.rto_granularity_ps,
            rev => self.senders[rev].rto_ps,
        }
    }

    /// The receiving application answers on the reverse path: in a real stack the answer
    /// carries the pending ACK, so it goes now instead of after the delayed-ACK timer.
    pub fn ack_now_if_pending(&mut self, w: &mut impl Wire, conn: u32) {
        if self.receivers[conn].pending_segs > 0 {
            self.send_ack(w, conn);
        }
    }

    pub(super) fn send_ack(&mut self, w: &mut impl Wire, conn: u32) {
        let (ack, ts_echo, flags) = self.take_ack(conn);
        let mut pkt = self.control_packet(w, w.now(), conn, true, flags, ts_echo);
        pkt.ack = ack;
        let r = &self.receivers[conn];
        if self.params.sack && !r.ooo.ranges().is_empty() {
            // First the block holding the segment received last, then the highest other.
            let blocks = r.ooo.ranges();
            let first = r.ooo.index_covering(r.last_ooo).unwrap_or(blocks.len() - 1);
            let second = (0..blocks.len()).rev().find(|&i| i != first);
            for (slot, i) in [Some(first), second].into_iter().enumerate() {
                if let Some(i) = i {
                    let (a, b) = blocks[i];
                    pkt.sack[2 * slot] = (a - r.rcv_nxt) as u32;
                    pkt.sack[2 * slot + 1] = (b - a) as u32;
                }
            }
        }
        let host = r.host;
        w.transmit(host, pkt);
    }

    /// Receiver `conn`'s delayed-ACK timer event (lazy, like the retransmission timer's).
    pub(super) fn delack_timer(&mut self, w: &mut impl Wire, conn: u32) {
        let timer = self.timer(conn, TIMER_DELACK);
        let r = &mut self.receivers[conn];
        if !lazy_due(w, &mut r.delack_event_at, r.delack_deadline, timer) {
            return;
        }
        // A delayed ACK no answer took along: Linux leaves interactive mode.
        r.pingpong = false;
        self.send_ack(w, conn);
    }
}

/// Linux's quick-ack mode (2.6.39 to 4.17) for a data segment starting at `seq` reaching
/// receiver `r` at `now`: a burst of immediate ACKs (half the receive window in segments,
/// at most 16; at the connection's first data half of the first window, 5) begins at the
/// connection's first data, after a gap longer than the timeout floor (Linux: longer than
/// the RTO, "the sender failed to restart its window"), and on any segment that is not the
/// next expected one (already held, partly held or out of order: `tcp_data_queue`), which
/// also ends interactive mode; in interactive mode (`Receiver::pingpong`: its side answers
/// within the delayed-ACK timeout) ACKs wait to ride on answers instead. Returns whether
/// this segment is ACKed at once.
pub(super) fn quick_ack(
    r: &mut Receiver,
    p: &TcpParams,
    now: TimePs,
    seq: u64,
    gap_ps: TimePs,
) -> bool {
    let first = r.last_data_ps == NEVER;
    let window_segments = if first {
        u64::from(INITIAL_RCV_WINDOW_SEGMENTS)
    } else {
        p.rcv_window_bytes / u64::from(p.mss_bytes)
    };
    let burst = (window_segments / 2).min(u64::from(MAX_QUICKACKS)) as u32;
    let gap = first || now - r.last_data_ps > gap_ps;
    let unexpected = seq != r.rcv_nxt;
    if gap || unexpected {
        r.quick_acks = r.quick_acks.max(burst);
    }
    if unexpected {
        // Linux enters quick-ack mode, leaving interactive mode.
        r.pingpong = false;
    }
    r.last_data_ps = now;
    if r.quick_acks > 0 && !r.pingpong {
        r.quick_acks -= 1;
        return true;
    }
    false
}

/// Linux's TCP_MAX_QUICKACKS: the most segments one quick-ack burst ACKs at once.
pub(super) const MAX_QUICKACKS: u32 = 16;

/// Linux's first receive window (TCP_DEFAULT_INIT_RCVWND, from 2.6.39): 10 segments, so
/// the quick-ack burst at a connection's start covers half of them.
pub(super) const INITIAL_RCV_WINDOW_SEGMENTS: u32 = 10;

#[cfg(test)]
mod tests {
    use super::super::testbed::*;
    use super::super::*;
    use crate::engine::{PS_PER_MS, PS_PER_US};

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
        b.advance_to(201 * PS_PER_MS);
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
        let rev = b.open_reverse();
        assert_eq!(b.data(0), 1, "the first segment: a quick ACK");
        // Host 1 answers at once: the answer carries the ACK of nothing new, and the
        // exchange is interactive from now on.
        b.write_bytes(rev, 100);
        assert!(b.tcp.receivers[b.conn].pingpong);
        b.advance_to(PS_PER_US);
        assert_eq!(b.data(1), 0, "interactive: the ACK waits for an answer");
        assert_eq!(b.data(1), 1, "a duplicate is ACKed at once");
        assert!(
            !b.tcp.receivers[b.conn].pingpong,
            "and ends interactive mode"
        );
        assert_eq!(b.data(2), 1, "quick-acks again");
    }

    /// Delayed ACKs (RFC 1122, 5681): every second full segment is acknowledged at once, a
    /// lone one when the delayed-ACK timer expires.
    #[test]
    fn delayed_acks_go_every_second_segment_or_on_the_timer() {
        let mut b =
            Bench::new(r#","delayed_ack":true,"quickack":false,"delayed_ack_timeout":"40ms""#);
        assert_eq!(b.data(0), 0);
        assert_eq!(b.data(1), 1);
        assert_eq!(b.wire.sent.last().unwrap().ack, 2 * b.mss);
        assert_eq!(b.data(2), 0);
        let (at, ev) = *b.wire.timers.last().unwrap();
        assert_eq!(
            (at, ev),
            (
                40 * PS_PER_MS,
                TcpEvent::Timer {
                    conn: b.conn,
                    which: TIMER_DELACK,
                    part: 0
                }
            )
        );
        b.advance_to(at);
        let before = b.sent();
        b.fire(b.conn, TIMER_DELACK);
        assert_eq!(b.sent() - before, 1);
        assert_eq!(b.wire.sent.last().unwrap().ack, 3 * b.mss);
    }

    /// Out-of-order data is acknowledged at once (a duplicate ACK) with SACK blocks: first
    /// the block of the segment that arrived last, then the highest other (RFC 2018); the
    /// segment that fills the hole moves the ACK over everything held and is delivered.
    #[test]
    fn out_of_order_data_gets_sack_blocks_and_a_filled_hole_delivers_all() {
        let mut b = Bench::new("");
        let mss = b.mss as u32;
        assert_eq!(b.data(0), 1);
        b.data(2);
        let p = *b.wire.sent.last().unwrap();
        assert_eq!((p.ack, p.sack), (b.mss, [mss, mss, 0, 0]));
        b.data(4);
        let p = *b.wire.sent.last().unwrap();
        assert_eq!(p.sack, [3 * mss, mss, mss, mss], "the newest block first");
        b.tcp.notes.clear();
        b.data(1);
        let p = *b.wire.sent.last().unwrap();
        assert_eq!((p.ack, p.sack), (3 * b.mss, [mss, mss, 0, 0]));
        assert!(matches!(b.tcp.notes[..], [Note::Delivered { total, .. }] if total == 3 * b.mss));
    }

    /// ECN at the receiver: with RFC 3168 a CE mark is acknowledged at once with ECE; DCTCP's
    /// receiver echoes the CE state of the data, and acknowledges what it holds at once when
    /// the state changes, so that the sender can count the marked bytes exactly.
    #[test]
    fn congestion_marks_are_echoed() {
        let ce = |b: &mut Bench, seg: u64, marked: bool| {
            let mut p = b.data_packet(seg);
            p.ecn = if marked {
                crate::packet::ecn::CE
            } else {
                crate::packet::ecn::ECT0
            };
            let n = b.deliver(&p);
            let echo = b
                .wire
                .sent
                .last()
                .map(|a| a.tcp_flags & tcp_flags::ECE != 0);
            (n, echo.unwrap_or(false))
        };
        let mut b =
            Bench::new(r#","delayed_ack":true,"quickack":false,"ecn":true,"variant":"newreno""#);
        assert_eq!(ce(&mut b, 0, true), (1, true), "at once, echoed");
        assert_eq!(ce(&mut b, 1, false).0, 0);
        assert_eq!(ce(&mut b, 2, false), (1, false), "the echo was sent once");
        let mut b = Bench::new(r#","delayed_ack":true,"quickack":false,"variant":"dctcp""#);
        assert_eq!(ce(&mut b, 0, false).0, 0);
        assert_eq!(
            ce(&mut b, 1, true),
            (1, false),
            "the state changed: segment 0's ACK, unmarked"
        );
        assert_eq!(b.wire.sent.last().unwrap().ack, b.mss);
        assert_eq!(
            ce(&mut b, 2, true),
            (1, true),
            "every second segment, marked"
        );
    }
}
