//! Packets, their pool, and intrusive FIFO queues threaded through the pool.
//!
//! A packet is a plain struct in the pool's chunks; it is referred to by its index
//! (`PktId`). Freed slots are reused, so a run in steady state allocates nothing per packet.

use crate::engine::TimePs;

mod pool;
pub use pool::PacketPool;

pub type PktId = u32;
pub const NO_PKT: PktId = u32::MAX;

/// `Packet::dst_host` of a packet addressed to a key: it is delivered wherever its key's
/// root is when it gets there (a torus of CamCubeOS servers), and `dst_host` then becomes
/// that server.
pub const TO_KEY: u32 = u32::MAX - 1;

/// The most hops a packet may take before it is dropped (routing loops while servers'
/// views of failures disagree).
pub const MAX_HOPS: u8 = u8::MAX;

/// Ethernet header and FCS bytes added to the IP packet (for pcap output, which writes
/// Ethernet frames whatever the link; framing on links comes from `link::LinkTech`).
pub const ETH_HEADER_FCS_BYTES: u32 = 18;
/// IPv4 + TCP headers without options.
pub const TCP_IP_HEADER_BYTES: u32 = 40;
/// IPv4 + UDP headers.
pub const UDP_IP_HEADER_BYTES: u32 = 28;

/// A packet's protocol: IP's protocol number (`/etc/protocols`), or one of RFC 3692's
/// experimental numbers for what is not IP. The names here are the wire's; a transport
/// names its own in its file (`transport::TransportKind::PROTO`), and the transports'
/// list checks when it compiles that no two share a number.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Proto(pub u8);

impl Proto {
    pub const TCP: Proto = Proto(6);
    pub const UDP: Proto = Proto(17);
    /// A CamCubeOS service's packet (`dst_port` is the service's id; not IP: 253 is a
    /// protocol number set aside for experiments, RFC 3692).
    pub const SERVICE: Proto = Proto(253);
    /// A PCIe transaction-layer packet of the DMA library (`transport::dma`): a posted
    /// write, a read request or a completion; not IP (254, RFC 3692's second number).
    pub const DMA: Proto = Proto(254);
    /// A real Ethernet frame the emulator carries (`emulate::frame`); its bytes stay with
    /// the emulator, the packet carries what the fabric reads from them. Not IP's 255.
    pub const FRAME: Proto = Proto(252);
    /// A PFC PAUSE frame (IEEE 802.1Qbb, a MAC control frame, not IP; 251 is a number
    /// IANA leaves unassigned): consumed by the port that receives it (`net::pfc`).
    pub const PFC: Proto = Proto(251);
}

impl Default for Proto {
    fn default() -> Self {
        Proto::TCP
    }
}

impl std::fmt::Debug for Proto {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Proto::TCP => f.write_str("Tcp"),
            Proto::UDP => f.write_str("Udp"),
            Proto::SERVICE => f.write_str("Service"),
            Proto::DMA => f.write_str("Dma"),
            Proto::FRAME => f.write_str("Frame"),
            Proto::PFC => f.write_str("Pfc"),
            Proto(n) => write!(f, "Proto({n})"),
        }
    }
}

/// ECN codepoints (RFC 3168), as two bits in `Packet::ecn`.
pub mod ecn {
    pub const NOT_ECT: u8 = 0b00;
    pub const ECT0: u8 = 0b10;
    pub const CE: u8 = 0b11;
}

/// Bits of `Packet::framing`.
pub mod framing {
    /// It crossed a link whose frames carry packets back to back (packing): it was
    /// unpacked from a frame, and must be packed into one to go on by such a link.
    pub const PACKED: u8 = 0b001;
    /// In that frame it rode behind another packet: no framing and no per-frame work of
    /// its own.
    pub const TAIL: u8 = 0b010;
    /// Its host's own send (not a packet it forwards), until it leaves the host.
    pub const OWN: u8 = 0b100;
    /// Every node that forwards it writes a telemetry record into it (`net::telemetry`,
    /// HPCC's in-band telemetry; `Packet::push_int`).
    pub const INT: u8 = 0b1000;
    /// A switch whose data queue is full may cut its payload off and forward its headers
    /// (`scheme::trim`, NDP's trimming): set by a transport that understands the result.
    pub const TRIMMABLE: u8 = 0b1_0000;
    /// Its payload was cut off on the way: `payload_bytes` is 0 and `frame_bytes` its
    /// headers; `seq` says what it carried, so the receiver can ask for it again.
    pub const TRIMMED: u8 = 0b10_0000;
    /// A switch that had no room for its header sent it back to its source (NDP's
    /// return-to-sender; `src_host` and `dst_host` swapped): never bounced twice.
    pub const BOUNCED: u8 = 0b100_0000;
}

