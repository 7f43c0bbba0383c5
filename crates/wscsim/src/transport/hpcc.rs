//! HPCC's window control (Li et al., "HPCC: High Precision Congestion Control",
//! SIGCOMM 2019, Algorithm 1), as a RoCEv2 queue pair runs it (`transport::roce`). Every
//! data packet collects a telemetry record from each switch it crosses
//! (`net::telemetry`); the receiver echoes them in its ACK. From two ACKs' records of the
//! same port the sender computes that link's utilisation, `tx rate / B + min(qlen, qlen
//! before) / (B x T)` (T the base round trip), takes the most utilised link, and smooths
//! it over the time the records span (at most T). Its window then aims at `eta` of the
//! bottleneck: `W = Wc / (U / eta) + W_AI` when over the target or after `max_stage`
//! additive steps, else `W = Wc + W_AI`; the reference window Wc moves once per round trip
//! (when an ACK acknowledges a byte sent after the last reference update), every other
//! ACK reacts from the same reference ("fast reaction"). The QP keeps at most W bytes in
//! flight and paces at W / T.
//!
//! Here the window is held as its rate (R = W / T, as the HPCC authors' ns-3 fork holds
//! it, `VAR_WIN`), so the increase step is a rate, `ai_rate`. Defaults: eta 95% and
//! max_stage 5 (the paper, section 5.1); ai_rate line rate / 2500 (the fork's `run.py`:
//! 10 Mb/s per 25 Gbit/s, 40 Mb/s at 100 Gbit/s); a floor of line rate / 100 (`run.py`'s
//! 1 Gb/s at 100 Gbit/s). T is the QP's own base round trip (a full data packet out, an
//! ACK back, on the empty path), where the fork may use the network's largest (its
//! `GLOBAL_T`). Simplified: one rate for the path (the paper's algorithm; the fork's
//! `MULTI_RATE` per-hop variant is left out); ACKs whose records count more hops than
//! `telemetry::MAX_HOPS`, or another number of hops than the last, only replace the
//! records they are compared with.

use crate::check::{fraction, positive_rate, ConfigError};
use crate::engine::TimePs;
use crate::net::telemetry::{Hop, MAX_HOPS};
use crate::packet::Packet;

/// `roce.hpcc`: HPCC's parameters.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Target utilisation eta (default 0.95), above 0, at most 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eta: Option<f64>,
    /// Additive steps before a multiplicative one (default 5), 0 to 100.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_stage: Option<i64>,
    /// Additive increase W_AI as a rate (default line rate / 2500).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ai_rate: Option<crate::units::Rate>,
    /// React to every ACK, not only once per round trip (default true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fast_react: Option<bool>,
}

/// `roce.hpcc` resolved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spec {
    pub eta: f64,
    pub max_stage: u32,
    /// None: line rate / 2500.
    pub ai_rate_bps: Option<f64>,
    pub fast_react: bool,
}

impl Params {
    /// Checks the parameters (under `path`) and fills in the defaults.
    pub fn resolve(&mut self, path: &str) -> Result<Spec, ConfigError> {
        let p = |k: &str| format!("{path}.{k}");
        let eta = fraction(&p("eta"), *self.eta.get_or_insert(0.95))?;
        let stage = *self.max_stage.get_or_insert(5);
        let max_stage = crate::check::int_in(&p("max_stage"), stage, 0, 100)?;
        let ai_rate_bps = self
            .ai_rate
            .map(|r| positive_rate(&p("ai_rate"), r))
            .transpose()?;
        Ok(Spec {
            eta,
            max_stage,
            ai_rate_bps,
            fast_react: *self.fast_react.get_or_insert(true),
        })
    }
}

/// One queue pair's HPCC state.
#[derive(Clone, Debug)]
pub struct Sender {
    /// The rate now (W / T).
    pub rate_bps: f64,
    /// The reference rate (Wc / T), moved once per round trip.
    ref_bps: f64,
    stage: u32,
    /// The smoothed utilisation U.
    pub util: f64,
    base_rtt_ps: TimePs,
    line_bps: f64,
    ai_bps: f64,
    min_bps: f64,
    /// The records the next ACK's are compared with: the first `MAX_HOPS` of `count`
    /// (0: none yet), taken at `last_ps`.
    last: [u64; MAX_HOPS],
    count: usize,
    last_ps: TimePs,
    last_update_seq: u64,
}

/// Records older than this are not compared (their 24-bit nanosecond clocks wrap at
/// 16.7 ms): after a long silence (an ACK timeout, a long pause) the sender starts again
/// from the next ACK's records.
const RECORDS_KEPT_PS: TimePs = 16_000_000_000;

