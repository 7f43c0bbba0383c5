//! EQDS (Olteanu et al., "An edge-queued datagram service for all datacenter traffic",
//! NSDI 2022), its NDP back end: the queueing moves to the sending host, and packets
//! enter the network only as the receiver hands out credit in bytes, over switches that
//! trim (`scheme::trim`).
//!
//! A sender starts a flow speculatively: new packets at line rate while it holds
//! speculative credit (`speculative` bytes), until the first word from its receiver (an
//! ACK, NACK or PULL, about a round trip later). From then on it sends only on credit,
//! which PULLs bring as a cumulative count of bytes; a packet is sent while the credit is
//! above zero and costs its bytes on the wire. Every data packet tells the receiver the
//! pull target: the credit it has been given plus what it still has to send (at most a
//! window of `speculative` bytes) less what it holds. The receiver (`eqds_rx.rs`)
//! acknowledges every data packet and NACKs every trimmed header at once; its host's pull
//! pacer sends one PULL per full packet's time on the host's link, each worth a full
//! packet's bytes, first to flows owed packets their headers were trimmed from, in turn,
//! then in turn to flows whose target is above what they were pulled, and when none asks,
//! to unfinished flows up to a window beyond their target. A NACKed packet
//! goes again on credit. A sender that hears nothing for `rto` while packets it sent are
//! unacknowledged queues every one of them to go again; one that waits to send again
//! without credit after `rto` of silence sends a request to send (RTS) naming those
//! bytes, which the receiver pulls first, as it does trims (again each `rto`: an RTS may
//! be lost). A receiver that has the whole flow answers whatever comes late with an ACK
//! of all of it.
//!
//! Packets carry IPv4 and EQDS's header in 64 bytes around a payload of at most `payload`
//! bytes; ACKs, NACKs, PULLs and RTSs are 64 bytes (htsim's sizes). A host's flows take
//! turns at its NIC, one packet each, while the NIC holds less than two full frames.
//! Simplified: no ACK coalescing or SACK (an ACK per data packet), and no path penalties
//! after a NACK;
//! EQDS's other back ends and its host API are left out. Protocol number 202 (one IANA
//! leaves unassigned).

use super::ndp::Bits;
use super::{HostPath, Note, TransportBuild, TransportKind, TransportSched, Wire};
use crate::check::ConfigError;
use crate::engine::{TimePs, NEVER};
use crate::packet::{five_tuple_hash, framing, Packet, PktId, Proto};

/// Its protocol number.
pub const PROTO: Proto = Proto(202);
/// IPv4 and EQDS's header, the bytes a data packet carries beyond its payload and all a
/// control packet or a trimmed header is.
pub const HEADER_BYTES: u32 = 64;

/// `dst_port` of each kind of packet.
const DATA: u16 = 1;
const ACK: u16 = 2;
const NACK: u16 = 3;
const PULL: u16 = 4;
const RTS: u16 = 5;
/// An ACK's `seq` that acknowledges the whole flow (a receiver that has it all answers so
/// whatever comes late: a copy, a trimmed header, an RTS).
const ALL: u64 = u64::MAX;

/// `[eqds]`: EQDS's senders and receivers.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Payload bytes per packet (default: the most the hosts' links carry), 256B to 64KB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<crate::units::Bytes>,
    /// Bytes a flow may send before its first credit, and the most credit it asks for
    /// beyond what it holds (default: a full packet's round trip on the longest path from
    /// host 0, at its link's rate), 1B to 64MB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speculative: Option<crate::units::Bytes>,
    /// ECMP entropy values a sender's packets take in turn (default 256), 1 to 65,536.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paths: Option<i64>,
    /// Silence after which a sender sends its unacknowledged packets again (default:
    /// 150us and six times the drain of an 8-packet data queue at the hosts' rate,
    /// htsim's EQDS's rule).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rto: Option<crate::units::Duration>,
}

/// `[eqds]` resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    /// None: the most the hosts' links carry.
    pub payload_bytes: Option<u32>,
    /// None: a round trip's bytes.
    pub speculative_bytes: Option<u64>,
    pub paths: u32,
    /// None: htsim's rule, from the hosts' links.
    pub rto_ps: Option<TimePs>,
}

impl Default for Spec {
    fn default() -> Self {
        Params::default().resolve().expect("the defaults are valid")
    }
}

