//! CamCubeOS's reliable transport service (the paper names it, 569 lines of C#, and does
//! not describe it; this follows the simulator specification's choice): a sliding window
//! of packets, cumulative acknowledgements, and a retransmission timeout that doubles on
//! each expiry (go-back-N from the first unacknowledged packet). A transfer goes to a
//! server, or to a key (point-to-key: delivered at whichever server is the key's root when
//! each packet arrives; a receiver that takes over starts from nothing, so the sender goes
//! back to what it acknowledges). Receivers keep what arrives out of order within the
//! window and acknowledge every packet.
//!
//! Packet fields: `flow_id` the transfer, `seq` the packet's number (data) or the
//! cumulative acknowledgement (ack: every packet below it has arrived), `src_port` 0 for
//! data and 1 for acks, `ts_ps` when the data packet was sent.

use super::{OnPath, SvcCtx, SvcEvent, SvcSched, RELIABLE, SERVICE_HEADER_BYTES};
use crate::engine::{TimePs, NEVER};
use crate::packet::{Packet, PktId, Proto, TO_KEY};

/// Bytes of an acknowledgement's payload (flow and cumulative count).
const ACK_PAYLOAD_BYTES: u32 = 16;

/// `[workload]` parameters of kind "reliable" (defaults are filled in by config::resolve).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Sending hosts (default: every host but the destination).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sources: Option<Vec<i64>>,
    /// A host index, or "key": each source sends to a key of its own (drawn with the run's
    /// seed), delivered at the key's root (default 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination: Option<serde_json::Value>,
    /// Bytes each source sends (default 1 MB).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<crate::units::Bytes>,
    /// Payload bytes per packet (default: what fills the link's MTU).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packet_size: Option<crate::units::Bytes>,
    /// Packets in flight (default 64).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<i64>,
    /// Initial retransmission timeout (default 10 ms), doubled on each expiry up to 1 s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rto: Option<crate::units::Duration>,
}

/// Where a transfer goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum To {
    Host(u32),
    /// The routing bits of a key.
    Key(u64),
}

/// The transfers of a run, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReliableSpec {
    pub transfers: Vec<(u32, To)>,
    pub size_bytes: u64,
    pub payload_bytes: u32,
    pub window: u32,
    pub rto_ps: TimePs,
}

/// One transfer: its sender's state and outcome.
#[derive(Clone, Debug)]
pub struct Transfer {
    pub src: u32,
    pub to: To,
    pub packets: u32,
    /// Packets below this are acknowledged.
    pub acked: u32,
    /// The next packet to send.
    next: u32,
    rto_ps: TimePs,
    /// When the retransmission timer expires (NEVER: not armed).
    deadline_ps: TimePs,
    pub retransmits: u32,
    pub timeouts: u32,
    pub end_ps: TimePs,
}

/// A receiver's state at one server.
#[derive(Clone, Debug, Default)]
struct Receiver {
    host: u32,
    /// Packets below this have arrived.
    expected: u32,
    /// Arrived beyond `expected`, by offset (within the window).
    beyond: Vec<bool>,
}

pub struct Reliable {
    pub spec: ReliableSpec,
    pub transfers: Vec<Transfer>,
    receivers: Vec<Receiver>,
    done: usize,
}

impl Reliable {
    pub fn new(spec: ReliableSpec) -> Reliable {
        let packets = spec
            .size_bytes
            .div_ceil(u64::from(spec.payload_bytes))
            .max(1) as u32;
        let transfers = spec
            .transfers
            .iter()
            .map(|&(src, to)| Transfer {
                src,
                to,
                packets,
                acked: 0,
                next: 0,
                rto_ps: spec.rto_ps,
                deadline_ps: NEVER,
                retransmits: 0,
                timeouts: 0,
                end_ps: NEVER,
            })
            .collect::<Vec<_>>();
        let receivers = vec![
            Receiver {
                host: u32::MAX,
                ..Default::default()
            };
            transfers.len()
        ];
        Reliable {
            spec,
            transfers,
            receivers,
            done: 0,
        }
    }

    pub fn done(&self) -> bool {
        self.done == self.transfers.len()
    }

    pub fn start(&mut self, ctx: &mut SvcCtx<impl SvcSched>) {
        for f in 0..self.transfers.len() {
            self.fill_window(ctx, f);
        }
    }

    /// Sends what the window allows and arms the timer if something is in flight.
    fn fill_window(&mut self, ctx: &mut SvcCtx<impl SvcSched>, f: usize) {
        let window = self.spec.window;
        loop {
            let t = &self.transfers[f];
            if t.next >= t.packets || t.next >= t.acked + window {
                break;
            }
            let seq = t.next;
            self.transfers[f].next += 1;
            self.send_data(ctx, f, seq);
        }
        let now = ctx.ev.now();
        let t = &mut self.transfers[f];
        if t.acked < t.next && t.deadline_ps == NEVER {
            t.deadline_ps = now + t.rto_ps;
            ctx.ev.schedule(
                t.deadline_ps,
                SvcEvent::Timer {
                    service: RELIABLE,
                    tag: f as u32,
                },
            );
        }
    }

