//! A port's transmitter: it wakes, takes the next packet (with packing, the packets that
//! ride in its frame), serialises it at line rate and schedules its arrival at the far
//! end (cut-through: once the header is in).

use super::*;

impl Network {
    /// The port's previous transmission has ended.
    #[inline]
    pub fn on_port_wake(&mut self, ev: &mut impl Scheduler<NetEvent>, port: u32) {
        let pt = &mut self.ports[port as usize];
        if pt.wake_at_ps != ev.now() {
            return;
        }
        pt.wake_at_ps = NEVER;
        self.try_transmit(ev, port);
    }

    /// Starts the next transmission if the port is idle and has a packet to send.
    #[inline]
    pub(super) fn try_transmit(&mut self, ev: &mut impl Scheduler<NetEvent>, port: u32) {
        if self.pfc.is_some() {
            self.try_transmit_lossless(ev, port);
        } else {
            self.try_transmit_with::<false>(ev, port);
        }
    }

    /// `try_transmit` under PFC: a PAUSE to announce goes before any data, and the
    /// PAUSE frames the departure calls for follow.
    #[cold]
    #[inline(never)]
    fn try_transmit_lossless(&mut self, ev: &mut impl Scheduler<NetEvent>, port: u32) {
        self.try_transmit_with::<true>(ev, port);
        self.pfc_flush(ev);
    }

    /// `try_transmit` (`LOSSLESS`: the network runs PFC).
    pub(super) fn try_transmit_with<const LOSSLESS: bool>(
        &mut self,
        ev: &mut impl Scheduler<NetEvent>,
        port: u32,
    ) {
        let now = ev.now();
        self.acts_on(self.ports[port as usize].node);
        // A PAUSE to announce goes before any data, when the wire is free.
        let announcing = LOSSLESS && self.pfc_announcing(port);
        let pt = &mut self.ports[port as usize];
        if pt.pkts_queued == 0 && !announcing {
            return;
        }
        if pt.busy_until_ps > now {
            if pt.wake_at_ps != pt.busy_until_ps {
                pt.wake_at_ps = pt.busy_until_ps;
                ev.schedule(pt.busy_until_ps, NetEvent::PortWake { port });
            }
            return;
        }
        if announcing {
            return self.pfc_send_announcement(ev, port);
        }
        let Some(pkt) = self.dequeue_with::<LOSSLESS>(port, now) else {
            return;
        };
        self.transmit(ev, port, pkt);
        if self.service_queues.is_some()
            && self.nodes[self.ports[port as usize].node as usize]
                .forwarder
                .late_choice_links()
                > 0
        {
            // The NIC's waiting slot is free: the runtime fills it (late link choice).
            self.service_refill(ev, port);
        }
    }

    /// Puts `pkt` on the wire out of `port` now: the port is busy for its serialisation,
    /// and it reaches the far end after propagation (its header first, under cut-through)
    /// plus the far switch's port-to-port latency. With packing (`pack`), packets waiting
    /// for the same torus link ride in its frame, as far as the link's MTU allows.
    #[inline]
    pub(super) fn transmit(&mut self, ev: &mut impl Scheduler<NetEvent>, port: u32, pkt: PktId) {
        let now = ev.now();
        let packed = self
            .pack
            .and_then(|pack| self.gather_tails(port, pkt, pack));
        let tail_bytes = packed.unwrap_or(0);
        let pt = &mut self.ports[port as usize];
        let p = self.pool.get_mut(pkt);
        let kept = p.framing & !(framing::PACKED | framing::TAIL);
        p.framing = kept | if packed.is_some() { framing::PACKED } else { 0 };
        let wire = u64::from(p.frame_bytes + pt.wire_overhead_bytes) + tail_bytes;
        if kept & framing::INT != 0 && p.hops > 0 {
            // A node that forwards it writes its record (not the sender's own NIC: a
            // packet has crossed no link until it leaves there).
            let sent = pt.stats.tx_wire_bytes + wire;
            p.push_int(telemetry::encode(now, sent, pt.bytes_queued, pt.rate_bps));
        }
        let ser = pt.wire_time_ps(wire);
        // Under cut-through the packet may still be arriving: it cannot leave before its last bit.
        let end = (now + ser).max(p.rx_done_ps);
        pt.busy_until_ps = end;
        pt.stats.tx_wire_bytes += wire;
        let head_arrival = if pt.peer_cut_through {
            now + pt.cut_through_head_ps() + pt.prop_ps
        } else {
            end + pt.prop_ps
        };
        let arrive = head_arrival + pt.peer_delay_ps;
        self.depart(ev, port, pkt, end, arrive);
        if tail_bytes > 0 {
            self.depart_tails(ev, port, end, arrive);
        }
        let pt = &mut self.ports[port as usize];
        if pt.pkts_queued > 0 {
            pt.wake_at_ps = end;
            ev.schedule(end, NetEvent::PortWake { port });
        }
    }