impl Params {
    /// Checks `[eqds]` and fills in its defaults (but those the network sets).
    pub fn resolve(&mut self) -> Result<Spec, ConfigError> {
        use crate::check::{err, int_in};
        let payload = super::resolve_payload("eqds.payload", self.payload)?;
        let speculative = match self.speculative {
            Some(b) if !(1..=64 << 20).contains(&b.0) => {
                return Err(err("eqds.speculative", b, "1B to 64MB"))
            }
            b => b.map(|b| b.0),
        };
        let paths = int_in("eqds.paths", *self.paths.get_or_insert(256), 1, 65_536)?;
        let rto_ps = match self.rto {
            Some(d) => Some(crate::check::positive_duration("eqds.rto", d)?),
            None => None,
        };
        Ok(Spec {
            payload_bytes: payload,
            speculative_bytes: speculative,
            paths,
            rto_ps,
        })
    }
}

/// Checks what EQDS needs of the network: packets the hosts' links carry whole.
pub fn check_network(spec: &Spec, net: &crate::net::Network) -> Result<(), ConfigError> {
    match spec.payload_bytes {
        Some(p) => super::check_packet_fits("eqds.payload", p, HEADER_BYTES, net),
        None => Ok(()),
    }
}

/// A host's sender (its NIC had no room), a flow's timeout, and a host's pull pacer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timer {
    Send,
    Timeout,
    Pull,
}

/// One of EQDS's timers: `id` is the flow's, or for `Send` and `Pull` the host's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EqdsTimer {
    pub id: u32,
    pub what: Timer,
}

/// One flow, both ends.
#[derive(Clone, Debug)]
pub(super) struct Flow {
    pub(super) src: u32,
    pub(super) dst: u32,
    pub(super) app: Option<u32>,
    pub(super) hash: u32,
    pub(super) size: u64,
    pub(super) packets: u32,
    start_ps: TimePs,
    /// Sender: the next new packet, the packets acknowledged (and their count), those to
    /// go again (queued in `resend`), whether it still speculates and its speculative
    /// credit, its credit from pulls (bytes; below zero by less than a packet after a
    /// send) and the pulled bytes heard of.
    next: u32,
    acked: Bits,
    n_acked: u32,
    again: Bits,
    resend: std::collections::VecDeque<u32>,
    speculating: bool,
    spec_credit: i64,
    credit: i64,
    pulled_heard: u64,
    path: u32,
    timeout_at: TimePs,
    deadline_ps: TimePs,
    done_ps: Option<TimePs>,
    /// Receiver: packets and bytes taken, the highest pull target heard, bytes pulled so
    /// far, bytes owed first (trimmed or asked for by an RTS), whether it waits in its
    /// host's pacer's lists (owed bytes first; pull target), and when the last byte
    /// arrived.
    pub(super) got: Bits,
    pub(super) got_bytes: u64,
    pub(super) target: u64,
    pub(super) pulled: u64,
    pub(super) owed: u64,
    pub(super) in_rtx: bool,
    pub(super) in_active: bool,
    pub(super) in_idle: bool,
    pub(super) received_ps: Option<TimePs>,
}

