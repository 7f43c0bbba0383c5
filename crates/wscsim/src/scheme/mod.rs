//! The data-plane scheme API (after Flexplane): every switch output port runs a scheme
//! made of four parts. `route` picks the output port (built-in schemes use the switch's
//! ECMP tables, `net::routing`; a custom scheme may choose among the equal-cost ports),
//! `classify` picks one of the port's queues, `enqueue` accepts, marks or drops (possibly
//! another packet, as pFabric does) and `schedule` picks the next packet to send.
//!
//! Built-in schemes are variants of the `Scheme` enum, so the per-packet path is a
//! `match`, not a virtual call. A user's scheme is a `CustomScheme` trait object behind
//! `Scheme::Custom` (the Python bridge is one). A scheme sees its port through `PortCtx`:
//! the port's queues, the packet pool, the port's byte limit, its rate and the time.
//! Per-port state lives in the scheme value; per-packet state may ride in
//! `Packet::scheme_fields`, `priority`, `dscp` and `ecn`.

pub mod dctcp;
pub mod droptail;
pub mod drr;
pub mod ecn_ramp;
pub mod hull;
pub mod pfabric;
pub mod priority;
pub mod red;
pub mod spec;
/// docs/extending.md's example scheme, compiled for the tests.
#[cfg(test)]
#[path = "../../tests/toys/scheme.rs"]
pub mod toy;
pub mod trim;

use crate::engine::TimePs;
use crate::packet::{ecn, Packet, PacketPool, PktId, PktQueue};

pub use dctcp::DctcpMarking;
pub use droptail::DropTail;
pub use drr::Drr;
pub use hull::Hull;
pub use pfabric::PFabric;
pub use priority::Priority;
pub use red::Red;
pub use spec::SchemeKind;

/// The built-in schemes, one line each: the variant of `Scheme` and its type (boxed when
/// large). `$m` makes a list of schemes from this one (`spec::declare_schemes`, and the
/// scenario's table of kinds in `config::scheme`), so a scheme is its file plus this line.
macro_rules! builtin_schemes {
    ($m:ident) => {
        $m! {
            DropTail($crate::scheme::droptail::DropTail),
            Red(Box<$crate::scheme::red::Red>),
            Dctcp($crate::scheme::dctcp::DctcpMarking),
            EcnRamp(Box<$crate::scheme::ecn_ramp::EcnRamp>),
            Priority($crate::scheme::priority::Priority),
            Drr(Box<$crate::scheme::drr::Drr>),
            Hull(Box<$crate::scheme::hull::Hull>),
            PFabric(Box<$crate::scheme::pfabric::PFabric>),
            Trim(Box<$crate::scheme::trim::Trim>),
            #[cfg(test)]
            ToyCap($crate::scheme::toy::ToyCap),
        }
    };
}
pub(crate) use builtin_schemes;

/// Most queues a port may have (a 64-bit mask of the non-empty ones).
pub const MAX_QUEUES: u32 = 64;

/// A scheme's number of queues, at `path`: 1 to `MAX_QUEUES`.
fn queue_count(path: &str, q: i64) -> Result<u32, crate::check::ConfigError> {
    crate::check::int_in(path, q, 1, i64::from(MAX_QUEUES))
}

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
    /// Not queued: the network sends it back to its source (NDP's return-to-sender of a
    /// header no queue here has room for).
    Bounced,
}

/// A port's queues as a scheme sees them. `push`, `pop` and `remove` keep the port's byte
/// and packet totals and the non-empty bitmap right, so schemes cannot get them wrong.
pub struct PortCtx<'a> {
    pub queues: &'a mut [PktQueue],
    /// One bit per queue: set when the queue holds packets.
    pub nonempty: &'a mut [u64],
    pub pool: &'a mut PacketPool,
    pub bytes_queued: &'a mut u64,
    pub pkts_queued: &'a mut u32,
    /// Most bytes this port may hold now (its own buffer, or its share of a shared one).
    pub limit_bytes: u64,
    /// The port's line rate.
    pub rate_bps: u64,
    /// Bytes each frame costs on the wire beyond its buffer size (the link technology's
    /// preamble, delimiters and gap).
    pub wire_overhead_bytes: u32,
    pub now_ps: TimePs,
}

