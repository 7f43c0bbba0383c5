//! Congestion control: the window growth and reduction rules of NewReno (RFC 5681, 6582),
//! CUBIC (RFC 8312), DCTCP (RFC 8257: Reno growth; its ECN response, scaled by the
//! fraction of marked bytes, is in `tcp::Sender`) and pFabric's minimal transport (a fixed
//! window: no growth, no reduction). Windows are in bytes; CUBIC works internally in segments.

use super::Sender;
use crate::engine::{TimePs, NEVER, PS_PER_S};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    NewReno,
    Cubic,
    Dctcp,
    /// pFabric's endpoint (Alizadeh et al., 2013, section 4.2, minimal form): starts at its
    /// initial window (set it to about one bandwidth-delay product), never changes it, and
    /// retransmits on a small fixed timeout. Leaves out pFabric's probe mode.
    PFabric,
}

/// CUBIC's constants (RFC 8312 section 5).
const CUBIC_C: f64 = 0.4;
const CUBIC_BETA: f64 = 0.7;

#[derive(Clone, Copy, Debug)]
pub struct CcState {
    pub variant: Variant,
    /// CUBIC: window before the last reduction, in segments.
    w_max: f64,
    k_s: f64,
    origin: f64,
    epoch_start_ps: TimePs,
    w_est: f64,
}

impl CcState {
    pub fn new(variant: Variant) -> Self {
        CcState {
            variant,
            w_max: 0.0,
            k_s: 0.0,
            origin: 0.0,
            epoch_start_ps: NEVER,
            w_est: 0.0,
        }
    }

    /// New window after `acked` bytes were newly acknowledged in congestion avoidance.
    pub fn on_ack_avoidance(
        &mut self,
        cwnd: f64,
        acked: f64,
        mss: f64,
        now: TimePs,
        srtt_ps: TimePs,
    ) -> f64 {
        match self.variant {
            Variant::NewReno | Variant::Dctcp => cwnd + mss * acked / cwnd,
            Variant::PFabric => cwnd,
            Variant::Cubic => {
                let w = cwnd / mss;
                let acked_seg = acked / mss;
                if self.epoch_start_ps == NEVER {
                    self.epoch_start_ps = now;
                    if w < self.w_max {
                        self.k_s = ((self.w_max - w) / CUBIC_C).cbrt();
                        self.origin = self.w_max;
                    } else {
                        self.k_s = 0.0;
                        self.origin = w;
                    }
                    self.w_est = w;
                }
                let t = (now - self.epoch_start_ps + srtt_ps) as f64 / PS_PER_S as f64;
                let target = self.origin + CUBIC_C * (t - self.k_s).powi(3);
                // TCP-friendly estimate (RFC 8312 section 4.2).
                self.w_est += 3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA) * acked_seg / w;
                let mut next = if target > w {
                    w + (target - w) / w * acked_seg
                } else {
                    w + 0.01 * acked_seg / w
                };
                if self.w_est > next {
                    next = self.w_est;
                }
                next * mss
            }
        }
    }

    /// Slow-start threshold after a loss (or ECN echo) with window `cwnd` and `flight` bytes out.
    pub fn on_loss(&mut self, cwnd: f64, flight: f64, mss: f64) -> f64 {
        match self.variant {
            Variant::NewReno | Variant::Dctcp => (flight / 2.0).max(2.0 * mss),
            Variant::PFabric => cwnd,
            Variant::Cubic => {
                let w = cwnd / mss;
                self.epoch_start_ps = NEVER;
                // Fast convergence: release bandwidth faster when the window is shrinking.
                self.w_max = if w < self.w_max {
                    w * (1.0 + CUBIC_BETA) / 2.0
                } else {
                    w
                };
                (cwnd * CUBIC_BETA).max(2.0 * mss)
            }
        }
    }
}

impl Sender {
    /// DCTCP: counts `acked` bytes (marked if the ACK echoed CE) and, once a window of data
    /// has been acknowledged, folds the window's marked fraction into alpha.
    pub(super) fn dctcp_on_ack(&mut self, acked: u64, ece: bool) {
        self.dctcp_acked += acked;
        if ece {
            self.dctcp_marked += acked;
        }
        if self.snd_una >= self.dctcp_window_end {
            if self.dctcp_acked > 0 {
                let f = self.dctcp_marked as f64 / self.dctcp_acked as f64;
                self.dctcp_alpha = (1.0 - DCTCP_G) * self.dctcp_alpha + DCTCP_G * f;
            }
            self.dctcp_acked = 0;
            self.dctcp_marked = 0;
            self.dctcp_window_end = self.snd_nxt;
        }
    }

