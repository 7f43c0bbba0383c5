//! pFabric's switch (Alizadeh et al., 2013): each packet carries a priority, the remaining
//! size of its flow (`Packet::priority`, smaller is more urgent). The port sends the most
//! urgent packet's flow first, taking that flow's earliest queued packet so a flow is not
//! reordered; when the (small) buffer is full, the least urgent packet is dropped, which
//! may be the arriving one. Queues are short (about two bandwidth-delay products), so the
//! linear scans cost little.
//!
//! The scheme keeps its own dense copy of the queue's order (priority, flow, packet), so
//! the scans run over 16-byte entries instead of chasing packets through the pool, and
//! the packet before the chosen one is known, so taking it out costs no walk. Host
//! transmit queues under `host.nic_scheme = "pfabric"` can hold hundreds of packets.
//!
//! Simplified: one eviction per arrival; if dropping the least urgent packet does not make
//! room (it is smaller than the arrival), the arrival is dropped.

use super::{PortCtx, Verdict};
use crate::packet::{PktId, NO_PKT};

/// Scenario parameters of scheme kind "pfabric" (defaults are filled in by `SchemeKind::resolve`, below).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

#[derive(Clone, Copy, Debug)]
struct Entry {
    priority: u64,
    flow: u32,
    id: PktId,
}

/// pFabric port state: the queue's packets in arrival order (the same order as queue 0).
#[derive(Clone, Debug, Default)]
pub struct PFabric {
    order: Vec<Entry>,
}

impl PFabric {
    /// The first of the most urgent queued packets (a priority of 0 cannot be beaten: the
    /// scan stops at the first).
    fn most_urgent(&self) -> Option<usize> {
        let mut best: Option<(usize, u64)> = None;
        for (i, e) in self.order.iter().enumerate() {
            if best.is_none_or(|(_, p)| e.priority < p) {
                best = Some((i, e.priority));
                if e.priority == 0 {
                    break;
                }
            }
        }
        best.map(|(i, _)| i)
    }

    /// Takes the packet at position `i` out of both the order and queue 0.
    fn take(&mut self, ctx: &mut PortCtx, i: usize) -> PktId {
        let prev = if i == 0 { NO_PKT } else { self.order[i - 1].id };
        let id = self.order.remove(i).id;
        ctx.remove_after(0, prev, id);
        id
    }
}

impl super::SchemeKind for PFabric {
    const NAME: &'static str = "pfabric";
    type Params = Params;
    type Spec = ();

    /// Checks the scenario's parameters and fills in their defaults.
    fn resolve(_c: &mut Params, _path: &str) -> Result<(), crate::check::ConfigError> {
        Ok(())
    }

    fn build(_spec: &(), _seed: u64, _port: u32) -> Self {
        PFabric::default()
    }

    #[inline]
    fn enqueue(&mut self, ctx: &mut PortCtx, pkt: PktId, _queue: usize) -> Verdict {
        let p = ctx.packet(pkt);
        let (bytes, arrival) = (
            p.frame_bytes as u64,
            Entry {
                priority: p.priority,
                flow: p.flow_id,
                id: pkt,
            },
        );
        if ctx.fits(bytes) {
            ctx.push(0, pkt);
            self.order.push(arrival);
            return Verdict::Accepted;
        }
        // Least urgent queued packet; among equals the latest arrival.
        // (max_by_key returns the last of equal maxima, min_by_key the first of equal minima.)
        let Some(w) = (0..self.order.len()).max_by_key(|&i| self.order[i].priority) else {
            return Verdict::Dropped;
        };
        let worst = self.order[w];
        if arrival.priority >= worst.priority
            || *ctx.bytes_queued - ctx.packet(worst.id).frame_bytes as u64 + bytes > ctx.limit_bytes
        {
            return Verdict::Dropped;
        }
        self.take(ctx, w);
        ctx.push(0, pkt);
        self.order.push(arrival);
        Verdict::DroppedOther(worst.id)
    }

    #[inline]
    fn schedule(&mut self, ctx: &mut PortCtx) -> Option<PktId> {
        // The most urgent packet (first arrival among equals) names the flow to serve...
        let best = self.most_urgent()?;
        let flow = self.order[best].flow;
        // ...and that flow's earliest packet goes.
        let first = self.order[..=best]
            .iter()
            .position(|e| e.flow == flow)
            .unwrap_or(best);
        Some(self.take(ctx, first))
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::Fixture;
    use super::super::Scheme;
    use super::*;
    use crate::packet::Packet;
    use crate::scheme::SchemeKind;

    fn pkt(f: &mut Fixture, flow: u32, seq: u64, priority: u64) -> PktId {
        f.pkt(Packet {
            frame_bytes: 1000,
            flow_id: flow,
            seq,
            priority,
            ..Default::default()
        })
    }

    #[test]
    fn serves_the_most_urgent_flow_in_its_own_order() {
        let mut f = Fixture::new(1);
        let mut s = Scheme::PFabric(Box::default());
        // Flow 1's later packet has the smaller remaining size, but its earlier one goes first.
        for (flow, seq, prio) in [
            (1u32, 10u64, 5000u64),
            (2, 20, 3000),
            (1, 11, 1000),
            (3, 30, 9000),
            (2, 21, 2000),
        ] {
            let id = pkt(&mut f, flow, seq, prio);
            s.enqueue(&mut f.ctx(u64::MAX), id, 0);
        }
        assert_eq!(f.drain(&mut s), vec![10, 11, 20, 21, 30]);
    }

    #[test]
    fn full_buffer_drops_the_least_urgent() {
        let mut f = Fixture::new(1);
        let mut s = PFabric::default();
        for (seq, prio) in [(1u64, 500u64), (2, 9000), (3, 700)] {
            let id = pkt(&mut f, seq as u32, seq, prio);
            assert_eq!(s.enqueue(&mut f.ctx(3000), id, 0), Verdict::Accepted);
        }
        let id = pkt(&mut f, 4, 4, 100);
        match s.enqueue(&mut f.ctx(3000), id, 0) {
            Verdict::DroppedOther(o) => assert_eq!(f.pool.get(o).seq, 2),
            v => panic!("{v:?}"),
        }
        let id = pkt(&mut f, 5, 5, 800);
        assert_eq!(
            s.enqueue(&mut f.ctx(3000), id, 0),
            Verdict::Dropped,
            "the arrival is least urgent"
        );
        assert_eq!(f.drain(&mut Scheme::PFabric(Box::new(s))), vec![4, 1, 3]);
    }
}
