//! k-ary fat tree (Al-Fares et al., SIGCOMM 2008): k pods of k/2 edge and k/2 aggregation
//! switches, (k/2)^2 core switches, k^3/4 hosts, all links alike. k must be even.

use super::{Graph, LinkParams};

/// `[topology]` parameters of this kind (defaults are filled in by `TopologyKind::graph`, below).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// k: an even number of ports per switch (default 4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub k: Option<i64>,
}

pub fn build(k: u32, link: LinkParams) -> Graph {
    let half = k / 2;
    let mut g = Graph::default();
    let cores: Vec<u32> = (0..half * half)
        .map(|c| g.add_switch(format!("core{c}"), 2))
        .collect();
    let mut host = 0;
    for pod in 0..k {
        // Each pod is a partition; the cores are partition 0.
        let first = g.nodes.len() as u32;
        let aggs: Vec<u32> = (0..half)
            .map(|a| g.add_switch(format!("agg{pod}_{a}"), 1))
            .collect();
        for e in 0..half {
            let edge = g.add_switch(format!("edge{pod}_{e}"), 0);
            for _ in 0..half {
                let n = g.add_host(format!("h{host}"));
                host += 1;
                g.link(n, edge, link);
            }
            for &a in &aggs {
                g.link(edge, a, link);
            }
        }
        // Aggregation switch a of every pod links to cores a*half .. a*half+half-1.
        for (a, &agg) in aggs.iter().enumerate() {
            for c in 0..half {
                g.link(agg, cores[a * half as usize + c as usize], link);
            }
        }
        g.set_partition(first, (pod + 1) as u16);
    }
    g
}

/// The parts of a k-ary fat tree, without building it.
pub fn size(k: u32) -> super::size::Size {
    let k = u64::from(k);
    super::size::Size {
        hosts: k * k * k / 4,
        switches: 5 * k * k / 4,
        links: 3 * k * k * k / 4,
        max_switch_ports: k,
        edge_switches: k * k / 2,
    }
}

/// Topology kind "fat_tree".
pub struct FatTree;

impl super::TopologyKind for FatTree {
    const NAME: &'static str = "fat_tree";
    type Params = Params;

    /// Checks the parameters, fills in their defaults and builds the graph.
    fn graph(t: &mut Params, link: LinkParams) -> Result<Graph, crate::check::ConfigError> {
        let k = *t.k.get_or_insert(4);
        if !(2..=72).contains(&k) || k % 2 != 0 {
            return Err(crate::check::err(
                "topology.k",
                k,
                "an even integer from 2 to 72 (k^3/4 hosts, at most 100,000)",
            ));
        }
        super::size::check_fits(&size(k as u32))?;
        Ok(build(k as u32, link))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_k() {
        for k in [2u32, 4, 8, 16] {
            let g = build(k, LinkParams::ethernet(1, 0));
            assert_eq!(g.n_hosts() as u32, k * k * k / 4);
            assert_eq!(g.n_switches() as u32, 5 * k * k / 4);
            assert_eq!(g.links.len() as u32, 3 * k * k * k / 4);
            g.check().unwrap();
        }
    }
}
