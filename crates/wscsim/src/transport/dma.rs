//! DMA through PCIe non-transparent bridges: the PCIe paper's data-transfer library (Byrne
//! et al., HotPower 2011, section 3), not sockets.
//!
//! Each node's PCIe adapter (a PLX PEX 8609) has a DMA engine with `channels` channels.
//! A transfer moves bytes between two nodes' memories through a window of the source
//! node's address space that the switch maps onto the peer's memory; a node has `windows`
//! of them (two in the paper's testbed), and a transfer to a peer without a window first
//! remaps one, least recently used and idle, at a cost of `remap`.
//!
//! - **Write (push)**: the engine reads the data from its own host's memory with read
//!   requests of `read_request_bytes`, `read_tags` at a time, each taking the local round
//!   trip (adapter to root port and back, and the host's response time `host_read`), and
//!   sends each chunk on as posted memory writes (TLPs of at most the link's payload), one
//!   way, paced so the adapter never holds more than the link can send.
//! - **Read (pull)**: the engine sends read requests (header-only TLPs) through the fabric to
//!   the peer, `read_tags` at a time; the peer's adapter and host answer after
//!   `2 x adapter + host_read` with completions carrying the data back. A read takes a round
//!   trip through the fabric for every `read_tags x read_request_bytes`, a write does not:
//!   that is why the paper's reads (1.06 GB/s) are slower than its writes (1.56 GB/s).
//! - **Load**: a CPU's 4-byte load through a window: a read of 4 bytes with one tag, plus
//!   the trip from the core to the root port and through the requester's adapter, both
//!   ways (the paper's ~2 us).
//!
//! The requests, posted writes and completions are packets in the network (protocol
//! `Dma`): they queue at switch ports and cross links at the link's rate with the TLP
//! framing of the link's technology. They cost no CPU time.
//!
//! Simplified: PCIe's credit-based flow control is modelled at the receiver only: a chunk
//! leaves its engine when the chunks granted to the same receiver before it are within two
//! chunks of arriving there, so on the paper's star (one switch) the switch port to a busy
//! receiver holds about two chunks per sender and nothing is dropped; credits per hop in
//! deeper fabrics are not modelled (a dropped DMA packet is counted in
//! `dma_packets_dropped`, and its transfer never completes); the DMA engine's descriptor
//! fetches are taken as prefetched (PEX 8609's prefetch descriptor mode); completions come
//! in TLPs of the link's payload, not at read-completion boundaries; doorbells and mailboxes
//! are not modelled (a transfer is complete when its last byte arrives).

use super::{HostPath, Note, TransportBuild, TransportKind, TransportSched};
use crate::check::{err, int_in, ConfigError};
use crate::engine::TimePs;
use crate::net::Network;
use crate::packet::{Packet, PktId, Proto};
use crate::table::Table;
use crate::units::{Bytes, Duration};
use serde::{Deserialize, Serialize};

/// The DMA layer's events: a step of transfer `xfer`; `step` is a chunk index, or
/// `START` when a window remap is done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaEvent {
    pub xfer: u32,
    pub step: u32,
}

/// Schedules a transfer's step.
#[inline]
fn arm(ev: &mut impl TransportSched, at_ps: TimePs, e: DmaEvent) {
    ev.schedule(at_ps, super::TransportEvent::from(e));
}

const START: u32 = u32::MAX;
/// Step of a load whose data has reached the core.
const DONE: u32 = u32::MAX - 1;

/// TLP kinds, carried in a DMA packet's `dst_port`.
const WRITE: u16 = 0;
const READ_REQUEST: u16 = 1;
const COMPLETION: u16 = 2;

/// The PCIe fabric's DMA parameters (`[dma]`, resolved).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DmaParams {
    pub windows: u32,
    pub remap_ps: TimePs,
    pub channels: u32,
    pub read_request_bytes: u32,
    pub read_tags: u32,
    pub adapter_ps: TimePs,
    pub host_read_ps: TimePs,
    pub cpu_to_port_ps: TimePs,
}

