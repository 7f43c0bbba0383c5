//! Monotone event queue. Events are small `Copy` values; ties in time break by insertion
//! order (a sequence number), which makes every run deterministic.

use super::near::{self, NearFuture};
use super::TimePs;

/// An event taken from the queue: when it is due, its place in the order, and what it is.
/// `E` is the caller's event type (in wscsim, one enum with a variant per layer); the
/// engine only stores and orders it.
#[derive(Clone, Copy, Debug)]
pub struct Event<E> {
    pub time_ps: TimePs,
    pub seq: u64,
    pub kind: E,
}

/// The calendar's overflow (events more than about 1.1 s ahead): an implicit 4-ary
/// min-heap with keys (time << 64 | sequence) in one array and payloads in another:
/// sifting touches only the dense key array (four keys per cache line), and a node's four
/// children share one or two lines.
struct QuadHeap<E> {
    keys: Vec<u128>,
    vals: Vec<E>,
}

impl<E: Copy> QuadHeap<E> {
    fn new() -> Self {
        QuadHeap {
            keys: Vec::with_capacity(1 << 12),
            vals: Vec::with_capacity(1 << 12),
        }
    }

    #[inline]
    fn push(&mut self, key: u128, val: E) {
        let mut i = self.keys.len();
        self.keys.push(key);
        self.vals.push(val);
        while i > 0 {
            let parent = (i - 1) / 4;
            if self.keys[parent] <= key {
                break;
            }
            self.keys[i] = self.keys[parent];
            self.vals[i] = self.vals[parent];
            i = parent;
        }
        self.keys[i] = key;
        self.vals[i] = val;
    }

    #[inline]
    fn peek_key(&self) -> Option<u128> {
        self.keys.first().copied()
    }

    #[inline]
    fn pop(&mut self) -> Option<(u128, E)> {
        let n = self.keys.len();
        if n == 0 {
            return None;
        }
        let top = (self.keys[0], self.vals[0]);
        let last_key = self.keys.pop().unwrap();
        let last_val = self.vals.pop().unwrap();
        let n = n - 1;
        if n == 0 {
            return Some(top);
        }
        let mut i = 0;
        loop {
            let first = 4 * i + 1;
            if first >= n {
                break;
            }
            let (best, best_key) = if first + 4 <= n {
                // All four children: a tournament of two pairs, so the comparisons do not
                // wait on each other (fewer stalls on mispredicted branches).
                let k = &self.keys[first..first + 4];
                let (a, ka) = if k[1] < k[0] { (1, k[1]) } else { (0, k[0]) };
                let (b, kb) = if k[3] < k[2] { (3, k[3]) } else { (2, k[2]) };
                if kb < ka {
                    (first + b, kb)
                } else {
                    (first + a, ka)
                }
            } else {
                let mut best = first;
                let mut best_key = self.keys[first];
                for c in first + 1..n {
                    let k = self.keys[c];
                    if k < best_key {
                        best = c;
                        best_key = k;
                    }
                }
                (best, best_key)
            };
            if last_key <= best_key {
                break;
            }
            self.keys[i] = best_key;
            self.vals[i] = self.vals[best];
            i = best;
        }
        self.keys[i] = last_key;
        self.vals[i] = last_val;
        Some(top)
    }
}

/// Width of one calendar bucket: 2^25 ps, about 33.5 us. Events due beyond the current
/// bucket (TCP retransmission and delayed-ACK timers, application gaps) wait in a bucket,
/// so the near future (`near::NearFuture`) holds only the current one and stays in cache.
/// Measured on the 1,984-node memcached array over TCP: 2^25 beat 2^22, 2^24, 2^26 and
/// 2^28 (benchmarks/RESULTS.md).
const BUCKET_SHIFT: u32 = 25;
/// Buckets in the calendar ring of a whole run's queue: 32,768 x 33.5 us, about 1.1 s
/// ahead. Later events wait in an overflow heap.
const RING_BUCKETS: usize = 32768;

