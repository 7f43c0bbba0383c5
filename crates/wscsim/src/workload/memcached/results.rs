//! What a memcached run hands back: the requests table (one row per request, with its
//! client, server, kind, size, hit and latency, and the switches between its client and
//! server), and its headline figures (latency percentiles by kind and by hop class).

use super::*;
use crate::metrics::{Column, Table};

/// One request as the results table reports it: 32 bytes (a full-length run keeps tens
/// of millions), its kind and hit packed above its request size.
#[derive(Clone, Copy, Debug)]
pub struct RequestRecord {
    pub client: u32,
    pub server: u32,
    pub start_ps: TimePs,
    pub end_ps: TimePs,
    /// Request bytes (bits 0-28), kind (`Op` as 0-2, bits 29-30), hit (bit 31).
    bytes_op_hit: u32,
    pub response_bytes: u32,
}

const REQUEST_BYTES_BITS: u32 = 29;
const HIT_BIT: u32 = 1 << 31;

impl RequestRecord {
    /// A request sent at `start_ps`, not yet answered.
    pub fn new(client: u32, server: u32, op: Op, start_ps: TimePs, request_bytes: u32) -> Self {
        assert!(
            request_bytes < 1 << REQUEST_BYTES_BITS,
            "a request of {request_bytes} bytes"
        );
        let op_bits = match op {
            Op::Get => 0,
            Op::Set => 1,
            Op::Delete => 2,
        };
        RequestRecord {
            client,
            server,
            start_ps,
            end_ps: NEVER,
            bytes_op_hit: request_bytes | op_bits << REQUEST_BYTES_BITS,
            response_bytes: 0,
        }
    }

    pub fn request_bytes(&self) -> u32 {
        self.bytes_op_hit & ((1 << REQUEST_BYTES_BITS) - 1)
    }

    pub fn op(&self) -> Op {
        match self.kind_code() {
            0 => Op::Get,
            1 => Op::Set,
            _ => Op::Delete,
        }
    }

    /// The kind as the requests table codes it (0 get, 1 set, 2 delete: `KINDS`).
    fn kind_code(&self) -> u8 {
        ((self.bytes_op_hit & !HIT_BIT) >> REQUEST_BYTES_BITS) as u8
    }

    /// A get that found its key, or a delete that removed one.
    pub fn hit(&self) -> bool {
        self.bytes_op_hit & HIT_BIT != 0
    }

    pub(super) fn set_hit(&mut self, hit: bool) {
        self.bytes_op_hit = (self.bytes_op_hit & !HIT_BIT) | if hit { HIT_BIT } else { 0 };
    }
}

/// A request or response in flight: its record and how far it has arrived.
/// The kinds of request, by the code `RequestRecord` keeps and the table's `kind` column.
pub(super) const KINDS: [&str; 3] = ["get", "set", "delete"];

/// The requests table's columns, filled row by row in any order.
pub(super) struct RequestColumns {
    client: Vec<i32>,
    server: Vec<i32>,
    switches: Vec<i32>,
    hops_class: Vec<u8>,
    kind: Vec<u8>,
    hit: Vec<i32>,
    request_bytes: Vec<i32>,
    response_bytes: Vec<i32>,
    start_us: Vec<f64>,
    latency_us: Vec<f64>,
}

/// Switches between each client and server that exchanged requests: one path walk per
/// pair, not per request (full-length runs have tens of millions of requests over a few
/// hundred thousand pairs), and what the requests table needs of the network, so that
/// the network can be released before the table is built.
pub struct PairSwitches(std::collections::HashMap<(u32, u32), u32>);

impl PairSwitches {
    pub fn of(records: &[RequestRecord], net: &crate::net::Network) -> Self {
        let mut map = std::collections::HashMap::new();
        for x in records {
            map.entry((x.client, x.server))
                .or_insert_with(|| net.switches_on_path(x.client, x.server));
        }
        PairSwitches(map)
    }

    fn get(&self, client: u32, server: u32) -> u32 {
        self.0[&(client, server)]
    }
}

