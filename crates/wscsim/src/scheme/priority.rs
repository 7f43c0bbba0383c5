//! Strict priority queueing over up to 64 queues per port (Flexplane's priority
//! scheduler). The class is the packet's DSCP: queue `min(dscp, queues - 1)`, and a higher
//! queue is always served first.
//!
//! When the port's buffer is full, `push_out` (the default) makes room for an arrival by
//! dropping the last packet of the lowest non-empty class below it, so a bulk class cannot
//! hold the buffer against urgent traffic (Flexplane gave each priority queue its own
//! capacity; push-out keeps one shared port buffer and the same protection). Without it,
//! arrivals of any class are dropped when the buffer is full. Simplified: one eviction per
//! arrival; if that does not make room, the arrival is dropped.

use super::{PortCtx, Verdict};
use crate::packet::PktId;

/// Scenario parameters of scheme kind "priority" (defaults are filled in by `SchemeKind::resolve`, below).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Strict-priority queues (default 8).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queues: Option<i64>,
    /// A full buffer makes room for a higher class by dropping a lower one's tail (default true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub push_out: Option<bool>,
}

#[derive(Clone, Debug)]
pub struct Priority {
    pub push_out: bool,
}

impl Priority {}

/// Kind "priority" resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    pub queues: u32,
    pub push_out: bool,
}

impl super::SchemeKind for Priority {
    const NAME: &'static str = "priority";
    const SERVES_HEADS: bool = true;
    type Params = Params;
    type Spec = Spec;

    /// Checks the scenario's parameters and fills in their defaults.
    fn resolve(c: &mut Params, path: &str) -> Result<Spec, crate::check::ConfigError> {
        let p = |k: &str| format!("{path}.{k}");

        let q = *c.queues.get_or_insert(8);
        let push_out = *c.push_out.get_or_insert(true);
        Ok(Spec {
            queues: super::queue_count(&p("queues"), q)?,
            push_out,
        })
    }

    fn queues(spec: &Spec, _voqs: u32) -> u32 {
        spec.queues
    }

    fn build(spec: &Spec, _seed: u64, _port: u32) -> Self {
        Priority {
            push_out: spec.push_out,
        }
    }

    #[inline]
    fn classify(&mut self, ctx: &mut PortCtx, pkt: PktId, _in_port: u32) -> usize {
        (ctx.packet(pkt).dscp as usize).min(ctx.queues.len() - 1)
    }

    #[inline]
    fn enqueue(&mut self, ctx: &mut PortCtx, pkt: PktId, queue: usize) -> Verdict {
        let bytes = ctx.packet(pkt).frame_bytes as u64;
        if ctx.fits(bytes) || !self.push_out {
            return ctx.push_if_fits(queue, pkt, false);
        }
        let Some(low) = (0..queue).find(|&q| !ctx.queues[q].is_empty()) else {
            return Verdict::Dropped;
        };
        let victim = ctx.queues[low].tail;
        if *ctx.bytes_queued - ctx.packet(victim).frame_bytes as u64 + bytes > ctx.limit_bytes {
            return Verdict::Dropped;
        }
        ctx.remove(low, victim);
        ctx.push(queue, pkt);
        Verdict::DroppedOther(victim)
    }

    #[inline]
    fn schedule(&mut self, ctx: &mut PortCtx) -> Option<PktId> {
        ctx.highest_nonempty().and_then(|q| ctx.pop(q))
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::Fixture;
    use super::super::Scheme;
    use super::*;
    use crate::packet::Packet;
    use crate::scheme::SchemeKind;

    #[test]
    fn higher_class_always_first_fifo_within_a_class() {
        let mut f = Fixture::new(8);
        let mut s = Scheme::Priority(Priority { push_out: true });
        // (dscp, seq): DSCP 46 maps to the top queue (7).
        for (dscp, seq) in [(0u8, 1u64), (3, 2), (46, 3), (0, 4), (3, 5), (7, 6), (1, 7)] {
            let id = f.pkt(Packet {
                frame_bytes: 100,
                dscp,
                seq,
                ..Default::default()
            });
            let q = s.classify(&mut f.ctx(u64::MAX), id, 0);
            s.enqueue(&mut f.ctx(u64::MAX), id, q);
        }
        assert_eq!(f.drain(&mut s), vec![3, 6, 2, 5, 7, 1, 4]);
    }

    #[test]
    fn high_class_served_before_later_arrivals_of_low_class() {
        let mut f = Fixture::new(2);
        let mut s = Scheme::Priority(Priority { push_out: true });
        let mut sent = vec![];
        // Interleave: every step one low and one high packet arrive, one is sent.
        for i in 0..10u64 {
            for dscp in [0u8, 1] {
                let id = f.pkt(Packet {
                    frame_bytes: 100,
                    dscp,
                    seq: i * 10 + dscp as u64,
                    ..Default::default()
                });
                let q = s.classify(&mut f.ctx(u64::MAX), id, 0);
                s.enqueue(&mut f.ctx(u64::MAX), id, q);
            }
            let id = s.schedule(&mut f.ctx(u64::MAX)).unwrap();
            sent.push(f.pool.get(id).dscp);
        }
        assert!(
            sent.iter().all(|&d| d == 1),
            "low class starves while high is backlogged: {sent:?}"
        );
    }

    #[test]
    fn full_buffer_pushes_out_the_lowest_class_tail() {
        let mut f = Fixture::new(3);
        let mut s = Priority { push_out: true };
        let add = |f: &mut Fixture, s: &mut Priority, dscp: u8, seq: u64| {
            let id = f.pkt(Packet {
                frame_bytes: 1000,
                dscp,
                seq,
                ..Default::default()
            });
            let q = s.classify(&mut f.ctx(3000), id, 0);
            (id, s.enqueue(&mut f.ctx(3000), id, q))
        };
        assert_eq!(add(&mut f, &mut s, 0, 1).1, Verdict::Accepted);
        assert_eq!(add(&mut f, &mut s, 0, 2).1, Verdict::Accepted);
        assert_eq!(add(&mut f, &mut s, 1, 3).1, Verdict::Accepted);
        // Full: a class-2 arrival evicts class 0's last packet (seq 2), not class 1's.
        match add(&mut f, &mut s, 2, 4).1 {
            Verdict::DroppedOther(o) => assert_eq!(f.pool.get(o).seq, 2),
            v => panic!("{v:?}"),
        }
        // A class-0 arrival has nothing below it to push out.
        assert_eq!(add(&mut f, &mut s, 0, 5).1, Verdict::Dropped);
        assert_eq!(f.drain(&mut Scheme::Priority(s)), vec![4, 3, 1]);
        // Without push-out the urgent arrival is the one dropped.
        let mut f = Fixture::new(2);
        let mut s = Priority { push_out: false };
        for seq in 0..3 {
            add(&mut f, &mut s, 0, seq);
        }
        assert_eq!(add(&mut f, &mut s, 1, 9).1, Verdict::Dropped);
    }
}
