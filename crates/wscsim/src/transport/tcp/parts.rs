//! The run's TCP: its connections' halves kept by part, one part per partition when the
//! run is split (`Tcp::split`), one for the whole run otherwise.
//!
//! A part holds the sender halves of the connections its hosts opened and the receiver
//! halves of those that reach its hosts (halves.rs), so that what a partition's events
//! touch of TCP is its own part's memory. The parts learn of each other's connections
//! only through packets. Applications name connections by id; this routes each call to
//! the part holding the half it acts on: the sender's for writes and closes, the part a
//! packet or timer arrived in for what a receiver half does (the notes an event leaves,
//! the bytes an application reads).

use super::halves::{ConnIds, MAX_PARTS};
use super::{CwndTrace, Sender, TcpParams, TcpPart};
use crate::net::Network;
use crate::packet::{Packet, PktId, Proto};
use crate::transport::wire::Wire;
use crate::transport::{HostPath, Note, TcpEvent, TransportBuild, TransportKind, TransportSched};

pub struct Tcp {
    parts: Vec<TcpPart>,
    /// The part of each host (empty: one part).
    host_part: Vec<u32>,
    /// The part whose calls left notes for applications since they were last taken
    /// (`NO_PART`: none; `SEVERAL_PARTS`: more than one, as a global event may). Never a
    /// part merely acted in: a thread's copy of this (`sim::threads`) must not look at a
    /// part another thread runs now.
    noted: u32,
}

const NO_PART: u32 = u32::MAX;
const SEVERAL_PARTS: u32 = u32::MAX - 1;

impl Tcp {
    /// One part for the whole run.
    pub fn new(params: TcpParams) -> Self {
        Tcp {
            parts: vec![TcpPart::new(params, ConnIds::default())],
            host_part: Vec::new(),
            noted: NO_PART,
        }
    }

    /// Several parts, host h's connections in part `host_part[h]` (numbered from 0
    /// without gaps).
    pub fn split(params: TcpParams, host_part: Vec<u32>) -> Self {
        let n = host_part.iter().max().map_or(1, |&p| p as usize + 1);
        assert!(
            n <= MAX_PARTS,
            "more than {MAX_PARTS} partitions hold hosts"
        );
        let parts = (0..n as u32)
            .map(|part| TcpPart::new(params.clone(), ConnIds::of(part, n)))
            .collect();
        Tcp {
            parts,
            host_part,
            noted: NO_PART,
        }
    }

    pub fn params(&self) -> &TcpParams {
        &self.parts[0].params
    }

    /// The parts, in order (tests and results).
    pub fn parts(&self) -> &[TcpPart] {
        &self.parts
    }

    /// The part host `host`'s connections are kept in (`host_parts`).
    pub fn part_of_host(&self, host: u32) -> usize {
        self.host_part.get(host as usize).map_or(0, |&p| p as usize)
    }

    /// The part holding `conn`'s sender.
    fn sender_part(&self, conn: u32) -> usize {
        self.parts[0].senders.ids.part_of(conn) as usize
    }

    /// Part `p` was called: where its notes are, if it left any.
    #[inline]
    fn acted(&mut self, p: usize) {
        if !self.parts[p].notes.is_empty() {
            self.noted = match self.noted {
                NO_PART => p as u32,
                n if n == p as u32 => n,
                _ => SEVERAL_PARTS,
            };
        }
    }

    /// Opens a connection (`TcpPart::open`) in the part of its source host.
    pub fn open(&mut self, src: u32, dst: u32, tx_app: u32, rx_app: u32) -> u32 {
        let p = self.part_of_host(src);
        self.parts[p].open(src, dst, tx_app, rx_app)
    }

    /// Opens a connection with a handshake (`TcpPart::connect`).
    pub fn connect(&mut self, w: &mut impl Wire, src: u32, dst: u32, tx: u32, rx: u32) -> u32 {
        let p = self.part_of_host(src);
        let conn = self.parts[p].connect(w, src, dst, tx, rx);
        self.acted(p);
        conn
    }

