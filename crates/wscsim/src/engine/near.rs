//! The near future of an event lane: one calendar bucket's span (`queue::BUCKET_SHIFT`,
//! about 33.5 us) cut into fine buckets of about 16 ns. Events are appended to their fine
//! bucket unsorted; a bucket is sorted once, when it becomes the current one, and events
//! scheduled into the current bucket are inserted in place. Popping is then reading the
//! next element of a small sorted vector: no sift through a heap, whose unpredictable
//! branches cost about a third of a hop on a k=8 fat tree. The current bucket is sorted
//! least key first and read from a cursor, so that an event scheduled after all it holds
//! (the common case: many hosts acting at the same instant) is an append, not a shift of
//! the whole bucket (which cost a quarter of an NDP run with 1,024 hosts in step).
//!
//! Order is exact: within a bucket events are sorted by their whole key (time, then
//! sequence), and buckets partition time.

/// Width of a fine bucket of a whole run's queue: 2^14 ps, about 16.4 ns.
pub(super) const FINE_SHIFT: u32 = 14;

pub(super) struct NearFuture<E> {
    /// Time of the first fine bucket's start (events before it go to the first bucket,
    /// which is still exact: they are earlier than everything else held).
    start_ps: u64,
    /// Width of a fine bucket, as a power of two of picoseconds.
    fine_shift: u32,
    buckets: Vec<Vec<(u128, E)>>,
    /// One bit per non-empty bucket.
    nonempty: Vec<u64>,
    /// The current bucket: the first non-empty one, sorted with its least key first; its
    /// events before `head` have been popped.
    cur: usize,
    head: usize,
    len: usize,
    /// Buffers of emptied buckets, lent to the next buckets that fill: only non-empty
    /// buckets hold memory (each bucket keeping its own would hold the largest it ever
    /// held: 130 MB more on a k=32 fat tree).
    spare: Vec<Vec<(u128, E)>>,
}

impl<E: Copy> NearFuture<E> {
    /// Fine buckets of `2^fine_shift` ps covering a span of `2^span_shift` ps.
    pub fn new(span_shift: u32, fine_shift: u32) -> Self {
        let n = 1usize << (span_shift - fine_shift);
        NearFuture {
            start_ps: 0,
            fine_shift,
            buckets: (0..n).map(|_| Vec::new()).collect(),
            nonempty: vec![0; n.div_ceil(64)],
            cur: 0,
            head: 0,
            len: 0,
            spare: Vec::new(),
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Starts a new span at `start_ps` (only when empty).
    pub fn restart(&mut self, start_ps: u64) {
        debug_assert!(self.is_empty());
        self.start_ps = start_ps;
        self.cur = 0;
        self.head = 0;
    }

    #[inline]
    fn index(&self, key: u128) -> usize {
        let t = (key >> 64) as u64;
        let i = (t.saturating_sub(self.start_ps) >> self.fine_shift) as usize;
        i.min(self.buckets.len() - 1)
    }

    #[inline(always)]
    pub fn push(&mut self, key: u128, val: E) {
        let i = self.index(key);
        if self.buckets[i].capacity() == 0 {
            if let Some(v) = self.spare.pop() {
                self.buckets[i] = v;
            }
        }
        self.len += 1;
        if self.len == 1 || i < self.cur {
            // Earlier than everything held (the buckets before `cur` are empty, and so is
            // `cur` itself when nothing is held). The bucket left keeps only what it has
            // not yet given out.
            let head = std::mem::take(&mut self.head);
            self.buckets[self.cur].drain(..head);
            self.cur = i;
            self.buckets[i].push((key, val));
            self.nonempty[i >> 6] |= 1 << (i & 63);
            return;
        }
        let b = &mut self.buckets[i];
        if i == self.cur {
            // Keep the current bucket sorted, least key first: usually an append.
            if b.last().is_some_and(|&(k, _)| k > key) {
                let at = self.head + b[self.head..].partition_point(|&(k, _)| k < key);
                b.insert(at, (key, val));
            } else {
                b.push((key, val));
            }
        } else {
            b.push((key, val));
            self.nonempty[i >> 6] |= 1 << (i & 63);
        }
    }

    /// The least key held.
    #[inline]
    pub fn peek_key(&self) -> Option<u128> {
        self.buckets[self.cur].get(self.head).map(|&(k, _)| k)
    }

    /// The least event held, and the one after it if it is in the same bucket.
    #[inline]
    pub fn peek(&self) -> (Option<E>, Option<E>) {
        let b = &self.buckets[self.cur];
        (
            b.get(self.head).map(|&(_, v)| v),
            b.get(self.head + 1).map(|&(_, v)| v),
        )
    }

    #[inline(always)]
    pub fn pop(&mut self) -> Option<(u128, E)> {
        let top = *self.buckets[self.cur].get(self.head)?;
        self.head += 1;
        self.len -= 1;
        if self.head == self.buckets[self.cur].len() {
            let c = self.cur;
            self.nonempty[c >> 6] &= !(1 << (c & 63));
            let mut emptied = std::mem::take(&mut self.buckets[c]);
            emptied.clear();
            self.spare.push(emptied);
            self.head = 0;
            if self.len > 0 {
                self.advance();
            }
        }
        Some(top)
    }

    /// Moves `cur` to the next non-empty bucket and sorts it, least key first.
    #[inline(never)]
    fn advance(&mut self) {
        let mut w = self.cur >> 6;
        let mut bits = self.nonempty[w];
        while bits == 0 {
            w += 1;
            bits = self.nonempty[w];
        }
        self.cur = (w << 6) + bits.trailing_zeros() as usize;
        self.buckets[self.cur].sort_unstable_by_key(|e| e.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_key_order_with_pushes_between_pops() {
        let mut q = NearFuture::new(25, FINE_SHIFT);
        q.restart(1 << 25);
        let mut seq = 0u128;
        let mut key = |t: u64| {
            seq += 1;
            ((t as u128) << 64) | seq
        };
        let mut last = 0u128;
        let mut x = 12345u64;
        let mut now = 1u64 << 25;
        for round in 0..20_000 {
            // Pseudo-random times from now to about 5 us ahead, many in the same bucket,
            // some before the span's start (clamped into the first bucket).
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let ahead = (x >> 33) % 5_000_000 * (u64::from(round % 3 != 0));
            q.push(key(now + ahead), round);
            if round % 2 == 1 {
                let (k, _) = q.pop().unwrap();
                assert!(k > last, "keys in order");
                last = k;
                now = (k >> 64) as u64;
            }
        }
        while let Some((k, _)) = q.pop() {
            assert!(k > last);
            last = k;
        }
        assert!(q.is_empty() && q.peek_key().is_none());
    }
}
