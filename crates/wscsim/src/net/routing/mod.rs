//! Precomputed routes. A host hangs off one switch (its edge switch; a multi-homed host's
//! other switches reach it directly, `set_multi_homed`), so a route
//! is found in two steps: at the destination's edge switch, the port to the host; anywhere
//! else, the set of equal-cost ports towards that edge switch, chosen per packet by the
//! 5-tuple hash (ECMP). Tables are indexed by edge switch, not by host, which keeps them
//! small enough to stay in cache (a k=16 fat tree: 320 x 128 entries). A lookup is a few
//! array reads and a multiply, whatever the size of the network.

//!
//! Other forwarding functions live beside this one: `torus` (shortest-path sets on a
//! k-ary 3-cube, where servers forward). A scheme whose `route` is implemented (in Rust or
//! Python) overrides a switch's choice among its equal-cost ports.

pub mod ecmp;
pub mod endpoint;
pub mod kind;
pub mod torus;
pub mod torus_server;
pub mod trees;

pub use ecmp::SwitchGraph;
pub use kind::ForwarderKind;

/// The forwarding functions, one line each (`kind::ForwarderKind`): generates `Forwarder`,
/// the tag each node carries, and the network's dispatch on it.
macro_rules! builtin_forwarders {
    ($m:path) => {
        $m! {
            Endpoint(endpoint::Endpoint),
            Ecmp(ecmp::Ecmp),
            Torus(torus_server::TorusServer),
        }
    };
}
builtin_forwarders!(kind::declare_forwarders);

use std::collections::HashMap;

#[derive(Clone, Debug, Default)]
pub struct Routing {
    n_edges: usize,
    /// Host -> index of its edge switch among edge switches.
    host_edge: Vec<u32>,
    /// Host -> its port at its edge switch.
    host_port: Vec<u32>,
    /// Edge index -> switch index.
    edge_switch: Vec<u32>,
    /// Row `switch * n_edges + edge`: index of a port set.
    table: Vec<u32>,
    /// (offset into `set_ports`, length) of each set; sets are interned.
    sets: Vec<(u32, u32)>,
    set_ports: Vec<u32>,
    /// Per-switch salt so that consecutive tiers do not make correlated choices.
    salts: Vec<u32>,
    /// Hosts with NICs on several switches (a dual-homed chassis server): every (switch,
    /// host, port at that switch), sorted. A switch a host hangs off sends to it directly;
    /// empty (and never searched) when every host has one NIC.
    also_attached: Vec<(u32, u32, u32)>,
}

impl Routing {
    /// `edge_switch[e]` is the switch of edge `e`; host `h` hangs off edge `host_edge[h]`
    /// on that switch's port `host_port[h]`.
    pub fn new(
        n_switches: usize,
        edge_switch: Vec<u32>,
        host_edge: Vec<u32>,
        host_port: Vec<u32>,
    ) -> Self {
        let n_edges = edge_switch.len();
        Routing {
            n_edges,
            host_edge,
            host_port,
            edge_switch,
            table: vec![u32::MAX; n_switches * n_edges],
            sets: Vec::new(),
            set_ports: Vec::new(),
            salts: (0..n_switches)
                .map(|s| (crate::engine::rng::mix64(s as u64 ^ 0x5EED) >> 32) as u32)
                .collect(),
            also_attached: Vec::new(),
        }
    }

    /// Records hosts that hang off several switches: (switch, host, port at the switch).
    pub fn set_multi_homed(&mut self, mut attachments: Vec<(u32, u32, u32)>) {
        attachments.sort_unstable();
        self.also_attached = attachments;
    }

    /// The port of `switch` to `dst_host` if the host hangs off it (multi-homed hosts only).
    #[inline]
    fn direct(&self, switch: u32, dst_host: u32) -> Option<&u32> {
        if self.also_attached.is_empty() {
            return None;
        }
        let a = &self.also_attached;
        a.binary_search_by(|&(s, h, _)| (s, h).cmp(&(switch, dst_host)))
            .ok()
            .map(|i| &a[i].2)
    }

    /// Records the ports of `switch` that lead to edge switch `edge` (each with equal cost).
    pub fn set(
        &mut self,
        switch: u32,
        edge: u32,
        ports: &[u32],
        intern: &mut HashMap<Vec<u32>, u32>,
    ) {
        let id = match intern.get(ports) {
            Some(&id) => id,
            None => {
                let id = self.sets.len() as u32;
                self.sets
                    .push((self.set_ports.len() as u32, ports.len() as u32));
                self.set_ports.extend_from_slice(ports);
                intern.insert(ports.to_vec(), id);
                id
            }
        };
        self.table[switch as usize * self.n_edges + edge as usize] = id;
    }

    /// Equal-cost ports of `switch` towards `dst_host`.
    pub fn ports(&self, switch: u32, dst_host: u32) -> &[u32] {
        if let Some(p) = self.direct(switch, dst_host) {
            return std::slice::from_ref(p);
        }
        let e = self.host_edge[dst_host as usize];
        if self.edge_switch[e as usize] == switch {
            return std::slice::from_ref(&self.host_port[dst_host as usize]);
        }
        let id = self.table[switch as usize * self.n_edges + e as usize];
        if id == u32::MAX {
            return &[];
        }
        let (off, len) = self.sets[id as usize];
        &self.set_ports[off as usize..(off + len) as usize]
    }

    /// The output port (local index) for a packet to `dst_host` with 5-tuple hash `hash`.
    #[inline]
    pub fn next_port(&self, switch: u32, dst_host: u32, hash: u32) -> u32 {
        if let Some(&p) = self.direct(switch, dst_host) {
            return p;
        }
        let e = self.host_edge[dst_host as usize];
        if self.edge_switch[e as usize] == switch {
            return self.host_port[dst_host as usize];
        }
        let id = self.table[switch as usize * self.n_edges + e as usize];
        let (off, len) = self.sets[id as usize];
        if len == 1 {
            return self.set_ports[off as usize];
        }
        let h = (hash ^ self.salts[switch as usize]).wrapping_mul(0x9E37_79B1);
        // Multiply-shift maps the hash to [0, len) without a division.
        let pick = ((h as u64 * len as u64) >> 32) as u32;
        self.set_ports[(off + pick) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ecmp_spreads_flows_evenly() {
        // Two switches: switch 1 is host 0's edge; switch 0 reaches it over 4 ports.
        let mut r = Routing::new(2, vec![1], vec![0], vec![3]);
        let mut intern = HashMap::new();
        r.set(0, 0, &[10, 11, 12, 13], &mut intern);
        assert_eq!(
            r.next_port(1, 0, 12345),
            3,
            "at its edge switch a host is one port away"
        );
        let mut counts = [0u32; 4];
        for f in 0..40_000u32 {
            let h = crate::packet::five_tuple_hash(
                f,
                7,
                (f % 5000) as u16,
                5001,
                crate::packet::Proto::TCP,
            );
            counts[(r.next_port(0, 0, h) - 10) as usize] += 1;
        }
        for c in counts {
            assert!((9_000..11_000).contains(&c), "{counts:?}");
        }
    }
}
