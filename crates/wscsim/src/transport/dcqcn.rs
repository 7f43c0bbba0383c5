//! DCQCN's rate control (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments",
//! SIGCOMM 2015), as RoCEv2 NICs run it: the reaction point (the sender's rate limiter,
//! `ReactionPoint`) and the notification point (the receiver's CNP pacing, `NotifyPoint`).
//! Switches mark ECN; a receiver that sees CE sends a congestion notification packet (CNP)
//! to the sender, at most one per `cnp_interval`; the sender cuts its rate on a CNP by
//! `alpha / 2` (alpha an estimate of how often it is notified), then recovers towards the
//! rate it had before the cut and beyond, in three phases driven by a timer and a byte
//! counter: fast recovery (halfway to the target at each event), additive increase (the
//! target grows by `ai_rate`), hyper increase (by `hai_rate` times the events past the
//! threshold).
//!
//! Two parameter sets (`preset`): NVIDIA's published ConnectX defaults ("DCQCN Parameters",
//! NVIDIA/Mellanox; `dce_tcp_g` 1019, `dce_tcp_rtt` 1 us, `initial_alpha_value` 1023,
//! `rate_reduce_monitor_period` 4 us, `rpg_min_dec_fac` 50%, `rpg_min_rate` 1 Mb/s,
//! `rpg_gd` 11 (a cut of alpha / 2), `rpg_time_reset` 300 us, `rpg_byte_reset` 32,767 bytes,
//! `rpg_threshold` 1, `rpg_ai_rate` 5 Mb/s, `rpg_hai_rate` 50 Mb/s, `min_time_between_cnps`
//! 4 us, `clamp_tgt_rate` off), and the paper's (g = 1/256, 55 us alpha and increase timers,
//! a 10 MB byte counter, F = 5, R_AI = 40 Mb/s, CNPs at most every 50 us; R_HAI, which we
//! could not read in the paper, is 200 Mb/s from its author's ns-3 configuration,
//! bobzhuyb/ns3-rdma).
//!
//! Simplified: alpha is updated lazily, at the next CNP, for the periods that passed
//! without one (the same values as a timer every period, without the events); a CNP that
//! comes within `rate_reduce_period` of the last cut updates alpha and cuts at the first
//! event after the period ends, not exactly at its end; `clamp_tgt_rate_after_time_inc`
//! is not modelled. The RoCEv2 transport (`transport::roce`) runs it, one reaction point
//! per queue pair.

use crate::check::{err, one_of, ConfigError};
use crate::engine::TimePs;

/// `roce.dcqcn`: DCQCN's parameters. Each left out takes the preset's value.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// "nvidia" (ConnectX defaults, the default) or "paper" (Zhu et al. 2015).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Alpha's gain g (nvidia: 5/1024, 1 - dce_tcp_g / 1024; paper: 1/256).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub g: Option<f64>,
    /// Additive increase of the target rate (nvidia: 5 Mb/s; paper: 40 Mb/s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ai_rate: Option<crate::units::Rate>,
    /// Hyper increase step (nvidia: 50 Mb/s; paper: 200 Mb/s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hai_rate: Option<crate::units::Rate>,
    /// The rate-increase timer (nvidia: 300 us; paper: 55 us).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_reset: Option<crate::units::Duration>,
    /// Bytes sent per byte-counter increase event (nvidia: 32767B; paper: 10MB).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub byte_reset: Option<crate::units::Bytes>,
    /// Increase events before fast recovery ends (nvidia: 1; paper: 5).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threshold: Option<i64>,
    /// The least time between two CNPs of a queue pair (nvidia: 4 us; paper: 50 us).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cnp_interval: Option<crate::units::Duration>,
}

/// DCQCN's parameters resolved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spec {
    pub g: f64,
    pub alpha_period_ps: TimePs,
    pub initial_alpha: f64,
    /// At most one cut per this period.
    pub rate_reduce_period_ps: TimePs,
    /// A cut leaves at least this fraction of the rate.
    pub min_dec_factor: f64,
    pub min_rate_bps: f64,
    pub time_reset_ps: TimePs,
    pub byte_reset_bytes: u64,
    pub threshold: u32,
    pub ai_rate_bps: f64,
    pub hai_rate_bps: f64,
    /// Every cut sets the target to the rate (else only the first after an increase).
    pub clamp_target: bool,
    pub cnp_interval_ps: TimePs,
}