impl Sender {
    pub fn new(spec: &Spec, line_bps: f64, base_rtt_ps: TimePs) -> Sender {
        Sender {
            rate_bps: line_bps,
            ref_bps: line_bps,
            stage: 0,
            util: 0.0,
            base_rtt_ps: base_rtt_ps.max(1),
            line_bps,
            ai_bps: spec.ai_rate_bps.unwrap_or(line_bps / 2500.0),
            min_bps: line_bps / 100.0,
            last: [0; MAX_HOPS],
            count: 0,
            last_ps: 0,
            last_update_seq: 0,
        }
    }

    /// The window: bytes the QP may have in flight (W = R x T, at least one byte).
    pub fn window_bytes(&self) -> u64 {
        ((self.rate_bps * self.base_rtt_ps as f64 / 8e12) as u64).max(1)
    }

    /// The largest link utilisation the ACK's records show against the last ones, and
    /// the time it was measured over (ns); None if no record can be compared.
    fn max_util(&self, ack: &Packet) -> Option<(f64, u64)> {
        let t_s = self.base_rtt_ps as f64 / 1e12;
        let mut best: Option<(f64, u64)> = None;
        for (i, &before) in self.last[..self.count.min(MAX_HOPS)].iter().enumerate() {
            let (now, before) = (Hop(ack.int_record(i)), Hop(before));
            let dt_ns = now.ns_since(before);
            if dt_ns == 0 {
                continue;
            }
            let b = now.rate_bps() as f64;
            let tx_bps = now.bytes_since(before) as f64 * 8.0 / (dt_ns as f64 / 1e9);
            let qlen = now.qlen_bytes().min(before.qlen_bytes()) as f64;
            let u = tx_bps / b + qlen * 8.0 / (b * t_s);
            if best.is_none_or(|(bu, _)| u > bu) {
                best = Some((u, dt_ns));
            }
        }
        best
    }

