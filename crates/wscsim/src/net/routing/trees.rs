//! Six arc-disjoint spanning trees of a torus rooted at one server, one starting on each of
//! its links, for CamCubeOS's file distribution: every one-way link belongs to at most one
//! tree, so the root can send to all others at six times a link's rate. (Edmonds'
//! branching theorem says they exist, the torus being 6-connected; the paper cites the
//! construction it used without giving it.)
//!
//! Found greedily: the trees grow in turn, one arc at a time, each taking a free arc from a
//! server it spans to one it does not, choosing the server with the least slack (free arcs
//! into it less the trees still missing it) and then the one nearest the root; a search
//! that gets stuck starts again with another order of ties (a fixed sequence of seeds), and
//! the result is checked. Every server but the root ends with one arc into it per tree:
//! the six trees use all 6(N - 1) arcs into the other servers.

use super::torus::{hops, DIRECTIONS};
use crate::engine::rng::mix64;

/// Tree t's parent of every server (the root: u32::MAX).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trees {
    pub root: u32,
    pub parent: Vec<Vec<u32>>,
}

fn neighbour(dims: [u32; 3], h: u32, dir: usize) -> u32 {
    super::torus::neighbour(dims, h, dir)
}

/// The six trees of a torus of `dims` (each axis 3 or more) rooted at `root`; None if the
/// search found none (not seen on the sizes tested).
pub fn six_trees(dims: [u32; 3], root: u32) -> Option<Trees> {
    if dims.iter().any(|&k| k < 3) {
        return None;
    }
    (0..64u64)
        .find_map(|seed| attempt(dims, root, seed))
        .filter(|t| check(dims, t).is_ok())
}

fn attempt(dims: [u32; 3], root: u32, seed: u64) -> Option<Trees> {
    let n = (dims[0] * dims[1] * dims[2]) as usize;
    const NONE: u32 = u32::MAX;
    let mut parent = vec![vec![NONE; n]; 6];
    let mut spanned = vec![vec![false; n]; 6];
    // Arc (u -> v) is free while `free_in[v]` has the bit of the direction it arrives in.
    let mut free_in = vec![0x3Fu8; n];
    let mut missing = vec![6u8; n];
    let dist: Vec<u32> = (0..n as u32).map(|v| hops(dims, root, v)).collect();
    let mut frontier_size = [1usize; 6];
    for t in 0..6 {
        spanned[t][root as usize] = true;
        let v = neighbour(dims, root, t);
        take(
            &mut parent,
            &mut spanned,
            &mut free_in,
            &mut missing,
            t,
            root,
            v,
            t,
        );
        frontier_size[t] += 1;
    }
    let mut left = 6 * (n - 2);
    while left > 0 {
        let mut progressed = false;
        for t in 0..6 {
            if frontier_size[t] == n {
                continue;
            }
            let best = best_arc(dims, &spanned[t], &free_in, &missing, &dist, seed, t)?;
            let (u, v, dir) = best;
            take(
                &mut parent,
                &mut spanned,
                &mut free_in,
                &mut missing,
                t,
                u,
                v,
                dir,
            );
            frontier_size[t] += 1;
            left -= 1;
            progressed = true;
        }
        if !progressed {
            return None;
        }
    }
    Some(Trees { root, parent })
}

#[allow(clippy::too_many_arguments)]
fn take(
    parent: &mut [Vec<u32>],
    spanned: &mut [Vec<bool>],
    free_in: &mut [u8],
    missing: &mut [u8],
    t: usize,
    u: u32,
    v: u32,
    dir: usize,
) {
    parent[t][v as usize] = u;
    spanned[t][v as usize] = true;
    free_in[v as usize] &= !(1 << dir);
    missing[v as usize] -= 1;
}

/// An arc (from, to, direction of travel).
type Arc = (u32, u32, usize);
/// How an arc ranks: slack, distance from the root, the seed's order.
type Rank = (i32, u32, u64);

/// Tree t's next arc: (from, to, direction of travel), the target with the least slack,
/// then nearest the root, then by the seed's order.
fn best_arc(
    dims: [u32; 3],
    spanned: &[bool],
    free_in: &[u8],
    missing: &[u8],
    dist: &[u32],
    seed: u64,
    t: usize,
) -> Option<Arc> {
    let mut best: Option<(Rank, Arc)> = None;
    for u in 0..spanned.len() as u32 {
        if !spanned[u as usize] {
            continue;
        }
        for (dir, _) in DIRECTIONS.iter().enumerate() {
            let v = neighbour(dims, u, dir);
            if spanned[v as usize] || free_in[v as usize] & (1 << dir) == 0 {
                continue;
            }
            let slack = free_in[v as usize].count_ones() as i32 - i32::from(missing[v as usize]);
            let tie = mix64(seed ^ (u64::from(v) << 8) ^ (t as u64) << 40 ^ dir as u64);
            let key = (slack, dist[v as usize], tie);
            if best.is_none_or(|(k, _)| key < k) {
                best = Some((key, (u, v, dir)));
            }
        }
    }
    best.map(|(_, a)| a)
}

/// That every tree spans the torus from the root without a cycle, uses only links, starts
/// on its own link of the root, and that no one-way link is in two trees.
pub fn check(dims: [u32; 3], trees: &Trees) -> Result<(), String> {
    let n = (dims[0] * dims[1] * dims[2]) as usize;
    let mut used = std::collections::HashSet::new();
    for (t, par) in trees.parent.iter().enumerate() {
        for v in 0..n as u32 {
            if v == trees.root {
                continue;
            }
            let u = par[v as usize];
            if u == u32::MAX || hops(dims, u, v) != 1 {
                return Err(format!("tree {t}: server {v} has no parent one link away"));
            }
            if !used.insert((u, v)) {
                return Err(format!("the link {u} -> {v} is in two trees"));
            }
            // Following parents reaches the root within n steps.
            let (mut x, mut steps) = (v, 0);
            while x != trees.root {
                x = par[x as usize];
                steps += 1;
                if steps > n {
                    return Err(format!("tree {t}: a cycle through {v}"));
                }
            }
        }
        let first = neighbour(dims, trees.root, t);
        if par[first as usize] != trees.root {
            return Err(format!("tree {t} does not start on the root's link {t}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn six_disjoint_trees_span_every_torus_tested() {
        for dims in [[3, 3, 3], [4, 4, 4], [3, 4, 5], [5, 5, 5], [8, 8, 8]] {
            for root in [0, 7] {
                let t = six_trees(dims, root).unwrap_or_else(|| panic!("{dims:?} from {root}"));
                check(dims, &t).unwrap();
            }
        }
    }

    #[test]
    fn the_check_catches_a_shared_link() {
        let dims = [3, 3, 3];
        let mut t = six_trees(dims, 0).unwrap();
        // Give tree 1 the parent tree 0 has for some server: that link is in both.
        let v = (1..27).find(|&v| t.parent[0][v] != t.parent[1][v]).unwrap();
        t.parent[1][v] = t.parent[0][v];
        assert!(check(dims, &t).is_err());
    }
}
