//! The timeslot engine (`engine.mode = "timeslots"`): Flexplane's emulator model. Time
//! advances in slots of one full-size frame at the slowest link's rate. In each slot,
//! in this order:
//!
//! 1. what was sent in the previous slot lands: a switch routes it and offers it to the
//!    output port's scheme; a host's transport takes it (its last bit arrived as the slot
//!    began);
//! 2. the open-loop sources' datagrams made since the previous slot began enter their
//!    hosts' NIC queues (made at their own times, with the same generators and draws as
//!    under the event engine, so both engines carry the same packets);
//! 3. every port with packets queued sends its share: one packet, or as many as its rate
//!    is a multiple of the slowest.
//!
//! No event is scheduled and no time inside a slot is kept: propagation, port-to-port
//! latency and cut-through are not modelled (Flexplane's emulator leaves them out too),
//! and a shorter frame still takes a whole slot. What the schemes decide, the buffers,
//! marks and drops are the event engine's own code (`net::slotted`). Everything that needs
//! events at their own times (transports, host CPUs, failures) is refused by the scenario
//! check (`config::timeslots`).

use super::Sim;
use crate::config::ConfigError;
use crate::engine::{serialisation_ps, Driver, TimePs};
use crate::net::slotted::Landing;
use crate::net::Network;
use crate::packet::{PktId, UDP_IP_HEADER_BYTES};

/// The timeslot engine's state beside the network's.
pub struct Slots {
    /// One slot: the workload's frame, with its link's per-frame overhead, at the slowest
    /// link's rate.
    pub slot_ps: TimePs,
    /// Slots run so far (the next one's index).
    pub done: u64,
    /// Packets each port sends per slot (its rate over the slowest link's).
    per_slot: Vec<u32>,
    /// One bit per port with packets queued (ports send in index order).
    backlog: Vec<u64>,
    /// What left ports in the last slot, by port, to land in the next.
    on_wires: Vec<(u32, PktId)>,
    landing: Vec<(u32, PktId)>,
    /// When each source makes its next datagram.
    next_ps: Vec<TimePs>,
    /// The next queue sample's time (NEVER: none).
    next_sample_ps: TimePs,
}

