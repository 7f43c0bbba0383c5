//! A toy topology, the example of docs/extending.md ("Adding a topology"): a dumbbell, two
//! switches joined by one link, each with `hosts_per_side` hosts. This file and one line in
//! `config::topology::TOPOLOGIES` are all it takes; it is compiled into the crate for its
//! tests only (`#[cfg(test)]` on that line) so that the walk-through stays true.

use super::size::{check_fits, Size};
use super::{Graph, LinkParams, TopologyKind};

/// `[topology]` parameters of kind "toy_dumbbell".
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Hosts on each of the two switches (default 4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hosts_per_side: Option<i64>,
}

/// Topology kind "toy_dumbbell".
pub struct ToyDumbbell;

impl TopologyKind for ToyDumbbell {
    const NAME: &'static str = "toy_dumbbell";
    type Params = Params;

    fn graph(p: &mut Params, link: LinkParams) -> Result<Graph, crate::check::ConfigError> {
        let n = *p.hosts_per_side.get_or_insert(4);
        let n = crate::check::int_in("topology.hosts_per_side", n, 1, 1000)?;
        let hosts = 2 * u64::from(n);
        check_fits(&Size {
            hosts,
            switches: 2,
            links: hosts + 1,
            max_switch_ports: u64::from(n) + 1,
            edge_switches: 2,
        })?;
        let mut g = Graph::default();
        let left = g.add_switch("left".into(), 0);
        let right = g.add_switch("right".into(), 0);
        g.link(left, right, link);
        for (side, sw) in [("l", left), ("r", right)] {
            for h in 0..n {
                let host = g.add_host(format!("{side}{h}"));
                g.link(host, sw, link);
            }
        }
        Ok(g)
    }
}

#[cfg(test)]
mod tests {
    use crate::sim::Sim;

    fn permutation_on(topology: &str) -> Result<Sim, crate::check::ConfigError> {
        let mut s = Sim::from_json(&format!(
            r#"{{"duration":"20ms","topology":{topology},"transport":{{"rto_min":"1ms"}},
            "workload":{{"kind":"permutation"}}}}"#
        ))?;
        s.run();
        Ok(s)
    }

    /// A scenario names the toy and runs over it: every host's NIC sends, and every
    /// host's switch port delivers to it; bad parameters are refused by their path.
    #[test]
    fn a_scenario_runs_over_the_toy_and_refuses_its_bad_parameters() {
        let s = permutation_on(r#"{"kind":"toy_dumbbell","hosts_per_side":3}"#).unwrap();
        assert_eq!(s.net.n_hosts(), 6);
        assert_eq!(s.net.switches().len(), 2);
        assert!(s.net.counters().delivered > 0);
        let sent = s.net.ports().iter().filter(|p| p.stats.tx_pkts > 0).count();
        assert!(sent >= 12, "{sent} ports sent");
        let e = permutation_on(r#"{"kind":"toy_dumbbell","hosts_per_side":0}"#)
            .err()
            .unwrap();
        assert_eq!(e.path, "topology.hosts_per_side");
        let e = permutation_on(r#"{"kind":"toy_dumbbell","k":4}"#)
            .err()
            .unwrap();
        assert_eq!(e.path, "topology.k");
    }
}
