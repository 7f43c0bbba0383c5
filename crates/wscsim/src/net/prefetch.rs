//! Prefetches of the state the next event will touch (the engine calls them ahead).

use super::*;

impl Network {
    /// Starts loading what network event `e` will touch first (the next event's; a hint).
    #[inline]
    pub fn prefetch_event(&self, e: NetEvent) {
        match e {
            NetEvent::LinkArrive { port } => self.prefetch_arrival(port),
            NetEvent::PortWake { port } => self.prefetch_wake(port),
            _ => {}
        }
    }

    /// Starts loading the packet that the next arrival on `port`'s link will deliver, so
    /// that its cache miss overlaps the work of the current event.
    #[inline]
    pub fn prefetch_arrival(&self, port: u32) {
        if let Some(&(pkt, _)) = self.wires[port as usize].in_flight.front() {
            self.pool.prefetch(pkt);
        }
    }

    /// Bytes of the state indexed by port that each hop touches: ports, their queues,
    /// schemes and wires (the size that decides whether prefetching far ahead pays).
    pub fn port_state_bytes(&self) -> usize {
        use std::mem::size_of;
        self.ports.len() * (size_of::<Port>() + size_of::<Wire>() + size_of::<Scheme>())
            + self.queues.len() * size_of::<PktQueue>()
    }

    /// The next arrival on `port`'s link is the next event, and its packet was prefetched
    /// one event earlier: starts loading the output port and queue a switch will put it
    /// in (by the ECMP table; a scheme that routes may choose another).
    #[inline]
    pub fn prefetch_route(&self, port: u32) {
        let w = &self.wires[port as usize];
        let Some(&(pkt, _)) = w.in_flight.front() else {
            return;
        };
        if self.pfc.is_some() && self.pool.get(pkt).proto == crate::packet::Proto::PFC {
            return; // a PAUSE frame has no route (its `dst_host` is none)
        }
        self.forward_prefetch(w.to_node, w.to_port, pkt);
    }

    /// Starts loading port `port` and its scheme (its wake-up is two events ahead).
    #[inline]
    pub fn prefetch_port(&self, port: u32) {
        crate::engine::prefetch(&self.ports, port as usize);
        crate::engine::prefetch(&self.schemes, port as usize);
    }

    /// Starts loading the packet port `port`'s scheme will send next (its queue head,
    /// cold after its wait), where the scheme can tell which queue that is.
    #[inline]
    pub fn prefetch_queue_head(&self, port: u32) {
        let pt = &self.ports[port as usize];
        if pt.pkts_queued > 0 {
            let (q0, n) = (pt.q_base as usize, pt.q_count as usize);
            let m0 = pt.mask_base as usize;
            let masks = &self.masks[m0..m0 + n.div_ceil(64)];
            if let Some(q) = self.schemes[port as usize].next_queue_hint(masks, n) {
                let head = self.queues[q0 + q].head;
                if head != packet::NO_PKT {
                    self.pool.prefetch(head);
                }
            }
        }
    }

    /// Starts loading the frame that port `port`'s next wake-up sends from its NIC slot and
    /// the per-service queues it will pull the next from (a torus server's late link
    /// choice).
    #[inline]
    pub fn prefetch_wake(&self, port: u32) {
        // The frame waiting at the NIC, which the wake-up sends.
        if let Some(&pkt) = self.nic_slots.get(port as usize) {
            if pkt != packet::NO_PKT && pkt != NOT_A_SLOT {
                self.pool.prefetch(pkt);
            }
        }
        if let Some(sq) = &self.service_queues {
            let pt = &self.ports[port as usize];
            let nd = &self.nodes[pt.node as usize];
            if port - nd.port_base < nd.forwarder.late_choice_links() {
                sq.prefetch(nd.index, (port - nd.port_base) as usize);
            }
        }
    }

    /// Prefetches host `host`'s NIC port (a packet is about to enter its queue).
    #[inline]
    pub fn prefetch_nic(&self, host: u32) {
        crate::engine::prefetch(&self.ports, self.nic_port(host) as usize);
    }
}
