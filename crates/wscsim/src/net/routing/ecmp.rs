//! Shortest-path ECMP tables, computed from the switches' links and the hosts they attach
//! (`SwitchGraph`, which the topology layer makes from its graph): a breadth-first search
//! over switches from every host-facing switch; a switch's ports towards a destination are
//! those whose neighbour is one hop closer.

use super::kind::ForwarderKind;
use super::Routing;
use crate::engine::Scheduler;
use crate::net::{NetEvent, Network, NodeKind, Upcall};
use crate::packet::PktId;
use std::collections::{HashMap, VecDeque};

/// The switches of a network as ECMP sees them, in switch indices.
#[derive(Clone, Debug, Default)]
pub struct SwitchGraph {
    /// Per switch: (neighbour switch, local port), one per link to another switch.
    pub links: Vec<Vec<(u32, u32)>>,
    /// Every host NIC on a switch: (switch, host, local port at the switch), sorted by
    /// switch and then in the switch's port order.
    pub attached: Vec<(u32, u32, u32)>,
    pub n_hosts: usize,
}

impl Routing {
    /// The shortest-path tables of `g`. A host on several switches (a dual-homed chassis
    /// server) routes through the last of them and is reached directly from each.
    pub fn shortest_paths(g: &SwitchGraph) -> Routing {
        let ns = g.links.len();
        let mut edge_switches: Vec<u32> = g.attached.iter().map(|a| a.0).collect();
        edge_switches.dedup();
        let mut edge_of = vec![u32::MAX; ns];
        for (ei, &e) in edge_switches.iter().enumerate() {
            edge_of[e as usize] = ei as u32;
        }
        let mut host_edge = vec![0u32; g.n_hosts];
        let mut host_port = vec![0u32; g.n_hosts];
        let mut nics = vec![0u32; g.n_hosts];
        for &(s, h, local) in &g.attached {
            host_edge[h as usize] = edge_of[s as usize];
            host_port[h as usize] = local;
            nics[h as usize] += 1;
        }
        let multi_homed = g.attached.iter().copied();
        let multi_homed = multi_homed
            .filter(|&(_, h, _)| nics[h as usize] > 1)
            .collect();
        let mut routing = Routing::new(ns, edge_switches.clone(), host_edge, host_port);
        routing.set_multi_homed(multi_homed);
        let mut intern = HashMap::new();
        let mut dist = vec![u32::MAX; ns];
        let mut ports_buf = Vec::new();
        for (ei, &e) in edge_switches.iter().enumerate() {
            distances_to(&g.links, e, &mut dist);
            for s in 0..ns as u32 {
                if s == e || dist[s as usize] == u32::MAX {
                    continue;
                }
                ports_buf.clear();
                for &(v, local) in &g.links[s as usize] {
                    if dist[v as usize] + 1 == dist[s as usize] {
                        ports_buf.push(local);
                    }
                }
                routing.set(s, ei as u32, &ports_buf, &mut intern);
            }
        }
        routing
    }
}

/// Hops from every switch to `e` (u32::MAX: unreachable), by breadth-first search.
fn distances_to(links: &[Vec<(u32, u32)>], e: u32, dist: &mut [u32]) {
    dist.iter_mut().for_each(|d| *d = u32::MAX);
    dist[e as usize] = 0;
    let mut q = VecDeque::from([e]);
    while let Some(u) = q.pop_front() {
        for &(v, _) in &links[u as usize] {
            if dist[v as usize] == u32::MAX {
                dist[v as usize] = dist[u as usize] + 1;
                q.push_back(v);
            }
        }
    }
}

/// The forwarding function of a switch: the precomputed equal-cost tables (`Routing`),
/// one of a destination's ports chosen by the packet's flow hash, unless the switch's
/// scheme routes (`SchemeKind::route`, in Rust or Python), which chooses among them.
pub struct Ecmp;

