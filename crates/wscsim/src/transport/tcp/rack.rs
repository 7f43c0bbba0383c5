//! RACK (RFC 8985; Linux 4.4 and later), an option with SACK (`TcpParams::rack`): loss is
//! detected by time, not by counting. Each range sent and not yet delivered keeps when it
//! was last sent; every ACK finds the most recent send time among what it delivered (a
//! retransmission only if its round trip is not shorter than the least seen, which would
//! mean the ACK was for an earlier copy) and that round trip. A range sent before it is
//! lost once that round trip plus the reordering window has passed since its own send;
//! until then the reordering timer waits for it. The window is a quarter of the least
//! round trip, and 0 in recovery or once DupThresh segments are SACKed (the paths never
//! reorder, so no reordering is ever seen to widen it).
//!
//! Simplified: lost ranges of first transmissions are the unSACKed bytes below the highest
//! lost range's end (the scoreboard's view of loss), lost retransmissions go to the list
//! of those to send again; no D-SACK, so the window never adapts.

use super::*;

/// RACK's state of one sender.
#[derive(Clone, Debug)]
pub struct Rack {
    /// Ranges sent and not yet delivered: (start, end, last sent, retransmitted), sorted.
    xmits: Vec<(u64, u64, TimePs, bool)>,
    /// The most recent send time among delivered ranges (NEVER: none yet), and that
    /// range's end.
    xmit_ps: TimePs,
    end: u64,
    /// The round trip that delivery gave, and the least seen.
    rtt_ps: TimePs,
    min_rtt_ps: TimePs,
    /// Every unSACKed byte below this is lost.
    pub(super) lost_end: u64,
    /// The highest byte sent so far.
    high_sent: u64,
    /// When the reordering window of the next range ends (NEVER: none waits).
    pub(super) deadline_ps: TimePs,
    /// The retransmission timer is armed for that deadline.
    pub(super) timer_armed: bool,
}

impl Default for Rack {
    fn default() -> Self {
        Rack {
            xmits: Vec::new(),
            xmit_ps: NEVER,
            end: 0,
            rtt_ps: 0,
            min_rtt_ps: 0,
            lost_end: 0,
            high_sent: 0,
            deadline_ps: NEVER,
            timer_armed: false,
        }
    }
}

impl Rack {
    /// [a, b) was sent at `now` (a retransmission if below what was sent before).
    pub(super) fn sent(&mut self, a: u64, b: u64, now: TimePs) {
        let again = a < self.high_sent;
        self.high_sent = self.high_sent.max(b);
        let x = &mut self.xmits;
        if x.last().is_none_or(|l| l.1 <= a) {
            x.push((a, b, now, again));
            return;
        }
        // Overwrite what [a, b) covers, keeping the parts of ranges outside it.
        let mut kept = Vec::with_capacity(x.len() + 2);
        for &(s, e, t, r) in x.iter() {
            if e <= a || s >= b {
                kept.push((s, e, t, r));
                continue;
            }
            if s < a {
                kept.push((s, a, t, r));
            }
            if e > b {
                kept.push((b, e, t, r));
            }
        }
        let at = kept.partition_point(|r| r.0 < a);
        kept.insert(at, (a, b, now, again));
        *x = kept;
    }
}

