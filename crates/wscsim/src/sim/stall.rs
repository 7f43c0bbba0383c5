//! The guard against runs that make no progress: a loop of events at one instant (a
//! service's timer that reschedules itself after 0 s, a time that wrapped and was clamped
//! to now) would otherwise run forever without simulated time moving. Values checked at
//! the scenario check keep ordinary runs far from it; this is the engine's own stop.

use super::{Layer, SimEvent};
use crate::engine::TimePs;

/// Events run at one instant before the run is stopped as making no progress. The busiest
/// bundled scenario runs a few thousand events at one picosecond (a synchronised incast's
/// packets all landing at once); a stuck loop reaches this in a few seconds of wall time.
pub const STALL_EVENTS: u64 = 20_000_000;

/// The limit a scenario sets (`engine.max_events_per_instant`), or `STALL_EVENTS`.
pub fn limit(engine: Option<&crate::config::EngineCfg>) -> u64 {
    engine
        .and_then(|e| e.max_events_per_instant)
        .map_or(STALL_EVENTS, |n| n as u64)
}

/// How many events in a row ran at the same simulated time, and what stopped the run.
#[derive(Default)]
pub struct StallGuard {
    at_ps: TimePs,
    events: u64,
    /// Set when the run was stopped: the one-line reason.
    pub fault: Option<String>,
}

impl StallGuard {
    /// Counts one event at `time_ps`; true (with `fault` set) when too many ran at one
    /// instant.
    #[inline]
    pub fn stalled(&mut self, time_ps: TimePs, kind: &SimEvent, limit: u64) -> bool {
        if time_ps != self.at_ps {
            self.at_ps = time_ps;
            self.events = 0;
            return false;
        }
        self.events += 1;
        if self.events < limit {
            return false;
        }
        self.fault = Some(format!(
            "no progress: {} events ran at simulated time {} ps without time moving on, the last of them {}; a run whose events all happen at one instant never ends",
            self.events,
            time_ps,
            what(kind)
        ));
        true
    }
}

/// The layer whose event looped, in a user's words.
fn what(kind: &SimEvent) -> String {
    match kind.layer() {
        Layer::Svc(_) => {
            "a service's timer (runtime.services: a timer set for 0 s after itself, ctx.after(0), repeats at once)".into()
        }
        Layer::App(_) => "an application's timer (workload)".into(),
        Layer::Transport(e) => format!("a {} timer (transport)", e.transport_name()),
        Layer::Host(_) => "a host CPU's work (host)".into(),
        Layer::Net(_) => "a packet in the network".into(),
        Layer::Metrics(_) => "the metrics sampler (metrics)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::SvcEvent;

    #[test]
    fn stops_only_after_the_limit_at_one_instant() {
        let mut g = StallGuard::default();
        let e = SimEvent::Svc(SvcEvent::Timer { service: 0, tag: 0 });
        // Time moving on resets the count, however many events ran.
        for t in 1..=100 {
            for _ in 0..10 {
                assert!(!g.stalled(t, &e, 10));
            }
        }
        assert!(g.fault.is_none());
        for _ in 0..10 {
            assert!(!g.stalled(101, &e, 10));
        }
        assert!(g.stalled(101, &e, 10));
        assert!(g.fault.as_deref().unwrap().contains("ctx.after(0)"));
    }
}
