//! DCTCP's switch side (Alizadeh et al., 2010): a FIFO that marks an ECN-capable arriving
//! packet CE when the instantaneous queue already holds `k_packets` or more, and drops only
//! when the buffer is full. Packets that are not ECN-capable are never dropped early (a
//! switch that dropped them at K would drop pure ACKs, which the DCTCP paper's switches
//! did not see on the bottleneck). The sender's half is in `transport::tcp::cc`.

use super::{PortCtx, Verdict};
use crate::packet::PktId;

/// Scenario parameters of scheme kind "dctcp" (defaults are filled in by `SchemeKind::resolve`, below).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Marking threshold, packets (default 65).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub k_packets: Option<i64>,
}

#[derive(Clone, Debug)]
pub struct DctcpMarking {
    pub k_packets: u32,
}

impl DctcpMarking {}

impl super::SchemeKind for DctcpMarking {
    const NAME: &'static str = "dctcp";
    const SERVES_HEADS: bool = true;
    type Params = Params;
    type Spec = u32;

    /// Checks the scenario's parameters and fills in their defaults.
    fn resolve(c: &mut Params, path: &str) -> Result<u32, crate::check::ConfigError> {
        let p = |k: &str| format!("{path}.{k}");

        let k = *c.k_packets.get_or_insert(65);
        let allowed = "a marking threshold from 1 to 1073741824 packets (65 at 10 Gbit/s)";
        crate::check::in_range(&p("k_packets"), k, 1, 1 << 30, allowed)?;
        Ok(k as u32)
    }

    fn build(k_packets: &u32, _seed: u64, _port: u32) -> Self {
        DctcpMarking {
            k_packets: *k_packets,
        }
    }

    #[inline]
    fn enqueue(&mut self, ctx: &mut PortCtx, pkt: PktId, _queue: usize) -> Verdict {
        let mark = *ctx.pkts_queued >= self.k_packets;
        ctx.push_if_fits(0, pkt, mark)
    }

    #[inline]
    fn schedule(&mut self, ctx: &mut PortCtx) -> Option<PktId> {
        ctx.pop(0)
    }

    #[inline]
    fn next_queue_hint(&self, _nonempty: &[u64], _n: usize) -> Option<usize> {
        Some(0)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::Fixture;
    use super::super::Scheme;
    use super::*;

    #[test]
    fn marks_exactly_above_k() {
        let mut f = Fixture::new(1);
        let mut s = Scheme::Dctcp(DctcpMarking { k_packets: 65 });
        let mut verdicts = vec![];
        for i in 0..100 {
            let id = f.data(0, i);
            verdicts.push(s.enqueue(&mut f.ctx(100 * 1518), id, 0));
        }
        assert!(verdicts[..65].iter().all(|v| *v == Verdict::Accepted));
        assert!(verdicts[65..].iter().all(|v| *v == Verdict::AcceptedMarked));
        let id = f.data(0, 100);
        assert_eq!(
            s.enqueue(&mut f.ctx(100 * 1518), id, 0),
            Verdict::Dropped,
            "full buffer drops"
        );
        assert_eq!(f.drain(&mut s), (0..100).collect::<Vec<_>>(), "FIFO");
    }
}
