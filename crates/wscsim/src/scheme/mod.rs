//! The data-plane scheme API (after Flexplane): every output port runs a scheme made of
//! classify, enqueue and schedule (route is the switch's routing table, `net::routing`).
//!
//! Built-in schemes are variants of the `Scheme` enum, so the per-packet path is a
//! `match`, not a virtual call. A scheme sees its port through `PortCtx`: the port's
//! queues, the packet pool and the port's byte limit.

pub mod droptail;

use crate::engine::TimePs;
use crate::net::packet::{PacketPool, PktId, PktQueue};

pub use droptail::DropTail;

/// What `enqueue` decided about an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Queued as is.
    Accepted,
    /// Queued with its ECN field set to CE.
    AcceptedMarked,
    /// Not queued; the caller frees and counts it.
    Dropped,
    /// The arriving packet was queued and this other, already queued, packet was taken out
    /// of its queue to make room (pFabric); the caller frees and counts it.
    DroppedOther(PktId),
}

/// A port's queues as a scheme sees them. `push` and `pop` keep the port's byte and packet
/// totals and the non-empty bitmap right, so schemes cannot get them wrong.
pub struct PortCtx<'a> {
    pub queues: &'a mut [PktQueue],
    /// One bit per queue: set when the queue holds packets.
    pub nonempty: &'a mut [u64],
    pub pool: &'a mut PacketPool,
    pub bytes_queued: &'a mut u64,
    pub pkts_queued: &'a mut u32,
    /// Most bytes this port may hold now (its own buffer, or its share of a shared one).
    pub limit_bytes: u64,
    pub now_ps: TimePs,
}

impl PortCtx<'_> {
    #[inline]
    pub fn push(&mut self, queue: usize, pkt: PktId) {
        let bytes = self.pool.get(pkt).frame_bytes as u64;
        self.queues[queue].push_back(self.pool, pkt);
        self.nonempty[queue >> 6] |= 1u64 << (queue & 63);
        *self.bytes_queued += bytes;
        *self.pkts_queued += 1;
    }

    #[inline]
    pub fn pop(&mut self, queue: usize) -> Option<PktId> {
        let id = self.queues[queue].pop_front(self.pool)?;
        if self.queues[queue].is_empty() {
            self.nonempty[queue >> 6] &= !(1u64 << (queue & 63));
        }
        *self.bytes_queued -= self.pool.get(id).frame_bytes as u64;
        *self.pkts_queued -= 1;
        Some(id)
    }

    /// Whether `bytes` more fit under the port's limit.
    #[inline]
    pub fn fits(&self, bytes: u64) -> bool {
        *self.bytes_queued + bytes <= self.limit_bytes
    }

    /// First non-empty queue at or after `start`, wrapping around (round-robin helper).
    #[inline]
    pub fn next_nonempty_from(&self, start: usize) -> Option<usize> {
        let n = self.queues.len();
        if n == 0 {
            return None;
        }
        let words = self.nonempty.len();
        let (w0, b0) = (start >> 6, start & 63);
        // Bits at or above `start` in its word, then the following words, then wrap.
        let first = self.nonempty[w0] & (!0u64 << b0);
        if first != 0 {
            return Some((w0 << 6) + first.trailing_zeros() as usize);
        }
        for i in 1..=words {
            let w = (w0 + i) % words;
            let bits = if w == w0 { self.nonempty[w] & !(!0u64 << b0) } else { self.nonempty[w] };
            if bits != 0 {
                return Some((w << 6) + bits.trailing_zeros() as usize);
            }
        }
        None
    }
}

/// A port's scheme. Per-port state lives inside the variant.
#[derive(Clone, Debug)]
pub enum Scheme {
    DropTail(DropTail),
}

impl Scheme {
    /// Queue index for a packet that came in on `in_port` (the scheme decides what its
    /// queues mean: DropTail's are virtual output queues, one per input port).
    #[inline]
    pub fn classify(&self, ctx: &PortCtx, pkt: PktId, in_port: u32) -> usize {
        match self {
            Scheme::DropTail(s) => s.classify(ctx, pkt, in_port),
        }
    }

    #[inline]
    pub fn enqueue(&mut self, ctx: &mut PortCtx, pkt: PktId, queue: usize) -> Verdict {
        match self {
            Scheme::DropTail(s) => s.enqueue(ctx, pkt, queue),
        }
    }

    #[inline]
    pub fn schedule(&mut self, ctx: &mut PortCtx) -> Option<PktId> {
        match self {
            Scheme::DropTail(s) => s.schedule(ctx),
        }
    }
}
