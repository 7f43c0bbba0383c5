//! Swift's window control (Kumar et al., "Swift: Delay is Simple and Effective for
//! Congestion Control in the Datacenter", SIGCOMM 2020, Algorithm 1), as a RoCEv2 queue
//! pair runs it (`transport::roce`). Each ACK echoes its data packet's send time and the
//! hops it crossed; the sender compares the round trip with a target that grows with the
//! path (`hop_delay` per switch) and shrinks as the window grows (flow scaling: `alpha /
//! sqrt(cwnd) + beta`, clamped to `[0, fs_range]`, so that small windows, many flows,
//! get a higher target and converge to fairness). Below the target the window grows by
//! `ai / cwnd` packets per ACK (`ai` per ACK below one packet); above it, at most once
//! per round trip, it shrinks by `beta x (delay - target) / delay`, at most `max_mdf`.
//! A NAK or an ACK timeout cuts it by `max_mdf` (five timeouts in a row: to the least
//! window). Below one packet the QP paces its packets a round trip / cwnd apart.
//!
//! Defaults: htsim's Swift (Broadcom/csg-htsim, `swift.cpp`), whose authors mark most of
//! them as estimates of the paper's: a base target of 20 us, `hop_delay` a 6.55th of it,
//! `fs_range` 5 base targets over windows of 0.1 to 100 packets, ai 1, beta 0.8, max_mdf
//! 0.5, windows from 0.001 to 1,000 packets. Simplified: the fabric window only (the
//! paper's endpoint window, for host delay, is left out: wscsim's RoCE NICs add none);
//! the delay is the whole round trip, not NIC timestamps less the remote host's time.

use crate::check::{err, fraction, positive_duration, ConfigError};
use crate::engine::TimePs;

const US: TimePs = 1_000_000;

/// `roce.swift`: Swift's parameters.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Base target delay (default 20us).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_target: Option<crate::units::Duration>,
    /// Target added per switch on the path (default base_target / 6.55).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hop_delay: Option<crate::units::Duration>,
    /// Most target added by flow scaling (default 5 x base_target).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fs_range: Option<crate::units::Duration>,
    /// Additive increase, packets per round trip (default 1), above 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ai: Option<f64>,
    /// Multiplicative decrease gain (default 0.8), above 0, at most 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub beta: Option<f64>,
    /// Largest decrease at once (default 0.5), above 0, below 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_mdf: Option<f64>,
}

/// `roce.swift` resolved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spec {
    pub base_target_ps: TimePs,
    pub hop_delay_ps: TimePs,
    pub fs_range_ps: TimePs,
    pub ai: f64,
    pub beta: f64,
    pub max_mdf: f64,
}

/// Flow scaling spans windows of this many packets (htsim's `_fs_min_cwnd`, `_fs_max_cwnd`).
const FS_MIN_CWND: f64 = 0.1;
const FS_MAX_CWND: f64 = 100.0;
/// The window's bounds, packets.
const MIN_CWND: f64 = 0.001;
const MAX_CWND: f64 = 1000.0;
/// Timeouts in a row after which the window falls to its least.
const RETX_RESET: u32 = 5;

impl Params {
    /// Checks the parameters (under `path`) and fills in the defaults.
    pub fn resolve(&mut self, path: &str) -> Result<Spec, ConfigError> {
        use crate::units::Duration;
        let p = |k: &str| format!("{path}.{k}");
        let base = positive_duration(
            &p("base_target"),
            *self.base_target.get_or_insert(Duration(20 * US)),
        )?;
        let hop = self
            .hop_delay
            .get_or_insert(Duration((base as f64 / 6.55) as u64))
            .0;
        let fs_range = self.fs_range.get_or_insert(Duration(5 * base)).0;
        let ai = *self.ai.get_or_insert(1.0);
        if !(ai > 0.0 && ai.is_finite()) {
            return Err(err(&p("ai"), ai, "a number of packets above 0"));
        }
        let beta = fraction(&p("beta"), *self.beta.get_or_insert(0.8))?;
        let max_mdf = *self.max_mdf.get_or_insert(0.5);
        if !(max_mdf > 0.0 && max_mdf < 1.0) {
            return Err(err(&p("max_mdf"), max_mdf, "a number above 0, below 1"));
        }
        Ok(Spec {
            base_target_ps: base,
            hop_delay_ps: hop,
            fs_range_ps: fs_range,
            ai,
            beta,
            max_mdf,
        })
    }
}

/// One queue pair's Swift state.
#[derive(Clone, Debug)]
pub struct Sender {
    /// The window, packets.
    pub cwnd: f64,
    /// The last round trip measured.
    pub rtt_ps: TimePs,
    last_decrease_ps: Option<TimePs>,
    timeouts: u32,
    /// Bytes of payload a packet carries (the window's unit).
    packet_bytes: u32,
}

impl Spec {
    /// The target delay for a window of `cwnd` packets over `switches` switches.
    pub fn target_ps(&self, cwnd: f64, switches: u32) -> TimePs {
        let range = self.fs_range_ps as f64;
        let alpha = range / (1.0 / FS_MIN_CWND.sqrt() - 1.0 / FS_MAX_CWND.sqrt());
        let fs = (alpha / cwnd.sqrt() - alpha / FS_MAX_CWND.sqrt()).clamp(0.0, range);
        self.base_target_ps + u64::from(switches) * self.hop_delay_ps + fs as TimePs
    }
}

