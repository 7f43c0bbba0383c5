//! Operating-system noise on a host's cores (`host.noise`): what a full Linux does to a
//! server's time besides the network stack's own paths, which DIABLO's servers ran and
//! wscsim's fixed costs otherwise leave out.
//!
//! - **Timer ticks**: every core takes the scheduler tick `tick_hz` times a second; a tick
//!   that fires while the core works steals `tick` from that work (an idle core sleeps
//!   through its ticks, as a tickless kernel does). Each core's ticks have their own phase.
//! - **Background work**, two kinds: short bursts (kernel threads, softirq work: `softirq_*`)
//!   and long ones (daemons: `daemon_*`). Each kind arrives on each core as a Poisson
//!   process (`*_per_s`) and occupies the core for a log-normal time (`*_median`,
//!   `*_sigma`). Work that arrives during a burst waits for it; work running when one
//!   arrives is paused by it.
//! - **Wake-up latency**: a thread woken for data runs a log-normal time later (median
//!   `wakeup_median`, shape `wakeup_sigma`): a delay that occupies no CPU (the scheduler's
//!   decision, leaving an idle state), added where the host model charges a wake-up.
//! - **Work jitter**: every piece of work the host model charges (packet paths, system
//!   calls, a server's request work) takes its cost times a log-normal factor of mean 1 and
//!   coefficient of variation `work_cv`: caches, branch predictors and lock contention make
//!   no two runs of a path alike.
//!
//! Each host has its own random stream (`rng::family::HOST_NOISE`, by host index), so a
//! run is reproducible and one host's noise does not depend on another's draws.
//!
//! Simplified: ticks and bursts are per core and independent of load (a real kernel's
//! background work also follows the load it serves); a burst does not evict the caches of
//! the work it interrupts; the wake-up delay does not hold the core.

use crate::engine::rng::{self, StreamRng};
use crate::engine::{TimePs, PS_PER_S};
use rand_distr::{Distribution, Exp, LogNormal};

/// One kind of background burst: how often it comes to a core and how long it holds it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BurstSpec {
    /// Bursts per second on each core (0: none).
    pub per_s: f64,
    /// Median length (log-normal).
    pub median_ps: TimePs,
    /// Log-normal shape of the lengths (0: every burst the median).
    pub sigma: f64,
}

/// The noise of every host of a scenario (all zero: none).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NoiseSpec {
    /// Scheduler ticks per second on each core (0: none).
    pub tick_hz: f64,
    /// CPU time one tick takes from the work it interrupts.
    pub tick_ps: TimePs,
    /// Short background bursts (kernel threads, softirq work).
    pub softirq: BurstSpec,
    /// Long background bursts (daemons).
    pub daemon: BurstSpec,
    /// Median delay between a thread's wake-up and its running (0: none).
    pub wakeup_median_ps: TimePs,
    pub wakeup_sigma: f64,
    /// Coefficient of variation of every piece of charged work (0: none).
    pub work_cv: f64,
    /// The run's seed (each host's stream derives from it).
    pub seed: u64,
}

impl NoiseSpec {
    pub fn is_off(&self) -> bool {
        self.tick_hz == 0.0
            && self.softirq.per_s == 0.0
            && self.daemon.per_s == 0.0
            && self.wakeup_median_ps == 0
            && self.work_cv == 0.0
    }
}

/// Kinds of background burst.
const KINDS: usize = 2;

/// One core's noise: its tick phase and each kind's next burst (arrival, length).
#[derive(Clone, Copy, Debug)]
struct CoreNoise {
    tick_phase_ps: TimePs,
    bursts: [(TimePs, TimePs); KINDS],
}

impl CoreNoise {
    /// The kind of the earliest next burst, and its arrival.
    #[inline]
    fn first_burst(&self) -> (usize, TimePs) {
        if self.bursts[1].0 < self.bursts[0].0 {
            (1, self.bursts[1].0)
        } else {
            (0, self.bursts[0].0)
        }
    }
}

/// One host's random stream and cores.
#[derive(Clone, Debug)]
struct HostNoise {
    rng: StreamRng,
    cores: Vec<CoreNoise>,
    /// CPU time ticks and bursts took from this host's cores (while it had work).
    stolen_ps: TimePs,
}

/// The laws every host's noise is drawn from.
#[derive(Clone, Debug)]
struct Laws {
    tick_period_ps: TimePs,
    tick_ps: TimePs,
    /// Per kind of burst: gaps between arrivals and lengths (None: that kind is off).
    bursts: [Option<(Exp<f64>, LogNormal<f64>)>; KINDS],
    wakeup: Option<LogNormal<f64>>,
    work: Option<LogNormal<f64>>,
}