impl Flow {
    /// What it may send now, if anything: a packet to go again first, else its next new
    /// one, while it holds credit.
    fn sendable(&self) -> Option<(u32, bool)> {
        let credit = self.credit
            + if self.speculating {
                self.spec_credit
            } else {
                0
            };
        if credit <= 0 || self.done_ps.is_some() {
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

/// What EQDS did, over the run.
#[derive(Clone, Copy, Debug, Default)]
pub struct EqdsStats {
    pub data_packets: u64,
    pub speculative_packets: u64,
    pub resent_packets: u64,
    pub nacks: u64,
    pub bounced: u64,
    pub pulls: u64,
    pub timeouts: u64,
    pub rts: u64,
}

pub struct Eqds {
    pub spec: Spec,
    /// The payload every full packet carries, and the speculative window in bytes.
    pub payload_bytes: u32,
    pub speculative_bytes: u64,
    pub rto_ps: TimePs,
    pub(super) flows: Vec<Flow>,
    pub(super) pacers: Vec<rx::Pacer>,
    turns: super::turns::Turns,
    pub(super) notes: Vec<Note>,
    pub stats: EqdsStats,
}

impl Eqds {
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
            hash: five_tuple_hash(src, dst, id as u16, (id >> 16) as u16, PROTO),
            size: bytes,
            packets,
            start_ps: path.now(),
            next: 0,
            acked: Bits::new(packets),
            n_acked: 0,
            again: Bits::new(packets),
            resend: Default::default(),
            speculating: true,
            spec_credit: self.speculative_bytes as i64,
            credit: 0,
            pulled_heard: 0,
            path: id.wrapping_mul(0x9E37_79B9) % self.spec.paths,
            timeout_at: NEVER,
            deadline_ps: NEVER,
            done_ps: None,
            got: Bits::new(packets),
            got_bytes: 0,
            target: 0,
            pulled: 0,
            owed: 0,
            in_rtx: false,
            in_active: false,
            in_idle: false,
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

    /// Wire bytes (payload and header) of packet `n` of flow `f`.
    fn packet_bytes(&self, f: &Flow, n: u32) -> u32 {
        super::packet_payload(f.size, self.payload_bytes, n) + HEADER_BYTES
    }

    /// The pull target flow `f` announces: the bytes pulled so far plus what it has yet
    /// to send (at most a window), less the credit it holds.
    fn pull_target(&self, f: &Flow) -> u64 {
        let sent = (u64::from(f.next) * u64::from(self.payload_bytes)).min(f.size);
        let unsent = f.size - sent + u64::from(f.packets - f.next) * u64::from(HEADER_BYTES);
        let want = unsent.min(self.speculative_bytes) as i64;
        let held = f.credit + if f.speculating { f.spec_credit } else { 0 };
        f.pulled_heard + (want - held).max(0) as u64
    }

    /// Sends packet `n` of flow `id` (`again`: the head of its resend queue), paid for
    /// with its bytes on the wire from its credit (speculative credit while it lasts).
    fn send_packet(
        &mut self,
        path: &mut HostPath<'_, impl TransportSched>,
        id: u32,
        n: u32,
        again: bool,
    ) {
        let bytes = self.packet_bytes(&self.flows[id as usize], n);
        let paths = self.spec.paths;
        let f = &mut self.flows[id as usize];
        if again {
            f.resend.pop_front();
            f.again.clear(n);
            self.stats.resent_packets += 1;
        } else {
            f.next += 1;
        }
        if f.speculating && f.spec_credit > 0 {
            f.spec_credit -= i64::from(bytes);
            self.stats.speculative_packets += 1;
        } else {
            f.credit -= i64::from(bytes);
        }
        let entropy = f.path;
        f.path = (f.path + 1) % paths;
        let f = &self.flows[id as usize];
        let p = Packet {
            src_host: f.src,
            dst_host: f.dst,
            dst_port: DATA,
            src_port: entropy as u16,
            proto: PROTO,
            flow_id: id,
            hash: f.hash ^ five_tuple_hash(entropy, id, 0, 0, PROTO),
            frame_bytes: path.frame_bytes(f.src, bytes),
            payload_bytes: bytes - HEADER_BYTES,
            seq: u64::from(n),
            ack: self.pull_target(f),
            framing: framing::TRIMMABLE,
            ts_ps: path.now(),
            ..Default::default()
        };
        self.stats.data_packets += 1;
        let src = f.src;
        path.transmit(src, p);
        let f = &mut self.flows[id as usize];
        if f.timeout_at == NEVER {
            f.deadline_ps = path.now() + self.rto_ps;
            let at = f.deadline_ps;
            self.arm(path, id, Timer::Timeout, at);
        }
    }

    /// Schedules timer `what` of flow (or host) `id` at `at`, unless it is already due
    /// then.
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
                .schedule(at, super::TransportEvent::from(EqdsTimer { id, what }));
        }
    }

    /// At the sender: an ACK, a NACK (its packet goes again on credit) or a PULL (credit
    /// for the bytes its count grew by). Any of them ends speculation.
    fn on_reply(&mut self, path: &mut HostPath<'_, impl TransportSched>, p: &Packet) {
        let id = p.flow_id;
        let now = path.now();
        let rto = self.rto_ps;
        let f = &mut self.flows[id as usize];
        if f.done_ps.is_some() {
            return;
        }
        f.deadline_ps = now + rto;
        f.speculating = false;
        let n = p.seq as u32;
        match p.dst_port {
            ACK if p.seq == ALL => {
                f.n_acked = f.packets;
                f.done_ps = Some(now);
                return;
            }
            ACK => {
                if f.acked.set(n) {
                    f.n_acked += 1;
                }
                // Acknowledged while it waited to go again (its ACK was late).
                if f.again.has(n) {
                    f.again.clear(n);
                    f.resend.retain(|&x| x != n);
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
                if p.ack > f.pulled_heard {
                    f.credit += (p.ack - f.pulled_heard) as i64;
                    f.pulled_heard = p.ack;
                }
            }
        }
        super::turns::pump(self, path, id);
    }

    /// A switch sent data packet `p`'s header back (return-to-sender): it goes again on
    /// the credit it was sent with.
    fn on_bounced(&mut self, path: &mut HostPath<'_, impl TransportSched>, p: &Packet) {
        let id = p.flow_id;
        self.stats.bounced += 1;
        let bytes = self.packet_bytes(&self.flows[id as usize], p.seq as u32);
        let f = &mut self.flows[id as usize];
        if f.done_ps.is_some() || !f.queue_again(p.seq as u32) {
            return;
        }
        f.credit += i64::from(bytes);
        super::turns::pump(self, path, id);
    }

    /// Flow `id` heard nothing for `rto`: every packet sent and not acknowledged goes
    /// again; without credit for them, an RTS asks the receiver for it.
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
        // With nothing in flight (all it sent acknowledged, or waiting to go again) the
        // silence is a busy receiver's, no loss; but a sender waiting to send again
        // without credit asks again below (its RTS may have been lost).
        let in_flight = f.next.saturating_sub(f.n_acked + f.resend.len() as u32);
        if in_flight > 0 {
            self.stats.timeouts += 1;
            f.speculating = false;
            for n in 0..f.next {
                f.queue_again(n);
            }
        }
        let f = &self.flows[id as usize];
        let owed: u64 = f
            .resend
            .iter()
            .map(|&n| u64::from(self.packet_bytes(f, n)))
            .sum();
        if f.credit <= 0 && owed > 0 {
            self.stats.rts += 1;
            self.control(path, id, RTS, (0, owed));
        }
        let f = &mut self.flows[id as usize];
        f.deadline_ps = now + self.rto_ps;
        let at = f.deadline_ps;
        self.arm(path, id, Timer::Timeout, at);
        super::turns::pump(self, path, id);
    }
}

impl super::turns::TakesTurns for Eqds {
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

impl TransportKind for Eqds {
    const NAME: &'static str = "EQDS";
    const PROTO: Proto = PROTO;
    type Event = EqdsTimer;