impl RequestColumns {
    /// `n` rows of zeros: allocated zeroed, so a page is only touched when its rows are
    /// written.
    fn zeroed(n: usize) -> Self {
        RequestColumns {
            client: vec![0; n],
            server: vec![0; n],
            switches: vec![0; n],
            hops_class: vec![0; n],
            kind: vec![0; n],
            hit: vec![0; n],
            request_bytes: vec![0; n],
            response_bytes: vec![0; n],
            start_us: vec![0.0; n],
            latency_us: vec![0.0; n],
        }
    }

    fn set(&mut self, i: usize, x: &RequestRecord, pairs: &PairSwitches) {
        let switches = pairs.get(x.client, x.server);
        self.client[i] = x.client as i32;
        self.server[i] = x.server as i32;
        self.switches[i] = switches as i32;
        self.hops_class[i] = match switches {
            0 | 1 => 0,
            2 | 3 => 1,
            _ => 2,
        };
        self.kind[i] = x.kind_code();
        self.hit[i] = x.hit() as i32;
        self.request_bytes[i] = x.request_bytes() as i32;
        self.response_bytes[i] = x.response_bytes as i32;
        self.start_us[i] = crate::metrics::us(x.start_ps);
        self.latency_us[i] = if x.end_ps == crate::engine::NEVER {
            f64::NAN
        } else {
            crate::metrics::us(x.end_ps - x.start_ps)
        };
    }

    fn into_table(self) -> Table {
        Table {
            name: "requests",
            columns: vec![
                ("client", Column::I32(self.client)),
                ("server", Column::I32(self.server)),
                ("switches", Column::I32(self.switches)),
                (
                    "hops_class",
                    Column::Cat {
                        levels: &HOP_CLASSES,
                        codes: self.hops_class,
                    },
                ),
                (
                    "kind",
                    Column::Cat {
                        levels: &KINDS,
                        codes: self.kind,
                    },
                ),
                ("hit", Column::I32(self.hit)),
                ("request_bytes", Column::I32(self.request_bytes)),
                ("response_bytes", Column::I32(self.response_bytes)),
                ("start_us", Column::F64(self.start_us)),
                ("latency_us", Column::F64(self.latency_us)),
            ],
        }
    }
}

/// One row per memcached request: who asked whom, across how many switches, what, how big,
/// and its latency (NaN if it never completed, as a lost UDP request).
pub fn requests_table(r: &[RequestRecord], net: &crate::net::Network) -> Table {
    let pairs = PairSwitches::of(r, net);
    let mut cols = RequestColumns::zeroed(r.len());
    for (i, x) in r.iter().enumerate() {
        cols.set(i, x, &pairs);
    }
    cols.into_table()
}

/// Records between returns of the records' memory while `take_requests_table` runs.
pub(super) const RETURN_EVERY: usize = 1 << 20;

/// The requests table, consuming the records: rows are taken off the end and written into
/// the columns from the back, and the records' memory is given back as they go (shrinking
/// a large allocation returns its pages in place), so the records and the table are never
/// held whole at once: a full-length run has tens of millions of each.
pub fn take_requests_table(mut r: Vec<RequestRecord>, pairs: &PairSwitches) -> Table {
    let mut cols = RequestColumns::zeroed(r.len());
    while let Some(x) = r.pop() {
        let i = r.len();
        cols.set(i, &x, pairs);
        if i.is_multiple_of(RETURN_EVERY) {
            r.shrink_to_fit();
        }
    }
    cols.into_table()
}

/// Hop classes of a request by the switches it crosses (DIABLO Figure 10): in the rack,
/// within the array, across arrays.
pub const HOP_CLASSES: [&str; 3] = ["local", "same_array", "cross_array"];

