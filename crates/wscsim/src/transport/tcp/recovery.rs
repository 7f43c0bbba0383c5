//! SACK-based loss recovery (RFC 6675): the scoreboard marks what the receiver holds, a
//! hole is lost once DupThresh segments' worth above it are SACKed (or RACK says so), and
//! in recovery the sender keeps its pipe under the window, lost holes first, then new
//! data.

use super::*;

impl TcpPart {
    /// ACK processing with SACK (RFC 6675, simplified): the scoreboard marks what the
    /// receiver holds; a hole is lost once DupThresh segments' worth above it are SACKed;
    /// in recovery the sender keeps `pipe` (its estimate of bytes in the network) under
    /// cwnd, retransmitting lost holes first, then new data; the window's course through
    /// recovery is `TcpParams::recovery`'s.
    pub(super) fn on_ack_sack(&mut self, w: &mut impl Wire, pkt: &Packet) {
        let conn = pkt.flow_id;
        let now = w.now();
        let mss = self.params.mss_bytes as f64;
        let ack = pkt.ack;
        // What the receiver held before this ACK (for what it delivers: PRR, rate halving).
        let counts_delivery = self.params.recovery != Recovery::Rfc6675;
        let held_before = {
            let s = &self.senders[conn];
            counts_delivery.then(|| s.snd_una + s.sacked.bytes_in(s.snd_una, s.snd_max))
        };
        {
            let s = &mut self.senders[conn];
            for b in pkt.sack.chunks_exact(2) {
                if b[1] > 0 {
                    let start = ack + b[0] as u64;
                    s.sacked.insert(start, start + b[1] as u64);
                }
            }
        }
        let mut duplicate = false;
        if ack > self.senders[conn].snd_una {
            let (acked, ece) = self.advance_una(conn, now, pkt);
            let s = &mut self.senders[conn];
            s.high_rxt = s.high_rxt.max(ack);
            s.sacked.prune_below(ack);
            if s.in_recovery {
                if ack >= s.recover {
                    s.leave_recovery(self.params.recovery);
                }
            } else {
                s.grow_window(acked, ece, mss, now);
            }
            s.dupacks = 0;
            self.rearm_rto(w, conn);
        } else {
            let s = &mut self.senders[conn];
            if ack == s.snd_una && s.snd_max > s.snd_una {
                s.dupacks += 1;
                duplicate = true;
            }
        }
        let delivered = held_before.map_or(0, |before| {
            let s = &self.senders[conn];
            (s.snd_una + s.sacked.bytes_in(s.snd_una, s.snd_max)).saturating_sub(before)
        });
        if self.senders[conn].rack.is_some() {
            self.rack_detect(conn, now, pkt.ts_echo_ps);
        } else {
            self.senders[conn].find_lost_retransmissions();
        }
        let entered = self.enter_recovery_if_due(conn);
        let s = &mut self.senders[conn];
        if s.in_recovery {
            self.recovery_send(w, conn, entered, delivered);
        } else if duplicate && self.params.limited_transmit && s.dupacks <= 2 {
            // RFC 3042: each of the first two duplicate ACKs lets one new segment out.
            let extra = u64::from(s.dupacks) * self.params.mss_bytes as u64;
            self.send_more_beyond(w, conn, extra);
        } else {
            self.send_more(w, conn);
        }
        let s = &self.senders[conn];
        if s.rack.as_ref().is_some_and(|r| r.deadline_ps != NEVER) && s.snd_max > s.snd_una {
            self.arm_rto(w, conn); // the reordering timer, if it comes first
        }
    }

    /// In SACK recovery, after an ACK that delivered `delivered` bytes or a RACK timer: the
    /// window first (the fast retransmission counts against it), then the retransmission
    /// that starts recovery (when it just `entered`) goes whatever it says, then what the
    /// window leaves room for.
    pub(super) fn recovery_send(
        &mut self,
        w: &mut impl Wire,
        conn: u32,
        entered: bool,
        delivered: u64,
    ) {
        let mss = u64::from(self.params.mss_bytes);
        self.senders[conn].recovery_window(self.params.recovery, delivered, mss);
        if entered {
            self.fast_retransmit(w, conn);
        }
        self.sack_recovery_send(w, conn);
    }

