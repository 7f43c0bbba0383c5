//! CamCubeOS's cache, in front of the key-value store's lookups (`workload.cache`): an
//! item's home is the root of its key (memId = objId: the root holds the item in memory
//! and the cache keeps no second copy there); `hot_spots` more keys are derived from it,
//! spread over the torus, and a reader sends its read to whichever of the key and its
//! derived keys has its home closest (in torus hops). The server C that receives the read
//! answers from its cache if it holds the item; otherwise, unless C is the root, it asks
//! the root, which answers from memory and records that C holds a copy; C keeps the copy
//! and answers the reader. A write at the root invalidates every recorded copy; when a
//! server fails, the others flush the items whose home it was.
//!
//! Simplified: cached copies are never evicted (no size limit), and invalidations are
//! sent without waiting for them, so a read can see an older version for the time an
//! invalidation takes to arrive.

use crate::net::kbr::keyspace::{Key, KeySpace};
use std::collections::BTreeMap;

/// The routing bits of derived key `j` (1 to hot_spots) of a key with bits `bits`.
pub fn derived(bits: u64, j: u32) -> u64 {
    crate::engine::rng::mix64(bits ^ u64::from(j).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// What the cache counted over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheCounters {
    /// Reads answered from a cached copy, or by the root from memory.
    pub hits: u64,
    /// Reads that had to ask the root.
    pub misses: u64,
    pub invalidations: u64,
}

pub struct Cache {
    pub hot_spots: u32,
    keys: KeySpace,
    /// Per server: the copies it holds, by key, with their version.
    held: Vec<BTreeMap<u32, u32>>,
    /// Per server (as a root): which servers hold copies of each key.
    holders: Vec<BTreeMap<u32, Vec<u32>>>,
    pub counters: CacheCounters,
}

impl Cache {
    pub fn new(dims: [u32; 3], servers: usize, hot_spots: u32) -> Cache {
        Cache {
            hot_spots,
            keys: KeySpace::new(dims),
            held: vec![BTreeMap::new(); servers],
            holders: vec![BTreeMap::new(); servers],
            counters: CacheCounters::default(),
        }
    }

    /// Of the key with bits `bits` and its derived keys, the one whose home is closest to
    /// server `reader` (the key itself on a tie).
    pub fn closest(&self, reader: u32, bits: u64) -> u64 {
        let dims = self.keys.dims();
        let hops = |b: u64| {
            let home = self.keys.home_of(&Key::new(0, b));
            crate::net::routing::torus::hops(dims, reader, home)
        };
        (1..=self.hot_spots)
            .map(|j| derived(bits, j))
            .fold(bits, |best, b| if hops(b) < hops(best) { b } else { best })
    }

    /// The version of `key` that server `host` holds a copy of.
    pub fn copy_at(&self, host: u32, key: u32) -> Option<u32> {
        self.held[host as usize].get(&key).copied()
    }

    /// Server `host` keeps a copy of `key` at `version`.
    pub fn keep(&mut self, host: u32, key: u32, version: u32) {
        self.held[host as usize].insert(key, version);
    }

    /// The root `root` records that `holder` has a copy of `key`.
    pub fn record(&mut self, root: u32, key: u32, holder: u32) {
        let h = self.holders[root as usize].entry(key).or_default();
        if !h.contains(&holder) {
            h.push(holder);
        }
    }

    /// The servers holding copies of `key` that root `root` must invalidate (forgotten).
    pub fn take_holders(&mut self, root: u32, key: u32) -> Vec<u32> {
        self.holders[root as usize].remove(&key).unwrap_or_default()
    }

    /// Server `host` drops its copy of `key`.
    pub fn invalidate(&mut self, host: u32, key: u32) {
        self.counters.invalidations += 1;
        self.held[host as usize].remove(&key);
    }

    /// Server `failed` is gone: every copy of an item whose home it was is flushed.
    pub fn flush_home(&mut self, failed: u32, key_bits: &[u64]) {
        let keys = &self.keys;
        for held in &mut self.held {
            held.retain(|&k, _| keys.home_of(&Key::new(0, key_bits[k as usize])) != failed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_goes_to_the_closest_of_a_key_and_its_derived_keys() {
        let c = Cache::new([8, 8, 8], 512, 4);
        let ks = KeySpace::new([8, 8, 8]);
        let dims = [8, 8, 8];
        let mut nearer = 0;
        for i in 0..200u64 {
            let bits = crate::engine::rng::mix64(i);
            let reader = (i * 37 % 512) as u32;
            let chosen = c.closest(reader, bits);
            let d = |b: u64| {
                crate::net::routing::torus::hops(dims, reader, ks.home_of(&Key::new(0, b)))
            };
            let all: Vec<u64> = std::iter::once(bits)
                .chain((1..=4).map(|j| derived(bits, j)))
                .collect();
            assert!(all.contains(&chosen));
            assert_eq!(d(chosen), all.iter().map(|&b| d(b)).min().unwrap());
            nearer += usize::from(d(chosen) < d(bits));
        }
        // Five homes spread over 512 servers: the nearest is usually not the key's own.
        assert!(nearer > 100, "{nearer}");
    }

    #[test]
    fn holders_are_recorded_once_and_invalidated_together() {
        let mut c = Cache::new([3, 3, 3], 27, 4);
        c.keep(5, 9, 2);
        c.record(1, 9, 5);
        c.record(1, 9, 5);
        c.record(1, 9, 7);
        assert_eq!(c.take_holders(1, 9), vec![5, 7]);
        assert!(c.take_holders(1, 9).is_empty());
        c.invalidate(5, 9);
        assert_eq!(c.copy_at(5, 9), None);
    }
}
