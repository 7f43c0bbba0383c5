//! Long-lived flows between fixed pairs: a permutation (every host sends to one other and
//! receives from one other) or all-to-all. Flows start together at time 0; a flow of
//! "infinite" size sends until the run ends.

use super::{sources_and_destination, AppSched, Application, AppsBuild, Ctx, FlowSize};
use super::{WorkloadCtx, WorkloadKind};
use crate::check::{err, int_in, ConfigError};
use crate::engine::rng::{family, stream};
use crate::transport::HostPath;
use crate::transport::Note;

/// `[workload]` parameters of kinds "permutation", "all_to_all" and "many_to_one" (defaults are filled in by `long_lived_spec`, below).
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

impl Application for LongLived {
    /// Flows of a finite size end the run when they are done.
    fn ends_by_itself(&self) -> bool {
        self.size.is_some()
    }

    fn start<S: AppSched>(&mut self, id: u32, ctx: &mut Ctx<S>) {
        self.first_rec = ctx.metrics.flows.len() as u32;
        self.remaining = self.pairs.len();
        if self.size.is_some() {
            *ctx.active += 1;
        }
        let mut conns = Vec::with_capacity(self.pairs.len());
        for (i, &(s, d)) in self.pairs.iter().enumerate() {
            let conn = ctx.transports.tcp.open(s, d, id, id);
            let dscp = if self.dscp.is_empty() {
                0
            } else {
                self.dscp[i % self.dscp.len()]
            };
            ctx.transports.tcp.set_dscp(conn, dscp);
            conns.push(conn);
            let size = self.size.unwrap_or(0);
            let ideal_ps = if size > 0 {
                let mss = ctx.transports.tcp.params().mss_bytes;
                let tcp_header = crate::packet::TCP_IP_HEADER_BYTES;
                ctx.net.ideal_transfer_ps((s, d), size, mss, tcp_header)
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
            ctx.transports.tcp.write(
                &mut HostPath::new(ctx.net, ctx.hosts, ctx.ev),
                c,
                self.size.unwrap_or(ENDLESS_BYTES),
            );
        }
    }

    #[inline]
    fn on_note<S: AppSched>(&mut self, note: Note, ctx: &mut Ctx<S>) {
        if let Note::Delivered { conn, total, .. } = note {
            self.on_delivered(conn, total, ctx)
        }
    }
}

/// Long-lived flows resolved.
#[derive(Clone, Debug)]
pub struct LongLivedSpec {
    pub pairs: Vec<(u32, u32)>,
    pub size: Option<u64>,
    pub dscp: Vec<u8>,
}

/// Who sends to whom.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pattern {
    Permutation,
    AllToAll,
    ManyToOne,
}

/// Declares workload kind `$name`: long-lived flows in `$pattern`.
macro_rules! long_lived_kind {
    ($(#[$doc:meta])* $ty:ident, $name:literal, $pattern:expr) => {
        $(#[$doc])*
        pub struct $ty;

        impl WorkloadKind for $ty {
            const NAME: &'static str = $name;
            type Params = Params;
            type Spec = LongLivedSpec;
            type App = LongLived;

            fn resolve(p: &mut Params, ctx: &WorkloadCtx) -> Result<LongLivedSpec, ConfigError> {
                long_lived_spec(p, ctx.n_hosts, $pattern, ctx.seed)
            }

            /// Endless flows: a delivery writes only its own flow's record (the
            /// receiver's). A flow that ends counts down the flows left, which all
            /// partitions share.
            fn runs_in_partitions(spec: &LongLivedSpec) -> bool {
                spec.size.is_none()
            }

            fn applications(spec: LongLivedSpec, _: &mut AppsBuild) -> Vec<LongLived> {
                vec![LongLived::new(spec.pairs, spec.size, spec.dscp)]
            }
        }
    };
}

long_lived_kind!(
    /// Every host sends to one other and receives from one other (a random single cycle).
    Permutation,
    "permutation",
    Pattern::Permutation
);
long_lived_kind!(
    /// Every host sends to every other (at most 1024 hosts).
    AllToAll,
    "all_to_all",
    Pattern::AllToAll
);
long_lived_kind!(
    /// `sources` send to one `destination`.
    ManyToOne,
    "many_to_one",
    Pattern::ManyToOne
);

/// The workload of its kind, checked, with defaults filled in.
fn long_lived_spec(
    w: &mut Params,
    n_hosts: i64,
    pattern: Pattern,
    seed: u64,
) -> Result<LongLivedSpec, ConfigError> {
    let size = match *w.size.get_or_insert(FlowSize::Infinite) {
        FlowSize::Infinite => None,
        FlowSize::Finite(0) => {
            return Err(err(
                "workload.size",
                0,
                "\"infinite\" or a positive size such as \"1MiB\"",
            ))
        }
        FlowSize::Finite(b) => Some(b),
    };
    let n = n_hosts as u32;
    let pairs = if pattern == Pattern::ManyToOne {
        let (sources, dst) =
            sources_and_destination(&mut w.destination, &mut w.sources, n_hosts, false)?;
        let dst = dst.expect("many_to_one has one destination");
        sources.into_iter().map(|s| (s, dst)).collect()
    } else if pattern == Pattern::Permutation {
        // Sattolo's shuffle gives a single cycle: no host sends to itself.
        let mut perm: Vec<u32> = (0..n).collect();
        let mut rng = stream(seed, family::WORKLOAD, 0);
        for i in (1..n as usize).rev() {
            let j = rand::Rng::random_range(&mut rng, 0..i);
            perm.swap(i, j);
        }
        (0..n).map(|i| (i, perm[i as usize])).collect()
    } else {
        if n > 1024 {
            return Err(err(
                "topology",
                format!("{n} hosts"),
                "at most 1024 hosts for all_to_all (n^2 flows)",
            ));
        }
        (0..n)
            .flat_map(|a| (0..n).filter(move |&b| b != a).map(move |b| (a, b)))
            .collect()
    };
    let dscp = match &w.dscp {
        Some(list) if list.is_empty() => {
            return Err(err(
                "workload.dscp",
                "[]",
                "a list of DSCP values from 0 to 63",
            ))
        }
        Some(list) => list
            .iter()
            .map(|&d| int_in("workload.dscp", d, 0, 63).map(|d| d as u8))
            .collect::<Result<Vec<_>, _>>()?,
        None => vec![],
    };
    Ok(LongLivedSpec { pairs, size, dscp })
}