    /// Enters SACK recovery once DupThresh duplicate ACKs came or a hole is lost by the
    /// scoreboard (and the last recovery's data is acknowledged): the window threshold
    /// falls. Returns whether it did.
    pub(super) fn enter_recovery_if_due(&mut self, conn: u32) -> bool {
        let mss = self.params.mss_bytes as f64;
        let mss_u = self.params.mss_bytes as u64;
        let s = &mut self.senders[conn];
        let after_recover = s.snd_una > s.recover || s.recover == 0;
        let lost_found = match &s.rack {
            // RACK: once it has found a segment lost (DupThresh plays no part).
            Some(r) => r.lost_end > s.snd_una || !s.relost.is_empty(),
            None => {
                s.dupacks >= DUP_THRESH as u32
                    || s.sacked.lost_boundary(mss_u, DUP_THRESH) > s.snd_una
            }
        };
        if s.in_recovery || s.snd_max <= s.snd_una || !after_recover || !lost_found {
            return false;
        }
        let flight = (s.snd_max - s.snd_una) as f64;
        s.ssthresh = s.cc.on_loss(s.cwnd, flight, mss);
        match self.params.recovery {
            Recovery::Rfc6675 => s.cwnd = s.ssthresh,
            Recovery::Prr => {
                (s.prr_delivered, s.prr_out) = (0, 0);
                s.recover_fs = s.snd_max - s.snd_una;
            }
            Recovery::RateHalving => s.halving_odd = false,
        }
        s.in_recovery = true;
        s.recover = s.snd_max;
        true
    }

    /// The first hole goes again at once as recovery starts (RFC 6675 step 4.3).
    pub(super) fn fast_retransmit(&mut self, w: &mut impl Wire, conn: u32) {
        let s = &self.senders[conn];
        // With RACK a range retransmitted before goes again only once RACK finds it lost
        // again (Linux keeps its retransmitted mark): the first hole above them.
        let from = match &s.rack {
            None => s.snd_una,
            Some(_) => s.high_rxt.max(s.snd_una),
        };
        let hole = s.sacked.first_unsacked(from);
        let lost_end = s.pipe(u64::from(self.params.mss_bytes)).1;
        if s.rack.is_none() || (hole < lost_end && hole < s.snd_max) {
            self.resend_hole(w, conn, hole);
        }
        self.arm_rto(w, conn);
    }

    /// Sends in SACK recovery while pipe leaves room in cwnd: lost holes first (RFC 6675
    /// NextSeg rule 1), then new data (rule 2).
    pub(super) fn sack_recovery_send(&mut self, w: &mut impl Wire, conn: u32) {
        let mss = self.params.mss_bytes as u64;
        let rwnd = self.params.rcv_window_bytes;
        let tsq = self.params.tsq_limit_bytes;
        loop {
            let s = &mut self.senders[conn];
            if tsq > 0 && s.nic_bytes >= tsq {
                break;
            }
            let (pipe, lost_end, from) = s.pipe(mss);
            if (pipe + mss) as f64 > s.cwnd {
                break;
            }
            // Rule 0: a retransmission that was lost again.
            if let Some(i) = (0..s.relost.len()).min_by_key(|&i| s.relost[i].0) {
                let (a, b) = s.relost.swap_remove(i);
                let hole = s.sacked.first_unsacked(a.max(s.snd_una));
                if hole < b {
                    let len = s.sacked.segment_at(hole, mss, b);
                    if hole + len < b {
                        s.relost.push((hole + len, b));
                    }
                    self.sack_retransmit(w, conn, hole, len);
                }
                continue;
            }
            let hole = s.sacked.first_unsacked(from);
            if hole < lost_end && hole < s.snd_max {
                self.resend_hole(w, conn, hole);
                continue;
            }
            if s.snd_nxt < s.app_bytes && s.snd_nxt - s.snd_una < rwnd {
                let len = mss.min(s.app_bytes - s.snd_nxt);
                let seq = s.snd_nxt;
                s.snd_nxt += len;
                s.snd_max = s.snd_max.max(s.snd_nxt);
                self.send_segment(w, conn, seq, len as u32);
                continue;
            }
            // Rule 3: nothing lost and no new data, but a hole lies below SACKed data.
            let highest_sacked = s.sacked.highest_end();
            if hole < highest_sacked && hole < s.snd_max {
                self.resend_hole(w, conn, hole);
                continue;
            }
            break;
        }
        if self.senders[conn].rto_deadline == NEVER
            && self.senders[conn].snd_max > self.senders[conn].snd_una
        {
            self.arm_rto(w, conn);
        }
    }

