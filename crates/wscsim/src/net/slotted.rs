//! The network under the timeslot engine (`sim::slots`): Flexplane's emulator model, in
//! which time advances in slots of one full-size frame at the slowest link's rate, every
//! port sends at most its share of packets per slot (one, or the multiple of the slowest
//! rate its own rate is) and a packet sent in one slot reaches the far end at the start of
//! the next. Routing, the schemes (classify, enqueue, schedule), buffers, marks and drops
//! are the event engine's own code; what is left out is time inside a slot: propagation,
//! port-to-port latency and cut-through, and frames shorter than the slot's.

use super::Network;
use crate::engine::TimePs;
use crate::packet::{framing, PktId};

/// Where a packet that crossed a link lands.
pub enum Landing {
    /// Queued at (or dropped by) a switch's output port.
    Switched,
    /// Reached host `host`, which consumes it (`Network::delivered`).
    Host { pkt: PktId, host: u32 },
}

impl Network {
    /// A host's own packet enters the queue of the NIC port it leaves by (a host with
    /// several NICs spreads its flows over them by flow hash). Returns the port, or None
    /// if the NIC's scheme dropped it.
    pub fn slot_enqueue_at_host(&mut self, host: u32, pkt: PktId, now: TimePs) -> Option<u32> {
        let nd = &self.nodes[self.host_nodes[host as usize] as usize];
        let port = nd.port_base + self.pool.get(pkt).hash % nd.nports;
        self.admit(port, pkt, 0, now).then_some(port)
    }

    /// `pkt`, sent out of `port` in the previous slot, reaches the far end at `now`: a
    /// switch routes it and offers it to the output port's scheme; a host gets it.
    #[inline]
    pub fn slot_land(&mut self, port: u32, pkt: PktId, now: TimePs) -> (Landing, Option<u32>) {
        let node = self.ports[port as usize].peer_node;
        match self.forward_slot_route(node, pkt) {
            None => {
                let host = self.nodes[node as usize].index;
                (Landing::Host { pkt, host }, None)
            }
            Some(out) => {
                let in_port = u32::from(self.pool.get(pkt).in_port);
                let queued = self.admit(out, pkt, in_port, now);
                (Landing::Switched, queued.then_some(out))
            }
        }
    }

    /// Port `port` sends its scheme's next packet in the slot that starts at `now` and
    /// lasts `slot_ps`: counted as a departure (bytes on the wire, waiting time, a hop),
    /// its last bit at the far end when the slot ends.
    #[inline]
    pub fn slot_send(&mut self, port: u32, now: TimePs, slot_ps: TimePs) -> Option<PktId> {
        let pkt = self.dequeue(port, now)?;
        let pt = &mut self.ports[port as usize];
        let p = self.pool.get_mut(pkt);
        pt.stats.tx_pkts += 1;
        pt.stats.tx_wire_bytes += u64::from(p.frame_bytes + pt.wire_overhead_bytes);
        pt.stats.wait_ps_sum += now - p.enqueued_ps;
        self.counters.packet_hops += 1;
        self.counters.data_packet_hops += u64::from(p.payload_bytes > 0);
        p.rx_done_ps = now + slot_ps;
        p.in_port = pt.peer_in_port as u16;
        p.hops = p.hops.saturating_add(1);
        p.framing &= !framing::OWN;
        Some(pkt)
    }

    /// Whether `port` has packets queued.
    #[inline]
    pub fn slot_backlogged(&self, port: u32) -> bool {
        self.ports[port as usize].pkts_queued > 0
    }
}
