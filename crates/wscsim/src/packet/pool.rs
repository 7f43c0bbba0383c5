//! The packet pool: slots in fixed chunks, named by index, with a free list.
//!
//! Slots live in chunks of 4,096 that never move once made, found through a table of
//! fixed length: a packet's address stays the same for the whole run, which is what lets
//! other threads hold a *view* of the pool (`view`) while its owner allocates. A view
//! reads and writes the packets it has been handed, keeps its own free list and count,
//! and cannot allocate; its owner takes both back (`absorb`) when the threads meet.

use super::{Packet, PktId};

/// Slots per chunk (128-byte packets: 512 KiB a chunk).
const CHUNK_SHIFT: u32 = 12;
const CHUNK_SLOTS: usize = 1 << CHUNK_SHIFT;
/// Chunks the table has room for: one for every possible `PktId`.
const TABLE_LEN: usize = 1 << (32 - CHUNK_SHIFT);

/// Pool of packets with a free list.
pub struct PacketPool {
    /// Each chunk's first slot, by chunk number: `TABLE_LEN` entries that never move (the
    /// owner's `table`, or the owner's seen through a view).
    table: *mut *mut Packet,
    /// The owner's table (None in a view: the owner frees it).
    _owned_table: Option<Box<[*mut Packet]>>,
    /// The owner's chunks (empty in a view).
    chunks: Vec<Box<[Packet]>>,
    /// Slots handed out so far: every id below it names a slot.
    used: u32,
    free: Vec<PktId>,
    /// Allocations less frees (a view's counts only its own frees: negative).
    live: i64,
    /// A view on another thread: it must not allocate.
    is_view: bool,
}

// SAFETY: the owner owns its table and chunks outright; the raw pointers only name them.
// A view shares them with its owner, and `view`'s contract (one thread per packet until
// the threads meet) is what keeps their accesses apart.
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
        PacketPool {
            table: owned.as_mut_ptr(),
            _owned_table: Some(owned),
            chunks: Vec::new(),
            used: 0,
            free: Vec::with_capacity(1 << 14),
            live: 0,
            is_view: false,
        }
    }

    #[inline]
    pub fn alloc(&mut self, p: Packet) -> PktId {
        self.live += 1;
        let id = match self.free.pop() {
            Some(id) => id,
            None => self.new_slot(),
        };
        *self.get_mut(id) = p;
        id
    }

    /// A slot never used before, in a new chunk when the last is full.
    #[cold]
    #[inline(never)]
    fn new_slot(&mut self) -> PktId {
        assert!(!self.is_view, "a view of the packet pool cannot allocate");
        let id = self.used;
        assert!(id < super::NO_PKT - 1, "the packet pool is full");
        if (id as usize).is_multiple_of(CHUNK_SLOTS) {
            let mut chunk: Box<[Packet]> = vec![Packet::default(); CHUNK_SLOTS].into();
            // SAFETY: the table has TABLE_LEN entries and id >> CHUNK_SHIFT < TABLE_LEN.
            unsafe { *self.table.add((id >> CHUNK_SHIFT) as usize) = chunk.as_mut_ptr() };
            self.chunks.push(chunk);
        }
        self.used += 1;
        id
    }

    #[inline]
    pub fn free(&mut self, id: PktId) {
        self.live -= 1;
        self.free.push(id);
    }

    #[inline]
    fn slot(&self, id: PktId) -> *mut Packet {
        assert!(id < self.used, "packet {id} was never allocated");
        // SAFETY: every id below `used` lies in a chunk the table points to, and chunks
        // hold CHUNK_SLOTS slots.
        unsafe {
            (*self.table.add((id >> CHUNK_SHIFT) as usize)).add(id as usize & (CHUNK_SLOTS - 1))
        }
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
        if id < self.used {
            // SAFETY: prefetching is a hint that never faults; the slot exists.
            unsafe {
                std::arch::x86_64::_mm_prefetch(
                    self.slot(id) as *const i8,
                    std::arch::x86_64::_MM_HINT_T0,
                )
            };
        }
    }

    /// Packets allocated and not yet freed (in flight, queued or in a NIC).
    pub fn live(&self) -> u64 {
        self.live as u64
    }

    /// Slots ever allocated (the pool's high-water mark).
    pub fn capacity_used(&self) -> usize {
        self.used as usize
    }

    /// A pool for another thread that shares this one's packets: it reads and writes the
    /// packets handed to it, frees into its own list and cannot allocate.
    ///
    /// # Safety
    ///
    /// Until `absorb` takes the view back, each packet is touched by one thread only
    /// (the one whose partition holds it), packets pass between threads only where the
    /// threads meet (a barrier), and the owner is neither dropped nor moved out of use.
    /// `absorb` must run at each meeting so the view knows the owner's new slots.
    pub unsafe fn view(&self) -> PacketPool {
        PacketPool {
            table: self.table,
            _owned_table: None,
            chunks: Vec::new(),
            used: self.used,
            free: Vec::new(),
            live: 0,
            is_view: true,
        }
    }

    /// Between windows: the view learns of the slots made since it last met this pool
    /// (packets a global event made may reach its partitions in the next window).
    pub fn teach_slots(&self, view: &mut PacketPool) {
        debug_assert!(view.is_view && view.table == self.table);
        view.used = self.used;
    }

    /// Where the threads meet: the view learns of the slots made since, and hands back
    /// what it freed (appended to this pool's free list, in the view's order).
    pub fn absorb(&mut self, view: &mut PacketPool) {
        debug_assert!(view.is_view && view.table == self.table);
        self.free.append(&mut view.free);
        self.live += view.live;
        view.live = 0;
        view.used = self.used;
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
    }

    #[test]
    fn a_view_frees_into_its_own_list_until_absorbed() {
        let mut pool = PacketPool::new();
        let a = pool.alloc(Packet::default());
        let b = pool.alloc(Packet::default());
        // SAFETY: one thread; the view and the owner touch different packets.
        let mut view = unsafe { pool.view() };
        view.get_mut(b).seq = 9;
        view.free(b);
        assert_eq!(pool.live(), 2, "the owner has not heard yet");
        pool.absorb(&mut view);
        assert_eq!(pool.live(), 1);
        assert_eq!(pool.get(b).seq, 9);
        assert_eq!(
            pool.alloc(Packet::default()),
            b,
            "the view's free slot is reused"
        );
        let c = pool.alloc(Packet::default());
        pool.absorb(&mut view);
        assert_eq!(view.get(c).seq, 0, "a synced view sees new slots");
        let _ = a;
    }

    #[test]
    #[should_panic(expected = "cannot allocate")]
    fn a_view_cannot_allocate() {
        let pool = PacketPool::new();
        // SAFETY: one thread.
        let mut view = unsafe { pool.view() };
        view.alloc(Packet::default());
    }

    #[test]
    #[should_panic(expected = "never allocated")]
    fn an_unallocated_id_is_refused() {
        PacketPool::new().get(3);
    }
}
