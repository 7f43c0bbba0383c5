//! The packet paths through a host's CPU: transmit (CPU, then the NIC queue) and receive
//! (the NIC's ring, interrupts with coalescing, NAPI polling, the per-packet receive path).
//! With the ideal stack none of this costs time and packets pass straight through.

use super::{HostEvent, HostSched, Hosts, Interrupts, Threads, MAX_LINKS};

/// A packet the host has finished with, for the layers above.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ready {
    /// Its receive path ended: for its transport (or service).
    Receive(PktId),
    /// Host `host` did its forwarding work: it goes on (after its service's look, if any).
    Forward { pkt: PktId, host: u32 },
}
use crate::engine::TimePs;
use crate::net::Network;
use crate::packet::{framing, PktId};

impl Hosts {
    /// Host `host` sends `pkt`: after the CPU's transmit path (if hosts cost time) it goes
    /// to the network at the host's NIC.
    #[inline]
    pub fn send(&mut self, net: &mut Network, ev: &mut impl HostSched, host: u32, pkt: PktId) {
        net.count_sent();
        if self.packing {
            // Its sending work is charged when it leaves in a frame (`frames_sent`), as
            // the host's own.
            self.state[host as usize].tx_packets += 1;
            net.pool_mut().get_mut(pkt).framing |= framing::OWN;
        } else if self.costed {
            let now = ev.now();
            let p = net.pool().get(pkt);
            let cost = self.tx_packet_ps
                + self.copy_ps(p.payload_bytes as u64)
                + self.half_packet_bytes_ps(p.frame_bytes);
            let core = self.core_of(p.hash);
            let q = self.rx_queue_of(host, p.hash);
            let st = &mut self.state[host as usize];
            st.tx_packets += 1;
            st.rx_queues[q].moderation.sent(p.frame_bytes);
            let done = if self.spec.threads == Threads::PerLink {
                let link = net.out_link_hint(host, pkt, now) as usize;
                self.charge_thread(host, MAX_LINKS + link, now, cost)
            } else {
                self.charge(host, core, now, cost)
            };
            ev.schedule(done, HostEvent::TxDone { pkt });
            return;
        }
        net.host_transmit(ev, host, pkt);
    }

    /// A packet reached host `host`'s NIC. Returns it if the transport takes it now (ideal
    /// hosts); otherwise it enters the receive ring, or is dropped if the ring is full, and
    /// an interrupt follows now, after the coalescing delay, or not at all while the CPU is
    /// still polling the ring.
    #[inline]
    pub fn on_arrival(
        &mut self,
        net: &mut Network,
        ev: &mut impl HostSched,
        host: u32,
        pkt: PktId,
    ) -> Option<PktId> {
        // DMA's TLPs go to memory through the adapter, not through the network stack; a
        // real frame's stack is the real kernel's.
        let proto = net.pool().get(pkt).proto;
        if !self.costed
            || proto == crate::packet::Proto::DMA
            || proto == crate::packet::Proto::FRAME
        {
            return Some(pkt);
        }
        let now = ev.now();
        let ring = self.spec.rx_ring_packets;
        let coalesce = self.spec.rx_coalesce_ps;
        let st = &mut self.state[host as usize];
        if st.rx_in_ring >= ring {
            st.rx_ring_drops += 1;
            let port = net.nic_port(host);
            net.drop_packet(now, port, pkt);
            return None;
        }
        st.rx_in_ring += 1;
        let p = net.pool().get(pkt);
        let queue = self.rx_queue_of(host, p.hash);
        let rq = &mut self.state[host as usize].rx_queues[queue];
        rq.moderation.received(p.frame_bytes);
        if now < rq.polling_until_ps {
            // NAPI: the poll loop is still running and picks the packet up.
            let done = self.receive(net, ev, host, pkt, now);
            let rq = &mut self.state[host as usize].rx_queues[queue];
            rq.polling_until_ps = rq.polling_until_ps.max(done);
            return None;
        }
        rq.waiting.push(pkt);
        if rq.irq_pending {
            return None;
        }
        let at = match self.spec.interrupts {
            Interrupts::Delay => now + coalesce,
            Interrupts::Adaptive => rq.moderation.earliest_irq_ps(now),
        };
        if at == now {
            self.on_irq(net, ev, host, queue);
        } else {
            rq.irq_pending = true;
            let queue = queue as u32;
            ev.schedule(at, HostEvent::Irq { host, queue });
        }
        None
    }

