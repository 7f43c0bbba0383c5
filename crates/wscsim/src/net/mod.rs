//! The network: packets, ports (each drained at line rate onto a link), switches and
//! host NICs, with the per-packet forwarding path.
//!
//! A node is a host or a switch. Every link end is a port with an output queue set run by
//! a scheme; a host's port is its NIC. Nodes interact only by scheduling `Arrive` events at
//! the far end of a link, which keeps the partitioning rule of the engine.

pub mod capture;
pub mod packet;
pub mod routing;

use crate::engine::{serialisation_ps, PartitionId, Scheduler, TimePs, NEVER};
use crate::scheme::{PortCtx, Scheme, Verdict};
use packet::{PacketPool, PktId, PktQueue, PHY_OVERHEAD_BYTES};
use routing::Routing;

pub const NONE: u32 = u32::MAX;

/// The network's events. Both act on the node that owns `port` only: an arrival is
/// scheduled by the sending port for the time the packet reaches the far end, and is
/// then handled there (the partition rule).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetEvent {
    /// The first packet in flight on the link out of `port` reaches the far end (its first
    /// or last bit, by the far switch's forwarding mode).
    LinkArrive { port: u32 },
    /// Output port `port` (global index) may start its next transmission.
    PortWake { port: u32 },
}

/// Bytes a cut-through switch must receive before it can forward (the header it parses).
pub const CUT_THROUGH_HEADER_BYTES: u64 = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Host,
    Switch,
}

#[derive(Clone, Debug)]
pub struct Node {
    pub kind: NodeKind,
    /// Host index or switch index, by kind.
    pub index: u32,
    pub port_base: u32,
    pub nports: u32,
    pub partition: PartitionId,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Forwarding {
    StoreAndForward,
    CutThrough,
}

/// One buffer shared by all ports of a switch, with Choudhury-Hahne dynamic thresholds:
/// a port may hold at most `alpha * (total - used)` bytes.
#[derive(Clone, Copy, Debug)]
pub struct SharedBuffer {
    pub total_bytes: u64,
    pub used_bytes: u64,
    pub alpha: f64,
}

#[derive(Clone, Debug)]
pub struct Switch {
    pub node: u32,
    pub name: String,
    /// 0 for switches next to hosts, increasing upwards (used to pick schemes per tier).
    pub tier: u8,
    pub forwarding: Forwarding,
    pub port_to_port_ps: TimePs,
    pub shared: Option<SharedBuffer>,
    /// Buffers sit at input ports (virtual output queues in ingress memory, as in the Cisco
    /// Nexus 5000 that DIABLO's model follows): `buffer_bytes` limits what each input holds.
    pub ingress_buffers: bool,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct PortStats {
    pub tx_wire_bytes: u64,
    pub tx_pkts: u64,
    pub drops: u64,
    pub drop_bytes: u64,
    /// Packets marked CE on arrival here (schemes that mark at departure count their own).
    pub ecn_marks: u64,
    /// Sum over dequeued packets of the time they waited in this port's queue.
    pub wait_ps_sum: u64,
    pub max_queue_bytes: u64,
}

#[derive(Clone, Debug)]
pub struct Port {
    pub node: u32,
    /// The switch owning the port, or NONE for a host NIC.
    pub switch: u32,
    pub peer_node: u32,
    pub peer_in_port: u32,
    pub rate_bps: u64,
    /// Picoseconds per byte when the rate divides 8e12 exactly (all the usual rates), so the
    /// per-packet serialisation time is a multiply; 0 means use the exact division.
    pub ps_per_byte: u64,
    pub prop_ps: TimePs,
    /// Port-to-port latency of the switch at the far end (0 for a host).
    pub peer_delay_ps: TimePs,
    /// The far end is a cut-through switch: it acts on the header, not the last bit.
    pub peer_cut_through: bool,
    pub q_base: u32,
    pub q_count: u32,
    pub mask_base: u32,
    pub bytes_queued: u64,
    pub pkts_queued: u32,
    /// This port's own buffer (u64::MAX for a NIC, which does not drop by default).
    pub buffer_bytes: u64,
    pub busy_until_ps: TimePs,
    /// Time of the one live `PortWake` event (NEVER if none); others are stale and ignored.
    pub wake_at_ps: TimePs,
    /// Packets on the wire towards the peer with their arrival times, in order (a link never
    /// reorders), so the event queue holds one arrival event per busy link, not one per
    /// packet. A ring of (packet, time) rather than a list through the packets: finding the
    /// next arrival time does not touch the next packet's memory.
    pub in_flight: std::collections::VecDeque<(PktId, TimePs)>,
    pub stats: PortStats,
    /// What observes this port (`capture::TAP_*` bits and a capture id; 0: nothing).
    pub taps: u32,
}

#[derive(Clone, Copy, Debug)]
pub struct DropRecord {
    pub time_ps: TimePs,
    pub node: u32,
    pub port: u32,
    pub flow_id: u32,
    pub frame_bytes: u32,
    /// Flow ids are per transport: TCP connection or UDP stream.
    pub proto: packet::Proto,
}

/// Packet accounting for the conservation invariant: sent = delivered + dropped + in flight.
#[derive(Clone, Copy, Debug, Default)]
pub struct NetCounters {
    pub sent: u64,
    pub delivered: u64,
    pub dropped: u64,
    pub packet_hops: u64,
    /// Times a queue was found above its buffer after an enqueue (must stay 0).
    pub buffer_violations: u64,
}

pub struct Network {
    pub pool: PacketPool,
    pub nodes: Vec<Node>,
    pub node_names: Vec<String>,
    pub ports: Vec<Port>,
    pub queues: Vec<PktQueue>,
    pub masks: Vec<u64>,
    pub schemes: Vec<Scheme>,
    pub switches: Vec<Switch>,
    /// Host index to node index.
    pub host_nodes: Vec<u32>,
    pub routing: Routing,
    pub counters: NetCounters,
    pub drop_log: Vec<DropRecord>,
    /// Bytes queued in the switch that arrived on each port (global port index), for
    /// switches with ingress buffers.
    pub ingress_bytes: Vec<u64>,
    /// TCP data segments that left a host NIC since the transport last looked:
    /// (connection, frame bytes). Only filled when `track_nic_departures` is set (the
    /// transport's TCP small-queues limit needs it).
    pub nic_departures: Vec<(u32, u32)>,
    pub track_nic_departures: bool,
    /// Per switch: the port whose custom scheme picks output ports, or NONE (ECMP).
    pub route_hooks: Vec<u32>,
    /// Packets captured at tapped ports.
    pub captures: capture::Captures,
    /// Queue lengths of traced ports at every change.
    pub queue_trace: capture::QueueTrace,
}

/// The scheme's view of port `pt`: its queues and bitmap words, the pool and its totals.
#[inline]
fn port_ctx<'a>(
    pt: &'a mut Port,
    queues: &'a mut [PktQueue],
    masks: &'a mut [u64],
    pool: &'a mut PacketPool,
    limit_bytes: u64,
    now_ps: TimePs,
) -> PortCtx<'a> {
    let (q0, n) = (pt.q_base as usize, pt.q_count as usize);
    let m0 = pt.mask_base as usize;
    PortCtx {
        rate_bps: pt.rate_bps,
        queues: &mut queues[q0..q0 + n],
        nonempty: &mut masks[m0..m0 + n.div_ceil(64)],
        pool,
        bytes_queued: &mut pt.bytes_queued,
        pkts_queued: &mut pt.pkts_queued,
        limit_bytes,
        now_ps,
    }
}

