//! UDP: datagrams of a fixed size, no feedback. A stream is (source, destination, port pair).

use super::{HostPath, Note, TransportBuild, TransportKind, TransportSched};
use crate::host::Hosts;
use crate::net::Network;
use crate::packet::{five_tuple_hash, Packet, PktId, Proto, UDP_IP_HEADER_BYTES};

#[derive(Clone, Debug)]
pub struct Stream {
    pub src: u32,
    pub dst: u32,
    sport: u16,
    dport: u16,
    hash: u32,
    pub app: u32,
    pub sent_pkts: u64,
    pub sent_bytes: u64,
    pub recv_pkts: u64,
    pub recv_bytes: u64,
}

#[derive(Default)]
pub struct Udp {
    pub streams: Vec<Stream>,
    /// Datagrams and their frame bytes received by each host (as the destination).
    pub received_by_host: Vec<(u64, u64)>,
    /// The same, counting only what arrived from `steady_from_ps` on (the second half of
    /// the run: long paths take a while to fill).
    pub received_steady: Vec<(u64, u64)>,
    pub steady_from_ps: crate::engine::TimePs,
    pub notes: Vec<Note>,
    /// No application hears datagrams (the timeslot engine's sources and sinks): no notes.
    pub silent: bool,
}

impl Udp {
    pub fn open(&mut self, src: u32, dst: u32, app: u32) -> u32 {
        let id = self.streams.len() as u32;
        let sport = 1024 + (id % 60_000) as u16;
        let dport = 9;
        self.streams.push(Stream {
            src,
            dst,
            sport,
            dport,
            hash: five_tuple_hash(src, dst, sport, dport, Proto::UDP),
            app,
            sent_pkts: 0,
            sent_bytes: 0,
            recv_pkts: 0,
            recv_bytes: 0,
        });
        id
    }

    /// Sends one datagram carrying `payload_bytes` to the stream's destination.
    pub fn send(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        stream: u32,
        payload_bytes: u32,
    ) {
        let s = &self.streams[stream as usize];
        let (dst, hash) = (s.dst, s.hash);
        self.emit(net, hosts, ev, stream, dst, hash, payload_bytes, 0);
    }

    /// Sends one datagram carrying `payload_bytes` with a tag the receiver's note repeats
    /// (an application's request id; it rides in the packet's sequence field).
    pub fn send_tagged(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        stream: u32,
        payload_bytes: u32,
        tag: u64,
    ) {
        let s = &self.streams[stream as usize];
        let (dst, hash) = (s.dst, s.hash);
        self.emit(net, hosts, ev, stream, dst, hash, payload_bytes, tag);
    }

    /// Sends one datagram of `stream` to `dst` instead of the stream's own destination (an
    /// open-loop load with a random destination per datagram).
    pub fn send_to(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        stream: u32,
        dst: u32,
        payload_bytes: u32,
    ) {
        let hash = self.hash_to(stream, dst);
        self.emit(net, hosts, ev, stream, dst, hash, payload_bytes, 0);
    }

    /// The flow hash of `stream`'s datagrams to `dst` (a destination per datagram).
    fn hash_to(&self, stream: u32, dst: u32) -> u32 {
        let s = &self.streams[stream as usize];
        five_tuple_hash(s.src, dst, s.sport, s.dport, Proto::UDP)
    }

