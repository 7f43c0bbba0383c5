//! NDP (Handley et al., "Re-architecting datacenter networks and stacks for low latency
//! and high performance", SIGCOMM 2017): a receiver-driven transport over switches that
//! trim (`scheme::trim`). A sender starts a flow with a full initial window at line rate,
//! with no handshake, and sprays its packets over all paths (each packet carries a new
//! ECMP entropy value, `paths` of them in turn, so every switch's hash sends it its own
//! way). Then it sends only when its receiver pulls. The receiver (`ndp_rx.rs`) answers
//! every data packet with an ACK and every trimmed header with a NACK at once, and for
//! each arrival of either queues a PULL in its host's pull pacer, which sends one PULL
//! per full data packet's time on the host's link, taking the flows that wait in turn:
//! so the data the pulls bring arrives at the receiver's line rate, however many senders
//! there are. A PULL carries the flow's count of pulls so far; the sender sends as many
//! packets as the count has grown (a lost PULL is made up by the next), a packet a NACK
//! named first, else new data. A header a switch sent back (return-to-sender,
//! `scheme::trim`) goes again at once. A sender that hears nothing for `rto` sends every
//! packet not yet acknowledged again (headers dropped at full header queues).
//!
//! Packets carry IPv4 and NDP's header in 64 bytes around a payload of at most `payload`
//! bytes (default: as much as the hosts' links carry); ACKs, NACKs and PULLs are 64 bytes
//! (htsim's sizes). Simplified: no priority among the receiver's flows (the paper's pacer may favour short ones); bytes count as delivered in any
//! order; the sender's NIC takes what it offers while it holds less than two full frames
//! (an RDMA NIC's scheduler, as RoCE's, `transport::roce`);
//! packets carry protocol number 199 (one IANA leaves unassigned), not UDP's.

use super::{HostPath, Note, TransportBuild, TransportKind, TransportSched, Wire};
use crate::check::ConfigError;
use crate::engine::{TimePs, NEVER};
use crate::packet::{five_tuple_hash, framing, Packet, PktId, Proto};

/// Its protocol number.
pub const PROTO: Proto = Proto(199);
/// IPv4 and NDP's header, the bytes a data packet carries beyond its payload and all a
/// control packet or a trimmed header is.
pub const HEADER_BYTES: u32 = 64;

/// `dst_port` of each kind of packet.
const DATA: u16 = 1;
const ACK: u16 = 2;
const NACK: u16 = 3;
const PULL: u16 = 4;

/// `[ndp]`: NDP's senders and receivers.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Payload bytes per packet (default: the most the hosts' links carry), 256B to 64KB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<crate::units::Bytes>,
    /// Packets a flow sends before its first pull (default 30, about a round trip's worth
    /// at 100 Gbit/s with 9,000-byte packets on a 3-tier fat tree), 1 to 10,000.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_window: Option<i64>,
    /// ECMP entropy values a sender's packets take in turn (default 256), 1 (one path per
    /// flow) to 65,536.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paths: Option<i64>,
    /// Silence after which a sender sends its unacknowledged packets again (default 1ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rto: Option<crate::units::Duration>,
}

/// `[ndp]` resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    /// None: the most the hosts' links carry.
    pub payload_bytes: Option<u32>,
    pub initial_window: u32,
    pub paths: u32,
    pub rto_ps: TimePs,
}

impl Default for Spec {
    fn default() -> Self {
        Params::default().resolve().expect("the defaults are valid")
    }
}

impl Params {
    /// Checks `[ndp]` and fills in its defaults (but the payload's, which the links set).
    pub fn resolve(&mut self) -> Result<Spec, ConfigError> {
        use crate::check::int_in;
        let payload = super::resolve_payload("ndp.payload", self.payload)?;
        let iw = int_in(
            "ndp.initial_window",
            *self.initial_window.get_or_insert(30),
            1,
            10_000,
        )?;
        let paths = int_in("ndp.paths", *self.paths.get_or_insert(256), 1, 65_536)?;
        let rto = *self
            .rto
            .get_or_insert(crate::units::Duration(1_000_000_000));
        let rto_ps = crate::check::positive_duration("ndp.rto", rto)?;
        Ok(Spec {
            payload_bytes: payload,
            initial_window: iw,
            paths,
            rto_ps,
        })
    }
}

