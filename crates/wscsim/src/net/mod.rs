//! The network: packets, ports (each drained at line rate onto a link), switches and
//! host NICs, with the per-packet forwarding path.
//!
//! A node is a host or a switch. Every link end is a port with an output queue set run by
//! a scheme; a host's port is its NIC. Nodes interact only by scheduling `Arrive` events at
//! the far end of a link, which keeps the partitioning rule of the engine.

mod access;
pub mod capture;
pub mod kbr;
pub mod link;
mod partition;
pub mod pfc;
pub use crate::packet;
pub use partition::{NetView, RemoteSend};
mod paths;
mod prefetch;
mod queueing;
pub mod routing;
pub mod service_queues;
pub mod slotted;
pub mod telemetry;
mod transmit;

use crate::engine::{serialisation_ps, PartitionId, Scheduler, TimePs, NEVER};
use crate::scheme::{PortCtx, Scheme, Verdict};
use link::LinkTech;
use packet::{framing, PacketPool, PktId, PktQueue};
pub use routing::Forwarder;
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
    /// Whether queued packets count against a buffer of their input, and which.
    pub input_buffers: InputBuffers,
}

/// Buffers that belong to a packet's input rather than to the output port that queues it
/// (`Switch::shared` aside).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputBuffers {
    /// None: each output port's own `buffer_bytes` holds its queue.
    No,
    /// Buffers sit at input ports (virtual output queues in ingress memory, as in the Cisco
    /// Nexus 5000 that DIABLO's model follows): `buffer_bytes` limits what each input holds.
    PerInput,
    /// Each virtual output queue (an input's packets at one output) has `buffer_bytes` of
    /// its own.
    PerVoq,
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

impl Port {
    /// How long `wire_bytes` (a frame with its wire overhead) take on this port's link.
    #[inline(always)]
    pub fn wire_time_ps(&self, wire_bytes: u64) -> TimePs {
        if self.ps_per_byte != 0 {
            wire_bytes * self.ps_per_byte
        } else {
            serialisation_ps(wire_bytes, self.rate_bps)
        }
    }

    /// How long a frame's first bytes take on this port's link before a cut-through switch
    /// at the far end can act on it (its header, after 8 bytes of preamble).
    #[inline(always)]
    pub fn cut_through_head_ps(&self) -> TimePs {
        serialisation_ps(CUT_THROUGH_HEADER_BYTES + 8, self.rate_bps)
    }
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
    /// PFC frames sent, received, and lost with a failed link (not packets: they are
    /// counted apart from `sent`, and those in flight apart from the packets in flight).
    pub control_sent: u64,
    pub control_received: u64,
    pub control_lost: u64,
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
        self.control_sent += o.control_sent;
        self.control_received += o.control_received;
        self.control_lost += o.control_lost;
    }

    /// PFC frames on wires now.
    pub fn control_in_flight(&self) -> u64 {
        self.control_sent - self.control_received - self.control_lost
    }
}

