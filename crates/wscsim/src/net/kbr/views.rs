//! What each server believes about failed links: its *view*, the set of links it knows to
//! be down. CamCubeOS servers route on their own views (link-state shortest paths), which
//! lag the truth by the time failure detection and flooding take, so a packet may be sent
//! onto a link that has already failed, and two servers may disagree about a key's root.
//!
//! Views are shared: every distinct set of down links is stored once and servers hold an
//! id (`ViewId`), so that during a flood, when servers move from one set to the next, the
//! shortest-path tables computed for a set serve every server holding it. Distances to a
//! destination are computed breadth-first when a view first routes towards it, or taken
//! from the view it was derived from when the one changed link cannot alter them (on a
//! torus a failed link almost never changes a distance: another neighbour one hop closer
//! remains), which keeps a flood of one failure from costing a search per server.
//!
//! The truth (which links are down now) is a view as well, held by the network, and
//! answers the oracle's question: which server is a key's root right now.

// Fx, not SipHash: a flood interns a view at every server it reaches (4% of a 4,096-server
// torus under churn hashed with SipHash); nothing iterates these maps.
use rustc_hash::FxHashMap as HashMap;
// Shared tables: `Arc` (not `Rc`) because a simulation may run on another thread (Python
// releases the GIL while it runs).
use std::sync::Arc;

use super::keyspace::{Key, KeySpace};
use crate::engine::TimePs;

/// No route: the destination cannot be reached over the links a view believes up.
pub const UNREACHABLE: u16 = u16::MAX;

pub type ViewId = u32;

/// The view with no link down (every server holds it until a failure).
pub const CLEAN: ViewId = 0;

/// One set of down links and what has been computed from it.
#[derive(Debug)]
struct View {
    /// Down links by their canonical port (the lower of the link's two ports), sorted.
    down: Vec<u32>,
    /// The same as one bit per port (both ends set), for the per-hop test.
    down_bits: Vec<u64>,
    /// Servers (and the truth) holding this view; it is forgotten at 0.
    holders: u32,
    /// The view this one was derived from by one link's change, to borrow distances.
    parent: Option<(ViewId, u32, bool)>,
    /// The views derived from this one, which it hands its distances to when forgotten.
    children: Vec<ViewId>,
    /// Per destination node: hops from every node over the links up in this view.
    dist: Vec<Option<Arc<[u16]>>>,
    /// Connected component of every node (computed when first asked).
    comp: Option<Box<[u32]>>,
}

/// The graph's ports, as views need them: node `u` has ports `port_base[u]..port_base[u+1]`.
#[derive(Clone, Debug, Default)]
pub struct Adjacency {
    pub port_base: Vec<u32>,
    pub peer_node: Vec<u32>,
    pub peer_port: Vec<u32>,
}

impl Adjacency {
    fn nodes(&self) -> usize {
        self.port_base.len() - 1
    }

    fn ports(&self, u: u32) -> std::ops::Range<u32> {
        self.port_base[u as usize]..self.port_base[u as usize + 1]
    }

    /// The nodes at the two ends of link `link` (its port's node, then the peer).
    #[inline]
    pub fn ends(&self, link: u32) -> (u32, u32) {
        (
            self.peer_node[self.peer_port[link as usize] as usize],
            self.peer_node[link as usize],
        )
    }

    /// Whether canonical link `link` has an end at node `u`.
    #[inline]
    pub fn touches(&self, link: u32, u: u32) -> bool {
        let (a, b) = self.ends(link);
        a == u || b == u
    }

    /// The canonical id of the link out of `port`: the lower of its two ports.
    #[inline]
    pub fn link_of(&self, port: u32) -> u32 {
        port.min(self.peer_port[port as usize])
    }
}

/// How far up a view's chain of parents `Views::borrowed` looks for distances to reuse: a
/// failed server's six links, and a few changes more.
const BORROW_DEPTH: usize = 8;