    /// Window change for `acked` newly acknowledged bytes outside loss recovery: an ECN echo
    /// reduces it once per window (RFC 3168, no retransmission); otherwise slow start or
    /// congestion avoidance grows it.
    pub(super) fn grow_window(&mut self, acked: f64, ece: bool, mss: f64, now: TimePs) {
        match self.cc.variant {
            Variant::PFabric => return,
            Variant::Dctcp => {
                self.dctcp_on_ack(acked as u64, ece);
                if ece && self.snd_una > self.ecn_recover {
                    // Cut by alpha / 2, once per window of data.
                    self.cwnd = (self.cwnd * (1.0 - self.dctcp_alpha / 2.0)).max(2.0 * mss);
                    self.ssthresh = self.cwnd;
                    self.ecn_recover = self.snd_max;
                    return;
                }
            }
            _ => {}
        }
        if ece && self.snd_una > self.ecn_recover {
            let flight = (self.snd_max - self.snd_una) as f64 + acked;
            self.ssthresh = self.cc.on_loss(self.cwnd, flight, mss);
            self.cwnd = self.ssthresh;
            self.ecn_recover = self.snd_max;
        } else if self.cwnd < self.ssthresh {
            self.cwnd += acked;
        } else {
            self.cwnd = self
                .cc
                .on_ack_avoidance(self.cwnd, acked, mss, now, self.srtt_ps);
        }
    }
}

/// DCTCP's estimation gain g (RFC 8257 and the DCTCP paper: 1/16).
pub const DCTCP_G: f64 = 1.0 / 16.0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newreno_grows_one_segment_per_window() {
        let mut cc = CcState::new(Variant::NewReno);
        let mss = 1000.0;
        let mut cwnd = 10_000.0;
        for _ in 0..10 {
            cwnd = cc.on_ack_avoidance(cwnd, mss, mss, 0, 0);
        }
        assert!((cwnd - 11_000.0).abs() < 60.0, "{cwnd}");
        assert_eq!(cc.on_loss(cwnd, 8000.0, mss), 4000.0);
    }

    #[test]
    fn cubic_returns_to_w_max_after_k_seconds() {
        let mut cc = CcState::new(Variant::Cubic);
        let mss = 1.0;
        let ss = cc.on_loss(100.0, 100.0, mss);
        assert!((ss - 70.0).abs() < 1e-9);
        // K = cbrt(w_max * (1 - beta) / C) = cbrt(100 * 0.3 / 0.4).
        let k = (100.0f64 * 0.3 / 0.4).cbrt();
        let mut cwnd = ss;
        cwnd = cc.on_ack_avoidance(cwnd, 0.0, mss, 0, 0);
        let at_k = cc.on_ack_avoidance(cwnd, cwnd, mss, (k * PS_PER_S as f64) as u64, 0);
        assert!((at_k - 100.0).abs() < 1.0, "window at K: {at_k}");
    }

    /// DCTCP (RFC 8257): once per window of data alpha moves by g towards the fraction of
    /// bytes marked, and an echo cuts the window by alpha / 2 once per window.
    #[test]
    fn dctcp_cuts_the_window_by_half_the_marked_fraction() {
        use super::super::testbed::Bench;
        let mut b = Bench::new(r#","variant":"dctcp","initial_window":10"#);
        assert_eq!(b.write(100), 10);
        let mss = b.mss as f64;
        // The first window closes at once (alpha starts at 1): all marked, alpha stays 1.
        b.ack_ece(1);
        assert_eq!(b.sender().dctcp_alpha, 1.0);
        assert_eq!(b.sender().cwnd, 5.0 * mss, "cut by 1/2");
        // The next window (to segment 10) has no mark: alpha = (1 - g) 1 + g 0.
        for una in 2..=10 {
            b.ack(una, &[]);
        }
        assert_eq!(b.sender().dctcp_alpha, 1.0 - DCTCP_G);
        // The next echo cuts by that alpha's half (its own window's count comes later).
        let before = b.sender().cwnd;
        b.ack_ece(11);
        assert_eq!(b.sender().dctcp_alpha, 1.0 - DCTCP_G);
        let cut = before * (1.0 - (1.0 - DCTCP_G) / 2.0);
        assert_eq!(b.sender().cwnd, cut.max(2.0 * mss));
    }
}
