//! The packet pool: slots in fixed chunks, named by index, each partition with its own
//! arena (chunks and free list).
//!
//! Slots live in chunks of 4,096 that never move once made, found through a table of
//! fixed length: a packet's address stays the same for the whole run, which is what lets
//! other threads hold a *view* of the pool (`view`) while the owner and they allocate.
//!
//! A partitioned run gives each partition an arena (`set_arenas`), and one more for what
//! global events send: a partition's events allocate from its arena and free into it (a
//! packet that crossed to another partition is that partition's from then on), so what
//! a partition's events touch of the pool is its own arena's memory, and no thread
//! waits for another to get a slot. Arena a's k-th chunk is chunk number `k * n + a` of
//! the table (n arenas), so which ids a partition uses depends on its own events only,
//! never on which thread ran it. An ordinary run has one arena, whose chunks are
//! numbered 0, 1, 2, ... Between windows free slots move from arenas that got back more
//! than they gave out to those that run short (`PacketPool::rebalance`).

use super::{Packet, PktId};

/// Free slots an arena may keep (at least) when free slots move between arenas
/// (`PacketPool::rebalance`).
const KEEP_FREE: usize = 1 << 10;

/// Slots per chunk (128-byte packets: 512 KiB a chunk).
const CHUNK_SHIFT: u32 = 12;
const CHUNK_SLOTS: usize = 1 << CHUNK_SHIFT;
/// Chunks the table has room for: one for every possible `PktId`.
const TABLE_LEN: usize = 1 << (32 - CHUNK_SHIFT);

/// One partition's share of the pool: the chunks it made and its free slots.
#[derive(Default)]
struct Arena {
    chunks: Vec<Box<[Packet]>>,
    /// Slots handed out of the newest chunk (CHUNK_SLOTS once it is full, or none made).
    made_in_chunk: usize,
    free: Vec<PktId>,
    /// Allocations less frees in this arena (negative when it freed packets others made).
    live: i64,
    /// `live` when free slots last moved between arenas (`PacketPool::rebalance`): what it
    /// has grown by since is what the arena gave out beyond what came back to it.
    live_before: i64,
}

impl Arena {
    /// No chunk yet (the next slot makes one).
    fn empty() -> Arena {
        Arena {
            made_in_chunk: CHUNK_SLOTS,
            ..Default::default()
        }
    }
}

/// Pool of packets with a free list per arena.
pub struct PacketPool {
    /// Each chunk's first slot, by chunk number: `TABLE_LEN` entries that never move (the
    /// owner's `table`, or the owner's seen through a view).
    table: *mut *mut Packet,
    /// The owner's table (None in a view: the owner frees it).
    _owned_table: Option<Box<[*mut Packet]>>,
    /// The arenas (the owner's `owned_arenas`, or the owner's seen through a view).
    arenas: *mut Arena,
    n_arenas: u32,
    /// The owner's arenas (empty in a view: the owner frees them).
    owned_arenas: Vec<Arena>,
    /// The arena this pool allocates from and frees into (`enter`).
    cur: u32,
    /// A view (another thread's): it must not drop or grow what it shares.
    is_view: bool,
    /// Free slots no arena holds, for the arenas that run short (`rebalance`).
    spares: Vec<PktId>,
}

// SAFETY: the owner owns its table and arenas outright; the raw pointers only name them.
// A view shares them with its owner, and `view`'s contract (one thread per arena and per
// packet until the threads meet) is what keeps their accesses apart.
unsafe impl Send for PacketPool {}

impl Default for PacketPool {
    fn default() -> Self {
        Self::new()
    }
}

impl PacketPool {
    pub fn new() -> Self {
        // Null pointers are zero bits: the table is allocated zeroed and its pages are
        // only touched as chunks are made.
        let mut owned: Box<[*mut Packet]> = vec![std::ptr::null_mut(); TABLE_LEN].into();
        let mut arenas = vec![Arena {
            free: Vec::with_capacity(1 << 14),
            ..Arena::empty()
        }];
        PacketPool {
            table: owned.as_mut_ptr(),
            _owned_table: Some(owned),
            arenas: arenas.as_mut_ptr(),
            n_arenas: 1,
            owned_arenas: arenas,
            cur: 0,
            is_view: false,
            spares: Vec::new(),
        }
    }

