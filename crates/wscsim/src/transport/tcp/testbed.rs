//! The bench TCP's unit tests drive: one `Tcp` over a recording wire, with no network,
//! hosts or event loop. The test writes each segment and ACK by hand and reads what the
//! connection sent in answer. Segment numbers stand for byte ranges of one MSS.

#![cfg(test)]

use super::*;
use crate::engine::PS_PER_US;

/// Extra bytes a frame carries beyond its IP packet on the bench's link (Ethernet's
/// header, FCS, preamble and gap).
pub const FRAME_OVERHEAD_BYTES: u32 = 38;

/// A wire that records: packets sent (with their host), timers armed and system calls.
#[derive(Default)]
pub struct TestWire {
    pub now_ps: TimePs,
    pub sent: Vec<Packet>,
    pub timers: Vec<(TimePs, TcpEvent)>,
    pub syscalls: u64,
    pub departures: Vec<(u32, u32)>,
}

impl Wire for TestWire {
    fn now(&self) -> TimePs {
        self.now_ps
    }
    fn frame_bytes(&self, _host: u32, ip_bytes: u32) -> u32 {
        ip_bytes + FRAME_OVERHEAD_BYTES
    }
    fn transmit(&mut self, host: u32, pkt: Packet) {
        assert_eq!(pkt.src_host, host, "a host sends its own packets");
        self.sent.push(pkt);
    }
    fn syscall(&mut self, _host: u32, _hash: u32) {
        self.syscalls += 1;
    }
    fn arm_timer(&mut self, at: TimePs, timer: TcpEvent) {
        assert!(at >= self.now_ps, "a timer in the past");
        self.timers.push((at, timer));
    }
    fn nic_departures(&mut self) -> &mut Vec<(u32, u32)> {
        &mut self.departures
    }
}

/// TCP parameters as a scenario with these extra `[transport]` keys (JSON, each with a
/// leading comma) resolves them.
pub fn params(transport: &str) -> TcpParams {
    let json = format!(
        r#"{{"duration":"10s","topology":{{"kind":"single_switch","hosts":2,"link":{{"rate":"10Gbps"}}}},
        "transport":{{"kind":"tcp"{transport}}},"workload":{{"kind":"none"}}}}"#
    );
    let sc = crate::config::parse_json(&json).unwrap_or_else(|e| panic!("{e}"));
    crate::config::resolve(sc)
        .unwrap_or_else(|e| panic!("{e}"))
        .tcp
}

pub struct Bench {
    pub tcp: TcpPart,
    pub wire: TestWire,
    pub conn: u32,
    pub mss: u64,
}

impl Bench {
    /// A connection from host 0 to host 1 with the given extra `[transport]` keys (JSON),
    /// no delayed ACKs (unless the keys say) and a receive window that never limits.
    pub fn new(transport: &str) -> Bench {
        let delack = if transport.contains("delayed_ack") {
            ""
        } else {
            r#","delayed_ack":false"#
        };
        Bench::with_params(params(&format!(
            r#"{delack},"rcv_window":"64MiB"{transport}"#
        )))
    }

    pub fn with_params(params: TcpParams) -> Bench {
        let mut tcp = TcpPart::new(params, halves::ConnIds::default());
        let conn = tcp.open(0, 1, 0, 0);
        let mss = u64::from(tcp.params.mss_bytes);
        Bench {
            tcp,
            wire: TestWire::default(),
            conn,
            mss,
        }
    }

    /// Packets sent so far.
    pub fn sent(&self) -> u64 {
        self.wire.sent.len() as u64
    }

    /// A mark: what is sent after it is `since(mark)`.
    pub fn mark(&self) -> usize {
        self.wire.sent.len()
    }

    pub fn sender(&self) -> &Sender {
        &self.tcp.senders[self.conn]
    }

    pub fn receiver(&self) -> &Receiver {
        &self.tcp.receivers[self.conn]
    }

    pub fn advance_to(&mut self, t: TimePs) {
        assert!(t >= self.wire.now_ps, "time runs forward");
        self.wire.now_ps = t;
    }

    pub fn advance_us(&mut self, us: u64) {
        self.advance_to(self.wire.now_ps + us * PS_PER_US);
    }

    /// The application writes `segments` segments; returns how many went at once.
    pub fn write(&mut self, segments: u64) -> u64 {
        self.write_bytes(self.conn, segments * self.mss)
    }

    /// The application writes `bytes` to `conn`; returns the packets that went at once.
    pub fn write_bytes(&mut self, conn: u32, bytes: u64) -> u64 {
        let before = self.sent();
        self.tcp.write(&mut self.wire, conn, bytes);
        self.sent() - before
    }

    /// `pkt` reaches its host; returns the packets sent in answer.
    pub fn deliver(&mut self, pkt: &Packet) -> u64 {
        let before = self.sent();
        self.tcp.on_packet(&mut self.wire, pkt);
        self.sent() - before
    }

    /// An ACK of everything below segment `una`, SACKing segments [a, b) for each of
    /// `sacked` (at most two blocks), echoing a timestamp of `echo_ps` (NEVER: none).
    /// Returns the segments sent in answer and how many of them were retransmissions.
    pub fn ack_echo(&mut self, una: u64, sacked: &[(u64, u64)], echo_ps: TimePs) -> (u64, u64) {
        let pkt = self.ack_packet(una, sacked, echo_ps);
        let rexmits = self.sender().retransmits;
        let sent = self.deliver(&pkt);
        (sent, self.sender().retransmits - rexmits)
    }