    /// Packing: takes the packets waiting at `port`'s server that may take its link and
    /// fit in `head`'s frame (oldest first, services in turn, up to the link's MTU) into
    /// `pack_tails`; returns the bytes they add to the frame on the wire (each without its
    /// own link header), or None if the port does not pack: only a torus link with
    /// per-service queues packs (not a server's port to an external switch).
    pub(super) fn gather_tails(&mut self, port: u32, head: PktId, pack: Pack) -> Option<u64> {
        let nd = &self.nodes[self.ports[port as usize].node as usize];
        let (host, local) = (nd.index, (port - nd.port_base) as usize);
        let (true, Some(sq)) = (
            (local as u32) < nd.forwarder.late_choice_links(),
            self.service_queues.as_mut(),
        ) else {
            return None;
        };
        let pool = &self.pool;
        let content = |pkt: PktId| u64::from(pool.get(pkt).frame_bytes - pack.header_bytes);
        let mut used = content(head);
        while let Some(t) = sq.pull_if(host, local, |t| {
            used + content(t) <= u64::from(pack.mtu_bytes)
        }) {
            used += content(t);
            self.pack_tails.push(t);
        }
        Some(used - content(head))
    }

    /// The packets gathered into the frame just sent (packing) leave with it.
    pub(super) fn depart_tails(
        &mut self,
        ev: &mut impl Scheduler<NetEvent>,
        port: u32,
        end_ps: TimePs,
        arrive_ps: TimePs,
    ) {
        for i in 0..self.pack_tails.len() {
            let tail = self.pack_tails[i];
            let p = self.pool.get_mut(tail);
            p.framing |= framing::PACKED | framing::TAIL;
            self.depart(ev, port, tail, end_ps, arrive_ps);
        }
        self.pack_tails.clear();
    }

    /// `pkt` leaves `port` in a frame whose last bit leaves at `end_ps` and which reaches
    /// the far end at `arrive_ps`: counted, traced, and put on the wire.
    #[inline(always)]
    pub(super) fn depart(
        &mut self,
        ev: &mut impl Scheduler<NetEvent>,
        port: u32,
        pkt: PktId,
        end_ps: TimePs,
        arrive_ps: TimePs,
    ) {
        let now = ev.now();
        let Network {
            pool,
            ports,
            wires,
            counters,
            captures,
            queue_trace,
            nic_departures,
            nodes,
            frames_out,
            remote_out,
            ..
        } = self;
        let pt = &mut ports[port as usize];
        let p = pool.get_mut(pkt);
        pt.stats.tx_pkts += 1;
        // Only a segment leaving its own host: a torus server's ports are host ports too, and
        // the segments it forwards are not its transport's.
        if pt.switch == NONE
            && p.hops == 0
            && p.payload_bytes > 0
            && p.proto == packet::Proto::TCP
            && self.track_nic_departures
        {
            nic_departures.push((p.flow_id, p.frame_bytes));
        }
        pt.stats.wait_ps_sum += now - p.enqueued_ps;
        counters.packet_hops += 1;
        counters.data_packet_hops += u64::from(p.payload_bytes > 0);
        p.rx_done_ps = end_ps + pt.prop_ps;
        if pt.taps != 0 {
            capture::on_departure(
                pt.taps,
                port,
                now,
                pt.bytes_queued,
                p,
                captures,
                queue_trace,
            );
        }
        p.in_port = pt.peer_in_port as u16;
        p.hops = p.hops.saturating_add(1);
        if self.record_departures && pt.switch == NONE {
            let nd = &nodes[pt.node as usize];
            frames_out.push(Departure {
                host: nd.index,
                local: (port - nd.port_base) as u8,
                framing: p.framing,
                frame_bytes: p.frame_bytes,
                payload_bytes: p.payload_bytes,
            });
        }
        p.framing &= !framing::OWN;
        let w = &mut wires[port as usize];
        if w.remote {
            // The receiver pops this wire while the sender runs: the packet goes on it when
            // the partitions meet (`put_remote_on_wires`), before it can arrive.
            remote_out.push((port, pkt, arrive_ps));
            remote_arrival(ev, w.to_partition, arrive_ps, port);
        } else {
            let was_idle = w.in_flight.is_empty();
            w.in_flight.push_back((pkt, arrive_ps));
            if was_idle {
                ev.schedule(arrive_ps, NetEvent::LinkArrive { port });
            }
        }
    }
}