impl TcpPart {
    /// RACK on an ACK (after the scoreboard and snd_una took it): the delivered ranges
    /// update the most recent delivery, then ranges sent before it are lost or wait.
    pub(super) fn rack_detect(&mut self, conn: u32, now: TimePs, _ts_echo_ps: TimePs) {
        let mss = u64::from(self.params.mss_bytes);
        let s = &mut self.senders[conn];
        let (una, sacked) = (s.snd_una, &s.sacked);
        let Some(r) = s.rack.as_deref_mut() else {
            return;
        };
        r.xmits.retain(|&(a, b, t, again)| {
            let delivered = b <= una || sacked.unsacked_in(a.max(una), b) == 0;
            if delivered {
                let rtt = now - t;
                let ambiguous = again && r.min_rtt_ps > 0 && rtt < r.min_rtt_ps;
                let later = r.xmit_ps == NEVER || t > r.xmit_ps || (t == r.xmit_ps && b > r.end);
                if !ambiguous && later {
                    (r.xmit_ps, r.end, r.rtt_ps) = (t, b, rtt);
                    r.min_rtt_ps = if r.min_rtt_ps == 0 {
                        rtt
                    } else {
                        r.min_rtt_ps.min(rtt)
                    };
                }
            }
            !delivered
        });
        let sacked_segments = s.sacked.bytes_in(una, s.snd_max) / mss;
        let reo_wnd = if s.in_recovery || sacked_segments >= DUP_THRESH {
            0
        } else {
            (r.min_rtt_ps / 4).min(s.srtt_ps.max(1))
        };
        r.deadline_ps = NEVER;
        if r.xmit_ps == NEVER {
            return;
        }
        for &(a, b, t, again) in &r.xmits {
            let before = t < r.xmit_ps || (t == r.xmit_ps && b <= r.end);
            if !before {
                continue;
            }
            let due = t + r.rtt_ps + reo_wnd;
            if due > now {
                r.deadline_ps = r.deadline_ps.min(due);
            } else if again {
                // Once: the same range may come back with a higher start as snd_una moves.
                let a = a.max(una);
                if !s.relost.iter().any(|&(x, y)| x < b && a < y) {
                    s.relost.push((a, b));
                }
            } else {
                r.lost_end = r.lost_end.max(b);
            }
        }
    }

    /// The reordering timer expired: what it waited for is lost now; recovery starts or
    /// goes on.
    pub(super) fn rack_timeout(&mut self, w: &mut impl Wire, conn: u32) {
        if let Some(r) = &mut self.senders[conn].rack {
            r.timer_armed = false;
        }
        self.rack_detect(conn, w.now(), NEVER);
        let entered = self.enter_recovery_if_due(conn);
        if self.senders[conn].in_recovery {
            self.recovery_send(w, conn, entered, 0);
        }
        let s = &self.senders[conn];
        if s.rto_deadline == NEVER && (s.snd_max > s.snd_una || s.fin == Fin::Sent) {
            self.arm_rto(w, conn);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testbed::*;
    use crate::engine::{PS_PER_MS, PS_PER_US};

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
            b.advance_to(100 * PS_PER_US);
            b.ack_echo(1, &[], 0);
            assert_eq!(b.write(2), 2, "segments 1 and 2 at 100 us");
            // At 200 us segment 2 is SACKed, segment 1 is missing: it was sent with 2, so it
            // is lost at 100 + 100 + 25 us.
            b.advance_to(200 * PS_PER_US);
            assert_eq!(b.ack(1, &[(2, 3)]), (0, 0), "nothing yet");
            let at = b.sender().rto_deadline;
            if rack {
                assert_eq!(at, 225 * PS_PER_US, "the reordering timer");
            } else {
                assert!(at > PS_PER_MS, "the timeout");
            }
            b.advance_to(225 * PS_PER_US);
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
        b.advance_to(100 * PS_PER_US);
        b.ack_echo(1, &[], 0);
        assert_eq!(b.write(5), 5, "segments 1-5 at 100 us");
        // Segment 1 lost, 2-5 SACKed by 200 us: DupThresh is met, the window is 0: lost now.
        b.advance_to(200 * PS_PER_US);
        for k in 3..=6 {
            b.ack(1, &[(2, k)]);
        }
        assert_eq!(b.sender().retransmits, 1, "the hole went at once");
        // Its retransmission (sent at 200 us) is lost too; new data sent after it is SACKed.
        assert_eq!(b.write(1), 1, "segment 6");
        b.advance_to(300 * PS_PER_US);
        b.ack(1, &[(2, 7)]);
        assert_eq!(b.sender().retransmits, 2, "lost again: sent again");
    }
}