/// Checks what NDP needs of the network: packets the hosts' links carry whole.
pub fn check_network(spec: &Spec, net: &crate::net::Network) -> Result<(), ConfigError> {
    let Some(payload) = spec.payload_bytes else {
        return Ok(());
    };
    super::check_packet_fits("ndp.payload", payload, HEADER_BYTES, net)
}

/// A host's sender (its NIC had no room), a flow's timeout, and a host's pull pacer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timer {
    Send,
    Timeout,
    Pull,
}

/// One of NDP's timers: `id` is the flow's, or for `Send` and `Pull` the host's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NdpTimer {
    pub id: u32,
    pub what: Timer,
}

/// A set of packet numbers, a bit each.
#[derive(Clone, Debug, Default)]
pub(super) struct Bits(Vec<u64>);

impl Bits {
    pub(super) fn new(n: u32) -> Self {
        Bits(vec![0; n.div_ceil(64) as usize])
    }
    pub(super) fn has(&self, i: u32) -> bool {
        self.0[(i >> 6) as usize] & (1 << (i & 63)) != 0
    }
    /// Sets bit `i`; whether it was clear.
    pub(super) fn set(&mut self, i: u32) -> bool {
        let w = &mut self.0[(i >> 6) as usize];
        let was = *w & (1 << (i & 63)) == 0;
        *w |= 1 << (i & 63);
        was
    }
    pub(super) fn clear(&mut self, i: u32) {
        self.0[(i >> 6) as usize] &= !(1 << (i & 63));
    }
}

impl Flow {
    /// What it may send now, if anything: a packet asked for again first, else its next
    /// new one, if it has credit.
    fn sendable(&self) -> Option<(u32, bool)> {
        if self.credit == 0 || self.done_ps.is_some() {
            return None;
        }
        match self.resend.front() {
            Some(&n) => Some((n, true)),
            None if self.next < self.packets => Some((self.next, false)),
            None => None,
        }
    }

    /// Queues packet `n` to go again, unless it was acknowledged or already waits.
    fn queue_again(&mut self, n: u32) -> bool {
        let queued = !self.acked.has(n) && self.again.set(n);
        if queued {
            self.resend.push_back(n);
        }
        queued
    }
}

/// One flow, both ends.
#[derive(Clone, Debug)]
pub(super) struct Flow {
    pub(super) src: u32,
    pub(super) dst: u32,
    pub(super) app: Option<u32>,
    hash: u32,
    pub(super) size: u64,
    pub(super) packets: u32,
    start_ps: TimePs,
    /// Sender: the next new packet, the packets acknowledged (and their count), those a
    /// NACK or the timeout asked for again (queued in `resend`), packets it may still send
    /// (the initial window, then pulls), and the highest pull count heard.
    next: u32,
    acked: Bits,
    n_acked: u32,
    again: Bits,
    resend: std::collections::VecDeque<u32>,
    credit: u32,
    pull_seen: u64,
    /// Which entropy value its next packet takes.
    path: u32,
    timeout_at: TimePs,
    deadline_ps: TimePs,
    done_ps: Option<TimePs>,
    /// Receiver: packets taken, bytes taken, pulls waiting in its host's pacer, pulls
    /// sent so far, and when the last byte arrived.
    pub(super) got: Bits,
    pub(super) got_bytes: u64,
    pub(super) pulls_waiting: u32,
    pub(super) pulls_sent: u64,
    pub(super) received_ps: Option<TimePs>,
}

/// What NDP did, over the run.
#[derive(Clone, Copy, Debug, Default)]
pub struct NdpStats {
    pub data_packets: u64,
    /// Packets sent again (after a NACK or a timeout).
    pub resent_packets: u64,
    pub nacks: u64,
    /// Headers switches sent back (return-to-sender).
    pub bounced: u64,
    pub pulls: u64,
    pub timeouts: u64,
}

pub struct Ndp {
    pub spec: Spec,
    /// The payload every full packet carries.
    pub payload_bytes: u32,
    pub(super) flows: Vec<Flow>,
    /// Each host's pull pacer, and its send queue.
    pub(super) pacers: Vec<rx::Pacer>,
    turns: super::turns::Turns,
    pub(super) notes: Vec<Note>,
    pub stats: NdpStats,
}

