//! Per-connection diagnostics a researcher asks for first (RTT samples), and opt-in
//! traces of the congestion window for chosen connections, capped so long runs stay small.

use crate::engine::TimePs;

/// RTT samples of one connection: count, sum, least and greatest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RttStats {
    pub samples: u32,
    pub sum_ps: u64,
    pub min_ps: u64,
    pub max_ps: u64,
}

impl RttStats {
    #[inline]
    pub fn add(&mut self, rtt_ps: TimePs) {
        self.min_ps = if self.samples == 0 {
            rtt_ps
        } else {
            self.min_ps.min(rtt_ps)
        };
        self.max_ps = self.max_ps.max(rtt_ps);
        self.samples = self.samples.saturating_add(1);
        self.sum_ps = self.sum_ps.saturating_add(rtt_ps);
    }

    /// Mean RTT in picoseconds (None without samples).
    pub fn mean_ps(&self) -> Option<f64> {
        (self.samples > 0).then(|| self.sum_ps as f64 / self.samples as f64)
    }
}

/// A traced connection's state after an ACK or a timeout.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CwndSample {
    pub time_ps: TimePs,
    pub conn: u32,
    pub cwnd_bytes: f64,
    /// Infinite until the first loss.
    pub ssthresh_bytes: f64,
    pub srtt_ps: TimePs,
    pub in_flight_bytes: u64,
}

/// Which connections are traced and what was recorded.
#[derive(Clone, Debug, Default)]
pub struct CwndTrace {
    /// Connection ids to trace, sorted (connections are marked as they open).
    pub wanted: Vec<u32>,
    pub samples: Vec<CwndSample>,
    pub max_samples: usize,
    pub truncated: bool,
}

impl CwndTrace {
    pub fn wants(&self, conn: u32) -> bool {
        self.wanted.binary_search(&conn).is_ok()
    }

    #[cold]
    pub fn push(&mut self, s: CwndSample) {
        if self.samples.len() >= self.max_samples {
            self.truncated = true;
        } else {
            self.samples.push(s);
        }
    }