const US: TimePs = 1_000_000;

impl Spec {
    /// NVIDIA's ConnectX defaults.
    pub const NVIDIA: Spec = Spec {
        g: 5.0 / 1024.0,
        alpha_period_ps: US,
        initial_alpha: 1023.0 / 1024.0,
        rate_reduce_period_ps: 4 * US,
        min_dec_factor: 0.5,
        min_rate_bps: 1e6,
        time_reset_ps: 300 * US,
        byte_reset_bytes: 32_767,
        threshold: 1,
        ai_rate_bps: 5e6,
        hai_rate_bps: 50e6,
        clamp_target: false,
        cnp_interval_ps: 4 * US,
    };
    /// Zhu et al.'s parameters (SIGCOMM 2015), R_HAI from the author's ns-3 setup.
    pub const PAPER: Spec = Spec {
        g: 1.0 / 256.0,
        alpha_period_ps: 55 * US,
        initial_alpha: 1.0,
        rate_reduce_period_ps: 0,
        min_dec_factor: 0.0,
        min_rate_bps: 1e6,
        time_reset_ps: 55 * US,
        byte_reset_bytes: 10_000_000,
        threshold: 5,
        ai_rate_bps: 40e6,
        hai_rate_bps: 200e6,
        clamp_target: true,
        cnp_interval_ps: 50 * US,
    };
}

impl Params {
    /// Checks the parameters (under `path`) and fills in the preset's values.
    pub fn resolve(&mut self, path: &str) -> Result<Spec, ConfigError> {
        let p = |k: &str| format!("{path}.{k}");
        let preset = self.preset.get_or_insert_with(|| "nvidia".into());
        one_of(&p("preset"), preset, &["nvidia", "paper"])?;
        let mut s = if preset == "paper" {
            Spec::PAPER
        } else {
            Spec::NVIDIA
        };
        s.g = crate::check::fraction(&p("g"), *self.g.get_or_insert(s.g))?;
        let rate = |v: &mut Option<crate::units::Rate>, d: f64, k: &str| {
            crate::check::positive_rate(&p(k), *v.get_or_insert(crate::units::Rate(d as u64)))
        };
        s.ai_rate_bps = rate(&mut self.ai_rate, s.ai_rate_bps, "ai_rate")?;
        s.hai_rate_bps = rate(&mut self.hai_rate, s.hai_rate_bps, "hai_rate")?;
        let reset = *self
            .time_reset
            .get_or_insert(crate::units::Duration(s.time_reset_ps));
        s.cnp_interval_ps = self
            .cnp_interval
            .get_or_insert(crate::units::Duration(s.cnp_interval_ps))
            .0;
        s.time_reset_ps = crate::check::positive_duration(&p("time_reset"), reset)?;
        s.byte_reset_bytes = self
            .byte_reset
            .get_or_insert(crate::units::Bytes(s.byte_reset_bytes))
            .0;
        if s.byte_reset_bytes == 0 {
            return Err(err(&p("byte_reset"), "0B", "at least 1B"));
        }
        let t = *self.threshold.get_or_insert(i64::from(s.threshold));
        s.threshold = crate::check::int_in(&p("threshold"), t, 1, 1000)?;
        Ok(s)
    }
}

/// The sender's rate limiter of one queue pair.
#[derive(Clone, Debug)]
pub struct ReactionPoint {
    line_bps: f64,
    /// The current rate and the target it recovers towards.
    pub rate_bps: f64,
    pub target_bps: f64,
    alpha: f64,
    /// The start of the alpha period `alpha` holds at, and whether a CNP came in it.
    alpha_period_start: TimePs,
    cnp_in_period: bool,
    /// When the rate was last cut (None: never), and whether a CNP waits for a cut.
    last_cut: Option<TimePs>,
    cut_waiting: bool,
    /// Increase events since the last cut, by timer and by byte counter.
    timer_events: u32,
    byte_events: u32,
    bytes_since: u64,
    increased_since_cut: bool,
}

