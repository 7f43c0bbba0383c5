//! ECN marking on a probability ramp, as the switches under DCQCN mark (Zhu et al.,
//! "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015, section 3: RED's
//! marking on the instantaneous queue, without its average): a FIFO that marks an
//! ECN-capable arriving packet CE with a probability that is 0 while the port holds less
//! than `kmin` bytes, rises linearly to `pmax` at `kmax`, and is 1 above `kmax`. It never
//! drops early: packets that are not ECN-capable (ACKs, CNPs, other transports') are only
//! ever dropped by a full buffer, so the scheme keeps a lossless (PFC) class lossless,
//! where `red` with `ecn = true` drops them as it marks the others.
//!
//! Defaults: the DCQCN paper's recommended values at 40 Gbit/s (Kmin 5 KB, Kmax 200 KB,
//! Pmax 1%). The HPCC authors' ns-3 fork marks at 100 KB / 400 KB / 20% per 25 Gbit/s of
//! line rate (`run.py`'s `KMIN_MAP`, `KMAX_MAP`, `PMAX_MAP`). Simplified: marks on arrival
//! (the queue the packet joins), where the fork marks as a packet leaves.

use super::{PortCtx, Verdict};
use crate::engine::rng::StreamRng;
use crate::packet::PktId;
use rand::Rng;

/// Scenario parameters of scheme kind "ecn_ramp".
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Queue below which nothing is marked (default 5KB).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kmin: Option<crate::units::Bytes>,
    /// Queue above which every ECN-capable packet is marked (default 200KB), above kmin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kmax: Option<crate::units::Bytes>,
    /// Marking probability at kmax (default 0.01), above 0, at most 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pmax: Option<f64>,
}

/// `ecn_ramp` resolved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RampSpec {
    pub kmin_bytes: u64,
    pub kmax_bytes: u64,
    pub pmax: f64,
}

#[derive(Clone, Debug)]
pub struct EcnRamp {
    pub spec: RampSpec,
    rng: StreamRng,
}

impl EcnRamp {
    /// The marking probability when the port holds `queued` bytes.
    pub fn probability(&self, queued: u64) -> f64 {
        let s = &self.spec;
        if queued <= s.kmin_bytes {
            0.0
        } else if queued > s.kmax_bytes {
            1.0
        } else {
            s.pmax * (queued - s.kmin_bytes) as f64 / (s.kmax_bytes - s.kmin_bytes) as f64
        }
    }
}

impl super::SchemeKind for EcnRamp {
    const NAME: &'static str = "ecn_ramp";
    const SERVES_HEADS: bool = true;
    type Params = Params;
    type Spec = RampSpec;

    /// Checks the scenario's parameters and fills in their defaults.
    fn resolve(c: &mut Params, path: &str) -> Result<RampSpec, crate::check::ConfigError> {
        use crate::units::Bytes;
        let p = |k: &str| format!("{path}.{k}");
        let kmin = c.kmin.get_or_insert(Bytes(5_000)).0;
        let kmax = c.kmax.get_or_insert(Bytes(200_000)).0;
        if kmax <= kmin {
            let allowed = format!("a size above kmin ({})", Bytes(kmin));
            return Err(crate::check::err(&p("kmax"), Bytes(kmax), allowed));
        }
        let pmax = *c.pmax.get_or_insert(0.01);
        if !(pmax > 0.0 && pmax <= 1.0) {
            return Err(crate::check::err(
                &p("pmax"),
                pmax,
                "a probability in (0, 1]",
            ));
        }
        Ok(RampSpec {
            kmin_bytes: kmin,
            kmax_bytes: kmax,
            pmax,
        })
    }

    fn build(spec: &RampSpec, seed: u64, port: u32) -> Self {
        use crate::engine::rng::{family, stream};
        EcnRamp {
            spec: *spec,
            rng: stream(seed, family::SWITCH, port as u64),
        }
    }

    #[inline]
    fn enqueue(&mut self, ctx: &mut PortCtx, pkt: PktId, _queue: usize) -> Verdict {
        let ect = ctx.packet(pkt).ecn != crate::packet::ecn::NOT_ECT;
        let p = self.probability(*ctx.bytes_queued);
        let mark = ect && (p >= 1.0 || (p > 0.0 && self.rng.random::<f64>() < p));
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
    use super::super::{Scheme, SchemeKind};
    use super::*;
    use crate::packet::{ecn, Packet};

    fn ramp(kmin: u64, kmax: u64, pmax: f64) -> EcnRamp {
        let spec = RampSpec {
            kmin_bytes: kmin,
            kmax_bytes: kmax,
            pmax,
        };
        EcnRamp::build(&spec, 1, 0)
    }

    #[test]
    fn the_probability_ramps_from_kmin_to_pmax_then_jumps_to_one() {
        let r = ramp(10_000, 110_000, 0.2);
        assert_eq!(r.probability(10_000), 0.0);
        assert!((r.probability(60_000) - 0.1).abs() < 1e-12);
        assert!((r.probability(110_000) - 0.2).abs() < 1e-12);
        assert_eq!(r.probability(110_001), 1.0);
    }

    #[test]
    fn marks_in_proportion_and_never_drops_what_it_cannot_mark() {
        // Hold the queue at the ramp's middle (p = 0.5 of pmax 1) and count the marks.
        let mut f = Fixture::new(1);
        let mut s = Scheme::EcnRamp(Box::new(ramp(0, 2 * 15_180, 1.0)));
        for i in 0..10 {
            let id = f.data(0, i);
            s.enqueue(&mut f.ctx(1 << 30), id, 0);
        }
        let mut marks = 0;
        for i in 10..4010 {
            let id = f.data(0, i);
            if s.enqueue(&mut f.ctx(1 << 30), id, 0) == Verdict::AcceptedMarked {
                marks += 1;
            }
            s.schedule(&mut f.ctx(1 << 30));
        }
        assert!((1800..2200).contains(&marks), "{marks} of 4000");
        // Far above kmax, a packet that is not ECN-capable is queued as it is.
        let ack = f.pool.alloc(Packet {
            frame_bytes: 64,
            ecn: ecn::NOT_ECT,
            ..Default::default()
        });
        let mut r = ramp(0, 1, 1.0);
        let id = f.data(0, 5000);
        assert_eq!(
            SchemeKind::enqueue(&mut r, &mut f.ctx(1 << 30), id, 0),
            Verdict::AcceptedMarked
        );
        assert_eq!(
            SchemeKind::enqueue(&mut r, &mut f.ctx(1 << 30), ack, 0),
            Verdict::Accepted
        );
    }
}