    fn build(b: &TransportBuild) -> Self {
        let hosts = b.net.n_hosts() as u32;
        let spec = &b.messages.eqds;
        let fits = super::largest_payload(b.net, HEADER_BYTES);
        let payload_bytes = spec.payload_bytes.unwrap_or(fits).max(1);
        let speculative_bytes = spec
            .speculative_bytes
            .unwrap_or_else(|| super::round_trip_bytes(b.net, payload_bytes, HEADER_BYTES));
        // htsim's rule: 150 us and six drains of an 8-packet data queue.
        let nic = &b.net.ports()[b.net.nic_port(0) as usize];
        let frame =
            u64::from(b.net.frame_bytes(0, payload_bytes + HEADER_BYTES) + nic.wire_overhead_bytes);
        let rto_ps = spec
            .rto_ps
            .unwrap_or(150_000_000 + 6 * nic.wire_time_ps(8 * frame));
        Eqds {
            spec: spec.clone(),
            payload_bytes,
            rto_ps,
            speculative_bytes: speculative_bytes.max(1),
            flows: Vec::new(),
            pacers: vec![rx::Pacer::default(); hosts as usize],
            turns: super::turns::Turns::new(hosts),
            notes: Vec::new(),
            stats: EqdsStats::default(),
        }
    }

    fn on_packet(&mut self, path: &mut HostPath<'_, impl TransportSched>, pkt: PktId) {
        let p = path.take(pkt);
        match p.dst_port {
            DATA if p.framing & framing::BOUNCED != 0 => self.on_bounced(path, &p),
            DATA | RTS => self.on_data(path, &p),
            _ => self.on_reply(path, &p),
        }
    }

    fn on_timer(&mut self, path: &mut HostPath<'_, impl TransportSched>, e: EqdsTimer) {
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

    fn timer_host(&self, e: EqdsTimer) -> u32 {
        match e.what {
            Timer::Pull | Timer::Send => e.id,
            Timer::Timeout => self.flows[e.id as usize].src,
        }
    }

    /// Unused in this run: the flows are one list, opened by the workloads' global
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

    fn tables(&self, out: &mut Vec<crate::table::Table>) {
        self.table(out);
    }

    fn headline(
        &self,
        _net: &crate::net::Network,
        h: &mut serde_json::Map<String, serde_json::Value>,
    ) {
        self.headline_figures(h);
    }
}

#[path = "eqds_rx.rs"]
mod rx;

#[cfg(test)]
#[path = "eqds_tests.rs"]
mod tests;