impl Ndp {
    /// Starts a flow of `bytes` from `src` to `dst` now; `app` hears at `dst` of the bytes
    /// taken (`Note::Delivered`). Its id.
    pub fn send(
        &mut self,
        path: &mut HostPath<'_, impl TransportSched>,
        (src, dst): (u32, u32),
        app: Option<u32>,
        bytes: u64,
    ) -> u32 {
        let id = self.flows.len() as u32;
        let packets = bytes.div_ceil(u64::from(self.payload_bytes)).max(1) as u32;
        self.flows.push(Flow {
            src,
            dst,
            app,
            hash: five_tuple_hash(src, dst, id as u16, 0, PROTO),
            size: bytes,
            packets,
            start_ps: path.now(),
            next: 0,
            acked: Bits::new(packets),
            n_acked: 0,
            again: Bits::new(packets),
            resend: Default::default(),
            credit: self.spec.initial_window,
            pull_seen: 0,
            path: id.wrapping_mul(0x9E37_79B9) % self.spec.paths,
            timeout_at: NEVER,
            deadline_ps: NEVER,
            done_ps: None,
            got: Bits::new(packets),
            got_bytes: 0,
            pulls_waiting: 0,
            pulls_sent: 0,
            received_ps: None,
        });
        super::turns::pump(self, path, id);
        id
    }

    /// When flow `id`'s last byte reached its receiver, if it has.
    pub fn received_ps(&self, id: u32) -> Option<TimePs> {
        self.flows[id as usize].received_ps
    }

    /// The frame a full data packet makes on `host`'s link.
    pub(super) fn full_frame(&self, path: &HostPath<'_, impl TransportSched>, host: u32) -> u32 {
        path.frame_bytes(host, self.payload_bytes + HEADER_BYTES)
    }

    /// Payload bytes of packet `n` of flow `f`.
    pub(super) fn payload_of(&self, f: &Flow, n: u32) -> u32 {
        super::packet_payload(f.size, self.payload_bytes, n)
    }

    /// Sends packet `n` of flow `id`: the head of its resend queue (`again`), or its next
    /// new one.
    fn send_packet(
        &mut self,
        path: &mut HostPath<'_, impl TransportSched>,
        id: u32,
        n: u32,
        again: bool,
    ) {
        let paths = self.spec.paths;
        let f = &self.flows[id as usize];
        let payload = self.payload_of(f, n);
        let f = &mut self.flows[id as usize];
        if again {
            f.resend.pop_front();
            f.again.clear(n);
            self.stats.resent_packets += 1;
        } else {
            f.next += 1;
        }
        f.credit -= 1;
        let entropy = f.path;
        f.path = (f.path + 1) % paths;
        let p = Packet {
            src_host: f.src,
            dst_host: f.dst,
            dst_port: DATA,
            src_port: entropy as u16,
            proto: PROTO,
            flow_id: id,
            hash: f.hash ^ five_tuple_hash(entropy, id, 0, 0, PROTO),
            frame_bytes: path.frame_bytes(f.src, payload + HEADER_BYTES),
            payload_bytes: payload,
            seq: u64::from(n),
            framing: framing::TRIMMABLE,
            ts_ps: path.now(),
            ..Default::default()
        };
        self.stats.data_packets += 1;
        let src = f.src;
        path.transmit(src, p);
        let f = &mut self.flows[id as usize];
        if f.timeout_at == NEVER {
            f.deadline_ps = path.now() + self.spec.rto_ps;
            let at = f.deadline_ps;
            self.arm(path, id, Timer::Timeout, at);
        }
    }

    /// Schedules timer `what` of flow (or pacing host) `id` at `at`, unless it is already
    /// due then.
    pub(super) fn arm(
        &mut self,
        path: &mut HostPath<'_, impl TransportSched>,
        id: u32,
        what: Timer,
        at: TimePs,
    ) {
        let slot = match what {
            Timer::Send => &mut self.turns.send_at[id as usize],
            Timer::Timeout => &mut self.flows[id as usize].timeout_at,
            Timer::Pull => &mut self.pacers[id as usize].pull_at,
        };
        if *slot != at {
            *slot = at;
            path.ev
                .schedule(at, super::TransportEvent::from(NdpTimer { id, what }));
        }
    }

