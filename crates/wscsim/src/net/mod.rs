//! The network: packets, ports (each drained at line rate onto a link), switches and
//! host NICs, with the per-packet forwarding path.
//!
//! A node is a host or a switch. Every link end is a port with an output queue set run by
//! a scheme; a host's port is its NIC. Nodes interact only by scheduling `Arrive` events at
//! the far end of a link, which keeps the partitioning rule of the engine.

pub mod capture;
pub mod kbr;
pub mod link;
mod partition;
pub use crate::packet;
pub use partition::{NetView, RemoteSend};
pub mod routing;
pub mod service_queues;
pub mod slotted;

use crate::engine::{serialisation_ps, PartitionId, Scheduler, TimePs, NEVER};
use crate::scheme::{PortCtx, Scheme, Verdict};
use link::LinkTech;
use packet::{framing, PacketPool, PktId, PktQueue};
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
    /// The link out of `port` fails: what is queued at the port and on its wire is lost.
    /// A failed link gets one event for each of its two ports.
    LinkDown { port: u32 },
    /// The link out of `port` works again.
    LinkUp { port: u32 },
    /// Node `node` fails whole (its links fail by their own events at the same time).
    NodeDown { node: u32 },
    /// Node `node` works again.
    NodeUp { node: u32 },
    /// A torus server learns of a link's change (`kbr`: a keepalive verdict or a flooded
    /// notice).
    Learn { notice: u32 },
    /// A key-addressed packet turned out to be for the server that holds it.
    Loopback { pkt: PktId },
}

/// What the network hands to the host layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Upcall {
    /// `pkt` reached its destination host.
    Deliver { pkt: PktId, host: u32 },
    /// `pkt` reached host `host`, which forwards it (a torus server): the host layer charges
    /// its forwarding work, then calls `Network::host_transmit`.
    Forward { pkt: PktId, host: u32 },
}

/// Bytes a cut-through switch must receive before it can forward (the header it parses).
pub const CUT_THROUGH_HEADER_BYTES: u64 = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Host,
    Switch,
}

/// How a node sends on a packet that is not for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Forwarder {
    /// A host that does not forward: everything that reaches it is for it.
    Endpoint,
    /// A switch: precomputed equal-cost tables (`routing::Routing`), or its scheme's
    /// `route` when the scheme routes.
    Ecmp,
    /// A server of a torus: every neighbour on a shortest path is a candidate and the
    /// packet takes the first free link (`routing::torus`).
    Torus,
}

/// A node: its ports (`port_base .. port_base + nports`), an optional host, and how it
/// forwards. A switch has no host; an ordinary server is a host with one port that does not
/// forward; a torus server is a host with several ports that forwards.
#[derive(Clone, Debug)]
pub struct Node {
    pub kind: NodeKind,
    /// Host index or switch index, by kind.
    pub index: u32,
    pub port_base: u32,
    pub nports: u32,
    pub partition: PartitionId,
    pub forwarder: Forwarder,
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
    /// Bytes each frame costs on this link's wire beyond its buffer size (its technology's
    /// preamble, delimiters and gap).
    pub wire_overhead_bytes: u32,
    /// False while the link is down: nothing is sent and what arrives for it is lost.
    pub up: bool,
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
    pub stats: PortStats,
    /// What observes this port (`capture::TAP_*` bits and a capture id; 0: nothing).
    pub taps: u32,
}

/// The wire out of a port: the packets on it towards the peer with their arrival times, in
/// order (a link never reorders), so the event queue holds one arrival event per busy
/// link, not one per packet. A ring of (packet, time) rather than a list through the
/// packets: finding the next arrival time does not touch the next packet's memory.
///
/// The wire is the only state two nodes share, and it is a one-way mailbox: the sending
/// port appends (scheduling the arrival when the wire was idle), the receiving node pops
/// when the arrival is handled. A wire between partitions (`remote`) is appended to only
/// where the partitions meet (`remote_out`, `put_remote_on_wires`), each packet with an
/// arrival event of its own sent as mail: the receiver pops it while the sender runs.
#[derive(Clone, Debug, Default)]
pub struct Wire {
    pub in_flight: std::collections::VecDeque<(PktId, TimePs)>,
    /// The node and local port the wire leads to.
    pub to_node: u32,
    pub to_port: u32,
    /// In a partitioned run, a wire to another partition: each packet's arrival is an
    /// event of its own, scheduled by the sender into the receiver's partition (an idle
    /// wire's first arrival would otherwise depend on how far the receiver has run).
    pub remote: bool,
    pub to_partition: PartitionId,
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
    /// Transport payload bytes of the packets hosts consumed (duplicates included).
    pub delivered_bytes: u64,
    pub dropped: u64,
    pub packet_hops: u64,
    /// Hops of packets that carry payload (not pure ACKs or other control packets).
    pub data_packet_hops: u64,
    /// Times a queue was found above its buffer after an enqueue (must stay 0).
    pub buffer_violations: u64,
    /// Packets lost because their link was down: queued at it or on its wire when it
    /// failed, or sent to it while down (also counted in `dropped`).
    pub link_down_drops: u64,
    /// Packets a torus server could not send on because failures cut their destination
    /// off (also counted in `dropped`).
    pub unroutable_drops: u64,
    /// Packets a full per-service queue of a torus server dropped (also in `dropped`).
    pub service_queue_drops: u64,
}