/// The first of `n` queues at or after `start` (wrapping) whose bit is set in `nonempty`.
#[inline]
pub fn next_nonempty(nonempty: &[u64], n: usize, start: usize) -> Option<usize> {
    if n == 0 {
        return None;
    }
    let words = nonempty.len();
    let start = if start >= n { 0 } else { start };
    let (w0, b0) = (start >> 6, start & 63);
    // Bits at or above `start` in its word, then the following words, then wrap.
    let first = nonempty[w0] & (!0u64 << b0);
    if first != 0 {
        return Some((w0 << 6) + first.trailing_zeros() as usize);
    }
    for i in 1..=words {
        let w = (w0 + i) % words;
        let bits = if w == w0 {
            nonempty[w] & !(!0u64 << b0)
        } else {
            nonempty[w]
        };
        if bits != 0 {
            return Some((w << 6) + bits.trailing_zeros() as usize);
        }
    }
    None
}

impl PortCtx<'_> {
    #[inline(always)]
    pub fn push(&mut self, queue: usize, pkt: PktId) {
        let bytes = self.pool.get(pkt).frame_bytes as u64;
        self.queues[queue].push_back(self.pool, pkt);
        self.nonempty[queue >> 6] |= 1u64 << (queue & 63);
        *self.bytes_queued += bytes;
        *self.pkts_queued += 1;
    }

    #[inline(always)]
    pub fn pop(&mut self, queue: usize) -> Option<PktId> {
        let id = self.queues[queue].pop_front(self.pool)?;
        self.taken_out(queue, id);
        Some(id)
    }

    /// Takes `pkt` out of `queue` wherever it sits (a walk along the queue).
    pub fn remove(&mut self, queue: usize, pkt: PktId) -> bool {
        if !self.queues[queue].remove(self.pool, pkt) {
            return false;
        }
        self.taken_out(queue, pkt);
        true
    }

    /// Takes `pkt` out of `queue` in constant time, given the packet queued just before it
    /// (`NO_PKT` if `pkt` is at the head).
    pub fn remove_after(&mut self, queue: usize, prev: PktId, pkt: PktId) {
        self.queues[queue].remove_after(self.pool, prev, pkt);
        self.taken_out(queue, pkt);
    }

    #[inline(always)]
    fn taken_out(&mut self, queue: usize, id: PktId) {
        if self.queues[queue].is_empty() {
            self.nonempty[queue >> 6] &= !(1u64 << (queue & 63));
        }
        *self.bytes_queued -= self.pool.get(id).frame_bytes as u64;
        *self.pkts_queued -= 1;
    }

    /// Whether `bytes` more fit under the port's limit.
    #[inline]
    pub fn fits(&self, bytes: u64) -> bool {
        *self.bytes_queued + bytes <= self.limit_bytes
    }

    #[inline]
    pub fn packet(&self, pkt: PktId) -> &Packet {
        self.pool.get(pkt)
    }

    /// Accepts `pkt` into `queue` if it fits (the common DropTail rule), marking it CE when
    /// `mark` is set and it is ECN-capable.
    #[inline]
    pub fn push_if_fits(&mut self, queue: usize, pkt: PktId, mark: bool) -> Verdict {
        if !self.fits(self.pool.get(pkt).frame_bytes as u64) {
            return Verdict::Dropped;
        }
        self.push(queue, pkt);
        if mark && self.pool.get(pkt).ecn != ecn::NOT_ECT {
            Verdict::AcceptedMarked
        } else {
            Verdict::Accepted
        }
    }

    /// First non-empty queue at or after `start`, wrapping around (round-robin helper).
    #[inline]
    pub fn next_nonempty_from(&self, start: usize) -> Option<usize> {
        next_nonempty(self.nonempty, self.queues.len(), start)
    }

    /// Highest-numbered non-empty queue (strict-priority helper).
    #[inline]
    pub fn highest_nonempty(&self) -> Option<usize> {
        (0..self.nonempty.len()).rev().find_map(|w| {
            let bits = self.nonempty[w];
            (bits != 0).then(|| (w << 6) + 63 - bits.leading_zeros() as usize)
        })
    }
}