    /// The ACK `ack_echo` delivers.
    pub fn ack_packet(&self, una: u64, sacked: &[(u64, u64)], echo_ps: TimePs) -> Packet {
        let mut pkt = Packet {
            src_host: 1,
            dst_host: 0,
            proto: Proto::TCP,
            tcp_flags: tcp_flags::ACK,
            flow_id: self.conn,
            ack: una * self.mss,
            ts_echo_ps: echo_ps,
            ..Default::default()
        };
        for (i, &(a, b)) in sacked.iter().enumerate() {
            pkt.sack[2 * i] = ((a - una) * self.mss) as u32;
            pkt.sack[2 * i + 1] = ((b - a) * self.mss) as u32;
        }
        pkt
    }

    pub fn ack(&mut self, una: u64, sacked: &[(u64, u64)]) -> (u64, u64) {
        self.ack_echo(una, sacked, NEVER)
    }

    /// An ACK of everything below segment `una` that echoes congestion (ECE); returns the
    /// segments sent in answer.
    pub fn ack_ece(&mut self, una: u64) -> u64 {
        let mut pkt = self.ack_packet(una, &[], NEVER);
        pkt.tcp_flags |= tcp_flags::ECE;
        self.deliver(&pkt)
    }

    /// Opens the connection the other way (host 1 to host 0) and links it with the bench's
    /// into one bidirectional connection; returns it.
    pub fn open_reverse(&mut self) -> u32 {
        let rev = self.tcp.open(1, 0, 0, 0);
        self.tcp.link_reverse(self.conn, rev);
        rev
    }

    /// Data segment `seg` reaches the receiver now; returns the ACKs sent in answer.
    pub fn data(&mut self, seg: u64) -> u64 {
        let pkt = self.data_packet(seg);
        self.deliver(&pkt)
    }

    /// Segment `seg` of the connection as its sender would send it now.
    pub fn data_packet(&self, seg: u64) -> Packet {
        Packet {
            src_host: 0,
            dst_host: 1,
            proto: Proto::TCP,
            flow_id: self.conn,
            seq: seg * self.mss,
            payload_bytes: self.mss as u32,
            ts_ps: self.wire.now_ps,
            ..Default::default()
        }
    }

    /// The retransmission timer's event fires now (as the lazy timer's event would if
    /// it was queued for now).
    pub fn fire_rto(&mut self) {
        let conn = self.conn;
        self.fire(conn, TIMER_RTO);
    }

    /// Timer `which` of `conn` fires now, if an event for now was armed.
    pub fn fire(&mut self, conn: u32, which: u8) {
        self.tcp.on_timer(&mut self.wire, conn, which);
    }

    /// Every segment connection `conn` has queued leaves its host's NIC.
    pub fn drain_nic(&mut self, conn: u32) {
        let bytes = self.tcp.senders[conn].nic_bytes;
        if bytes > 0 {
            self.wire.departures.push((conn, bytes as u32));
            self.departures();
        }
    }

    /// The departures on the wire reach TCP, as `Tcp::on_nic_departures` hands them over.
    pub fn departures(&mut self) {
        while !self.wire.departures.is_empty() {
            for (conn, bytes) in std::mem::take(&mut self.wire.departures) {
                self.tcp.nic_departed(&mut self.wire, conn, bytes);
            }
        }
    }

    /// Segments of `conn` in its host's NIC, as TCP counts them (frame bytes).
    pub fn nic_bytes(&self, conn: u32) -> u64 {
        self.tcp.senders[conn].nic_bytes
    }

    /// Lose segment 0 of a full window: duplicate ACKs SACK segments 1, 2, ... one at a
    /// time. Returns the segments sent in answer to each.
    pub fn lose_first_of(&mut self, window: u64, acks: u64) -> Vec<u64> {
        assert_eq!(self.write(4 * window), window);
        (1..=acks).map(|k| self.ack(0, &[(1, k + 1)]).0).collect()
    }

    /// What host `host` sent since `mark`: (flags, payload) of each.
    pub fn sent_by(&self, host: u32, mark: usize) -> Vec<(u8, u32)> {
        self.wire.sent[mark..]
            .iter()
            .filter(|p| p.src_host == host)
            .map(|p| (p.tcp_flags, p.payload_bytes))
            .collect()
    }

    /// Delivers every packet `host` sent since `mark`, in order, to its destination;
    /// returns (flags, payload) of what was sent in answer and the mark after which the
    /// answers lie.
    pub fn pass(&mut self, host: u32, mark: usize) -> (Vec<(u8, u32)>, usize) {
        let end = self.mark();
        let pkts: Vec<Packet> = self.wire.sent[mark..end]
            .iter()
            .filter(|p| p.src_host == host)
            .copied()
            .collect();
        for p in pkts {
            self.deliver(&p);
        }
        (self.sent_by(1 - host, end), end)
    }

    /// The sequence numbers (in segments) of the data segments sent since `mark`.
    pub fn data_sent(&self, mark: usize) -> Vec<u64> {
        self.wire.sent[mark..]
            .iter()
            .filter(|p| p.payload_bytes > 0)
            .map(|p| p.seq / self.mss)
            .collect()
    }
}