impl DmaParams {
    /// The engine's round trip to its own host's memory.
    pub fn local_read_ps(&self) -> TimePs {
        2 * self.adapter_ps + self.host_read_ps
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Op {
    Write,
    Read,
    Load,
}

/// One transfer: `initiator`'s engine moves `bytes` to (write) or from (read) `peer`.
#[derive(Clone, Debug)]
pub struct Transfer {
    pub initiator: u32,
    pub peer: u32,
    pub bytes: u64,
    pub op: Op,
    pub app: u32,
    /// The application's tag, repeated in its note.
    pub tag: u32,
    pub queued_ps: TimePs,
    /// When it got a channel and a window (NEVER while it waits).
    pub start_ps: TimePs,
    pub end_ps: TimePs,
    /// Whether it had to remap a window first.
    pub remapped: bool,
    /// Chunks asked for (read requests sent, or local fetches started).
    chunks_issued: u32,
    /// Bytes that reached the far end (write) or came back (read).
    arrived: u64,
}

impl Transfer {
    fn chunks(&self, chunk_bytes: u32) -> u32 {
        self.bytes.div_ceil(u64::from(chunk_bytes)).max(1) as u32
    }

    fn chunk_len(&self, k: u32, chunk_bytes: u32) -> u32 {
        let start = u64::from(k) * u64::from(chunk_bytes);
        (self.bytes - start).min(u64::from(chunk_bytes)) as u32
    }
}

/// A mapping window: the peer it maps, when it was last used, and the running transfers
/// that use it (a window in use is never remapped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Window {
    peer: u32,
    last_use_ps: TimePs,
    transfers: u32,
}

/// A node's engine: its windows and its waiting transfers.
#[derive(Clone, Debug, Default)]
struct Engine {
    windows: Vec<Window>,
    waiting: std::collections::VecDeque<u32>,
    active: u32,
    /// When the adapter's link will have sent what the engine gave it.
    link_free_ps: TimePs,
}

pub struct Dma {
    pub params: DmaParams,
    pub transfers: Vec<Transfer>,
    engines: Vec<Engine>,
    /// Per host: until when the chunks already granted to it will be arriving on its link
    /// (PCIe's credits, seen from the receiver: see `step_due`).
    rx_free_ps: Vec<TimePs>,
    pub notes: Vec<Note>,
    pub remaps: u64,
}

impl Dma {
    pub fn new(params: DmaParams, n_hosts: usize) -> Dma {
        Dma {
            params,
            transfers: Vec::new(),
            engines: vec![Engine::default(); n_hosts],
            rx_free_ps: vec![0; n_hosts],
            notes: Vec::new(),
            remaps: 0,
        }
    }

    /// Starts a transfer (queued behind the initiator's earlier ones if its channels are
    /// busy); the application hears `Note::Dma` when its last byte has arrived.
    #[allow(clippy::too_many_arguments)]
    pub fn submit(
        &mut self,
        net: &mut Network,
        ev: &mut impl TransportSched,
        op: Op,
        initiator: u32,
        peer: u32,
        bytes: u64,
        app: u32,
        tag: u32,
    ) -> u32 {
        let id = self.transfers.len() as u32;
        self.transfers.push(Transfer {
            initiator,
            peer,
            bytes: if op == Op::Load { 4 } else { bytes },
            op,
            app,
            tag,
            queued_ps: ev.now(),
            start_ps: crate::engine::NEVER,
            end_ps: crate::engine::NEVER,
            remapped: false,
            chunks_issued: 0,
            arrived: 0,
        });
        self.engines[initiator as usize].waiting.push_back(id);
        self.admit(net, ev, initiator);
        id
    }

