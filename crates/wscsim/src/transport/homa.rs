//! Homa (Montazeri, Li, Alizadeh and Ousterhout, "Homa: A Receiver-Driven Low-Latency
//! Transport Protocol Using Network Priorities", SIGCOMM 2018): messages, not streams,
//! over switches with strict priority queues (`switch.scheme = "priority"`).
//!
//! A sender sends the first `rtt_bytes` of a message at once, unscheduled, at a priority
//! its size picks (shorter messages higher, `homa_prio.rs`); the rest only as its
//! receiver grants it. The receiver (`homa_rx.rs`) grants to the `overcommitment`
//! messages with the fewest bytes left to arrive (SRPT), keeping `rtt_bytes` granted
//! ahead of what has arrived, one grant per data packet, and names in each grant the
//! scheduled priority the message takes: the shortest the highest of the levels in use,
//! the lowest levels used when fewer messages are granted. A sender sends, one packet at a
//! time when its NIC is idle, from the message with the fewest bytes left to send. Losses are found by timeouts: a receiver that hears nothing of a
//! message it knows for `rto` asks again for the packets it granted and misses (RESEND);
//! a sender that hears nothing for `rto` of a message not yet complete sends its first
//! packet again (the receiver may never have heard of it). The receiver acknowledges a
//! complete message (one ACK, which ends the sender's timer).
//!
//! Data packets are sprayed: each takes its own ECMP hash, so multipath fabrics spread
//! them over their paths (the paper's simulated fabric sprays packets at random).
//! Packets carry IPv4 and Homa's header in 64 bytes around at most `payload` bytes (as
//! NDP's, `transport::ndp`); GRANT, RESEND and ACK are 64 bytes, sent at the highest
//! priority. Simplified: no BUSY packets and no incast optimisation (the paper's section
//! 3.8); a RESEND asks for packets one by one; the unscheduled priorities are computed
//! once from the workload's size distribution, where the paper's receivers measure it;
//! priorities ride in the packet's DSCP (the priority scheme serves the highest first).
//! Protocol number 146, the one Homa's Linux module uses.

use super::ndp::Bits;
use super::{HostPath, Note, TransportBuild, TransportKind, TransportSched, Wire};
use crate::engine::{TimePs, NEVER};
use crate::packet::{five_tuple_hash, Packet, PktId, Proto};

pub use prio::{Params, Spec};

/// Its protocol number.
pub const PROTO: Proto = Proto(146);
/// IPv4 and Homa's header: the bytes a data packet carries beyond its payload, and all
/// a control packet is.
pub const HEADER_BYTES: u32 = 64;

/// `dst_port` of each kind of packet.
const DATA: u16 = 1;
const GRANT: u16 = 2;
const RESEND: u16 = 3;
const ACK: u16 = 4;

/// Checks what Homa needs of the network: packets the hosts' links carry whole.
pub fn check_network(
    spec: &Spec,
    net: &crate::net::Network,
) -> Result<(), crate::check::ConfigError> {
    match spec.payload_bytes {
        Some(p) => super::check_packet_fits("homa.payload", p, HEADER_BYTES, net),
        None => Ok(()),
    }
}

/// A host's sender (`Send`: its NIC had no room), a message's timeout at its sender and
/// at its receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timer {
    Send,
    SenderTimeout,
    ReceiverTimeout,
}

/// One of Homa's timers: `id` is the message's, or for `Send` the host's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HomaTimer {
    pub id: u32,
    pub what: Timer,
}

/// One message, both ends.
#[derive(Clone, Debug)]
pub(super) struct Msg {
    pub(super) src: u32,
    pub(super) dst: u32,
    app: Option<u32>,
    hash: u32,
    pub(super) size: u64,
    pub(super) packets: u32,
    /// Packets sent unscheduled (the first `rtt_bytes`' worth), and their priority.
    pub(super) unscheduled: u32,
    unscheduled_prio: u8,
    start_ps: TimePs,
    /// Sender: the next new packet, packets it may send (the unscheduled ones, then as
    /// granted), the priority of granted packets, packets a RESEND asked for, whether the
    /// receiver acknowledged it all, and its timer.
    next: u32,
    granted: u32,
    sched_prio: u8,
    resend: std::collections::VecDeque<u32>,
    done: bool,
    tx_deadline_ps: TimePs,
    tx_timer_ps: TimePs,
    /// Receiver: whether it knows the message, the packets taken (count, bytes), the
    /// packets granted so far, its timer, grants sent, and when the last byte arrived.
    pub(super) known: bool,
    pub(super) got: Bits,
    pub(super) n_got: u32,
    pub(super) got_bytes: u64,
    pub(super) grant_sent: u32,
    pub(super) grant_prio: u8,
    pub(super) rx_deadline_ps: TimePs,
    pub(super) rx_timer_ps: TimePs,
    pub(super) grants: u32,
    pub(super) received_ps: Option<TimePs>,
}