/// TCP flag bits used by the model.
pub mod tcp_flags {
    pub const ACK: u8 = 0x10;
    /// ECN-echo: the receiver saw CE.
    pub const ECE: u8 = 0x40;
    /// Congestion window reduced.
    pub const CWR: u8 = 0x80;
    /// This data segment also acknowledges the reverse connection (`ack`, `ts_echo_ps`
    /// and ECE are its fields): wscsim connections are one-way, and two linked ones make a
    /// bidirectional TCP connection whose ACKs ride on data.
    pub const ACK_REVERSE: u8 = 0x01;
    /// Synchronise: the first packet of a handshake (with ACK: the second).
    pub const SYN: u8 = 0x02;
    /// The third packet of a handshake, when no data carries it (wscsim's own flag: a
    /// one-way connection's receiver keeps no state it would change).
    pub const HANDSHAKE_ACK: u8 = 0x04;
    /// Finish: the sender has no more data; the FIN sits at `seq` (wscsim's bit, where
    /// TCP has PSH: TCP's own FIN bit is `ACK_REVERSE` here).
    pub const FIN: u8 = 0x08;
    /// This packet's `ack` also acknowledges the FIN at that sequence number (TCP's ack
    /// field would read one more; wscsim's bit, where TCP has URG).
    pub const FIN_ACKED: u8 = 0x20;
}

/// A packet. `repr(C)` with 64-byte alignment puts the fields every hop touches in the
/// first cache line, so forwarding a packet reads one line; transport fields come after.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(64))]
pub struct Packet {
    // ----- first cache line: what each hop reads or writes -----
    /// When the last bit reaches the node the packet is at (differs from the arrival event
    /// time under cut-through, where the event marks the header).
    pub rx_done_ps: TimePs,
    /// When the packet entered its current output queue.
    pub enqueued_ps: TimePs,
    pub dst_host: u32,
    /// 5-tuple hash, computed once at the source, used by ECMP.
    pub hash: u32,
    /// Bytes the packet takes in a buffer (Ethernet frame, header to FCS).
    pub frame_bytes: u32,
    /// Next packet in the same queue.
    pub next: PktId,
    /// Input port at the current switch (its virtual output queue).
    pub in_port: u16,
    /// Links crossed so far (saturating; a packet at `MAX_HOPS` is dropped).
    pub hops: u8,
    /// How the packet crossed the link it last crossed, and whether its host sent it
    /// itself: bits of `framing` (CamCubeOS's packing).
    pub framing: u8,
    /// Flow this packet belongs to (a connection or a UDP stream).
    pub flow_id: u32,
    /// Transport payload bytes.
    pub payload_bytes: u32,
    pub src_host: u32,
    pub src_port: u16,
    pub dst_port: u16,
    pub proto: Proto,
    pub dscp: u8,
    pub ecn: u8,
    pub tcp_flags: u8,
    /// Routing bits of the key a packet to `TO_KEY` is addressed to (bits 63-0 of a
    /// CamCubeOS key: home coordinate and w).
    pub key: u64,
    // ----- second cache line: transport and scheme state -----
    /// Per-packet priority value for schemes that want one (pFabric: remaining flow size).
    pub priority: u64,
    pub seq: u64,
    pub ack: u64,
    /// Sender timestamp and echoed timestamp (like TCP timestamps), for RTT samples.
    pub ts_ps: TimePs,
    pub ts_echo_ps: TimePs,
    /// Two free words a scheme may read and write as it crosses switches.
    pub scheme_fields: [u32; 2],
    /// SACK blocks of an ACK (RFC 2018), at most two, each as (offset of its start above
    /// `ack`, length); a length of 0 means no block.
    pub sack: [u32; 4],
}

/// Telemetry records a packet keeps (`net::telemetry::MAX_HOPS`; HPCC's five).
pub const INT_RECORDS: usize = 5;