    /// Gives waiting transfers of `node` a channel and a window, in order, while both are
    /// to be had.
    fn admit(&mut self, net: &mut Network, ev: &mut impl TransportSched, node: u32) {
        let now = ev.now();
        loop {
            let e = &mut self.engines[node as usize];
            let Some(&x) = e.waiting.front() else { return };
            if e.active >= self.params.channels {
                return;
            }
            let peer = self.transfers[x as usize].peer;
            let Some(remap) = take_window(e, peer, now, self.params.windows) else {
                return; // every window is in use by another peer's transfer
            };
            e.waiting.pop_front();
            e.active += 1;
            let t = &mut self.transfers[x as usize];
            t.start_ps = now;
            t.remapped = remap;
            if remap {
                self.remaps += 1;
                arm(
                    ev,
                    now + self.params.remap_ps,
                    DmaEvent {
                        xfer: x,
                        step: START,
                    },
                );
            } else {
                self.begin(net, ev, x);
            }
        }
    }

    /// Sends the first `read_tags` requests or fetches of transfer `x`.
    fn begin(&mut self, net: &mut Network, ev: &mut impl TransportSched, x: u32) {
        let t = &self.transfers[x as usize];
        let tags = if t.op == Op::Load {
            1
        } else {
            self.params.read_tags
        };
        let n = tags.min(t.chunks(self.params.read_request_bytes));
        for _ in 0..n {
            self.issue(net, ev, x);
        }
    }

    /// The index of transfer `x`'s next chunk to ask for, counted as asked; None when every
    /// chunk has been.
    fn next_chunk(&mut self, x: u32) -> Option<u32> {
        let t = &mut self.transfers[x as usize];
        if t.chunks_issued >= t.chunks(self.params.read_request_bytes) {
            return None;
        }
        t.chunks_issued += 1;
        Some(t.chunks_issued - 1)
    }

    /// A write's local fetch of chunk `k`, started at `start_ps`, is done a local round
    /// trip later.
    fn fetch(&self, ev: &mut impl TransportSched, x: u32, k: u32, start_ps: TimePs) {
        let at = start_ps + self.params.local_read_ps();
        arm(ev, at, DmaEvent { xfer: x, step: k });
    }

    /// Asks for the transfer's next chunk now: a local fetch (write) or a read request
    /// (read, load).
    fn issue(&mut self, net: &mut Network, ev: &mut impl TransportSched, x: u32) {
        let Some(k) = self.next_chunk(x) else { return };
        let t = &self.transfers[x as usize];
        if t.op == Op::Write {
            self.fetch(ev, x, k, ev.now());
            return;
        }
        let (src, dst) = (t.initiator, t.peer);
        let mut p = dma_packet(net, src, dst, x, READ_REQUEST, 0);
        p.seq = u64::from(k);
        emit(net, ev, src, p);
    }

    /// A transfer's step is due: a remap is done, a write's chunk is fetched, or a read
    /// request has been served by the peer's memory.
    fn step_due(&mut self, net: &mut Network, ev: &mut impl TransportSched, e: DmaEvent) {
        let x = e.xfer;
        match e.step {
            START => return self.begin(net, ev, x),
            DONE => return self.finish(net, ev, x),
            _ => {}
        }
        let t = &self.transfers[x as usize];
        let chunk_bytes = self.params.read_request_bytes;
        let len = t.chunk_len(e.step, chunk_bytes);
        let (src, dst) = match t.op {
            Op::Write => (t.initiator, t.peer),
            Op::Read | Op::Load => (t.peer, t.initiator),
        };
        // Credits: PCIe never drops; a full receiver holds its senders back. Modelled at
        // the receiver's link: a chunk goes when what was granted before it is within two
        // chunks of arriving, so the switch port to the receiver holds no more than that.
        let slack = 2 * self.chunk_wire_ps(net, dst, chunk_bytes);
        let granted = self.rx_free_ps[dst as usize].saturating_sub(slack);
        if granted > ev.now() {
            arm(ev, granted, e);
            return;
        }
        let rx_ps = self.chunk_wire_ps(net, dst, len);
        let rx = &mut self.rx_free_ps[dst as usize];
        *rx = (*rx).max(ev.now()) + rx_ps;
        match t.op {
            Op::Write => {
                let sent_ps = self.send_chunk(net, ev, x, src, dst, WRITE, e.step, len);
                // The fetch's tag is free now, but the adapter buffers at most `read_tags`
                // chunks for its link: the next fetch starts when there is room for it.
                let room_ps =
                    self.chunk_wire_ps(net, src, chunk_bytes) * u64::from(self.params.read_tags);
                let start = ev.now().max(sent_ps.saturating_sub(room_ps));
                if let Some(k) = self.next_chunk(x) {
                    self.fetch(ev, x, k, start);
                }
            }
            Op::Read | Op::Load => {
                self.send_chunk(net, ev, x, src, dst, COMPLETION, e.step, len);
            }
        }
    }

