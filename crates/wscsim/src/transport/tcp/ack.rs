//! A sender's answer to an acknowledgement: an RTT sample and the RTO (RFC 6298), the
//! window's growth, and NewReno's fast retransmit and recovery on duplicate ACKs when SACK
//! is off (recovery.rs has SACK's).

use super::*;

impl TcpPart {
    /// The acknowledgement a segment of `pkt.flow_id` carries for the reverse connection,
    /// taken first, as TCP processes a segment. Data never counts as a duplicate ACK (RFC
    /// 5681), so only new acknowledgements are taken.
    pub(super) fn reverse_ack(&mut self, w: &mut impl Wire, pkt: &Packet) {
        let rev = self.reverse_of(pkt.flow_id);
        if pkt.ack > self.senders[rev].snd_una {
            let ack = Packet {
                flow_id: rev,
                payload_bytes: 0,
                sack: [0; 4],
                ..*pkt
            };
            self.on_ack(w, &ack);
        }
        if pkt.tcp_flags & tcp_flags::FIN_ACKED != 0 {
            self.fin_acked(rev, pkt.ack);
        }
    }

    pub(super) fn on_ack(&mut self, w: &mut impl Wire, pkt: &Packet) {
        self.on_ack_untraced(w, pkt);
        if self.senders[pkt.flow_id].traced {
            self.record_trace(pkt.flow_id, w.now());
        }
    }

    /// Records a traced connection's window, threshold, smoothed RTT and bytes in flight.
    #[cold]
    pub(super) fn record_trace(&mut self, conn: u32, now: TimePs) {
        let s = &self.senders[conn];
        let sample = CwndSample {
            time_ps: now,
            conn,
            cwnd_bytes: s.cwnd,
            ssthresh_bytes: s.ssthresh,
            srtt_ps: s.srtt_ps,
            in_flight_bytes: s.snd_max - s.snd_una,
        };
        self.trace.push(sample);
    }

    pub(super) fn on_ack_untraced(&mut self, w: &mut impl Wire, pkt: &Packet) {
        if self.params.sack {
            return self.on_ack_sack(w, pkt);
        }
        let conn = pkt.flow_id;
        let now = w.now();
        let mss = self.params.mss_bytes as f64;
        let ack = pkt.ack;
        if ack > self.senders[conn].snd_una {
            let (acked, ece) = self.advance_una(conn, now, pkt);
            let s = &mut self.senders[conn];
            if s.in_recovery {
                if ack >= s.recover {
                    s.in_recovery = false;
                    s.cwnd = s.ssthresh;
                } else {
                    // Partial ACK: the next hole is lost too; retransmit it and deflate.
                    s.cwnd = (s.cwnd - acked + mss).max(mss);
                    s.dupacks = 0;
                    self.retransmit_first(w, conn);
                    self.arm_rto(w, conn);
                    self.send_more(w, conn);
                    return;
                }
            } else {
                s.grow_window(acked, ece, mss, now);
            }
            s.dupacks = 0;
            self.rearm_rto(w, conn);
            self.send_more(w, conn);
        } else if ack == self.senders[conn].snd_una && self.senders[conn].snd_max > ack {
            let s = &mut self.senders[conn];
            s.dupacks += 1;
            if s.dupacks == 3 && !s.in_recovery && (ack > s.recover || s.recover == 0) {
                let flight = (s.snd_max - s.snd_una) as f64;
                s.ssthresh = s.cc.on_loss(s.cwnd, flight, mss);
                s.cwnd = s.ssthresh + 3.0 * mss;
                s.in_recovery = true;
                s.recover = s.snd_max;
                self.retransmit_first(w, conn);
                self.arm_rto(w, conn);
            } else if s.in_recovery {
                s.cwnd += mss;
                self.send_more(w, conn);
            } else if self.params.limited_transmit && s.dupacks <= 2 {
                // RFC 3042: each of the first two duplicate ACKs lets one new segment out.
                let extra = u64::from(s.dupacks) * self.params.mss_bytes as u64;
                self.send_more_beyond(w, conn, extra);
            }
        }
    }

