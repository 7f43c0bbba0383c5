//! The SACK scoreboard of a TCP sender: sorted, disjoint, non-touching byte ranges the
//! receiver reported holding, with their total kept up to date.
//!
//! Under heavy loss a window can hold hundreds of SACKed ranges, and the RFC 6675 pipe
//! estimate is evaluated once per segment sent in recovery; queries therefore use binary
//! search and the running total instead of walking the whole list.

/// Sorted disjoint ranges `[start, end)` of SACKed sequence space.
#[derive(Clone, Debug, Default)]
pub struct Scoreboard {
    ranges: Vec<(u64, u64)>,
    total_bytes: u64,
}

impl Scoreboard {
    pub fn ranges(&self) -> &[(u64, u64)] {
        &self.ranges
    }

    /// End of the highest SACKed range, 0 if none.
    pub fn highest_end(&self) -> u64 {
        self.ranges.last().map_or(0, |r| r.1)
    }

    /// Index of the first range that ends above `x` (the one covering `x`, if any).
    fn first_ending_above(&self, x: u64) -> usize {
        self.ranges.partition_point(|&(_, e)| e <= x)
    }

    /// Adds `[a, b)`, merging with ranges it overlaps or touches.
    pub fn insert(&mut self, a: u64, b: u64) {
        let i = self.ranges.partition_point(|&(_, e)| e < a);
        let mut j = i;
        let (mut lo, mut hi) = (a, b);
        let mut merged_bytes = 0;
        while j < self.ranges.len() && self.ranges[j].0 <= hi {
            let (s, e) = self.ranges[j];
            lo = lo.min(s);
            hi = hi.max(e);
            merged_bytes += e - s;
            j += 1;
        }
        self.total_bytes += (hi - lo) - merged_bytes;
        self.ranges.splice(i..j, [(lo, hi)]);
    }

    /// Forgets everything below `ack` (cumulatively acknowledged).
    pub fn prune_below(&mut self, ack: u64) {
        let keep = self.first_ending_above(ack);
        let dropped: u64 = self.ranges[..keep].iter().map(|&(s, e)| e - s).sum();
        self.total_bytes -= dropped;
        self.ranges.drain(..keep);
        if let Some(first) = self.ranges.first_mut() {
            if first.0 < ack {
                self.total_bytes -= ack - first.0;
                first.0 = ack;
            }
        }
    }

    /// SACKed bytes inside `[a, b)`.
    pub fn bytes_in(&self, a: u64, b: u64) -> u64 {
        match (self.ranges.first(), self.ranges.last()) {
            (None, _) | (_, None) => 0,
            (Some(f), Some(l)) if a <= f.0 && b >= l.1 => self.total_bytes,
            _ => self.ranges[self.first_ending_above(a)..]
                .iter()
                .take_while(|&&(s, _)| s < b)
                .map(|&(s, e)| e.min(b).saturating_sub(s.max(a)))
                .sum(),
        }
    }

    /// Bytes of `[a, b)` the receiver has not SACKed.
    pub fn unsacked_in(&self, a: u64, b: u64) -> u64 {
        (b - a) - self.bytes_in(a, b)
    }

    /// Whether every byte of `[a, b)` (`a < b`) is SACKed: ranges never touch, so one range
    /// holds all of it (one binary search, where `unsacked_in` sums over the ranges; asked
    /// for every retransmission in flight on every ACK in recovery).
    pub fn covers(&self, a: u64, b: u64) -> bool {
        self.covering(a).is_some_and(|(_, e)| e >= b)
    }

    /// Index of the range covering `x`, if any.
    pub fn index_covering(&self, x: u64) -> Option<usize> {
        let i = self.first_ending_above(x);
        self.ranges.get(i).filter(|&&(s, _)| s <= x).map(|_| i)
    }

    /// The SACKed range covering `x`, if any.
    pub fn covering(&self, x: u64) -> Option<(u64, u64)> {
        self.index_covering(x).map(|i| self.ranges[i])
    }

    /// For a receiver's out-of-order list: with everything below `x` now in order, takes the
    /// ranges that continue it out of the list and returns the new in-order point.
    pub fn advance_through(&mut self, x: u64) -> u64 {
        let mut x = x;
        for &(s, e) in &self.ranges {
            if s > x {
                break;
            }
            x = x.max(e);
        }
        self.prune_below(x);
        x
    }

    /// First byte at or above `x` that is not SACKed (ranges never touch, so one jump does).
    pub fn first_unsacked(&self, x: u64) -> u64 {
        self.covering(x).map_or(x, |(_, e)| e)
    }

    /// Length of the segment to send at `hole`: at most `mss`, stopping at the next SACKed
    /// range and at `limit`.
    pub fn segment_at(&self, hole: u64, mss: u64, limit: u64) -> u64 {
        let i = self.ranges.partition_point(|&(s, _)| s <= hole);
        let next_sacked = self.ranges.get(i).map_or(u64::MAX, |r| r.0);
        mss.min(next_sacked - hole).min(limit - hole)
    }