    /// Sends `len` bytes of chunk `k` from `src` to `dst`: one packet, framed by the link as
    /// TLPs of at most its payload each (the header of every TLP counted in its size, as for
    /// any packet on a PCIe link); returns when the source's link will have sent it.
    #[allow(clippy::too_many_arguments)]
    fn send_chunk(
        &mut self,
        net: &mut Network,
        ev: &mut impl TransportSched,
        x: u32,
        src: u32,
        dst: u32,
        kind: u16,
        k: u32,
        len: u32,
    ) -> TimePs {
        let wire_ps = self.chunk_wire_ps(net, src, len);
        let eng = &mut self.engines[src as usize];
        eng.link_free_ps = eng.link_free_ps.max(ev.now()) + wire_ps;
        let mut p = dma_packet(net, src, dst, x, kind, len);
        p.seq = u64::from(k);
        emit(net, ev, src, p);
        eng.link_free_ps
    }

    /// Time `src`'s link takes to send a chunk of `bytes` as TLPs.
    fn chunk_wire_ps(&self, net: &Network, src: u32, bytes: u32) -> TimePs {
        let tech = net.host_link(src);
        let rate = net.ports()[net.nic_port(src) as usize].rate_bps;
        let wire = u64::from(tech.wire_bytes(tech.frame_bytes(bytes)));
        crate::engine::serialisation_ps(wire, rate)
    }

    /// A DMA packet reached its destination host.
    fn tlp_arrived(&mut self, net: &mut Network, ev: &mut impl TransportSched, pkt: PktId) {
        let p = *net.pool().get(pkt);
        net.delivered(pkt);
        let x = p.flow_id;
        match p.dst_port {
            READ_REQUEST => {
                // The peer's adapter and host serve it.
                let at = ev.now() + 2 * self.params.adapter_ps + self.params.host_read_ps;
                arm(
                    ev,
                    at,
                    DmaEvent {
                        xfer: x,
                        step: p.seq as u32,
                    },
                );
            }
            WRITE | COMPLETION => {
                let t = &mut self.transfers[x as usize];
                t.arrived += u64::from(p.payload_bytes);
                // A read's completion frees its tag for the next request.
                if p.dst_port == COMPLETION {
                    self.issue(net, ev, x);
                }
                let t = &self.transfers[x as usize];
                if t.arrived >= t.bytes {
                    self.complete(net, ev, x);
                }
            }
            _ => {}
        }
    }

    /// The last byte has arrived; a CPU load's data still has to reach the core.
    fn complete(&mut self, net: &mut Network, ev: &mut impl TransportSched, x: u32) {
        if self.transfers[x as usize].op == Op::Load {
            let core_ps = 2 * (self.params.adapter_ps + self.params.cpu_to_port_ps);
            arm(
                ev,
                ev.now() + core_ps,
                DmaEvent {
                    xfer: x,
                    step: DONE,
                },
            );
        } else {
            self.finish(net, ev, x);
        }
    }

    /// Transfer `x` is done: its application hears, and its channel and window are free.
    fn finish(&mut self, net: &mut Network, ev: &mut impl TransportSched, x: u32) {
        let t = &mut self.transfers[x as usize];
        t.end_ps = ev.now();
        let (node, peer) = (t.initiator, t.peer);
        self.notes.push(Note::Dma {
            app: t.app,
            xfer: x,
            tag: t.tag,
        });
        let e = &mut self.engines[node as usize];
        e.active -= 1;
        if let Some(w) = e.windows.iter_mut().find(|w| w.peer == peer) {
            w.transfers -= 1;
        }
        self.admit(net, ev, node);
    }

