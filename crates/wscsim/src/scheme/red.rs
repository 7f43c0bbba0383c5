//! Random Early Detection (Floyd and Jacobson, 1993) on one FIFO per port, with optional
//! ECN marking instead of early drops (RFC 3168). The queue is measured in packets, as
//! Flexplane's RED is (its abstract packets are all one MTU).
//!
//! On each arrival the average `avg <- (1 - w) avg + w q` is updated, after an idle period
//! as if `m` small packets had arrived to an empty queue (`avg <- (1 - w)^m avg`, with `m`
//! the idle time over one full-size frame's transmission time). Between the thresholds a
//! packet is marked or dropped with `pa = pb / (1 - count pb)`, `pb = max_p (avg - min) /
//! (max - min)`, `count` being the packets since the last one; above `max_th` every packet
//! is. With ECN, ECN-capable packets are marked and others dropped; a full buffer always drops.

use super::{PortCtx, Verdict};
use crate::engine::rng::StreamRng;
use crate::engine::TimePs;
use crate::packet::{ecn, PktId};
use rand::Rng;

/// Scenario parameters of scheme kind "red" (defaults are filled in by `SchemeKind::resolve`, below).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Lower threshold of the average queue, packets (default 150).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_th_packets: Option<f64>,
    /// Upper threshold, packets (default 300).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_th_packets: Option<f64>,
    /// Drop (or mark) probability at the upper threshold (default 0.1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_p: Option<f64>,
    /// EWMA weight as a power of two: 5 means 2^-5 (default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight: Option<i64>,
    /// Mark ECN-capable packets instead of dropping them (default false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ecn: Option<bool>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RedParams {
    pub min_th_packets: f64,
    pub max_th_packets: f64,
    pub max_p: f64,
    /// Averaging weight `w = 2^-weight_log2` (Flexplane's "weight = 5").
    pub weight_log2: u32,
    pub ecn: bool,
}

#[derive(Clone, Debug)]
pub struct Red {
    pub p: RedParams,
    w: f64,
    pub avg: f64,
    /// Packets since the last mark or drop (-1: none since the average went below min_th).
    count: i64,
    /// When the queue went empty (None while it holds packets).
    idle_since: Option<TimePs>,
    rng: StreamRng,
}

/// Frame bytes of one "small packet" for the idle-time correction (a full 1,500-byte MTU).
const IDLE_PACKET_BYTES: u64 = 1538;

impl Red {
    pub fn new(p: RedParams, rng: StreamRng) -> Self {
        Red {
            p,
            w: (-(p.weight_log2 as f64)).exp2(),
            avg: 0.0,
            count: -1,
            idle_since: Some(0),
            rng,
        }
    }

    /// Early-drop probability at average `avg` before the count correction.
    pub fn pb(&self, avg: f64) -> f64 {
        self.p.max_p * (avg - self.p.min_th_packets)
            / (self.p.max_th_packets - self.p.min_th_packets)
    }

    fn update_avg(&mut self, ctx: &PortCtx) {
        let q = *ctx.pkts_queued as f64;
        match self.idle_since.take() {
            Some(t) if q == 0.0 => {
                let per_pkt_ps =
                    (IDLE_PACKET_BYTES * 8_000_000_000_000 / ctx.rate_bps.max(1)) as f64;
                let m = (ctx.now_ps - t) as f64 / per_pkt_ps;
                self.avg *= (1.0 - self.w).powf(m);
            }
            _ => self.avg += self.w * (q - self.avg),
        }
    }

    /// Whether RED acts on this arrival (marks or drops it early).
    fn early(&mut self) -> bool {
        if self.avg < self.p.min_th_packets {
            self.count = -1;
            return false;
        }
        if self.avg >= self.p.max_th_packets {
            self.count = 0;
            return true;
        }
        self.count += 1;
        let pb = self.pb(self.avg);
        let denom = 1.0 - self.count as f64 * pb;
        let pa = if denom <= 0.0 { 1.0 } else { pb / denom };
        if self.rng.random::<f64>() < pa {
            self.count = 0;
            true
        } else {
            false
        }
    }
}

impl super::SchemeKind for Red {
    const NAME: &'static str = "red";
    const SERVES_HEADS: bool = true;
    type Params = Params;
    type Spec = RedParams;

    /// Checks the scenario's parameters and fills in their defaults.
    fn resolve(c: &mut Params, path: &str) -> Result<RedParams, crate::check::ConfigError> {
        let p = |k: &str| format!("{path}.{k}");

        let min = *c.min_th_packets.get_or_insert(150.0);
        let max = *c.max_th_packets.get_or_insert(300.0);
        let max_p = *c.max_p.get_or_insert(0.1);
        let weight = *c.weight.get_or_insert(5);
        let ecn = *c.ecn.get_or_insert(false);
        // As many packets as a droptail limit may be: a queue never holds more.
        const MOST: f64 = (1u64 << 30) as f64;
        if !(min.is_finite() && (0.0..MOST).contains(&min)) {
            return Err(crate::check::err(
                &p("min_th_packets"),
                min,
                "a number of packets from 0 to below 1073741824",
            ));
        }
        if !(max.is_finite() && max > min && max <= MOST) {
            return Err(crate::check::err(
                &p("max_th_packets"),
                max,
                format!("a number of packets above min_th_packets ({min}), at most 1073741824"),
            ));
        }
        if !(max_p > 0.0 && max_p <= 1.0) {
            return Err(crate::check::err(
                &p("max_p"),
                max_p,
                "a probability in (0, 1]",
            ));
        }
        let allowed = "an integer from 0 to 30 (the EWMA weight is 2^-weight)";
        crate::check::in_range(&p("weight"), weight, 0, 30, allowed)?;
        Ok(RedParams {
            min_th_packets: min,
            max_th_packets: max,
            max_p,
            weight_log2: weight as u32,
            ecn,
        })
    }