    /// Every unSACKed byte below the returned point counts as lost: more than
    /// (`dup_thresh` - 1) segments' worth above it are SACKed (RFC 6675 IsLost). 0 if none.
    pub fn lost_boundary(&self, mss: u64, dup_thresh: u64) -> u64 {
        let mut above = 0;
        for &(a, b) in self.ranges.iter().rev() {
            above += b - a;
            if above > (dup_thresh - 1) * mss {
                return a;
            }
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(r: &[(u64, u64)]) -> Scoreboard {
        let mut s = Scoreboard::default();
        for &(a, b) in r {
            s.insert(a, b);
        }
        s
    }

    /// The slow, obvious definition, to check the indexed one against.
    fn bytes_in_by_scan(s: &Scoreboard, a: u64, b: u64) -> u64 {
        s.ranges()
            .iter()
            .map(|&(x, y)| y.min(b).saturating_sub(x.max(a)))
            .sum()
    }

    #[test]
    fn queries() {
        let v = board(&[(3000, 4000), (5000, 8000)]);
        assert_eq!(v.bytes_in(0, 10_000), 4000);
        assert_eq!(v.bytes_in(3500, 6000), 1500);
        assert_eq!(v.bytes_in(4000, 5000), 0);
        assert_eq!(v.unsacked_in(0, 5000), 4000);
        assert_eq!(v.first_unsacked(3000), 4000);
        assert_eq!(v.first_unsacked(4500), 4500);
        assert_eq!(v.first_unsacked(7999), 8000);
        assert_eq!(v.segment_at(4000, 1500, 100_000), 1000);
        assert_eq!(v.segment_at(8000, 1500, 8100), 100);
        assert_eq!(v.segment_at(0, 1500, 100_000), 1500);
        // 3000 bytes SACKed above 5000 is more than 2 x 1000.
        assert_eq!(v.lost_boundary(1000, 3), 5000);
        assert_eq!(v.lost_boundary(1500, 3), 3000);
        assert_eq!(v.lost_boundary(2000, 3), 0);
    }

    #[test]
    fn covers_agrees_with_counting() {
        let v = board(&[(3000, 4000), (5000, 8000)]);
        for a in (0..9000).step_by(250) {
            for b in (a + 1..9500).step_by(333) {
                assert_eq!(v.covers(a, b), v.unsacked_in(a, b) == 0, "[{a}, {b})");
            }
        }
    }

    #[test]
    fn receiver_advance() {
        let mut v = board(&[(3000, 4000), (5000, 8000)]);
        assert_eq!(v.advance_through(2000), 2000);
        assert_eq!(v.ranges().len(), 2);
        assert_eq!(v.advance_through(3500), 4000);
        assert_eq!(v.ranges(), &[(5000, 8000)]);
        assert_eq!(v.index_covering(6000), Some(0));
        assert_eq!(v.index_covering(8000), None);
        assert_eq!(v.advance_through(5000), 8000);
        assert!(v.ranges().is_empty());
        assert_eq!(v.bytes_in(0, u64::MAX), 0);
    }

    #[test]
    fn prune_keeps_total() {
        let mut w = board(&[(3000, 4000), (5000, 8000)]);
        w.prune_below(3500);
        assert_eq!(w.ranges(), &[(3500, 4000), (5000, 8000)]);
        assert_eq!(w.bytes_in(0, u64::MAX), 3500);
        w.prune_below(6000);
        assert_eq!(w.ranges(), &[(6000, 8000)]);
        assert_eq!(w.bytes_in(0, u64::MAX), 2000);
        w.prune_below(9000);
        assert_eq!(w.bytes_in(0, u64::MAX), 0);
    }

    #[test]
    fn ranges_merge() {
        let mut v = board(&[(10, 20), (30, 40), (20, 30)]);
        assert_eq!(v.ranges(), &[(10, 40)]);
        v.insert(50, 60);
        v.insert(5, 8);
        assert_eq!(v.ranges(), &[(5, 8), (10, 40), (50, 60)]);
        assert_eq!(v.bytes_in(0, 100), 3 + 30 + 10);
        v.insert(0, 100);
        assert_eq!(v.ranges(), &[(0, 100)]);
        assert_eq!(v.bytes_in(0, 100), 100);
    }

    /// Random inserts and prunes: the running total and the indexed queries agree with a scan.
    #[test]
    fn indexed_queries_match_scan() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        let mut s = Scoreboard::default();
        let mut floor = 0;
        for _ in 0..2000 {
            if rng.random_bool(0.1) {
                floor += rng.random_range(0..200);
                s.prune_below(floor);
            } else {
                let a = floor + rng.random_range(0..5000);
                s.insert(a, a + rng.random_range(1..300));
            }
            let (a, b) = (
                rng.random_range(0..floor + 6000),
                rng.random_range(0..floor + 6000),
            );
            let (a, b) = (a.min(b), a.max(b));
            assert_eq!(s.bytes_in(a, b), bytes_in_by_scan(&s, a, b));
            assert_eq!(s.bytes_in(0, u64::MAX), bytes_in_by_scan(&s, 0, u64::MAX));
            let x = rng.random_range(0..floor + 6000);
            let mut y = x;
            for &(p, q) in s.ranges() {
                if p <= y && y < q {
                    y = q;
                }
            }
            assert_eq!(s.first_unsacked(x), y);
        }
    }
}
