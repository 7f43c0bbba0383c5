//! What `wscsim check` does beyond resolving a scenario: build its simulation without
//! running it, so that every refusal a run makes as it starts (packet captures on ports
//! that cannot be tapped, a torus root without six disjoint trees, time slots over links
//! of unrelated rates, a partitioned run whose wires allow no lookahead) check makes too.
//! A Python scheme is stood in for by a scheme that is never asked anything (check never
//! imports the user's code; its class is checked from its source), and Python services
//! are left out for the same reason.

use super::Sim;
use crate::config::{self, ConfigError};
use crate::packet::PktId;
use crate::scheme::spec::PortSite;
use crate::scheme::{CustomScheme, PortCtx, Verdict};

/// Holds a Python scheme's place in a build that never runs: any call is a bug.
struct StandIn;

impl CustomScheme for StandIn {
    fn classify(&mut self, _: &mut PortCtx, _: PktId, _: u32) -> usize {
        unreachable!("a dry build never runs")
    }
    fn enqueue(&mut self, _: &mut PortCtx, _: PktId, _: usize) -> Verdict {
        unreachable!("a dry build never runs")
    }
    fn schedule(&mut self, _: &mut PortCtx) -> Option<PktId> {
        unreachable!("a dry build never runs")
    }
}

impl Sim {
    /// Resolves scenario JSON and builds its simulation, then drops it; returns the
    /// scenario with every default filled in, as `check_json` does.
    pub fn dry_build_json(text: &str) -> Result<serde_json::Value, ConfigError> {
        let mut r = config::resolve(config::parse_json(text)?)?;
        let scenario = serde_json::to_value(&r.scenario).expect("a resolved scenario serialises");
        r.python_services.clear();
        let mut stand_in = |_: &str, _: &str, _: &serde_json::Value, _: &PortSite| {
            Ok((1, Box::new(StandIn) as Box<dyn CustomScheme>))
        };
        Self::build(r, Some(&mut stand_in))?;
        Ok(scenario)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf_spine(hosts_per_leaf: u32) -> String {
        format!(
            r#"{{"duration": "1ms", "engine": {{"mode": "timeslots"}}, "transport": {{"kind": "udp"}},
            "topology": {{"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": {hosts_per_leaf}}},
            "workload": {{"kind": "udp", "destination": "random", "rate": "1Gbps"}}}}"#
        )
    }

    #[test]
    fn a_refusal_made_while_building_is_made_by_a_dry_build() {
        // Three hosts a leaf over two spines: uplinks at 1.5 times the host links, which
        // time slots cannot divide; only the build finds it.
        let bad = leaf_spine(3);
        assert!(Sim::check_json(&bad).is_ok());
        let e = Sim::dry_build_json(&bad).unwrap_err();
        assert_eq!(e.path, "engine.mode");
        // Four hosts a leaf: uplinks at twice the rate, which they divide.
        let good = leaf_spine(4);
        assert_eq!(
            Sim::dry_build_json(&good).unwrap(),
            Sim::check_json(&good).unwrap()
        );
    }
}