impl Msg {
    /// Packets it may send now: one asked for again, else the next new one if granted.
    fn sendable(&self) -> Option<(u32, bool)> {
        match self.resend.front() {
            Some(&n) => Some((n, true)),
            None if self.next < self.granted => Some((self.next, false)),
            None => None,
        }
    }
}

/// What Homa did, over the run.
#[derive(Clone, Copy, Debug, Default)]
pub struct HomaStats {
    pub data_packets: u64,
    pub unscheduled_packets: u64,
    pub grants: u64,
    /// Packets sent again (asked for by a RESEND, or a sender's timeout).
    pub resent_packets: u64,
    pub resends: u64,
    pub timeouts: u64,
}

/// A host's outgoing messages that have something to send, and its send timer.
#[derive(Clone, Debug)]
pub(super) struct Sender {
    active: Vec<u32>,
    send_at: TimePs,
}

pub struct Homa {
    pub spec: Spec,
    /// The payload every full packet carries.
    pub payload_bytes: u32,
    /// Priorities, cutoffs and grant window as built for this network.
    pub(super) plan: prio::Plan,
    pub(super) msgs: Vec<Msg>,
    senders: Vec<Sender>,
    /// Each host's incoming messages still waiting for grants.
    pub(super) grantable: Vec<Vec<u32>>,
    /// The messages a receiver grants to, chosen afresh on each arrival (kept to save
    /// allocating).
    pub(super) chosen: Vec<u32>,
    pub(super) notes: Vec<Note>,
    pub stats: HomaStats,
}

impl Homa {
    /// Starts a message of `bytes` from `src` to `dst` now; `app` hears at `dst` of the
    /// bytes taken (`Note::Delivered`). Its id.
    pub fn send(
        &mut self,
        path: &mut HostPath<'_, impl TransportSched>,
        (src, dst): (u32, u32),
        app: Option<u32>,
        bytes: u64,
    ) -> u32 {
        let id = self.msgs.len() as u32;
        let packets = bytes.div_ceil(u64::from(self.payload_bytes)).max(1) as u32;
        let unscheduled = packets.min(self.plan.rtt_packets);
        self.msgs.push(Msg {
            src,
            dst,
            app,
            hash: five_tuple_hash(src, dst, id as u16, (id >> 16) as u16, PROTO),
            size: bytes,
            packets,
            unscheduled,
            unscheduled_prio: self.plan.unscheduled_prio(bytes),
            start_ps: path.now(),
            next: 0,
            granted: unscheduled,
            sched_prio: 0,
            resend: Default::default(),
            done: false,
            tx_deadline_ps: NEVER,
            tx_timer_ps: NEVER,
            known: false,
            got: Bits::new(packets),
            n_got: 0,
            got_bytes: 0,
            grant_sent: unscheduled,
            grant_prio: 0,
            rx_deadline_ps: NEVER,
            rx_timer_ps: NEVER,
            grants: 0,
            received_ps: None,
        });
        self.senders[src as usize].active.push(id);
        self.touch_sender(path, id);
        self.pump(path, src);
        id
    }

    /// When message `id`'s last byte reached its receiver, if it has.
    pub fn received_ps(&self, id: u32) -> Option<TimePs> {
        self.msgs[id as usize].received_ps
    }

    /// Payload bytes of packet `n` of message `m`.
    fn payload_of(&self, m: &Msg, n: u32) -> u32 {
        super::packet_payload(m.size, self.payload_bytes, n)
    }

