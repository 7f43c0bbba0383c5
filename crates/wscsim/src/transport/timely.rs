//! TIMELY's rate control (Mittal et al., "TIMELY: RTT-based Congestion Control for the
//! Datacenter", SIGCOMM 2015), as a RoCEv2 queue pair runs it (`transport::roce`): the
//! sender measures the round trip of each acknowledged packet (the ACK echoes the data
//! packet's send time) and, once per round trip (when an ACK acknowledges a byte sent
//! after the last update, as the HPCC authors' ns-3 fork does), moves its rate by the
//! RTT's gradient: below `t_low` it adds `ai_rate`; above `t_high` it cuts by
//! `beta x (1 - t_high / rtt)`; between them, a falling or flat RTT (the EWMA of RTT
//! differences, weight `alpha`, over `min_rtt`) adds `ai_rate`, a rising one cuts by
//! `beta x gradient`. After five increases in a row it adds `hai_rate` (the paper's
//! hyperactive increase, N = 5).
//!
//! Defaults: the HPCC ns-3 fork's (alibaba-edu/High-Precision-Congestion-Control,
//! `rdma-hw.cc` and `run.py`, the setup HPCC's paper compares TIMELY in): alpha 0.875,
//! beta 0.8, T_low 50 us, T_high 500 us, minRTT 20 us; an increase of line rate / 1000
//! (10 Mb/s at 10 Gbit/s, the paper's delta; 100 Mb/s at 100 Gbit/s), 5 times that in
//! hyperactive increase, and a floor of line rate / 100 (`run.py`'s 1 Gb/s at 100 Gbit/s).
//! Simplified: the paper's completion events are per 16-64 KB segment, here per round
//! trip; no per-packet pacing jitter.

use crate::check::{err, fraction, positive_duration, positive_rate, ConfigError};
use crate::engine::TimePs;

const US: TimePs = 1_000_000;

/// `roce.timely`: TIMELY's parameters.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// EWMA weight of a new RTT difference (default 0.875), above 0, at most 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
    /// Multiplicative decrease factor (default 0.8), above 0, at most 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub beta: Option<f64>,
    /// Below this RTT the rate always grows (default 50us).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub t_low: Option<crate::units::Duration>,
    /// Above this RTT the rate always falls (default 500us), above t_low.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub t_high: Option<crate::units::Duration>,
    /// The RTT that normalises the gradient (default 20us).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_rtt: Option<crate::units::Duration>,
    /// Additive increase (default line rate / 1000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ai_rate: Option<crate::units::Rate>,
}

/// `roce.timely` resolved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spec {
    pub alpha: f64,
    pub beta: f64,
    pub t_low_ps: TimePs,
    pub t_high_ps: TimePs,
    pub min_rtt_ps: TimePs,
    /// None: line rate / 1000.
    pub ai_rate_bps: Option<f64>,
}

impl Params {
    /// Checks the parameters (under `path`) and fills in the defaults.
    pub fn resolve(&mut self, path: &str) -> Result<Spec, ConfigError> {
        let p = |k: &str| format!("{path}.{k}");
        let alpha = fraction(&p("alpha"), *self.alpha.get_or_insert(0.875))?;
        let beta = fraction(&p("beta"), *self.beta.get_or_insert(0.8))?;
        let dur = |v: &mut Option<crate::units::Duration>, d: TimePs, k: &str| {
            positive_duration(&p(k), *v.get_or_insert(crate::units::Duration(d)))
        };
        let t_low_ps = dur(&mut self.t_low, 50 * US, "t_low")?;
        let t_high_ps = dur(&mut self.t_high, 500 * US, "t_high")?;
        let min_rtt_ps = dur(&mut self.min_rtt, 20 * US, "min_rtt")?;
        if t_high_ps <= t_low_ps {
            return Err(err(
                &p("t_high"),
                crate::units::Duration(t_high_ps),
                format!(
                    "a duration above t_low ({})",
                    crate::units::Duration(t_low_ps)
                ),
            ));
        }
        let ai_rate_bps = self
            .ai_rate
            .map(|r| positive_rate(&p("ai_rate"), r))
            .transpose()?;
        Ok(Spec {
            alpha,
            beta,
            t_low_ps,
            t_high_ps,
            min_rtt_ps,
            ai_rate_bps,
        })
    }
}

/// Consecutive increases after which TIMELY adds `hai` (the paper's N).
const HAI_AFTER: u32 = 5;

/// One queue pair's TIMELY state.
#[derive(Clone, Debug)]
pub struct Sender {
    pub rate_bps: f64,
    line_bps: f64,
    ai_bps: f64,
    min_bps: f64,
    increases: u32,
    rtt_diff_ps: f64,
    /// The RTT of the last update; None before the first.
    last_rtt_ps: Option<TimePs>,
    last_update_seq: u64,
}

