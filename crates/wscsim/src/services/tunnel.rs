//! CamCubeOS's TCP/IP tunnel, at its destination end: the hosts' own TCP segments cross
//! the torus as packets of service 0 (the transport), each hop sending them on whichever
//! shortest-path link is free first, so a flow's segments take several paths and arrive
//! out of order. Linux's TCP would read that as loss (three duplicate ACKs, a needless
//! retransmission and a halved window), so the paper's tunnel keeps small reorder buffers
//! per flow at the destination. This does the same for the project's TCP.
//!
//! Per direction of a connection (a data segment's `flow_id`), the tunnel knows the next
//! byte it expects. A segment at that byte goes up at once, with whatever it held that now
//! follows in order; a later one is held; an earlier one (a retransmission) goes up at
//! once. A hole that lasts `hold_ps`, or a buffer that reaches `limit` segments, releases
//! everything held, in order, and the hole is left to TCP's own loss recovery. ACKs without
//! data and UDP pass straight through.
//!
//! Simplified: the paper's tunnel also answers ARP locally and injects packets under the
//! destination's IP stack; wscsim's hosts have no ARP or IP layer, so that part has no
//! counterpart. A server that fails while holding segments keeps them (they are counted in
//! flight at the end of the run).

use super::{SvcCtx, SvcEvent, SvcSched, TRANSPORT};
use crate::engine::{TimePs, NEVER};
use crate::packet::{PktId, Proto};

/// The tunnel's parameters (`[runtime] reorder_packets`, `reorder_hold`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TunnelSpec {
    /// Segments a flow's buffer holds before it releases them all.
    pub limit: u32,
    /// How long a hole may hold segments back.
    pub hold_ps: TimePs,
}

/// One direction of one connection, at its destination.
#[derive(Clone, Debug, Default)]
struct Stream {
    /// Every byte below this has gone up to TCP.
    expected: u64,
    /// Segments held, in order of sequence number.
    held: Vec<PktId>,
    /// When the oldest hole gives up (NEVER: nothing held).
    deadline_ps: TimePs,
    /// A timer is scheduled for this stream.
    timer_armed: bool,
}

/// What the tunnel counted over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TunnelCounters {
    /// Segments that arrived ahead of a hole and were held.
    pub held: u64,
    /// Holes given up on (timeout or full buffer): what was held went up with the hole.
    pub released_with_hole: u64,
}

pub struct Tunnel {
    pub spec: TunnelSpec,
    streams: Vec<Stream>,
    /// Segments released for TCP, in order; the simulation hands them on.
    pub ready: Vec<PktId>,
    pub counters: TunnelCounters,
}

impl Tunnel {
    pub fn new(spec: TunnelSpec) -> Tunnel {
        Tunnel {
            spec,
            streams: Vec::new(),
            ready: Vec::new(),
            counters: TunnelCounters::default(),
        }
    }

    /// A packet for the hosts' transport reached its destination: it goes to `ready`
    /// now, with what it lets go, or is held.
    pub fn arrive(&mut self, ctx: &mut SvcCtx<impl SvcSched>, pkt: PktId) {
        let p = ctx.net.pool().get(pkt);
        if p.proto != Proto::TCP || p.payload_bytes == 0 {
            self.ready.push(pkt);
            return;
        }
        let (flow, seq, end) = (
            p.flow_id as usize,
            p.seq,
            p.seq + u64::from(p.payload_bytes),
        );
        if self.streams.len() <= flow {
            self.streams.resize_with(flow + 1, || Stream {
                deadline_ps: NEVER,
                ..Default::default()
            });
        }
        let s = &mut self.streams[flow];
        if seq > s.expected {
            self.hold(ctx, flow, pkt, seq);
            return;
        }
        s.expected = s.expected.max(end);
        self.ready.push(pkt);
        self.drain(ctx, flow);
    }