    pub fn write(&mut self, w: &mut impl Wire, conn: u32, bytes: u64) {
        let p = self.sender_part(conn);
        self.parts[p].write(w, conn, bytes);
        self.acted(p);
    }

    pub fn close(&mut self, w: &mut impl Wire, conn: u32) {
        let p = self.sender_part(conn);
        self.parts[p].close(w, conn);
        self.acted(p);
    }

    /// Sets `conn`'s DSCP before it sends (its receiver half in another part takes it from
    /// the packets).
    pub fn set_dscp(&mut self, conn: u32, dscp: u8) {
        let p = self.sender_part(conn);
        self.parts[p].set_dscp(conn, dscp);
    }

    /// The part of each host (empty: one part): `Network::host_parts` of a partitioned
    /// run, which the layers above keep their state by too.
    pub fn host_parts(&self) -> &[u32] {
        &self.host_part
    }

    /// How many low bits of a connection id name the part that opened it.
    pub fn conn_part_bits(&self) -> u32 {
        self.parts[0].senders.ids.part_bits
    }

    /// Whether the run's TCP is kept in several parts (a partitioned run).
    pub fn is_split(&self) -> bool {
        self.parts.len() > 1
    }

    /// Links `a` (x to y, already sending) and `b` (y to x, opened now at y) in y's part
    /// only: a passive open's link, made in the event of y that opened `b`. x's part
    /// learns it from `b`'s first packet (which carries `a`, `TcpPart::carry_reverse_ack`).
    pub fn link_reverse_at(&mut self, y: u32, a: u32, b: u32) {
        let p = self.part_of_host(y);
        self.parts[p].link_reverse(a, b);
    }

    /// Links `a` (x to y) and `b` (y to x) into one bidirectional connection, in the parts
    /// of x and y.
    pub fn link_reverse(&mut self, a: u32, b: u32) {
        let ids = self.parts[0].senders.ids;
        let (pa, pb) = (ids.part_of(a) as usize, ids.part_of(b) as usize);
        self.parts[pa].link_reverse(a, b);
        if pb != pa {
            self.parts[pb].link_reverse(a, b);
        }
    }

    /// A TCP segment reached its host (through any wire: the simulation's, or a test's).
    pub fn on_segment(&mut self, w: &mut impl Wire, pkt: &Packet) {
        let p = self.part_of_host(pkt.dst_host);
        self.parts[p].on_packet(w, pkt);
        self.acted(p);
    }

    /// Prefetches what a packet of `conn` arriving at host `host` touches.
    #[inline(always)]
    pub fn prefetch_conn(&self, host: u32, conn: u32) {
        self.parts[self.part_of_host(host)].prefetch_conn(conn);
    }

    /// Segments left their hosts' NICs (`Wire::nic_departures`): held-back senders may go.
    #[inline(never)]
    pub fn on_nic_departures(&mut self, w: &mut impl Wire) {
        while !w.nic_departures().is_empty() {
            let batch = std::mem::take(w.nic_departures());
            for &(conn, bytes) in &batch {
                let p = self.sender_part(conn);
                self.parts[p].nic_departed(w, conn, bytes);
                self.acted(p);
            }
            if w.nic_departures().is_empty() {
                *w.nic_departures() = batch;
                w.nic_departures().clear();
            }
        }
    }

    /// `TcpPart::epoch` of `conn`'s receiver half, at `host`.
    pub fn epoch(&self, host: u32, conn: u32) -> u32 {
        self.parts[self.part_of_host(host)].epoch(conn)
    }

    /// `TcpPart::take_unread` of `conn`'s receiver half, at `host`.
    pub fn take_unread(&mut self, host: u32, conn: u32, total: u64) -> u64 {
        let p = self.part_of_host(host);
        self.parts[p].take_unread(conn, total)
    }