    /// Sends one datagram of `stream` to the root of `key` (a torus of CamCubeOS servers:
    /// `packet::TO_KEY`); `key` holds the routing bits of the key.
    pub fn send_to_key(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        stream: u32,
        key: u64,
        payload_bytes: u32,
    ) {
        let s = &self.streams[stream as usize];
        let hash = five_tuple_hash(s.src, key as u32, s.sport, s.dport, Proto::UDP);
        self.emit(
            net,
            hosts,
            ev,
            stream,
            crate::packet::TO_KEY,
            hash,
            payload_bytes,
            key,
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn emit(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        stream: u32,
        dst: u32,
        hash: u32,
        payload_bytes: u32,
        tag: u64,
    ) {
        let src = self.streams[stream as usize].src;
        if hosts.costed {
            // One sendmsg per datagram; the copy is charged on the transmit path.
            let core = hosts.core_of(hash);
            hosts.syscall(src, core, ev.now(), 0);
        }
        let id = self.datagram(net, stream, dst, hash, payload_bytes, tag, ev.now());
        hosts.send(net, ev, src, id);
    }

    /// Sends nothing: makes one datagram of `stream` to `dst` now (counted as the
    /// stream's and the network's) for whoever puts it on the network (the timeslot
    /// engine). A random destination's flow hash is the one `send_to` gives it.
    pub fn datagram_to(
        &mut self,
        net: &mut Network,
        stream: u32,
        dst: u32,
        payload_bytes: u32,
        now: crate::engine::TimePs,
    ) -> crate::packet::PktId {
        let hash = self.hash_to(stream, dst);
        net.count_sent();
        self.datagram(net, stream, dst, hash, payload_bytes, 0, now)
    }

    #[allow(clippy::too_many_arguments)]
    fn datagram(
        &mut self,
        net: &mut Network,
        stream: u32,
        dst: u32,
        hash: u32,
        payload_bytes: u32,
        tag: u64,
        now: crate::engine::TimePs,
    ) -> crate::packet::PktId {
        let s = &mut self.streams[stream as usize];
        s.sent_pkts += 1;
        s.sent_bytes += payload_bytes as u64;
        let pkt = Packet {
            src_host: s.src,
            dst_host: dst,
            src_port: s.sport,
            dst_port: s.dport,
            proto: Proto::UDP,
            flow_id: stream,
            hash,
            frame_bytes: net.frame_bytes(s.src, payload_bytes + UDP_IP_HEADER_BYTES),
            payload_bytes,
            seq: tag,
            key: if dst == crate::packet::TO_KEY { tag } else { 0 },
            ts_ps: now,
            ..Default::default()
        };
        net.pool_mut().alloc(pkt)
    }

    /// A datagram reached its host: counted, and its application told (unless `silent`).
    pub fn datagram_arrived(&mut self, pkt: &Packet) {
        let d = pkt.dst_host as usize;
        if self.received_by_host.len() <= d {
            self.received_by_host.resize(d + 1, (0, 0));
        }
        let r = &mut self.received_by_host[d];
        r.0 += 1;
        r.1 += u64::from(pkt.frame_bytes);
        // The last bit reached the destination at `rx_done_ps`.
        if pkt.rx_done_ps >= self.steady_from_ps {
            if self.received_steady.len() <= d {
                self.received_steady.resize(d + 1, (0, 0));
            }
            let r = &mut self.received_steady[d];
            r.0 += 1;
            r.1 += u64::from(pkt.frame_bytes);
        }
        let s = &mut self.streams[pkt.flow_id as usize];
        s.recv_pkts += 1;
        s.recv_bytes += pkt.payload_bytes as u64;
        if self.silent {
            return;
        }
        self.notes.push(Note::Datagram {
            app: s.app,
            stream: pkt.flow_id,
            host: pkt.dst_host,
            payload_bytes: pkt.payload_bytes,
            tag: pkt.seq,
        });
    }
}

/// UDP keeps no timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UdpEvent {}

impl TransportKind for Udp {
    const NAME: &'static str = "UDP";
    const PROTO: Proto = Proto::UDP;
    type Event = UdpEvent;

    /// Its steady-state figures count the second half of the run.
    fn build(b: &TransportBuild) -> Self {
        Udp {
            steady_from_ps: b.end_ps / 2,
            ..Default::default()
        }
    }

    #[inline]
    fn on_packet(&mut self, path: &mut HostPath<'_, impl TransportSched>, pkt: PktId) {
        let p = path.take(pkt);
        self.datagram_arrived(&p);
    }

    fn timer_host(&self, e: UdpEvent) -> u32 {
        match e {}
    }

    #[inline]
    /// Streams are numbered run-wide: only a run without any (so far: applications that
    /// open streams do not run in partitions) may run its hosts anywhere.
    fn runs_in_partitions(&self) -> bool {
        self.streams.is_empty()
    }

    fn has_notes(&self) -> bool {
        !self.notes.is_empty()
    }

    #[inline]
    fn take_notes(&mut self, into: &mut Vec<Note>) {
        into.append(&mut self.notes);
    }
}