#[derive(Debug, Default)]
pub struct Views {
    pub adj: Adjacency,
    /// Every view ever made, by id (ids are not reused; a forgotten view leaves a None, one
    /// pointer).
    views: Vec<Option<Box<View>>>,
    index: HashMap<Vec<u32>, ViewId>,
    /// (view, link, up) to the view that results, so a flood interns each set once.
    transitions: HashMap<(ViewId, u32, bool), ViewId>,
    /// The view each node holds.
    pub of_node: Vec<ViewId>,
    /// Searches run, for the benchmark's record.
    pub searches: u64,
}

fn bits_of(down: &[u32], adj: &Adjacency) -> Vec<u64> {
    let mut bits = vec![0u64; adj.peer_port.len().div_ceil(64)];
    for &l in down {
        for p in [l, adj.peer_port[l as usize]] {
            bits[p as usize / 64] |= 1 << (p % 64);
        }
    }
    bits
}

impl Views {
    /// Every node holds the clean view.
    pub fn new(adj: Adjacency) -> Views {
        let n = adj.nodes();
        let mut v = Views {
            adj,
            of_node: vec![CLEAN; n],
            ..Default::default()
        };
        let clean = v.make(Vec::new(), None);
        debug_assert_eq!(clean, CLEAN);
        v.hold(CLEAN, n as u32);
        v
    }

    fn make(&mut self, down: Vec<u32>, parent: Option<(ViewId, u32, bool)>) -> ViewId {
        let id = self.views.len() as ViewId;
        let view = View {
            down_bits: bits_of(&down, &self.adj),
            down: down.clone(),
            holders: 0,
            parent,
            children: Vec::new(),
            dist: vec![None; self.adj.nodes()],
            comp: None,
        };
        self.views.push(Some(Box::new(view)));
        self.index.insert(down, id);
        let parent_tables = parent.and_then(|(p, _, _)| {
            let pv = self.views[p as usize].as_mut()?;
            pv.children.push(id);
            Some(pv.dist.clone())
        });
        if let Some(tables) = parent_tables {
            self.inherit_tables(id, &tables);
        }
        id
    }

    /// View `v` takes from its parent's `tables` every table of distances it lacks, as the
    /// one changed link leaves it (`carried`): when it is made, and again when the parent
    /// is forgotten (its last holder moved on), so that what the parent searched is not
    /// searched again.
    fn inherit_tables(&mut self, v: ViewId, tables: &[Option<Arc<[u16]>>]) {
        let Some(child) = self.views[v as usize].as_ref() else {
            return;
        };
        let kept: Vec<Option<Arc<[u16]>>> = child
            .dist
            .iter()
            .zip(tables)
            .map(|(own, theirs)| {
                own.clone()
                    .or_else(|| theirs.as_ref().and_then(|d| self.carried(v, d)))
            })
            .collect();
        self.views[v as usize].as_mut().expect("view").dist = kept;
    }

    fn view(&self, v: ViewId) -> &View {
        self.views[v as usize].as_ref().expect("a held view exists")
    }

    /// Takes `n` more holds on `v`.
    pub fn hold(&mut self, v: ViewId, n: u32) {
        self.views[v as usize].as_mut().expect("view").holders += n;
    }

    /// Gives up one hold on `v`, forgetting it when none is left.
    pub fn release(&mut self, v: ViewId) {
        let view = self.views[v as usize].as_mut().expect("view");
        view.holders -= 1;
        if view.holders == 0 && v != CLEAN {
            let view = self.views[v as usize].take().expect("view");
            // Its children keep what it searched that still holds for them.
            for &c in &view.children {
                self.inherit_tables(c, &view.dist);
            }
            self.index.remove(&view.down);
            if self.transitions.len() > 1 << 20 {
                self.transitions.clear();
            }
        }
    }

    /// The view that is `v` with `link` up or down (`v` itself if it already agrees).
    pub fn with_link(&mut self, v: ViewId, link: u32, up: bool) -> ViewId {
        if let Some(&t) = self.transitions.get(&(v, link, up)) {
            if self.views[t as usize].is_some() {
                return t;
            }
        }
        let cur = &self.view(v).down;
        let mut down = cur.clone();
        match (down.binary_search(&link), up) {
            (Ok(i), true) => {
                down.remove(i);
            }
            (Err(i), false) => down.insert(i, link),
            _ => return v,
        }
        let t = match self.index.get(&down) {
            Some(&t) => t,
            None => self.make(down, Some((v, link, up))),
        };
        self.transitions.insert((v, link, up), t);
        t
    }