impl Network {
    #[inline]
    pub fn n_hosts(&self) -> usize {
        self.host_nodes.len()
    }

    /// Index of global port `port` among its node's ports.
    #[inline]
    pub fn local_port(&self, port: u32) -> u32 {
        port - self.nodes[self.ports[port as usize].node as usize].port_base
    }

    /// The NIC port of host `h`.
    #[inline]
    pub fn nic_port(&self, host: u32) -> u32 {
        self.nodes[self.host_nodes[host as usize] as usize].port_base
    }

    /// A packet leaves host `host` (its transmit path done): into the queue of the port
    /// that leads towards its destination.
    #[inline]
    pub fn host_transmit(&mut self, ev: &mut impl Scheduler<NetEvent>, host: u32, pkt: PktId) {
        let port = self.nic_port(host);
        self.enqueue_at_port(ev, port, pkt, 0);
    }

    /// What a link arrival or port wake-up leads to. Returns a packet that reached a host
    /// (for the host layer to receive), with the host; switches forward by themselves.
    #[inline]
    pub fn handle(
        &mut self,
        ev: &mut impl Scheduler<NetEvent>,
        e: NetEvent,
    ) -> Option<(PktId, u32)> {
        match e {
            NetEvent::LinkArrive { port } => {
                let (pkt, node, in_port) = self.on_link_arrive(ev, port);
                let n = &self.nodes[node as usize];
                if n.kind == NodeKind::Switch {
                    self.on_arrive_switch(ev, node, in_port, pkt);
                    None
                } else {
                    Some((pkt, n.index))
                }
            }
            NetEvent::PortWake { port } => {
                self.on_port_wake(ev, port);
                None
            }
        }
    }

