//! CamCubeOS's keyspace (Costa et al., HPDC 2013, section 3): keys of 160 bits, of which
//! routing uses the low 64. Their top bits give a key's home coordinate, 4 bits per axis
//! (x = bits 63-60, y = 59-56, z = 55-52; each field taken mod the axis size, so tori up to
//! 16 x 16 x 16), and the remaining 52 bits a fourth coordinate w. A torus with an axis
//! longer than 16 uses 8 bits per axis (x = 63-56, y = 55-48, z = 47-40, w = 39-0).
//!
//! `GetServersForKey(key, r)` lists the servers that hold a key in order of succession: the
//! root (the home server if it is reachable) first, then those that take over if all before
//! them have failed. Each home server has 48 sequences, one per facet (an octant: a sign for
//! each axis) and order (a permutation of the axes), chosen by w mod 48 (index 6 f + o; a 2D
//! torus has 4 x 2 = 8). A sequence is breadth-first: start with the home; for each listed
//! server in turn, append its neighbours in the facet's directions, in the order's axis
//! order, skipping those already listed. Sequences are built over every server and then the
//! unreachable ones are left out, so a failure never reorders the survivors. Wrap-around
//! makes every server appear in every sequence, so some server is always the root, and each
//! of a server's neighbours is second in the same number of sequences, so a failed server's
//! keys spread evenly over its neighbours.

use crate::net::routing::torus::{coords, host_at};

/// A 160-bit key: `low` holds bits 63-0, the ones routing uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub high: u128,
    pub low: u64,
}

impl Key {
    /// Bits 159-64 are kept only to tell keys apart; routing reads `low`.
    pub fn new(high: u128, low: u64) -> Key {
        Key {
            high: high & ((1u128 << 96) - 1),
            low,
        }
    }

    /// The fourth coordinate: bits 51-0.
    #[inline]
    pub fn w(&self) -> u64 {
        self.low & ((1 << 52) - 1)
    }

    /// The fourth coordinate in a torus of `dims`: what the three fields leave.
    #[inline]
    pub fn w_in(&self, dims: [u32; 3]) -> u64 {
        let used = 3 * field_bits(dims);
        self.low & ((1 << (64 - used)) - 1)
    }

    /// The home coordinate in a torus of `dims`: each field mod its axis size.
    #[inline]
    pub fn home(&self, dims: [u32; 3]) -> [u32; 3] {
        let b = field_bits(dims);
        let mask = (1u64 << b) - 1;
        let field = |i: u32| ((self.low >> (64 - b * (i + 1))) & mask) as u32;
        [field(0) % dims[0], field(1) % dims[1], field(2) % dims[2]]
    }

    /// A key whose home is `c` and whose fourth coordinate is `w` (each field below 16).
    pub fn at(c: [u32; 3], w: u64) -> Key {
        let low = (u64::from(c[0]) << 60)
            | (u64::from(c[1]) << 56)
            | (u64::from(c[2]) << 52)
            | (w & ((1 << 52) - 1));
        Key { high: 0, low }
    }
}

/// Bits of a key per axis of the home coordinate: 4 (the paper's layout) while every axis
/// has at most 16 servers, else 8 (the paper's way to more than 16 M servers).
#[inline]
pub fn field_bits(dims: [u32; 3]) -> u32 {
    if dims.iter().all(|&k| k <= 16) {
        4
    } else {
        8
    }
}

/// The six orders of three axes, indexed by o.
const ORDERS: [[usize; 3]; 6] = [
    [0, 1, 2],
    [0, 2, 1],
    [1, 0, 2],
    [1, 2, 0],
    [2, 0, 1],
    [2, 1, 0],
];

/// The sequences of a torus, with scratch space reused across lookups so that a lookup
/// allocates nothing once warm.
#[derive(Clone, Debug)]
pub struct KeySpace {
    dims: [u32; 3],
    /// Every sequence of a home server, indexed by w mod their number.
    seqs: Vec<Sequence>,
    /// Per server, the lookup that last listed it (a stamp instead of clearing a set).
    listed: Vec<u32>,
    stamp: u32,
    list: Vec<u32>,
}

/// The sequences of a torus of `dims`: facets over the axes of size 2 or more (bit b of f
/// for the b-th such axis: set means negative), orders as permutations of those axes (axes
/// of size 1 never move and go last), in `ORDERS`' order.
fn all_sequences(dims: [u32; 3]) -> Vec<Sequence> {
    let axes: Vec<usize> = (0..3).filter(|&a| dims[a] > 1).collect();
    let mut orders: Vec<[usize; 3]> = Vec::new();
    for p in ORDERS {
        let mut kept: Vec<usize> = p.iter().copied().filter(|x| axes.contains(x)).collect();
        kept.extend((0..3).filter(|x| !axes.contains(x)));
        let order = [kept[0], kept[1], kept[2]];
        if !orders.contains(&order) {
            orders.push(order);
        }
    }
    let mut out = Vec::new();
    for f in 0..1usize << axes.len() {
        let mut negative = [false; 3];
        for (bit, &axis) in axes.iter().enumerate() {
            negative[axis] = f >> bit & 1 == 1;
        }
        for &order in &orders {
            out.push(Sequence { negative, order });
        }
    }
    out
}