    /// The traces of a run's parts as one, in time order (ties by connection). A part that
    /// hit its cap recorded nothing after its last sample, so what comes later from the
    /// others is left out too: the merged trace is complete up to where it ends.
    pub fn merge<'a>(parts: impl Iterator<Item = &'a CwndTrace> + Clone) -> CwndTrace {
        let first = parts.clone().next();
        let mut t = CwndTrace {
            wanted: first.map(|p| p.wanted.clone()).unwrap_or_default(),
            max_samples: first.map_or(0, |p| p.max_samples),
            ..Default::default()
        };
        let complete_to = parts
            .clone()
            .filter(|p| p.truncated)
            .filter_map(|p| p.samples.last().map(|s| s.time_ps))
            .min();
        t.truncated = parts.clone().any(|p| p.truncated);
        t.samples = parts
            .flat_map(|p| &p.samples)
            .filter(|s| complete_to.is_none_or(|end| s.time_ps <= end))
            .copied()
            .collect();
        t.samples.sort_by_key(|s| (s.time_ps, s.conn));
        if t.samples.len() > t.max_samples {
            t.samples.truncate(t.max_samples);
            t.truncated = true;
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rtt_stats_keep_count_sum_min_and_max() {
        let mut r = RttStats::default();
        assert_eq!(r.mean_ps(), None);
        for x in [30, 10, 20] {
            r.add(x);
        }
        assert_eq!((r.samples, r.sum_ps, r.min_ps, r.max_ps), (3, 60, 10, 30));
        assert_eq!(r.mean_ps(), Some(20.0));
    }

    #[test]
    fn a_trace_stops_at_its_cap() {
        let mut t = CwndTrace {
            wanted: vec![2, 5],
            max_samples: 1,
            ..Default::default()
        };
        assert!(t.wants(5) && !t.wants(3));
        let s = CwndSample {
            time_ps: 0,
            conn: 5,
            cwnd_bytes: 1.0,
            ssthresh_bytes: f64::INFINITY,
            srtt_ps: 0,
            in_flight_bytes: 0,
        };
        t.push(s);
        t.push(s);
        assert_eq!(t.samples.len(), 1);
        assert!(t.truncated);
    }

    /// Parts' traces merge in time order, up to where the first one that hit its cap ends.
    #[test]
    fn traces_merge_in_time_order_up_to_a_cap() {
        let at = |time_ps, conn| CwndSample {
            time_ps,
            conn,
            cwnd_bytes: 1.0,
            ssthresh_bytes: f64::INFINITY,
            srtt_ps: 0,
            in_flight_bytes: 0,
        };
        let part = |samples: Vec<CwndSample>, truncated| CwndTrace {
            wanted: vec![1, 2, 3],
            samples,
            max_samples: 10,
            truncated,
        };
        let a = part(vec![at(5, 1), at(20, 1)], false);
        let b = part(vec![at(5, 0), at(7, 2)], false);
        let m = CwndTrace::merge([&a, &b].into_iter());
        let order: Vec<_> = m.samples.iter().map(|s| (s.time_ps, s.conn)).collect();
        assert_eq!(order, [(5, 0), (5, 1), (7, 2), (20, 1)]);
        assert!(!m.truncated);
        let c = part(vec![at(6, 3)], true);
        let m = CwndTrace::merge([&a, &b, &c].into_iter());
        let order: Vec<_> = m.samples.iter().map(|s| (s.time_ps, s.conn)).collect();
        assert_eq!(order, [(5, 0), (5, 1), (6, 3)]);
        assert!(m.truncated);
    }
}

/// A distribution of delays, for percentiles without keeping every sample: counts in
/// buckets of an eighth of an octave of nanoseconds (a percentile is known within 1/8 of
/// its value), 4 KiB whatever the count.
#[derive(Clone, Debug)]
pub struct DelayHistogram {
    counts: Box<[u64; 512]>,
    total: u64,
}

impl Default for DelayHistogram {
    fn default() -> Self {
        DelayHistogram {
            counts: Box::new([0; 512]),
            total: 0,
        }
    }
}

impl DelayHistogram {
    /// The bucket of `ns` nanoseconds: 8 per octave above 8 ns, one per nanosecond below.
    fn bucket(ns: u64) -> usize {
        if ns < 8 {
            return ns as usize;
        }
        let octave = 63 - ns.leading_zeros() as usize;
        octave * 8 + ((ns >> (octave - 3)) & 7) as usize - 16
    }

    /// The largest nanosecond count bucket `b` holds.
    fn upper_ns(b: usize) -> u64 {
        if b < 8 {
            return b as u64;
        }
        let (octave, sub) = ((b + 16) / 8, (b + 16) % 8);
        ((8 + sub as u64 + 1) << (octave - 3)) - 1
    }

    #[inline]
    pub fn add(&mut self, delay_ps: TimePs) {
        self.counts[Self::bucket(delay_ps / 1000).min(511)] += 1;
        self.total += 1;
    }

    pub fn samples(&self) -> u64 {
        self.total
    }

    /// The `q` quantile (0 to 1) in microseconds, as its bucket's upper end (None without
    /// samples).
    pub fn quantile_us(&self, q: f64) -> Option<f64> {
        if self.total == 0 {
            return None;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        let b = self.counts.iter().position(|&c| {
            seen += c;
            seen >= rank
        })?;
        Some(Self::upper_ns(b) as f64 / 1e3)
    }
}

#[cfg(test)]
mod histogram_tests {
    use super::DelayHistogram;

    #[test]
    fn buckets_are_contiguous_and_percentiles_land_within_an_eighth() {
        for ns in 0..100_000u64 {
            let b = DelayHistogram::bucket(ns);
            assert!(DelayHistogram::upper_ns(b) >= ns, "{ns}");
            assert!(b == 0 || DelayHistogram::upper_ns(b - 1) < ns, "{ns}");
        }
        let mut h = DelayHistogram::default();
        for us in 1..=1000u64 {
            h.add(us * 1_000_000);
        }
        let p99 = h.quantile_us(0.99).unwrap();
        assert!((990.0..990.0 * 1.126).contains(&p99), "{p99}");
        assert_eq!(DelayHistogram::default().quantile_us(0.5), None);
    }
}