    /// Holds `pkt` (ahead of a hole), or lets everything go if the buffer is full.
    fn hold(&mut self, ctx: &mut SvcCtx<impl SvcSched>, flow: usize, pkt: PktId, seq: u64) {
        let pool = ctx.net.pool();
        let s = &mut self.streams[flow];
        let at = s.held.partition_point(|&h| pool.get(h).seq < seq);
        s.held.insert(at, pkt);
        self.counters.held += 1;
        if s.held.len() as u32 > self.spec.limit {
            self.release_all(ctx, flow);
            return;
        }
        if s.held.len() == 1 {
            let now = ctx.ev.now();
            s.deadline_ps = now + self.spec.hold_ps;
            if !s.timer_armed {
                s.timer_armed = true;
                ctx.ev.schedule(
                    s.deadline_ps,
                    SvcEvent::Timer {
                        service: TRANSPORT,
                        tag: flow as u32,
                    },
                );
            }
        }
    }

    /// Sends up what now follows in order.
    fn drain(&mut self, ctx: &mut SvcCtx<impl SvcSched>, flow: usize) {
        let pool = ctx.net.pool();
        let s = &mut self.streams[flow];
        let n = s
            .held
            .iter()
            .take_while(|&&h| {
                let p = pool.get(h);
                let go = p.seq <= s.expected;
                if go {
                    s.expected = s.expected.max(p.seq + u64::from(p.payload_bytes));
                }
                go
            })
            .count();
        self.ready.extend(s.held.drain(..n));
        if s.held.is_empty() {
            s.deadline_ps = NEVER;
        } else if n > 0 {
            s.deadline_ps = ctx.ev.now() + self.spec.hold_ps;
        }
    }

    /// Gives up on the hole: everything held goes up, in order.
    fn release_all(&mut self, ctx: &mut SvcCtx<impl SvcSched>, flow: usize) {
        let pool = ctx.net.pool();
        let s = &mut self.streams[flow];
        if let Some(&last) = s.held.last() {
            let p = pool.get(last);
            s.expected = s.expected.max(p.seq + u64::from(p.payload_bytes));
            self.counters.released_with_hole += 1;
        }
        self.ready.append(&mut s.held);
        s.deadline_ps = NEVER;
    }

    /// A stream's timer: a hole that has lasted its time lets go.
    pub fn on_timer(&mut self, ctx: &mut SvcCtx<impl SvcSched>, tag: u32) {
        let flow = tag as usize;
        let now = ctx.ev.now();
        let s = &mut self.streams[flow];
        if s.deadline_ps == NEVER {
            s.timer_armed = false;
        } else if s.deadline_ps <= now {
            s.timer_armed = false;
            self.release_all(ctx, flow);
        } else {
            ctx.ev.schedule(
                s.deadline_ps,
                SvcEvent::Timer {
                    service: TRANSPORT,
                    tag,
                },
            );
        }
    }

    /// Segments held at the end of a run.
    pub fn held_now(&self) -> usize {
        self.streams.iter().map(|s| s.held.len()).sum()
    }
}

