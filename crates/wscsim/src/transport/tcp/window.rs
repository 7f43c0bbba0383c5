//! The sender's window outside the congestion-control rules: what a timeout does to the
//! timer, RFC 6675's pipe, the window's course through SACK recovery (PRR, rate halving)
//! and its end, and lost retransmissions.

use super::*;

impl Sender {
    /// A timeout doubles the retransmission timer, up to `rto_max_ps`.
    pub(super) fn back_off(&mut self, rto_max_ps: TimePs) {
        self.rto_ps = (self.rto_ps * 2).min(rto_max_ps);
    }

    /// Lost retransmissions: data sent after a retransmission has been SACKed while the
    /// retransmitted bytes are still missing (the path never reorders). They move from
    /// `rexmits` to `relost`; retransmissions no longer missing are forgotten.
    pub(super) fn find_lost_retransmissions(&mut self) {
        let top = self.sacked.highest_end();
        let (una, sacked) = (self.snd_una, &self.sacked);
        let mut i = 0;
        while i < self.rexmits.len() {
            let (a, b, marker) = self.rexmits[i];
            let missing = b > una && !sacked.covers(a.max(una), b);
            if !missing {
                self.rexmits.swap_remove(i);
            } else if top > marker {
                self.relost.push((a.max(una), b));
                self.rexmits.swap_remove(i);
            } else {
                i += 1;
            }
        }
    }

    /// RFC 6675's pipe (bytes the sender believes are in the network: sent, neither
    /// acknowledged, SACKed nor lost), with the scoreboard's lost boundary and where the
    /// search for holes to retransmit starts.
    pub(super) fn pipe(&self, mss: u64) -> (u64, u64, u64) {
        let lost_end = match &self.rack {
            None => self.sacked.lost_boundary(mss, DUP_THRESH),
            Some(r) => r.lost_end,
        };
        let from = self.high_rxt.max(self.snd_una);
        // Retransmissions lost again are not in the network either.
        let relost_bytes: u64 = self
            .relost
            .iter()
            .map(|&(a, b)| self.sacked.unsacked_in(a.max(self.snd_una).min(b), b))
            .sum();
        let pipe = ((self.snd_max - self.snd_una)
            - self.sacked.bytes_in(self.snd_una, self.snd_max)
            - self.sacked.unsacked_in(from, lost_end.max(from)))
        .saturating_sub(relost_bytes);
        (pipe, lost_end, from)
    }

    /// The window for an ACK in recovery that delivered `delivered` bytes (newly
    /// acknowledged or SACKed): PRR's (RFC 6937, with slow-start reduction bound) or rate
    /// halving's; RFC 6675 keeps ssthresh.
    pub(super) fn recovery_window(&mut self, mode: Recovery, delivered: u64, mss: u64) {
        if mode == Recovery::Rfc6675 {
            return;
        }
        let pipe = self.pipe(mss).0;
        match mode {
            Recovery::Rfc6675 => {}
            Recovery::Prr => {
                self.prr_delivered += delivered;
                let ssthresh = self.ssthresh;
                let sndcnt = if pipe as f64 > ssthresh {
                    // Rounded up to whole segments, as Linux counts (in packets).
                    let share =
                        self.prr_delivered as f64 * ssthresh / self.recover_fs.max(1) as f64;
                    let due = (share / mss as f64).ceil() * mss as f64;
                    (due - self.prr_out as f64).max(0.0)
                } else {
                    let limit = self
                        .prr_delivered
                        .saturating_sub(self.prr_out)
                        .max(delivered)
                        + mss;
                    (ssthresh - pipe as f64).min(limit as f64).max(0.0)
                };
                self.cwnd = pipe as f64 + sndcnt;
            }
            Recovery::RateHalving => {
                // Only ACKs that make progress move the window (`tcp_cwnd_down`'s
                // FLAG_ANY_PROGRESS), both the halving and the cap at the flight.
                if delivered > 0 {
                    if self.halving_odd && self.cwnd > self.ssthresh {
                        self.cwnd = (self.cwnd - mss as f64).max(self.ssthresh);
                    }
                    self.halving_odd = !self.halving_odd;
                    self.cwnd = self.cwnd.min((pipe + mss) as f64);
                }
            }
        }
    }

    /// Recovery ends (everything sent before it is acknowledged): the window is ssthresh
    /// (rate halving: at most ssthresh, as Linux's `tcp_complete_cwr`).
    pub(super) fn leave_recovery(&mut self, mode: Recovery) {
        self.in_recovery = false;
        self.cwnd = match mode {
            Recovery::RateHalving => self.cwnd.min(self.ssthresh),
            _ => self.ssthresh,
        };
        self.rexmits.clear();
        self.relost.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::super::testbed::*;
    use super::super::*;
    use crate::engine::PS_PER_MS;

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

    /// RFC 6675's pipe: what was sent less what is acknowledged, SACKed, or lost (a hole with
    /// DupThresh segments' worth SACKed above it) and not yet retransmitted.
    #[test]
    fn pipe_leaves_out_what_is_sacked_and_what_is_lost() {
        let mut b = Bench::new(r#","initial_window":10,"limited_transmit":false"#);
        assert_eq!(b.write(10), 10);
        b.ack(0, &[(2, 4)]);
        let mss = b.mss;
        assert_eq!(
            b.sender().pipe(mss).0,
            8 * mss,
            "two SACKed, nothing lost yet"
        );
        // A third segment SACKed above segments 0 and 1 makes both lost.
        let conn = b.conn;
        b.tcp.senders[conn].sacked.insert(4 * mss, 5 * mss);
        let (pipe, lost_end, from) = b.sender().pipe(mss);
        assert_eq!((pipe, lost_end, from), (5 * mss, 2 * mss, 0));
        // Segment 0 retransmitted: in the network again.
        b.tcp.senders[conn].high_rxt = mss;
        assert_eq!(b.sender().pipe(mss).0, 6 * mss);
    }

    /// Each timeout doubles the retransmission timer, up to its ceiling.
    #[test]
    fn back_off_doubles_the_timer_up_to_the_ceiling() {
        let mut b = Bench::new(r#","rto_min":"1ms","rto_max":"5ms","initial_rto":"1ms""#);
        let conn = b.conn;
        let s = &mut b.tcp.senders[conn];
        let rtos: Vec<TimePs> = (0..4)
            .map(|_| {
                s.back_off(5 * PS_PER_MS);
                s.rto_ps
            })
            .collect();
        assert_eq!(rtos, [2, 4, 5, 5].map(|ms| ms * PS_PER_MS));
    }
}
