//! The sender's retransmission timer (RFC 6298, with Linux's timer clock), which also
//! carries tail loss probes and RACK's reordering timer, and the lazy timer events both
//! halves use (one event queued, the real deadline beside it).

use super::*;

impl TcpPart {
    /// After new data is acknowledged: stop the timer if nothing is outstanding, else restart it.
    pub(super) fn rearm_rto(&mut self, w: &mut impl Wire, conn: u32) {
        let s = &mut self.senders[conn];
        if s.snd_una >= s.snd_max && s.fin != Fin::Sent {
            s.rto_deadline = NEVER;
        } else {
            self.arm_rto(w, conn);
        }
    }

    pub(super) fn arm_rto(&mut self, w: &mut impl Wire, conn: u32) {
        let (host, rto) = (self.senders[conn].host, self.senders[conn].rto_ps);
        let probe = self.probe_timeout_ps(conn).filter(|&p| p < rto);
        let now = w.now();
        let mut deadline = self.timer_deadline(host, now, probe.unwrap_or(rto));
        let s = &self.senders[conn];
        // RACK's reordering timer, when it comes first.
        let reo = s.rack.as_ref().map_or(NEVER, |r| r.deadline_ps);
        let reo = (reo != NEVER).then(|| self.timer_deadline(host, now, reo.max(now + 1) - now));
        let reo_first = reo.is_some_and(|r| r < deadline);
        if let Some(r) = reo.filter(|_| reo_first) {
            deadline = r;
        }
        let timer = self.timer(conn, TIMER_RTO);
        let s = &mut self.senders[conn];
        s.probe_armed = probe.is_some() && !reo_first;
        if let Some(r) = &mut s.rack {
            r.timer_armed = reo_first;
        }
        s.rto_deadline = deadline;
        arm_lazy(w, &mut s.rto_event_at, deadline, timer);
    }

    /// The tail loss probe's timeout for `conn`, when a probe is due before a timeout:
    /// probes on, SACK on, not in recovery, an RTT sampled, and no probe unanswered (Linux
    /// 3.10's `tcp_schedule_loss_probe`).
    pub(super) fn probe_timeout_ps(&self, conn: u32) -> Option<TimePs> {
        let s = &self.senders[conn];
        // Only in Linux's open state: not in recovery, nor going back over data after a
        // timeout (snd_nxt below snd_max).
        if !self.params.tlp
            || s.snd_max == s.snd_una
            || !self.params.sack
            || s.in_recovery
            || s.snd_nxt < s.snd_max
            || s.srtt_ps == 0
            || s.snd_una < s.tlp_high
        {
            return None;
        }
        let mut pto = 2 * s.srtt_ps;
        if s.snd_max - s.snd_una <= u64::from(self.params.mss_bytes) {
            pto = pto.max(s.srtt_ps * 3 / 2 + DELACK_MAX_PS);
        }
        Some(pto.max(PTO_MIN_PS))
    }

    /// The probe timeout passed with no ACK: one segment goes, new data if the windows
    /// allow, else the last segment again; then the retransmission timer.
    pub(super) fn send_probe(&mut self, w: &mut impl Wire, conn: u32) {
        let mss = u64::from(self.params.mss_bytes);
        let rwnd = self.params.rcv_window_bytes;
        let s = &mut self.senders[conn];
        s.tail_probes += 1;
        let (seq, len) = if s.snd_nxt < s.app_bytes && s.snd_nxt - s.snd_una + mss <= rwnd {
            let len = mss.min(s.app_bytes - s.snd_nxt);
            let seq = s.snd_nxt;
            s.snd_nxt += len;
            s.snd_max = s.snd_max.max(s.snd_nxt);
            (seq, len)
        } else {
            let seq = s.snd_max.saturating_sub(mss).max(s.snd_una);
            s.retransmits += 1;
            (seq, s.snd_max - seq)
        };
        s.tlp_high = s.snd_max;
        self.send_segment(w, conn, seq, len as u32);
        self.arm_rto(w, conn);
    }

    /// When a timer armed at `now` for `delay` on `host` fires: exactly then, or with a
    /// timer clock (`rto_granularity`, Linux's jiffies), at the tick `ceil(delay / tick)`
    /// ticks after the one `now` falls in (so between one tick less and `delay` rounded up).
    pub(super) fn timer_deadline(&self, host: u32, now: TimePs, delay: TimePs) -> TimePs {
        let g = self.params.rto_granularity_ps;
        if g == 0 {
            return now + delay;
        }
        let phase = self.clock_phase(host);
        // Ticks at phase + k g; `next` counts the ticks up to and including the first
        // after `now`.
        let next = (now + g - phase) / g;
        phase + (next + delay.div_ceil(g) - 1) * g
    }

    /// The phase of `host`'s timer clock (each host's ticks start at their own time).
    pub(super) fn clock_phase(&self, host: u32) -> TimePs {
        let g = self.params.rto_granularity_ps;
        crate::engine::rng::mix64(self.params.seed ^ u64::from(host).wrapping_mul(0x9E37_79B9)) % g
    }

