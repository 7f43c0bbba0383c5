//! Long-lived flows between fixed pairs: a permutation (every host sends to one other and
//! receives from one other) or all-to-all. Flows start together at time 0; a flow of
//! "infinite" size sends until the run ends.

use super::AppSched;
use super::Ctx;
use crate::transport::HostPath;

/// `[workload]` parameters of kinds "permutation", "all_to_all" and "many_to_one" (defaults are filled in by config::resolve).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Bytes per flow, or "infinite" (default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<crate::workload::FlowSize>,
    /// DSCP of flow i is dscp[i % len] (default: 0 for every flow).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dscp: Option<Vec<i64>>,
    /// many_to_one: the senders (default: every host but the destination).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sources: Option<Vec<i64>>,
    /// many_to_one: the receiver (default 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination: Option<crate::workload::Destination>,
}
use crate::engine::NEVER;
use crate::metrics::FlowRecord;

pub struct LongLived {
    pub pairs: Vec<(u32, u32)>,
    /// Bytes per flow; None for flows that never end.
    pub size: Option<u64>,
    /// DSCP of flow i is dscp[i % len] (empty: 0).
    pub dscp: Vec<u8>,
    first_conn: u32,
    first_rec: u32,
    remaining: usize,
}

/// What an application writes to stand for an endless stream (larger than any run moves).
const ENDLESS_BYTES: u64 = 1 << 60;

impl LongLived {
    pub fn new(pairs: Vec<(u32, u32)>, size: Option<u64>, dscp: Vec<u8>) -> Self {
        LongLived {
            pairs,
            size,
            dscp,
            first_conn: 0,
            first_rec: 0,
            remaining: 0,
        }
    }

    pub fn start(&mut self, id: u32, ctx: &mut Ctx<impl AppSched>) {
        self.first_rec = ctx.metrics.flows.len() as u32;
        self.remaining = self.pairs.len();
        if self.size.is_some() {
            *ctx.active += 1;
        }
        let mut conns = Vec::with_capacity(self.pairs.len());
        for (i, &(s, d)) in self.pairs.iter().enumerate() {
            let conn = ctx.tcp.open(s, d, id, id);
            let dscp = if self.dscp.is_empty() {
                0
            } else {
                self.dscp[i % self.dscp.len()]
            };
            ctx.tcp.set_dscp(conn, dscp);
            conns.push(conn);
            let size = self.size.unwrap_or(0);
            let ideal_ps = if size > 0 {
                ctx.net
                    .ideal_transfer_ps(s, d, size, ctx.tcp.params().mss_bytes)
            } else {
                0
            };
            ctx.metrics.flows.push(FlowRecord {
                flow_id: conn,
                src: s,
                dst: d,
                size_bytes: size,
                start_ps: ctx.ev.now(),
                end_ps: NEVER,
                bytes_received: 0,
                ideal_ps,
                dscp,
                tcp: true,
            });
        }
        self.first_conn = conns.first().copied().unwrap_or(0);
        for c in conns {
            ctx.tcp.write(
                &mut HostPath::new(ctx.net, ctx.hosts, ctx.ev),
                c,
                self.size.unwrap_or(ENDLESS_BYTES),
            );
        }
    }

    pub fn on_delivered(&mut self, conn: u32, total: u64, ctx: &mut Ctx<impl AppSched>) {
        let Some(i) = conn
            .checked_sub(self.first_conn)
            .filter(|&i| (i as usize) < self.pairs.len())
        else {
            return;
        };
        let f = &mut ctx.metrics.flows[(self.first_rec + i) as usize];
        f.bytes_received = total;
        if let Some(size) = self.size {
            if total >= size && f.end_ps == NEVER {
                f.end_ps = ctx.ev.now();
                self.remaining -= 1;
                if self.remaining == 0 {
                    *ctx.active -= 1;
                }
            }
        }
    }
}

/// No results of its own (the flows, hosts and links tables show its traffic).
impl crate::metrics::report::Report for LongLived {}