    /// Host `host` sends, when its NIC is idle, the next packet of the message with the
    /// fewest bytes left to send (SRPT); else it tries again when the frame on the wire
    /// ends. (The paper's simulated senders choose each packet when the link frees, so a
    /// new short message waits behind at most the frame on the wire.)
    fn pump(&mut self, path: &mut HostPath<'_, impl TransportSched>, host: u32) {
        let frame = path.frame_bytes(host, self.payload_bytes + HEADER_BYTES);
        loop {
            let Some(id) = self.shortest_sendable(host) else {
                return;
            };
            if let Some(at) = path.nic_full_until(host, frame, 0) {
                return self.arm(path, host, Timer::Send, at);
            }
            let (n, again) = self.msgs[id as usize].sendable().expect("it has one");
            self.send_packet(path, id, n, again);
        }
    }

    /// Of host `host`'s outgoing messages, the one with a packet to send and the fewest
    /// bytes left (ties to the older); messages with nothing left leave the list.
    fn shortest_sendable(&mut self, host: u32) -> Option<u32> {
        let active = &mut self.senders[host as usize].active;
        let msgs = &self.msgs;
        active.retain(|&id| {
            let m = &msgs[id as usize];
            !m.done && (m.next < m.packets || !m.resend.is_empty())
        });
        active
            .iter()
            .filter(|&&id| msgs[id as usize].sendable().is_some())
            .min_by_key(|&&id| {
                let m = &msgs[id as usize];
                (m.packets - m.next, id)
            })
            .copied()
    }

    /// Sends packet `n` of message `id` (`again`: the head of its resend queue).
    fn send_packet(
        &mut self,
        path: &mut HostPath<'_, impl TransportSched>,
        id: u32,
        n: u32,
        again: bool,
    ) {
        let payload = self.payload_of(&self.msgs[id as usize], n);
        let m = &mut self.msgs[id as usize];
        if again {
            m.resend.pop_front();
            self.stats.resent_packets += 1;
        } else {
            m.next += 1;
        }
        let unscheduled = n < m.unscheduled;
        self.stats.data_packets += 1;
        self.stats.unscheduled_packets += u64::from(unscheduled);
        let p = Packet {
            src_host: m.src,
            dst_host: m.dst,
            dst_port: DATA,
            proto: PROTO,
            flow_id: id,
            // Sprayed: each packet its own path (as the paper's simulations).
            hash: m.hash ^ n.wrapping_mul(0x9E37_79B9),
            frame_bytes: path.frame_bytes(m.src, payload + HEADER_BYTES),
            payload_bytes: payload,
            dscp: if unscheduled {
                m.unscheduled_prio
            } else {
                m.sched_prio
            },
            seq: u64::from(n),
            ts_ps: path.now(),
            ..Default::default()
        };
        let src = m.src;
        path.transmit(src, p);
    }

    /// Schedules timer `what` of message (or host) `id` at `at`, unless it is already
    /// due then.
    pub(super) fn arm(
        &mut self,
        path: &mut HostPath<'_, impl TransportSched>,
        id: u32,
        what: Timer,
        at: TimePs,
    ) {
        let slot = match what {
            Timer::Send => &mut self.senders[id as usize].send_at,
            Timer::SenderTimeout => &mut self.msgs[id as usize].tx_timer_ps,
            Timer::ReceiverTimeout => &mut self.msgs[id as usize].rx_timer_ps,
        };
        if *slot == NEVER || at < *slot {
            *slot = at;
            path.ev
                .schedule(at, super::TransportEvent::from(HomaTimer { id, what }));
        }
    }

    /// The sender of message `id` heard from its receiver (or started it): its timeout
    /// moves to `rto` from now.
    fn touch_sender(&mut self, path: &mut HostPath<'_, impl TransportSched>, id: u32) {
        let at = path.now() + self.spec.rto_ps;
        self.msgs[id as usize].tx_deadline_ps = at;
        self.arm(path, id, Timer::SenderTimeout, at);
    }

