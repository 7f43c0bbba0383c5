//! The `slowdown` table: flow completion time over the ideal on an empty network
//! (`Network::ideal_transfer_ps`), by flow size, as transports are compared in the papers
//! that judge them (HPCC, Homa, NDP): for each decade of flow size, how many flows started
//! and finished, and the median, 99th percentile and mean slowdown of those that finished.
//! Flows still running at the end are counted but not ranked (a short run favours the
//! flows that finish, so `completed` says how far to trust a bucket).

use super::{FlowRecord, Metrics};
use crate::engine::NEVER;
use crate::table::{Column, Table};

/// Bucket edges in bytes: [0, 10 KB), [10 KB, 100 KB), ... [100 MB, endless).
const EDGES: [u64; 5] = [10_000, 100_000, 1_000_000, 10_000_000, 100_000_000];

/// The value at quantile `q` of sorted `v` (nearest rank); NaN if empty.
fn quantile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

/// The bucket a size falls in.
fn bucket(size: u64) -> usize {
    EDGES.iter().position(|&e| size < e).unwrap_or(EDGES.len())
}

pub fn slowdown_table(m: &Metrics) -> Table {
    let n = EDGES.len() + 1;
    let mut started = vec![0i64; n];
    let mut done: Vec<Vec<f64>> = vec![Vec::new(); n];
    let sized = |r: &&FlowRecord| r.size_bytes > 0 && r.ideal_ps > 0;
    for r in m.flow_rows().iter().filter(sized) {
        let b = bucket(r.size_bytes);
        started[b] += 1;
        if r.end_ps != NEVER {
            done[b].push((r.end_ps - r.start_ps) as f64 / r.ideal_ps as f64);
        }
    }
    let rows: Vec<usize> = (0..n).filter(|&b| started[b] > 0).collect();
    for d in &mut done {
        d.sort_by(f64::total_cmp);
    }
    let lo = |b: usize| if b == 0 { 0 } else { EDGES[b - 1] as i64 };
    let hi = |b: usize| EDGES.get(b).map_or(-1, |&e| e as i64);
    let col = |f: &dyn Fn(usize) -> f64| Column::F64(rows.iter().map(|&b| f(b)).collect());
    let int = |f: &dyn Fn(usize) -> i64| Column::I64(rows.iter().map(|&b| f(b)).collect());
    Table {
        name: "slowdown",
        columns: vec![
            ("size_from_bytes", int(&lo)),
            ("size_to_bytes", int(&hi)),
            ("flows", int(&|b| started[b])),
            ("completed", int(&|b| done[b].len() as i64)),
            ("p50", col(&|b| quantile(&done[b], 0.5))),
            ("p99", col(&|b| quantile(&done[b], 0.99))),
            (
                "mean",
                col(&|b| done[b].iter().sum::<f64>() / done[b].len() as f64),
            ),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(size: u64, fct: u64, ideal: u64) -> FlowRecord {
        FlowRecord {
            flow_id: 0,
            src: 0,
            dst: 1,
            size_bytes: size,
            start_ps: 100,
            end_ps: if fct == 0 { NEVER } else { 100 + fct },
            bytes_received: 0,
            ideal_ps: ideal,
            dscp: 0,
            tcp: true,
        }
    }

    #[test]
    fn flows_fall_in_decades_and_rank_by_nearest_rank() {
        let mut m = Metrics::default();
        // Four small flows of slowdown 1, 2, 3, 4; one 50 KB flow unfinished; one 2 GB.
        for s in 1..=4 {
            m.flows.push(flow(5_000, 10 * s, 10));
        }
        m.flows.push(flow(50_000, 0, 10));
        m.flows.push(flow(2_000_000_000, 30, 10));
        let t = slowdown_table(&m);
        let get = |name: &str| t.columns.iter().find(|c| c.0 == name).unwrap().1.clone();
        let Column::I64(from) = get("size_from_bytes") else {
            panic!()
        };
        assert_eq!(from, vec![0, 10_000, 100_000_000]);
        let Column::I64(to) = get("size_to_bytes") else {
            panic!()
        };
        assert_eq!(to, vec![10_000, 100_000, -1]);
        let Column::I64(done) = get("completed") else {
            panic!()
        };
        assert_eq!(done, vec![4, 0, 1]);
        let Column::F64(p50) = get("p50") else {
            panic!()
        };
        assert_eq!(p50[0], 2.0);
        assert!(p50[1].is_nan());
        let Column::F64(p99) = get("p99") else {
            panic!()
        };
        assert_eq!((p99[0], p99[2]), (4.0, 3.0));
        let Column::F64(mean) = get("mean") else {
            panic!()
        };
        assert_eq!(mean[0], 2.5);
    }
}
