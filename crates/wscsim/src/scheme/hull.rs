//! HULL's phantom queue (Alizadeh et al., 2012) as Flexplane implements it: a FIFO port
//! with a virtual queue that counts the bytes the port sends and drains at a fraction of
//! the line rate (0.95 by default). A packet leaving while the phantom queue is above the
//! marking threshold is marked CE (if ECN-capable), so DCTCP senders back off before a
//! real queue forms and the link keeps headroom.
//!
//! Leaves out HULL's host pacer (as Flexplane does): senders are not paced.

use super::{PortCtx, Verdict};
use crate::engine::TimePs;
use crate::packet::{ecn, PktId};

/// Scenario parameters of scheme kind "hull" (defaults are filled in by `SchemeKind::resolve`, below).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Phantom queue drain rate as a fraction of line rate (default 0.95).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drain_fraction: Option<f64>,
    /// Phantom queue marking threshold (default 15 KB).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mark_threshold: Option<crate::units::Bytes>,
}

#[derive(Clone, Debug)]
pub struct Hull {
    pub drain_fraction: f64,
    pub mark_threshold_bytes: f64,
    /// Bytes in the phantom queue at `last_ps`.
    pub phantom_bytes: f64,
    last_ps: TimePs,
    /// Packets marked so far.
    pub marks: u64,
}

impl Hull {
    pub fn new(drain_fraction: f64, mark_threshold_bytes: u64) -> Self {
        Hull {
            drain_fraction,
            mark_threshold_bytes: mark_threshold_bytes as f64,
            phantom_bytes: 0.0,
            last_ps: 0,
            marks: 0,
        }
    }

    /// The phantom queue at `now` after draining since the last update.
    pub fn phantom_at(&self, now: TimePs, rate_bps: u64) -> f64 {
        let drained = (now - self.last_ps) as f64 * rate_bps as f64 * self.drain_fraction / 8e12;
        (self.phantom_bytes - drained).max(0.0)
    }
}

/// Kind "hull" resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    pub drain_fraction: f64,
    pub mark_threshold_bytes: u64,
}

impl super::SchemeKind for Hull {
    const NAME: &'static str = "hull";
    const SERVES_HEADS: bool = true;
    type Params = Params;
    type Spec = Spec;

    /// Checks the scenario's parameters and fills in their defaults.
    fn resolve(c: &mut Params, path: &str) -> Result<Spec, crate::check::ConfigError> {
        let p = |k: &str| format!("{path}.{k}");

        let f = *c.drain_fraction.get_or_insert(0.95);
        let t = *c.mark_threshold.get_or_insert(crate::units::Bytes(15_000));
        if !(f > 0.0 && f <= 1.0) {
            return Err(crate::check::err(
                &p("drain_fraction"),
                f,
                "a fraction of line rate in (0, 1] (0.95 in HULL and Flexplane)",
            ));
        }
        if t.0 > 1 << 40 {
            return Err(crate::check::err(&p("mark_threshold"), t, "at most 1TiB"));
        }
        Ok(Spec {
            drain_fraction: f,
            mark_threshold_bytes: t.0,
        })
    }

    fn build(spec: &Spec, _seed: u64, _port: u32) -> Self {
        Hull::new(spec.drain_fraction, spec.mark_threshold_bytes)
    }

    #[inline]
    fn enqueue(&mut self, ctx: &mut PortCtx, pkt: PktId, _queue: usize) -> Verdict {
        ctx.push_if_fits(0, pkt, false)
    }

    #[inline]
    fn schedule(&mut self, ctx: &mut PortCtx) -> Option<PktId> {
        let id = ctx.pop(0)?;
        let p = ctx.pool.get_mut(id);
        let q = self.phantom_at(ctx.now_ps, ctx.rate_bps);
        if q > self.mark_threshold_bytes && p.ecn != ecn::NOT_ECT {
            p.ecn = ecn::CE;
            self.marks += 1;
        }
        self.phantom_bytes = q + (p.frame_bytes + ctx.wire_overhead_bytes) as f64;
        self.last_ps = ctx.now_ps;
        Some(id)
    }

    fn marks_at_dequeue(&self) -> u64 {
        self.marks
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::Fixture;
    use super::super::Scheme;
    use super::*;
    use crate::scheme::SchemeKind;

    #[test]
    fn phantom_queue_drains_at_the_fraction_of_line_rate() {
        let mut f = Fixture::new(1);
        let mut h = Hull::new(0.95, 15_000);
        // Back-to-back full frames at line rate: the phantom queue grows by 5% of each.
        let wire = 1538.0;
        let ser_ps = 1538 * 800; // at 10 Gbit/s
        for i in 0..100u64 {
            f.now_ps = i * ser_ps;
            let id = f.data(0, i);
            f.ctx(u64::MAX).push(0, id);
            let out = h.schedule(&mut f.ctx(u64::MAX)).unwrap();
            f.pool.free(out);
        }
        // After n sends the queue holds wire + (n - 1) * 0.05 * wire.
        let expect = wire + 99.0 * 0.05 * wire;
        assert!(
            (h.phantom_bytes - expect).abs() < 1e-6,
            "{} vs {expect}",
            h.phantom_bytes
        );
        // Idle for long enough to drain everything.
        assert_eq!(h.phantom_at(f.now_ps + 10_000_000, f.rate_bps), 0.0);
        let half = h.phantom_at(f.now_ps + (expect / 2.0 / 0.95 * 800.0) as u64, f.rate_bps);
        assert!((half - expect / 2.0).abs() < 1.0, "{half}");
    }

    #[test]
    fn marks_once_the_phantom_queue_passes_the_threshold() {
        let mut f = Fixture::new(1);
        let mut s = Scheme::Hull(Box::new(Hull::new(0.95, 3_000)));
        let mut marks = vec![];
        for i in 0..200u64 {
            f.now_ps = i * 1538 * 800;
            let id = f.data(0, i);
            s.enqueue(&mut f.ctx(u64::MAX), id, 0);
            let out = s.schedule(&mut f.ctx(u64::MAX)).unwrap();
            marks.push(f.pool.get(out).ecn == ecn::CE);
        }
        // Before packet n (0-based) the phantom queue holds n * 0.05 * 1538 bytes (each send
        // adds a frame, the gap drains 95% of one): above 3,000 from n = 40.
        let first = marks.iter().position(|&m| m).unwrap();
        assert_eq!(first, 40);
        assert!(marks[first..].iter().all(|&m| m));
    }
}