    /// An ACK of new data (NewReno and SACK alike): an RTT sample, then snd_una moves up to
    /// it. Returns the bytes newly acknowledged and whether the ACK echoes congestion (ECE).
    pub(super) fn advance_una(&mut self, conn: u32, now: TimePs, pkt: &Packet) -> (f64, bool) {
        self.rtt_sample(conn, now, pkt.ts_echo_ps);
        let s = &mut self.senders[conn];
        let acked = (pkt.ack - s.snd_una) as f64;
        s.snd_una = pkt.ack;
        s.snd_nxt = s.snd_nxt.max(pkt.ack);
        (acked, pkt.tcp_flags & tcp_flags::ECE != 0)
    }

    /// Takes an RTT sample from the echoed timestamp and updates the RTO (RFC 6298).
    pub(super) fn rtt_sample(&mut self, conn: u32, now: TimePs, ts_echo_ps: TimePs) {
        if ts_echo_ps == NEVER || self.params.variant == Variant::PFabric {
            return;
        }
        let (rto_min, rto_max) = (self.params.rto_min_ps, self.params.rto_max_ps);
        let r = self.measured_rtt(self.senders[conn].host, ts_echo_ps, now);
        let linux = self.params.linux_rto;
        let s = &mut self.senders[conn];
        s.rtt.add(now - ts_echo_ps);
        if s.srtt_ps == 0 {
            s.srtt_ps = r;
            s.rttvar_ps = r / 2;
        } else {
            let diff = s.srtt_ps.abs_diff(r);
            s.rttvar_ps = (3 * s.rttvar_ps + diff) / 4;
            s.srtt_ps = (7 * s.srtt_ps + r) / 8;
        }
        s.rto_ps = if linux {
            // Linux keeps its variance term at least rto_min (`tcp_rtt_estimator`).
            (s.srtt_ps + (4 * s.rttvar_ps).max(rto_min)).min(rto_max)
        } else {
            (s.srtt_ps + (4 * s.rttvar_ps).max(1)).clamp(rto_min, rto_max)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::super::testbed::*;
    use crate::engine::{PS_PER_MS, PS_PER_US};

    /// The same without SACK (NewReno's duplicate ACKs).
    #[test]
    fn limited_transmit_works_without_sack() {
        let mut b = Bench::new(r#","initial_window":4,"limited_transmit":true,"sack":false"#);
        assert_eq!(b.write(20), 4);
        assert_eq!(b.ack(0, &[]), (1, 0));
        assert_eq!(b.ack(0, &[]), (1, 0));
        assert_eq!(b.ack(0, &[]).1, 1);
    }

    /// Linux's timeout is srtt + max(4 rttvar, rto_min), RFC 6298's max(rto_min, srtt + 4
    /// rttvar): after one 100 us RTT sample, 200.1 ms against 200 ms.
    #[test]
    fn linux_timeout_adds_the_floor_to_the_smoothed_rtt() {
        for (formula, expect_us) in [("linux", 200_100), ("rfc6298", 200_000)] {
            let mut b = Bench::new(&format!(r#","rto_formula":"{formula}""#));
            b.write(1);
            b.advance_to(100 * PS_PER_US);
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
        b.advance_to(100 * PS_PER_US);
        b.ack_echo(1, &[], 0);
        assert_eq!(b.sender().srtt_ps, 4 * PS_PER_MS);
        // The statistics keep the true RTT.
        assert_eq!(b.sender().rtt.max_ps, 100 * PS_PER_US);
    }

    /// Slow start (RFC 5681): each ACK grows the window by what it acknowledges, so an ACK of
    /// one segment lets two out and the window doubles every round trip.
    #[test]
    fn slow_start_sends_two_segments_for_each_one_acknowledged() {
        let mut b = Bench::new(r#","initial_window":2"#);
        assert_eq!(b.write(40), 2);
        for k in 1..=6 {
            assert_eq!(b.ack(k, &[]), (2, 0), "ACK {k}");
            assert_eq!(b.sender().cwnd, (2 + k) as f64 * b.mss as f64);
        }
    }

    /// RFC 6298: the first sample R sets SRTT = R and RTTVAR = R / 2; later ones move them
    /// by 1/8 and 1/4; the timeout is SRTT + 4 RTTVAR, at least the floor.
    #[test]
    fn rtt_samples_set_the_timeout_as_rfc_6298_says() {
        let mut b = Bench::new(r#","rto_min":"100us","rto_formula":"rfc6298""#);
        assert_eq!(b.write(2), 2);
        b.advance_us(300);
        b.ack_echo(1, &[], 0);
        let s = b.sender();
        assert_eq!((s.srtt_ps, s.rttvar_ps), (300 * PS_PER_US, 150 * PS_PER_US));
        assert_eq!(s.rto_ps, 900 * PS_PER_US);
        // A second sample of 100 us: RTTVAR = 3/4 150 + 1/4 |300 - 100|, SRTT = 7/8 300 + 1/8 100.
        let echo = b.wire.now_ps;
        b.advance_us(100);
        b.ack_echo(2, &[], echo);
        let s = b.sender();
        assert_eq!((s.srtt_ps, s.rttvar_ps), (275 * PS_PER_US, 162_500_000));
        assert_eq!(s.rto_ps, 925 * PS_PER_US);
    }

    /// NewReno without SACK (RFC 6582): the third duplicate ACK retransmits the first
    /// segment and sets the window to half the flight plus three segments; each further
    /// duplicate inflates it by one; a partial ACK retransmits the next hole and deflates the
    /// window by what it acknowledged; the ACK of everything sent before recovery ends it
    /// with the window at ssthresh.
    #[test]
    fn newreno_repairs_one_hole_per_round_trip() {
        let mut b = Bench::new(
            r#","sack":false,"variant":"newreno","initial_window":10,"limited_transmit":false"#,
        );
        assert_eq!(b.write(40), 10);
        assert_eq!(b.ack(0, &[]), (0, 0));
        assert_eq!(b.ack(0, &[]), (0, 0));
        let mark = b.mark();
        assert_eq!(b.ack(0, &[]), (1, 1), "the fast retransmission");
        assert_eq!(b.data_sent(mark), [0]);
        let mss = b.mss as f64;
        assert_eq!(
            (b.sender().ssthresh, b.sender().cwnd),
            (5.0 * mss, 8.0 * mss)
        );
        b.ack(0, &[]);
        assert_eq!(b.sender().cwnd, 9.0 * mss, "inflated by one segment");
        // Segment 5 was lost too: the ACK stops there.
        let mark = b.mark();
        assert_eq!(b.ack(5, &[]), (1, 1));
        assert_eq!(b.data_sent(mark), [5], "the next hole, at once");
        assert_eq!(b.sender().cwnd, 5.0 * mss, "9 - 5 acknowledged + 1");
        assert!(b.sender().in_recovery);
        assert_eq!(
            b.ack(10, &[]),
            (5, 0),
            "recovery over: a window of ssthresh"
        );
        assert!(!b.sender().in_recovery);
        assert_eq!(b.sender().cwnd, 5.0 * mss);
    }

    /// RFC 3168: an ACK echoing congestion (ECE) halves the window like a loss, without a
    /// retransmission, and only once per window of data.
    #[test]
    fn an_ecn_echo_halves_the_window_once_per_window() {
        let mut b = Bench::new(r#","ecn":true,"variant":"newreno","initial_window":10"#);
        assert_eq!(b.write(40), 10);
        let mss = b.mss as f64;
        b.ack_ece(1);
        // The flight was 10 segments: ssthresh and the window 5.
        assert_eq!(
            (b.sender().cwnd, b.sender().ssthresh),
            (5.0 * mss, 5.0 * mss)
        );
        b.ack_ece(2);
        assert_eq!(
            b.sender().ssthresh,
            5.0 * mss,
            "the same window: no second cut"
        );
        assert!(b.sender().cwnd > 5.0 * mss, "congestion avoidance grows it");
        assert_eq!((b.sender().retransmits, b.sender().timeouts), (0, 0));
    }
}
