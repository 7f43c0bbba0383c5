//! Precomputed routes: for every (switch, destination host) the set of equal-cost output
//! ports, chosen per packet by the 5-tuple hash (ECMP). A lookup is two array reads and a
//! multiply, whatever the size of the network.

use std::collections::HashMap;

/// Port sets are interned: most (switch, destination) pairs share a handful of sets.
#[derive(Clone, Debug, Default)]
pub struct Routing {
    n_hosts: usize,
    /// Row `switch * n_hosts + dst_host`: index of a port set.
    table: Vec<u32>,
    /// (offset into `set_ports`, length) of each set.
    sets: Vec<(u32, u32)>,
    set_ports: Vec<u32>,
    /// Per-switch salt so that consecutive tiers do not make correlated choices.
    salts: Vec<u32>,
}

impl Routing {
    pub fn new(n_switches: usize, n_hosts: usize) -> Self {
        Routing {
            n_hosts,
            table: vec![u32::MAX; n_switches * n_hosts],
            sets: Vec::new(),
            set_ports: Vec::new(),
            salts: (0..n_switches).map(|s| (crate::engine::rng::mix64(s as u64 ^ 0x5EED) >> 32) as u32).collect(),
        }
    }

    /// Records the ports of `switch` that lead to `dst_host` (each with equal cost).
    pub fn set(&mut self, switch: u32, dst_host: u32, ports: &[u32], intern: &mut HashMap<Vec<u32>, u32>) {
        let id = match intern.get(ports) {
            Some(&id) => id,
            None => {
                let id = self.sets.len() as u32;
                self.sets.push((self.set_ports.len() as u32, ports.len() as u32));
                self.set_ports.extend_from_slice(ports);
                intern.insert(ports.to_vec(), id);
                id
            }
        };
        self.table[switch as usize * self.n_hosts + dst_host as usize] = id;
    }

    /// Equal-cost ports of `switch` towards `dst_host`.
    pub fn ports(&self, switch: u32, dst_host: u32) -> &[u32] {
        let id = self.table[switch as usize * self.n_hosts + dst_host as usize];
        if id == u32::MAX {
            return &[];
        }
        let (off, len) = self.sets[id as usize];
        &self.set_ports[off as usize..(off + len) as usize]
    }

    /// The output port (local index) for a packet to `dst_host` with 5-tuple hash `hash`.
    #[inline]
    pub fn next_port(&self, switch: u32, dst_host: u32, hash: u32) -> u32 {
        let id = self.table[switch as usize * self.n_hosts + dst_host as usize];
        let (off, len) = self.sets[id as usize];
        if len == 1 {
            return self.set_ports[off as usize];
        }
        let h = (hash ^ self.salts[switch as usize]).wrapping_mul(0x9E37_79B1);
        // Multiply-shift maps the hash to [0, len) without a division.
        let pick = ((h as u64 * len as u64) >> 32) as u32;
        self.set_ports[(off + pick) as usize]
    }

    pub fn memory_bytes(&self) -> usize {
        self.table.len() * 4 + self.sets.len() * 8 + self.set_ports.len() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ecmp_spreads_flows_evenly() {
        let mut r = Routing::new(1, 1);
        let mut intern = HashMap::new();
        r.set(0, 0, &[10, 11, 12, 13], &mut intern);
        let mut counts = [0u32; 4];
        for f in 0..40_000u32 {
            let h = crate::net::packet::five_tuple_hash(f, 7, (f % 5000) as u16, 5001, crate::net::packet::Proto::Tcp);
            counts[(r.next_port(0, 0, h) - 10) as usize] += 1;
        }
        for c in counts {
            assert!((9_000..11_000).contains(&c), "{counts:?}");
        }
    }
}
