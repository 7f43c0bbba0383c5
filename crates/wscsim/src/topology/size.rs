//! How big a network is, known before it is built, and about how much memory building it
//! takes: enough to refuse at once a topology that cannot fit, instead of finding out by
//! exhausting the machine.

use super::Graph;
use crate::net::NodeKind;

/// Counts of a topology's parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    pub hosts: u64,
    pub switches: u64,
    pub links: u64,
    /// Most ports on one switch (bounds the virtual output queues per port).
    pub max_switch_ports: u64,
    /// Switches with hosts attached (the routing table has a column per edge switch).
    pub edge_switches: u64,
}

/// Bytes per port besides its queues (port state, link, scheme and counters), and per
/// virtual output queue; fitted to the peak memory of building fat trees with k = 32 and
/// 48 (44 and 213 MB), rounded up.
const PORT_BYTES: u64 = 320;
const VOQ_BYTES: u64 = 16;
/// Host state (NIC, host model, address) before any workload.
const HOST_BYTES: u64 = 256;

impl Size {
    pub fn of_graph(g: &Graph) -> Size {
        let mut ports = vec![0u64; g.nodes.len()];
        for l in &g.links {
            ports[l.a as usize] += 1;
            ports[l.b as usize] += 1;
        }
        let is_switch = |i: u32| g.nodes[i as usize].kind == NodeKind::Switch;
        let mut edge = vec![false; g.nodes.len()];
        for l in &g.links {
            if is_switch(l.a) != is_switch(l.b) {
                edge[if is_switch(l.a) { l.a } else { l.b } as usize] = true;
            }
        }
        let switches = g
            .nodes
            .iter()
            .filter(|n| n.kind == NodeKind::Switch)
            .count() as u64;
        let max_switch_ports = (0..g.nodes.len())
            .filter(|&i| is_switch(i as u32))
            .map(|i| ports[i])
            .max()
            .unwrap_or(0);
        Size {
            hosts: g.nodes.len() as u64 - switches,
            switches,
            links: g.links.len() as u64,
            max_switch_ports,
            edge_switches: edge.iter().filter(|&&e| e).count() as u64,
        }
    }

    /// About how many bytes the built network takes: ports with their queues, hosts, and
    /// the routing table (a 4-byte entry per switch and edge switch). The workload's own
    /// state (connections, requests in flight) comes on top and is not counted.
    pub fn network_bytes(&self) -> u64 {
        let voqs = self.max_switch_ports.min(u64::from(super::build::MAX_VOQS));
        let ports = self.links.saturating_mul(2);
        ports
            .saturating_mul(PORT_BYTES + VOQ_BYTES * voqs)
            .saturating_add(self.hosts.saturating_mul(HOST_BYTES))
            .saturating_add(
                self.switches
                    .saturating_mul(self.edge_switches)
                    .saturating_mul(4),
            )
    }
}

pub use crate::memory::machine_memory_bytes;

/// Refuses a network that would not fit in this machine's memory, before building it.
pub fn check_fits(size: &Size) -> Result<(), crate::check::ConfigError> {
    let need = size.network_bytes();
    let Some((have, what)) = crate::memory::memory_limit() else {
        return Ok(());
    };
    let limit = have / 10 * 9;
    if need <= limit {
        return Ok(());
    }
    let gb = |b: u64| format!("{:.1} GB", b as f64 / 1e9);
    Err(crate::check::err(
        "topology",
        format!(
            "a network of {} hosts, {} switches and {} links, which needs about {} to build",
            size.hosts,
            size.switches,
            size.links,
            gb(need)
        ),
        format!("at most about {} (90% of {what})", gb(limit)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{diablo, fat_tree, leaf_spine, LinkParams};

    const L: LinkParams = LinkParams::ethernet(1_000_000_000, 0);

    #[test]
    fn arithmetic_sizes_match_the_built_graphs() {
        assert_eq!(fat_tree::size(8), Size::of_graph(&fat_tree::build(8, L)));
        assert_eq!(
            leaf_spine::size(5, 3, 7),
            Size::of_graph(&leaf_spine::build(5, 3, 7, L, L))
        );
        assert_eq!(
            leaf_spine::size(3, 9, 2),
            Size::of_graph(&leaf_spine::build(3, 9, 2, L, L))
        );
        for (racks, spr, rpa) in [(16, 31, 16), (40, 31, 16), (3, 2, 1), (1, 5, 16)] {
            assert_eq!(
                diablo::size(racks, spr, rpa),
                Size::of_graph(&diablo::build(racks, spr, rpa, L)),
                "{racks} {spr} {rpa}"
            );
        }
    }

    #[test]
    fn a_huge_leaf_spine_is_estimated_in_tens_of_gigabytes() {
        let gb = leaf_spine::size(4096, 4096, 8).network_bytes() as f64 / 1e9;
        assert!(gb > 20.0, "{gb}");
        let k16 = fat_tree::size(16).network_bytes() as f64 / 1e6;
        assert!(k16 < 20.0, "{k16}");
    }
}