    /// Whether any transfer has not completed.
    pub fn pending(&self) -> usize {
        self.transfers
            .iter()
            .filter(|t| t.end_ps == crate::engine::NEVER)
            .count()
    }
}

/// The `dma` table: a row per transfer.
impl TransportKind for Dma {
    const NAME: &'static str = "DMA";
    const PROTO: Proto = Proto::DMA;
    type Event = DmaEvent;
    /// A DMA engine serves transfers between hosts: a partitioned run (which DMA
    /// scenarios do not use) would handle its steps alone.
    const GLOBAL_EVENTS: bool = true;

    /// Its engines serve transfers between hosts: only a run without any transfer (so
    /// far: applications that start them do not run in partitions) may run its hosts
    /// anywhere.
    fn runs_in_partitions(&self) -> bool {
        self.transfers.is_empty()
    }

    fn build(b: &TransportBuild) -> Self {
        Dma::new(b.dma, b.net.n_hosts())
    }

    /// (Not inlined: the event loop's dispatch stays small.)
    #[inline(never)]
    fn on_packet(&mut self, path: &mut HostPath<'_, impl TransportSched>, pkt: PktId) {
        self.tlp_arrived(path.net, path.ev, pkt);
    }

    #[inline(never)]
    fn on_timer(&mut self, path: &mut HostPath<'_, impl TransportSched>, e: DmaEvent) {
        self.step_due(path.net, path.ev, e);
    }

    /// The transfer's initiator, whose engine runs it. (A partitioned run does not ask:
    /// the DMA engines' events are global.)
    fn timer_host(&self, e: DmaEvent) -> u32 {
        self.transfers[e.xfer as usize].initiator
    }

    #[inline]
    fn has_notes(&self) -> bool {
        !self.notes.is_empty()
    }

    #[inline]
    fn take_notes(&mut self, into: &mut Vec<Note>) {
        into.append(&mut self.notes);
    }

    /// Its table, when the run made transfers.
    fn tables(&self, out: &mut Vec<Table>) {
        if !self.transfers.is_empty() {
            out.push(table(self));
        }
    }

