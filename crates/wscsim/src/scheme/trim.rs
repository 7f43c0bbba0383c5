//! NDP's switch port (Handley et al., "Re-architecting datacenter networks and stacks for
//! low latency and high performance", SIGCOMM 2017, section 3.1): a short data queue and a
//! queue of headers. A data packet that finds the data queue full (`data_packets` packets,
//! the paper's 8) is not dropped when its transport allows (`framing::TRIMMABLE`, NDP's
//! data): a switch cuts its payload off and queues its headers, so the receiver learns
//! at once what was sent and asks for it again. Which packet loses its payload is a coin
//! toss between the arriving one and the one at the data queue's tail, as the paper does
//! to break up phase effects (htsim's CompositeQueue does the same). Packets without
//! payload (trimmed headers, ACKs, NACKs, PULLs and other transports' control packets)
//! go to the header queue, which may hold what the port's buffer has left beside the
//! data queue. The port sends `header_weight`
//! headers for each data packet while both queues hold packets (the paper's weighted
//! round robin, 10:1; htsim serves 100,000:1). A trimmed header that finds no room goes
//! back to its sender (the paper's return-to-sender: the network swaps its addresses and
//! forwards it from this switch, `Verdict::Bounced`), unless `return_to_sender` is off,
//! when it is dropped; other packets without room are dropped.
//!
//! Simplified: a bounced header that finds no room on its way back is dropped (its
//! sender's timeout recovers it); a data packet that
//! cannot be trimmed (another transport's) is dropped at a full data queue, as a
//! drop-tail queue would. Not with PFC (trimming changes the bytes PFC booked) or buffers
//! that belong to inputs (a trimmed packet's bytes would be booked to the wrong input).

use super::{PortCtx, Verdict};
use crate::engine::rng::StreamRng;
use crate::packet::{framing, PktId};
use rand::Rng;

/// Its data queue, and its header queue.
const DATA: usize = 0;
const HEADERS: usize = 1;

/// Scenario parameters of scheme kind "trim".
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Data packets the data queue holds (default 8, the paper's), 1 to 1,000,000.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_packets: Option<i64>,
    /// Headers sent for each data packet while both queues wait (default 10, the
    /// paper's), 1 to 1,000,000.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header_weight: Option<i64>,
    /// A trimmed header with no room in the header queue goes back to its sender
    /// (default true, the paper's; false drops it, as htsim does unless told `-rts`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub return_to_sender: Option<bool>,
}

/// `trim` resolved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrimSpec {
    pub data_packets: u32,
    pub header_weight: u32,
    pub return_to_sender: bool,
}

#[derive(Clone, Debug)]
pub struct Trim {
    pub spec: TrimSpec,
    rng: StreamRng,
    /// Headers sent since the last data packet, while data waited.
    headers_in_a_row: u32,
    trimmed: u64,
}

impl Trim {
    /// Cuts queued or arriving packet `pkt`'s payload off, leaving its headers.
    fn cut(&mut self, ctx: &mut PortCtx, pkt: PktId) {
        let p = ctx.pool.get_mut(pkt);
        p.frame_bytes -= p.payload_bytes;
        p.payload_bytes = 0;
        p.framing |= framing::TRIMMED;
        self.trimmed += 1;
    }

    /// Queues header `pkt` if the buffer has room beside the data queue.
    fn push_header(ctx: &mut PortCtx, pkt: PktId) -> bool {
        if !ctx.fits(u64::from(ctx.packet(pkt).frame_bytes)) {
            return false;
        }
        ctx.push(HEADERS, pkt);
        true
    }

    /// Queues header `pkt`, or (no room) sends it back to its sender if it is a trimmed
    /// header not yet sent back, or drops it (control packets).
    fn queue_header(&self, ctx: &mut PortCtx, pkt: PktId) -> Verdict {
        let trimmed_once =
            ctx.packet(pkt).framing & (framing::TRIMMED | framing::BOUNCED) == framing::TRIMMED;
        if Self::push_header(ctx, pkt) {
            Verdict::Accepted
        } else if self.spec.return_to_sender && trimmed_once {
            Verdict::Bounced
        } else {
            Verdict::Dropped
        }
    }

    /// Cuts arriving packet `pkt` to its header and queues that (`queue_header`).
    fn cut_arrival(&mut self, ctx: &mut PortCtx, pkt: PktId) -> Verdict {
        self.cut(ctx, pkt);
        self.queue_header(ctx, pkt)
    }

