//! Shortest paths around failed links (an oracle view): while any link is down, a torus
//! server's candidates are its working links to neighbours one hop closer to the
//! destination over the working links, from distances computed breadth-first from each
//! destination when first needed and forgotten at every failure or repair.
//!
//! Simplified: every server knows every failure at once. CamCubeOS learns of failures by
//! keepalives and flooding, so its servers route on views that lag; that is the next step
//! (per-server views), and this is what they converge to.

use std::collections::HashMap;

/// No route: the destination cannot be reached over working links.
pub const UNREACHABLE: u16 = u16::MAX;

#[derive(Clone, Debug, Default)]
pub struct LiveRoutes {
    /// Ports whose link is down (both ends of a failed link count).
    pub down_ports: u32,
    /// Distances (hops over working links) from every node to a destination node.
    cache: HashMap<u32, Vec<u16>>,
}

impl LiveRoutes {
    /// Whether routing must look at failures at all.
    #[inline]
    pub fn active(&self) -> bool {
        self.down_ports > 0
    }

    /// A link end failed (`up` false) or came back: distances are recomputed when next
    /// needed.
    pub fn port_changed(&mut self, up: bool) {
        if up {
            self.down_ports -= 1;
        } else {
            self.down_ports += 1;
        }
        self.cache.clear();
    }

    /// Hops from every node to `dst` over working links; `neighbours(u)` lists the nodes
    /// that u reaches over its working links.
    pub fn distances<I: Iterator<Item = u32>>(
        &mut self,
        n_nodes: usize,
        dst: u32,
        neighbours: impl Fn(u32) -> I,
    ) -> &[u16] {
        self.cache.entry(dst).or_insert_with(|| {
            let mut dist = vec![UNREACHABLE; n_nodes];
            let mut queue = std::collections::VecDeque::from([dst]);
            dist[dst as usize] = 0;
            while let Some(u) = queue.pop_front() {
                for v in neighbours(u) {
                    if dist[v as usize] == UNREACHABLE {
                        dist[v as usize] = dist[u as usize] + 1;
                        queue.push_back(v);
                    }
                }
            }
            dist
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_go_around_a_cut() {
        // A ring of 6 with the link 0-1 cut: from 1 to 0 is 5 hops the other way.
        let ring = |u: u32| {
            let ok = |a: u32, b: u32| !((a == 0 && b == 1) || (a == 1 && b == 0));
            [(u + 1) % 6, (u + 5) % 6]
                .into_iter()
                .filter(move |&v| ok(u, v))
        };
        let mut r = LiveRoutes::default();
        r.port_changed(false);
        assert!(r.active());
        let d = r.distances(6, 0, ring).to_vec();
        assert_eq!(d, vec![0, 5, 4, 3, 2, 1]);
        r.port_changed(true);
        assert!(!r.active());
    }

    #[test]
    fn an_isolated_node_is_unreachable() {
        let none = |_: u32| std::iter::empty::<u32>();
        let mut r = LiveRoutes::default();
        assert_eq!(r.distances(3, 1, none), &[UNREACHABLE, 0, UNREACHABLE]);
    }
}