/// One ordered queue with its current time: the whole event queue of an ordinary run, or
/// one partition's in a partitioned run (`partitioned`). `pop` never returns an event
/// earlier than the previous one; scheduling into the past is a model bug and is counted,
/// then clamped.
///
/// Two levels: the near future for events before `near_until_ps` (fine buckets, sorted
/// as they come up), and a calendar of buckets (then an overflow heap) for the rest. A
/// bucket is moved into the near future whole once the near future is empty, so the pop
/// order is exactly the (time, sequence) order of one sorted list: results do not depend
/// on the calendar.
pub(super) struct Lane<E> {
    near: NearFuture<E>,
    /// Every event due before this time is in `near`; later ones are in the calendar.
    /// Always a multiple of the bucket width.
    near_until_ps: TimePs,
    ring: Vec<Vec<(u128, E)>>,
    ring_len: usize,
    /// Emptied bucket vectors, reused so that only non-empty buckets hold memory.
    spare: Vec<Vec<(u128, E)>>,
    overflow: QuadHeap<E>,
    next_seq: u64,
    now_ps: TimePs,
    popped: u64,
    /// Count of attempts to schedule before `now` (must stay 0; reported as an invariant).
    pub past_schedules: u64,
}

impl<E: Copy> Lane<E> {
    pub fn new() -> Self {
        Self::with_sizes(near::FINE_SHIFT, RING_BUCKETS)
    }

    /// A lane whose near future's buckets are `2^fine_shift` ps wide and whose calendar
    /// has `ring_buckets` (a power of two) buckets.
    pub fn with_sizes(fine_shift: u32, ring_buckets: usize) -> Self {
        assert!(ring_buckets.is_power_of_two());
        Lane {
            near: NearFuture::new(BUCKET_SHIFT, fine_shift),
            near_until_ps: 0,
            ring: (0..ring_buckets).map(|_| Vec::new()).collect(),
            ring_len: 0,
            spare: Vec::new(),
            overflow: QuadHeap::new(),
            next_seq: 0,
            now_ps: 0,
            popped: 0,
            past_schedules: 0,
        }
    }

    #[inline]
    pub fn now(&self) -> TimePs {
        self.now_ps
    }

