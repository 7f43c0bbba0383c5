//! DropTail with virtual output queues: one FIFO per input port, served round-robin, as in
//! DIABLO's abstract switch (or, with `voqs = false`, one FIFO per port). An arriving packet
//! is dropped when the port's buffer (bytes) or the optional packet limit is full. On a host
//! NIC there is one queue.

use super::{PortCtx, Verdict};
use crate::packet::PktId;

/// Scenario parameters of scheme kind "droptail" (defaults are filled in by `SchemeKind::resolve`, below).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Most packets queued per port (default: bytes only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit_packets: Option<i64>,
    /// One queue per input port, served round-robin (default), or one FIFO per port
    /// (`false`: arrival order across inputs, as a plain output-queued switch).
    pub voqs: Option<bool>,
}

#[derive(Clone, Debug, Default)]
pub struct DropTail {
    /// Optional limit in packets on top of the byte buffer (Flexplane's DropTail counts packets).
    pub limit_packets: Option<u32>,
    /// Next queue the round-robin arbiter looks at.
    rr_next: usize,
}

impl DropTail {
    pub fn new(limit_packets: Option<u32>) -> Self {
        DropTail {
            limit_packets,
            rr_next: 0,
        }
    }

    /// The queue round robin looks at first next time.
    #[inline]
    pub fn rr_next(&self) -> usize {
        self.rr_next
    }
}

/// Kind "droptail" resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    pub limit_packets: Option<u32>,
    /// Virtual output queues (one per input, round robin); false: one FIFO.
    pub voqs: bool,
}

impl super::SchemeKind for DropTail {
    const NAME: &'static str = "droptail";
    const SERVES_HEADS: bool = true;
    type Params = Params;
    type Spec = Spec;

    /// Checks the scenario's parameters and fills in their defaults.
    fn resolve(c: &mut Params, path: &str) -> Result<Spec, crate::check::ConfigError> {
        let p = |k: &str| format!("{path}.{k}");

        let limit = match c.limit_packets {
            Some(v) => {
                let allowed = "an integer from 1 to 1073741824 (or leave it out: bytes only)";
                Some(crate::check::in_range(&p("limit_packets"), v, 1, 1 << 30, allowed)? as u32)
            }
            None => None,
        };
        Ok(Spec {
            limit_packets: limit,
            voqs: *c.voqs.get_or_insert(true),
        })
    }

    fn queues(spec: &Spec, voqs: u32) -> u32 {
        if spec.voqs {
            voqs
        } else {
            1
        }
    }

    fn build(spec: &Spec, _seed: u64, _port: u32) -> Self {
        DropTail::new(spec.limit_packets)
    }

    #[inline]
    fn classify(&mut self, ctx: &mut PortCtx, _pkt: PktId, in_port: u32) -> usize {
        // Switch ports have one queue per input; a NIC has one queue (and input 0).
        let i = in_port as usize;
        if i < ctx.queues.len() {
            i
        } else {
            i % ctx.queues.len()
        }
    }

    #[inline]
    fn enqueue(&mut self, ctx: &mut PortCtx, pkt: PktId, queue: usize) -> Verdict {
        let bytes = ctx.pool.get(pkt).frame_bytes as u64;
        let over_pkts = self.limit_packets.is_some_and(|l| *ctx.pkts_queued >= l);
        if over_pkts || !ctx.fits(bytes) {
            return Verdict::Dropped;
        }
        ctx.push(queue, pkt);
        Verdict::Accepted
    }

    #[inline]
    fn schedule(&mut self, ctx: &mut PortCtx) -> Option<PktId> {
        let q = ctx.next_nonempty_from(self.rr_next)?;
        self.rr_next = if q + 1 == ctx.queues.len() { 0 } else { q + 1 };
        ctx.pop(q)
    }

    #[inline]
    fn next_queue_hint(&self, nonempty: &[u64], n: usize) -> Option<usize> {
        super::next_nonempty(nonempty, n, self.rr_next())
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
    fn drops_when_the_buffer_is_full() {
        let mut f = Fixture::new(2);
        let mut s = DropTail::new(None);
        let mut verdicts = vec![];
        for _ in 0..3 {
            let id = f.pkt(Packet {
                frame_bytes: 1500,
                ..Default::default()
            });
            let mut ctx = f.ctx(4096);
            verdicts.push(s.enqueue(&mut ctx, id, 0));
        }
        assert_eq!(
            verdicts,
            vec![Verdict::Accepted, Verdict::Accepted, Verdict::Dropped]
        );
        assert_eq!(f.bytes, 3000);
    }

    #[test]
    fn packet_limit_applies() {
        let mut f = Fixture::new(1);
        let mut s = DropTail::new(Some(1));
        let a = f.pkt(Packet {
            frame_bytes: 64,
            ..Default::default()
        });
        let b = f.pkt(Packet {
            frame_bytes: 64,
            ..Default::default()
        });
        assert_eq!(s.enqueue(&mut f.ctx(1 << 20), a, 0), Verdict::Accepted);
        assert_eq!(s.enqueue(&mut f.ctx(1 << 20), b, 0), Verdict::Dropped);
    }

    #[test]
    fn round_robin_across_input_queues() {
        // 70 queues exercises the multi-word bitmap.
        let mut f = Fixture::new(70);
        let mut s = Scheme::DropTail(DropTail::new(None));
        for (q, n) in [(3usize, 3u64), (65, 2), (69, 1)] {
            for i in 0..n {
                let id = f.pkt(Packet {
                    frame_bytes: 100,
                    seq: q as u64 * 100 + i,
                    ..Default::default()
                });
                let mut ctx = f.ctx(1 << 30);
                s.enqueue(&mut ctx, id, q);
            }
        }
        assert_eq!(f.drain(&mut s), vec![300, 6500, 6900, 301, 6501, 302]);
        assert!(f.masks.iter().all(|&m| m == 0));
    }

    #[test]
    fn without_voqs_inputs_share_one_fifo_in_arrival_order() {
        let spec = crate::scheme::SchemeSpec::DropTail(Spec {
            limit_packets: None,
            voqs: false,
        });
        assert_eq!(spec.queues(8), 1);
        let mut f = Fixture::new(spec.queues(8) as usize);
        let mut s = spec.build(1, 0);
        let mut ctx = f.ctx(1 << 30);
        let arrivals = [(3u32, 1u64), (3, 2), (5, 3), (3, 4), (0, 5)];
        for (in_port, seq) in arrivals {
            let id = ctx.pool.alloc(Packet {
                frame_bytes: 100,
                seq,
                ..Default::default()
            });
            let q = s.classify(&mut ctx, id, in_port);
            s.enqueue(&mut ctx, id, q);
        }
        assert_eq!(f.drain(&mut s), vec![1, 2, 3, 4, 5]);
    }
}