    /// At the sender: an ACK, a NACK (its packet goes again on the next credit) or a
    /// PULL (credit for as many packets as its count grew).
    fn on_reply(&mut self, path: &mut HostPath<'_, impl TransportSched>, p: &Packet) {
        let id = p.flow_id;
        let now = path.now();
        let rto = self.spec.rto_ps;
        let f = &mut self.flows[id as usize];
        if f.done_ps.is_some() {
            return;
        }
        f.deadline_ps = now + rto;
        let n = p.seq as u32;
        match p.dst_port {
            ACK => {
                if f.acked.set(n) {
                    f.n_acked += 1;
                }
                if f.n_acked == f.packets {
                    f.done_ps = Some(now);
                }
                return;
            }
            NACK => {
                self.stats.nacks += 1;
                f.queue_again(n);
            }
            _ => {
                if p.ack > f.pull_seen {
                    f.credit += (p.ack - f.pull_seen) as u32;
                    f.pull_seen = p.ack;
                }
            }
        }
        super::turns::pump(self, path, id);
    }

    /// A switch sent data packet `p`'s header back (return-to-sender): the sender sends
    /// it again at once, its receiver having heard nothing of it to pull for.
    fn on_bounced(&mut self, path: &mut HostPath<'_, impl TransportSched>, p: &Packet) {
        let id = p.flow_id;
        let n = p.seq as u32;
        self.stats.bounced += 1;
        let f = &mut self.flows[id as usize];
        if f.done_ps.is_some() || !f.queue_again(n) {
            return;
        }
        f.credit += 1;
        super::turns::pump(self, path, id);
    }

    /// Flow `id` heard nothing for `rto`: every packet sent and not acknowledged goes
    /// again (it has credit for all of them).
    fn on_timeout(&mut self, path: &mut HostPath<'_, impl TransportSched>, id: u32) {
        let now = path.now();
        let f = &mut self.flows[id as usize];
        f.timeout_at = NEVER;
        if f.done_ps.is_some() {
            return;
        }
        if now < f.deadline_ps {
            let at = f.deadline_ps;
            return self.arm(path, id, Timer::Timeout, at);
        }
        self.stats.timeouts += 1;
        for n in 0..f.next {
            f.queue_again(n);
        }
        // Credit for everything waiting to go again, NACKed earlier too (the pulls for
        // those may be what was lost).
        f.credit = f.credit.max(f.resend.len() as u32);
        super::turns::pump(self, path, id);
    }
}

impl super::turns::TakesTurns for Ndp {
    fn turns(&mut self) -> &mut super::turns::Turns {
        &mut self.turns
    }

    fn can_send(&self, id: u32) -> bool {
        self.flows[id as usize].sendable().is_some()
    }

    fn send_next<S: TransportSched>(&mut self, path: &mut HostPath<'_, S>, id: u32) {
        let (n, again) = self.flows[id as usize].sendable().expect("it may send");
        self.send_packet(path, id, n, again);
    }

    fn host_of(&self, id: u32) -> u32 {
        self.flows[id as usize].src
    }

    fn frame<S: TransportSched>(&self, path: &HostPath<'_, S>, host: u32) -> u32 {
        self.full_frame(path, host)
    }

    fn arm_send<S: TransportSched>(&mut self, path: &mut HostPath<'_, S>, host: u32, at: TimePs) {
        self.arm(path, host, Timer::Send, at);
    }
}

impl TransportKind for Ndp {
    const NAME: &'static str = "NDP";
    const PROTO: Proto = PROTO;
    type Event = NdpTimer;

    fn build(b: &TransportBuild) -> Self {
        let hosts = b.net.n_hosts() as u32;
        let fits = super::largest_payload(b.net, HEADER_BYTES);
        Ndp {
            spec: b.messages.ndp.clone(),
            payload_bytes: b.messages.ndp.payload_bytes.unwrap_or(fits).max(1),
            flows: Vec::new(),
            pacers: vec![rx::Pacer::default(); hosts as usize],
            turns: super::turns::Turns::new(hosts),
            notes: Vec::new(),
            stats: NdpStats::default(),
        }
    }

