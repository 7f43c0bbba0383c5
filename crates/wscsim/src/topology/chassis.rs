//! A micro-server chassis (the RAMCloud slides' NEC Micro Modular Server): `servers` Atom
//! servers, each with one port on each of `switches` switches (46 servers, two 2.5 GbE
//! ports, two FM5224 switches). A server spreads its flows over its ports by flow hash
//! (link aggregation, which the slides list as future work); between two servers every
//! path is one hop through one of the switches.
//!
//! Simplified: the chassis's 4 x 40 Gbit/s uplinks lead out of it and are left out (nothing
//! in the slides' experiments leaves the chassis, and they do not say how the uplinks are
//! split between the switches).

use super::{Graph, LinkParams};

/// `[topology]` parameters of this kind (defaults are filled in by `TopologyKind::graph`, below).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Servers in the chassis (default 46).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub servers: Option<i64>,
    /// Switches, each with a port to every server (default 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub switches: Option<i64>,
}

pub fn build(servers: u32, switches: u32, link: LinkParams) -> Graph {
    let mut g = Graph::default();
    let sws: Vec<u32> = (0..switches)
        .map(|s| g.add_switch(format!("sw{s}"), 0))
        .collect();
    for h in 0..servers {
        let n = g.add_host(format!("h{h}"));
        for &sw in &sws {
            g.link(n, sw, link);
        }
    }
    g
}

/// Topology kind "chassis".
pub struct Chassis;

impl super::TopologyKind for Chassis {
    const NAME: &'static str = "chassis";
    type Params = Params;

    /// Checks the parameters, fills in their defaults and builds the graph.
    fn graph(t: &mut Params, link: LinkParams) -> Result<Graph, crate::check::ConfigError> {
        let servers =
            crate::check::int_in("topology.servers", *t.servers.get_or_insert(46), 2, 100_000)?;
        let switches = crate::check::int_in(
            "topology.switches",
            *t.switches.get_or_insert(2),
            1,
            i64::from(super::MAX_NICS),
        )?;
        let hosts = u64::from(servers);
        super::size::check_fits(&super::size::Size {
            hosts,
            switches: u64::from(switches),
            links: hosts * u64::from(switches),
            max_switch_ports: hosts,
            edge_switches: u64::from(switches),
        })?;
        Ok(build(servers, switches, link))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_server_has_a_port_on_every_switch() {
        let g = build(46, 2, LinkParams::ethernet(2_500_000_000, 50_000));
        assert_eq!((g.n_hosts(), g.n_switches()), (46, 2));
        assert_eq!(g.links.len(), 92);
        assert!(g.check().is_ok());
    }
}
