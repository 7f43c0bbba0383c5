//! One switch with every host attached (a star).

use super::{Graph, LinkParams};

/// `[topology]` parameters of this kind (defaults are filled in by `TopologyKind::graph`, below).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Hosts on the switch (default 16).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hosts: Option<i64>,
}

pub fn build(hosts: u32, link: LinkParams) -> Graph {
    let mut g = Graph::default();
    let sw = g.add_switch("switch".into(), 0);
    for h in 0..hosts {
        let n = g.add_host(format!("h{h}"));
        g.link(n, sw, link);
    }
    g
}

/// Topology kind "single_switch".
pub struct SingleSwitch;

impl super::TopologyKind for SingleSwitch {
    const NAME: &'static str = "single_switch";
    type Params = Params;

    /// Checks the parameters, fills in their defaults and builds the graph.
    fn graph(t: &mut Params, link: LinkParams) -> Result<Graph, crate::check::ConfigError> {
        let h = crate::check::int_in(
            "topology.hosts",
            *t.hosts.get_or_insert(16),
            2,
            super::MAX_HOSTS as i64,
        )?;
        let hosts = u64::from(h);
        super::size::check_fits(&super::size::Size {
            hosts,
            switches: 1,
            links: hosts,
            max_switch_ports: hosts,
            edge_switches: 1,
        })?;
        Ok(build(h, link))
    }
}
