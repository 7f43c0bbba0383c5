//! Two-tier leaf-spine: every leaf links to every spine. The uplink rate is set so that a
//! leaf's host capacity over its uplink capacity equals the oversubscription ratio.

use super::{Graph, LinkParams};

/// `[topology]` parameters of this kind (defaults are filled in by config::topology).
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