    fn on_packet(&mut self, path: &mut HostPath<'_, impl TransportSched>, pkt: PktId) {
        let p = path.take(pkt);
        match p.dst_port {
            DATA if p.framing & framing::BOUNCED != 0 => self.on_bounced(path, &p),
            DATA => self.on_data(path, &p),
            _ => self.on_reply(path, &p),
        }
    }

    fn on_timer(&mut self, path: &mut HostPath<'_, impl TransportSched>, e: NdpTimer) {
        let now = path.now();
        match e.what {
            Timer::Send if self.turns.send_at[e.id as usize] == now => {
                self.turns.send_at[e.id as usize] = NEVER;
                super::turns::drain(self, path, e.id);
            }
            Timer::Timeout if self.flows[e.id as usize].timeout_at == now => {
                self.on_timeout(path, e.id)
            }
            Timer::Pull if self.pacers[e.id as usize].pull_at == now => {
                self.pacers[e.id as usize].pull_at = NEVER;
                self.pace(path, e.id);
            }
            _ => {} // a timer set again since
        }
    }

    fn timer_host(&self, e: NdpTimer) -> u32 {
        match e.what {
            Timer::Pull | Timer::Send => e.id,
            Timer::Timeout => self.flows[e.id as usize].src,
        }
    }

    /// Unused in this run: the flows are one list, opened by the flows workload's global
    /// events (which keep hosts on the simulation's thread).
    fn runs_in_partitions(&self) -> bool {
        self.flows.is_empty()
    }

    fn has_notes(&self) -> bool {
        !self.notes.is_empty()
    }

    fn take_notes(&mut self, into: &mut Vec<Note>) {
        into.append(&mut self.notes);
    }

    /// The `ndp` table: one row per flow (none if the run started none).
    fn tables(&self, out: &mut Vec<crate::table::Table>) {
        use crate::table::{Column, Table};
        if self.flows.is_empty() {
            return;
        }
        let f = &self.flows;
        let int = |g: &dyn Fn(&Flow) -> i64| Column::I64(f.iter().map(g).collect());
        let us = |g: &dyn Fn(&Flow) -> Option<TimePs>| {
            Column::F64(
                f.iter()
                    .map(|x| g(x).map_or(f64::NAN, |t| (t - x.start_ps) as f64 / 1e6))
                    .collect(),
            )
        };
        out.push(Table {
            name: "ndp",
            columns: vec![
                ("flow", Column::I64((0..f.len() as i64).collect())),
                ("src", int(&|x| i64::from(x.src))),
                ("dst", int(&|x| i64::from(x.dst))),
                ("size_bytes", int(&|x| x.size as i64)),
                (
                    "start_us",
                    Column::F64(f.iter().map(|x| x.start_ps as f64 / 1e6).collect()),
                ),
                ("fct_us", us(&|x| x.received_ps)),
                ("acked_us", us(&|x| x.done_ps)),
                ("received_bytes", int(&|x| x.got_bytes as i64)),
                ("pulls", int(&|x| x.pulls_sent as i64)),
            ],
        });
    }

    fn headline(
        &self,
        _net: &crate::net::Network,
        h: &mut serde_json::Map<String, serde_json::Value>,
    ) {
        if self.flows.is_empty() {
            return;
        }
        let done = self
            .flows
            .iter()
            .filter(|f| f.received_ps.is_some())
            .count() as u64;
        let s = &self.stats;
        for (k, v) in [
            ("ndp_flows", self.flows.len() as u64),
            ("ndp_completed", done),
            ("ndp_nacks", s.nacks),
            ("ndp_bounced", s.bounced),
            ("ndp_pulls", s.pulls),
            ("ndp_timeouts", s.timeouts),
            ("ndp_resent_packets", s.resent_packets),
        ] {
            h.insert(k.into(), v.into());
        }
    }
}

#[path = "ndp_rx.rs"]
mod rx;

#[cfg(test)]
#[path = "ndp_tests.rs"]
mod tests;
