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
//! Simplified: no retransmission (a lost packet is missing at the members below it).

use super::{OnPath, SvcCtx, SvcEvent, SvcSched, MULTICAST, SERVICE_HEADER_BYTES};
use crate::engine::{TimePs, NEVER};
use crate::packet::{Packet, PktId, Proto};

/// `[workload]` parameters of kind "multicast" (defaults are filled in by config::resolve).
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
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MulticastSpec {
    pub roots: Vec<u32>,
    pub size_bytes: u64,
    pub payload_bytes: u32,
    pub rate_fraction_ppm: u32,
}

/// One file distribution from one root.
pub struct Instance {
    pub root: u32,
    /// Per tree, per server, its children.
    children: Vec<Vec<Vec<u32>>>,
    /// Per tree, the next packet number it sends (i with i mod 6 = tree).
    next: [u32; 6],
    /// Per server: packets received, first and last arrival.
    pub received: Vec<u32>,
    pub first_ps: Vec<TimePs>,
    pub last_ps: Vec<TimePs>,
    complete: usize,
}

impl Instance {
    fn new(dims: [u32; 3], root: u32) -> Option<Instance> {
        let trees = crate::net::routing::trees::six_trees(dims, root)?;
        let n = trees.parent[0].len();
        let mut children = vec![vec![Vec::new(); n]; 6];
        for (t, par) in trees.parent.iter().enumerate() {
            for (v, &p) in par.iter().enumerate() {
                if p != u32::MAX {
                    children[t][p as usize].push(v as u32);
                }
            }
        }
        Some(Instance {
            root,
            children,
            next: [0, 1, 2, 3, 4, 5],
            received: vec![0; n],
            first_ps: vec![NEVER; n],
            last_ps: vec![NEVER; n],
            complete: 0,
        })
    }

    /// Gbit/s of payload each member received, from its first packet to its last (NaN for
    /// the root, or a member that got nothing).
    pub fn member_gbps(&self, spec: &MulticastSpec) -> Vec<f64> {
        (0..self.received.len())
            .map(|v| {
                let (a, b) = (self.first_ps[v], self.last_ps[v]);
                if v as u32 == self.root || a == NEVER || b <= a {
                    return f64::NAN;
                }
                let bytes = (u64::from(self.received[v]) * u64::from(spec.payload_bytes))
                    .min(spec.size_bytes);
                bytes as f64 * 8.0 / ((b - a) as f64 / 1e12) / 1e9
            })
            .collect()
    }
}

pub struct Multicast {
    pub spec: MulticastSpec,
    pub instances: Vec<Instance>,
    pub packets: u32,
    interval_ps: TimePs,
}

impl Multicast {
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
            .map(|&r| Instance::new(dims, r))
            .collect::<Option<Vec<_>>>()?;
        let packets = spec
            .size_bytes
            .div_ceil(u64::from(spec.payload_bytes))
            .max(1) as u32;
        let bits = f64::from(frame_bytes + wire_overhead) * 8.0;
        let rate = link_bps as f64 * f64::from(spec.rate_fraction_ppm) / 1e6;
        let interval_ps = (bits / rate * 1e12).ceil() as TimePs;
        Some(Multicast {
            spec,
            instances,
            packets,
            interval_ps,
        })
    }

    /// Every member of every instance has every packet.
    pub fn done(&self) -> bool {
        self.instances
            .iter()
            .all(|x| x.complete == x.received.len() - 1)
    }

    pub fn start(&mut self, ctx: &mut SvcCtx<impl SvcSched>) {
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

    /// Timer `tag` (instance x 6 + tree): that instance's root sends its next packet down
    /// that tree.
    pub fn on_timer(&mut self, ctx: &mut SvcCtx<impl SvcSched>, tag: u32) {
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
        let at = ctx.ev.now() + self.interval_ps;
        ctx.ev.schedule(
            at,
            SvcEvent::Timer {
                service: MULTICAST,
                tag,
            },
        );
    }

    fn send(&self, ctx: &mut SvcCtx<impl SvcSched>, k: usize, from: u32, to: u32, i: u32) {
        let done = u64::from(i) * u64::from(self.spec.payload_bytes);
        let payload = (self.spec.size_bytes - done).min(u64::from(self.spec.payload_bytes)) as u32;
        let frame = ctx.net.frame_bytes(from, payload + SERVICE_HEADER_BYTES);
        let pkt = ctx.net.pool.alloc(Packet {
            proto: Proto::Service,
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

    pub fn on_path(&mut self, _ctx: &mut SvcCtx<impl SvcSched>, _h: u32, _p: PktId) -> OnPath {
        OnPath::Forward
    }

    /// A packet reached server `host`: kept, and sent on to its children in its tree.
    pub fn deliver(&mut self, ctx: &mut SvcCtx<impl SvcSched>, host: u32, pkt: PktId) {
        let p = ctx.net.pool.get(pkt);
        let (i, k) = (p.seq as u32, usize::from(p.src_port));
        ctx.net.delivered(pkt);
        let now = ctx.ev.now();
        let h = host as usize;
        let x = &mut self.instances[k];
        x.received[h] += 1;
        if x.first_ps[h] == NEVER {
            x.first_ps[h] = now;
        }
        x.last_ps[h] = now;
        if x.received[h] == self.packets {
            x.complete += 1;
        }
        let t = (i % 6) as usize;
        for j in 0..self.instances[k].children[t][h].len() {
            let c = self.instances[k].children[t][h][j];
            self.send(ctx, k, host, c, i);
        }
    }
}

/// One row per instance and member: packets received and throughput.
pub fn table(m: &Multicast) -> crate::metrics::Table {
    use crate::metrics::{floats, ints};
    let mut rows: Vec<(usize, usize, f64)> = Vec::new();
    for (k, x) in m.instances.iter().enumerate() {
        for (v, g) in x.member_gbps(&m.spec).into_iter().enumerate() {
            if v as u32 != x.root {
                rows.push((k, v, g));
            }
        }
    }
    crate::metrics::Table {
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
    if let Some(median) = crate::metrics::headline::lower_median(&mut g) {
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