    /// The receive queue of a flow with `hash` at `host` (receive-side scaling: its core's).
    #[inline]
    fn rx_queue_of(&self, host: u32, hash: u32) -> usize {
        if self.state[host as usize].rx_queues.len() == 1 {
            0
        } else {
            self.core_of(hash)
        }
    }

    /// Receive queue `queue`'s interrupt: the CPU takes every packet waiting in it.
    fn on_irq(&mut self, net: &Network, ev: &mut impl HostSched, host: u32, queue: usize) {
        let now = ev.now();
        let rq = &mut self.state[host as usize].rx_queues[queue];
        let mut waiting = std::mem::take(&mut rq.waiting);
        rq.irq_pending = false;
        if self.spec.interrupts == Interrupts::Adaptive {
            rq.moderation.on_irq(now);
        }
        if waiting.is_empty() {
            rq.waiting = waiting;
            return;
        }
        let first = net.pool().get(waiting[0]);
        let irq_done = if self.interrupt_ps == 0 {
            now
        } else if self.spec.threads == Threads::PerLink {
            // The interrupt is the receive thread's, not an application's.
            let link = usize::from(first.in_port).min(MAX_LINKS - 1);
            self.charge_thread(host, link, now, self.interrupt_ps)
        } else {
            let core = self.core_of(first.hash);
            self.charge(host, core, now, self.interrupt_ps)
        };
        let mut last = irq_done;
        for &pkt in &waiting {
            last = last.max(self.receive(net, ev, host, pkt, irq_done));
        }
        let st = &mut self.state[host as usize];
        // A polling stack (no interrupt cost) takes no interrupts; it finds packets by polling.
        st.interrupts += u64::from(self.interrupt_ps > 0);
        let rq = &mut st.rx_queues[queue];
        rq.polling_until_ps = last;
        waiting.clear();
        rq.waiting = waiting;
    }

    /// The receive path of `pkt` on its flow's core, from `ready_ps`; the transport gets the
    /// packet when it ends (returned).
    fn receive(
        &mut self,
        net: &Network,
        ev: &mut impl HostSched,
        host: u32,
        pkt: PktId,
        ready_ps: TimePs,
    ) -> TimePs {
        let p = net.pool().get(pkt);
        let cost = self.rx_own_ps(p) + self.half_packet_bytes_ps(p.frame_bytes);
        let done = if self.spec.threads == Threads::PerLink {
            let link = usize::from(p.in_port).min(MAX_LINKS - 1);
            self.charge_thread(host, link, ready_ps, cost)
        } else {
            let core = self.core_of(p.hash);
            self.charge(host, core, ready_ps, cost)
        };
        self.state[host as usize].rx_packets += 1;
        ev.schedule(
            done + self.hop_latency_ps(p.frame_bytes),
            HostEvent::RxDone { pkt },
        );
        done
    }

    /// A received packet's own fixed work: the receive path, or if it came packed (see
    /// `packed_fixed_ps`) its unpacking plus, for the first packet of a frame, the frame's.
    #[inline]
    fn rx_own_ps(&self, p: &crate::packet::Packet) -> TimePs {
        self.packed_fixed_ps(p.framing, self.rx_packet_ps)
    }

    /// The fixed work of a packet that crossed (or leaves by) a link with `framing_bits`,
    /// whose own frame would cost `frame_ps`: a packet in a packed frame pays its
    /// (un)packing, and the frame's work only if it leads the frame.
    #[inline]
    pub(super) fn packed_fixed_ps(&self, framing_bits: u8, frame_ps: TimePs) -> TimePs {
        let unpack = if framing_bits & framing::PACKED != 0 {
            self.pack_packet_ps
        } else {
            0
        };
        let frame = if framing_bits & framing::TAIL != 0 {
            0
        } else {
            frame_ps
        };
        unpack + frame
    }

