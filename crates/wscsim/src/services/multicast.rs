//! CamCubeOS's file distribution: one server sends a file to every other server over six
//! arc-disjoint spanning trees (`net::routing::trees`), packet i down tree i mod 6; each
//! server keeps what reaches it and sends a copy one hop on to each of its children in that
//! tree. Every one-way link carries at most one tree, so the root can send at six times a
//! link's rate and every member receive at that rate. There is no flow control between
//! neighbours (as in CamCubeOS): the root paces each tree at `rate_fraction` of its link.
//!
//! Several instances may run at once, from different roots (each over its own six trees,
//! so a link may carry one tree of each); a packet names its instance in `src_port`.
//!
//! Losses (a full service queue where trees of several instances share a link) are
//! repaired hop by hop: each tree's packets reach a member in order, so a member that gets
//! packet i of tree t when it expected an earlier one asks its parent in t for the gap
//! (a NACK: first packet and count, stride 6); a member that has heard nothing for
//! `CHECK_PS` while incomplete asks for everything it lacks, 64 packets per tree at a time.
//! A parent resends what it has to that child, which keeps and forwards it like any other
//! packet; a copy a server already has is dropped unforwarded. A gap also sends a "slow
//! down" notice up the tree to the root (each server passes on at most one per tree every
//! `SLOW_HOLD_PS`), which halves that tree's pace; the pace then grows back by
//! `PACE_GAIN_PER_S` of the link per second, up to `rate_fraction` (AIMD). The paper does
//! not describe its recovery or its rate control; these are wscsim's (its figure counts
//! retransmissions in the time).

use super::ServiceKind;
use super::{SvcCtx, SvcEvent, SvcSched, MULTICAST, SERVICE_HEADER_BYTES};

/// How long an incomplete member waits, hearing nothing, before it asks again.
pub const CHECK_PS: TimePs = 5_000_000_000;
/// The most packets one NACK asks for.
const NACK_MAX: u32 = 64;
/// `src_port` bit of a NACK (the rest is the instance).
const NACK: u16 = 0x8000;
/// Timer tags from here are an instance's completion checks (below: its trees' sending).
const CHECK_TAG: u32 = 1 << 20;
/// `src_port` bit of a slow-down notice (the rest is the instance; `seq` the tree).
const SLOW: u16 = 0x4000;
/// Each server passes on at most one slow-down notice per tree this often, and a root
/// halves a tree's pace at most this often.
pub const SLOW_HOLD_PS: TimePs = 2_000_000_000;
/// How fast a tree's pace grows back after a halving: this fraction of the link per second.
pub const PACE_GAIN_PER_S: f64 = 2.0;
/// What a slow-down notice leaves of a tree's pace.
const PACE_CUT: f64 = 0.5;
/// A tree's pace never falls below this fraction of its link.
const PACE_FLOOR: f64 = 0.01;
use super::kind::{check_six_trees, service_payload, tree_rate_fraction_ppm, tree_service_size};
use super::kind::{ServiceWorkload, WorkloadCtx};
use super::Services;
use crate::check::{err, host_list, ConfigError};
use crate::engine::{TimePs, NEVER};
use crate::net::Network;
use crate::packet::{Packet, PktId, Proto};

/// `[workload]` parameters of kind "multicast" (defaults are filled in by `resolve`, below).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The servers that send, one instance each, all at once (default [0]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub roots: Option<Vec<i64>>,
    /// Bytes of the file (default 750 MB, the paper's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<crate::units::Bytes>,
    /// Payload bytes per packet (default: what fills the link's MTU).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packet_size: Option<crate::units::Bytes>,
    /// Each tree's sending rate as a fraction of its link's (default 0.98).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_fraction: Option<f64>,
    /// The servers that want the file (default: every server but the instance's root; a
    /// root listed here is not a member of its own instance). Each tree is pruned to the
    /// paths from its root to the members: servers on those paths relay, the others see
    /// nothing of the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub members: Option<Vec<i64>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MulticastSpec {
    pub roots: Vec<u32>,
    /// None: every server but the root.
    pub members: Option<Vec<u32>>,
    pub size_bytes: u64,
    pub payload_bytes: u32,
    pub rate_fraction_ppm: u32,
}