    fn headline(&self, net: &Network, h: &mut serde_json::Map<String, serde_json::Value>) {
        let dropped = net
            .drop_log()
            .iter()
            .filter(|d| d.proto == Proto::DMA)
            .count() as u64;
        headline(h, self, dropped);
    }
}

pub fn table(d: &Dma) -> crate::table::Table {
    use crate::table::{Column, Table};
    let t = &d.transfers;
    let us = |ps: TimePs| {
        if ps == crate::engine::NEVER {
            f64::NAN
        } else {
            ps as f64 / 1e6
        }
    };
    let i64s = |f: &dyn Fn(&Transfer) -> i64| Column::I64(t.iter().map(f).collect());
    let f64s = |f: &dyn Fn(&Transfer) -> f64| Column::F64(t.iter().map(f).collect());
    Table {
        name: "dma",
        columns: vec![
            ("transfer", i64s(&|x| i64::from(x.tag))),
            (
                "op",
                Column::Cat {
                    levels: &["write", "read", "load"],
                    codes: t.iter().map(|x| x.op as u8).collect(),
                },
            ),
            ("initiator", i64s(&|x| i64::from(x.initiator))),
            ("peer", i64s(&|x| i64::from(x.peer))),
            ("bytes", i64s(&|x| x.bytes as i64)),
            ("queued_us", f64s(&|x| us(x.queued_ps))),
            ("start_us", f64s(&|x| us(x.start_ps))),
            ("duration_us", f64s(&|x| us(x.end_ps) - us(x.start_ps))),
            ("remapped", i64s(&|x| i64::from(x.remapped))),
        ],
    }
}

/// The headline's DMA figures: per operation, the mean time of a finished transfer and the
/// sustained rate, GB/s (decimal: the paper's unit): for each initiating node, the bytes of
/// its finished transfers over the time from its first start to its last end, averaged
/// over the nodes; remaps; packets dropped (they must not be: PCIe loses nothing).
pub fn headline(h: &mut serde_json::Map<String, serde_json::Value>, d: &Dma, dropped: u64) {
    for (op, name) in [(Op::Write, "write"), (Op::Read, "read"), (Op::Load, "load")] {
        let done: Vec<&Transfer> = d
            .transfers
            .iter()
            .filter(|t| t.op == op && t.end_ps != crate::engine::NEVER)
            .collect();
        let (Some(first), Some(last)) = (
            done.iter().map(|t| t.start_ps).min(),
            done.iter().map(|t| t.end_ps).max(),
        ) else {
            continue;
        };
        let mut rates = Vec::new();
        let mut nodes: Vec<u32> = done.iter().map(|t| t.initiator).collect();
        nodes.sort_unstable();
        nodes.dedup();
        for n in nodes {
            let mine = done.iter().filter(|t| t.initiator == n);
            let (b, s, e) = mine.fold((0u64, u64::MAX, 0u64), |(b, s, e), t| {
                (b + t.bytes, s.min(t.start_ps), e.max(t.end_ps))
            });
            if e > s {
                rates.push(b as f64 / ((e - s) as f64 / 1e12) / 1e9);
            }
        }
        let mean_us = done
            .iter()
            .map(|t| (t.end_ps - t.start_ps) as f64)
            .sum::<f64>()
            / done.len() as f64
            / 1e6;
        h.insert(format!("dma_{name}_mean_us"), mean_us.into());
        if op != Op::Load && last > first && !rates.is_empty() {
            let gb_s = rates.iter().sum::<f64>() / rates.len() as f64;
            h.insert(format!("dma_{name}_gbytes_per_s"), gb_s.into());
        }
    }
    if !d.transfers.is_empty() {
        h.insert("dma_transfers_unfinished".into(), d.pending().into());
        h.insert("dma_remaps".into(), d.remaps.into());
        h.insert("dma_packets_dropped".into(), dropped.into());
    }
}

/// A window for `peer` at an engine: the one it has, or the least recently used idle one
/// remapped (Some(true)), or a new one while fewer than `windows` exist; None when every
/// window serves another peer's running transfer. Marks the window in use.
fn take_window(e: &mut Engine, peer: u32, now: TimePs, windows: u32) -> Option<bool> {
    if let Some(w) = e.windows.iter_mut().find(|w| w.peer == peer) {
        w.last_use_ps = now;
        w.transfers += 1;
        return Some(false);
    }
    let mapped = Window {
        peer,
        last_use_ps: now,
        transfers: 1,
    };
    if (e.windows.len() as u32) < windows {
        e.windows.push(mapped);
    } else {
        let victim = (0..e.windows.len())
            .filter(|&i| e.windows[i].transfers == 0)
            .min_by_key(|&i| (e.windows[i].last_use_ps, i))?;
        e.windows[victim] = mapped;
    }
    Some(true)
}

/// Puts a DMA packet on `src`'s link (its adapter: no CPU, no host queue of its own).
fn emit(net: &mut Network, ev: &mut impl TransportSched, src: u32, p: Packet) {
    net.count_sent();
    let id = net.pool_mut().alloc(p);
    net.host_transmit(ev, src, id);
}

/// A DMA packet of `payload` bytes (a TLP: the link's header per segment, no IP header).
fn dma_packet(net: &Network, src: u32, dst: u32, x: u32, kind: u16, payload: u32) -> Packet {
    Packet {
        src_host: src,
        dst_host: dst,
        dst_port: kind,
        proto: Proto::DMA,
        flow_id: x,
        hash: crate::packet::five_tuple_hash(src, dst, x as u16, kind, Proto::DMA),
        frame_bytes: net.frame_bytes(src, payload),
        payload_bytes: payload,
        ..Default::default()
    }
}

/// `[dma]`: the PCIe fabric's DMA engines and windows. Defaults are the PCIe paper's
/// testbed where it gives them (two windows) and the parts' data sheets otherwise; every
/// one is written back, so the resolved scenario shows what was used.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DmaCfg {
    /// Mapping windows per node (default 2: the paper's testbed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub windows: Option<i64>,
    /// Time to remap a window to another peer (default 5 us: the paper never measures it;
    /// about two register round trips through the switch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remap: Option<Duration>,
    /// DMA channels per adapter (default 4: the PEX 8609's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channels: Option<i64>,
    /// Bytes per read request (default 512: PCIe's default maximum read request size).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_request: Option<Bytes>,
    /// Read requests a channel keeps outstanding (default 4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_tags: Option<i64>,
    /// One traversal of a node's PCIe adapter, a PEX 8609 (default 140 ns: its data sheet's
    /// cut-through latency).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adapter_latency: Option<Duration>,
    /// From a read request reaching a host's root port to its completion leaving it: root
    /// complex and memory (default 1 us).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_read: Option<Duration>,
    /// A CPU load's trip from the core to the root port, one way (default 100 ns).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_to_port: Option<Duration>,
}