impl ReactionPoint {
    /// A queue pair sending at line rate `line_bps`, not yet notified.
    pub fn new(spec: &Spec, line_bps: f64) -> ReactionPoint {
        ReactionPoint {
            line_bps,
            rate_bps: line_bps,
            target_bps: line_bps,
            alpha: spec.initial_alpha,
            alpha_period_start: 0,
            cnp_in_period: false,
            last_cut: None,
            cut_waiting: false,
            timer_events: 0,
            byte_events: 0,
            bytes_since: 0,
            increased_since_cut: false,
        }
    }

    /// Whether the rate is below line rate (the increase timer must run).
    pub fn limited(&self) -> bool {
        self.rate_bps < self.line_bps
    }

    /// Alpha as of `now`: each full period since it was last updated takes it to
    /// `(1 - g) alpha + g` if a CNP came in it, else `(1 - g) alpha`.
    pub fn alpha_at(&mut self, spec: &Spec, now: TimePs) -> f64 {
        if self.last_cut.is_none() && !self.cnp_in_period {
            return self.alpha; // not notified yet: alpha starts at the first CNP
        }
        let period = spec.alpha_period_ps.max(1);
        let periods = now.saturating_sub(self.alpha_period_start) / period;
        if periods > 0 {
            let mut a = self.alpha;
            if self.cnp_in_period {
                a = (1.0 - spec.g) * a + spec.g;
            }
            a *= (1.0 - spec.g).powi((periods - 1).min(i32::MAX as u64) as i32);
            self.alpha = a;
            self.alpha_period_start += periods * period;
            self.cnp_in_period = false;
        }
        self.alpha
    }

    /// A CNP arrived at `now`: alpha counts it, and the rate is cut unless it was cut
    /// less than `rate_reduce_period` ago (then at the first event after that). Returns
    /// whether it cut (the increase timer then starts again).
    pub fn on_cnp(&mut self, spec: &Spec, now: TimePs) -> bool {
        if self.last_cut.is_none() && !self.cnp_in_period {
            self.alpha_period_start = now;
        }
        self.alpha_at(spec, now);
        self.cnp_in_period = true;
        self.cut_waiting = true;
        self.cut_if_due(spec, now)
    }

    /// Cuts the rate if a CNP waits for a cut and the reduce period allows; says whether.
    fn cut_if_due(&mut self, spec: &Spec, now: TimePs) -> bool {
        let due = self
            .last_cut
            .is_none_or(|t| now >= t + spec.rate_reduce_period_ps);
        if !(self.cut_waiting && due) {
            return false;
        }
        let alpha = self.alpha_at(spec, now);
        if spec.clamp_target || self.increased_since_cut || self.last_cut.is_none() {
            self.target_bps = self.rate_bps;
        }
        let cut = self.rate_bps * (1.0 - alpha / 2.0);
        self.rate_bps = cut
            .max(self.rate_bps * spec.min_dec_factor)
            .max(spec.min_rate_bps)
            .min(self.line_bps);
        self.last_cut = Some(now);
        self.cut_waiting = false;
        self.timer_events = 0;
        self.byte_events = 0;
        self.bytes_since = 0;
        self.increased_since_cut = false;
        true
    }

    /// The increase timer fired at `now` (every `time_reset` while the rate is limited).
    /// A cut that was waiting comes first, and then no increase (the timer starts again).
    pub fn on_timer(&mut self, spec: &Spec, now: TimePs) {
        if !self.cut_if_due(spec, now) {
            self.increase(spec, true);
        }
    }

    /// `bytes` left at `now`: the byte counter may make an increase event.
    pub fn on_sent(&mut self, spec: &Spec, now: TimePs, bytes: u64) {
        if self.cut_if_due(spec, now) || !self.limited() {
            return;
        }
        self.bytes_since += bytes;
        while self.bytes_since >= spec.byte_reset_bytes {
            self.bytes_since -= spec.byte_reset_bytes;
            self.increase(spec, false);
        }
    }