    /// Resends the segment at `hole` (up to the next SACKed byte) and moves the
    /// retransmission mark past it (RFC 6675's HighRxt).
    pub(super) fn resend_hole(&mut self, w: &mut impl Wire, conn: u32, hole: u64) {
        let mss = self.params.mss_bytes as u64;
        let s = &mut self.senders[conn];
        let len = s.sacked.segment_at(hole, mss, s.snd_max);
        s.high_rxt = match s.rack {
            None => hole + len,
            // RACK: the mark only rises (what lies below was retransmitted).
            Some(_) => s.high_rxt.max(hole + len),
        };
        self.sack_retransmit(w, conn, hole, len);
    }

    /// Resends [hole, hole + len) in SACK recovery and remembers it, with what had been sent
    /// by then, to find out whether it is lost again.
    pub(super) fn sack_retransmit(&mut self, w: &mut impl Wire, conn: u32, hole: u64, len: u64) {
        let s = &mut self.senders[conn];
        s.retransmits += 1;
        if s.rack.is_none() {
            // (RACK finds lost retransmissions by their send times instead.)
            s.rexmits.push((hole, hole + len, s.snd_max));
        }
        self.send_segment(w, conn, hole, len as u32);
    }
}

#[cfg(test)]
mod tests {
    use super::super::testbed::*;

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

    /// SACK recovery ends once everything sent before it is acknowledged; the window is then
    /// ssthresh (RFC 6675), and it sends at once.
    #[test]
    fn recovery_ends_when_what_was_sent_before_it_is_acknowledged() {
        let mut b = Bench::new(
            r#","variant":"newreno","initial_window":10,"recovery":"rfc6675","limited_transmit":false"#,
        );
        let sent = b.lose_first_of(10, 3);
        assert_eq!(sent[2], 1, "the fast retransmission");
        assert!(b.sender().in_recovery);
        assert_eq!(b.sender().recover, 10 * b.mss);
        // A partial ACK: still in recovery; the 5 segments in flight fill the window.
        assert_eq!(b.ack(5, &[]), (0, 0));
        assert!(b.sender().in_recovery);
        assert_eq!(b.ack(10, &[]), (5, 0));
        assert!(!b.sender().in_recovery);
        assert_eq!(b.sender().cwnd, 5.0 * b.mss as f64);
    }

    /// A retransmission lost again (without RACK): once data sent after it is SACKed while
    /// it is still missing, it goes once more, before anything else.
    #[test]
    fn a_lost_retransmission_goes_again_once_later_data_is_sacked() {
        let mut b = Bench::new(
            r#","variant":"newreno","initial_window":10,"recovery":"rfc6675","limited_transmit":false"#,
        );
        let sent = b.lose_first_of(10, 9);
        assert_eq!(b.sender().retransmits, 1);
        assert!(
            sent[3..].iter().sum::<u64>() > 0,
            "new data went in recovery"
        );
        // Segment 10, sent after the retransmission, is SACKed; segment 0 is still missing.
        let mark = b.mark();
        b.ack(0, &[(1, 11)]);
        assert_eq!(
            b.data_sent(mark).first(),
            Some(&0),
            "{:?}",
            b.data_sent(mark)
        );
        assert_eq!(b.sender().retransmits, 2);
    }
}