    fn build(spec: &RedParams, seed: u64, port: u32) -> Self {
        use crate::engine::rng::{family, stream};
        Red::new(*spec, stream(seed, family::SWITCH, port as u64))
    }

    #[inline]
    fn enqueue(&mut self, ctx: &mut PortCtx, pkt: PktId, _queue: usize) -> Verdict {
        self.update_avg(ctx);
        let ect = ctx.packet(pkt).ecn != ecn::NOT_ECT;
        let act = self.early();
        if act && !(self.p.ecn && ect) {
            return Verdict::Dropped;
        }
        ctx.push_if_fits(0, pkt, act)
    }

    #[inline]
    fn schedule(&mut self, ctx: &mut PortCtx) -> Option<PktId> {
        let id = ctx.pop(0)?;
        if *ctx.pkts_queued == 0 {
            self.idle_since = Some(ctx.now_ps);
        }
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::Fixture;
    use super::*;
    use crate::engine::rng::{family, stream};
    use crate::scheme::SchemeKind;

    fn params(ecn: bool, weight_log2: u32) -> RedParams {
        RedParams {
            min_th_packets: 150.0,
            max_th_packets: 300.0,
            max_p: 0.1,
            weight_log2,
            ecn,
        }
    }

    /// Mean packets between early actions when the average stays at `avg`, from the
    /// count-corrected probability: P(first action at the n-th packet) telescopes from
    /// pa(count) = pb / (1 - count pb).
    fn expected_interval(pb: f64) -> f64 {
        let (mut survive, mut mean) = (1.0, 0.0);
        for n in 1.. {
            let denom = 1.0 - n as f64 * pb;
            let pa = if denom <= 0.0 {
                1.0
            } else {
                (pb / denom).min(1.0)
            };
            mean += n as f64 * survive * pa;
            survive *= 1.0 - pa;
            if survive <= 0.0 {
                break;
            }
        }
        mean
    }

    #[test]
    fn early_drop_rate_matches_the_formula() {
        for avg in [180.0, 225.0, 280.0] {
            let mut f = Fixture::new(1);
            // A weight of 2^-40 keeps the average where the test puts it.
            let mut s = Red::new(params(false, 40), stream(1, family::SWITCH, 0));
            s.avg = avg;
            s.idle_since = None;
            let n = 200_000;
            let mut drops = 0;
            for i in 0..n {
                let id = f.data(0, i);
                match s.enqueue(&mut f.ctx(u64::MAX), id, 0) {
                    Verdict::Dropped => drops += 1,
                    _ => {
                        let out = f.ctx(u64::MAX).pop(0).unwrap();
                        f.pool.free(out);
                        // Keep the queue non-empty so the idle correction never applies.
                        let keep = f.data(0, 0);
                        f.ctx(u64::MAX).push(0, keep);
                    }
                }
            }
            let expect = 1.0 / expected_interval(s.pb(avg));
            let got = drops as f64 / n as f64;
            // Binomial standard error is under 0.0006 here; allow 5 of them.
            assert!(
                (got - expect).abs() < 0.003,
                "avg {avg}: drop rate {got}, formula {expect}"
            );
        }
    }

    #[test]
    fn no_early_action_below_min_and_always_above_max() {
        let mut f = Fixture::new(1);
        let mut s = Red::new(params(true, 40), stream(1, family::SWITCH, 0));
        s.idle_since = None;
        s.avg = 100.0;
        for i in 0..1000 {
            let id = f.data(0, i);
            assert_eq!(s.enqueue(&mut f.ctx(u64::MAX), id, 0), Verdict::Accepted);
        }
        s.avg = 301.0;
        let id = f.data(0, 0);
        assert_eq!(
            s.enqueue(&mut f.ctx(u64::MAX), id, 0),
            Verdict::AcceptedMarked,
            "ECN-capable: marked"
        );
        let id = f.pkt(crate::packet::Packet {
            frame_bytes: 64,
            ..Default::default()
        });
        assert_eq!(
            s.enqueue(&mut f.ctx(u64::MAX), id, 0),
            Verdict::Dropped,
            "not ECN-capable: dropped"
        );
    }

    #[test]
    fn average_follows_the_queue_and_decays_when_idle() {
        let mut f = Fixture::new(1);
        let mut s = Red::new(params(false, 5), stream(1, family::SWITCH, 0));
        // 100 packets into an empty port: avg after n arrivals is the EWMA of 0..n-1.
        let mut expect = 0.0;
        for i in 0..100u64 {
            let id = f.data(0, i);
            s.enqueue(&mut f.ctx(u64::MAX), id, 0);
            if i > 0 {
                expect += (i as f64 - expect) / 32.0;
            }
        }
        assert!((s.avg - expect).abs() < 1e-9, "{} vs {expect}", s.avg);
        f.drain(&mut crate::scheme::Scheme::Red(Box::new(s.clone())));
        // Empty for the time of 64 full frames: avg shrinks by (31/32)^64.
        let mut s2 = s.clone();
        s2.idle_since = Some(0);
        f.now_ps = 64 * IDLE_PACKET_BYTES * 800;
        let before = s2.avg;
        let id = f.data(0, 0);
        s2.enqueue(&mut f.ctx(u64::MAX), id, 0);
        assert!((s2.avg - before * (31.0f64 / 32.0).powi(64)).abs() < 1e-9);
    }
}