    /// One increase event: fast recovery while both counters are below the threshold,
    /// hyper increase once both reach it, additive increase between.
    fn increase(&mut self, spec: &Spec, by_timer: bool) {
        let f = spec.threshold;
        let (t, b) = (self.timer_events, self.byte_events);
        if t.max(b) >= f && t.min(b) >= f {
            let i = f64::from(t.min(b) - f + 1);
            self.target_bps += i * spec.hai_rate_bps;
        } else if t.max(b) >= f {
            self.target_bps += spec.ai_rate_bps;
        }
        self.target_bps = self.target_bps.min(self.line_bps);
        self.rate_bps = ((self.rate_bps + self.target_bps) / 2.0).min(self.line_bps);
        if by_timer {
            self.timer_events += 1;
        } else {
            self.byte_events += 1;
        }
        self.increased_since_cut = true;
    }
}

/// The receiver's CNP pacing for one queue pair: at most one CNP per `cnp_interval`.
#[derive(Clone, Copy, Debug, Default)]
pub struct NotifyPoint {
    last_cnp: Option<TimePs>,
}

impl NotifyPoint {
    /// A CE-marked packet arrived at `now`: whether to send a CNP.
    pub fn on_marked(&mut self, spec: &Spec, now: TimePs) -> bool {
        if self
            .last_cnp
            .is_some_and(|t| now < t + spec.cnp_interval_ps)
        {
            return false;
        }
        self.last_cnp = Some(now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: f64 = 100e9;

    #[test]
    fn the_first_cnp_halves_the_rate_and_the_target_keeps_it() {
        let s = Spec::NVIDIA;
        let mut rp = ReactionPoint::new(&s, LINE);
        rp.on_cnp(&s, 10 * US);
        // alpha starts at 1023/1024 and counts the CNP: a cut of nearly half, bounded by
        // the 50% floor.
        assert!(
            (rp.rate_bps - LINE * 0.5).abs() < LINE * 0.001,
            "{}",
            rp.rate_bps
        );
        assert_eq!(rp.target_bps, LINE);
        assert!(rp.limited());
    }

    #[test]
    fn cnps_within_the_reduce_period_make_one_cut_and_then_another() {
        let s = Spec::NVIDIA;
        let mut rp = ReactionPoint::new(&s, LINE);
        rp.on_cnp(&s, 0);
        let once = rp.rate_bps;
        rp.on_cnp(&s, 2 * US);
        assert_eq!(rp.rate_bps, once, "within 4 us of the cut");
        rp.on_sent(&s, 5 * US, 1000);
        assert!(
            rp.rate_bps < once,
            "cut at the first event after the period"
        );
        // No increase came between the cuts, and clamp_tgt_rate is off: the target stays.
        assert_eq!(rp.target_bps, LINE);
    }

    #[test]
    fn alpha_decays_by_one_minus_g_per_period_without_cnps() {
        let s = Spec::PAPER;
        let mut rp = ReactionPoint::new(&s, LINE);
        rp.on_cnp(&s, 0);
        // The period with the CNP: (1 - g) 1 + g = 1; then ten periods without.
        let a = rp.alpha_at(&s, 11 * s.alpha_period_ps);
        let want = (1.0 - s.g).powi(10);
        assert!((a - want).abs() < 1e-12, "{a} {want}");
        // A CNP in a later period raises it by g of what is left.
        rp.on_cnp(&s, 11 * s.alpha_period_ps + 1);
        let b = rp.alpha_at(&s, 12 * s.alpha_period_ps);
        assert!((b - ((1.0 - s.g) * want + s.g)).abs() < 1e-12);
    }

    #[test]
    fn recovery_goes_halfway_then_adds_then_hyper_adds() {
        let s = Spec::PAPER; // F = 5 fast-recovery steps
        let mut rp = ReactionPoint::new(&s, 40e9);
        rp.on_cnp(&s, 0);
        let (r0, target) = (rp.rate_bps, rp.target_bps);
        assert_eq!(r0, 20e9, "alpha 1: half");
        let mut gap = target - r0;
        for step in 1..=5 {
            rp.on_timer(&s, step * s.time_reset_ps);
            gap /= 2.0;
            assert!((target - rp.rate_bps - gap).abs() < 1.0, "step {step}");
            assert_eq!(rp.target_bps, target, "fast recovery keeps the target");
        }
        rp.on_timer(&s, 6 * s.time_reset_ps);
        assert_eq!(
            rp.target_bps,
            target.min(40e9),
            "the target is at line rate already"
        );
        // From a lower target, additive then hyper increase (bytes reach F too).
        let mut rp = ReactionPoint::new(&s, 40e9);
        rp.on_cnp(&s, 0);
        rp.on_timer(&s, s.time_reset_ps);
        rp.on_cnp(&s, s.time_reset_ps + 1); // cut after an increase: target = rate
        let t0 = rp.target_bps;
        for k in 1..=6 {
            rp.on_timer(&s, (1 + k) * s.time_reset_ps);
        }
        assert!(
            (rp.target_bps - (t0 + s.ai_rate_bps)).abs() < 1.0,
            "one AI step"
        );
        // Byte events: the timer's count is past F, the bytes' not yet: additive.
        rp.on_sent(&s, 8 * s.time_reset_ps, 5 * s.byte_reset_bytes);
        assert!((rp.target_bps - (t0 + 6.0 * s.ai_rate_bps)).abs() < 1.0);
        rp.on_sent(&s, 8 * s.time_reset_ps, s.byte_reset_bytes);
        assert!(
            (rp.target_bps - (t0 + 6.0 * s.ai_rate_bps + s.hai_rate_bps)).abs() < 1.0,
            "both counters at F: a hyper step of one R_HAI"
        );
    }

    #[test]
    fn the_rate_stays_between_its_floor_and_the_line() {
        let s = Spec::NVIDIA;
        let mut rp = ReactionPoint::new(&s, 10e9);
        for i in 0..200 {
            rp.on_cnp(&s, i * 5 * US);
        }
        assert!(
            rp.rate_bps >= s.min_rate_bps && rp.rate_bps < 1e7,
            "{}",
            rp.rate_bps
        );
        for i in 0..100_000 {
            rp.on_timer(&s, (1000 + i) * s.time_reset_ps);
        }
        assert!(rp.rate_bps <= 10e9 && rp.rate_bps > 9.9e9);
    }

    #[test]
    fn a_cut_that_waited_for_the_timer_is_not_followed_by_an_increase() {
        let s = Spec::NVIDIA;
        let mut rp = ReactionPoint::new(&s, LINE);
        assert!(rp.on_cnp(&s, 0));
        assert!(!rp.on_cnp(&s, 2 * US), "within the reduce period");
        let before = rp.rate_bps;
        rp.on_timer(&s, 5 * US);
        assert!(
            rp.rate_bps < before * 0.75,
            "the waiting cut, no recovery step after it"
        );
        let cut = rp.rate_bps;
        rp.on_timer(&s, 305 * US);
        assert!(rp.rate_bps > cut, "the next timer recovers");
    }

    #[test]
    fn cnps_are_paced_at_the_receiver() {
        let s = Spec::NVIDIA;
        let mut np = NotifyPoint::default();
        assert!(np.on_marked(&s, 0));
        assert!(!np.on_marked(&s, 3 * US));
        assert!(np.on_marked(&s, 4 * US));
    }

    #[test]
    fn presets_and_bad_values() {
        let mut p = Params::default();
        assert_eq!(p.resolve("transport.dcqcn").unwrap(), Spec::NVIDIA);
        let mut p = Params {
            preset: Some("paper".into()),
            ai_rate: Some(crate::units::Rate(10_000_000)),
            ..Default::default()
        };
        let s = p.resolve("transport.dcqcn").unwrap();
        assert_eq!((s.ai_rate_bps, s.threshold), (10e6, 5));
        let e = Params {
            preset: Some("vendor".into()),
            ..Default::default()
        }
        .resolve("transport.dcqcn")
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("transport.dcqcn.preset") && e.contains("vendor"),
            "{e}"
        );
        let e = Params {
            g: Some(0.0),
            ..Default::default()
        }
        .resolve("transport.dcqcn")
        .unwrap_err()
        .to_string();
        assert!(e.contains("transport.dcqcn.g"), "{e}");
    }
}