    /// Moves node `node` to view `v`.
    pub fn set(&mut self, node: u32, v: ViewId) {
        let old = self.of_node[node as usize];
        if old != v {
            self.hold(v, 1);
            self.of_node[node as usize] = v;
            self.release(old);
        }
    }

    /// Whether view `v` believes no link is down.
    #[inline]
    pub fn is_clean(&self, v: ViewId) -> bool {
        v == CLEAN
    }

    /// The links view `v` believes down (canonical ports).
    pub fn down_links(&self, v: ViewId) -> &[u32] {
        &self.view(v).down
    }

    /// Whether view `v` believes the link out of `port` works.
    #[inline]
    pub fn port_up(&self, v: ViewId, port: u32) -> bool {
        let b = &self.view(v).down_bits;
        b[port as usize / 64] & (1 << (port % 64)) == 0
    }

    /// Hops from every node to node `dst` over the links up in view `v` (searched, or
    /// borrowed from an ancestor, the first time it is asked). Borrowed, not shared: a hop
    /// asks on every packet, and counting a shared table's owners costs an atomic add.
    pub fn distances(&mut self, v: ViewId, dst: u32) -> &[u16] {
        if self.view(v).dist[dst as usize].is_none() {
            let d = match self.borrowed(v, dst) {
                Some(d) => d,
                None => {
                    self.searches += 1;
                    self.search(v, dst).into()
                }
            };
            self.views[v as usize].as_mut().expect("view").dist[dst as usize] = Some(d);
        }
        self.known_distances(v, dst)
    }

    /// The distances `distances(v, dst)` has computed (it must have been asked first).
    #[inline]
    pub fn known_distances(&self, v: ViewId, dst: u32) -> &[u16] {
        self.view(v).dist[dst as usize]
            .as_deref()
            .expect("distances asked for first")
    }

    /// The distances to `dst` of the nearest ancestor of view `v` that has them (at most
    /// `BORROW_DEPTH` views up its chain of parents), when none of the links changed on the
    /// way down to `v`, one per view, can change any (see `unchanged_by`). A server that
    /// fails takes its six links down one notice at a time, so the view a flood leaves
    /// behind is often several steps from the last one whose distances were computed.
    fn borrowed(&self, v: ViewId, dst: u32) -> Option<Arc<[u16]>> {
        let mut chain = [0 as ViewId; BORROW_DEPTH];
        let mut cur = v;
        for depth in 0..BORROW_DEPTH {
            let (parent, _, _) = self.views[cur as usize].as_ref()?.parent?;
            chain[depth] = cur;
            if let Some(d) = self.views[parent as usize].as_ref()?.dist[dst as usize].clone() {
                return chain[..=depth]
                    .iter()
                    .rev()
                    .try_fold(d, |d, &c| self.carried(c, &d));
            }
            cur = parent;
        }
        None
    }

    /// Its parent's table `d` (distances to some node) as it is in view `v`: the same table
    /// when the one link that differs cannot change it (`unchanged_by`); when that link came
    /// up and shortens some paths, the table with the shorter distances spread from the
    /// link's farther end (a link coming up only lowers distances, and only through itself:
    /// a server rejoining brings each of its links up in turn); None when the link went
    /// down and lengthens some (a search is needed).
    fn carried(&self, v: ViewId, d: &Arc<[u16]>) -> Option<Arc<[u16]>> {
        if self.unchanged_by(v, d) {
            return Some(d.clone());
        }
        let view = self.views[v as usize].as_ref()?;
        let (_, link, up) = view.parent?;
        if !up {
            return None;
        }
        let (a, b) = self.adj.ends(link);
        let mut d = d.to_vec();
        let (near, far) = if d[a as usize] <= d[b as usize] {
            (a, b)
        } else {
            (b, a)
        };
        // Not unchanged, so the near end is reachable and the far end more than one hop
        // further.
        d[far as usize] = d[near as usize] + 1;
        self.spread(view, &mut d, far);
        Some(d.into())
    }