    /// A data packet `pkt` at a full data queue: it, or the packet at the queue's tail,
    /// loses its payload (the arrival, when the header queue is full: then only it can
    /// go back to its sender).
    fn overflow(&mut self, ctx: &mut PortCtx, pkt: PktId) -> Verdict {
        let tail = ctx.queues[DATA].tail;
        let header = u64::from(ctx.packet(tail).frame_bytes - ctx.packet(tail).payload_bytes);
        let trim_tail = ctx.packet(tail).framing & framing::TRIMMABLE != 0
            && ctx.packet(tail).frame_bytes >= ctx.packet(pkt).frame_bytes
            && (ctx.fits(header) || !self.spec.return_to_sender)
            && self.rng.random::<bool>();
        if !trim_tail {
            return self.cut_arrival(ctx, pkt);
        }
        ctx.remove(DATA, tail);
        self.cut(ctx, tail);
        ctx.push(DATA, pkt);
        if Self::push_header(ctx, tail) {
            Verdict::Accepted
        } else {
            Verdict::DroppedOther(tail)
        }
    }
}

impl super::SchemeKind for Trim {
    const NAME: &'static str = "trim";
    const TRIMS: bool = true;
    type Params = Params;
    type Spec = TrimSpec;

    /// Checks the scenario's parameters and fills in their defaults.
    fn resolve(c: &mut Params, path: &str) -> Result<TrimSpec, crate::check::ConfigError> {
        let int = |k: &str, v: i64| crate::check::int_in(&format!("{path}.{k}"), v, 1, 1_000_000);
        Ok(TrimSpec {
            data_packets: int("data_packets", *c.data_packets.get_or_insert(8))?,
            header_weight: int("header_weight", *c.header_weight.get_or_insert(10))?,
            return_to_sender: *c.return_to_sender.get_or_insert(true),
        })
    }

    fn queues(_spec: &TrimSpec, _voqs: u32) -> u32 {
        2
    }

    fn build(spec: &TrimSpec, seed: u64, port: u32) -> Self {
        use crate::engine::rng::{family, stream};
        Trim {
            spec: *spec,
            rng: stream(seed, family::SWITCH, port as u64),
            headers_in_a_row: 0,
            trimmed: 0,
        }
    }

    #[inline]
    fn classify(&mut self, ctx: &mut PortCtx, pkt: PktId, _in_port: u32) -> usize {
        if ctx.packet(pkt).payload_bytes == 0 {
            HEADERS
        } else {
            DATA
        }
    }

    #[inline]
    fn enqueue(&mut self, ctx: &mut PortCtx, pkt: PktId, queue: usize) -> Verdict {
        if queue == HEADERS {
            // A header trimmed upstream may go back too; control packets are dropped.
            return self.queue_header(ctx, pkt);
        }
        let frame = u64::from(ctx.packet(pkt).frame_bytes);
        if ctx.queues[DATA].len < self.spec.data_packets && ctx.fits(frame) {
            ctx.push(DATA, pkt);
            return Verdict::Accepted;
        }
        if ctx.packet(pkt).framing & framing::TRIMMABLE == 0 {
            return Verdict::Dropped;
        }
        if ctx.queues[DATA].is_empty() {
            // The buffer is full of headers: this one is cut too.
            return self.cut_arrival(ctx, pkt);
        }
        self.overflow(ctx, pkt)
    }

    #[inline]
    fn schedule(&mut self, ctx: &mut PortCtx) -> Option<PktId> {
        let data_waits = !ctx.queues[DATA].is_empty();
        if ctx.queues[HEADERS].is_empty()
            || (data_waits && self.headers_in_a_row >= self.spec.header_weight)
        {
            self.headers_in_a_row = 0;
            return ctx.pop(DATA);
        }
        if data_waits {
            self.headers_in_a_row += 1;
        }
        ctx.pop(HEADERS)
    }