impl Sender {
    pub fn new(spec: &Spec, line_bps: f64) -> Sender {
        Sender {
            rate_bps: line_bps,
            line_bps,
            ai_bps: spec.ai_rate_bps.unwrap_or(line_bps / 1000.0),
            min_bps: line_bps / 100.0,
            increases: 0,
            rtt_diff_ps: 0.0,
            last_rtt_ps: None,
            last_update_seq: 0,
        }
    }

    /// An ACK for bytes below `ack_seq` came back `rtt_ps` after its packet left, with
    /// `snd_nxt` the next byte to send: once per round trip, the rate moves. Whether it did.
    pub fn on_ack(&mut self, s: &Spec, rtt_ps: TimePs, ack_seq: u64, snd_nxt: u64) -> bool {
        let Some(last_rtt) = self.last_rtt_ps else {
            (self.last_rtt_ps, self.last_update_seq) = (Some(rtt_ps), snd_nxt);
            return false;
        };
        if ack_seq <= self.last_update_seq {
            return false;
        }
        let new_diff = rtt_ps as f64 - last_rtt as f64;
        self.rtt_diff_ps = (1.0 - s.alpha) * self.rtt_diff_ps + s.alpha * new_diff;
        let gradient = self.rtt_diff_ps / s.min_rtt_ps as f64;
        let before = self.rate_bps;
        let cut = if rtt_ps < s.t_low_ps {
            None
        } else if rtt_ps > s.t_high_ps {
            Some(1.0 - s.beta * (1.0 - s.t_high_ps as f64 / rtt_ps as f64))
        } else if gradient <= 0.0 {
            None
        } else {
            Some((1.0 - s.beta * gradient).max(0.0))
        };
        match cut {
            None => {
                let step = if self.increases < HAI_AFTER { 1.0 } else { 5.0 };
                self.rate_bps = (self.rate_bps + step * self.ai_bps).min(self.line_bps);
                self.increases += 1;
            }
            Some(c) => {
                self.rate_bps = (self.rate_bps * c).max(self.min_bps);
                self.increases = 0;
            }
        }
        (self.last_rtt_ps, self.last_update_seq) = (Some(rtt_ps), snd_nxt);
        self.rate_bps != before
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> Spec {
        Params::default().resolve("roce.timely").unwrap()
    }

    /// Feeds one update per round trip with the given RTTs (us); the rates after each.
    fn rates(rtts_us: &[u64]) -> Vec<f64> {
        let s = spec();
        let mut t = Sender::new(&s, 100e9);
        t.rate_bps = 50e9;
        let mut sent = 0;
        rtts_us
            .iter()
            .map(|&r| {
                sent += 10_000;
                t.on_ack(&s, r * US, sent + 1, sent + 10_000);
                t.rate_bps
            })
            .collect()
    }

    #[test]
    fn low_rtt_adds_and_turns_hyperactive_after_five() {
        let r = rates(&[10, 10, 10, 10, 10, 10, 10, 10]);
        // The first sample only sets the reference; then 100 Mb/s steps, then 500 Mb/s.
        let steps: Vec<f64> = r.windows(2).map(|w| (w[1] - w[0]) / 1e6).collect();
        assert_eq!(steps, vec![100.0, 100.0, 100.0, 100.0, 100.0, 500.0, 500.0]);
    }

    #[test]
    fn a_rising_rtt_cuts_in_proportion_to_the_gradient_and_high_rtt_cuts_hard() {
        let r = rates(&[60, 80]);
        // rtt_diff = 0.875 x 20 us; gradient 0.875; cut by 1 - 0.8 x 0.875 = 0.3.
        assert!((r[1] / r[0] - 0.3).abs() < 1e-9, "{r:?}");
        let r = rates(&[600, 1000]);
        // Above T_high: 1 - 0.8 x (1 - 500/1000) = 0.6.
        assert!((r[1] / r[0] - 0.6).abs() < 1e-9, "{r:?}");
    }

    #[test]
    fn a_flat_rtt_between_the_thresholds_adds_and_the_floor_holds() {
        let r = rates(&[100, 100]);
        assert!(r[1] > r[0]);
        let r = rates(&[60, 200, 400, 800, 1600, 3200, 6400]);
        assert!(r.iter().all(|&x| x >= 1e9), "{r:?}");
        assert_eq!(*r.last().unwrap(), 1e9);
    }

    #[test]
    fn updates_come_once_per_round_trip() {
        let s = spec();
        let mut t = Sender::new(&s, 100e9);
        t.on_ack(&s, 10 * US, 1000, 50_000);
        // ACKs for bytes sent before the last update do not move the rate.
        assert!(!t.on_ack(&s, 10 * US, 40_000, 60_000));
        t.rate_bps = 50e9;
        assert!(t.on_ack(&s, 10 * US, 50_001, 70_000));
    }

    #[test]
    fn thresholds_out_of_order_are_refused() {
        let mut p = Params {
            t_low: Some(crate::units::Duration(100 * US)),
            t_high: Some(crate::units::Duration(50 * US)),
            ..Default::default()
        };
        let e = p.resolve("roce.timely").unwrap_err();
        assert_eq!(e.path, "roce.timely.t_high");
    }
}
