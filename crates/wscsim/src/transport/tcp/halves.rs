//! Where one part's TCP keeps its connections' halves.
//!
//! A connection's sender half lives in the part of the host that opened it, its receiver
//! half in the part of the host it goes to (`super::Tcp` holds one part per partition of
//! a run that has them, one part otherwise). A connection's id names its sender's part in
//! its low bits and the sender's slot there in the rest, so that a packet of it (whose
//! `flow_id` is the id) finds its sender half without a table. The receiver half of a
//! connection opened in the same part sits in the same slot, beside the sender; one
//! whose sender is in another part (foreign) is made when its first packet arrives, from
//! what every packet of the connection carries (hosts, ports and the receiving
//! application), and found again through a hash of the id, as a kernel finds a socket by
//! its four-tuple. A run split into parts never reuses a slot (`TcpPart::free_slot`), so
//! an id names one connection for the whole run and a foreign half is never replaced.

use super::{Receiver, Sender};
use crate::packet::Packet;
use rustc_hash::FxHashMap;
use std::cell::Cell;
use std::ops::{Index, IndexMut};

/// Most parts a run may have.
pub const MAX_PARTS: usize = 1 << 12;

/// How one part's connection ids map to its slots: the low `part_bits` bits of an id
/// name the part, the rest the slot there. Ids stay dense over the run (slot-major), so
/// what applications keep by connection id stays as small as with one part; with one
/// part (`part_bits` 0) an id is its slot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnIds {
    pub part: u32,
    pub part_bits: u32,
}

impl ConnIds {
    /// The ids of part `part` of `parts`.
    pub fn of(part: u32, parts: usize) -> Self {
        ConnIds {
            part,
            part_bits: parts.next_power_of_two().trailing_zeros(),
        }
    }

    #[inline]
    pub fn slot(self, conn: u32) -> usize {
        (conn >> self.part_bits) as usize
    }

    #[inline]
    pub fn id(self, slot: usize) -> u32 {
        let id = (slot as u64) << self.part_bits | u64::from(self.part);
        assert!(
            id < u64::from(NO_CONN),
            "too many TCP connections in one partition"
        );
        id as u32
    }

    /// The part whose host opened `conn`.
    #[inline]
    pub fn part_of(self, conn: u32) -> u32 {
        conn & ((1 << self.part_bits) - 1)
    }

    /// Whether `conn` was opened in this part.
    #[inline]
    pub fn is_own(self, conn: u32) -> bool {
        self.part_of(conn) == self.part
    }
}

/// The sender halves of the connections a part opened, by slot.
#[derive(Clone, Debug, Default)]
pub struct Senders {
    pub ids: ConnIds,
    v: Vec<Sender>,
}

impl Senders {
    pub fn new(ids: ConnIds) -> Self {
        Senders { ids, v: Vec::new() }
    }
    pub fn len(&self) -> usize {
        self.v.len()
    }
    pub fn is_empty(&self) -> bool {
        self.v.is_empty()
    }
    /// Adds a sender in the next slot; returns its connection id.
    pub fn push(&mut self, s: Sender) -> u32 {
        self.v.push(s);
        self.ids.id(self.v.len() - 1)
    }
    pub fn iter(&self) -> std::slice::Iter<'_, Sender> {
        self.v.iter()
    }
    /// Connection `conn`'s sender, if this part opened it.
    pub fn get(&self, conn: u32) -> Option<&Sender> {
        if self.ids.is_own(conn) {
            self.v.get(self.ids.slot(conn))
        } else {
            None
        }
    }
    /// The slots' connection ids, in slot order.
    pub fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.v.len()).map(|i| self.ids.id(i))
    }
    pub fn prefetch(&self, conn: u32) {
        crate::engine::prefetch(&self.v, self.ids.slot(conn));
    }
}

impl Index<u32> for Senders {
    type Output = Sender;
    #[inline]
    fn index(&self, conn: u32) -> &Sender {
        debug_assert!(
            self.ids.is_own(conn),
            "sender of {conn:#x} is in another part"
        );
        &self.v[self.ids.slot(conn)]
    }
}

impl IndexMut<u32> for Senders {
    #[inline]
    fn index_mut(&mut self, conn: u32) -> &mut Sender {
        debug_assert!(
            self.ids.is_own(conn),
            "sender of {conn:#x} is in another part"
        );
        &mut self.v[self.ids.slot(conn)]
    }
}

/// The receiver halves a part holds: beside their senders for connections it opened,
/// apart (foreign) for connections from other parts' hosts to its own.
#[derive(Clone, Debug)]
pub struct Receivers {
    pub ids: ConnIds,
    own: Vec<Receiver>,
    foreign: Vec<Receiver>,
    /// Slot in `foreign` of each foreign connection seen.
    foreign_slot: FxHashMap<u32, u32>,
    /// The foreign connection looked up last and its slot: one packet's handling looks
    /// its receiver up several times, and a hash per look-up cost 1.5% of a partitioned
    /// run (slots in `foreign` never move, so the pair never goes stale).
    last_foreign: Cell<(u32, u32)>,
}

/// No connection: ids never reach it (`ConnIds::id`).
const NO_CONN: u32 = u32::MAX;

impl Default for Receivers {
    fn default() -> Self {
        Receivers::new(ConnIds::default())
    }
}