/// One file distribution from one root.
pub struct Instance {
    pub root: u32,
    /// Per tree, per server, its children on paths to members and its parent (u32::MAX
    /// for the root).
    children: Vec<Vec<Vec<u32>>>,
    parents: Vec<Vec<u32>>,
    /// Per server, whether it wants the file, and per tree whether it is on a path from
    /// the root to a member (a member, a relay or the root).
    is_member: Vec<bool>,
    on_tree: Vec<[bool; 6]>,
    members: usize,
    /// Per tree, the next packet number it sends (i with i mod 6 = tree).
    next: [u32; 6],
    /// Per server: packets received, first and last arrival.
    pub received: Vec<u32>,
    pub first_ps: Vec<TimePs>,
    pub last_ps: Vec<TimePs>,
    complete: usize,
    /// Per server, which packets it has (a bit each).
    have: Vec<Vec<u64>>,
    /// Per server and tree, the packet it expects next in order.
    expect: Vec<[u32; 6]>,
    /// Per server, when a packet (new or not) last reached it.
    heard_ps: Vec<TimePs>,
    /// Packets sent again in answer to NACKs, and NACKs sent.
    pub repairs: u64,
    pub nacks: u64,
    /// Per tree, the root's pace as a fraction of the link, and when it last halved.
    pace: [f64; 6],
    halved_ps: [TimePs; 6],
    /// Per server and tree, when it last passed a slow-down notice up.
    slow_sent_ps: Vec<[TimePs; 6]>,
    /// Slow-down notices the root acted on.
    pub slowdowns: u64,
}

impl Instance {
    fn new(dims: [u32; 3], root: u32, pace: f64, members: Option<&[u32]>) -> Option<Instance> {
        let trees = crate::net::routing::trees::six_trees(dims, root)?;
        let n = trees.parent[0].len();
        let mut is_member = vec![members.is_none(); n];
        for &m in members.unwrap_or(&[]) {
            is_member[m as usize] = true;
        }
        is_member[root as usize] = false;
        let on_tree = prune(&trees.parent, root, &is_member);
        let mut children = vec![vec![Vec::new(); n]; 6];
        for (t, par) in trees.parent.iter().enumerate() {
            for (v, &p) in par.iter().enumerate() {
                if p != u32::MAX && on_tree[v][t] {
                    children[t][p as usize].push(v as u32);
                }
            }
        }
        Some(Instance {
            root,
            children,
            parents: trees.parent.to_vec(),
            members: is_member.iter().filter(|&&m| m).count(),
            is_member,
            on_tree,
            next: [0, 1, 2, 3, 4, 5],
            received: vec![0; n],
            first_ps: vec![NEVER; n],
            last_ps: vec![NEVER; n],
            complete: 0,
            have: vec![Vec::new(); n],
            expect: vec![[0, 1, 2, 3, 4, 5]; n],
            heard_ps: vec![0; n],
            repairs: 0,
            nacks: 0,
            pace: [pace; 6],
            halved_ps: [NEVER; 6],
            slow_sent_ps: vec![[NEVER; 6]; n],
            slowdowns: 0,
        })
    }

    fn has(&self, v: u32, i: u32) -> bool {
        if v == self.root {
            return i < self.next[(i % 6) as usize];
        }
        self.have[v as usize]
            .get((i / 64) as usize)
            .is_some_and(|w| w >> (i % 64) & 1 == 1)
    }