    /// The receiving application at `host` answers on the reverse path
    /// (`TcpPart::ack_now_if_pending`).
    pub fn ack_now_if_pending(&mut self, w: &mut impl Wire, host: u32, conn: u32) {
        let p = self.part_of_host(host);
        self.parts[p].ack_now_if_pending(w, conn);
        self.acted(p);
    }

    /// Connection `conn`'s sender half.
    pub fn sender(&self, conn: u32) -> Option<&Sender> {
        let p = self.parts[0].senders.ids.part_of(conn) as usize;
        self.parts.get(p)?.senders.get(conn)
    }

    /// Whether any connection was opened.
    pub fn in_use(&self) -> bool {
        self.parts.iter().any(|p| !p.senders.is_empty())
    }

    /// The window traces, the parts' merged in time order.
    pub fn trace(&self) -> std::borrow::Cow<'_, CwndTrace> {
        match &self.parts[..] {
            [one] => std::borrow::Cow::Borrowed(&one.trace),
            parts => std::borrow::Cow::Owned(CwndTrace::merge(parts.iter().map(|p| &p.trace))),
        }
    }

    /// Marks connections for window traces, and the most samples kept.
    pub fn set_trace(&mut self, wanted: Vec<u32>, max_samples: usize) {
        for p in &mut self.parts {
            p.trace.wanted = wanted.clone();
            p.trace.max_samples = max_samples;
        }
    }

    /// Connections closed so far (their slots free for others).
    pub fn closed_connections(&self) -> u64 {
        self.parts.iter().map(|p| p.retired.connections).sum()
    }

    /// Packets of closed connections that arrived after their slots went to others.
    pub fn stale_packets(&self) -> u64 {
        self.parts.iter().map(|p| p.stale_packets).sum()
    }

    /// Retransmitted segments of every connection of the run.
    pub fn total_retransmits(&self) -> u64 {
        self.parts.iter().map(TcpPart::total_retransmits).sum()
    }
    /// Retransmission timeouts of every connection of the run.
    pub fn total_timeouts(&self) -> u64 {
        self.parts.iter().map(TcpPart::total_timeouts).sum()
    }
    /// SYNs sent again, over every connection of the run.
    pub fn total_syn_retransmits(&self) -> u64 {
        self.parts.iter().map(TcpPart::total_syn_retransmits).sum()
    }
}

impl TransportKind for Tcp {
    const NAME: &'static str = "TCP";
    const PROTO: Proto = Proto::TCP;
    type Event = TcpEvent;

    fn build(b: &TransportBuild) -> Self {
        if !b.partitioned {
            return Tcp::new(b.tcp.clone());
        }
        let host_part = b.net.host_parts();
        Tcp::split(b.tcp.clone(), host_part)
    }

    #[inline]
    fn on_packet(&mut self, path: &mut HostPath<'_, impl TransportSched>, pkt: PktId) {
        let p = path.take(pkt);
        self.on_segment(path, &p);
    }

    /// (Not inlined: a timer is rare beside packets, and the event loop's dispatch stays
    /// small enough to inline the network's handler.)
    #[inline(never)]
    fn on_timer(&mut self, path: &mut HostPath<'_, impl TransportSched>, e: TcpEvent) {
        let TcpEvent::Timer { conn, which, part } = e;
        let p = usize::from(part);
        self.parts[p].on_timer(path, conn, which);
        self.acted(p);
    }

    fn timer_host(&self, e: TcpEvent) -> u32 {
        let TcpEvent::Timer { conn, which, part } = e;
        self.parts[usize::from(part)].timer_host(conn, which)
    }

    #[inline]
    fn prefetch_timer(&self, e: TcpEvent) {
        let TcpEvent::Timer { conn, which, part } = e;
        self.parts[usize::from(part)].prefetch_timer(conn, which);
    }

    #[inline(always)]
    fn prefetch_packet(&self, p: &Packet) {
        self.prefetch_conn(p.dst_host, p.flow_id);
    }