    /// An ACK for bytes below `ack_seq` arrived at `now_ps` with the records of the data
    /// packet it answers; `snd_nxt` is the next byte to send. Whether the rate changed. A
    /// path of more than `MAX_HOPS` hops is measured on its first `MAX_HOPS`.
    pub fn on_ack(
        &mut self,
        s: &Spec,
        now_ps: TimePs,
        ack: &Packet,
        (ack_seq, snd_nxt): (u64, u64),
    ) -> bool {
        let n = ack.int_count() as usize;
        let full = ack_seq > self.last_update_seq;
        if !full && !s.fast_react {
            return false;
        }
        let fresh = now_ps.saturating_sub(self.last_ps) < RECORDS_KEPT_PS;
        let measured = if n == self.count && n > 0 && fresh {
            self.max_util(ack)
        } else {
            None
        };
        (self.count, self.last_ps) = (n, now_ps);
        for i in 0..n.min(MAX_HOPS) {
            self.last[i] = ack.int_record(i);
        }
        let Some((u, dt_ns)) = measured else {
            if full && self.last_update_seq == 0 {
                self.last_update_seq = snd_nxt; // the first round trip: records only
            }
            return false;
        };
        let t_ns = (self.base_rtt_ps / 1000).max(1) as f64;
        let tau = (dt_ns as f64).min(t_ns);
        self.util = (self.util * (t_ns - tau) + u * tau) / t_ns;
        let over = self.util / s.eta;
        let before = self.rate_bps;
        let (rate, stage) = if over >= 1.0 || self.stage >= s.max_stage {
            (self.ref_bps / over + self.ai_bps, 0)
        } else {
            (self.ref_bps + self.ai_bps, self.stage + 1)
        };
        self.rate_bps = rate.clamp(self.min_bps, self.line_bps);
        if full {
            (self.ref_bps, self.stage) = (self.rate_bps, stage);
            self.last_update_seq = snd_nxt;
        }
        self.rate_bps != before
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::telemetry::encode;

    const G100: u64 = 100_000_000_000;
    const T_PS: TimePs = 10_000_000; // a 10 us base round trip

    /// An ACK carrying one record per hop: (time ps, bytes sent, queue bytes).
    fn ack(hops: &[(TimePs, u64, u64)]) -> Packet {
        let mut p = Packet::default();
        for &(t, sent, q) in hops {
            p.push_int(encode(t, sent, q, G100));
        }
        p
    }

    fn spec() -> Spec {
        Params::default().resolve("roce.hpcc").unwrap()
    }

    #[test]
    fn a_link_at_full_rate_with_a_queue_cuts_the_window_below_target() {
        let s = spec();
        let mut h = Sender::new(&s, 100e9, T_PS);
        assert_eq!(h.window_bytes(), 125_000); // the bandwidth-delay product
        h.on_ack(&s, 0, &ack(&[(0, 0, 0), (0, 0, 125_000)]), (1000, 2000));
        // 10 us later the second hop sent at line rate (125 KB) and still holds 125 KB.
        let changed = h.on_ack(
            &s,
            0,
            &ack(&[(T_PS, 10_000, 0), (T_PS, 125_000, 125_000)]),
            (3000, 4000),
        );
        assert!(changed);
        // u = 1 + 1 = 2 over a whole T: U = 2, and the rate aims at eta / 2 of the
        // reference (plus the step).
        assert!((h.util - 2.0).abs() < 0.01, "{}", h.util);
        let want = 100e9 * 0.95 / h.util + 40e6;
        assert!((h.rate_bps - want).abs() < 1e3, "{} {want}", h.rate_bps);
    }

    #[test]
    fn an_idle_path_steps_up_then_multiplies_after_max_stage() {
        let s = spec();
        let mut h = Sender::new(&s, 100e9, T_PS);
        h.rate_bps = 10e9;
        h.ref_bps = 10e9;
        let mut t = 0;
        let mut sent = 0;
        let mut rates = vec![];
        for k in 0..8u64 {
            // 10% utilisation, no queue: each full update adds the step until the sixth.
            h.on_ack(&s, 0, &ack(&[(t, sent, 0)]), (k * 1000 + 1, (k + 1) * 1000));
            rates.push(h.rate_bps);
            t += T_PS;
            sent += 12_500;
        }
        let steps: Vec<f64> = rates.windows(2).map(|w| w[1] - w[0]).collect();
        for s in &steps[..5] {
            assert!((s - 40e6).abs() < 1.0, "{steps:?}");
        }
        // Then a multiplicative increase towards eta / U of the reference.
        assert!(steps[5] > 1e9, "{steps:?}");
    }

    #[test]
    fn fast_reaction_moves_the_rate_but_not_the_reference() {
        let s = spec();
        let mut h = Sender::new(&s, 100e9, T_PS);
        h.on_ack(&s, 0, &ack(&[(0, 0, 250_000)]), (1, 100_000));
        // An ACK for a byte sent before the last update: the rate reacts, Wc stays.
        h.on_ack(&s, 0, &ack(&[(T_PS, 125_000, 250_000)]), (50_000, 120_000));
        assert!(h.rate_bps < 60e9, "{}", h.rate_bps);
        assert_eq!(h.ref_bps, 100e9);
        let slow = Spec {
            fast_react: false,
            ..s
        };
        let mut h = Sender::new(&slow, 100e9, T_PS);
        h.on_ack(&slow, 0, &ack(&[(0, 0, 0)]), (1, 100_000));
        assert!(!h.on_ack(
            &slow,
            0,
            &ack(&[(T_PS, 125_000, 250_000)]),
            (50_000, 120_000)
        ));
    }

    #[test]
    fn old_records_are_not_compared_and_long_paths_use_their_first_five() {
        let s = spec();
        let mut h = Sender::new(&s, 100e9, T_PS);
        h.on_ack(&s, 0, &ack(&[(0, 0, 0)]), (1, 1000));
        // 20 ms later the nanosecond clock has wrapped: the records only replace the old.
        let late = 20_000_000_000;
        assert!(!h.on_ack(&s, late, &ack(&[(late, 10, 500_000)]), (2000, 3000)));
        assert!(h.on_ack(
            &s,
            late + T_PS,
            &ack(&[(late + T_PS, 125_010, 500_000)]),
            (4000, 5000)
        ));
        // Seven hops: the first five are compared.
        let mut h = Sender::new(&s, 100e9, T_PS);
        let seven = |t: TimePs, q: u64| ack(&[(t, 0, q); 7]);
        h.on_ack(&s, 0, &seven(0, 400_000), (1, 1000));
        assert!(h.on_ack(&s, T_PS, &seven(T_PS, 400_000), (2000, 3000)));
        assert!(h.rate_bps < 50e9, "{}", h.rate_bps);
    }

    #[test]
    fn a_changed_hop_count_is_not_compared() {
        let s = spec();
        let mut h = Sender::new(&s, 100e9, T_PS);
        h.on_ack(&s, 0, &ack(&[(0, 0, 0)]), (1, 1000));
        let two = ack(&[(T_PS, 125_000, 500_000), (T_PS, 0, 0)]);
        assert!(!h.on_ack(&s, 0, &two, (2000, 3000)));
        assert_eq!(h.count, 2);
    }
}