impl NetCounters {
    /// Adds `o`'s counts to these and zeroes `o` (a thread's view's, where threads meet).
    pub fn absorb(&mut self, o: &mut NetCounters) {
        let o = std::mem::take(o);
        self.sent += o.sent;
        self.delivered += o.delivered;
        self.delivered_bytes += o.delivered_bytes;
        self.dropped += o.dropped;
        self.packet_hops += o.packet_hops;
        self.data_packet_hops += o.data_packet_hops;
        self.buffer_violations += o.buffer_violations;
        self.link_down_drops += o.link_down_drops;
        self.unroutable_drops += o.unroutable_drops;
        self.service_queue_drops += o.service_queue_drops;
    }
}

pub struct Network {
    pub pool: PacketPool,
    pub nodes: Vec<Node>,
    pub node_names: Vec<String>,
    pub ports: Vec<Port>,
    /// The wire out of each port (same index).
    pub wires: Vec<Wire>,
    /// The link technology of each host's first port (index into `techs`), which frames
    /// what the host sends.
    pub host_tech: Vec<u8>,
    /// The distinct technologies of this network's links.
    pub techs: Vec<LinkTech>,
    /// The technology of each port's link (index into `techs`); cold, for the energy model.
    pub port_tech: Vec<u8>,
    /// Shortest-path forwarding of torus servers (None without a torus).
    pub torus: Option<routing::torus::TorusRouting>,
    /// CamCubeOS's runtime on a torus: views of failures, keys, detection (None elsewhere).
    pub kbr: Option<kbr::Kbr>,
    /// Hosts from this index on are outside the torus (its load generators); u32::MAX
    /// without a torus. Kept here so a hop reads one word, not the torus's dimensions.
    pub torus_servers: u32,
    /// CamCubeOS's per-service queues with late link choice on torus servers (None: each
    /// packet goes straight to the queue of the first free candidate link).
    pub service_queues: Option<service_queues::ServiceQueues>,
    /// False while a node has failed whole.
    pub node_up: Vec<bool>,
    /// Per port, the failures holding its link down now (it is up at 0).
    pub down_causes: Vec<u16>,
    /// Which partition the event being handled acts on, when the partition rule is being
    /// checked (tests): every port an event touches must belong to it.
    pub acting: std::cell::Cell<Option<PartitionId>>,
    /// Whether `acting` is set and checked (off in ordinary runs).
    pub check_partitions: bool,
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
    /// Per port, the frame waiting at a torus link's NIC behind the one on the wire, for
    /// ports that hold it here instead of in their scheme's queues (`use_nic_slots`);
    /// empty when no port does.
    pub nic_slots: Vec<PktId>,
    /// Torus servers pack waiting packets into one frame per link (None: a frame each).
    pub pack: Option<Pack>,
    /// The packets that ride in the frame being sent (packing), reused.
    pub pack_tails: Vec<PktId>,
    /// With packing on costed hosts (`record_departures`), the packets that left hosts'
    /// ports since the host layer last looked; the host layer charges their sending work
    /// then.
    pub frames_out: Vec<Departure>,
    pub record_departures: bool,
    /// Queue lengths of traced ports at every change.
    pub queue_trace: capture::QueueTrace,
    /// Partitioned runs: packets sent on wires to other partitions since the partitions
    /// last met, as (port, packet, arrival time), in the order they were sent.
    pub remote_out: Vec<(u32, PktId, TimePs)>,
}

/// The arrival of a packet on a wire to another partition (partitioned runs only: kept
/// out of line so the ordinary path stays small).
#[cold]
#[inline(never)]
fn remote_arrival(
    ev: &mut impl Scheduler<NetEvent>,
    partition: PartitionId,
    at_ps: TimePs,
    port: u32,
) {
    ev.schedule_in(partition, at_ps, NetEvent::LinkArrive { port });
}

/// In `nic_slots`: the port keeps its waiting frames in its scheme's queues.
const NOT_A_SLOT: PktId = packet::NO_PKT - 1;