    /// Marks packet `i` received at `v`; false if `v` had it already.
    fn take(&mut self, v: u32, i: u32, packets: u32) -> bool {
        let bits = &mut self.have[v as usize];
        if bits.is_empty() {
            bits.resize(packets.div_ceil(64) as usize, 0);
        }
        let (w, b) = ((i / 64) as usize, i % 64);
        let new = bits[w] >> b & 1 == 0;
        bits[w] |= 1 << b;
        new
    }

    /// The parent of `v` in tree `t` (None for the root).
    fn parent(&self, t: usize, v: u32) -> Option<u32> {
        let p = self.parents[t][v as usize];
        (p != u32::MAX).then_some(p)
    }

    /// Gbit/s of payload each member received, from its first packet to its last (NaN for
    /// the root, or a member that got nothing).
    pub fn member_gbps(&self, spec: &MulticastSpec) -> Vec<f64> {
        (0..self.received.len())
            .map(|v| {
                let (a, b) = (self.first_ps[v], self.last_ps[v]);
                if !self.is_member[v] || a == NEVER || b <= a {
                    return f64::NAN;
                }
                let bytes = (u64::from(self.received[v]) * u64::from(spec.payload_bytes))
                    .min(spec.size_bytes);
                bytes as f64 * 8.0 / ((b - a) as f64 / 1e12) / 1e9
            })
            .collect()
    }
}

/// Per server and tree, whether it is on a path from `root` to a member in that tree
/// (`parent`: per tree, each server's parent, u32::MAX for the root).
fn prune(parent: &[Vec<u32>], root: u32, is_member: &[bool]) -> Vec<[bool; 6]> {
    let mut on = vec![[false; 6]; is_member.len()];
    for (t, par) in parent.iter().enumerate() {
        on[root as usize][t] = true;
        for m in (0..is_member.len()).filter(|&v| is_member[v]) {
            let mut v = m;
            while !on[v][t] {
                on[v][t] = true;
                v = par[v] as usize;
            }
        }
    }
    on
}

pub struct Multicast {
    pub spec: MulticastSpec,
    pub instances: Vec<Instance>,
    pub packets: u32,
    /// A full frame's bits on the wire, and the links' rate.
    frame_bits: f64,
    link_bps: f64,
}

impl ServiceWorkload for Multicast {
    const NAME: &'static str = "multicast";
    type Params = Params;
    type Spec = MulticastSpec;

    /// A file from one server to all others over six disjoint trees (a torus of 3 or more
    /// servers along each axis).
    fn resolve(w: &mut Params, ctx: &WorkloadCtx) -> Result<MulticastSpec, ConfigError> {
        let (graph, tech) = (ctx.graph, ctx.host_tech);
        check_six_trees(graph, "multicast")?;
        let n_hosts = graph.n_hosts() as i64;
        w.roots.get_or_insert_with(|| vec![0]);
        let roots = host_list("workload.roots", &w.roots, n_hosts)?.expect("filled in");
        if roots.len() > 64 {
            return Err(err("workload.roots", roots.len(), "at most 64 instances"));
        }
        let size = w.size.get_or_insert(crate::units::Bytes(750_000_000)).0;
        let payload = service_payload(&mut w.packet_size, tech)?;
        // A bit per packet at each member, for each instance.
        let members = n_hosts as u64 * roots.len() as u64;
        tree_service_size(size, payload, members)?;
        let rate_fraction_ppm = tree_rate_fraction_ppm(&mut w.rate_fraction)?;
        let members = host_list("workload.members", &w.members, n_hosts)?;
        if let Some(m) = &members {
            if let Some(&r) = roots.iter().find(|&&r| m.iter().all(|&v| v == r)) {
                return Err(err(
                    "workload.members",
                    format!("{m:?}"),
                    format!("a server other than the root {r} of an instance"),
                ));
            }
        }
        Ok(MulticastSpec {
            roots,
            members,
            size_bytes: size,
            payload_bytes: payload,
            rate_fraction_ppm,
        })
    }