/// Which facet (signs) and axis order a key's w selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sequence {
    /// Per axis: true for the negative direction.
    pub negative: [bool; 3],
    /// The axes in the order neighbours are appended.
    pub order: [usize; 3],
}

impl KeySpace {
    pub fn new(dims: [u32; 3]) -> KeySpace {
        assert!(dims.iter().all(|&k| (1..=256).contains(&k)), "{dims:?}");
        let n = (dims[0] * dims[1] * dims[2]) as usize;
        KeySpace {
            dims,
            seqs: all_sequences(dims),
            listed: vec![0; n],
            stamp: 0,
            list: Vec::with_capacity(n),
        }
    }

    pub fn dims(&self) -> [u32; 3] {
        self.dims
    }

    /// How many sequences a home server has: 2^a facets times a! orders for `a` axes of size
    /// 2 or more (48 in 3D, 8 in 2D).
    pub fn sequences(&self) -> usize {
        self.seqs.len()
    }

    /// Sequence `i`: facet f = i / a!, order o = i % a! (i = 6 f + o in 3D).
    pub fn sequence(&self, i: usize) -> Sequence {
        self.seqs[i]
    }

    /// The sequence a key's w selects.
    pub fn sequence_of(&self, key: &Key) -> Sequence {
        self.sequence((key.w_in(self.dims) % self.sequences() as u64) as usize)
    }

    /// `GetServersForKey(key, r)`: up to `r` reachable servers in order of succession (the
    /// root first); fewer only when fewer are reachable.
    pub fn servers_for_key(
        &mut self,
        key: &Key,
        r: usize,
        reachable: impl Fn(u32) -> bool,
    ) -> Vec<u32> {
        let home = host_at(self.dims, key.home(self.dims));
        let seq = self.sequence_of(key);
        self.walk(home, seq, r, reachable)
    }

    /// The root of `key`: its home server if reachable, else the first reachable server of
    /// its sequence; None when no server is reachable.
    pub fn root(&mut self, key: &Key, reachable: impl Fn(u32) -> bool) -> Option<u32> {
        self.servers_for_key(key, 1, reachable).first().copied()
    }

    /// Breadth-first from `home` along `seq`, keeping the reachable servers, until `r` are
    /// kept or every server has been listed.
    pub fn walk(
        &mut self,
        home: u32,
        seq: Sequence,
        r: usize,
        reachable: impl Fn(u32) -> bool,
    ) -> Vec<u32> {
        let mut out = Vec::with_capacity(r.min(self.listed.len()));
        if r == 0 {
            return out;
        }
        self.visit(home, seq, |s| {
            if reachable(s) {
                out.push(s);
            }
            out.len() < r
        });
        out
    }

    /// The home server of `key`.
    #[inline]
    pub fn home_of(&self, key: &Key) -> u32 {
        host_at(self.dims, key.home(self.dims))
    }

    /// The first server of `key`'s sequence that `ok` accepts (its root when `ok` says
    /// which servers are reachable), without allocating.
    pub fn first_of(&mut self, key: &Key, ok: impl Fn(u32) -> bool) -> Option<u32> {
        let (home, seq) = (self.home_of(key), self.sequence_of(key));
        let mut found = None;
        self.visit(home, seq, |s| {
            if ok(s) {
                found = Some(s);
            }
            found.is_none()
        });
        found
    }