    /// What the last packet, timer or write told applications (the part it acted in).
    #[inline]
    /// Kept by part in a partitioned run (`split`).
    fn runs_in_partitions(&self) -> bool {
        self.is_split()
    }

    fn has_notes(&self) -> bool {
        self.noted != NO_PART
    }

    #[inline]
    fn take_notes(&mut self, into: &mut Vec<Note>) {
        match self.noted {
            NO_PART => {}
            SEVERAL_PARTS => {
                for p in &mut self.parts {
                    into.append(&mut p.notes);
                }
            }
            p => into.append(&mut self.parts[p as usize].notes),
        }
        self.noted = NO_PART;
    }

    /// Timeouts and retransmissions, in runs that opened a connection; closed connections
    /// and stale packets when there were any.
    fn headline(&self, _net: &Network, h: &mut serde_json::Map<String, serde_json::Value>) {
        if !self.in_use() {
            return;
        }
        h.insert("tcp_timeouts".into(), self.total_timeouts().into());
        h.insert("tcp_retransmits".into(), self.total_retransmits().into());
        let (closed, stale) = (self.closed_connections(), self.stale_packets());
        if closed > 0 || stale > 0 {
            // Connections that closed (their slots were reused), and packets that arrived
            // for one of them after its slot went to another.
            h.insert("tcp_closed".into(), closed.into());
            h.insert("tcp_stale_packets".into(), stale.into());
            let syn = self.total_syn_retransmits();
            h.insert("tcp_syn_retransmits".into(), syn.into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testbed::{params, TestWire};
    use super::*;
    use crate::packet::tcp_flags;

    /// What a packet says, without the names a split run gives differently (connection ids,
    /// source ports and so hashes, the key a foreign receiver is made from).
    type Gist = (u32, u32, u64, u64, u32, u8, [u32; 4]);

    fn gist(p: &Packet) -> Gist {
        let flags = p.tcp_flags;
        (
            p.src_host,
            p.dst_host,
            p.seq,
            p.ack,
            p.payload_bytes,
            flags,
            p.sack,
        )
    }

    /// A request and response exchange on a linked pair between hosts 0 and 1 that both
    /// close, over an instant lossless network: every packet sent is delivered next. With
    /// `passive`, host 1 opens the response connection when the request has arrived, and
    /// links the pair in its part only (`Tcp::link_reverse_at`).
    fn exchange(tcp: &mut Tcp, passive: bool) -> (Vec<Gist>, Vec<Note>) {
        let mut w = TestWire::default();
        let req = tcp.open(0, 1, 7, 8);
        let mut resp = crate::net::NONE;
        if !passive {
            resp = tcp.open(1, 0, 8, 7);
            tcp.link_reverse(req, resp);
        }
        tcp.write(&mut w, req, 3000);
        let (mut seen, mut notes) = (Vec::new(), Vec::new());
        let mut answered = false;
        let mut closed = false;
        while let Some(p) = (!w.sent.is_empty()).then(|| w.sent.remove(0)) {
            w.now_ps += 1_000_000;
            seen.push(gist(&p));
            tcp.on_segment(&mut w, &p);
            TransportKind::take_notes(tcp, &mut notes);
            let delivered = |n: &Note, c| matches!(n, Note::Delivered { conn, total, .. } if *conn == c && *total >= 3000);
            if !answered && notes.iter().any(|n| delivered(n, req)) {
                answered = true;
                if passive {
                    resp = tcp.open(1, 0, 8, 7);
                    tcp.link_reverse_at(1, req, resp);
                }
                tcp.write(&mut w, resp, 5000);
            }
            if !closed && notes.iter().any(|n| delivered(n, resp)) {
                closed = true;
                tcp.close(&mut w, req);
                tcp.close(&mut w, resp);
            }
        }
        (seen, notes)
    }

    /// A connection split between two parts (its sender in one, its receiver made in the
    /// other from its first packet) sends what it sends in one part, tells its applications
    /// the same, and closes in both.
    #[test]
    fn a_split_connection_behaves_as_a_whole_one() {
        let p = params(r#","delayed_ack":false,"initial_window":2,"tsq_limit":"0B""#);
        let mut whole = Tcp::new(p.clone());
        let mut split = Tcp::split(p, vec![0, 1]);
        let (a, a_notes) = exchange(&mut whole, false);
        let (b, b_notes) = exchange(&mut split, false);
        assert!(a.len() > 8, "the exchange ran: {a:?}");
        assert_eq!(a, b);
        let totals = |n: &[Note]| {
            n.iter()
                .map(|n| match *n {
                    Note::Delivered { app, total, .. } => (app, total),
                    Note::Closed { app, .. } => (app, u64::MAX),
                    _ => unreachable!(),
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(totals(&a_notes), totals(&b_notes));
        assert!(b.iter().any(|g| g.5 & tcp_flags::FIN != 0), "both closed");
        assert_eq!(
            (whole.closed_connections(), split.closed_connections()),
            (2, 2)
        );
        let ids: Vec<u32> = split
            .parts()
            .iter()
            .map(|p| p.senders.ids().next().unwrap())
            .collect();
        assert_eq!(ids, [0, 1], "ids name their part in their low bits");
        // One part reuses a closed connection's slot; split parts never do (the other
        // part may still hold the old connection's half).
        assert_eq!(whole.open(0, 1, 7, 8), 0);
        assert_eq!(split.open(0, 1, 7, 8), 2, "the next slot of part 0");
    }

    /// A thread's bitwise copy of a split TCP (`sim::threads::upper`) finds notes only
    /// where its own calls left them, never in a part it merely acted in before, which
    /// another thread may be filling now. (It once looked in the last part acted in, and
    /// took another thread's notes: 3-thread runs differed from 1-thread ones.)
    #[test]
    fn a_threads_copy_finds_only_the_notes_its_calls_left() {
        let p = params(r#","delayed_ack":false,"tsq_limit":"0B""#);
        let mut tcp = Tcp::split(p, vec![0, 1]);
        let mut w = TestWire::default();
        let (c, d) = (tcp.open(0, 1, 7, 8), tcp.open(1, 0, 8, 7));
        // Acts in host 1's part and leaves no notes.
        tcp.write(&mut w, d, 1000);
        assert!(!TransportKind::has_notes(&tcp));
        // SAFETY: the copy is never dropped, and is only read while the original lives.
        let copy = std::mem::ManuallyDrop::new(unsafe { std::ptr::read(&tcp) });
        // The original (another thread) delivers c's data in host 1's part.
        tcp.write(&mut w, c, 1000);
        let data = w.sent.iter().find(|p| p.src_host == 0).copied().unwrap();
        tcp.on_segment(&mut w, &data);
        assert!(TransportKind::has_notes(&tcp));
        assert!(!TransportKind::has_notes(&*copy));
    }

    /// A response connection opened by its server when the request arrived, and linked
    /// there only, sends what one opened and linked with the request does: the client's
    /// part links the pair at the response's first packet, which names the request.
    /// (Delayed ACKs, so that the response carries the request's ACK.)
    #[test]
    fn a_passive_open_links_at_both_ends() {
        let p = params(r#","initial_window":2,"tsq_limit":"0B""#);
        let mut whole = Tcp::new(p.clone());
        let mut split = Tcp::split(p, vec![0, 1]);
        let (a, a_notes) = exchange(&mut whole, false);
        let (b, b_notes) = exchange(&mut split, true);
        assert_eq!(a, b);
        assert_eq!(a_notes.len(), b_notes.len());
        // (Both ends' links are gone again: the pair closed.)
        let piggybacked = |g: &[Gist]| {
            g.iter()
                .filter(|g| g.5 & tcp_flags::ACK_REVERSE != 0)
                .count()
        };
        assert!(piggybacked(&b) > 0, "responses carried the requests' ACKs");
    }
}