    /// Gives the pool `n` arenas (before any packet is made): arena `a` for partition `a`,
    /// the last for global events. Arena 0 is the current one.
    pub fn set_arenas(&mut self, n: usize) {
        assert!(!self.is_view && (1..=TABLE_LEN / 64).contains(&n));
        assert!(
            self.owned_arenas.iter().all(|a| a.chunks.is_empty()),
            "arenas are set before any packet is made"
        );
        self.owned_arenas = (0..n).map(|_| Arena::empty()).collect();
        self.arenas = self.owned_arenas.as_mut_ptr();
        self.n_arenas = n as u32;
        self.cur = 0;
    }

    /// Allocations and frees go to arena `a` from now on.
    #[inline]
    pub fn enter(&mut self, a: usize) {
        debug_assert!(a < self.n_arenas as usize);
        self.cur = a as u32;
    }

    #[inline]
    fn arena(&mut self) -> &mut Arena {
        // SAFETY: `cur < n_arenas` (`enter`), and `view`'s contract gives arena `cur` to
        // this thread alone until the threads meet.
        unsafe { &mut *self.arenas.add(self.cur as usize) }
    }

    #[inline]
    pub fn alloc(&mut self, p: Packet) -> PktId {
        let a = self.arena();
        a.live += 1;
        let id = match a.free.pop() {
            Some(id) => id,
            None => self.new_slot(),
        };
        *self.get_mut(id) = p;
        id
    }

    /// A slot never used before, in a new chunk of the current arena when its last is full
    /// (for the global events' arena: first the other arenas' spare slots).
    #[cold]
    #[inline(never)]
    fn new_slot(&mut self) -> PktId {
        if let Some(id) = self.take_spares_for_global() {
            return id;
        }
        let (cur, n, table) = (self.cur as usize, self.n_arenas as usize, self.table);
        let a = self.arena();
        if a.made_in_chunk == CHUNK_SLOTS {
            let number = a.chunks.len() * n + cur;
            assert!(number < TABLE_LEN - 1, "the packet pool is full");
            let mut chunk: Box<[Packet]> = vec![Packet::default(); CHUNK_SLOTS].into();
            // SAFETY: the table has TABLE_LEN entries and `number < TABLE_LEN`; entry
            // `number` is this arena's alone (its k-th chunk), written once.
            unsafe { *table.add(number) = chunk.as_mut_ptr() };
            a.chunks.push(chunk);
            a.made_in_chunk = 0;
        }
        let number = (a.chunks.len() - 1) * n + cur;
        let id = ((number << CHUNK_SHIFT) + a.made_in_chunk) as PktId;
        a.made_in_chunk += 1;
        id
    }

    #[inline]
    pub fn free(&mut self, id: PktId) {
        let a = self.arena();
        a.live -= 1;
        a.free.push(id);
    }

    /// The first slot of `id`'s chunk (null if that chunk was never made).
    #[inline]
    fn chunk_of(&self, id: PktId) -> *mut Packet {
        // SAFETY: the table has TABLE_LEN entries, one for every id's chunk number.
        unsafe { *self.table.add((id >> CHUNK_SHIFT) as usize) }
    }

    #[inline]
    fn slot(&self, id: PktId) -> *mut Packet {
        let chunk = self.chunk_of(id);
        assert!(!chunk.is_null(), "packet {id} was never allocated");
        // SAFETY: a chunk the table points to holds CHUNK_SLOTS slots.
        unsafe { chunk.add(id as usize & (CHUNK_SLOTS - 1)) }
    }

    #[inline]
    pub fn get(&self, id: PktId) -> &Packet {
        // SAFETY: `slot` is a live slot of this pool; see `view` for sharing.
        unsafe { &*self.slot(id) }
    }

    #[inline]
    pub fn get_mut(&mut self, id: PktId) -> &mut Packet {
        // SAFETY: as `get`, and `&mut self` keeps this pool from handing out another
        // reference meanwhile.
        unsafe { &mut *self.slot(id) }
    }

    /// Asks the CPU to start loading packet `id` into cache (a hint; no effect elsewhere).
    #[inline]
    pub fn prefetch(&self, id: PktId) {
        #[cfg(target_arch = "x86_64")]
        {
            let chunk = self.chunk_of(id);
            if !chunk.is_null() {
                // SAFETY: prefetching is a hint that never faults; the slot exists.
                unsafe {
                    std::arch::x86_64::_mm_prefetch(
                        chunk.add(id as usize & (CHUNK_SLOTS - 1)) as *const i8,
                        std::arch::x86_64::_MM_HINT_T0,
                    )
                };
            }
        }
    }