    fn trims(&self) -> u64 {
        self.trimmed
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::Fixture;
    use super::super::SchemeKind;
    use super::*;
    use crate::packet::Packet;

    fn trim(data_packets: u32, header_weight: u32) -> Trim {
        let spec = TrimSpec {
            data_packets,
            header_weight,
            return_to_sender: false,
        };
        Trim::build(&spec, 1, 0)
    }

    /// An NDP-like data packet: 1,000 bytes of payload in a 1,064-byte frame.
    fn data(f: &mut Fixture, seq: u64, trimmable: bool) -> PktId {
        f.pkt(Packet {
            frame_bytes: 1064,
            payload_bytes: 1000,
            seq,
            framing: if trimmable { framing::TRIMMABLE } else { 0 },
            ..Default::default()
        })
    }

    fn offer(s: &mut Trim, f: &mut Fixture, pkt: PktId) -> Verdict {
        let mut ctx = f.ctx(1 << 20);
        let q = s.classify(&mut ctx, pkt, 0);
        s.enqueue(&mut ctx, pkt, q)
    }

    #[test]
    fn a_full_data_queue_trims_the_arrival_or_its_tail_and_never_drops_data() {
        let mut f = Fixture::new(2);
        let mut s = trim(4, 10);
        for seq in 0..100 {
            let id = data(&mut f, seq, true);
            assert_eq!(offer(&mut s, &mut f, id), Verdict::Accepted);
        }
        assert_eq!(f.queues[DATA].len, 4);
        assert_eq!(f.queues[HEADERS].len, 96);
        assert_eq!(s.trims(), 96);
        // Every header is 64 bytes, marked, and carries no payload.
        let heads: Vec<PktId> = f.queues[HEADERS].iter(&f.pool).collect();
        for h in &heads {
            let p = f.pool.get(*h);
            assert_eq!((p.frame_bytes, p.payload_bytes), (64, 0));
            assert_ne!(p.framing & framing::TRIMMED, 0);
        }
        // The coin chose both ways: some kept packets arrived after the queue filled.
        let kept: Vec<u64> = f.queues[DATA]
            .iter(&f.pool)
            .map(|i| f.pool.get(i).seq)
            .collect();
        assert_eq!(kept[..3], [0, 1, 2]);
        assert!(kept[3] > 3, "{kept:?}");
        assert_eq!(f.bytes, 4 * 1064 + 96 * 64);
    }

    #[test]
    fn untrimmable_packets_are_dropped_and_headers_go_first_by_weight() {
        let mut f = Fixture::new(2);
        let mut s = trim(1, 2);
        let a = data(&mut f, 0, false);
        let b = data(&mut f, 1, false);
        assert_eq!(offer(&mut s, &mut f, a), Verdict::Accepted);
        assert_eq!(offer(&mut s, &mut f, b), Verdict::Dropped);
        f.pool.free(b);
        for seq in 10..15 {
            let ack = f.pkt(Packet {
                frame_bytes: 64,
                seq,
                ..Default::default()
            });
            assert_eq!(offer(&mut s, &mut f, ack), Verdict::Accepted);
        }
        let mut sch = super::super::Scheme::Trim(Box::new(s));
        // Two headers, the data packet, then the rest of the headers.
        assert_eq!(f.drain(&mut sch), vec![10, 11, 0, 12, 13, 14]);
    }

    #[test]
    fn a_header_that_finds_the_buffer_full_is_dropped() {
        let mut f = Fixture::new(2);
        let mut s = trim(1, 10);
        let a = data(&mut f, 0, true);
        let mut ctx = f.ctx(1064 + 64);
        assert_eq!(s.enqueue(&mut ctx, a, DATA), Verdict::Accepted);
        let b = data(&mut f, 1, true);
        let mut ctx = f.ctx(1064 + 64);
        assert_eq!(s.enqueue(&mut ctx, b, DATA), Verdict::Accepted);
        let c = data(&mut f, 2, true);
        let mut ctx = f.ctx(1064 + 64);
        let v = s.enqueue(&mut ctx, c, DATA);
        assert!(
            matches!(v, Verdict::Dropped | Verdict::DroppedOther(_)),
            "{v:?}"
        );
        assert_eq!(f.bytes, 1064 + 64);
    }

    #[test]
    fn with_return_to_sender_a_trimmed_header_without_room_goes_back_once() {
        let mut f = Fixture::new(2);
        let mut s = trim(1, 10);
        s.spec.return_to_sender = true;
        let limit = 1064 + 64;
        for seq in 0..2 {
            let id = data(&mut f, seq, true);
            assert_eq!(s.enqueue(&mut f.ctx(limit), id, DATA), Verdict::Accepted);
        }
        // Full: the arrival is cut and sent back (never the tail, which could not be).
        let c = data(&mut f, 2, true);
        assert_eq!(s.enqueue(&mut f.ctx(limit), c, DATA), Verdict::Bounced);
        let p = *f.pool.get(c);
        assert_eq!((p.frame_bytes, p.payload_bytes), (64, 0));
        assert_eq!(f.bytes, limit);
        // A header already sent back is dropped; so is a control packet.
        f.pool.get_mut(c).framing |= framing::BOUNCED;
        assert_eq!(s.enqueue(&mut f.ctx(limit), c, HEADERS), Verdict::Dropped);
        let ack = f.pkt(Packet {
            frame_bytes: 64,
            ..Default::default()
        });
        assert_eq!(s.enqueue(&mut f.ctx(limit), ack, HEADERS), Verdict::Dropped);
    }
}
