//! Camdoop-style aggregation (CamCubeOS section 3; Costa et al., NSDI 2012): every server
//! holds `size` bytes of intermediate results and the job's root wants them combined. The
//! data go up six arc-disjoint spanning trees rooted at the root (`net::routing::trees`,
//! each arc reversed: a child sends to its parent), packet i in tree i mod 6. A server's
//! service intercepts what its children send: once it has packet i of a tree from every
//! child there, it merges them with its own packet i into one and sends that to its
//! parent. Leaves pace their packets at `rate_fraction` of a link (CamCubeOS has no flow
//! control between neighbours); a parent sends as its children's packets complete. The
//! root has the result when it holds every merged packet.
//!
//! Simplified: the merge is full aggregation (any number of packets combine into one of
//! the same size, as a sum or a count does); a partial merge, whose output grows with its
//! inputs, is not modelled; nor is the merge's CPU work; nothing is retransmitted.

use super::kind::{check_six_trees, service_payload, tree_rate_fraction_ppm, tree_service_size};
use super::kind::{ServiceWorkload, WorkloadCtx};
use super::ServiceKind;
use super::Services;
use super::{SvcCtx, SvcEvent, SvcSched, AGGREGATE, SERVICE_HEADER_BYTES};
use crate::check::{int_in, ConfigError};
use crate::engine::{TimePs, NEVER};
use crate::net::Network;
use crate::packet::{Packet, PktId, Proto};

/// `[workload]` parameters of kind "aggregate" (defaults are filled in by `resolve`, below).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The server that gets the result (default 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<i64>,
    /// Bytes each server contributes (default 100 MB).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<crate::units::Bytes>,
    /// Payload bytes per packet (default: what fills the link's MTU).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packet_size: Option<crate::units::Bytes>,
    /// Each leaf's pace per tree as a fraction of its link (default 0.98).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_fraction: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AggregateSpec {
    pub root: u32,
    pub size_bytes: u64,
    pub payload_bytes: u32,
    pub rate_fraction_ppm: u32,
}

pub struct Aggregate {
    pub spec: AggregateSpec,
    /// Per tree, each server's parent (u32::MAX: the root).
    parent: Vec<Vec<u32>>,
    /// Per tree, each server's number of children.
    children: Vec<Vec<u32>>,
    /// Per tree and server, per packet of that tree, the children's packets merged so far.
    merged: Vec<Vec<Vec<u8>>>,
    /// Per tree, the next packet number the leaves send (i with i mod 6 = tree).
    next: [u32; 6],
    /// Packets of the whole job (each tree carries those with its residue).
    pub packets: u32,
    /// Merged packets the root holds, and when the last came.
    pub at_root: u32,
    pub end_ps: TimePs,
    /// Packets sent upwards, and the packets merged into them (a server's own and one per
    /// child: merging saves the difference).
    pub sent: u64,
    pub inputs: u64,
    interval_ps: TimePs,
}

impl ServiceWorkload for Aggregate {
    const NAME: &'static str = "aggregate";
    type Params = Params;
    type Spec = AggregateSpec;

    /// Camdoop-style aggregation to one server up six trees.
    fn resolve(w: &mut Params, ctx: &WorkloadCtx) -> Result<AggregateSpec, ConfigError> {
        let (graph, tech) = (ctx.graph, ctx.host_tech);
        check_six_trees(graph, "aggregate")?;
        let n_hosts = graph.n_hosts() as i64;
        let root = int_in("workload.root", *w.root.get_or_insert(0), 0, n_hosts - 1)?;
        let size = w.size.get_or_insert(crate::units::Bytes(100_000_000)).0;
        let payload = service_payload(&mut w.packet_size, tech)?;
        // A byte per packet at each server: how many children's packets it has merged.
        tree_service_size(size, payload, 8 * n_hosts as u64)?;
        let rate_fraction_ppm = tree_rate_fraction_ppm(&mut w.rate_fraction)?;
        Ok(AggregateSpec {
            root,
            size_bytes: size,
            payload_bytes: payload,
            rate_fraction_ppm,
        })
    }

    fn services(spec: &AggregateSpec, net: &Network) -> Result<Services, ConfigError> {
        Ok(Services::with(Aggregate::build(net, spec)?))
    }
}

impl Aggregate {
    /// The aggregation of `spec` over `net`'s torus, up six disjoint trees from its root;
    /// a root from which they were not found is refused.
    pub fn build(
        net: &crate::net::Network,
        spec: &AggregateSpec,
    ) -> Result<Aggregate, ConfigError> {
        let l = super::RootLink::of(net, spec.root, spec.payload_bytes);
        Aggregate::new(
            spec.clone(),
            l.dims,
            l.frame_bytes,
            l.wire_overhead_bytes,
            l.rate_bps,
        )
        .ok_or_else(|| ConfigError {
            path: "workload.root".into(),
            message: format!(
                "given {}; allowed: a root from which six disjoint trees were found",
                spec.root
            ),
        })
    }