    /// Moves free slots from arenas that got back more packets than they gave out to
    /// those that gave out more. A packet is freed into the arena of the partition where it
    /// ends, so an arena whose partition sends more than it receives (a sender's hosts;
    /// the global events' arena, whose UDP sources and flow starts get nothing back) would
    /// make new slots for ever while the receivers' free lists grew: 27 MB per 100 ms of
    /// four 10 Gbit/s flows from one pod to another, 60 MB per simulated second of a
    /// 512-server torus under churn. So each arena is topped up from the pool's spares to
    /// twice what it gave out beyond what came back to it since the last call (a window's
    /// net use, with room for a busier one), and one holding more than twice what it may
    /// keep (`KEEP_FREE`, or that top-up if larger) gives its oldest beyond that to the
    /// spares. An arena that uses none net (a fabric partition's, a receiver's) is given
    /// none.
    ///
    /// Called only while no partition runs (where windows close), so no other thread
    /// touches the arenas, and at the same points of a run on any number of threads and
    /// in any slices: which slots an arena holds depends only on what the partitions did
    /// before. A view never rebalances.
    pub fn rebalance(&mut self) {
        let n = self.n_arenas as usize;
        if self.is_view || n == 1 {
            return;
        }
        // SAFETY: the owner's `n` arenas; no other thread touches them now (above).
        let arenas = unsafe { std::slice::from_raw_parts_mut(self.arenas, n) };
        let want = |a: &Arena| 2 * (a.live - a.live_before).max(0) as usize;
        for a in arenas.iter_mut() {
            let keep = KEEP_FREE.max(want(a));
            if a.free.len() > 2 * keep {
                let extra = a.free.len() - keep;
                self.spares.extend(a.free.drain(..extra));
            }
        }
        for a in arenas.iter_mut() {
            let want = want(a);
            a.live_before = a.live;
            if a.free.len() < want {
                let take = (want - a.free.len()).min(self.spares.len());
                a.free.extend(self.spares.drain(self.spares.len() - take..));
            }
        }
    }

    /// The global events' arena, out of free slots in a global event (when no partition
    /// runs), takes a spare before it makes a slot.
    fn take_spares_for_global(&mut self) -> Option<PktId> {
        if self.is_view || self.n_arenas == 1 || self.cur + 1 != self.n_arenas {
            return None;
        }
        self.spares.pop()
    }

    fn all_arenas(&self) -> &[Arena] {
        // SAFETY: `n_arenas` arenas start at `arenas`; callers are between windows, when
        // no other thread touches them.
        unsafe { std::slice::from_raw_parts(self.arenas, self.n_arenas as usize) }
    }

    /// Packets allocated and not yet freed (in flight, queued or in a NIC).
    pub fn live(&self) -> u64 {
        self.all_arenas().iter().map(|a| a.live).sum::<i64>() as u64
    }

    /// Slots ever made (the pool's high-water mark).
    pub fn capacity_used(&self) -> usize {
        self.all_arenas()
            .iter()
            .filter(|a| !a.chunks.is_empty())
            .map(|a| (a.chunks.len() - 1) * CHUNK_SLOTS + a.made_in_chunk)
            .sum()
    }