    fn services(spec: &MulticastSpec, net: &Network) -> Result<Services, ConfigError> {
        Ok(Services::with(Multicast::build(net, spec)?))
    }
}

impl Multicast {
    /// The file distribution of `spec` over `net`'s torus, up six disjoint trees from each
    /// root; roots from which they were not found are refused.
    pub fn build(
        net: &crate::net::Network,
        spec: &MulticastSpec,
    ) -> Result<Multicast, ConfigError> {
        let l = super::RootLink::of(net, spec.roots[0], spec.payload_bytes);
        Multicast::new(spec.clone(), l.dims, l.frame_bytes, l.wire_overhead_bytes, l.rate_bps)
            .ok_or_else(|| ConfigError {
                path: "workload.roots".into(),
                message: format!(
                    "given {:?}; allowed: roots from which six disjoint trees were found (from one, none was)",
                    spec.roots
                ),
            })
    }

    /// The service for a torus of `dims` whose links run at `link_bps` with `overhead`
    /// bytes of framing per frame; None if six trees were not found from some root.
    pub fn new(
        spec: MulticastSpec,
        dims: [u32; 3],
        frame_bytes: u32,
        wire_overhead: u32,
        link_bps: u64,
    ) -> Option<Multicast> {
        let instances = spec
            .roots
            .iter()
            .map(|&r| {
                let pace = f64::from(spec.rate_fraction_ppm) / 1e6;
                Instance::new(dims, r, pace, spec.members.as_deref())
            })
            .collect::<Option<Vec<_>>>()?;
        let packets = spec
            .size_bytes
            .div_ceil(u64::from(spec.payload_bytes))
            .max(1) as u32;
        let bits = f64::from(frame_bytes + wire_overhead) * 8.0;
        Some(Multicast {
            spec,
            instances,
            packets,
            frame_bits: bits,
            link_bps: link_bps as f64,
        })
    }

    fn send(&self, ctx: &mut SvcCtx<impl SvcSched>, k: usize, from: u32, to: u32, i: u32) {
        let done = u64::from(i) * u64::from(self.spec.payload_bytes);
        let payload = (self.spec.size_bytes - done).min(u64::from(self.spec.payload_bytes)) as u32;
        let frame = ctx.net.frame_bytes(from, payload + SERVICE_HEADER_BYTES);
        let pkt = ctx.net.pool_mut().alloc(Packet {
            proto: Proto::SERVICE,
            dst_port: MULTICAST,
            src_port: k as u16,
            src_host: from,
            dst_host: to,
            seq: u64::from(i),
            payload_bytes: payload,
            frame_bytes: frame,
            hash: i,
            ..Default::default()
        });
        ctx.hosts.send(ctx.net, ctx.ev, from, pkt);
    }

    /// Member `host` asks its parent in tree `t` for `count` packets from `first` (stride 6).
    fn nack(
        &mut self,
        ctx: &mut SvcCtx<impl SvcSched>,
        k: usize,
        host: u32,
        t: usize,
        first: u32,
        count: u32,
    ) {
        let Some(parent) = self.instances[k].parent(t, host) else {
            return;
        };
        self.instances[k].nacks += 1;
        self.notice(ctx, k, host, parent, NACK, first, count.min(NACK_MAX));
    }

    /// Tree `t` of instance `k` lost packets below `host`: the root halves the tree's pace
    /// (at most once per `SLOW_HOLD_PS`); another server passes the notice to its parent
    /// (at most once per `SLOW_HOLD_PS`).
    fn slow_down(&mut self, ctx: &mut SvcCtx<impl SvcSched>, k: usize, host: u32, t: usize) {
        let now = ctx.ev.now();
        let x = &mut self.instances[k];
        if host == x.root {
            let last = x.halved_ps[t];
            if last == NEVER || now >= last + SLOW_HOLD_PS {
                x.pace[t] = (x.pace[t] * PACE_CUT).max(PACE_FLOOR);
                x.halved_ps[t] = now;
                x.slowdowns += 1;
            }
            return;
        }
        let last = x.slow_sent_ps[host as usize][t];
        if last != NEVER && now < last + SLOW_HOLD_PS {
            return;
        }
        x.slow_sent_ps[host as usize][t] = now;
        let Some(parent) = x.parent(t, host) else {
            return;
        };
        self.notice(ctx, k, host, parent, SLOW, t as u32, 0);
    }

