//! What RoCEv2 reports when a run ends (`transport::roce`): the `roce` table (a row per
//! queue pair), the `roce_rates` table (each queue pair's rate as it sent, when
//! `roce.rate_samples` asks) and its headline figures.

use super::*;

impl Roce {
    /// The `roce` table: one row per queue pair (none if the run opened none); and the
    /// `roce_rates` table, when the rates were recorded.
    pub(super) fn report_tables(&self, out: &mut Vec<crate::table::Table>) {
        use crate::table::{Column, Table};
        if self.qps.is_empty() {
            return;
        }
        if self.spec.rate_sample_ps.is_some() {
            let r = &self.rates;
            out.push(Table {
                name: "roce_rates",
                columns: vec![
                    (
                        "time_us",
                        Column::F64(r.iter().map(|x| x.0 as f64 / 1e6).collect()),
                    ),
                    (
                        "qp",
                        Column::I64(r.iter().map(|x| i64::from(x.1)).collect()),
                    ),
                    (
                        "rate_gbps",
                        Column::F64(r.iter().map(|x| x.2 / 1e9).collect()),
                    ),
                ],
            });
        }
        let q = &self.qps;
        let int = |f: &dyn Fn(&Qp) -> i64| Column::I64(q.iter().map(f).collect());
        out.push(Table {
            name: "roce",
            columns: vec![
                ("qp", Column::I64((0..q.len() as i64).collect())),
                ("src", int(&|x| i64::from(x.src))),
                ("dst", int(&|x| i64::from(x.dst))),
                ("size_bytes", int(&|x| x.size as i64)),
                (
                    "start_us",
                    Column::F64(q.iter().map(|x| x.start_ps as f64 / 1e6).collect()),
                ),
                (
                    "fct_us",
                    Column::F64(
                        q.iter()
                            .map(|x| {
                                x.done_ps
                                    .map_or(f64::NAN, |d| (d - x.start_ps) as f64 / 1e6)
                            })
                            .collect(),
                    ),
                ),
                ("acked_bytes", int(&|x| x.acked as i64)),
                (
                    "rate_gbps",
                    Column::F64(q.iter().map(|x| x.rate_bps() / 1e9).collect()),
                ),
            ],
        });
    }

    /// Its headline figures: queue pairs, completions, CNPs, NAKs, timeouts, bytes sent
    /// again, and the percentiles of the round trips the ACKs measured.
    pub(super) fn report_headline(&self, h: &mut serde_json::Map<String, serde_json::Value>) {
        if self.qps.is_empty() {
            return;
        }
        let done = self.qps.iter().filter(|q| q.done_ps.is_some()).count() as u64;
        let s = &self.stats;
        for (k, v) in [
            ("roce_qps", self.qps.len() as u64),
            ("roce_completed", done),
            ("roce_cnps", s.cnps),
            ("roce_naks", s.naks),
            ("roce_timeouts", s.timeouts),
            ("roce_resent_bytes", s.resent_bytes),
        ] {
            h.insert(k.into(), v.into());
        }
        for (k, q) in [
            ("roce_rtt_p50_us", 0.5),
            ("roce_rtt_p99_us", 0.99),
            ("roce_rtt_p999_us", 0.999),
        ] {
            if let Some(us) = self.rtts.quantile_us(q) {
                h.insert(k.into(), us.into());
            }
        }
    }
}