    /// A pool for another thread that shares this one's table and arenas: it reads and
    /// writes the packets handed to it, and allocates from and frees into the arena of the
    /// partition it runs (`enter`).
    ///
    /// # Safety
    ///
    /// Until the view is dropped, each arena and each packet is touched by one thread at
    /// a time (the one running the partition that holds it), and they pass between
    /// threads only where the threads meet (a barrier); the owner is neither dropped nor
    /// moved, and sets no arenas meanwhile.
    pub unsafe fn view(&self) -> PacketPool {
        PacketPool {
            table: self.table,
            _owned_table: None,
            arenas: self.arenas,
            n_arenas: self.n_arenas,
            owned_arenas: Vec::new(),
            cur: self.cur,
            is_view: true,
            spares: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_keep_their_address_as_chunks_are_added() {
        let mut pool = PacketPool::new();
        let first = pool.alloc(Packet {
            seq: 7,
            ..Default::default()
        });
        let at = pool.get(first) as *const Packet;
        let ids: Vec<PktId> = (0..3 * CHUNK_SLOTS as u64)
            .map(|i| {
                pool.alloc(Packet {
                    seq: i,
                    ..Default::default()
                })
            })
            .collect();
        assert_eq!(pool.get(first) as *const Packet, at);
        assert_eq!(pool.get(first).seq, 7);
        assert!(ids
            .iter()
            .enumerate()
            .all(|(i, &id)| pool.get(id).seq == i as u64));
        assert_eq!(pool.capacity_used(), 1 + 3 * CHUNK_SLOTS);
        assert_eq!(ids[0], 1, "one arena numbers its slots from 0");
    }

    #[test]
    fn each_arena_numbers_its_own_chunks() {
        let mut pool = PacketPool::new();
        pool.set_arenas(3);
        let mut take = |a: usize, n: usize| -> Vec<PktId> {
            pool.enter(a);
            (0..n).map(|_| pool.alloc(Packet::default())).collect()
        };
        let two = take(2, CHUNK_SLOTS + 1);
        let zero = take(0, 1);
        let chunk = |id: PktId| id >> CHUNK_SHIFT;
        assert_eq!(chunk(zero[0]), 0, "arena 0's first chunk is chunk 0");
        assert_eq!(chunk(two[0]), 2, "arena 2's first chunk is chunk 2");
        assert_eq!(chunk(two[CHUNK_SLOTS]), 5, "its second is chunk 2 + 3");
        // Arena 2's ids do not depend on what arena 0 did first.
        let mut other = PacketPool::new();
        other.set_arenas(3);
        other.enter(2);
        let again: Vec<PktId> = (0..=CHUNK_SLOTS)
            .map(|_| other.alloc(Packet::default()))
            .collect();
        assert_eq!(two, again);
    }

    #[test]
    fn a_packet_freed_in_another_arena_is_reused_there() {
        let mut pool = PacketPool::new();
        pool.set_arenas(2);
        let a = pool.alloc(Packet::default());
        pool.enter(1);
        pool.free(a);
        assert_eq!(pool.live(), 0, "the arenas' counts sum");
        let b = pool.alloc(Packet::default());
        assert_eq!(a, b, "arena 1 reuses what it freed");
        pool.enter(0);
        assert_ne!(pool.alloc(Packet::default()), a, "arena 0 no longer has it");
    }

    #[test]
    fn free_slots_move_to_the_arenas_that_run_short() {
        let mut pool = PacketPool::new();
        pool.set_arenas(3);
        // Global events send packets that partition 1 frees: the global arena gets none back.
        pool.enter(2);
        let sent: Vec<PktId> = (0..3 * KEEP_FREE)
            .map(|_| pool.alloc(Packet::default()))
            .collect();
        pool.enter(1);
        sent.iter().for_each(|&id| pool.free(id));
        let made = pool.capacity_used();
        // Where a window closes: partition 1 keeps KEEP_FREE, the global arena (which made
        // every slot it sent) takes the rest, partition 0 (which made none) nothing.
        pool.rebalance();
        let mut reused = Vec::new();
        for (a, n) in [(2, 2 * KEEP_FREE), (1, KEEP_FREE)] {
            pool.enter(a);
            reused.extend((0..n).map(|_| pool.alloc(Packet::default())));
        }
        assert_eq!(pool.capacity_used(), made, "no new slot was made");
        assert!(reused.iter().all(|id| sent.contains(id)));
        pool.enter(0);
        pool.alloc(Packet::default());
        assert_eq!(pool.capacity_used(), made + 1, "every spare is in use");
    }

    #[test]
    fn a_sender_short_by_many_slots_a_window_stops_making_them() {
        // Partition 0 sends 600 packets a window that partition 1 frees.
        let mut pool = PacketPool::new();
        pool.set_arenas(3);
        for _ in 0..50 {
            pool.enter(0);
            let sent: Vec<PktId> = (0..600).map(|_| pool.alloc(Packet::default())).collect();
            pool.enter(1);
            sent.iter().for_each(|&id| pool.free(id));
            pool.rebalance();
        }
        // It makes slots until partition 1's surplus reaches the spares, then lives on them.
        assert!(
            pool.capacity_used() <= 4 * 600,
            "{} slots",
            pool.capacity_used()
        );
    }

    #[test]
    fn a_view_allocates_from_the_arena_it_runs() {
        let mut pool = PacketPool::new();
        pool.set_arenas(2);
        let a = pool.alloc(Packet::default());
        // SAFETY: one thread; the view runs arena 1, the owner arena 0.
        let mut view = unsafe { pool.view() };
        view.enter(1);
        let v = view.alloc(Packet {
            seq: 9,
            ..Default::default()
        });
        view.free(a);
        assert_eq!(pool.get(v).seq, 9, "the owner sees the view's packet");
        assert_eq!(pool.live(), 1);
        drop(view);
        assert_eq!(pool.capacity_used(), 2);
    }

    #[test]
    #[should_panic(expected = "never allocated")]
    fn an_unallocated_id_is_refused() {
        PacketPool::new().get(1 << CHUNK_SHIFT);
    }
}