    /// The service for a torus of `dims` whose links run at `link_bps` with frames of
    /// `frame_bytes` and `wire_overhead` bytes of framing; None if six trees were not
    /// found from the root.
    pub fn new(
        spec: AggregateSpec,
        dims: [u32; 3],
        frame_bytes: u32,
        wire_overhead: u32,
        link_bps: u64,
    ) -> Option<Aggregate> {
        let trees = crate::net::routing::trees::six_trees(dims, spec.root)?;
        let n = trees.parent[0].len();
        let packets = spec
            .size_bytes
            .div_ceil(u64::from(spec.payload_bytes))
            .max(1) as u32;
        let mut children = vec![vec![0u32; n]; 6];
        let mut merged = Vec::with_capacity(6);
        for (t, par) in trees.parent.iter().enumerate() {
            for &p in par.iter().filter(|&&p| p != u32::MAX) {
                children[t][p as usize] += 1;
            }
            let per_tree = (packets as usize + 5 - t) / 6;
            merged.push(vec![vec![0u8; per_tree]; n]);
        }
        let bits = f64::from(frame_bytes + wire_overhead) * 8.0;
        let rate = link_bps as f64 * f64::from(spec.rate_fraction_ppm) / 1e6;
        Some(Aggregate {
            spec,
            parent: trees.parent,
            children,
            merged,
            next: [0, 1, 2, 3, 4, 5],
            packets,
            at_root: 0,
            end_ps: NEVER,
            sent: 0,
            inputs: 0,
            interval_ps: (bits / rate * 1e12).ceil() as TimePs,
        })
    }

    /// Server `v` sends packet `i` of tree `t`, a merge of `inputs` packets, to its parent.
    fn send_up(&mut self, ctx: &mut SvcCtx<impl SvcSched>, t: usize, v: u32, i: u32, inputs: u32) {
        if !ctx.net.host_up(v) {
            return;
        }
        let done = u64::from(i) * u64::from(self.spec.payload_bytes);
        let payload = (self.spec.size_bytes - done).min(u64::from(self.spec.payload_bytes)) as u32;
        let frame = ctx.net.frame_bytes(v, payload + SERVICE_HEADER_BYTES);
        let pkt = ctx.net.pool_mut().alloc(Packet {
            proto: Proto::SERVICE,
            dst_port: AGGREGATE,
            src_host: v,
            dst_host: self.parent[t][v as usize],
            seq: u64::from(i),
            ack: u64::from(inputs),
            payload_bytes: payload,
            frame_bytes: frame,
            hash: i,
            ..Default::default()
        });
        self.sent += 1;
        self.inputs += u64::from(inputs);
        ctx.hosts.send(ctx.net, ctx.ev, v, pkt);
    }

    /// Gbit/s of the job: every server's data over the time to the root's last packet.
    pub fn job_gbps(&self) -> f64 {
        if self.end_ps == NEVER || self.end_ps == 0 {
            return f64::NAN;
        }
        let servers = self.parent[0].len() as f64;
        self.spec.size_bytes as f64 * servers * 8.0 / (self.end_ps as f64 / 1e12) / 1e9
    }
}

/// Headline: the time to the result, the job's rate, and what merging saved.
pub fn headline(h: &mut serde_json::Map<String, serde_json::Value>, a: &Aggregate) {
    h.insert("aggregate_complete".into(), a.done().into());
    if a.done() {
        h.insert("aggregate_time_us".into(), (a.end_ps as f64 / 1e6).into());
        h.insert("aggregate_job_gbps".into(), a.job_gbps().into());
    }
    h.insert("aggregate_packets_sent".into(), a.sent.into());
    h.insert("aggregate_merge_inputs".into(), a.inputs.into());
}

impl ServiceKind for Aggregate {
    const ID: u16 = super::AGGREGATE;
    const NAME: &'static str = "aggregate";
    fn start<S: SvcSched>(&mut self, ctx: &mut SvcCtx<S>) {
        for tag in 0..6 {
            let now = ctx.ev.now();
            ctx.ev.schedule(
                now,
                SvcEvent::Timer {
                    service: AGGREGATE,
                    tag,
                },
            );
        }
    }
    /// A child's packet reached server `host`: merged; once every child's packet i is in,
    /// the merge (with the server's own packet i) goes to the parent, or the root keeps it.
    fn deliver<S: SvcSched>(&mut self, ctx: &mut SvcCtx<S>, host: u32, pkt: PktId) {
        let p = *ctx.net.pool().get(pkt);
        ctx.net.delivered(pkt);
        let i = p.seq as u32;
        let t = (i % 6) as usize;
        let h = host as usize;
        let slot = &mut self.merged[t][h][(i / 6) as usize];
        *slot += 1;
        if u32::from(*slot) < self.children[t][h] {
            return;
        }
        if self.parent[t][h] == u32::MAX {
            self.at_root += 1;
            if self.at_root == self.packets {
                self.end_ps = ctx.ev.now();
            }
            return;
        }
        self.send_up(ctx, t, host, i, self.children[t][h] + 1);
    }
    /// Tree `tag`'s pace: every leaf of it sends its next packet (a leaf has only its own
    /// data, so it has nothing to wait for).
    fn on_timer<S: SvcSched>(&mut self, ctx: &mut SvcCtx<S>, tag: u32) {
        let t = tag as usize;
        let i = self.next[t];
        if i >= self.packets {
            return;
        }
        self.next[t] += 6;
        for v in 0..self.children[t].len() as u32 {
            if self.children[t][v as usize] == 0 && self.parent[t][v as usize] != u32::MAX {
                self.send_up(ctx, t, v, i, 1);
            }
        }
        let at = ctx.ev.now() + self.interval_ps;
        ctx.ev.schedule(
            at,
            SvcEvent::Timer {
                service: AGGREGATE,
                tag,
            },
        );
    }
    fn done(&self) -> bool {
        self.end_ps != NEVER
    }
}

impl crate::metrics::report::Report for Aggregate {
    fn headline(
        &self,
        _ctx: &crate::metrics::report::ReportCtx,
        h: &mut crate::metrics::report::Headline,
    ) {
        headline(h, self);
    }
}