    /// Whether distances `d` (its parent's, to some node) hold in view `v` too: the one link
    /// that differs cannot change any when it comes up between nodes whose distances differ
    /// by at most one, or goes down while its farther end keeps another neighbour one hop
    /// closer (over links up in `v`).
    fn unchanged_by(&self, v: ViewId, d: &[u16]) -> bool {
        let Some(view) = self.views[v as usize].as_ref() else {
            return false;
        };
        let Some((_, link, up)) = view.parent else {
            return false;
        };
        let (a, b) = self.adj.ends(link);
        let (da, db) = (d[a as usize], d[b as usize]);
        if up {
            return da.abs_diff(db) <= 1 || (da == UNREACHABLE && db == UNREACHABLE);
        }
        if da == db || da == UNREACHABLE {
            return true;
        }
        let (far, dfar) = if da > db { (a, da) } else { (b, db) };
        self.adj.ports(far).any(|p| {
            let up = view.down_bits[p as usize / 64] & (1 << (p % 64)) == 0;
            up && d[self.adj.peer_node[p as usize] as usize] == dfar - 1
        })
    }

    /// Hops from every node to `dst` over the links up in view `v`: a breadth-first search,
    /// the hot part of churn.
    fn search(&self, v: ViewId, dst: u32) -> Vec<u16> {
        let mut dist = vec![UNREACHABLE; self.adj.nodes()];
        dist[dst as usize] = 0;
        self.spread(self.view(v), &mut dist, dst);
        dist
    }

    /// Lowers distances `d` breadth-first from node `from` (whose own distance is set),
    /// over the links up in `view`: every node a path through `from` brings closer gets the
    /// shorter distance. From the destination itself, with every other node unreachable,
    /// this is the whole search. Flat arrays, the queue a vector read from the front.
    fn spread(&self, view: &View, d: &mut [u16], from: u32) {
        let (base, peer, down) = (
            &self.adj.port_base[..],
            &self.adj.peer_node[..],
            &view.down_bits[..],
        );
        let mut queue = Vec::with_capacity(d.len());
        queue.push(from);
        let mut head = 0;
        while let Some(&u) = queue.get(head) {
            head += 1;
            let next = d[u as usize] + 1;
            for p in base[u as usize] as usize..base[u as usize + 1] as usize {
                if down[p / 64] >> (p % 64) & 1 != 0 {
                    continue;
                }
                let w = peer[p] as usize;
                if next < d[w] {
                    d[w] = next;
                    queue.push(w as u32);
                }
            }
        }
    }

    /// The connected component of every node over the links up in view `v`.
    pub fn components(&mut self, v: ViewId) -> &[u32] {
        if self.view(v).comp.is_none() {
            let comp = self.label_components(v);
            self.views[v as usize].as_mut().expect("view").comp = Some(comp);
        }
        self.view(v).comp.as_deref().expect("computed")
    }

    fn label_components(&self, v: ViewId) -> Box<[u32]> {
        let view = self.view(v);
        let n = self.adj.nodes();
        let mut comp = vec![u32::MAX; n];
        let mut stack = Vec::new();
        for s in 0..n as u32 {
            if comp[s as usize] != u32::MAX {
                continue;
            }
            comp[s as usize] = s;
            stack.push(s);
            while let Some(u) = stack.pop() {
                for p in self.adj.ports(u) {
                    let w = self.adj.peer_node[p as usize];
                    let up = view.down_bits[p as usize / 64] & (1 << (p % 64)) == 0;
                    if up && comp[w as usize] == u32::MAX {
                        comp[w as usize] = s;
                        stack.push(w);
                    }
                }
            }
        }
        comp.into_boxed_slice()
    }

