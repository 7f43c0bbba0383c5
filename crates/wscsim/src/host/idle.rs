//! CPU idle states (C-states): a core with nothing to do sleeps, the longer the deeper, and
//! work that arrives takes the deeper state's exit latency to start.
//!
//! A state has an exit latency (how long the core takes to wake from it) and a target
//! residency (how long the core must stay idle for the state to pay off). Linux's governor
//! picks, at each idle entry, the deepest state whose target residency fits the idle
//! period it predicts; here it predicts perfectly: a core idle for `t` was in the deepest
//! state whose target residency is at most `t`. Tables are the kernel's own
//! (`drivers/idle/intel_idle.c`).
//!
//! Simplified: the governor's mispredictions, package-wide states, frequency scaling and
//! the work a wake-up itself costs are left out; a wake-up delays the work and does not
//! occupy the core.

use crate::engine::TimePs;

const US: TimePs = 1_000_000;

/// One idle state: its exit latency and its target residency.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdleState {
    pub exit_ps: TimePs,
    pub residency_ps: TimePs,
}

const fn state(exit_us: TimePs, residency_us: TimePs) -> IdleState {
    IdleState {
        exit_ps: exit_us * US,
        residency_ps: residency_us * US,
    }
}

/// Named tables: `(name, what it is, states from the shallowest)`.
pub const TABLES: &[(&str, &str, &[IdleState])] = &[
    (
        "none",
        "no idle states: an idle core starts work at once",
        &[],
    ),
    (
        "ivytown",
        "Intel Xeon E5 v2 (Ivy Bridge-EP), intel_idle's ivt_cstates: C1, C1E, C3, C6",
        &[state(1, 1), state(10, 80), state(59, 156), state(82, 300)],
    ),
];

/// The table named `name`.
pub fn table(name: &str) -> Option<&'static [IdleState]> {
    TABLES.iter().find(|t| t.0 == name).map(|t| t.2)
}

/// How long work that arrives after `idle_ps` of idleness waits for its core to wake.
#[inline]
pub fn wake_ps(states: &[IdleState], idle_ps: TimePs) -> TimePs {
    states
        .iter()
        .take_while(|s| s.residency_ps <= idle_ps)
        .last()
        .map_or(0, |s| s.exit_ps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deeper_the_idle_the_longer_the_wake() {
        let ivt = table("ivytown").unwrap();
        assert_eq!(wake_ps(ivt, 0), 0);
        assert_eq!(wake_ps(ivt, US / 2), 0);
        assert_eq!(wake_ps(ivt, US), US);
        assert_eq!(wake_ps(ivt, 79 * US), US);
        assert_eq!(wake_ps(ivt, 80 * US), 10 * US);
        assert_eq!(wake_ps(ivt, 200 * US), 59 * US);
        assert_eq!(wake_ps(ivt, 2_000 * US), 82 * US);
        assert_eq!(wake_ps(table("none").unwrap(), 2_000 * US), 0);
        assert!(table("haswell").is_none());
    }
}
