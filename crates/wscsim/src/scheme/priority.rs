//! Strict priority queueing over up to 64 queues per port (Flexplane's priority
//! scheduler). The class is the packet's DSCP: queue `min(dscp, queues - 1)`, and a higher
//! queue is always served first. Arrivals are dropped when the port's buffer is full,
//! whatever their class (no push-out).

use super::PortCtx;
use crate::net::packet::PktId;

#[derive(Clone, Debug)]
pub struct Priority;

impl Priority {
    #[inline]
    pub fn classify(&self, ctx: &PortCtx, pkt: PktId) -> usize {
        (ctx.packet(pkt).dscp as usize).min(ctx.queues.len() - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::Fixture;
    use super::super::Scheme;
    use super::*;
    use crate::net::packet::Packet;

    #[test]
    fn higher_class_always_first_fifo_within_a_class() {
        let mut f = Fixture::new(8);
        let mut s = Scheme::Priority(Priority);
        // (dscp, seq): DSCP 46 maps to the top queue (7).
        for (dscp, seq) in [(0u8, 1u64), (3, 2), (46, 3), (0, 4), (3, 5), (7, 6), (1, 7)] {
            let id = f.pkt(Packet { frame_bytes: 100, dscp, seq, ..Default::default() });
            let q = s.classify(&mut f.ctx(u64::MAX), id, 0);
            s.enqueue(&mut f.ctx(u64::MAX), id, q);
        }
        assert_eq!(f.drain(&mut s), vec![3, 6, 2, 5, 7, 1, 4]);
    }

    #[test]
    fn high_class_served_before_later_arrivals_of_low_class() {
        let mut f = Fixture::new(2);
        let mut s = Scheme::Priority(Priority);
        let mut sent = vec![];
        // Interleave: every step one low and one high packet arrive, one is sent.
        for i in 0..10u64 {
            for dscp in [0u8, 1] {
                let id = f.pkt(Packet { frame_bytes: 100, dscp, seq: i * 10 + dscp as u64, ..Default::default() });
                let q = s.classify(&mut f.ctx(u64::MAX), id, 0);
                s.enqueue(&mut f.ctx(u64::MAX), id, q);
            }
            let id = s.schedule(&mut f.ctx(u64::MAX)).unwrap();
            sent.push(f.pool.get(id).dscp);
        }
        assert!(sent.iter().all(|&d| d == 1), "low class starves while high is backlogged: {sent:?}");
    }
}