/// The noise of every host: the laws and per-host state.
#[derive(Clone, Debug)]
pub struct Noise {
    laws: Laws,
    hosts: Vec<HostNoise>,
}

/// A log-normal law with median `median` and shape `sigma`, or None for a zero median.
fn log_normal(median: f64, sigma: f64) -> Option<LogNormal<f64>> {
    (median > 0.0).then(|| LogNormal::new(median.ln(), sigma).expect("validated parameters"))
}

/// A kind of burst's laws: gaps between arrivals and lengths (None when it is off).
fn burst_laws(b: &BurstSpec) -> Option<(Exp<f64>, LogNormal<f64>)> {
    if b.per_s <= 0.0 {
        return None;
    }
    let gap = Exp::new(b.per_s / PS_PER_S as f64).expect("validated rate");
    Some((gap, log_normal(b.median_ps as f64, b.sigma)?))
}

impl Noise {
    /// Noise for `n_hosts` hosts of `cores` cores each.
    pub fn new(spec: &NoiseSpec, n_hosts: usize, cores: usize) -> Self {
        let tick_period_ps = if spec.tick_hz > 0.0 {
            (PS_PER_S as f64 / spec.tick_hz).round() as TimePs
        } else {
            0
        };
        // A factor of mean 1: median exp(-s^2/2) with s^2 = ln(1 + cv^2).
        let work = (spec.work_cv > 0.0).then(|| {
            let s = (1.0 + spec.work_cv * spec.work_cv).ln().sqrt();
            LogNormal::new(-s * s / 2.0, s).expect("validated parameters")
        });
        let laws = Laws {
            tick_period_ps,
            tick_ps: spec.tick_ps,
            bursts: [burst_laws(&spec.softirq), burst_laws(&spec.daemon)],
            wakeup: log_normal(spec.wakeup_median_ps as f64, spec.wakeup_sigma),
            work,
        };
        let hosts = (0..n_hosts)
            .map(|h| {
                let mut rng = rng::stream(spec.seed, rng::family::HOST_NOISE, h as u64);
                let cores = (0..cores).map(|_| laws.new_core(&mut rng)).collect();
                HostNoise {
                    rng,
                    cores,
                    stolen_ps: 0,
                }
            })
            .collect();
        Noise { laws, hosts }
    }

    /// Runs `cost_ps` of work on `core` of `host`, ready at `start_ps`, on a core free
    /// since `free_ps` (at most `start_ps`): bursts that arrived while the core was idle
    /// and last past `start_ps` delay the start, and ticks and bursts that fall while it
    /// works pause it. Returns when the work ends and the CPU time it took itself
    /// (`cost_ps` with the work's jitter).
    pub fn run(
        &mut self,
        host: u32,
        core: usize,
        free_ps: TimePs,
        start_ps: TimePs,
        cost_ps: TimePs,
    ) -> (TimePs, TimePs) {
        let Noise { laws, hosts } = self;
        let hn = &mut hosts[host as usize];
        let own_ps = match &laws.work {
            Some(w) if cost_ps > 0 => (cost_ps as f64 * w.sample(&mut hn.rng)).round() as TimePs,
            _ => cost_ps,
        };
        let mut c = hn.cores[core];
        // Bursts that came while the core was idle run one after another from their arrival.
        let mut start = start_ps;
        let mut idle_cursor = free_ps;
        loop {
            let (kind, at) = c.first_burst();
            if at > start {
                break;
            }
            idle_cursor = idle_cursor.max(at) + c.bursts[kind].1;
            start = start.max(idle_cursor);
            laws.draw_burst(&mut hn.rng, &mut c, kind, at);
        }
        // What the work waited for them is taken from it too.
        hn.stolen_ps += start - start_ps;
        // The work runs from `start`, paused by what falls on the core meanwhile.
        let (mut now, mut left) = (start, own_ps);
        while left > 0 {
            let tick = laws.next_tick(&c, now);
            let (kind, burst_at) = c.first_burst();
            // A burst that came while another (or a tick) held the core starts after it.
            let at = tick.min(burst_at).max(now);
            if at >= now + left {
                break;
            }
            left -= at - now;
            let taken = if burst_at <= tick {
                let len = c.bursts[kind].1;
                // The next arrival follows this one's arrival (not its delayed start):
                // arrivals are a Poisson process whatever the core is doing.
                laws.draw_burst(&mut hn.rng, &mut c, kind, burst_at);
                len
            } else {
                laws.tick_ps
            };
            hn.stolen_ps += taken;
            now = at + taken;
        }
        hn.cores[core] = c;
        (now + left, own_ps)
    }