/// Headline figures of a run whose TCP crossed the torus (with or without the tunnel):
/// the (lower) median and least inbound goodput per receiving server (`inbound_gbps`, see
/// `metrics::headline::inbound_gbps_per_host`), and what the tunnel held.
pub fn headline(
    h: &mut serde_json::Map<String, serde_json::Value>,
    t: Option<&Tunnel>,
    mut inbound_gbps: Vec<f64>,
) {
    if let Some(median) = crate::table::lower_median(&mut inbound_gbps) {
        h.insert("median_inbound_gbps_per_server".into(), median.into());
        h.insert("min_inbound_gbps_per_server".into(), inbound_gbps[0].into());
    }
    let Some(t) = t else {
        return;
    };
    h.insert("tunnel_segments_held".into(), t.counters.held.into());
    h.insert(
        "tunnel_holes_given_up".into(),
        t.counters.released_with_hole.into(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Packet;
    use crate::Sim;

    const LEN: u32 = 100;

    fn sim() -> Sim {
        Sim::from_json(
            r#"{"duration":"1ms","topology":{"kind":"torus3d","dims":[3,3,3]},
            "transport":{"kind":"tcp"},"workload":{"kind":"permutation","size":"1KB"}}"#,
        )
        .unwrap()
    }

    fn tunnel(limit: u32) -> Tunnel {
        Tunnel::new(TunnelSpec {
            limit,
            hold_ps: 1_000_000,
        })
    }

    /// Segment `i` (of LEN bytes) of flow `flow` arrives; returns the segment numbers the
    /// tunnel let go.
    fn arrive(s: &mut Sim, t: &mut Tunnel, flow: u32, i: u64) -> Vec<u64> {
        let pkt = s.net.pool_mut().alloc(Packet {
            proto: Proto::TCP,
            flow_id: flow,
            seq: i * u64::from(LEN),
            payload_bytes: LEN,
            ..Default::default()
        });
        let mut ctx = SvcCtx {
            net: &mut s.net,
            hosts: &mut s.hosts,
            ev: &mut s.ev,
        };
        t.arrive(&mut ctx, pkt);
        released(s, t)
    }

    fn released(s: &mut Sim, t: &mut Tunnel) -> Vec<u64> {
        let out = t
            .ready
            .iter()
            .map(|&p| s.net.pool().get(p).seq / u64::from(LEN))
            .collect();
        t.ready.clear();
        out
    }

    #[test]
    fn segments_go_up_in_order_and_retransmissions_at_once() {
        let (mut s, mut t) = (sim(), tunnel(64));
        assert_eq!(arrive(&mut s, &mut t, 0, 0), [0]);
        assert_eq!(arrive(&mut s, &mut t, 0, 3), [] as [u64; 0]);
        assert_eq!(arrive(&mut s, &mut t, 0, 2), [] as [u64; 0]);
        // Another flow is not held behind this one's hole.
        assert_eq!(arrive(&mut s, &mut t, 1, 0), [0]);
        assert_eq!(arrive(&mut s, &mut t, 0, 1), [1, 2, 3]);
        assert_eq!(
            arrive(&mut s, &mut t, 0, 2),
            [2],
            "a duplicate goes up at once"
        );
        assert_eq!(arrive(&mut s, &mut t, 0, 4), [4]);
        assert_eq!(t.counters.held, 2);
        assert_eq!(t.counters.released_with_hole, 0);
        assert_eq!(t.held_now(), 0);
    }

    #[test]
    fn a_full_buffer_lets_everything_go_in_order() {
        let (mut s, mut t) = (sim(), tunnel(2));
        assert_eq!(arrive(&mut s, &mut t, 0, 5), [] as [u64; 0]);
        assert_eq!(arrive(&mut s, &mut t, 0, 3), [] as [u64; 0]);
        assert_eq!(arrive(&mut s, &mut t, 0, 4), [3, 4, 5]);
        assert_eq!(t.counters.released_with_hole, 1);
        // The hole (0 to 2) is TCP's to recover: its segments go up as they come.
        assert_eq!(arrive(&mut s, &mut t, 0, 1), [1]);
        assert_eq!(arrive(&mut s, &mut t, 0, 6), [6]);
    }

    #[test]
    fn a_hole_that_lasts_its_hold_lets_go() {
        let (mut s, mut t) = (sim(), tunnel(64));
        assert_eq!(arrive(&mut s, &mut t, 7, 2), [] as [u64; 0]);
        assert_eq!(arrive(&mut s, &mut t, 7, 1), [] as [u64; 0]);
        // The first event of the tunnel's is its timer, at the hold.
        let timer = loop {
            let e = s.ev.pop_until(crate::engine::NEVER).expect("a timer");
            if let crate::sim::SimEvent::Svc(SvcEvent::Timer { service, tag }) = e.kind {
                break (e.time_ps, service, tag);
            }
        };
        assert_eq!(timer, (1_000_000, TRANSPORT, 7));
        let mut ctx = SvcCtx {
            net: &mut s.net,
            hosts: &mut s.hosts,
            ev: &mut s.ev,
        };
        t.on_timer(&mut ctx, 7);
        assert_eq!(released(&mut s, &mut t), [1, 2]);
        assert_eq!(t.counters.released_with_hole, 1);
        assert_eq!(arrive(&mut s, &mut t, 7, 3), [3]);
    }
}