/// The headline figures of memcached requests: how many completed, mean and percentile
/// latencies.
pub fn headline(h: &mut serde_json::Map<String, serde_json::Value>, reqs: &[RequestRecord]) {
    if reqs.is_empty() {
        return;
    }
    let done = || {
        reqs.iter()
            .filter(|r| r.end_ps != crate::engine::NEVER)
            .map(|r| r.end_ps - r.start_ps)
    };
    let (n, total_ps) = done().fold((0usize, 0u128), |(n, t), x| (n + 1, t + u128::from(x)));
    h.insert("requests".into(), reqs.len().into());
    h.insert("requests_completed".into(), n.into());
    if n == 0 {
        return;
    }
    // Nearest-rank percentiles, in microseconds.
    let rank = |p: f64| (((p / 100.0) * n as f64).ceil() as usize).clamp(1, n) - 1;
    let at = nth_smallest(done, &[rank(50.0), rank(99.0), rank(99.9)]);
    h.insert(
        "mean_latency_us".into(),
        (total_ps as f64 / n as f64 / 1e6).into(),
    );
    h.insert("p50_latency_us".into(), (at[0] as f64 / 1e6).into());
    h.insert("p99_latency_us".into(), (at[1] as f64 / 1e6).into());
    h.insert("p999_latency_us".into(), (at[2] as f64 / 1e6).into());
}

/// Buckets of `nth_smallest`: exact below 64, then 64 per power of two.
pub(super) const LOG_BUCKETS: usize = 64 + 58 * 64;

/// A value's bucket: increasing with the value.
pub(super) fn log_bucket(x: u64) -> usize {
    if x < 64 {
        return x as usize;
    }
    let e = 63 - x.leading_zeros(); // 6..=63
    64 + (e as usize - 6) * 64 + ((x >> (e - 6)) & 63) as usize
}

/// The values of rank `ranks` (0-based, ascending order) among those `values` yields,
/// without holding them all (tens of millions of latencies): they are counted by bucket,
/// then only the buckets that hold a wanted rank are gathered and sorted.
pub(super) fn nth_smallest<I: Iterator<Item = u64>>(
    values: impl Fn() -> I,
    ranks: &[usize],
) -> Vec<u64> {
    let mut count = vec![0usize; LOG_BUCKETS];
    for x in values() {
        count[log_bucket(x)] += 1;
    }
    // Each rank's bucket and its rank within the bucket.
    let place: Vec<(usize, usize)> = ranks
        .iter()
        .map(|&r| {
            let mut below = 0;
            let b = (0..LOG_BUCKETS)
                .find(|&b| {
                    below += count[b];
                    below > r
                })
                .expect("rank below the count");
            (b, r - (below - count[b]))
        })
        .collect();
    let mut gathered: std::collections::BTreeMap<usize, Vec<u64>> =
        place.iter().map(|&(b, _)| (b, Vec::new())).collect();
    for x in values() {
        if let Some(v) = gathered.get_mut(&log_bucket(x)) {
            v.push(x);
        }
    }
    for v in gathered.values_mut() {
        v.sort_unstable();
    }
    place.iter().map(|&(b, i)| gathered[&b][i]).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn nth_smallest_matches_a_sort() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        let values: Vec<u64> = (0..20_000)
            .map(|i| match i % 3 {
                0 => rng.random_range(0..100),
                1 => rng.random_range(0..5_000_000),
                _ => rng.random_range(0..u64::MAX),
            })
            .collect();
        let mut sorted = values.clone();
        sorted.sort_unstable();
        let ranks = [0, 1, 63, 64, 9_999, 19_800, 19_998, 19_999];
        assert_eq!(
            super::nth_smallest(|| values.iter().copied(), &ranks),
            ranks.iter().map(|&r| sorted[r]).collect::<Vec<_>>()
        );
        let mut last = 0;
        for x in (0..1_000_000u64).chain([u64::MAX / 3, u64::MAX - 1, u64::MAX]) {
            let b = super::log_bucket(x);
            assert!(b >= last && b < super::LOG_BUCKETS);
            last = b;
        }
    }

    #[test]
    fn a_record_keeps_its_kind_hit_and_size_in_32_bytes() {
        use super::{Op, RequestRecord};
        assert_eq!(std::mem::size_of::<RequestRecord>(), 32);
        for op in [Op::Get, Op::Set, Op::Delete] {
            let mut r = RequestRecord::new(1, 2, op, 3, (1 << 29) - 1);
            assert_eq!(
                (r.op(), r.hit(), r.request_bytes()),
                (op, false, (1 << 29) - 1)
            );
            r.set_hit(true);
            assert_eq!(
                (r.op(), r.hit(), r.request_bytes()),
                (op, true, (1 << 29) - 1)
            );
            r.set_hit(false);
            assert_eq!((r.op(), r.hit()), (op, false));
        }
    }
}
