//! CamCubeOS's file distribution: one server sends a file to every other server over six
//! arc-disjoint spanning trees (`net::routing::trees`), packet i down tree i mod 6; each
//! server keeps what reaches it and sends a copy one hop on to each of its children in that
//! tree. Every one-way link carries at most one tree, so the root can send at six times a
//! link's rate and every member receive at that rate. There is no flow control between
//! neighbours (as in CamCubeOS): the root paces each tree at `rate_fraction` of its link.
//!
//! Simplified: no retransmission (a lost packet is missing at the members below it); one
//! instance per run.

use super::{OnPath, SvcCtx, SvcEvent, SvcSched, MULTICAST, SERVICE_HEADER_BYTES};
use crate::engine::{TimePs, NEVER};
use crate::packet::{Packet, PktId, Proto};

/// `[workload]` parameters of kind "multicast" (defaults are filled in by config::resolve).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The server that sends (default 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<i64>,
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
    pub root: u32,
    pub size_bytes: u64,
    pub payload_bytes: u32,
    pub rate_fraction_ppm: u32,
}

pub struct Multicast {
    pub spec: MulticastSpec,
    /// Per tree, per server, its children.
    children: Vec<Vec<Vec<u32>>>,
    pub packets: u32,
    /// Per tree, the next packet number it sends (i with i mod 6 = tree).
    next: [u32; 6],
    interval_ps: TimePs,
    /// Per server: packets received, first and last arrival.
    pub received: Vec<u32>,
    pub first_ps: Vec<TimePs>,
    pub last_ps: Vec<TimePs>,
    complete: usize,
}

impl Multicast {
    /// The service for a torus of `dims` whose links run at `link_bps` with `overhead`
    /// bytes of framing per frame; None if no six trees were found.
    pub fn new(
        spec: MulticastSpec,
        dims: [u32; 3],
        frame_bytes: u32,
        wire_overhead: u32,
        link_bps: u64,
    ) -> Option<Multicast> {
        let trees = crate::net::routing::trees::six_trees(dims, spec.root)?;
        let n = trees.parent[0].len();
        let mut children = vec![vec![Vec::new(); n]; 6];
        for (t, par) in trees.parent.iter().enumerate() {
            for (v, &p) in par.iter().enumerate() {
                if p != u32::MAX {
                    children[t][p as usize].push(v as u32);
                }
            }
        }
        let packets = spec
            .size_bytes
            .div_ceil(u64::from(spec.payload_bytes))
            .max(1) as u32;
        let bits = f64::from(frame_bytes + wire_overhead) * 8.0;
        let rate = link_bps as f64 * f64::from(spec.rate_fraction_ppm) / 1e6;
        let interval_ps = (bits / rate * 1e12).ceil() as TimePs;
        Some(Multicast {
            spec,
            children,
            packets,
            next: [0, 1, 2, 3, 4, 5],
            interval_ps,
            received: vec![0; n],
            first_ps: vec![NEVER; n],
            last_ps: vec![NEVER; n],
            complete: 0,
        })
    }

    /// Every member has every packet.
    pub fn done(&self) -> bool {
        self.complete == self.received.len() - 1
    }

    pub fn start(&mut self, ctx: &mut SvcCtx<impl SvcSched>) {
        for t in 0..6u32 {
            ctx.ev.schedule(
                ctx.ev.now(),
                SvcEvent::Timer {
                    service: MULTICAST,
                    tag: t,
                },
            );
        }
    }

    /// Tree `tag`'s pacing timer: the root sends its next packet down that tree.
    pub fn on_timer(&mut self, ctx: &mut SvcCtx<impl SvcSched>, tag: u32) {
        let t = tag as usize;
        let i = self.next[t];
        if i >= self.packets {
            return;
        }
        self.next[t] += 6;
        let root = self.spec.root;
        for c in self.children[t][root as usize].clone() {
            self.send(ctx, root, c, i);
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

    fn send(&self, ctx: &mut SvcCtx<impl SvcSched>, from: u32, to: u32, i: u32) {
        let done = u64::from(i) * u64::from(self.spec.payload_bytes);
        let payload = (self.spec.size_bytes - done).min(u64::from(self.spec.payload_bytes)) as u32;
        let frame = ctx.net.frame_bytes(from, payload + SERVICE_HEADER_BYTES);
        let pkt = ctx.net.pool.alloc(Packet {
            proto: Proto::Service,
            dst_port: MULTICAST,
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
        let i = ctx.net.pool.get(pkt).seq as u32;
        ctx.net.delivered(pkt);
        let now = ctx.ev.now();
        let h = host as usize;
        self.received[h] += 1;
        if self.first_ps[h] == NEVER {
            self.first_ps[h] = now;
        }
        self.last_ps[h] = now;
        if self.received[h] == self.packets {
            self.complete += 1;
        }
        let t = (i % 6) as usize;
        for k in 0..self.children[t][h].len() {
            let c = self.children[t][h][k];
            self.send(ctx, host, c, i);
        }
    }

    /// Gbit/s of payload each member received, from its first packet to its last (NaN for
    /// the root, or a member that got nothing).
    pub fn member_gbps(&self) -> Vec<f64> {
        (0..self.received.len())
            .map(|v| {
                let (a, b) = (self.first_ps[v], self.last_ps[v]);
                if v as u32 == self.spec.root || a == NEVER || b <= a {
                    return f64::NAN;
                }
                let bytes = (u64::from(self.received[v]) * u64::from(self.spec.payload_bytes))
                    .min(self.spec.size_bytes);
                bytes as f64 * 8.0 / ((b - a) as f64 / 1e12) / 1e9
            })
            .collect()
    }
}

/// One row per member: packets received and its throughput.
pub fn table(m: &Multicast) -> crate::metrics::Table {
    use crate::metrics::{floats, ints};
    let rows: Vec<usize> = (0..m.received.len())
        .filter(|&v| v as u32 != m.spec.root)
        .collect();
    let gbps = m.member_gbps();
    crate::metrics::Table {
        name: "multicast",
        columns: vec![
            ("member", ints(&rows, |&v| v as i64)),
            ("packets", ints(&rows, |&v| i64::from(m.received[v]))),
            ("of_packets", ints(&rows, |_| i64::from(m.packets))),
            ("gbps", floats(&rows, |&v| gbps[v])),
        ],
    }
}

/// Headline: the least and median member throughput, members complete.
pub fn headline(h: &mut serde_json::Map<String, serde_json::Value>, m: &Multicast) {
    let mut g: Vec<f64> = m
        .member_gbps()
        .into_iter()
        .filter(|x| x.is_finite())
        .collect();
    g.sort_by(f64::total_cmp);
    h.insert("multicast_members_complete".into(), m.complete.into());
    if let (Some(&least), false) = (g.first(), g.is_empty()) {
        h.insert("multicast_min_gbps_per_member".into(), least.into());
        h.insert(
            "multicast_median_gbps_per_member".into(),
            g[(g.len() - 1) / 2].into(),
        );
    }
}