    #[inline]
    pub fn schedule(&mut self, time_ps: TimePs, kind: E) {
        let t = if time_ps < self.now_ps {
            self.past_schedules += 1;
            self.now_ps
        } else {
            time_ps
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        let key = ((t as u128) << 64) | seq as u128;
        if t < self.near_until_ps {
            self.near.push(key, kind);
        } else if (t >> BUCKET_SHIFT) - (self.near_until_ps >> BUCKET_SHIFT)
            < self.ring.len() as u64
        {
            let slot = (t >> BUCKET_SHIFT) as usize & (self.ring.len() - 1);
            let bucket = &mut self.ring[slot];
            if bucket.capacity() == 0 {
                if let Some(v) = self.spare.pop() {
                    *bucket = v;
                }
            }
            bucket.push((key, kind));
            self.ring_len += 1;
        } else {
            self.overflow.push(key, kind);
        }
    }

    /// Moves calendar buckets into the near future until it holds the earliest event of
    /// all (or nothing is left).
    #[inline(always)]
    fn settle(&mut self) {
        // Everything in `near` is due before `near_until_ps`: it needs the next bucket
        // only when it is empty.
        while self.near.is_empty() {
            if self.ring_len == 0 {
                // Skip the empty ring: jump to the overflow's first bucket, if any.
                match self.overflow.peek_key() {
                    None => return,
                    Some(k) => {
                        let t = (k >> 64) as u64;
                        self.near_until_ps =
                            self.near_until_ps.max((t >> BUCKET_SHIFT) << BUCKET_SHIFT);
                    }
                }
            }
            let bucket = self.near_until_ps >> BUCKET_SHIFT;
            self.near.restart(bucket << BUCKET_SHIFT);
            let slot = bucket as usize & (self.ring.len() - 1);
            let mut events = std::mem::take(&mut self.ring[slot]);
            self.ring_len -= events.len();
            for (key, kind) in events.drain(..) {
                self.near.push(key, kind);
            }
            if events.capacity() > 0 {
                self.spare.push(events);
            }
            while let Some(k) = self.overflow.peek_key() {
                if ((k >> 64) as u64 >> BUCKET_SHIFT) > bucket {
                    break;
                }
                let (key, kind) = self.overflow.pop().unwrap();
                self.near.push(key, kind);
            }
            // The last bucket ends past u64::MAX: then everything belongs in the near future.
            self.near_until_ps = (bucket + 1)
                .checked_shl(BUCKET_SHIFT)
                .filter(|&t| t > bucket << BUCKET_SHIFT)
                .unwrap_or(TimePs::MAX);
        }
    }

    /// Pops the next event if it is due at or before `until_ps`, advancing `now`.
    #[inline(always)]
    pub fn pop_until(&mut self, until_ps: TimePs) -> Option<Event<E>> {
        self.settle();
        let k = self.near.peek_key()?;
        if (k >> 64) as u64 > until_ps {
            return None;
        }
        let (k, kind) = self.near.pop().unwrap();
        let e = Event {
            time_ps: (k >> 64) as u64,
            seq: k as u64,
            kind,
        };
        debug_assert!(e.time_ps >= self.now_ps);
        self.now_ps = e.time_ps;
        self.popped += 1;
        Some(e)
    }

    /// Moves time forward to `t` when no event is due before it (end of a run slice).
    pub fn advance_to(&mut self, t: TimePs) {
        if t > self.now_ps {
            self.now_ps = t;
        }
    }

    /// When the next event is due, if any is queued.
    pub fn next_time_ps(&mut self) -> Option<TimePs> {
        self.settle();
        self.near.peek_key().map(|k| (k >> 64) as u64)
    }
    pub fn len(&self) -> usize {
        self.near.len() + self.ring_len + self.overflow.keys.len()
    }
    pub fn events_processed(&self) -> u64 {
        self.popped
    }

    /// What the next event is, without taking it (used to prefetch its data). A hint: a
    /// calendar bucket not yet moved into the near future may hold an earlier one.
    #[inline]
    pub fn peek_kind(&self) -> Option<E> {
        self.near.peek().0
    }

    /// The event after the next one, when the near future's current bucket holds it, for
    /// prefetching two events ahead. A hint like `peek_kind`.
    #[inline]
    pub fn peek_second_kind(&self) -> Option<E> {
        self.near.peek().1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for a caller's event type.
    #[derive(Clone, Copy, Debug, PartialEq)]
    enum EventKind {
        App { app: u32, tag: u32 },
        Sample,
    }

    #[test]
    fn pops_in_time_then_insertion_order() {
        let mut q = Lane::new();
        q.schedule(50, EventKind::App { app: 0, tag: 1 });
        q.schedule(10, EventKind::App { app: 0, tag: 2 });
        q.schedule(50, EventKind::App { app: 0, tag: 3 });
        q.schedule(10, EventKind::App { app: 0, tag: 4 });
        let tags: Vec<u32> = std::iter::from_fn(|| q.pop_until(u64::MAX))
            .map(|e| match e.kind {
                EventKind::App { tag, .. } => tag,
                EventKind::Sample => unreachable!(),
            })
            .collect();
        assert_eq!(tags, vec![2, 4, 1, 3]);
        assert_eq!(q.now(), 50);
    }

    #[test]
    fn time_never_goes_backwards_and_past_is_counted() {
        let mut q = Lane::new();
        q.schedule(100, EventKind::Sample);
        q.pop_until(u64::MAX);
        q.schedule(40, EventKind::Sample);
        let e = q.pop_until(u64::MAX).unwrap();
        assert_eq!(e.time_ps, 100);
        assert_eq!(q.past_schedules, 1);
    }

    #[test]
    fn matches_a_sorted_order_under_random_interleaving() {
        use rand::Rng;
        let mut rng = crate::engine::rng::stream(9, 0, 0);
        let mut q = Lane::new();
        let mut popped = vec![];
        for round in 0..2000u32 {
            for _ in 0..rng.random_range(0..4) {
                let t = q.now() + rng.random_range(0..50u64);
                q.schedule(t, EventKind::App { app: round, tag: 0 });
            }
            if let Some(e) = q.pop_until(u64::MAX) {
                popped.push((e.time_ps, e.seq));
            }
        }
        while let Some(e) = q.pop_until(u64::MAX) {
            popped.push((e.time_ps, e.seq));
        }
        let mut sorted = popped.clone();
        sorted.sort();
        assert_eq!(popped, sorted);
    }

    #[test]
    fn calendar_and_overflow_keep_exact_order() {
        // A whole run's lane, a partition lane's (wider fine buckets, a shorter ring) and a
        // lane with a four-bucket ring whose events are mostly in the overflow heap.
        for (fine_shift, ring) in [(near::FINE_SHIFT, RING_BUCKETS), (17, 4096), (20, 4)] {
            exact_order_with(Lane::with_sizes(fine_shift, ring));
        }
    }

    fn exact_order_with(mut q: Lane<EventKind>) {
        // Delays from picoseconds to seconds: the near future, calendar buckets, a wrapped ring
        // and the overflow heap all take part; the pop order must be the sorted order.
        use rand::Rng;
        let mut rng = crate::engine::rng::stream(11, 0, 0);
        let mut popped = vec![];
        let mut scheduled = 0usize;
        for round in 0..20_000u32 {
            for _ in 0..rng.random_range(0..3) {
                let scale = [10u64, 1 << 20, 1 << 30, 1 << 38, 1 << 42][rng.random_range(0..5)];
                let t = q.now() + rng.random_range(0..scale);
                q.schedule(t, EventKind::App { app: round, tag: 0 });
                scheduled += 1;
            }
            assert_eq!(q.len(), scheduled - popped.len());
            if let Some(e) = q.pop_until(q.now() + (1 << 29)) {
                popped.push((e.time_ps, e.seq));
            }
        }
        while let Some(e) = q.pop_until(u64::MAX) {
            popped.push((e.time_ps, e.seq));
        }
        assert_eq!(popped.len(), scheduled);
        assert_eq!(q.len(), 0);
        let mut sorted = popped.clone();
        sorted.sort();
        assert_eq!(popped, sorted);
    }

    #[test]
    fn events_at_the_end_of_time_are_kept() {
        let mut q = Lane::new();
        q.schedule(u64::MAX, EventKind::App { app: 0, tag: 1 });
        q.schedule(u64::MAX - 5, EventKind::App { app: 0, tag: 2 });
        q.schedule(7, EventKind::App { app: 0, tag: 3 });
        let times: Vec<u64> = std::iter::from_fn(|| q.pop_until(u64::MAX))
            .map(|e| e.time_ps)
            .collect();
        assert_eq!(times, vec![7, u64::MAX - 5, u64::MAX]);
        q.schedule(u64::MAX, EventKind::Sample);
        assert_eq!(q.pop_until(u64::MAX).map(|e| e.time_ps), Some(u64::MAX));
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn pop_until_respects_horizon() {
        let mut q = Lane::new();
        q.schedule(100, EventKind::Sample);
        assert!(q.pop_until(99).is_none());
        assert!(q.pop_until(100).is_some());
    }

    #[test]
    fn peek_second_names_the_event_after_the_next() {
        #[derive(Clone, Copy, Debug, PartialEq)]
        struct Id(u32);
        let mut q = Lane::new();
        // Times within one fine bucket of the near future; a scrambled order.
        for i in 0..200u32 {
            q.schedule(u64::from((i * 7919) % 1000), Id(i));
        }
        while let Some(first) = q.pop_until(u64::MAX) {
            let (next, after) = (q.peek_kind(), q.peek_second_kind());
            let Some(second) = q.pop_until(u64::MAX) else {
                assert!(next.is_none() && after.is_none());
                break;
            };
            assert_eq!(next, Some(second.kind), "after {first:?}");
            assert_eq!(after, q.peek_kind(), "after {second:?}");
        }
    }
}