    /// The root of `key` as node `from` sees it in view `v`: the first server of the key's
    /// sequence that `from` can reach and that `eligible` accepts (a server that has just
    /// rejoined is not yet a root). On a torus, host i is node i.
    pub fn root(
        &mut self,
        v: ViewId,
        from: u32,
        key: &Key,
        keys: &mut KeySpace,
        eligible: impl Fn(u32) -> bool,
    ) -> Option<u32> {
        let home = keys.home_of(key);
        if self.is_clean(v) && eligible(home) {
            return Some(home);
        }
        let comp = self.components(v);
        let mine = comp[from as usize];
        keys.first_of(key, |s| comp[s as usize] == mine && eligible(s))
    }
}

/// How servers learn that links failed or came back: keepalives on every link, then
/// flooding, or at once (an oracle, for comparison).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Detection {
    /// Keepalive period (0: every server knows every change at once).
    pub keepalive_ps: TimePs,
    /// Keepalives missed in a row before a link is declared down.
    pub misses: u32,
    /// Time a flooded notice takes per hop.
    pub flood_hop_ps: TimePs,
    /// How long a rejoining server waits before it takes back its keys, so that the
    /// servers that stood in for it have heard it is back (zero misdelivery).
    pub join_hold_ps: TimePs,
}

impl Detection {
    pub fn instant(&self) -> bool {
        self.keepalive_ps == 0
    }