    /// A packet arrives at a switch: route, then hand it to the output port's scheme.
    #[inline]
    pub fn on_arrive_switch(
        &mut self,
        ev: &mut impl Scheduler<NetEvent>,
        node: u32,
        in_port: u32,
        pkt: PktId,
    ) {
        let n = &self.nodes[node as usize];
        let (sw, base) = (n.index, n.port_base);
        let p = self.pool.get(pkt);
        let mut local = self.routing.next_port(sw, p.dst_host, p.hash);
        let hook = self.route_hooks[sw as usize];
        if hook != NONE {
            let candidates = self.routing.ports(sw, p.dst_host);
            if let Some(choice) = self.schemes[hook as usize].route(p, candidates) {
                local = choice;
            }
        }
        self.enqueue_at_port(ev, base + local, pkt, in_port);
    }

    /// The packet at the head of `port`'s link reaches the far end. Returns it with the
    /// node and input port it reaches, after scheduling the next arrival on that link.
    #[inline]
    pub fn on_link_arrive(
        &mut self,
        ev: &mut impl Scheduler<NetEvent>,
        port: u32,
    ) -> (PktId, u32, u32) {
        let pt = &mut self.ports[port as usize];
        let (pkt, _) = pt.in_flight.pop_front().expect("arrival on an empty link");
        if let Some(&(_, next)) = pt.in_flight.front() {
            ev.schedule(next, NetEvent::LinkArrive { port });
        }
        (pkt, pt.peer_node, pt.peer_in_port)
    }

    /// Starts loading the packet that the next arrival on `port`'s link will deliver, so
    /// that its cache miss overlaps the work of the current event.
    #[inline]
    pub fn prefetch_arrival(&self, port: u32) {
        if let Some(&(pkt, _)) = self.ports[port as usize].in_flight.front() {
            self.pool.prefetch(pkt);
        }
    }

    /// Captures the packets `host` sends and receives, as one capture point.
    pub fn tap_host(&mut self, host: u32) -> Result<(), String> {
        let nic = self.nic_port(host);
        let p = &self.ports[nic as usize];
        let feeder = self.nodes[p.peer_node as usize].port_base + p.peer_in_port;
        let id = self.captures.add(format!("host-{host}"));
        self.set_capture(nic, capture::TAP_CAPTURE | id)?;
        self.set_capture(feeder, capture::TAP_CAPTURE | capture::TAP_ARRIVAL | id)
    }

    /// Captures the packets leaving local port `local` of switch node `node`.
    pub fn tap_switch_port(&mut self, node: u32, local: u32) -> Result<(), String> {
        let id = self
            .captures
            .add(format!("{}-port{local}", self.node_names[node as usize]));
        self.set_capture(
            self.nodes[node as usize].port_base + local,
            capture::TAP_CAPTURE | id,
        )
    }

    /// Records the queue length of local port `local` of `node` at every change.
    pub fn trace_queue(&mut self, node: u32, local: u32) {
        self.ports[(self.nodes[node as usize].port_base + local) as usize].taps |=
            capture::TAP_QUEUE;
    }

    fn set_capture(&mut self, port: u32, taps: u32) -> Result<(), String> {
        let p = &mut self.ports[port as usize];
        if p.taps & capture::TAP_CAPTURE != 0 {
            let other = &self.captures.names[(p.taps & capture::TAP_ID_MASK) as usize];
            return Err(format!(
                "a port already captured as {other}; allowed: capture points that share no port"
            ));
        }
        p.taps |= taps;
        Ok(())
    }

    /// Prefetches host `host`'s NIC port (a packet is about to enter its queue).
    #[inline]
    pub fn prefetch_nic(&self, host: u32) {
        crate::engine::prefetch(&self.ports, self.nic_port(host) as usize);
    }

    /// A host consumed a packet that reached it.
    #[inline]
    pub fn delivered(&mut self, pkt: PktId) {
        self.counters.delivered += 1;
        self.pool.free(pkt);
    }

    /// Drops `pkt` at `port` (counted there and in the drop log) and frees it.
    pub fn drop_packet(&mut self, now: TimePs, port: u32, pkt: PktId) {
        let p = self.pool.get(pkt);
        let rec = DropRecord {
            time_ps: now,
            node: self.ports[port as usize].node,
            port,
            flow_id: p.flow_id,
            frame_bytes: p.frame_bytes,
            proto: p.proto,
        };
        let st = &mut self.ports[port as usize].stats;
        st.drops += 1;
        st.drop_bytes += p.frame_bytes as u64;
        self.drop_log.push(rec);
        self.counters.dropped += 1;
        self.pool.free(pkt);
    }