    /// The delay before a thread of `host` woken now runs (0 without wake-up latency).
    pub fn wakeup_delay_ps(&mut self, host: u32) -> TimePs {
        match &self.laws.wakeup {
            Some(w) => w.sample(&mut self.hosts[host as usize].rng).round() as TimePs,
            None => 0,
        }
    }

    /// CPU time ticks and bursts took from `host`'s work so far.
    pub fn stolen_ps(&self, host: u32) -> TimePs {
        self.hosts[host as usize].stolen_ps
    }
}

/// Runs `cost_ps` of work on `core` of `host` from `start_ps` (the core free since
/// `free_ps`): through `noise` when there is some (`Noise::run`), else it simply takes its
/// cost. Returns when it ends and the CPU time it took itself.
#[inline]
pub fn run_on(
    noise: Option<&mut Noise>,
    host: u32,
    core: usize,
    free_ps: TimePs,
    start_ps: TimePs,
    cost_ps: TimePs,
) -> (TimePs, TimePs) {
    match noise {
        None => (start_ps + cost_ps, cost_ps),
        Some(n) => n.run(host, core, free_ps, start_ps, cost_ps),
    }
}

impl Laws {
    /// A core with a random tick phase and each kind's first burst.
    fn new_core(&self, rng: &mut StreamRng) -> CoreNoise {
        let tick_phase_ps = match self.tick_period_ps {
            0 => 0,
            p => rand::Rng::random_range(rng, 0..p),
        };
        let mut c = CoreNoise {
            tick_phase_ps,
            bursts: [(TimePs::MAX, 0); KINDS],
        };
        for kind in 0..KINDS {
            self.draw_burst(rng, &mut c, kind, 0);
        }
        c
    }

    /// The next burst of `kind` on a core after `from_ps` (never, for a kind that is off).
    fn draw_burst(&self, rng: &mut StreamRng, c: &mut CoreNoise, kind: usize, from_ps: TimePs) {
        let Some((gap, len)) = &self.bursts[kind] else {
            return;
        };
        let g = (gap.sample(rng).round() as TimePs).max(1);
        c.bursts[kind] = (from_ps.saturating_add(g), len.sample(rng).round() as TimePs);
    }