impl Slots {
    /// The slots of `net` for datagrams of `payload_bytes` sent by host `host`; refuses
    /// links whose rates are not whole multiples of the slowest.
    pub fn new(net: &Network, host: u32, payload_bytes: u32) -> Result<Slots, ConfigError> {
        let slowest = net.ports().iter().map(|p| p.rate_bps).min().unwrap_or(1);
        let per_slot = net
            .ports()
            .iter()
            .map(|p| {
                if p.rate_bps % slowest == 0 {
                    Ok((p.rate_bps / slowest) as u32)
                } else {
                    Err(crate::config::err(
                        "engine.mode",
                        "\"timeslots\"",
                        format!("\"events\" here, or links whose rates are whole multiples of the slowest ({slowest} bit/s; a link runs at {} bit/s)", p.rate_bps),
                    ))
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let nic = &net.ports()[net.nic_port(host) as usize];
        let frame = net.frame_bytes(host, payload_bytes + UDP_IP_HEADER_BYTES);
        let wire = u64::from(frame + nic.wire_overhead_bytes);
        Ok(Slots {
            slot_ps: serialisation_ps(wire, slowest).max(1),
            done: 0,
            per_slot,
            backlog: vec![0; net.ports().len().div_ceil(64)],
            on_wires: Vec::new(),
            landing: Vec::new(),
            next_ps: Vec::new(),
            next_sample_ps: crate::engine::NEVER,
        })
    }

    #[inline]
    fn mark_backlogged(&mut self, port: u32) {
        self.backlog[(port >> 6) as usize] |= 1u64 << (port & 63);
    }
}

impl Sim {
    /// Opens the sources' streams and draws each one's first datagram time.
    pub(super) fn start_slots(&mut self) {
        self.started = true;
        let slots = self.slots.as_mut().expect("timeslot run");
        let (id, src) = self.apps.udp_source_mut().expect("checked: a UDP workload");
        src.open(id, &mut self.transports.udp, &mut self.metrics.flows);
        // The sources and sinks listen to nothing.
        self.transports.udp.silent = true;
        slots.next_ps = (0..src.sources.len()).map(|i| src.gap_ps(i)).collect();
        if self.metrics.sample_interval_ps > 0 && self.metrics.max_queue_samples > 0 {
            slots.next_sample_ps = 0;
        }
    }

    /// Runs whole slots that begin before `until_ps` (or the end of the run). Returns
    /// whether the run ended.
    pub(super) fn run_slots(&mut self, until_ps: TimePs) -> bool {
        if !self.started {
            self.start_slots();
        }
        let horizon = until_ps.min(self.apps.end_ps);
        let mut slots = self.slots.take().expect("timeslot run");
        while slots.done * slots.slot_ps < horizon {
            let now = slots.done * slots.slot_ps;
            self.land(&mut slots, now);
            self.make_datagrams(&mut slots, now);
            self.send(&mut slots, now);
            if now >= slots.next_sample_ps {
                self.metrics.sample_queues(now, &self.net);
                slots.next_sample_ps = match self.metrics.queue_samples_truncated {
                    true => crate::engine::NEVER,
                    false => now + self.metrics.sample_interval_ps,
                };
            }
            slots.done += 1;
        }
        self.slots = Some(slots);
        self.ev.idle_until(horizon);
        if horizon >= self.apps.end_ps {
            self.finished = true;
            self.apps.finish(&self.transports.udp, &mut self.metrics);
        }
        self.finished
    }

    /// Step 1: what left ports in the previous slot lands.
    // Kept out of line: the three steps inlined into one loop ran 4% slower.
    #[inline(never)]
    fn land(&mut self, slots: &mut Slots, now: TimePs) {
        std::mem::swap(&mut slots.on_wires, &mut slots.landing);
        for i in 0..slots.landing.len() {
            let (port, pkt) = slots.landing[i];
            match self.net.slot_land(port, pkt, now) {
                (Landing::Switched, Some(out)) => slots.mark_backlogged(out),
                (Landing::Switched, None) => {}
                (Landing::Host { pkt, .. }, _) => {
                    // Only UDP datagrams travel here (`config::timeslots`).
                    self.transports
                        .udp
                        .datagram_arrived(self.net.pool().get(pkt));
                    self.net.delivered(pkt);
                }
            }
        }
        slots.landing.clear();
    }

    /// Step 2: the sources' datagrams made up to the slot's start enter their NICs.
    #[inline(never)]
    fn make_datagrams(&mut self, slots: &mut Slots, now: TimePs) {
        let end_ps = self.apps.end_ps;
        let (_, src) = self.apps.udp_source_mut().expect("checked: a UDP workload");
        for i in 0..slots.next_ps.len() {
            while slots.next_ps[i] <= now && slots.next_ps[i] < end_ps {
                let made_ps = slots.next_ps[i];
                let pkt = src.next_datagram(i, &mut self.net, &mut self.transports.udp, made_ps);
                if let Some(port) = self.net.slot_enqueue_at_host(src.sources[i], pkt, now) {
                    slots.mark_backlogged(port);
                }
                slots.next_ps[i] = made_ps + src.gap_ps(i);
            }
        }
    }

    /// Step 3: every backlogged port sends its share of packets.
    #[inline(never)]
    fn send(&mut self, slots: &mut Slots, now: TimePs) {
        for w in 0..slots.backlog.len() {
            let mut bits = slots.backlog[w];
            while bits != 0 {
                let port = (w as u32) << 6 | bits.trailing_zeros();
                bits &= bits - 1;
                for _ in 0..slots.per_slot[port as usize] {
                    match self.net.slot_send(port, now, slots.slot_ps) {
                        Some(pkt) => slots.on_wires.push((port, pkt)),
                        None => break,
                    }
                }
                if !self.net.slot_backlogged(port) {
                    slots.backlog[w] &= !(1u64 << (port & 63));
                }
            }
        }
    }
}
