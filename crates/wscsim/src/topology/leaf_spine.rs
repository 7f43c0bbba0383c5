//! Two-tier leaf-spine: every leaf links to every spine. The uplink rate is set so that a
//! leaf's host capacity over its uplink capacity equals the oversubscription ratio.

use super::{Graph, LinkParams};

/// `[topology]` parameters of this kind (defaults are filled in by `TopologyKind::graph`, below).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Leaf switches (default 4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leaves: Option<i64>,
    /// Spine switches (default 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spines: Option<i64>,
    /// Hosts per leaf (default 8).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hosts_per_leaf: Option<i64>,
    /// Host capacity over uplink capacity per leaf (default 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oversubscription: Option<f64>,
}

pub fn uplink_rate_bps(
    hosts_per_leaf: u32,
    spines: u32,
    host_rate_bps: u64,
    oversubscription: f64,
) -> u64 {
    ((hosts_per_leaf as f64 * host_rate_bps as f64) / (spines as f64 * oversubscription)).round()
        as u64
}

pub fn build(
    leaves: u32,
    spines: u32,
    hosts_per_leaf: u32,
    link: LinkParams,
    uplink: LinkParams,
) -> Graph {
    let mut g = Graph::default();
    let spine_ids: Vec<u32> = (0..spines)
        .map(|s| g.add_switch(format!("spine{s}"), 1))
        .collect();
    for l in 0..leaves {
        // Each leaf with its hosts is a partition; the spines are partition 0.
        let first = g.nodes.len() as u32;
        let leaf = g.add_switch(format!("leaf{l}"), 0);
        for h in 0..hosts_per_leaf {
            let n = g.add_host(format!("h{}", l * hosts_per_leaf + h));
            g.link(n, leaf, link);
        }
        for &s in &spine_ids {
            g.link(leaf, s, uplink);
        }
        g.set_partition(first, (l + 1).min(u32::from(u16::MAX)) as u16);
    }
    g
}

/// The parts of a leaf-spine, without building it.
pub fn size(leaves: u32, spines: u32, hosts_per_leaf: u32) -> super::size::Size {
    let (l, s, h) = (
        u64::from(leaves),
        u64::from(spines),
        u64::from(hosts_per_leaf),
    );
    super::size::Size {
        hosts: l * h,
        switches: l + s,
        links: l * h + l * s,
        max_switch_ports: (h + s).max(l),
        edge_switches: l,
    }
}

/// Topology kind "leaf_spine".
pub struct LeafSpine;

impl super::TopologyKind for LeafSpine {
    const NAME: &'static str = "leaf_spine";
    type Params = Params;

    /// Checks the parameters, fills in their defaults and builds the graph.
    fn graph(t: &mut Params, link: LinkParams) -> Result<Graph, crate::check::ConfigError> {
        let leaves = crate::check::int_in("topology.leaves", *t.leaves.get_or_insert(4), 1, 4096)?;
        let spines = crate::check::int_in("topology.spines", *t.spines.get_or_insert(2), 1, 4096)?;
        let hpl = crate::check::int_in(
            "topology.hosts_per_leaf",
            *t.hosts_per_leaf.get_or_insert(8),
            1,
            4096,
        )?;
        if leaves as u64 * hpl as u64 > super::MAX_HOSTS {
            return Err(crate::check::err(
                "topology.hosts_per_leaf",
                hpl,
                format!(
                    "at most {} hosts in all (leaves x hosts_per_leaf)",
                    super::MAX_HOSTS
                ),
            ));
        }
        let os = *t.oversubscription.get_or_insert(1.0);
        // Spine links at 1000 times the need are already more than any network has; far
        // smaller ratios only push their rate towards overflow.
        let allowed = "a ratio from 0.001 to 1000 (1 means none, 3 means 3:1)";
        crate::check::in_range("topology.oversubscription", os, 0.001, 1000.0, allowed)?;
        if leaves * hpl < 2 {
            return Err(crate::check::err(
                "topology.hosts_per_leaf",
                hpl,
                "enough hosts for at least 2 in all",
            ));
        }
        let up = LinkParams {
            rate_bps: uplink_rate_bps(hpl, spines, link.rate_bps, os).max(1),
            ..link
        };
        super::size::check_fits(&size(leaves, spines, hpl))?;
        Ok(build(leaves, spines, hpl, link, up))
    }
}
