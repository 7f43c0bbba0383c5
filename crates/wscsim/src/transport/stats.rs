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
}