    fn send_data(&mut self, ctx: &mut SvcCtx<impl SvcSched>, f: usize, seq: u32) {
        let t = &self.transfers[f];
        let sent = u64::from(seq) * u64::from(self.spec.payload_bytes);
        let payload = (self.spec.size_bytes - sent).min(u64::from(self.spec.payload_bytes)) as u32;
        let (dst, key) = match t.to {
            To::Host(h) => (h, 0),
            To::Key(k) => (TO_KEY, k),
        };
        let frame = ctx.net.frame_bytes(t.src, payload + SERVICE_HEADER_BYTES);
        let pkt = ctx.net.pool.alloc(Packet {
            proto: Proto::Service,
            dst_port: RELIABLE,
            src_host: t.src,
            dst_host: dst,
            key,
            flow_id: f as u32,
            seq: u64::from(seq),
            ts_ps: ctx.ev.now(),
            payload_bytes: payload,
            frame_bytes: frame,
            hash: crate::engine::rng::mix64(f as u64) as u32,
            ..Default::default()
        });
        ctx.hosts.send(ctx.net, ctx.ev, t.src, pkt);
    }

    pub fn on_path(&mut self, _ctx: &mut SvcCtx<impl SvcSched>, _host: u32, _pkt: PktId) -> OnPath {
        OnPath::Forward
    }

    pub fn deliver(&mut self, ctx: &mut SvcCtx<impl SvcSched>, host: u32, pkt: PktId) {
        let p = *ctx.net.pool.get(pkt);
        ctx.net.delivered(pkt);
        let f = p.flow_id as usize;
        if p.src_port == 1 {
            self.on_ack(ctx, f, p.seq as u32);
            return;
        }
        let window = self.spec.window as usize;
        let r = &mut self.receivers[f];
        if r.host != host {
            // A new receiver (the first, or a key's new root): it starts from nothing.
            *r = Receiver {
                host,
                expected: 0,
                beyond: vec![false; window],
            };
        }
        let seq = p.seq as u32;
        if seq >= r.expected && ((seq - r.expected) as usize) < window {
            r.beyond[(seq - r.expected) as usize] = true;
            while r.beyond[0] {
                r.beyond.rotate_left(1);
                r.beyond[window - 1] = false;
                r.expected += 1;
            }
        }
        let ack = r.expected;
        let frame = ctx
            .net
            .frame_bytes(host, ACK_PAYLOAD_BYTES + SERVICE_HEADER_BYTES);
        let a = ctx.net.pool.alloc(Packet {
            proto: Proto::Service,
            dst_port: RELIABLE,
            src_port: 1,
            src_host: host,
            dst_host: p.src_host,
            flow_id: p.flow_id,
            seq: u64::from(ack),
            payload_bytes: ACK_PAYLOAD_BYTES,
            frame_bytes: frame,
            hash: p.hash,
            ..Default::default()
        });
        ctx.hosts.send(ctx.net, ctx.ev, host, a);
    }

    fn on_ack(&mut self, ctx: &mut SvcCtx<impl SvcSched>, f: usize, ack: u32) {
        let now = ctx.ev.now();
        let t = &mut self.transfers[f];
        if t.end_ps != NEVER {
            return;
        }
        if ack < t.acked {
            // A receiver that took over knows less: go back to what it has.
            t.next = ack;
        }
        if ack != t.acked {
            t.acked = ack;
            t.rto_ps = self.spec.rto_ps;
            t.deadline_ps = NEVER;
        }
        if t.acked >= t.packets {
            t.end_ps = now;
            self.done += 1;
            return;
        }
        self.fill_window(ctx, f);
    }

    /// Transfer `tag`'s timer: if it is the live one, go back to the first unacknowledged
    /// packet and double the timeout.
    pub fn on_timer(&mut self, ctx: &mut SvcCtx<impl SvcSched>, tag: u32) {
        let f = tag as usize;
        let now = ctx.ev.now();
        let t = &mut self.transfers[f];
        if t.deadline_ps != now || t.end_ps != NEVER {
            return;
        }
        t.timeouts += 1;
        t.retransmits += t.next - t.acked;
        t.next = t.acked;
        t.rto_ps = (t.rto_ps * 2).min(crate::engine::PS_PER_S);
        t.deadline_ps = NEVER;
        self.fill_window(ctx, f);
    }
}

/// The transfers of a run, one row each.
pub fn table(r: &Reliable) -> crate::metrics::Table {
    use crate::metrics::{floats, ints, us};
    let t = &r.transfers;
    crate::metrics::Table {
        name: "transfers",
        columns: vec![
            ("src", ints(t, |x| i64::from(x.src))),
            (
                "dst",
                ints(t, |x| match x.to {
                    To::Host(h) => i64::from(h),
                    To::Key(_) => -1,
                }),
            ),
            ("size_bytes", ints(t, |_| r.spec.size_bytes as i64)),
            (
                "end_us",
                floats(t, |x| {
                    if x.end_ps == NEVER {
                        f64::NAN
                    } else {
                        us(x.end_ps)
                    }
                }),
            ),
            ("retransmits", ints(t, |x| i64::from(x.retransmits))),
            ("timeouts", ints(t, |x| i64::from(x.timeouts))),
        ],
    }
}

/// Headline figures: transfers done, the last one's end, retransmissions and timeouts.
pub fn headline(h: &mut serde_json::Map<String, serde_json::Value>, r: &Reliable) {
    let t = &r.transfers;
    let done: Vec<&Transfer> = t.iter().filter(|x| x.end_ps != NEVER).collect();
    h.insert("transfers".into(), t.len().into());
    h.insert("transfers_completed".into(), done.len().into());
    if let Some(last) = done.iter().map(|x| x.end_ps).max() {
        h.insert("last_transfer_end_us".into(), (last as f64 / 1e6).into());
    }
    h.insert(
        "transfer_retransmits".into(),
        t.iter()
            .map(|x| u64::from(x.retransmits))
            .sum::<u64>()
            .into(),
    );
    h.insert(
        "transfer_timeouts".into(),
        t.iter().map(|x| u64::from(x.timeouts)).sum::<u64>().into(),
    );
}