/// A scheme written outside this crate (in Rust, or in Python through the bridge). Slower
/// than the built-ins: every call is dynamic dispatch.
pub trait CustomScheme: Send {
    /// Picks the output port among the equal-cost `candidates` (local port indices) for a
    /// packet arriving at this port's switch. `None` keeps ECMP's choice. Only called when
    /// the scheme says it routes (`routes`).
    fn route(&mut self, _pkt: &Packet, _candidates: &[u32]) -> Option<u32> {
        None
    }
    fn routes(&self) -> bool {
        false
    }
    fn classify(&mut self, ctx: &mut PortCtx, pkt: PktId, in_port: u32) -> usize;
    fn enqueue(&mut self, ctx: &mut PortCtx, pkt: PktId, queue: usize) -> Verdict;
    fn schedule(&mut self, ctx: &mut PortCtx) -> Option<PktId>;
}

builtin_schemes!(declare_schemes);
use spec::declare_schemes;

impl std::fmt::Debug for Scheme {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Scheme {
    /// A scheme written outside this crate (Python or a user's): it may hold anything,
    /// and is not run on a thread other than the simulation's own.
    pub fn is_custom(&self) -> bool {
        matches!(self, Scheme::Custom(_))
    }

    /// Whether this scheme picks output ports itself (custom schemes only).
    pub fn routes(&self) -> bool {
        matches!(self, Scheme::Custom(s) if s.routes())
    }

    pub fn route(&mut self, pkt: &Packet, candidates: &[u32]) -> Option<u32> {
        match self {
            Scheme::Custom(s) => s.route(pkt, candidates).filter(|p| candidates.contains(p)),
            _ => None,
        }
    }
}

/// A port with its own queues and pool, for schemes' unit tests.
#[cfg(test)]
pub mod fixture {
    use super::*;

    pub struct Fixture {
        pub queues: Vec<PktQueue>,
        pub masks: Vec<u64>,
        pub pool: PacketPool,
        pub bytes: u64,
        pub pkts: u32,
        pub now_ps: TimePs,
        pub rate_bps: u64,
    }

    impl Fixture {
        pub fn new(n: usize) -> Self {
            Fixture {
                queues: vec![PktQueue::default(); n],
                masks: vec![0; n.div_ceil(64)],
                pool: PacketPool::new(),
                bytes: 0,
                pkts: 0,
                now_ps: 0,
                rate_bps: 10_000_000_000,
            }
        }
        pub fn ctx(&mut self, limit: u64) -> PortCtx<'_> {
            PortCtx {
                queues: &mut self.queues,
                nonempty: &mut self.masks,
                pool: &mut self.pool,
                bytes_queued: &mut self.bytes,
                pkts_queued: &mut self.pkts,
                limit_bytes: limit,
                rate_bps: self.rate_bps,
                wire_overhead_bytes: 20,
                now_ps: self.now_ps,
            }
        }
        pub fn pkt(&mut self, p: Packet) -> PktId {
            self.pool.alloc(p)
        }
        /// A full-size ECN-capable data packet of flow `flow`.
        pub fn data(&mut self, flow: u32, seq: u64) -> PktId {
            self.pool.alloc(Packet {
                frame_bytes: 1518,
                flow_id: flow,
                seq,
                ecn: ecn::ECT0,
                ..Default::default()
            })
        }
        /// Runs `schedule` until it returns nothing; the packets' `seq`s in order.
        pub fn drain(&mut self, s: &mut Scheme) -> Vec<u64> {
            let mut out = vec![];
            loop {
                let mut ctx = self.ctx(u64::MAX);
                match s.schedule(&mut ctx) {
                    Some(id) => {
                        out.push(self.pool.get(id).seq);
                        self.pool.free(id);
                    }
                    None => break,
                }
            }
            assert_eq!((self.bytes, self.pkts), (0, 0));
            out
        }
    }
}