    /// An RTT sample as the kernel measures it: exact, or with a timer clock, in whole
    /// ticks between sending and the ACK, at least one (Linux counts RTTs in jiffies).
    pub(super) fn measured_rtt(&self, host: u32, sent_ps: TimePs, now: TimePs) -> TimePs {
        let g = self.params.rto_granularity_ps;
        if g == 0 {
            return now - sent_ps;
        }
        let phase = self.clock_phase(host);
        let tick = |t: TimePs| (t + g - phase) / g;
        (tick(now) - tick(sent_ps)).max(1) * g
    }

    /// The retransmission timer of `conn` fired (lazily: the deadline may have moved).
    pub fn on_timer(&mut self, w: &mut impl Wire, conn: u32, which: u8) {
        if which == TIMER_DELACK {
            return self.delack_timer(w, conn);
        }
        let timer = self.timer(conn, which);
        let s = &mut self.senders[conn];
        if !lazy_due(w, &mut s.rto_event_at, s.rto_deadline, timer) {
            return;
        }
        // The timer is spent: whatever it was armed for re-arms it.
        s.rto_deadline = NEVER;
        if s.rack.as_ref().is_some_and(|r| r.timer_armed) {
            return self.rack_timeout(w, conn);
        }
        if s.probe_armed {
            return self.send_probe(w, conn);
        }
        if s.connecting {
            return self.syn_timeout(w, conn);
        }
        if s.fin == Fin::Sent {
            if s.snd_una >= s.snd_max {
                return self.fin_timeout(w, conn);
            }
            s.fin = Fin::Wanted; // going back over the data, then the FIN again
        }
        self.timeout(w, conn);
    }

    /// A retransmission timeout: back to one segment, go back N, double the timer
    /// (pFabric: same window, same timer).
    pub(super) fn timeout(&mut self, w: &mut impl Wire, conn: u32) {
        let mss = self.params.mss_bytes as f64;
        let rto_max = self.params.rto_max_ps;
        let s = &mut self.senders[conn];
        s.timeouts += 1;
        let flight = (s.snd_max - s.snd_una) as f64;
        let fixed = s.cc.variant == Variant::PFabric;
        s.ssthresh = s.cc.on_loss(s.cwnd, flight, mss);
        if !fixed {
            s.cwnd = mss;
        }
        s.in_recovery = false;
        s.dupacks = 0;
        s.recover = s.snd_max;
        s.snd_nxt = s.snd_una;
        s.rexmits.clear();
        s.relost.clear();
        if let Some(r) = &mut s.rack {
            // Everything goes again from snd_una: no range waits for its window.
            (r.deadline_ps, r.timer_armed) = (NEVER, false);
        }
        if !fixed {
            s.back_off(rto_max);
        }
        s.rto_deadline = NEVER;
        if s.traced {
            self.record_trace(conn, w.now());
        }
        self.send_more(w, conn);
    }
}

/// Arms a lazy timer (one event kept queued, the real deadline beside it, checked when the
/// event fires) for `deadline`: an event goes unless one comes at or before it.
pub(super) fn arm_lazy(
    w: &mut impl Wire,
    event_at: &mut TimePs,
    deadline: TimePs,
    timer: TcpEvent,
) {
    if *event_at == NEVER || *event_at > deadline {
        *event_at = deadline;
        w.arm_timer(deadline, timer);
    }
}

/// A lazy timer's event fired now: whether its deadline has come. A stale event or a
/// disarmed timer is not due; a deadline moved later is not either, and its event goes
/// again.
pub(super) fn lazy_due(
    w: &mut impl Wire,
    event_at: &mut TimePs,
    deadline: TimePs,
    timer: TcpEvent,
) -> bool {
    let now = w.now();
    if now != *event_at {
        return false;
    }
    *event_at = NEVER;
    if deadline == NEVER {
        return false;
    }
    if now < deadline {
        arm_lazy(w, event_at, deadline, timer);
        return false;
    }
    true
}

/// Linux's TCP_DELACK_MAX: with one segment outstanding a tail loss probe also waits for
/// the peer's longest delayed ACK.
pub(super) const DELACK_MAX_PS: TimePs = 200 * crate::engine::PS_PER_MS;

/// Linux's floor on the tail loss probe timeout (10 ms).
pub(super) const PTO_MIN_PS: TimePs = 10 * crate::engine::PS_PER_MS;

#[cfg(test)]
mod tests {
    use super::super::testbed::*;
    use super::super::*;
    use crate::engine::{PS_PER_MS, PS_PER_US};