impl Ecmp {
    /// The output port switch `node` sends `pkt` by: ECMP's choice, or its scheme's.
    #[inline(always)]
    fn route(net: &mut Network, node: u32, pkt: PktId) -> u32 {
        let n = &net.nodes[node as usize];
        let (sw, base) = (n.index, n.port_base);
        let p = net.pool.get(pkt);
        let mut local = net.routing.next_port(sw, p.dst_host, p.hash);
        let hook = net.route_hooks[sw as usize];
        if hook != crate::net::NONE {
            let candidates = net.routing.ports(sw, p.dst_host);
            if let Some(choice) = net.schemes[hook as usize].route(p, candidates) {
                local = choice;
            }
        }
        base + local
    }
}

impl ForwarderKind for Ecmp {
    const NAME: &'static str = "ecmp";

    fn fits(kind: NodeKind, _forwards: bool) -> bool {
        kind == NodeKind::Switch
    }

    /// Routes, then hands the packet to the output port's scheme.
    #[inline(always)]
    fn arrive(
        net: &mut Network,
        ev: &mut impl Scheduler<NetEvent>,
        node: u32,
        in_port: u32,
        pkt: PktId,
    ) -> Option<Upcall> {
        let port = Ecmp::route(net, node, pkt);
        net.enqueue_at_port(ev, port, pkt, in_port);
        None
    }

    fn host_port(
        _net: &mut Network,
        _ev: &mut impl Scheduler<NetEvent>,
        host: u32,
        _pkt: PktId,
    ) -> Option<u32> {
        unreachable!("host {host}'s node is a switch")
    }

    fn path_next(net: &Network, node: u32, dst: u32) -> Option<u32> {
        let nd = &net.nodes[node as usize];
        Some(nd.port_base + net.routing.next_port(nd.index, dst, 0))
    }

    #[inline]
    fn slot_route(net: &mut Network, node: u32, pkt: PktId) -> Option<u32> {
        Some(Ecmp::route(net, node, pkt))
    }

    /// The output port and queue the arrival will put the packet in, by the ECMP table (a
    /// scheme that routes may choose another).
    #[inline(always)]
    fn prefetch_arrival(net: &Network, node: u32, in_port: u32, pkt: PktId) {
        let n = &net.nodes[node as usize];
        let p = net.pool.get(pkt);
        let out = n.port_base + net.routing.next_port(n.index, p.dst_host, p.hash);
        let pt = &net.ports[out as usize];
        crate::engine::prefetch(
            &net.queues,
            (pt.q_base + in_port.min(pt.q_count - 1)) as usize,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two leaves (switches 0, 1) under two spines (2, 3); host 0 on leaf 0 (port 2),
    /// host 1 on leaf 1 (port 2), host 2 on both leaves (port 3 of each).
    fn leaf_spine() -> SwitchGraph {
        SwitchGraph {
            links: vec![
                vec![(2, 0), (3, 1)],
                vec![(2, 0), (3, 1)],
                vec![(0, 0), (1, 1)],
                vec![(0, 0), (1, 1)],
            ],
            attached: vec![(0, 0, 2), (0, 2, 3), (1, 1, 2), (1, 2, 3)],
            n_hosts: 3,
        }
    }

    #[test]
    fn every_shortest_path_is_a_choice_and_no_longer_one_is() {
        let r = Routing::shortest_paths(&leaf_spine());
        // From leaf 0 to host 1: up either spine.
        assert_eq!(r.ports(0, 1), &[0, 1]);
        // From a spine down to the leaf that holds host 1: one port.
        assert_eq!(r.ports(2, 1), &[1]);
        assert_eq!(r.ports(3, 0), &[0]);
        // At the host's own switch: its port.
        assert_eq!(r.next_port(1, 1, 7), 2);
    }

    #[test]
    fn a_host_on_two_switches_is_reached_directly_from_each() {
        let r = Routing::shortest_paths(&leaf_spine());
        assert_eq!(r.next_port(0, 2, 0), 3);
        assert_eq!(r.next_port(1, 2, 0), 3);
    }
}