    /// A small control packet of instance `k` from `from` to its neighbour `to`.
    #[allow(clippy::too_many_arguments)]
    fn notice(
        &self,
        ctx: &mut SvcCtx<impl SvcSched>,
        k: usize,
        from: u32,
        to: u32,
        kind: u16,
        seq: u32,
        count: u32,
    ) {
        let frame = ctx.net.frame_bytes(from, 8 + SERVICE_HEADER_BYTES);
        let pkt = ctx.net.pool_mut().alloc(Packet {
            proto: Proto::SERVICE,
            dst_port: MULTICAST,
            src_port: k as u16 | kind,
            src_host: from,
            dst_host: to,
            seq: u64::from(seq),
            ack: u64::from(count),
            payload_bytes: 8,
            frame_bytes: frame,
            hash: seq,
            ..Default::default()
        });
        ctx.hosts.send(ctx.net, ctx.ev, from, pkt);
    }

    /// Server `host` sends `child` what it has of the `count` packets from `first`.
    fn answer(
        &mut self,
        ctx: &mut SvcCtx<impl SvcSched>,
        k: usize,
        host: u32,
        child: u32,
        first: u32,
        count: u32,
    ) {
        for j in 0..count {
            let i = first + 6 * j;
            if i < self.packets && self.instances[k].has(host, i) {
                self.instances[k].repairs += 1;
                self.send(ctx, k, host, child, i);
            }
        }
    }

    fn schedule_check(&self, ctx: &mut SvcCtx<impl SvcSched>, k: usize) {
        let at = ctx.ev.now() + CHECK_PS;
        ctx.ev.schedule(
            at,
            SvcEvent::Timer {
                service: MULTICAST,
                tag: CHECK_TAG + k as u32,
            },
        );
    }

    /// Instance `k`'s completion check: every incomplete member that has heard nothing for
    /// `CHECK_PS` asks, per tree, for the first packets it lacks; again later while any
    /// member is incomplete.
    fn check(&mut self, ctx: &mut SvcCtx<impl SvcSched>, k: usize) {
        let now = ctx.ev.now();
        let x = &self.instances[k];
        if x.complete == x.members {
            return;
        }
        let idle: Vec<u32> = (0..x.received.len() as u32)
            .filter(|&v| v != x.root && x.received[v as usize] < self.packets)
            .filter(|&v| now.saturating_sub(x.heard_ps[v as usize]) >= CHECK_PS)
            .collect();
        for v in idle {
            // A relay asks only for what the trees it is on carry.
            let trees = self.instances[k].on_tree[v as usize];
            for t in (0..6).filter(|&t| trees[t]) {
                let x = &self.instances[k];
                let lacking = (t as u32..self.packets)
                    .step_by(6)
                    .filter(|&i| !x.has(v, i));
                let wanted: Vec<u32> = lacking.take(NACK_MAX as usize).collect();
                if let (Some(&a), Some(&b)) = (wanted.first(), wanted.last()) {
                    self.nack(ctx, k, v, t, a, (b - a) / 6 + 1);
                }
            }
        }
        self.schedule_check(ctx, k);
    }
}