/// Packing (CamCubeOS): a frame on a torus link carries packets back to back, each
/// without its own link header, up to the link's MTU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pack {
    /// Link header bytes each packet's `frame_bytes` counts (Ethernet: 18).
    pub header_bytes: u32,
    /// The most packet bytes (without link headers) one frame carries.
    pub mtu_bytes: u32,
}

/// A packet that left a host's port (recorded with packing, for the host layer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Departure {
    pub host: u32,
    /// The host's port it left by (a torus link, or the external switch's).
    pub local: u8,
    /// How it left (`packet::framing`: packed, behind another packet) and whether it was
    /// the host's own send.
    pub framing: u8,
    pub frame_bytes: u32,
    pub payload_bytes: u32,
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
        wire_overhead_bytes: pt.wire_overhead_bytes,
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

    /// Whether host `h`'s node works (it has not failed whole).
    #[inline]
    pub fn host_up(&self, host: u32) -> bool {
        self.node_up[self.host_nodes[host as usize] as usize]
    }

    /// The NIC port of host `h`.
    #[inline]
    pub fn nic_port(&self, host: u32) -> u32 {
        self.nodes[self.host_nodes[host as usize] as usize].port_base
    }

    /// A packet leaves host `host` (its own, its transmit path done, or one it forwards):
    /// into the queue of the port that leads towards its destination.
    #[inline]
    pub fn host_transmit(&mut self, ev: &mut impl Scheduler<NetEvent>, host: u32, pkt: PktId) {
        let node = self.host_nodes[host as usize];
        let nd = &self.nodes[node as usize];
        let base = nd.port_base;
        let port = match nd.forwarder {
            Forwarder::Torus => {
                let now = ev.now();
                let p = self.pool.get(pkt);
                if p.dst_host >= self.torus_servers && p.dst_host != packet::TO_KEY {
                    // Out of the cube: through the server's port to the external switch,
                    // its last.
                    let last = nd.port_base + nd.nports - 1;
                    self.enqueue_at_port(ev, last, pkt, 0);
                    return;
                }
                if p.hops == 0 && p.src_host == host && p.dst_host == packet::TO_KEY {
                    self.kbr.as_mut().expect("torus").counters.key_sent += 1;
                }
                let dst = match self.torus_next(host, pkt, now) {
                    kbr::Next::Here => {
                        self.kbr_deliver(host, pkt, now);
                        ev.schedule(now, NetEvent::Loopback { pkt });
                        return;
                    }
                    kbr::Next::Toward(dst) => Some(dst),
                    kbr::Next::Nowhere => None,
                };
                let Some((cands, n)) = dst.and_then(|d| self.view_ports(host, d)) else {
                    // No working path in this server's view: the destination is cut off.
                    self.counters.unroutable_drops += 1;
                    self.drop_packet(now, base, pkt);
                    return;
                };
                if self.service_queues.is_some() {
                    self.service_enqueue(ev, host, pkt, &cands[..n]);
                    return;
                }
                base + self.first_free(base, &cands[..n], now)
            }
            // A server with several NICs spreads its flows over them by flow hash.
            _ if nd.nports > 1 => base + self.pool.get(pkt).hash % nd.nports,
            _ => base,
        };
        self.enqueue_at_port(ev, port, pkt, 0);
    }

    /// The local port a packet host `host` sends or forwards now would most likely leave
    /// by: on a torus, the link `host_transmit` would pick if it went now (the first free
    /// candidate); elsewhere the host's only port. For a host model whose work runs on
    /// per-link threads, which must pick the transmit thread before the packet is queued.
    pub fn out_link_hint(&mut self, host: u32, pkt: PktId, now: TimePs) -> u32 {
        let nd = &self.nodes[self.host_nodes[host as usize] as usize];
        if nd.forwarder != Forwarder::Torus {
            return 0;
        }
        let (base, last) = (nd.port_base, nd.nports - 1);
        let dst = self.pool.get(pkt).dst_host;
        if dst >= self.torus_servers && dst != packet::TO_KEY {
            return last;
        }
        match self.torus_next(host, pkt, now) {
            kbr::Next::Toward(d) => match self.view_ports(host, d) {
                Some((cands, n)) => self.first_free(base, &cands[..n], now),
                None => 0,
            },
            _ => 0,
        }
    }

    /// Of a torus server's candidate links (local ports), the first free one (none queued,
    /// none being sent), else the one with the fewest bytes queued; ties go to the first, in
    /// the order +x, -x, +y, -y, +z, -z. Shortest paths are over the links the server
    /// believes up (`kbr`): it may send onto a link that has failed and not yet been
    /// detected.
    fn first_free(&self, base: u32, cands: &[u8], now: TimePs) -> u32 {
        let mut best = (u64::MAX, u32::from(cands[0]));
        for &local in cands {
            let pt = &self.ports[(base + u32::from(local)) as usize];
            if pt.pkts_queued == 0 && pt.busy_until_ps <= now {
                return u32::from(local);
            }
            if pt.bytes_queued < best.0 {
                best = (pt.bytes_queued, u32::from(local));
            }
        }
        best.1
    }

    /// The partition an event acts on: every state it changes belongs to that partition's
    /// nodes (a wire's queue is the mailbox between two partitions).
    pub fn partition_of(&self, e: NetEvent) -> PartitionId {
        let node = match e {
            NetEvent::LinkArrive { port } => self.wires[port as usize].to_node,
            NetEvent::PortWake { port }
            | NetEvent::LinkDown { port }
            | NetEvent::LinkUp { port } => self.ports[port as usize].node,
            NetEvent::NodeDown { node } | NetEvent::NodeUp { node } => node,
            NetEvent::Learn { notice } => self.kbr.as_ref().expect("torus").notice_node(notice),
            NetEvent::Loopback { pkt } => self.host_nodes[self.pool.get(pkt).dst_host as usize],
        };
        self.nodes[node as usize].partition
    }

    /// Puts the drop log in an order that does not depend on how partitions interleaved
    /// (a partitioned run appends each partition's drops as its lane runs): by time, then
    /// place, then packet.
    pub fn sort_drop_log(&mut self) {
        self.drop_log.sort_by_key(|d| {
            (
                d.time_ps,
                d.node,
                d.port,
                d.flow_id,
                d.proto as u8,
                d.frame_bytes,
            )
        });
    }

    /// The partition of host `host`'s node.
    pub fn host_partition(&self, host: u32) -> PartitionId {
        self.nodes[self.host_nodes[host as usize] as usize].partition
    }

    /// Declares which partition the coming event acts on (None: not checked); with
    /// `check_partitions` on, touching a port of another partition then panics.
    #[inline]
    pub fn enter_partition(&self, p: Option<PartitionId>) {
        self.acting.set(p);
    }

    #[inline]
    fn acts_on(&self, node: u32) {
        if let Some(p) = self.acting.get() {
            let own = self.nodes[node as usize].partition;
            assert_eq!(
                own, p,
                "an event of partition {p} touched node {node} of partition {own}"
            );
        }
    }

    /// What a network event leads to: switches forward by themselves; a packet that reached
    /// a host goes up to the host layer.
    #[inline]
    pub fn handle(&mut self, ev: &mut impl Scheduler<NetEvent>, e: NetEvent) -> Option<Upcall> {
        match e {
            NetEvent::LinkArrive { port } => {
                let (pkt, node, in_port) = self.on_link_arrive(ev, port)?;
                let n = &self.nodes[node as usize];
                match n.forwarder {
                    Forwarder::Ecmp => {
                        self.on_arrive_switch(ev, node, in_port, pkt);
                        None
                    }
                    Forwarder::Endpoint => Some(Upcall::Deliver { pkt, host: n.index }),
                    Forwarder::Torus => self.torus_arrival(ev.now(), n.index, pkt),
                }
            }
            NetEvent::PortWake { port } => {
                self.on_port_wake(ev, port);
                None
            }
            NetEvent::LinkDown { port } => {
                // Failures overlap (a link fails with each of its two servers): the link
                // is down while any failure holds it.
                self.down_causes[port as usize] += 1;
                if self.down_causes[port as usize] == 1 {
                    self.link_down(ev.now(), port);
                    self.kbr_link_changed(ev, port, false);
                    if self.nodes[self.ports[port as usize].node as usize].forwarder
                        == Forwarder::Torus
                    {
                        // What waits for this link at its server is lost with it.
                        self.service_refill(ev, port);
                    }
                }
                None
            }
            NetEvent::LinkUp { port } => {
                self.down_causes[port as usize] -= 1;
                if self.down_causes[port as usize] == 0 {
                    self.ports[port as usize].up = true;
                    self.kbr_link_changed(ev, port, true);
                }
                None
            }
            NetEvent::NodeDown { node } => {
                self.node_up[node as usize] = false;
                None
            }
            NetEvent::NodeUp { node } => {
                self.node_up[node as usize] = true;
                self.kbr_node_up(ev.now(), node);
                None
            }
            NetEvent::Learn { notice } => {
                self.kbr_learn(ev, notice);
                None
            }
            NetEvent::Loopback { pkt } => Some(Upcall::Deliver {
                pkt,
                host: self.pool.get(pkt).dst_host,
            }),
        }
    }

    /// The link out of `port` fails: every packet queued at the port or on its wire is lost.
    fn link_down(&mut self, now: TimePs, port: u32) {
        self.acts_on(self.ports[port as usize].node);
        self.ports[port as usize].up = false;
        while let Some(pkt) = self.dequeue(port, now) {
            self.drop_on_down_link(now, port, pkt);
        }
        let lost: Vec<PktId> = self.wires[port as usize]
            .in_flight
            .drain(..)
            .map(|(p, _)| p)
            .collect();
        for pkt in lost {
            self.drop_on_down_link(now, port, pkt);
        }
    }

    fn drop_on_down_link(&mut self, now: TimePs, port: u32, pkt: PktId) {
        self.counters.link_down_drops += 1;
        self.drop_packet(now, port, pkt);
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
        let port = self.route_at(node, pkt);
        self.enqueue_at_port(ev, port, pkt, in_port);
    }

    /// The output port switch `node` sends `pkt` by: ECMP's choice, or its custom scheme's.
    #[inline(always)]
    fn route_at(&mut self, node: u32, pkt: PktId) -> u32 {
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
        base + local
    }

    /// The packet at the head of `port`'s link reaches the far end. Returns it with the
    /// node and input port it reaches, after scheduling the next arrival on that link.
    #[inline]
    pub fn on_link_arrive(
        &mut self,
        ev: &mut impl Scheduler<NetEvent>,
        port: u32,
    ) -> Option<(PktId, u32, u32)> {
        let w = &mut self.wires[port as usize];
        // None: an arrival whose packet was lost when the link failed.
        match w.in_flight.front() {
            Some(&(_, t)) if t == ev.now() => {}
            _ => return None,
        }
        let (pkt, _) = w.in_flight.pop_front()?;
        if let (false, Some(&(_, next))) = (w.remote, w.in_flight.front()) {
            ev.schedule(next, NetEvent::LinkArrive { port });
        }
        Some((pkt, w.to_node, w.to_port))
    }

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
        let n = &self.nodes[w.to_node as usize];
        if n.forwarder != Forwarder::Ecmp {
            return;
        }
        let p = self.pool.get(pkt);
        let out = n.port_base + self.routing.next_port(n.index, p.dst_host, p.hash);
        let pt = &self.ports[out as usize];
        crate::engine::prefetch(
            &self.queues,
            (pt.q_base + w.to_port.min(pt.q_count - 1)) as usize,
        );
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
            if nd.forwarder == Forwarder::Torus {
                sq.prefetch(nd.index, (port - nd.port_base) as usize);
            }
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
        self.counters.delivered_bytes += u64::from(self.pool.get(pkt).payload_bytes);
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
        if p.dst_host == packet::TO_KEY {
            if let Some(k) = self.kbr.as_mut() {
                k.counters.key_dropped += 1;
            }
        }
        // A segment dropped before it left its own host frees its place in the sender's
        // small-queue budget just as a departure does (a torus server's service queue can
        // drop its own segments); otherwise the sender would wait for it forever.
        if self.track_nic_departures
            && self.ports[port as usize].switch == NONE
            && p.hops == 0
            && p.payload_bytes > 0
            && p.proto == packet::Proto::Tcp
        {
            self.nic_departures.push((p.flow_id, p.frame_bytes));
        }
        let st = &mut self.ports[port as usize].stats;
        st.drops += 1;
        st.drop_bytes += p.frame_bytes as u64;
        self.drop_log.push(rec);
        self.counters.dropped += 1;
        self.pool.free(pkt);
    }

    /// The most bytes `port`'s queues may hold after this enqueue, by the switch's buffer
    /// architecture: a dynamic-threshold share of a shared buffer, what the packet's input
    /// has left of its ingress buffer, or the port's own buffer.
    #[inline]
    fn admission_limit(&self, port: u32, in_port: u32) -> u64 {
        let pt = &self.ports[port as usize];
        if pt.switch == NONE {
            return pt.buffer_bytes;
        }
        let sw = &self.switches[pt.switch as usize];
        if let Some(sb) = &sw.shared {
            let free = sb.total_bytes - sb.used_bytes;
            let threshold = (sb.alpha * free as f64) as u64;
            threshold.min(pt.bytes_queued + free)
        } else if sw.ingress_buffers {
            let g = (self.nodes[pt.node as usize].port_base + in_port) as usize;
            pt.bytes_queued + pt.buffer_bytes.saturating_sub(self.ingress_bytes[g])
        } else {
            pt.buffer_bytes
        }
    }

    /// Offers `pkt` (arrived on local input `in_port`) to `port`'s scheme: classify, then
    /// enqueue within the admission limit; transmits or drops by the verdict.
    fn enqueue_at_port(
        &mut self,
        ev: &mut impl Scheduler<NetEvent>,
        port: u32,
        pkt: PktId,
        in_port: u32,
    ) {
        let now = ev.now();
        self.acts_on(self.ports[port as usize].node);
        if !self.ports[port as usize].up {
            self.drop_on_down_link(now, port, pkt);
            return;
        }
        if self.slot_free(port) {
            self.enqueue_in_slot(ev, port, pkt);
            return;
        }
        if self.admit(port, pkt, in_port, now) {
            self.try_transmit(ev, port);
        }
    }

    /// Offers `pkt` (arrived on local input `in_port`) to `port`'s scheme within the
    /// admission limit, counting marks, drops and the buffer's use; returns whether the
    /// port has a packet newly queued (it may start sending).
    #[inline(always)]
    fn admit(&mut self, port: u32, pkt: PktId, in_port: u32, now: TimePs) -> bool {
        let limit_bytes = self.admission_limit(port, in_port);
        let Network {
            pool,
            ports,
            queues,
            masks,
            schemes,
            queue_trace,
            ..
        } = self;
        let pt = &mut ports[port as usize];
        pool.get_mut(pkt).enqueued_ps = now;
        let before = pt.bytes_queued;
        let mut ctx = port_ctx(pt, queues, masks, pool, limit_bytes, now);
        let scheme = &mut schemes[port as usize];
        let q = scheme.classify(&mut ctx, pkt, in_port);
        let frame = ctx.pool.get(pkt).frame_bytes as u64;
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
        if self.account_enqueue(port, in_port, before, frame, verdict) {
            self.counters.buffer_violations += 1;
        }
        match verdict {
            Verdict::Accepted | Verdict::AcceptedMarked => true,
            Verdict::Dropped => {
                self.drop_packet(now, port, pkt);
                false
            }
            Verdict::DroppedOther(other) => {
                self.drop_packet(now, port, other);
                true
            }
        }
    }

    /// Whether `port` keeps its waiting frame in `nic_slots` and has room there now (nothing
    /// queued: a frame queued behind others goes to the scheme's queue, after them).
    #[inline(always)]
    fn slot_free(&self, port: u32) -> bool {
        self.nic_slots
            .get(port as usize)
            .is_some_and(|&s| s == packet::NO_PKT)
            && self.ports[port as usize].pkts_queued == 0
    }

    /// A torus link's NIC takes `pkt` as its waiting frame: what a DropTail queue with an
    /// unlimited buffer does with it, without the scheme's queue (the common case under
    /// late link choice, where a link's NIC holds one frame behind the one on the wire).
    #[inline]
    fn enqueue_in_slot(&mut self, ev: &mut impl Scheduler<NetEvent>, port: u32, pkt: PktId) {
        let p = self.pool.get_mut(pkt);
        p.enqueued_ps = ev.now();
        let frame = u64::from(p.frame_bytes);
        let pt = &mut self.ports[port as usize];
        pt.pkts_queued = 1;
        pt.bytes_queued = frame;
        pt.stats.max_queue_bytes = pt.stats.max_queue_bytes.max(frame);
        self.nic_slots[port as usize] = pkt;
        self.try_transmit(ev, port);
    }

    /// Which ports may keep their waiting frame in `nic_slots`: the torus links of servers
    /// with per-service queues whose NIC scheme is DropTail with an unlimited buffer and no
    /// packet limit, not observed by a capture or a queue trace (their queue behaves
    /// exactly as the slot does). Call once the network is complete.
    pub fn use_nic_slots(&mut self) {
        if self.service_queues.is_none() {
            return;
        }
        let slot_port = |n: &Network, port: usize| {
            let pt = &n.ports[port];
            let nd = &n.nodes[pt.node as usize];
            let plain = matches!(&n.schemes[port], crate::scheme::Scheme::DropTail(d) if d.limit_packets.is_none());
            nd.forwarder == Forwarder::Torus
                && (port as u32 - nd.port_base) < 6
                && plain
                && pt.buffer_bytes == u64::MAX
                && pt.taps == 0
        };
        let any = (0..self.ports.len()).any(|p| slot_port(self, p));
        if any {
            self.nic_slots = (0..self.ports.len())
                .map(|p| {
                    if slot_port(self, p) {
                        packet::NO_PKT
                    } else {
                        NOT_A_SLOT
                    }
                })
                .collect();
        }
    }

    /// Books an enqueue in the switch's buffer (shared or per input); returns whether a
    /// buffer now holds more than it may (an invariant violation).
    #[inline]
    fn account_enqueue(
        &mut self,
        port: u32,
        in_port: u32,
        before: u64,
        frame: u64,
        verdict: Verdict,
    ) -> bool {
        let pt = &self.ports[port as usize];
        let after = pt.bytes_queued;
        if pt.switch == NONE {
            return after > pt.buffer_bytes;
        }
        let base = self.nodes[pt.node as usize].port_base;
        let sw = &mut self.switches[pt.switch as usize];
        if let Some(sb) = sw.shared.as_mut() {
            sb.used_bytes = sb.used_bytes + after - before;
            return sb.used_bytes > sb.total_bytes;
        }
        if !sw.ingress_buffers {
            return after > pt.buffer_bytes;
        }
        // Credit what entered to its input and debit what a scheme pushed out to the
        // evicted packet's own input.
        let g = (base + in_port) as usize;
        match verdict {
            Verdict::Accepted | Verdict::AcceptedMarked => self.ingress_bytes[g] += frame,
            Verdict::DroppedOther(other) => {
                self.ingress_bytes[g] += frame;
                let o = self.pool.get(other);
                self.ingress_bytes[(base + u32::from(o.in_port)) as usize] -= o.frame_bytes as u64;
            }
            Verdict::Dropped => {}
        }
        self.ingress_bytes[g] > pt.buffer_bytes
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

    /// Takes the next packet the scheme sends from `port`, releasing its buffer space.
    #[inline(always)]
    fn dequeue(&mut self, port: u32, now: TimePs) -> Option<PktId> {
        let Network {
            pool,
            ports,
            queues,
            masks,
            schemes,
            switches,
            nodes,
            ingress_bytes,
            ..
        } = self;
        let pt = &mut ports[port as usize];
        if pt.pkts_queued == 0 {
            return None;
        }
        if let Some(slot) = self.nic_slots.get_mut(port as usize) {
            if *slot != packet::NO_PKT && *slot != NOT_A_SLOT {
                let pkt = std::mem::replace(slot, packet::NO_PKT);
                pt.pkts_queued -= 1;
                pt.bytes_queued -= u64::from(pool.get(pkt).frame_bytes);
                return Some(pkt);
            }
        }
        let before = pt.bytes_queued;
        let mut ctx = port_ctx(pt, queues, masks, pool, u64::MAX, now);
        let pkt = schemes[port as usize].schedule(&mut ctx)?;
        if pt.switch != NONE {
            let sw = &mut switches[pt.switch as usize];
            if let Some(sb) = sw.shared.as_mut() {
                sb.used_bytes -= before - pt.bytes_queued;
            } else if sw.ingress_buffers {
                ingress_bytes[(nodes[pt.node as usize].port_base + u32::from(pool.get(pkt).in_port))
                    as usize] -= before - pt.bytes_queued;
            }
        }
        Some(pkt)
    }

    /// Starts the next transmission if the port is idle and has a packet to send.
    fn try_transmit(&mut self, ev: &mut impl Scheduler<NetEvent>, port: u32) {
        let now = ev.now();
        self.acts_on(self.ports[port as usize].node);
        let pt = &mut self.ports[port as usize];
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
        let Some(pkt) = self.dequeue(port, now) else {
            return;
        };
        self.transmit(ev, port, pkt);
        if self.service_queues.is_some()
            && self.nodes[self.ports[port as usize].node as usize].forwarder == Forwarder::Torus
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
    fn transmit(&mut self, ev: &mut impl Scheduler<NetEvent>, port: u32, pkt: PktId) {
        let now = ev.now();
        let packed = self
            .pack
            .and_then(|pack| self.gather_tails(port, pkt, pack));
        let tail_bytes = packed.unwrap_or(0);
        let pt = &mut self.ports[port as usize];
        let p = self.pool.get_mut(pkt);
        p.framing = (p.framing & framing::OWN) | if packed.is_some() { framing::PACKED } else { 0 };
        let wire = u64::from(p.frame_bytes + pt.wire_overhead_bytes) + tail_bytes;
        let ser = if pt.ps_per_byte != 0 {
            wire * pt.ps_per_byte
        } else {
            serialisation_ps(wire, pt.rate_bps)
        };
        // Under cut-through the packet may still be arriving: it cannot leave before its last bit.
        let end = (now + ser).max(p.rx_done_ps);
        pt.busy_until_ps = end;
        pt.stats.tx_wire_bytes += wire;
        let head_arrival = if pt.peer_cut_through {
            now + serialisation_ps(CUT_THROUGH_HEADER_BYTES + 8, pt.rate_bps) + pt.prop_ps
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
    fn gather_tails(&mut self, port: u32, head: PktId, pack: Pack) -> Option<u64> {
        let nd = &self.nodes[self.ports[port as usize].node as usize];
        let (host, local) = (nd.index, (port - nd.port_base) as usize);
        let (Forwarder::Torus, true, Some(sq)) =
            (nd.forwarder, local < 6, self.service_queues.as_mut())
        else {
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
    fn depart_tails(
        &mut self,
        ev: &mut impl Scheduler<NetEvent>,
        port: u32,
        end_ps: TimePs,
        arrive_ps: TimePs,
    ) {
        for i in 0..self.pack_tails.len() {
            let tail = self.pack_tails[i];
            let p = self.pool.get_mut(tail);
            p.framing = (p.framing & framing::OWN) | framing::PACKED | framing::TAIL;
            self.depart(ev, port, tail, end_ps, arrive_ps);
        }
        self.pack_tails.clear();
    }

    /// `pkt` leaves `port` in a frame whose last bit leaves at `end_ps` and which reaches
    /// the far end at `arrive_ps`: counted, traced, and put on the wire.
    #[inline(always)]
    fn depart(
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
            && p.proto == packet::Proto::Tcp
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

    /// Nodes a packet from `src` to `dst` crosses between them (switches, or forwarding
    /// servers on a torus), on the path of hash 0; every equal-cost path has as many.
    pub fn switches_on_path(&self, src: u32, dst: u32) -> u32 {
        self.path_ports(src, dst).count() as u32 - 1
    }

    /// The output ports a packet from `src` to `dst` leaves through on the path of hash 0
    /// (a torus: the first shortest-path link at each hop): the source's port, then one
    /// port per node it crosses.
    fn path_ports(&self, src: u32, dst: u32) -> impl Iterator<Item = u32> + '_ {
        let first_port = move |host: u32| {
            let nd = &self.nodes[self.host_nodes[host as usize] as usize];
            match (nd.forwarder, &self.torus) {
                (Forwarder::Torus, Some(t)) => nd.port_base + t.next_ports(host, dst).0[0] as u32,
                _ => nd.port_base,
            }
        };
        std::iter::successors(Some(first_port(src)), move |&port| {
            let nd = &self.nodes[self.ports[port as usize].peer_node as usize];
            match nd.forwarder {
                Forwarder::Ecmp => Some(nd.port_base + self.routing.next_port(nd.index, dst, 0)),
                Forwarder::Torus if nd.index != dst => Some(first_port(nd.index)),
                _ => None,
            }
        })
        .take(self.nodes.len())
    }

    /// The technology that frames what host `host` sends.
    #[inline]
    pub fn host_link(&self, host: u32) -> &LinkTech {
        &self.techs[self.host_tech[host as usize] as usize]
    }

    /// Buffer bytes of an IP packet of `ip_bytes` sent by `host`.
    #[inline]
    pub fn frame_bytes(&self, host: u32, ip_bytes: u32) -> u32 {
        self.host_link(host).frame_bytes(ip_bytes)
    }

    /// Time to move `bytes` of TCP payload from `src` to `dst` on an idle network: the first
    /// segment crosses every hop store-and-forward (serialisation, propagation and
    /// port-to-port latency), the rest follow back to back at the path's slowest link.
    /// Leaves out ACKs, slow start and the handshake: it is the floor that slowdown divides by.
    pub fn ideal_transfer_ps(&self, src: u32, dst: u32, bytes: u64, mss: u32) -> TimePs {
        let frame = |payload: u64| {
            self.frame_bytes(src, payload as u32 + packet::TCP_IP_HEADER_BYTES) as u64
        };
        let first_payload = bytes.min(mss as u64);
        let rest = bytes - first_payload;
        let (n_full, last) = (rest / mss as u64, rest % mss as u64);
        let mut t = 0;
        // The slowest link by time per byte on the wire, with its per-frame overhead.
        let mut slowest = (u64::MAX, 0u64);
        for port in self.path_ports(src, dst) {
            let pt = &self.ports[port as usize];
            let wire = |f: u64| f + pt.wire_overhead_bytes as u64;
            t += serialisation_ps(wire(frame(first_payload)), pt.rate_bps)
                + pt.prop_ps
                + pt.peer_delay_ps;
            if pt.rate_bps < slowest.0 {
                slowest = (pt.rate_bps, pt.wire_overhead_bytes as u64);
            }
        }
        let (min_rate, overhead) = slowest;
        let full = frame(mss as u64) + overhead;
        t = t.saturating_add(n_full.saturating_mul(serialisation_ps(full, min_rate)));
        if last > 0 {
            t += serialisation_ps(frame(last) + overhead, min_rate);
        }
        t
    }
}