    fn enqueue_at_port(
        &mut self,
        ev: &mut impl Scheduler<NetEvent>,
        port: u32,
        pkt: PktId,
        in_port: u32,
    ) {
        let now = ev.now();
        let Network {
            pool,
            ports,
            queues,
            masks,
            schemes,
            switches,
            nodes,
            ingress_bytes,
            queue_trace,
            ..
        } = self;
        let pt = &mut ports[port as usize];
        let (shared, ingress) = if pt.switch != NONE {
            let sw = &mut switches[pt.switch as usize];
            let ingress_port = if sw.ingress_buffers {
                Some((nodes[pt.node as usize].port_base + in_port) as usize)
            } else {
                None
            };
            (sw.shared.as_mut(), ingress_port)
        } else {
            (None, None)
        };
        let limit_bytes = match (&shared, ingress) {
            (Some(sb), _) => {
                let free = sb.total_bytes - sb.used_bytes;
                let threshold = (sb.alpha * free as f64) as u64;
                threshold.min(pt.bytes_queued + free)
            }
            (None, Some(g)) => pt.bytes_queued + pt.buffer_bytes.saturating_sub(ingress_bytes[g]),
            (None, None) => pt.buffer_bytes,
        };
        pool.get_mut(pkt).enqueued_ps = now;
        let before = pt.bytes_queued;
        let mut ctx = port_ctx(pt, queues, masks, pool, limit_bytes, now);
        let scheme = &mut schemes[port as usize];
        let q = scheme.classify(&mut ctx, pkt, in_port);
        let ctx_frame = ctx.pool.get(pkt).frame_bytes;
        let verdict = scheme.enqueue(&mut ctx, pkt, q);
        if verdict == Verdict::AcceptedMarked {
            ctx.pool.get_mut(pkt).ecn = packet::ecn::CE;
            pt.stats.ecn_marks += 1;
        }
        let after = pt.bytes_queued;
        if after > pt.stats.max_queue_bytes {
            pt.stats.max_queue_bytes = after;
        }
        if pt.taps & capture::TAP_QUEUE != 0 {
            queue_trace.record(now, port, after);
        }
        let over = match (shared, ingress) {
            (Some(sb), _) => {
                sb.used_bytes = sb.used_bytes + after - before;
                sb.used_bytes > sb.total_bytes
            }
            (None, Some(g)) => {
                // Credit what entered to its input and debit what a scheme pushed out to the
                // evicted packet's own input.
                match verdict {
                    Verdict::Accepted | Verdict::AcceptedMarked => {
                        ingress_bytes[g] += ctx_frame as u64
                    }
                    Verdict::DroppedOther(other) => {
                        ingress_bytes[g] += ctx_frame as u64;
                        let o = pool.get(other);
                        ingress_bytes[(nodes[pt.node as usize].port_base + o.in_port) as usize] -=
                            o.frame_bytes as u64;
                    }
                    Verdict::Dropped => {}
                }
                ingress_bytes[g] > pt.buffer_bytes
            }
            (None, None) => after > pt.buffer_bytes,
        };
        if over {
            self.counters.buffer_violations += 1;
        }
        match verdict {
            Verdict::Accepted | Verdict::AcceptedMarked => self.try_transmit(ev, port),
            Verdict::Dropped => self.drop_packet(now, port, pkt),
            Verdict::DroppedOther(other) => {
                self.drop_packet(now, port, other);
                self.try_transmit(ev, port);
            }
        }
    }

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
    fn try_transmit(&mut self, ev: &mut impl Scheduler<NetEvent>, port: u32) {
        let now = ev.now();
        let Network {
            pool,
            ports,
            queues,
            masks,
            schemes,
            switches,
            counters,
            nodes,
            ingress_bytes,
            captures,
            queue_trace,
            ..
        } = self;
        let pt = &mut ports[port as usize];
        if pt.pkts_queued == 0 {
            return;
        }
        if pt.busy_until_ps > now {
            if pt.wake_at_ps != pt.busy_until_ps {
                pt.wake_at_ps = pt.busy_until_ps;
                ev.schedule(pt.busy_until_ps, NetEvent::PortWake { port });
            }
            return;
        }
        let before = pt.bytes_queued;
        let mut ctx = port_ctx(pt, queues, masks, pool, u64::MAX, now);
        let Some(pkt) = schemes[port as usize].schedule(&mut ctx) else {
            return;
        };
        if pt.switch != NONE {
            let sw = &mut switches[pt.switch as usize];
            if let Some(sb) = sw.shared.as_mut() {
                sb.used_bytes -= before - pt.bytes_queued;
            } else if sw.ingress_buffers {
                ingress_bytes
                    [(nodes[pt.node as usize].port_base + pool.get(pkt).in_port) as usize] -=
                    before - pt.bytes_queued;
            }
        }
        let p = pool.get_mut(pkt);
        let wire = (p.frame_bytes + PHY_OVERHEAD_BYTES) as u64;
        let ser = if pt.ps_per_byte != 0 {
            wire * pt.ps_per_byte
        } else {
            serialisation_ps(wire, pt.rate_bps)
        };
        // Under cut-through the packet may still be arriving: it cannot leave before its last bit.
        let end = (now + ser).max(p.rx_done_ps);
        pt.busy_until_ps = end;
        pt.stats.tx_wire_bytes += wire;
        pt.stats.tx_pkts += 1;
        if pt.switch == NONE
            && p.payload_bytes > 0
            && p.proto == packet::Proto::Tcp
            && self.track_nic_departures
        {
            self.nic_departures.push((p.flow_id, p.frame_bytes));
        }
        pt.stats.wait_ps_sum += now - p.enqueued_ps;
        counters.packet_hops += 1;
        p.rx_done_ps = end + pt.prop_ps;
        let head_arrival = if pt.peer_cut_through {
            now + serialisation_ps(CUT_THROUGH_HEADER_BYTES + 8, pt.rate_bps) + pt.prop_ps
        } else {
            p.rx_done_ps
        };
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
        p.in_port = pt.peer_in_port;
        let arrive = head_arrival + pt.peer_delay_ps;
        let was_idle = pt.in_flight.is_empty();
        pt.in_flight.push_back((pkt, arrive));
        if was_idle {
            ev.schedule(arrive, NetEvent::LinkArrive { port });
        }
        if pt.pkts_queued > 0 {
            pt.wake_at_ps = end;
            ev.schedule(end, NetEvent::PortWake { port });
        }
    }