    /// At the sender: a GRANT (more packets, at the priority it names), a RESEND (that
    /// packet again) or the ACK (the message arrived whole).
    fn on_reply(&mut self, path: &mut HostPath<'_, impl TransportSched>, p: &Packet) {
        let id = p.flow_id;
        if self.msgs[id as usize].done {
            return;
        }
        self.touch_sender(path, id);
        let m = &mut self.msgs[id as usize];
        match p.dst_port {
            GRANT => {
                m.granted = m.granted.max(p.seq as u32).min(m.packets);
                m.sched_prio = p.ack as u8;
            }
            RESEND => {
                // Packets not sent yet (the receiver cannot tell them from lost ones) go
                // in their turn.
                let n = p.seq as u32;
                if n < m.next && !m.resend.contains(&n) {
                    m.resend.push_back(n);
                }
                let src = m.src;
                let active = &mut self.senders[src as usize].active;
                if !active.contains(&id) {
                    active.push(id);
                }
            }
            _ => {
                m.done = true;
                return;
            }
        }
        let src = self.msgs[id as usize].src;
        if self.senders[src as usize].send_at == NEVER {
            self.pump(path, src);
        }
    }

    /// Message `id`'s sender heard nothing for `rto`: its first packet goes again, so
    /// that a receiver that never heard of it learns of it.
    fn on_sender_timeout(&mut self, path: &mut HostPath<'_, impl TransportSched>, id: u32) {
        let now = path.now();
        let m = &mut self.msgs[id as usize];
        m.tx_timer_ps = NEVER;
        if m.done {
            return;
        }
        if now < m.tx_deadline_ps {
            let at = m.tx_deadline_ps;
            return self.arm(path, id, Timer::SenderTimeout, at);
        }
        self.stats.timeouts += 1;
        let src = m.src;
        if !m.resend.contains(&0) {
            m.resend.push_back(0);
        }
        if !self.senders[src as usize].active.contains(&id) {
            self.senders[src as usize].active.push(id);
        }
        self.touch_sender(path, id);
        if self.senders[src as usize].send_at == NEVER {
            self.pump(path, src);
        }
    }
}

impl TransportKind for Homa {
    const NAME: &'static str = "Homa";
    const PROTO: Proto = PROTO;
    type Event = HomaTimer;

    fn build(b: &TransportBuild) -> Self {
        let hosts = b.net.n_hosts() as u32;
        let fits = super::largest_payload(b.net, HEADER_BYTES);
        let payload_bytes = b.messages.homa.payload_bytes.unwrap_or(fits).max(1);
        Homa {
            plan: prio::Plan::build(&b.messages.homa, b.net, payload_bytes),
            spec: b.messages.homa.clone(),
            payload_bytes,
            msgs: Vec::new(),
            senders: vec![
                Sender {
                    active: Vec::new(),
                    send_at: NEVER,
                };
                hosts as usize
            ],
            grantable: vec![Vec::new(); hosts as usize],
            chosen: Vec::new(),
            notes: Vec::new(),
            stats: HomaStats::default(),
        }
    }

    fn on_packet(&mut self, path: &mut HostPath<'_, impl TransportSched>, pkt: PktId) {
        let p = path.take(pkt);
        match p.dst_port {
            DATA => self.on_data(path, &p),
            _ => self.on_reply(path, &p),
        }
    }

    fn on_timer(&mut self, path: &mut HostPath<'_, impl TransportSched>, e: HomaTimer) {
        let now = path.now();
        match e.what {
            Timer::Send if self.senders[e.id as usize].send_at == now => {
                self.senders[e.id as usize].send_at = NEVER;
                self.pump(path, e.id);
            }
            Timer::SenderTimeout if self.msgs[e.id as usize].tx_timer_ps == now => {
                self.on_sender_timeout(path, e.id)
            }
            Timer::ReceiverTimeout if self.msgs[e.id as usize].rx_timer_ps == now => {
                self.on_receiver_timeout(path, e.id)
            }
            _ => {} // a timer set again since
        }
    }

    fn timer_host(&self, e: HomaTimer) -> u32 {
        match e.what {
            Timer::Send => e.id,
            Timer::SenderTimeout => self.msgs[e.id as usize].src,
            Timer::ReceiverTimeout => self.msgs[e.id as usize].dst,
        }
    }

    /// Unused in this run: the messages are one list, opened by the workloads' global
    /// events (which keep hosts on the simulation's thread).
    fn runs_in_partitions(&self) -> bool {
        self.msgs.is_empty()
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

#[path = "homa_prio.rs"]
mod prio;
#[path = "homa_rx.rs"]
mod rx;

#[cfg(test)]
#[path = "homa_tests.rs"]
mod tests;