/// One row per instance and member: packets received and throughput.
pub fn table(m: &Multicast) -> crate::table::Table {
    use crate::table::{floats, ints};
    let mut rows: Vec<(usize, usize, f64)> = Vec::new();
    for (k, x) in m.instances.iter().enumerate() {
        for (v, g) in x.member_gbps(&m.spec).into_iter().enumerate() {
            if x.is_member[v] {
                rows.push((k, v, g));
            }
        }
    }
    crate::table::Table {
        name: "multicast",
        columns: vec![
            ("instance", ints(&rows, |r| r.0 as i64)),
            ("root", ints(&rows, |r| i64::from(m.instances[r.0].root))),
            ("member", ints(&rows, |r| r.1 as i64)),
            (
                "packets",
                ints(&rows, |r| i64::from(m.instances[r.0].received[r.1])),
            ),
            ("of_packets", ints(&rows, |_| i64::from(m.packets))),
            ("gbps", floats(&rows, |r| r.2)),
        ],
    }
}

/// Headline: the least and median member throughput over every instance, and each
/// instance's least; members complete.
pub fn headline(h: &mut serde_json::Map<String, serde_json::Value>, m: &Multicast) {
    let mut g: Vec<f64> = Vec::new();
    let mut least = Vec::new();
    for x in &m.instances {
        let mine: Vec<f64> = x
            .member_gbps(&m.spec)
            .into_iter()
            .filter(|v| v.is_finite())
            .collect();
        least.push(mine.iter().copied().fold(f64::NAN, f64::min));
        g.extend(mine);
    }
    let complete: usize = m.instances.iter().map(|x| x.complete).sum();
    h.insert("multicast_members_complete".into(), complete.into());
    let repairs: u64 = m.instances.iter().map(|x| x.repairs).sum();
    h.insert("multicast_repairs".into(), repairs.into());
    let nacks: u64 = m.instances.iter().map(|x| x.nacks).sum();
    h.insert("multicast_nacks".into(), nacks.into());
    let slow: u64 = m.instances.iter().map(|x| x.slowdowns).sum();
    h.insert("multicast_slowdowns".into(), slow.into());
    if let Some(median) = crate::table::lower_median(&mut g) {
        h.insert("multicast_min_gbps_per_member".into(), g[0].into());
        h.insert("multicast_median_gbps_per_member".into(), median.into());
    }
    if least.len() > 1 {
        h.insert(
            "multicast_min_gbps_per_instance".into(),
            serde_json::json!(least),
        );
    }
}

