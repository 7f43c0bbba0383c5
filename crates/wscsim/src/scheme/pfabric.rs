//! pFabric's switch (Alizadeh et al., 2013): each packet carries a priority, the remaining
//! size of its flow (`Packet::priority`, smaller is more urgent). The port sends the most
//! urgent packet's flow first, taking that flow's earliest queued packet so a flow is not
//! reordered; when the (small) buffer is full, the least urgent packet is dropped, which
//! may be the arriving one. Queues are short (about two bandwidth-delay products), so the
//! linear scans cost little.
//!
//! Simplified: one eviction per arrival; if dropping the least urgent packet does not make
//! room (it is smaller than the arrival), the arrival is dropped.

use super::{PortCtx, Verdict};
use crate::net::packet::PktId;

#[derive(Clone, Debug, Default)]
pub struct PFabric;

impl PFabric {
    pub fn enqueue(&mut self, ctx: &mut PortCtx, pkt: PktId) -> Verdict {
        let bytes = ctx.packet(pkt).frame_bytes as u64;
        if ctx.fits(bytes) {
            ctx.push(0, pkt);
            return Verdict::Accepted;
        }
        // Least urgent queued packet; among equals the latest arrival.
        let mut worst = None;
        let mut worst_prio = 0;
        for id in ctx.queues[0].iter(ctx.pool) {
            let pr = ctx.pool.get(id).priority;
            if worst.is_none() || pr >= worst_prio {
                worst = Some(id);
                worst_prio = pr;
            }
        }
        let Some(worst) = worst else { return Verdict::Dropped };
        let arriving_prio = ctx.packet(pkt).priority;
        if arriving_prio >= worst_prio || *ctx.bytes_queued - ctx.packet(worst).frame_bytes as u64 + bytes > ctx.limit_bytes {
            return Verdict::Dropped;
        }
        ctx.remove(0, worst);
        ctx.push(0, pkt);
        Verdict::DroppedOther(worst)
    }

    pub fn schedule(&mut self, ctx: &mut PortCtx) -> Option<PktId> {
        // The most urgent packet (first arrival among equals) names the flow to serve...
        let mut best: Option<(u64, u32)> = None;
        for id in ctx.queues[0].iter(ctx.pool) {
            let p = ctx.pool.get(id);
            if best.is_none_or(|(pr, _)| p.priority < pr) {
                best = Some((p.priority, p.flow_id));
            }
        }
        let (_, flow) = best?;
        // ...and that flow's earliest packet goes.
        let id = ctx.queues[0].iter(ctx.pool).find(|&id| ctx.pool.get(id).flow_id == flow)?;
        ctx.remove(0, id);
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::Fixture;
    use super::super::Scheme;
    use super::*;
    use crate::net::packet::Packet;

    fn pkt(f: &mut Fixture, flow: u32, seq: u64, priority: u64) -> PktId {
        f.pkt(Packet { frame_bytes: 1000, flow_id: flow, seq, priority, ..Default::default() })
    }

    #[test]
    fn serves_the_most_urgent_flow_in_its_own_order() {
        let mut f = Fixture::new(1);
        let mut s = Scheme::PFabric(PFabric);
        // Flow 1's later packet has the smaller remaining size, but its earlier one goes first.
        for (flow, seq, prio) in [(1u32, 10u64, 5000u64), (2, 20, 3000), (1, 11, 1000), (3, 30, 9000), (2, 21, 2000)] {
            let id = pkt(&mut f, flow, seq, prio);
            s.enqueue(&mut f.ctx(u64::MAX), id, 0);
        }
        assert_eq!(f.drain(&mut s), vec![10, 11, 20, 21, 30]);
    }

    #[test]
    fn full_buffer_drops_the_least_urgent() {
        let mut f = Fixture::new(1);
        let mut s = PFabric;
        for (seq, prio) in [(1u64, 500u64), (2, 9000), (3, 700)] {
            let id = pkt(&mut f, seq as u32, seq, prio);
            assert_eq!(s.enqueue(&mut f.ctx(3000), id), Verdict::Accepted);
        }
        let id = pkt(&mut f, 4, 4, 100);
        match s.enqueue(&mut f.ctx(3000), id) {
            Verdict::DroppedOther(o) => assert_eq!(f.pool.get(o).seq, 2),
            v => panic!("{v:?}"),
        }
        let id = pkt(&mut f, 5, 5, 800);
        assert_eq!(s.enqueue(&mut f.ctx(3000), id), Verdict::Dropped, "the arrival is least urgent");
        assert_eq!(f.drain(&mut Scheme::PFabric(s)), vec![4, 1, 3]);
    }
}