const NS: TimePs = crate::engine::PS_PER_NS;
const MAX_LATENCY_PS: TimePs = 1_000_000_000; // 1 ms: far beyond any PCIe part

fn latency(
    path: &str,
    v: &mut Option<Duration>,
    default_ps: TimePs,
) -> Result<TimePs, ConfigError> {
    let d = v.get_or_insert(Duration(default_ps)).0;
    if d > MAX_LATENCY_PS {
        return Err(err(path, Duration(d), "a duration from 0 to 1ms"));
    }
    Ok(d)
}

pub fn resolve_dma(c: &mut DmaCfg) -> Result<DmaParams, ConfigError> {
    let windows = int_in("dma.windows", *c.windows.get_or_insert(2), 1, 64)?;
    let channels = int_in("dma.channels", *c.channels.get_or_insert(4), 1, 64)?;
    let read_tags = int_in("dma.read_tags", *c.read_tags.get_or_insert(4), 1, 256)?;
    let read_request = c.read_request.get_or_insert(Bytes(512)).0;
    if !(read_request.is_power_of_two() && (128..=4096).contains(&read_request)) {
        return Err(err(
            "dma.read_request",
            read_request,
            "a PCIe maximum read request size: 128, 256, 512, 1024, 2048 or 4096 bytes",
        ));
    }
    Ok(DmaParams {
        windows,
        remap_ps: latency("dma.remap", &mut c.remap, 5_000 * NS)?,
        channels,
        read_request_bytes: read_request as u32,
        read_tags,
        adapter_ps: latency("dma.adapter_latency", &mut c.adapter_latency, 140 * NS)?,
        host_read_ps: latency("dma.host_read", &mut c.host_read, 1_000 * NS)?,
        cpu_to_port_ps: latency("dma.cpu_to_port", &mut c.cpu_to_port, 100 * NS)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_remap_the_least_recently_used_idle_one() {
        let mut e = Engine::default();
        assert_eq!(take_window(&mut e, 7, 0, 2), Some(true));
        assert_eq!(take_window(&mut e, 8, 1, 2), Some(true));
        assert_eq!(take_window(&mut e, 7, 2, 2), Some(false));
        // Both windows serve running transfers: a third peer waits.
        assert_eq!(take_window(&mut e, 9, 3, 2), None);
        // Peer 8's transfer ends: its window (older than 7's) is the one remapped.
        e.windows
            .iter_mut()
            .find(|w| w.peer == 8)
            .unwrap()
            .transfers = 0;
        assert_eq!(take_window(&mut e, 9, 4, 2), Some(true));
        assert!(e.windows.iter().any(|w| (w.peer, w.last_use_ps) == (9, 4)));
        assert!(e.windows.iter().any(|w| w.peer == 7));
    }
}