pub struct Network {
    pool: PacketPool,
    nodes: Vec<Node>,
    node_names: Vec<String>,
    ports: Vec<Port>,
    /// The wire out of each port (same index).
    wires: Vec<Wire>,
    /// The link technology of each host's first port (index into `techs`), which frames
    /// what the host sends.
    host_tech: Vec<u8>,
    /// The distinct technologies of this network's links.
    techs: Vec<LinkTech>,
    /// The technology of each port's link (index into `techs`); cold, for the energy model.
    port_tech: Vec<u8>,
    /// Shortest-path forwarding of torus servers (None without a torus).
    torus: Option<routing::torus::TorusRouting>,
    /// CamCubeOS's runtime on a torus: views of failures, keys, detection (None elsewhere).
    kbr: Option<kbr::Kbr>,
    /// Hosts from this index on are outside the torus (its load generators); u32::MAX
    /// without a torus. Kept here so a hop reads one word, not the torus's dimensions.
    torus_servers: u32,
    /// CamCubeOS's per-service queues with late link choice on torus servers (None: each
    /// packet goes straight to the queue of the first free candidate link).
    service_queues: Option<service_queues::ServiceQueues>,
    /// False while a node has failed whole.
    node_up: Vec<bool>,
    /// Per port, the failures holding its link down now (it is up at 0).
    down_causes: Vec<u16>,
    /// Which partition the event being handled acts on, when the partition rule is being
    /// checked (tests): every port an event touches must belong to it.
    acting: std::cell::Cell<Option<PartitionId>>,
    /// Whether `acting` is set and checked (off in ordinary runs).
    check_partitions: bool,
    queues: Vec<PktQueue>,
    masks: Vec<u64>,
    schemes: Vec<Scheme>,
    switches: Vec<Switch>,
    /// Host index to node index.
    host_nodes: Vec<u32>,
    routing: Routing,
    counters: NetCounters,
    drop_log: Vec<DropRecord>,
    /// Packets a scheme sent back towards their sources (`Verdict::Bounced`), until their
    /// switch forwards them.
    bounced: Vec<PktId>,
    /// Frame bytes queued in buffers that belong to the packet's input, for switches with
    /// ingress buffers (per input port, by global port index) or per-VOQ buffers (per
    /// output port and input): indexed by `queueing::input_buffer`.
    input_bytes: Vec<u64>,
    /// TCP data segments that left a host NIC since the transport last looked:
    /// (connection, frame bytes). Only filled when `track_nic_departures` is set (the
    /// transport's TCP small-queues limit needs it).
    nic_departures: Vec<(u32, u32)>,
    track_nic_departures: bool,
    /// Per switch: the port whose custom scheme picks output ports, or NONE (ECMP).
    route_hooks: Vec<u32>,
    /// Packets captured at tapped ports.
    captures: capture::Captures,
    /// Per port, the frame waiting at a torus link's NIC behind the one on the wire, for
    /// ports that hold it here instead of in their scheme's queues (`use_nic_slots`);
    /// empty when no port does.
    nic_slots: Vec<PktId>,
    /// Torus servers pack waiting packets into one frame per link (None: a frame each).
    pack: Option<Pack>,
    /// The packets that ride in the frame being sent (packing), reused.
    pack_tails: Vec<PktId>,
    /// With packing on costed hosts (`record_departures`), the packets that left hosts'
    /// ports since the host layer last looked; the host layer charges their sending work
    /// then.
    frames_out: Vec<Departure>,
    record_departures: bool,
    /// Queue lengths of traced ports at every change.
    queue_trace: capture::QueueTrace,
    /// Partitioned runs: packets sent on wires to other partitions since the partitions
    /// last met, as (port, packet, arrival time), in the order they were sent.
    remote_out: Vec<(u32, PktId, TimePs)>,
    /// Partitioned runs: drops counted for another partition's port (what was on a wire
    /// towards this partition when its link failed), as (port, frame bytes), added to that
    /// port's statistics where the partitions meet (`settle_late_drops`).
    late_port_drops: Vec<(u32, u32)>,
    /// Priority flow control (None: the network may drop).
    pfc: Option<Box<pfc::Pfc>>,
    /// Ports with a PFC announcement to start sending (filled while a queue changes).
    pfc_kick: Vec<u32>,
}

/// What a topology builder hands the network: its nodes and ports, their wires and link
/// technologies, queues and schemes, switches and forwarding tables. Everything else (the
/// packet pool, failures, counters, the upper layers' hooks) starts empty.
pub struct NetworkParts {
    pub nodes: Vec<Node>,
    pub node_names: Vec<String>,
    pub ports: Vec<Port>,
    pub wires: Vec<Wire>,
    pub host_tech: Vec<u8>,
    pub port_tech: Vec<u8>,
    pub techs: Vec<LinkTech>,
    pub torus: Option<routing::torus::TorusRouting>,
    pub queues: Vec<PktQueue>,
    pub masks: Vec<u64>,
    pub schemes: Vec<Scheme>,
    pub switches: Vec<Switch>,
    pub host_nodes: Vec<u32>,
    pub routing: Routing,
    pub route_hooks: Vec<u32>,
}

impl Network {
    /// A network of `parts`, every node and link up, nothing in flight.
    pub fn new(parts: NetworkParts) -> Network {
        let total_ports = parts.ports.len();
        // `switch.buffer` is one mode for every switch, so the two indexings never mix.
        let input_buffers = if parts
            .switches
            .iter()
            .any(|s| s.input_buffers == InputBuffers::PerVoq)
        {
            total_ports * crate::scheme::MAX_QUEUES as usize
        } else {
            total_ports
        };
        Network {
            pool: Default::default(),
            node_up: vec![true; parts.nodes.len()],
            nodes: parts.nodes,
            node_names: parts.node_names,
            ports: parts.ports,
            wires: parts.wires,
            host_tech: parts.host_tech,
            port_tech: parts.port_tech,
            techs: parts.techs,
            torus: parts.torus,
            kbr: None,
            torus_servers: u32::MAX,
            service_queues: None,
            nic_slots: Vec::new(),
            pack: None,
            pack_tails: Vec::new(),
            frames_out: Vec::new(),
            record_departures: false,
            down_causes: vec![0; total_ports],
            acting: Default::default(),
            check_partitions: false,
            remote_out: Vec::new(),
            late_port_drops: Vec::new(),
            pfc: None,
            pfc_kick: Vec::new(),
            queues: parts.queues,
            masks: parts.masks,
            schemes: parts.schemes,
            switches: parts.switches,
            host_nodes: parts.host_nodes,
            routing: parts.routing,
            counters: NetCounters::default(),
            drop_log: Vec::new(),
            bounced: Vec::new(),
            input_bytes: vec![0; input_buffers],
            nic_departures: Vec::new(),
            track_nic_departures: false,
            route_hooks: parts.route_hooks,
            captures: Default::default(),
            queue_trace: Default::default(),
        }
    }
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
    /// Whether node `node` is up (it has not failed whole, or has rejoined).
    pub fn is_node_up(&self, node: u32) -> bool {
        self.node_up[node as usize]
    }