/// In-band telemetry (`net::telemetry`) rides in the words of the second cache line that
/// a packet asking for it (a RoCE data packet or its ACK) has no other use for: `ack`,
/// `ts_echo_ps`, the SACK blocks and `priority` hold the records, `scheme_fields[0]`
/// counts them. A scheme that reads `priority` (pFabric) is refused with HPCC.
impl Packet {
    /// Records written so far (more than `INT_RECORDS`: the rest were not kept).
    pub fn int_count(&self) -> u32 {
        self.scheme_fields[0]
    }

    /// Record `i` (below `INT_RECORDS` and `int_count`).
    pub fn int_record(&self, i: usize) -> u64 {
        let pair = |a: u32, b: u32| u64::from(a) << 32 | u64::from(b);
        match i {
            0 => self.ack,
            1 => self.ts_echo_ps,
            2 => pair(self.sack[0], self.sack[1]),
            3 => pair(self.sack[2], self.sack[3]),
            _ => self.priority,
        }
    }

    /// Appends a record (counted but not kept past `INT_RECORDS`).
    #[inline]
    pub fn push_int(&mut self, record: u64) {
        let i = self.scheme_fields[0] as usize;
        self.scheme_fields[0] += 1;
        let (hi, lo) = ((record >> 32) as u32, record as u32);
        match i {
            0 => self.ack = record,
            1 => self.ts_echo_ps = record,
            2 => (self.sack[0], self.sack[1]) = (hi, lo),
            3 => (self.sack[2], self.sack[3]) = (hi, lo),
            4 => self.priority = record,
            _ => {}
        }
    }

    /// Copies `from`'s records (a receiver echoing them in its ACK).
    pub fn copy_int(&mut self, from: &Packet) {
        self.scheme_fields[0] = 0;
        let kept = (from.int_count() as usize).min(INT_RECORDS);
        for i in 0..kept {
            self.push_int(from.int_record(i));
        }
        self.scheme_fields[0] = from.int_count();
    }
}

/// 5-tuple hash used by ECMP (a fixed mixer: the same tuple hashes the same in every run).
#[inline]
pub fn five_tuple_hash(src: u32, dst: u32, sport: u16, dport: u16, proto: Proto) -> u32 {
    let a = ((src as u64) << 32) | dst as u64;
    let b = ((sport as u64) << 24) | ((dport as u64) << 8) | proto.0 as u64;
    (crate::engine::rng::mix64(a ^ crate::engine::rng::mix64(b)) >> 32) as u32
}

/// FIFO of packets linked through `Packet::next`: 24 bytes, no allocation.
#[derive(Clone, Copy, Debug)]
pub struct PktQueue {
    pub head: PktId,
    pub tail: PktId,
    pub len: u32,
    pub bytes: u64,
}

impl Default for PktQueue {
    fn default() -> Self {
        PktQueue {
            head: NO_PKT,
            tail: NO_PKT,
            len: 0,
            bytes: 0,
        }
    }
}

impl PktQueue {
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub fn push_back(&mut self, pool: &mut PacketPool, id: PktId) {
        let bytes = {
            let p = pool.get_mut(id);
            p.next = NO_PKT;
            p.frame_bytes as u64
        };
        if self.tail == NO_PKT {
            self.head = id;
        } else {
            pool.get_mut(self.tail).next = id;
        }
        self.tail = id;
        self.len += 1;
        self.bytes += bytes;
    }

    #[inline]
    pub fn pop_front(&mut self, pool: &mut PacketPool) -> Option<PktId> {
        if self.head == NO_PKT {
            return None;
        }
        let id = self.head;
        let p = pool.get(id);
        self.head = p.next;
        if self.head == NO_PKT {
            self.tail = NO_PKT;
        }
        self.len -= 1;
        self.bytes -= p.frame_bytes as u64;
        Some(id)
    }