    /// A forwarded packet's work as (receiving, sending): half the forwarding path each.
    /// With packing, receiving is as `packed_fixed_ps` gives for the fixed half, plus half its
    /// bytes; sending is charged when it leaves (`frames_sent`).
    #[inline]
    fn forward_halves_ps(&self, p: &crate::packet::Packet) -> (TimePs, TimePs) {
        let bytes = self.forward_ps(p.frame_bytes) - self.forward_packet_ps;
        let fixed = self.forward_packet_ps;
        if !self.packing {
            return (fixed / 2 + bytes / 2, fixed - fixed / 2 + bytes - bytes / 2);
        }
        (self.packed_fixed_ps(p.framing, fixed / 2) + bytes / 2, 0)
    }

    /// Host `host` forwards `pkt` for another server: after its CPU's forwarding work (if
    /// hosts cost time) the packet is handed back up (`Ready::Forward`), now if that work
    /// costs nothing, else when it is done.
    #[inline]
    pub fn forward(
        &mut self,
        net: &mut Network,
        ev: &mut impl HostSched,
        host: u32,
        pkt: PktId,
    ) -> Option<Ready> {
        if !self.costed {
            return Some(Ready::Forward { pkt, host });
        }
        let p = net.pool().get(pkt);
        let ((rx_cost, tx_cost), delay) = (
            self.forward_halves_ps(p),
            self.hop_latency_ps(p.frame_bytes),
        );
        let (frame_bytes, queue) = (p.frame_bytes, self.rx_queue_of(host, p.hash));
        if rx_cost + tx_cost == 0 && delay == 0 {
            return Some(Ready::Forward { pkt, host });
        }
        let now = ev.now();
        let done = if self.spec.threads == Threads::PerLink {
            // Received on the receive thread of the link it came in by, sent on the
            // transmit thread of the link it will most likely leave by.
            let in_link = usize::from(p.in_port).min(MAX_LINKS - 1);
            let rx_done = self.charge_thread(host, in_link, now, rx_cost);
            if tx_cost == 0 {
                // Packing: its sending work waits for its frame (`frames_sent`).
                rx_done
            } else {
                let out_link = net.out_link_hint(host, pkt, now) as usize;
                self.charge_thread(host, MAX_LINKS + out_link, rx_done, tx_cost)
            }
        } else {
            let core = self.core_of(p.hash);
            self.charge(host, core, now, rx_cost + tx_cost)
        };
        let st = &mut self.state[host as usize];
        st.forwarded += 1;
        st.rx_queues[queue].moderation.sent(frame_bytes);
        ev.schedule(done + delay, HostEvent::ForwardDone { pkt, host });
        None
    }

    /// The host layer's packet events. Returns a packet whose receive path ended, for its
    /// transport, or one whose forwarding work ended. (`AppNote` belongs to the
    /// application threads: see `threads`.)
    #[inline]
    pub fn handle_packet_event(
        &mut self,
        net: &mut Network,
        ev: &mut impl HostSched,
        e: HostEvent,
    ) -> Option<Ready> {
        match e {
            HostEvent::Irq { host, queue } => {
                self.on_irq(net, ev, host, queue as usize);
                None
            }
            HostEvent::TxDone { pkt } => {
                let host = net.pool().get(pkt).src_host;
                net.host_transmit(ev, host, pkt);
                None
            }
            HostEvent::RxDone { pkt } => {
                let host = net.pool().get(pkt).dst_host;
                self.state[host as usize].rx_in_ring -= 1;
                Some(Ready::Receive(pkt))
            }
            HostEvent::ForwardDone { pkt, host } => Some(Ready::Forward { pkt, host }),
            HostEvent::AppNote { .. } => None,
        }
    }
}