    /// Calls `go` on each server of the sequence from `home` in order, while it returns true.
    fn visit(&mut self, home: u32, seq: Sequence, mut go: impl FnMut(u32) -> bool) {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.listed.iter_mut().for_each(|s| *s = 0);
            self.stamp = 1;
        }
        self.list.clear();
        self.list.push(home);
        self.listed[home as usize] = self.stamp;
        let mut next = 0;
        while next < self.list.len() {
            let s = self.list[next];
            next += 1;
            if !go(s) {
                return;
            }
            let c = coords(self.dims, s);
            for &axis in &seq.order {
                let k = self.dims[axis];
                if k < 2 {
                    continue;
                }
                let mut n = c;
                n[axis] = if seq.negative[axis] {
                    (c[axis] + k - 1) % k
                } else {
                    (c[axis] + 1) % k
                };
                let h = host_at(self.dims, n);
                if self.listed[h as usize] != self.stamp {
                    self.listed[h as usize] = self.stamp;
                    self.list.push(h);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The paper's 2D example: home (2,2), facet (+x,+y), order xy gives (2,2), (3,2),
    /// (2,3), (4,2), (3,3), then (2,4).
    #[test]
    fn the_papers_two_dimensional_example() {
        let dims = [8, 8, 1];
        let mut ks = KeySpace::new(dims);
        assert_eq!(ks.sequences(), 8);
        let seq = Sequence {
            negative: [false, false, false],
            order: [0, 1, 2],
        };
        assert_eq!(ks.sequence(0), seq, "f = (+x,+y), o = xy is sequence 0");
        let home = host_at(dims, [2, 2, 0]);
        let got: Vec<[u32; 3]> = ks
            .walk(home, seq, 6, |_| true)
            .into_iter()
            .map(|h| coords(dims, h))
            .collect();
        let want = [
            [2, 2, 0],
            [3, 2, 0],
            [2, 3, 0],
            [4, 2, 0],
            [3, 3, 0],
            [2, 4, 0],
        ];
        assert_eq!(got, want);
    }

    /// Every sequence lists every server once: some server is always the root.
    #[test]
    fn every_server_is_eventually_reached() {
        for dims in [[3, 3, 3], [4, 5, 6], [8, 8, 1], [2, 3, 4]] {
            let mut ks = KeySpace::new(dims);
            let n = (dims[0] * dims[1] * dims[2]) as usize;
            for i in 0..ks.sequences() {
                let seq = ks.sequence(i);
                let mut all = ks.walk(7 % n as u32, seq, usize::MAX, |_| true);
                assert_eq!(all.len(), n, "{dims:?} sequence {i}");
                all.sort_unstable();
                all.dedup();
                assert_eq!(all.len(), n);
            }
        }
    }

    /// The 48 sequences are distinct, and each of the home's six neighbours is second in
    /// exactly 8 of them: a failed server's keys split evenly over its neighbours.
    #[test]
    fn a_failed_servers_keys_spread_evenly_over_its_neighbours() {
        let dims = [5, 5, 5];
        let mut ks = KeySpace::new(dims);
        assert_eq!(ks.sequences(), 48);
        let seqs: Vec<Sequence> = (0..48).map(|i| ks.sequence(i)).collect();
        for (i, a) in seqs.iter().enumerate() {
            assert!(seqs[i + 1..].iter().all(|b| b != a));
        }
        let home = host_at(dims, [2, 2, 2]);
        let mut second = std::collections::BTreeMap::new();
        for &seq in &seqs {
            let s = ks.walk(home, seq, 2, |_| true);
            *second.entry(s[1]).or_insert(0) += 1;
        }
        assert_eq!(second.len(), 6);
        assert!(second.values().all(|&c| c == 8), "{second:?}");
        // With the home failed, keys homed there (w drawn over its whole range) land on the
        // neighbours in equal shares.
        let mut share = std::collections::BTreeMap::new();
        for w in 0..4800u64 {
            let key = Key::at([2, 2, 2], w.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 12);
            let root = ks.root(&key, |h| h != home).unwrap();
            *share.entry(root).or_insert(0u32) += 1;
        }
        assert_eq!(share.len(), 6);
        for &c in share.values() {
            assert!((700..=900).contains(&c), "{share:?}");
        }
    }

    /// The root is the home while it is reachable; with no server reachable there is none.
    #[test]
    fn roots_and_unreachable_servers() {
        let dims = [4, 4, 4];
        let mut ks = KeySpace::new(dims);
        let key = Key::at([1, 2, 3], 12345);
        let home = host_at(dims, [1, 2, 3]);
        assert_eq!(ks.root(&key, |_| true), Some(home));
        assert_eq!(ks.root(&key, |_| false), None);
        let three = ks.servers_for_key(&key, 3, |_| true);
        assert_eq!(three.len(), 3);
        assert_eq!(three[0], home);
        // Dropping an unreachable server keeps the others' order (the succession is fixed).
        let without = ks.servers_for_key(&key, 2, |h| h != three[1]);
        assert_eq!(without, vec![three[0], three[2]]);
    }

    /// Coordinates are each 4-bit field mod the axis size: with 3 servers on an axis the
    /// 16 values split 6/5/5, as the spec notes.
    #[test]
    fn key_fields_map_mod_the_axis_size() {
        let mut counts = [0u32; 3];
        for v in 0..16u64 {
            let k = Key::new(0, v << 60);
            counts[k.home([3, 3, 3])[0] as usize] += 1;
        }
        assert_eq!(counts, [6, 5, 5]);
        let k = Key::new(0, 0xABC0_0000_0000_0123);
        assert_eq!(k.home([16, 16, 16]), [0xA, 0xB, 0xC]);
        assert_eq!(k.w(), 0x123);
        // An axis longer than 16: 8 bits per axis.
        let wide = Key::new(0, 0x0102_0300_0000_0456);
        assert_eq!(wide.home([31, 4, 4]), [1, 2, 3]);
        assert_eq!(wide.w_in([31, 4, 4]), 0x456);
    }
}