    /// Packets from head to tail (a walk along the links; for schemes that look past the head).
    pub fn iter<'a>(&self, pool: &'a PacketPool) -> impl Iterator<Item = PktId> + 'a {
        let mut cur = self.head;
        std::iter::from_fn(move || {
            if cur == NO_PKT {
                return None;
            }
            let id = cur;
            cur = pool.get(id).next;
            Some(id)
        })
    }

    /// Takes out `id`, which follows `prev` (NO_PKT: `id` is the head), in constant time for
    /// a scheme that knows the queue's order itself.
    pub fn remove_after(&mut self, pool: &mut PacketPool, prev: PktId, id: PktId) {
        debug_assert!(if prev == NO_PKT {
            self.head == id
        } else {
            pool.get(prev).next == id
        });
        let next = pool.get(id).next;
        if prev == NO_PKT {
            self.head = next;
        } else {
            pool.get_mut(prev).next = next;
        }
        if self.tail == id {
            self.tail = prev;
        }
        self.len -= 1;
        self.bytes -= pool.get(id).frame_bytes as u64;
    }

    /// Takes packet `id` out from anywhere in the queue: a walk from the head to find the
    /// packet before it, so O(length). Returns false if `id` is not in this queue.
    pub fn remove(&mut self, pool: &mut PacketPool, id: PktId) -> bool {
        let mut prev = NO_PKT;
        let mut cur = self.head;
        while cur != NO_PKT && cur != id {
            prev = cur;
            cur = pool.get(cur).next;
        }
        if cur == NO_PKT {
            return false;
        }
        self.remove_after(pool, prev, id);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_reuses_slots_and_queue_is_fifo() {
        let mut pool = PacketPool::new();
        let mut q = PktQueue::default();
        for i in 0..5 {
            let id = pool.alloc(Packet {
                seq: i,
                frame_bytes: 100,
                ..Default::default()
            });
            q.push_back(&mut pool, id);
        }
        assert_eq!(q.len, 5);
        assert_eq!(q.bytes, 500);
        let first = q.pop_front(&mut pool).unwrap();
        assert_eq!(pool.get(first).seq, 0);
        pool.free(first);
        let again = pool.alloc(Packet::default());
        assert_eq!(again, first, "freed slot is reused");
        let mut rest = vec![];
        while let Some(id) = q.pop_front(&mut pool) {
            rest.push(pool.get(id).seq);
        }
        assert_eq!(rest, vec![1, 2, 3, 4]);
        assert_eq!(q.bytes, 0);
        assert_eq!(pool.live(), 5);
    }

    #[test]
    fn remove_from_anywhere() {
        let mut pool = PacketPool::new();
        let mut q = PktQueue::default();
        let ids: Vec<_> = (0..4)
            .map(|i| {
                pool.alloc(Packet {
                    seq: i,
                    frame_bytes: 10,
                    ..Default::default()
                })
            })
            .collect();
        for &id in &ids {
            q.push_back(&mut pool, id);
        }
        assert!(q.remove(&mut pool, ids[3]), "tail");
        assert!(q.remove(&mut pool, ids[1]), "middle");
        assert!(!q.remove(&mut pool, ids[1]), "already gone");
        assert_eq!(
            q.iter(&pool).map(|id| pool.get(id).seq).collect::<Vec<_>>(),
            vec![0, 2]
        );
        assert_eq!((q.len, q.bytes), (2, 20));
        q.push_back(&mut pool, ids[3]);
        assert!(q.remove(&mut pool, ids[0]), "head");
        assert_eq!(
            q.iter(&pool).map(|id| pool.get(id).seq).collect::<Vec<_>>(),
            vec![2, 3]
        );
    }

    #[test]
    fn telemetry_records_read_back_and_stop_at_five() {
        let mut p = Packet::default();
        for r in 1..=7u64 {
            p.push_int(r << 40 | r);
        }
        assert_eq!(p.int_count(), 7);
        let kept: Vec<u64> = (0..5).map(|i| p.int_record(i)).collect();
        assert_eq!(kept, (1..=5u64).map(|r| r << 40 | r).collect::<Vec<_>>());
        let mut ack = Packet::default();
        ack.copy_int(&p);
        assert_eq!(ack.int_count(), 7);
        assert_eq!(ack.int_record(3), p.int_record(3));
    }

    #[test]
    fn hop_fields_share_the_first_cache_line() {
        assert_eq!(std::mem::size_of::<Packet>(), 128);
        for off in [
            std::mem::offset_of!(Packet, rx_done_ps),
            std::mem::offset_of!(Packet, next),
            std::mem::offset_of!(Packet, in_port),
            std::mem::offset_of!(Packet, tcp_flags),
            std::mem::offset_of!(Packet, hops),
            std::mem::offset_of!(Packet, key),
        ] {
            assert!(off < 64, "{off}");
        }
    }
}