    /// The host that node `node` is, if it is one.
    pub fn host_of_node(&self, node: u32) -> Option<u32> {
        let n = &self.nodes[node as usize];
        (n.kind == NodeKind::Host).then_some(n.index)
    }

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
        if let Some(port) = self.forward_host_port(ev, host, pkt) {
            self.enqueue_at_port(ev, port, pkt, 0);
        }
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
                d.proto.0,
                d.frame_bytes,
            )
        });
    }

    /// Names the services' messages in the drop log by `ranks` (indexed by the id their
    /// packets carry; `ServiceKind::message_ranks`).
    pub fn renumber_service_flows(&mut self, ranks: &[u32]) {
        for d in &mut self.drop_log {
            if d.proto == packet::Proto::SERVICE {
                if let Some(&r) = ranks.get(d.flow_id as usize) {
                    d.flow_id = r;
                }
            }
        }
    }

    /// The partition of host `host`'s node.
    pub fn host_partition(&self, host: u32) -> PartitionId {
        self.nodes[self.host_nodes[host as usize] as usize].partition
    }

    /// Each host's part: its partition's place among the partitions that hold hosts, in
    /// partition order (what the layers above keep their state by, `Tcp::split`). Empty
    /// when the run is not partitioned.
    pub fn host_parts(&self) -> Vec<u32> {
        let partition: Vec<u32> = (0..self.n_hosts() as u32)
            .map(|h| u32::from(self.host_partition(h)))
            .collect();
        let mut holding = partition.clone();
        holding.sort_unstable();
        holding.dedup();
        if holding.len() <= 1 {
            return Vec::new();
        }
        partition
            .iter()
            .map(|p| holding.binary_search(p).expect("listed") as u32)
            .collect()
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
    #[inline(always)]
    pub fn handle(&mut self, ev: &mut impl Scheduler<NetEvent>, e: NetEvent) -> Option<Upcall> {
        match e {
            NetEvent::LinkArrive { port } => {
                let (pkt, node, in_port) = self.on_link_arrive(ev, port)?;
                if self.pfc.is_some() && self.pool.get(pkt).proto == packet::Proto::PFC {
                    self.pfc_receive(ev, node, in_port, pkt);
                    return None;
                }
                self.forward_arrival(ev, node, in_port, pkt)
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
                    if self.pfc.is_some() {
                        // Inputs the drain emptied may resume their other links now.
                        self.pfc_flush(ev);
                    }
                    self.kbr_link_changed(ev, port, false);
                    let nd = &self.nodes[self.ports[port as usize].node as usize];
                    if port - nd.port_base < nd.forwarder.late_choice_links() {
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
        if let Some(pfc) = self.pfc.as_deref_mut() {
            // The peer's pauses end with the link, and so do this end's towards the peer
            // (announced or waiting): when the link works again, the input pauses afresh
            // if it still holds too much.
            pfc.release(port, now);
            pfc.forget_announcements(port);
        }
        while let Some(pkt) = self.dequeue(port, now) {
            self.drop_on_down_link(now, port, pkt);
        }
        if self.wires[port as usize].remote {
            // The far partition owns this wire now; the link's other end fails at the
            // same time, in its own partition (`partition.rs`).
            return self.link_down_between_partitions(now, port);
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

    pub(super) fn drop_on_down_link(&mut self, now: TimePs, port: u32, pkt: PktId) {
        if self.lose_if_control_frame(pkt) {
            return;
        }
        self.counters.link_down_drops += 1;
        self.drop_packet(now, port, pkt);
    }

    /// If `pkt` is a PFC frame, it is lost with its link: counted apart from packets and
    /// freed. Says whether it was.
    pub(super) fn lose_if_control_frame(&mut self, pkt: PktId) -> bool {
        if self.pfc.is_none() || self.pool.get(pkt).proto != packet::Proto::PFC {
            return false;
        }
        self.counters.control_lost += 1;
        self.pool.free(pkt);
        true
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

    /// A host consumed a packet that reached it.
    #[inline]
    pub fn delivered(&mut self, pkt: PktId) {
        self.counters.delivered += 1;
        self.counters.delivered_bytes += u64::from(self.pool.get(pkt).payload_bytes);
        self.pool.free(pkt);
    }
}