impl Receivers {
    pub fn new(ids: ConnIds) -> Self {
        Receivers {
            ids,
            own: Vec::new(),
            foreign: Vec::new(),
            foreign_slot: FxHashMap::default(),
            last_foreign: Cell::new((NO_CONN, 0)),
        }
    }

    /// The receiver of a connection opened in this part, in its sender's slot.
    pub fn set_own(&mut self, conn: u32, r: Receiver) {
        let slot = self.ids.slot(conn);
        if slot == self.own.len() {
            self.own.push(r);
        } else {
            self.own[slot] = r;
        }
    }

    /// Makes sure `pkt` (of a connection from another part) has its receiver half here,
    /// made at the connection's first packet. Returns whether it was made now.
    #[inline(never)]
    pub fn arrive(&mut self, pkt: &Packet) -> bool {
        let conn = pkt.flow_id;
        if self.ids.is_own(conn) || self.last_foreign.get().0 == conn {
            return false;
        }
        let next = self.foreign.len() as u32;
        let i = *self.foreign_slot.entry(conn).or_insert(next);
        let made = i == next;
        if made {
            self.foreign.push(Receiver::fresh(pkt, carried_app(pkt)));
        }
        self.last_foreign.set((conn, i));
        made
    }

    /// The slot in `foreign` of foreign connection `conn`.
    #[inline]
    fn foreign_index(&self, conn: u32) -> usize {
        let (last, i) = self.last_foreign.get();
        if last == conn {
            return i as usize;
        }
        let i = self.foreign_slot[&conn];
        self.last_foreign.set((conn, i));
        i as usize
    }

    /// Whether connection `conn` has its receiver half here.
    pub fn contains(&self, conn: u32) -> bool {
        if self.ids.is_own(conn) {
            self.ids.slot(conn) < self.own.len()
        } else {
            self.foreign_slot.contains_key(&conn)
        }
    }

    pub fn prefetch(&self, conn: u32) {
        if self.ids.is_own(conn) {
            crate::engine::prefetch(&self.own, self.ids.slot(conn));
        }
    }

    /// Every receiver half here: this part's connections' first, then the foreign ones in
    /// the order they arrived.
    pub fn iter(&self) -> impl Iterator<Item = &Receiver> {
        self.own.iter().chain(&self.foreign)
    }
}

impl Index<u32> for Receivers {
    type Output = Receiver;
    #[inline]
    fn index(&self, conn: u32) -> &Receiver {
        if self.ids.is_own(conn) {
            &self.own[self.ids.slot(conn)]
        } else {
            &self.foreign[self.foreign_index(conn)]
        }
    }
}

impl IndexMut<u32> for Receivers {
    #[inline]
    fn index_mut(&mut self, conn: u32) -> &mut Receiver {
        if self.ids.is_own(conn) {
            &mut self.own[self.ids.slot(conn)]
        } else {
            let i = self.foreign_index(conn);
            &mut self.foreign[i]
        }
    }
}

/// What a connection's packets carry for a receiver half in another part (in `key`,
/// which only packets addressed to a key use otherwise): the receiving application in
/// the low 32 bits, and above them the connection it is linked with as one bidirectional
/// connection, plus one (`with_reverse`; 0: none).
pub fn carried_key(app: u32) -> u64 {
    u64::from(app)
}

/// `key` with the linked connection `rev` carried as well.
pub fn with_reverse(key: u64, rev: u32) -> u64 {
    (key & u64::from(u32::MAX)) | (u64::from(rev) + 1) << 32
}

fn carried_app(pkt: &Packet) -> u32 {
    pkt.key as u32
}

/// The connection `pkt`'s connection is linked with, if its sender linked it.
pub fn carried_reverse(pkt: &Packet) -> Option<u32> {
    ((pkt.key >> 32) as u32).checked_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A packet of connection `conn` from host 0 to host 1 (source port `sport`), for
    /// application 5.
    fn pkt(conn: u32, sport: u16) -> Packet {
        Packet {
            flow_id: conn,
            src_host: 0,
            dst_host: 1,
            src_port: sport,
            key: carried_key(5),
            ..Default::default()
        }
    }

    /// A connection from another part gets its receiver at its first packet and keeps it;
    /// look-ups of two connections in turn find each its own.
    #[test]
    fn foreign_receivers_are_made_at_the_first_packet() {
        let ids = ConnIds::of(1, 3);
        let mut r = Receivers::new(ids);
        let conn = ConnIds::of(0, 3).id(3); // slot 3 of part 0
        let other = ConnIds::of(2, 3).id(0);
        assert!(!r.contains(conn));
        r.arrive(&pkt(conn, 1030));
        assert_eq!((r[conn].host, r[conn].peer, r[conn].app), (1, 0, 5));
        r[conn].rcv_nxt = 100;
        r.arrive(&pkt(other, 1040));
        r.arrive(&pkt(conn, 1030));
        assert_eq!(r[conn].rcv_nxt, 100, "the same connection keeps its state");
        assert_eq!((r[other].rcv_nxt, r[other].sport), (0, 1040));
        assert_eq!((r[conn].sport, r.contains(other)), (1030, true));
        assert_eq!(
            (ids.id(3), ids.part_of(ids.id(3)), ids.slot(ids.id(3))),
            (13, 1, 3)
        );
        assert!(!ids.is_own(conn) && ids.is_own(ids.id(0)));
    }
}