impl ServiceKind for Multicast {
    const ID: u16 = super::MULTICAST;
    const NAME: &'static str = "multicast";
    fn start<S: SvcSched>(&mut self, ctx: &mut SvcCtx<S>) {
        for tag in 0..6 * self.instances.len() as u32 {
            let now = ctx.ev.now();
            ctx.ev.schedule(
                now,
                SvcEvent::Timer {
                    service: MULTICAST,
                    tag,
                },
            );
        }
    }
    /// A packet reached server `host`: a NACK is answered; a packet new to `host` is kept
    /// and sent on to its children in its tree (a gap before it is asked for); a copy it
    /// has is dropped.
    fn deliver<S: SvcSched>(&mut self, ctx: &mut SvcCtx<S>, host: u32, pkt: PktId) {
        let p = ctx.net.pool().get(pkt);
        let i = p.seq as u32;
        let k = usize::from(p.src_port & !(NACK | SLOW));
        let (nack, asker, count) = (p.src_port & NACK != 0, p.src_host, p.ack as u32);
        let slow = p.src_port & SLOW != 0;
        ctx.net.delivered(pkt);
        if nack {
            self.answer(ctx, k, host, asker, i, count);
            return;
        }
        if slow {
            self.slow_down(ctx, k, host, i as usize);
            return;
        }
        let now = ctx.ev.now();
        let h = host as usize;
        let packets = self.packets;
        let x = &mut self.instances[k];
        x.heard_ps[h] = now;
        if !x.take(host, i, packets) {
            return;
        }
        x.received[h] += 1;
        if x.first_ps[h] == NEVER {
            x.first_ps[h] = now;
        }
        x.last_ps[h] = now;
        if x.received[h] == packets && x.is_member[h] {
            x.complete += 1;
        }
        let t = (i % 6) as usize;
        let expected = x.expect[h][t];
        if i >= expected {
            x.expect[h][t] = i + 6;
            if i > expected {
                // Packets expected..i of this tree were lost on the way here.
                self.nack(ctx, k, host, t, expected, (i - expected) / 6);
                self.slow_down(ctx, k, host, t);
            }
        }
        for j in 0..self.instances[k].children[t][h].len() {
            let c = self.instances[k].children[t][h][j];
            self.send(ctx, k, host, c, i);
        }
    }
    /// Timer `tag` (instance x 6 + tree): that instance's root sends its next packet down
    /// that tree; once every tree has sent its last, the instance's completion checks
    /// begin (`CHECK_TAG` + instance).
    fn on_timer<S: SvcSched>(&mut self, ctx: &mut SvcCtx<S>, tag: u32) {
        if tag >= CHECK_TAG {
            self.check(ctx, (tag - CHECK_TAG) as usize);
            return;
        }
        let (k, t) = ((tag / 6) as usize, (tag % 6) as usize);
        let i = self.instances[k].next[t];
        if i >= self.packets {
            return;
        }
        self.instances[k].next[t] += 6;
        let root = self.instances[k].root;
        for c in self.instances[k].children[t][root as usize].clone() {
            self.send(ctx, k, root, c, i);
        }
        if self.instances[k].next.iter().all(|&n| n >= self.packets) {
            self.schedule_check(ctx, k);
        }
        // The next packet of this tree after one frame's time at the tree's pace, which
        // grows back towards `rate_fraction` meanwhile.
        let ceiling = f64::from(self.spec.rate_fraction_ppm) / 1e6;
        let x = &mut self.instances[k];
        let interval = (self.frame_bits / (self.link_bps * x.pace[t]) * 1e12).ceil();
        x.pace[t] = (x.pace[t] + PACE_GAIN_PER_S * interval / 1e12).min(ceiling);
        let at = ctx.ev.now() + interval as TimePs;
        ctx.ev.schedule(
            at,
            SvcEvent::Timer {
                service: MULTICAST,
                tag,
            },
        );
    }
    /// Every member of every instance has every packet.
    fn done(&self) -> bool {
        self.instances.iter().all(|x| x.complete == x.members)
    }
}

impl crate::metrics::report::Report for Multicast {
    fn tables(&self, _: &crate::metrics::report::ReportCtx, out: &mut Vec<crate::table::Table>) {
        out.push(table(self));
    }

    fn headline(
        &self,
        _ctx: &crate::metrics::report::ReportCtx,
        h: &mut crate::metrics::report::Headline,
    ) {
        headline(h, self);
    }
}

#[cfg(test)]
mod tests {
    use super::prune;

    /// Six copies of one tree over five servers: 0 -> 1 -> 2 -> 3, and 0 -> 4.
    fn chain() -> Vec<Vec<u32>> {
        vec![vec![u32::MAX, 0, 1, 2, 0]; 6]
    }

    #[test]
    fn a_tree_keeps_the_paths_to_its_members_and_nothing_else() {
        // Member 2: server 1 relays; 3 (below it) and 4 (beside it) are left out.
        let on = prune(&chain(), 0, &[false, false, true, false, false]);
        let kept: Vec<bool> = on.iter().map(|t| t[0]).collect();
        assert_eq!(kept, [true, true, true, false, false]);
        assert!(on.iter().all(|t| t.iter().all(|&k| k == t[0])));
    }

    #[test]
    fn every_server_a_member_keeps_the_whole_tree() {
        let on = prune(&chain(), 0, &[false, true, true, true, true]);
        assert!(on.iter().all(|t| t.iter().all(|&k| k)));
    }
}