    /// Switches a packet from `src` to `dst` crosses (the ECMP path of hash 0; every
    /// equal-cost path has as many).
    pub fn switches_on_path(&self, src: u32, dst: u32) -> u32 {
        self.path_ports(src, dst).count() as u32 - 1
    }

    /// The output ports a packet from `src` to `dst` leaves through on the ECMP path of
    /// hash 0: the source's NIC, then one port per switch.
    fn path_ports(&self, src: u32, dst: u32) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors(Some(self.nic_port(src)), move |&port| {
            let nd = &self.nodes[self.ports[port as usize].peer_node as usize];
            (nd.kind != NodeKind::Host)
                .then(|| nd.port_base + self.routing.next_port(nd.index, dst, 0))
        })
        .take(self.nodes.len())
    }

    /// Time to move `bytes` of TCP payload from `src` to `dst` on an idle network: the first
    /// segment crosses every hop store-and-forward (serialisation, propagation and
    /// port-to-port latency), the rest follow back to back at the path's slowest link.
    /// Leaves out ACKs, slow start and the handshake: it is the floor that slowdown divides by.
    pub fn ideal_transfer_ps(&self, src: u32, dst: u32, bytes: u64, mss: u32) -> TimePs {
        let full = packet::frame_bytes_for_ip(mss + packet::TCP_IP_HEADER_BYTES) as u64
            + PHY_OVERHEAD_BYTES as u64;
        let first_payload = bytes.min(mss as u64) as u32;
        let first = packet::frame_bytes_for_ip(first_payload + packet::TCP_IP_HEADER_BYTES) as u64
            + PHY_OVERHEAD_BYTES as u64;
        let rest = bytes - first_payload as u64;
        let (n_full, last) = (rest / mss as u64, rest % mss as u64);
        let mut t = 0;
        let mut min_rate = u64::MAX;
        for port in self.path_ports(src, dst) {
            let pt = &self.ports[port as usize];
            t += serialisation_ps(first, pt.rate_bps) + pt.prop_ps + pt.peer_delay_ps;
            min_rate = min_rate.min(pt.rate_bps);
        }
        t = t.saturating_add(n_full.saturating_mul(serialisation_ps(full, min_rate)));
        if last > 0 {
            let f = packet::frame_bytes_for_ip(last as u32 + packet::TCP_IP_HEADER_BYTES) as u64
                + PHY_OVERHEAD_BYTES as u64;
            t += serialisation_ps(f, min_rate);
        }
        t
    }
}