    /// When a server whose peer sends keepalives at `phase_ps + k * period` learns that the
    /// link changed at `t`: down after `misses` keepalives fail to come (counted from the
    /// last that did), up at the first keepalive after `t`.
    pub fn learned_at(&self, t: TimePs, phase_ps: TimePs, up: bool) -> TimePs {
        if self.instant() {
            return t;
        }
        let p = self.keepalive_ps;
        // Keepalive instants are phase + k p; find the last at or before t.
        let last = if t >= phase_ps {
            phase_ps + (t - phase_ps) / p * p
        } else {
            phase_ps.saturating_sub(p)
        };
        if up {
            last + p
        } else {
            (last + self.misses as u64 * p).max(t + 1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ring of `n` nodes, each with ports 2u (towards u+1) and 2u+1 (towards u-1).
    fn ring(n: u32) -> Adjacency {
        let mut a = Adjacency {
            port_base: (0..=n).map(|u| 2 * u).collect(),
            ..Default::default()
        };
        for u in 0..n {
            a.peer_node.push((u + 1) % n);
            a.peer_port.push(2 * ((u + 1) % n) + 1);
            a.peer_node.push((u + n - 1) % n);
            a.peer_port.push(2 * ((u + n - 1) % n));
        }
        a
    }

    #[test]
    fn distances_go_around_a_cut_and_views_are_shared() {
        let mut v = Views::new(ring(6));
        // Cut 0-1 (port 0 at node 0, port 3 at node 1).
        let link = v.adj.link_of(3);
        assert_eq!(link, 0);
        let cut = v.with_link(CLEAN, link, false);
        assert_ne!(cut, CLEAN);
        assert_eq!(v.with_link(CLEAN, 0, false), cut, "interned once");
        assert!(!v.port_up(cut, 3) && !v.port_up(cut, 0) && v.port_up(cut, 1));
        assert_eq!(v.distances(cut, 0), &[0, 5, 4, 3, 2, 1]);
        assert_eq!(
            v.with_link(cut, 0, true),
            CLEAN,
            "repaired is the clean view"
        );
        v.set(4, cut);
        v.set(5, cut);
        v.set(4, CLEAN);
        v.set(5, CLEAN);
        assert!(
            v.views[cut as usize].is_none(),
            "forgotten when nobody holds it"
        );
    }

    /// A 4 x 4 torus: node u = x + 4y has ports 4u..4u+4 (+x, -x, +y, -y).
    fn torus_4x4() -> Adjacency {
        let n = 16u32;
        let mut a = Adjacency {
            port_base: (0..=n).map(|u| 4 * u).collect(),
            ..Default::default()
        };
        let at = |x: u32, y: u32| (y % 4) * 4 + x % 4;
        for u in 0..n {
            let (x, y) = (u % 4, u / 4);
            for (i, w) in [at(x + 1, y), at(x + 3, y), at(x, y + 1), at(x, y + 3)]
                .into_iter()
                .enumerate()
            {
                a.peer_node.push(w);
                // The opposite direction's port at w: +x pairs with -x, +y with -y.
                a.peer_port.push(4 * w + (i as u32 ^ 1));
            }
        }
        a
    }

    #[test]
    fn borrowed_distances_equal_a_fresh_search() {
        // On a ring a cut always changes some distance; on a 4 x 4 torus it rarely does.
        let n = 16u32;
        let mut v = Views::new(torus_4x4());
        let mut view = CLEAN;
        for port in [0u32, 9, 22, 40, 41] {
            for dst in 0..n {
                v.distances(view, dst);
            }
            let link = v.adj.link_of(port);
            view = v.with_link(view, link, false);
            v.set(0, view);
            for dst in 0..n {
                let got = v.distances(view, dst).to_vec();
                assert_eq!(got, v.search(view, dst), "dst {dst} after {port}");
            }
        }
        assert!(
            v.searches < 6 * 16,
            "some distances were borrowed: {}",
            v.searches
        );
    }

    /// A server's six links go down one notice at a time: the views between hold few
    /// tables, and the view before them is forgotten once nobody holds it. The last view
    /// still takes every table the changes left alone (from its parent when made, and
    /// from each view forgotten above it), and they are what a fresh search gives.
    #[test]
    fn tables_survive_a_forgotten_parent_and_equal_a_fresh_search() {
        let n = 16u32;
        let mut v = Views::new(torus_4x4());
        let first = v.with_link(CLEAN, v.adj.link_of(0), false);
        v.set(0, first);
        for dst in 0..n {
            v.distances(first, dst);
        }
        let searched = v.searches;
        // Three of node 5's links, learnt one by one; node 0 moves along the chain.
        let mut view = first;
        for port in [21u32, 22, 23] {
            view = v.with_link(view, v.adj.link_of(port), false);
            v.set(0, view);
        }
        assert!(
            v.views[first as usize].is_none(),
            "the first view is forgotten"
        );
        for dst in 0..n {
            let got = v.distances(view, dst).to_vec();
            assert_eq!(got, v.search(view, dst), "dst {dst}");
        }
        assert!(
            v.searches - searched < u64::from(n),
            "some tables were inherited: {} searches",
            v.searches - searched
        );
    }

    /// A server cut off from everyone rejoins, its links coming up one at a time: each
    /// view's tables are its parent's with the shorter paths the new link opens spread
    /// from it, no search needed, and they are what a fresh search gives.
    #[test]
    fn links_coming_up_carry_tables_without_searching() {
        let n = 16u32;
        let mut v = Views::new(torus_4x4());
        let links: Vec<u32> = (20..24).map(|p| v.adj.link_of(p)).collect();
        let mut view = CLEAN;
        for &l in &links {
            view = v.with_link(view, l, false);
        }
        v.set(0, view);
        for dst in 0..n {
            v.distances(view, dst);
        }
        let searched = v.searches;
        // The last link brings back the clean view, which routes without tables.
        for &l in &links[..links.len() - 1] {
            view = v.with_link(view, l, true);
            v.set(0, view);
            for dst in 0..n {
                let got = v.distances(view, dst).to_vec();
                assert_eq!(got, v.search(view, dst), "dst {dst} after link {l} came up");
            }
        }
        assert_eq!(v.with_link(view, links[3], true), CLEAN);
        assert_eq!(v.searches, searched, "no search after a link came up");
    }

    #[test]
    fn detection_times_follow_the_keepalives() {
        let d = Detection {
            keepalive_ps: 10,
            misses: 3,
            flood_hop_ps: 1,
            join_hold_ps: 30,
        };
        // Keepalives at 3, 13, 23, ...: a failure at 15 is declared 3 periods after 13.
        assert_eq!(d.learned_at(15, 3, false), 43);
        assert_eq!(d.learned_at(13, 3, false), 43);
        // A link back at 15 is seen at the next keepalive, 23.
        assert_eq!(d.learned_at(15, 3, true), 23);
        let instant = Detection {
            keepalive_ps: 0,
            ..d
        };
        assert_eq!(instant.learned_at(15, 3, false), 15);
    }
}