impl Sender {
    /// A QP's first window: one bandwidth-delay product at line rate over its base round
    /// trip, in packets of `packet_bytes`.
    pub fn new(line_bps: f64, base_rtt_ps: TimePs, packet_bytes: u32) -> Sender {
        let bdp = line_bps * base_rtt_ps as f64 / 8e12 / f64::from(packet_bytes);
        Sender {
            cwnd: bdp.clamp(1.0, MAX_CWND),
            rtt_ps: base_rtt_ps,
            last_decrease_ps: None,
            timeouts: 0,
            packet_bytes,
        }
    }

    /// An ACK that measured `rtt_ps` over a path of `switches` switches, at `now`.
    /// Whether the window changed.
    pub fn on_ack(&mut self, s: &Spec, now: TimePs, rtt_ps: TimePs, switches: u32) -> bool {
        let before = self.cwnd;
        // Once per round trip: the one measured before this ACK.
        let may_decrease = self.may_decrease(now);
        (self.rtt_ps, self.timeouts) = (rtt_ps.max(1), 0);
        let target = s.target_ps(self.cwnd, switches);
        if rtt_ps < target {
            self.cwnd += if self.cwnd >= 1.0 {
                s.ai / self.cwnd
            } else {
                s.ai
            };
        } else if may_decrease {
            let by = s.beta * (rtt_ps - target) as f64 / rtt_ps as f64;
            self.decrease(now, by.min(s.max_mdf));
        }
        self.cwnd = self.cwnd.clamp(MIN_CWND, MAX_CWND);
        self.cwnd != before
    }

    /// A NAK (`timeout` false) or an ACK timeout at `now`.
    pub fn on_loss(&mut self, s: &Spec, now: TimePs, timeout: bool) {
        if timeout {
            self.timeouts += 1;
            if self.timeouts >= RETX_RESET {
                self.cwnd = MIN_CWND;
                return;
            }
        } else if !self.may_decrease(now) {
            return;
        }
        self.decrease(now, s.max_mdf);
        self.cwnd = self.cwnd.max(MIN_CWND);
    }

    fn may_decrease(&self, now: TimePs) -> bool {
        self.last_decrease_ps
            .is_none_or(|t| now.saturating_sub(t) >= self.rtt_ps)
    }

    fn decrease(&mut self, now: TimePs, by: f64) {
        self.cwnd *= 1.0 - by;
        self.last_decrease_ps = Some(now);
    }

    /// The pace below one packet a round trip, bits per second (None: the window alone).
    pub fn rate_bps(&self) -> Option<f64> {
        let bits = f64::from(self.packet_bytes) * 8.0;
        (self.cwnd < 1.0).then(|| self.cwnd * bits * 1e12 / self.rtt_ps as f64)
    }

    /// The window in payload bytes (at least one packet's: below one, the pace rules).
    pub fn window_bytes(&self) -> u64 {
        (self.cwnd.max(1.0) * f64::from(self.packet_bytes)) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> Spec {
        Params::default().resolve("roce.swift").unwrap()
    }

    #[test]
    fn the_target_grows_with_hops_and_with_smaller_windows() {
        let s = spec();
        let hop = s.hop_delay_ps;
        assert_eq!(s.target_ps(100.0, 3) - s.target_ps(100.0, 1), 2 * hop);
        // At 100 packets flow scaling adds nothing; at 0.1 it adds the whole range.
        assert_eq!(s.target_ps(100.0, 0), s.base_target_ps);
        let full = s.target_ps(0.1, 0) - s.base_target_ps;
        assert!(full.abs_diff(s.fs_range_ps) <= 1, "{full}");
        assert!(s.target_ps(1.0, 0) > s.target_ps(10.0, 0));
    }

    #[test]
    fn below_target_it_adds_a_packet_per_window_above_it_cuts_once_per_rtt() {
        let s = spec();
        let mut w = Sender::new(100e9, 10 * US, 4000);
        let start = w.cwnd;
        assert!((start - 31.25).abs() < 1e-9, "{start}");
        for _ in 0..31 {
            w.on_ack(&s, 0, 5 * US, 1);
        }
        assert!((w.cwnd - start - 1.0).abs() < 0.05, "{}", w.cwnd);
        // A delay of twice the target: cut by beta / 2 = 40%, then not again this RTT.
        let target = s.target_ps(w.cwnd, 1);
        let before = w.cwnd;
        w.on_ack(&s, 100 * US, 2 * target, 1);
        assert!((w.cwnd / before - 0.6).abs() < 0.01, "{} {before}", w.cwnd);
        let cut = w.cwnd;
        w.on_ack(&s, 100 * US + 1, 2 * target, 1);
        assert_eq!(w.cwnd, cut);
        // A huge delay cuts by max_mdf at most.
        w.on_ack(&s, 200 * US + 4 * target, 100 * target, 1);
        assert!((w.cwnd / cut - 0.5).abs() < 1e-9, "{} {cut}", w.cwnd);
    }

    #[test]
    fn below_one_packet_it_paces_and_timeouts_reset_it() {
        let s = spec();
        let mut w = Sender::new(10e9, 10 * US, 1000);
        assert!(w.rate_bps().is_none());
        w.cwnd = 0.5;
        w.rtt_ps = 40 * US;
        // Half a packet per 40 us: 1000 bytes every 80 us.
        assert!((w.rate_bps().unwrap() - 100e6).abs() < 1.0);
        for _ in 0..RETX_RESET {
            w.on_loss(&s, 0, true);
        }
        assert_eq!(w.cwnd, MIN_CWND);
    }
}