    /// A timer clock of 4 ms (Linux's jiffy at HZ 250): a timer armed for d fires on a tick,
    /// more than ceil(d / 4 ms) - 1 and at most ceil(d / 4 ms) ticks later; without a clock,
    /// exactly d later.
    #[test]
    fn timers_fire_on_the_clocks_ticks() {
        let g = 4 * PS_PER_MS;
        let b = Bench::new(r#","rto_granularity":"4ms","rto_min":"1ms""#);
        let tcp = &b.tcp;
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
        assert_eq!(exact.tcp.timer_deadline(0, 123, PS_PER_MS), 123 + PS_PER_MS);
    }

    /// Tail loss probe: with ten segments out and no ACK, one probe (the last segment again,
    /// nothing new to send) goes after max(2 SRTT, 10 ms), before any timeout; its SACK would
    /// start recovery. Without probes the timer is the timeout. One probe at a time.
    #[test]
    fn a_tail_loss_probe_goes_before_the_timeout() {
        for tlp in [true, false] {
            let mut b = Bench::new(&format!(r#","tlp":{tlp},"initial_window":10"#));
            assert_eq!(b.write(1), 1);
            b.advance_to(100 * PS_PER_US);
            b.ack_echo(1, &[], 0); // an RTT sample of 100 us
            assert_eq!(b.write(10), 10);
            let now = b.wire.now_ps;
            let at = b.sender().rto_deadline;
            if !tlp {
                assert_eq!(at, now + b.sender().rto_ps, "the timeout");
                continue;
            }
            assert_eq!(at, now + 10 * PS_PER_MS, "max(2 x 100 us, 10 ms)");
            b.advance_to(at);
            let (sent, rexmits) = (b.sent(), b.sender().retransmits);
            b.fire_rto();
            assert_eq!((b.sent() - sent, b.sender().retransmits - rexmits), (1, 1));
            assert_eq!((b.sender().tail_probes, b.sender().timeouts), (1, 0));
            // The probe is unanswered: next comes the timeout.
            let timeout_at = b.sender().rto_deadline;
            assert_eq!(timeout_at, at + b.sender().rto_ps);
            // After the timeout the sender goes back over its data: no probe then, the timer is
            // the (doubled) timeout.
            b.advance_to(timeout_at);
            b.fire_rto();
            assert_eq!(b.sender().timeouts, 1);
            assert!(!b.sender().probe_armed);
            assert_eq!(b.sender().rto_deadline, timeout_at + b.sender().rto_ps);
        }
    }

    /// A retransmission timeout (RFC 5681, 6298): the window falls to one segment and
    /// ssthresh to half the flight, the sender goes back to the first unacknowledged byte,
    /// skipping what the receiver holds (SACKed), and the timer doubles.
    #[test]
    fn a_timeout_goes_back_to_one_segment_and_skips_what_the_receiver_holds() {
        let mut b = Bench::new(
            r#","variant":"newreno","initial_window":10,"limited_transmit":false,"rto_granularity":"0s""#,
        );
        assert_eq!(b.write(20), 10);
        b.ack(0, &[(3, 5)]);
        let rto = b.sender().rto_ps;
        b.advance_to(b.sender().rto_deadline);
        let mark = b.mark();
        b.fire_rto();
        assert_eq!(b.data_sent(mark), [0]);
        let mss = b.mss as f64;
        let s = b.sender();
        assert_eq!((s.cwnd, s.ssthresh, s.timeouts), (mss, 5.0 * mss, 1));
        assert_eq!(s.rto_ps, 2 * rto);
        let mark = b.mark();
        b.ack(1, &[(3, 5)]);
        assert_eq!(b.data_sent(mark), [1, 2], "slow start again, from the hole");
        let mark = b.mark();
        b.ack(3, &[(3, 5)]);
        // The window is 4 (1, + 1, + 2 acknowledged); segments 3 and 4 are held, not
        // sent again (they count in flight until acknowledged).
        assert_eq!(b.data_sent(mark), [5, 6]);
    }

    /// The timer stops once everything sent is acknowledged; its queued event then does
    /// nothing.
    #[test]
    fn the_timer_stops_when_everything_is_acknowledged() {
        let mut b = Bench::new("");
        assert_eq!(b.write(2), 2);
        let at = b.wire.timers[0].0;
        assert_ne!(b.sender().rto_deadline, NEVER);
        b.ack(2, &[]);
        assert_eq!(b.sender().rto_deadline, NEVER);
        b.advance_to(at);
        let before = b.sent();
        b.fire_rto();
        assert_eq!((b.sent(), b.sender().timeouts), (before, 0));
    }

    /// Lazy timers: a deadline that moves later queues no event; the queued event, when it
    /// comes early, queues one for the new deadline, which fires.
    #[test]
    fn a_lazy_timer_follows_its_deadline_with_one_event() {
        let mut b = Bench::new(r#","rto_min":"200ms","rto_granularity":"0s""#);
        b.write(2);
        assert_eq!(b.wire.timers.len(), 1);
        b.advance_to(150 * PS_PER_MS);
        b.ack(1, &[]); // restarts the timer: 350 ms
        assert_eq!(b.sender().rto_deadline, 350 * PS_PER_MS);
        assert_eq!(b.wire.timers.len(), 1, "the event at 200 ms stays");
        b.advance_to(200 * PS_PER_MS);
        b.fire_rto();
        assert_eq!(b.sender().timeouts, 0);
        assert_eq!(b.wire.timers.last().unwrap().0, 350 * PS_PER_MS);
        b.advance_to(350 * PS_PER_MS);
        let mark = b.mark();
        b.fire_rto();
        assert_eq!((b.sender().timeouts, b.data_sent(mark)), (1, vec![1]));
    }
}
