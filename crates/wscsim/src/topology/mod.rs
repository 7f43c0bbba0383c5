//! Topologies: builders that produce a `Graph` (nodes and links), checks on it, and the
//! step that turns a graph into a `Network` with its routing tables.

pub mod build;
pub mod chassis;
pub mod diablo;
pub mod edge_list;
pub mod fat_tree;
pub mod leaf_spine;
pub mod single_switch;
pub mod size;
pub mod torus3d;
/// docs/extending.md's example topology, compiled for the tests.
#[cfg(test)]
#[path = "../../tests/toys/topology.rs"]
pub mod toy;

use crate::engine::PartitionId;

/// Most hosts a topology may have (memory grows about linearly: roughly 1 KB per host).
pub const MAX_HOSTS: u64 = 100_000;

/// A topology kind, in its own file: its scenario parameters, their checks and defaults,
/// and the graph they make. One line in `config::topology::TOPOLOGIES` registers it.
pub trait TopologyKind {
    /// Its name in scenarios (`topology.kind`).
    const NAME: &'static str;
    /// Its parameters (the section's keys but `kind` and `link`), each an `Option` that
    /// `graph` fills with its default.
    type Params: serde::de::DeserializeOwned + serde::Serialize;
    /// The link technology its links take unless the scenario names one.
    const DEFAULT_TECHNOLOGY: &'static str = "ethernet";
    /// The field a fault of the graph itself is reported at (a file's, for edge lists).
    const GRAPH_FIELD: &'static str = "topology";
    /// Its preset of link rate and switch latency, if it has one (DIABLO's arrays): the
    /// parameter that names it, which then sets the links' rate.
    fn preset(_p: &mut Self::Params) -> Option<&mut Option<String>> {
        None
    }
    /// Checks `p`, fills in its defaults, refuses a network that would not fit in memory,
    /// and builds the graph on links `link`.
    fn graph(p: &mut Self::Params, link: LinkParams) -> Result<Graph, crate::check::ConfigError>;
}

use crate::net::link::LinkTech;
use crate::net::NodeKind;

#[derive(Clone, Debug)]
pub struct GNode {
    pub kind: NodeKind,
    pub name: String,
    /// Switch tier: 0 next to hosts, increasing upwards (hosts: 0).
    pub tier: u8,
    /// A host that forwards packets for others (a torus server).
    pub forwards: bool,
    /// The partition the node belongs to (builders group pods, racks or torus slabs).
    pub partition: PartitionId,
}

#[derive(Clone, Copy, Debug)]
pub struct GLink {
    pub a: u32,
    pub b: u32,
    pub rate_bps: u64,
    pub delay_ps: u64,
    pub tech: LinkTech,
}

/// A topology before it becomes a network: who is linked to whom, at what rate and delay.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    pub nodes: Vec<GNode>,
    pub links: Vec<GLink>,
    /// Set by the torus builder: its dimensions (hosts are numbered by coordinates).
    pub torus: Option<[u32; 3]>,
}

/// The most NICs a server that does not forward may have (a dual-homed micro-server has 2).
pub const MAX_NICS: u32 = 4;

/// Rate, one-way propagation delay and technology of a link.
#[derive(Clone, Copy, Debug)]
pub struct LinkParams {
    pub rate_bps: u64,
    pub delay_ps: u64,
    pub tech: LinkTech,
}

impl LinkParams {
    /// Standard Ethernet at `rate_bps` with `delay_ps` of propagation.
    pub const fn ethernet(rate_bps: u64, delay_ps: u64) -> LinkParams {
        LinkParams {
            rate_bps,
            delay_ps,
            tech: crate::net::link::ETHERNET,
        }
    }
}

impl Graph {
    pub fn add_host(&mut self, name: String) -> u32 {
        self.nodes.push(GNode {
            kind: NodeKind::Host,
            name,
            tier: 0,
            forwards: false,
            partition: 0,
        });
        (self.nodes.len() - 1) as u32
    }
    pub fn add_switch(&mut self, name: String, tier: u8) -> u32 {
        self.nodes.push(GNode {
            kind: NodeKind::Switch,
            name,
            tier,
            forwards: false,
            partition: 0,
        });
        (self.nodes.len() - 1) as u32
    }
    pub fn link(&mut self, a: u32, b: u32, l: LinkParams) {
        self.links.push(GLink {
            a,
            b,
            rate_bps: l.rate_bps,
            delay_ps: l.delay_ps,
            tech: l.tech,
        });
    }
    pub fn n_hosts(&self) -> usize {
        self.nodes
            .iter()
            .filter(|n| n.kind == NodeKind::Host)
            .count()
    }
    pub fn n_switches(&self) -> usize {
        self.nodes.len() - self.n_hosts()
    }

    /// Puts the nodes added from `first` on into partition `p`.
    pub fn set_partition(&mut self, first: u32, p: PartitionId) {
        for n in &mut self.nodes[first as usize..] {
            n.partition = p;
        }
    }

    /// Checks that every node can reach every other and that each host that does not
    /// forward has 1 to `MAX_NICS` links, each to a different switch. Returns a
    /// description of the first problem found.
    pub fn check(&self) -> Result<(), String> {
        if self.n_hosts() < 2 {
            return Err(format!(
                "{} hosts; a network needs at least 2",
                self.n_hosts()
            ));
        }
        let n = self.nodes.len();
        let mut degree = vec![0u32; n];
        let mut adj: Vec<Vec<u32>> = vec![Vec::new(); n];
        for l in &self.links {
            if l.a == l.b {
                return Err(format!(
                    "node {} is linked to itself",
                    self.nodes[l.a as usize].name
                ));
            }
            degree[l.a as usize] += 1;
            degree[l.b as usize] += 1;
            adj[l.a as usize].push(l.b);
            adj[l.b as usize].push(l.a);
        }
        for (i, nd) in self.nodes.iter().enumerate() {
            if nd.kind != NodeKind::Host || nd.forwards {
                continue;
            }
            if degree[i] == 0 || degree[i] > MAX_NICS {
                return Err(format!(
                    "host {} has {} links; a host has 1 to {MAX_NICS}, each to a switch",
                    nd.name, degree[i]
                ));
            }
            if let Some(&h) = adj[i]
                .iter()
                .find(|&&v| self.nodes[v as usize].kind == NodeKind::Host)
            {
                return Err(format!(
                    "host {} is linked to host {}; hosts attach to switches",
                    nd.name, self.nodes[h as usize].name
                ));
            }
            let mut peers = adj[i].clone();
            peers.sort_unstable();
            if peers.windows(2).any(|w| w[0] == w[1]) {
                return Err(format!(
                    "host {} has two links to the same switch; its NICs go to different switches",
                    nd.name
                ));
            }
        }
        let mut seen = vec![false; n];
        let mut stack = vec![0u32];
        seen[0] = true;
        while let Some(u) = stack.pop() {
            for &v in &adj[u as usize] {
                if !seen[v as usize] {
                    seen[v as usize] = true;
                    stack.push(v);
                }
            }
        }
        if let Some(i) = seen.iter().position(|s| !s) {
            return Err(format!(
                "node {} cannot be reached from node {} (the topology is disconnected)",
                self.nodes[i].name, self.nodes[0].name
            ));
        }
        Ok(())
    }
}