    /// The first tick of a core at or after `t`.
    #[inline]
    fn next_tick(&self, c: &CoreNoise, t: TimePs) -> TimePs {
        let p = self.tick_period_ps;
        if p == 0 {
            return TimePs::MAX;
        }
        if t <= c.tick_phase_ps {
            return c.tick_phase_ps;
        }
        c.tick_phase_ps + (t - c.tick_phase_ps).div_ceil(p) * p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::PS_PER_US;

    const US: TimePs = PS_PER_US;

    fn only(f: impl FnOnce(&mut NoiseSpec)) -> NoiseSpec {
        let mut s = NoiseSpec {
            seed: 3,
            ..NoiseSpec::default()
        };
        f(&mut s);
        s
    }

    /// Ticks steal their time from work that runs across them, and only then: the work
    /// ends after its own time plus one tick for every tick that fell while it ran.
    #[test]
    fn ticks_pause_running_work_only() {
        let spec = only(|s| {
            s.tick_hz = 1000.0;
            s.tick_ps = 10 * US;
        });
        let mut n = Noise::new(&spec, 1, 1);
        let phase = n.hosts[0].cores[0].tick_phase_ps;
        let period = 1000 * US;
        // Work that fits between two ticks is not touched.
        let start = phase + 1;
        assert_eq!(
            n.run(0, 0, 0, start, 500 * US),
            (start + 500 * US, 500 * US)
        );
        // 100 ms of work from just after a tick: the ticks within it, each extending it.
        let start = phase + 10 * period + 1;
        let (end, own) = n.run(0, 0, start, start, 100_000 * US);
        assert_eq!(own, 100_000 * US);
        let ticks = (end - start - own) / (10 * US);
        assert_eq!((end - start - own) % (10 * US), 0, "whole ticks stolen");
        // Ticks at phase + k x period in [start, end).
        let fell = (end - phase).div_ceil(period) - (start - phase).div_ceil(period);
        assert!(
            fell == ticks,
            "ticks in the run's span: {fell}, stolen: {ticks}"
        );
        assert!((100..=101).contains(&ticks), "{ticks}");
        assert_eq!(n.stolen_ps(0), ticks * 10 * US);
    }

    /// Bursts arrive in elapsed time, so work of length W takes W / (1 - load) on average,
    /// where load = rate x mean burst length.
    #[test]
    fn bursts_slow_work_by_their_load() {
        let spec = only(|s| {
            s.softirq = BurstSpec {
                per_s: 1000.0,
                median_ps: 50 * US,
                sigma: 0.5,
            };
        });
        let mean_len_s = 50e-6 * (0.5f64 * 0.5 / 2.0).exp();
        let load = 1000.0 * mean_len_s;
        let mut n = Noise::new(&spec, 1, 1);
        let w = 10 * PS_PER_S;
        let (end, _) = n.run(0, 0, 0, 0, w);
        let ratio = end as f64 / w as f64;
        let expect = 1.0 / (1.0 - load);
        assert!(
            (ratio / expect - 1.0).abs() < 0.02,
            "{ratio} against {expect}"
        );
    }

    /// Work that becomes ready while a burst holds an idle core starts when it ends.
    #[test]
    fn work_waits_for_a_burst_on_an_idle_core() {
        let spec = only(|s| {
            s.daemon = BurstSpec {
                per_s: 1.0,
                median_ps: 1000 * US,
                sigma: 0.0,
            };
        });
        let mut n = Noise::new(&spec, 1, 1);
        let at = n.hosts[0].cores[0].bursts[1].0;
        // Ready in the middle of the burst on a core idle since 0.
        let (end, _) = n.run(0, 0, 0, at + 400 * US, 10 * US);
        assert_eq!(end, at + 1000 * US + 10 * US);
        // Work ready before it, running across its arrival, is paused for its length.
        let mut n = Noise::new(&spec, 1, 1);
        let (end, _) = n.run(0, 0, 0, at - 5 * US, 10 * US);
        assert_eq!(end, at - 5 * US + 10 * US + 1000 * US);
        // Neither touches work that ends before the burst comes.
        let mut n = Noise::new(&spec, 1, 1);
        assert_eq!(n.run(0, 0, 0, at - 20 * US, 10 * US).0, at - 10 * US);
    }

    /// Work jitter has mean 1 and the asked coefficient of variation; wake-up delays have
    /// the asked median.
    #[test]
    fn jitter_and_wakeups_follow_their_laws() {
        let spec = only(|s| {
            s.work_cv = 0.3;
            s.wakeup_median_ps = 2 * US;
            s.wakeup_sigma = 0.5;
        });
        let mut n = Noise::new(&spec, 1, 1);
        let cost = 1_000_000u64;
        let own: Vec<f64> = (0..20_000)
            .map(|i| n.run(0, 0, 0, i * 10 * cost, cost).1 as f64 / cost as f64)
            .collect();
        let mean = own.iter().sum::<f64>() / own.len() as f64;
        let var = own.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / own.len() as f64;
        assert!((mean - 1.0).abs() < 0.01, "mean {mean}");
        assert!(
            (var.sqrt() / mean - 0.3).abs() < 0.015,
            "cv {}",
            var.sqrt() / mean
        );
        let mut w: Vec<TimePs> = (0..20_001).map(|_| n.wakeup_delay_ps(0)).collect();
        w.sort_unstable();
        let median = w[10_000] as f64 / (2 * US) as f64;
        assert!((median - 1.0).abs() < 0.03, "median / asked {median}");
    }

    /// Same seed, same noise; each host its own stream; off is exactly no noise.
    #[test]
    fn streams_are_per_host_and_reproducible() {
        let spec = only(|s| {
            s.tick_hz = 250.0;
            s.tick_ps = 5 * US;
            s.work_cv = 0.1;
        });
        let runs = |n: &mut Noise, host: u32| -> Vec<TimePs> {
            (0..50)
                .map(|i| n.run(host, 0, 0, i * 7_000 * US, 3_000 * US).0)
                .collect()
        };
        let mut a = Noise::new(&spec, 2, 1);
        let mut b = Noise::new(&spec, 2, 1);
        let a0 = runs(&mut a, 0);
        assert_eq!(a0, runs(&mut b, 0));
        assert_ne!(a0, runs(&mut a, 1));
        let mut c = Noise::new(&NoiseSpec { seed: 4, ..spec }, 2, 1);
        assert_ne!(a0, runs(&mut c, 0));
        assert!(NoiseSpec::default().is_off() && !spec.is_off());
    }
}
