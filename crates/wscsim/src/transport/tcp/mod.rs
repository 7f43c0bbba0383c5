//! TCP: byte-sequenced segments, cumulative ACKs with delayed ACK, SACK with RFC 6675-style
//! recovery (or NewReno fast retransmit and recovery without SACK), RFC 6298 retransmission
//! timeout with a configurable floor, timestamps for RTT samples, optional ECN (RFC 3168
//! response), TCP small queues, and NewReno or CUBIC window growth.
//!
//! Connections opened with `Tcp::open` start established (sending at once, with the RTO
//! at the floor, as a datacenter handshake's RTT sample would leave it); `Tcp::connect`
//! opens one with a three-way handshake (handshake.rs), and `Tcp::close` ends a
//! direction with a FIN (close.rs), after which a closed connection's slot is reused.
//!
//! Loss detection by time (RACK) is an option (rack.rs).
//!
//! Simplified: two SACK blocks per ACK, no D-SACK, no Nagle, no receive-window
//! autotuning (a fixed advertised window), no pacing.

use super::stats::{CwndSample, CwndTrace, RttStats};
use super::wire::Wire;
use super::Note;
use crate::engine::{TimePs, NEVER};
use crate::packet::{ecn, five_tuple_hash, tcp_flags, Packet, Proto, TCP_IP_HEADER_BYTES};
use cc::{CcState, Variant};
use halves::{ConnIds, Receivers, Senders};
use scoreboard::Scoreboard;

#[derive(Clone, Debug)]
pub struct TcpParams {
    pub variant: Variant,
    pub mss_bytes: u32,
    pub initial_window_segments: u32,
    pub rto_min_ps: TimePs,
    pub rto_max_ps: TimePs,
    pub rcv_window_bytes: u64,
    pub delayed_ack: bool,
    pub delayed_ack_ps: TimePs,
    pub ecn: bool,
    /// TCP small queues: most bytes of one connection's segments waiting in its host's NIC
    /// before the sender holds back (0: no limit, the NIC queue grows without bound).
    pub tsq_limit_bytes: u64,
    /// Selective acknowledgements (RFC 2018) with SACK-based loss recovery (RFC 6675).
    pub sack: bool,
    /// How the window comes down during SACK recovery.
    pub recovery: Recovery,
    /// Limited transmit (RFC 3042): the first two duplicate ACKs each let one new segment
    /// out beyond the window.
    pub limited_transmit: bool,
    /// Linux's retransmission timeout, srtt + max(4 rttvar, rto_min), instead of RFC
    /// 6298's max(rto_min, srtt + 4 rttvar).
    pub linux_rto: bool,
    /// The retransmission timer's clock (Linux's jiffy, 1 / HZ): a timer armed for `rto`
    /// fires at the first tick at least that many ticks later (0: exact).
    pub rto_granularity_ps: TimePs,
    /// The run's seed: each host's timer clock has its own phase.
    pub seed: u64,
    /// Linux's quick-ack mode: a receiver ACKs every segment at once for a while at a
    /// connection's start, after a gap in the data longer than the timeout floor (the
    /// sender timed out) and after a retransmission it already had.
    pub quickack: bool,
    /// Tail loss probes (Linux 3.10's TLP, with SACK): with data outstanding and no ACK for
    /// a probe timeout (two smoothed RTTs, at least 10 ms), one segment goes out (new data,
    /// else the last segment again) so that a lost tail is repaired by SACK recovery
    /// instead of a retransmission timeout.
    pub tlp: bool,
    /// The retransmission timeout before any RTT sample: a handshake's SYN waits this long
    /// (RFC 6298 and Linux from 3.1: 1 s; Linux before: 3 s).
    pub initial_rto_ps: TimePs,
    /// RACK (RFC 8985, Linux 4.4 and later, with SACK): a segment is lost once one sent
    /// after it is delivered and a round trip plus a reordering window has passed since it
    /// was sent, instead of once three segments above it are SACKed (rack.rs).
    pub rack: bool,
}

/// The window's course during SACK recovery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// RFC 6675: the window falls to ssthresh at once; nothing is sent until the bytes in
    /// flight fall below it.
    Rfc6675,
    /// Proportional rate reduction (RFC 6937, Linux from 3.2): sends in proportion to what
    /// is delivered, so the window reaches ssthresh at the end of recovery.
    Prr,
    /// Linux's rate halving before 3.2 (`tcp_cwnd_down`): the window falls by one segment
    /// for every two ACKs that deliver data, down to ssthresh, and never above the bytes
    /// in flight plus one segment.
    RateHalving,
}

/// RFC 6675's DupThresh: a hole is lost once this many segments' worth above it are SACKed.
const DUP_THRESH: u64 = 3;

/// Where a sender's FIN is (`Tcp::close`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fin {
    /// The application has not closed this direction.
    Open,
    /// Closed: the FIN goes once all data has been sent.
    Wanted,
    /// Sent and not yet acknowledged (the retransmission timer covers it).
    Sent,
    Acked,
    /// Both directions closed: the slot waits for reuse (once its segments have left the
    /// host's NIC, whose departures name the slot).
    Retired,
}

pub const TIMER_RTO: u8 = 0;
pub const TIMER_DELACK: u8 = 1;

#[derive(Clone, Debug)]
pub struct Sender {
    pub host: u32,
    pub peer: u32,
    sport: u16,
    dport: u16,
    hash: u32,
    pub app: u32,
    /// The application its data goes to at the peer: carried by its packets for a
    /// receiver half in another part (`halves`).
    peer_app: u32,
    /// DSCP of the connection's packets (data and ACKs), for class-based schemes.
    pub dscp: u8,
    pub snd_una: u64,
    snd_nxt: u64,
    snd_max: u64,
    /// Bytes the application has written so far.
    pub app_bytes: u64,
    pub cwnd: f64,
    ssthresh: f64,
    dupacks: u32,
    in_recovery: bool,
    recover: u64,
    ecn_recover: u64,
    srtt_ps: TimePs,
    rttvar_ps: TimePs,
    rto_ps: TimePs,
    rto_deadline: TimePs,
    rto_event_at: TimePs,
    cc: CcState,
    /// Bytes of this connection's segments in the host NIC queue (for TCP small queues).
    nic_bytes: u64,
    /// SACK scoreboard: ranges above `snd_una` the receiver holds, sorted and disjoint.
    sacked: Scoreboard,
    /// Highest byte retransmitted in the current SACK recovery.
    high_rxt: u64,
    /// Retransmissions of this recovery as (start, end, snd_max when sent): once data sent
    /// after one is SACKed while it is still missing, it was lost again.
    rexmits: Vec<(u64, u64, u64)>,
    /// Retransmissions found lost again, to be sent once more before anything else.
    relost: Vec<(u64, u64)>,
    /// Proportional rate reduction: bytes delivered and sent since recovery began, and
    /// the bytes in flight when it began (RFC 6937's prr_delivered, prr_out, RecoverFS).
    prr_delivered: u64,
    prr_out: u64,
    recover_fs: u64,
    /// Rate halving: an ACK that delivered data is waiting for its pair.
    halving_odd: bool,
    pub retransmits: u64,
    pub timeouts: u64,
    /// Tail loss probes sent.
    pub tail_probes: u64,
    /// The retransmission timer is armed for a tail loss probe, not a timeout.
    probe_armed: bool,
    /// RACK's state (`TcpParams::rack`); its timer is the retransmission timer's.
    rack: Option<Box<rack::Rack>>,
    /// snd_max when the last probe went: no other probe until it is acknowledged.
    tlp_high: u64,
    /// A handshake is under way (`Tcp::connect`): nothing is sent until the SYN-ACK.
    connecting: bool,
    /// SYNs sent again after their timeout.
    pub syn_retransmits: u64,
    pub fin: Fin,
    pub rtt: RttStats,
    /// This connection's window is traced (`Tcp::trace`).
    pub traced: bool,
    /// DCTCP: estimate of the fraction of bytes marked, and this window's counts.
    pub dctcp_alpha: f64,
    dctcp_acked: u64,
    dctcp_marked: u64,
    dctcp_window_end: u64,
}

impl Sender {}

impl Receiver {
    /// A receiver half at `host` for data from `peer` to application `app`, before any data.
    fn new(host: u32, peer: u32, app: u32, (sport, dport): (u16, u16)) -> Self {
        Receiver {
            host,
            peer,
            app,
            sport,
            dport,
            dscp: 0,
            rcv_nxt: 0,
            ooo: Scoreboard::default(),
            last_ooo: 0,
            pending_segs: 0,
            pending_ts: NEVER,
            ce_pending: false,
            ce_state: false,
            delack_deadline: NEVER,
            delack_event_at: NEVER,
            quick_acks: 0,
            pingpong: false,
            last_data_ps: NEVER,
            fin_rcvd: false,
            app_read: 0,
        }
    }

    /// The receiver half a packet of a connection from another part makes at its first
    /// arrival (`halves::Receivers::arrive`).
    pub(super) fn fresh(pkt: &Packet, app: u32) -> Self {
        let ports = (pkt.src_port, pkt.dst_port);
        let mut r = Receiver::new(pkt.dst_host, pkt.src_host, app, ports);
        r.dscp = pkt.dscp;
        r
    }
}

#[derive(Clone, Debug)]
pub struct Receiver {
    pub host: u32,
    pub peer: u32,
    pub app: u32,
    /// The connection's ports and class as its sender sends them (this half's ACKs go
    /// back with them).
    sport: u16,
    dport: u16,
    dscp: u8,
    pub rcv_nxt: u64,
    /// Out-of-order byte ranges [start, end), sorted and disjoint.
    ooo: Scoreboard,
    /// Start of the out-of-order segment received last (its block is reported first).
    last_ooo: u64,
    pending_segs: u32,
    pending_ts: TimePs,
    ce_pending: bool,
    /// DCTCP: CE state of the last data packet; every ACK echoes it.
    ce_state: bool,
    delack_deadline: TimePs,
    delack_event_at: TimePs,
    /// Quick-ack mode: segments still to be ACKed at once.
    quick_acks: u32,
    /// Linux's interactive ("pingpong") mode: the receiver's side answered data within the
    /// delayed-ACK timeout, so ACKs wait to ride on answers and quick-acks are off.
    pingpong: bool,
    /// When the last data segment arrived (NEVER: none yet).
    last_data_ps: TimePs,
    /// The peer's FIN arrived in order (all its data is in).
    fin_rcvd: bool,
    /// Bytes the application has read (`Tcp::take_unread`).
    app_read: u64,
}

/// Counts of connections whose slots were reused, kept so that totals cover every
/// connection of the run.
#[derive(Clone, Copy, Debug, Default)]
pub struct Retired {
    pub connections: u64,
    pub retransmits: u64,
    pub timeouts: u64,
    pub syn_retransmits: u64,
    pub tail_probes: u64,
}

pub struct TcpPart {
    pub params: TcpParams,
    pub senders: Senders,
    pub receivers: Receivers,
    pub notes: Vec<Note>,
    /// For connections linked into a bidirectional pair: the connection going the other
    /// way (NONE otherwise), by sender slot for this part's connections and by id for
    /// the others' (whose receivers are here).
    reverse: Vec<u32>,
    foreign_reverse: rustc_hash::FxHashMap<u32, u32>,
    /// Window traces of chosen connections (none unless asked for).
    pub trace: CwndTrace,
    /// Slots of closed connections, reused by the next `open`, smallest first (so the
    /// order in which they were freed, which partitions may interleave, does not matter).
    free: std::collections::BinaryHeap<std::cmp::Reverse<u32>>,
    /// Connections opened so far (each takes the next source port).
    opened: u32,
    /// A connection has closed: packets of it may still arrive, at its slot closed or
    /// reused, and are told apart (`is_stale`).
    slots_closed: bool,
    /// What the connections whose slots were reused counted.
    pub retired: Retired,
    /// Packets of a closed connection (dropped on arrival).
    pub stale_packets: u64,
}

impl TcpPart {
    /// The only part of a run (`ConnIds::default()`), or one of several.
    pub fn new(params: TcpParams, ids: ConnIds) -> Self {
        TcpPart {
            params,
            senders: Senders::new(ids),
            receivers: Receivers::new(ids),
            notes: Vec::new(),
            reverse: Vec::new(),
            foreign_reverse: Default::default(),
            trace: CwndTrace::default(),
            free: std::collections::BinaryHeap::new(),
            opened: 0,
            slots_closed: false,
            retired: Retired::default(),
            stale_packets: 0,
        }
    }

    /// Links `a` (x to y) and `b` (y to x) into one bidirectional connection: a data
    /// segment in one direction carries the acknowledgement the other direction owes, as
    /// real TCP does, instead of a separate ACK. A part links the halves it holds: `a`'s
    /// sender and `b`'s receiver at x, or both when x and y are in it.
    pub fn link_reverse(&mut self, a: u32, b: u32) {
        self.set_reverse(a, b);
        self.set_reverse(b, a);
    }

    fn set_reverse(&mut self, conn: u32, rev: u32) {
        let ids = self.senders.ids;
        if ids.is_own(conn) {
            let slot = ids.slot(conn);
            if self.reverse.len() <= slot {
                self.reverse.resize(slot + 1, crate::net::NONE);
            }
            self.reverse[slot] = rev;
        } else if rev == crate::net::NONE {
            self.foreign_reverse.remove(&conn);
        } else {
            self.foreign_reverse.insert(conn, rev);
        }
    }

    fn reverse_of(&self, conn: u32) -> u32 {
        let ids = self.senders.ids;
        let rev = if ids.is_own(conn) {
            self.reverse.get(ids.slot(conn))
        } else {
            self.foreign_reverse.get(&conn)
        };
        rev.copied().unwrap_or(crate::net::NONE)
    }

    /// The reverse connection of `conn` when its receiver half is here (a connection from
    /// another part has one once its first packet arrived), else NONE.
    fn reverse_receiver(&self, conn: u32) -> u32 {
        let rev = self.reverse_of(conn);
        if rev != crate::net::NONE && self.receivers.contains(rev) {
            rev
        } else {
            crate::net::NONE
        }
    }

    /// The event of `conn`'s timer `which`, in this part (which holds the half it is for).
    fn timer(&self, conn: u32, which: u8) -> TcpEvent {
        let part = self.senders.ids.part as u16;
        TcpEvent::Timer { conn, which, part }
    }

    /// Sets the DSCP of connection `conn`'s packets (data and ACKs), for class-based
    /// schemes: right after opening it, before it sends.
    pub fn set_dscp(&mut self, conn: u32, dscp: u8) {
        self.senders[conn].dscp = dscp;
        self.receivers[conn].dscp = dscp;
    }

    /// Opens a connection from `src` to `dst`; data written to it is delivered to
    /// application `rx_app` at the destination. Returns the connection id: a new slot, or
    /// the slot of a connection closed before (its packets still in flight are dropped on
    /// arrival: the new connection has another source port).
    pub fn open(&mut self, src: u32, dst: u32, tx_app: u32, rx_app: u32) -> u32 {
        let (sender, receiver) = self.fresh_halves(src, dst, tx_app, rx_app);
        self.opened = self.opened.wrapping_add(1);
        let conn = match self.free.pop().map(|std::cmp::Reverse(c)| c) {
            Some(conn) => {
                self.senders[conn] = sender;
                self.senders[conn].traced = self.trace.wants(conn);
                self.set_reverse(conn, crate::net::NONE);
                conn
            }
            None => self.senders.push(sender),
        };
        self.receivers.set_own(conn, receiver);
        conn
    }

    /// A new connection's two halves, with the next source port.
    fn fresh_halves(&self, src: u32, dst: u32, tx_app: u32, rx_app: u32) -> (Sender, Receiver) {
        let sport = 1024 + (self.opened % 60_000) as u16;
        let dport = 5001;
        let mss = self.params.mss_bytes as f64;
        let sender = Sender {
            host: src,
            peer: dst,
            sport,
            dport,
            hash: five_tuple_hash(src, dst, sport, dport, Proto::TCP),
            app: tx_app,
            peer_app: rx_app,
            dscp: 0,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            app_bytes: 0,
            cwnd: self.params.initial_window_segments as f64 * mss,
            ssthresh: f64::INFINITY,
            dupacks: 0,
            in_recovery: false,
            recover: 0,
            ecn_recover: 0,
            srtt_ps: 0,
            rttvar_ps: 0,
            rto_ps: self.params.rto_min_ps,
            rto_deadline: NEVER,
            rto_event_at: NEVER,
            cc: CcState::new(self.params.variant),
            nic_bytes: 0,
            sacked: Scoreboard::default(),
            high_rxt: 0,
            rexmits: Vec::new(),
            relost: Vec::new(),
            prr_delivered: 0,
            prr_out: 0,
            recover_fs: 0,
            halving_odd: false,
            retransmits: 0,
            timeouts: 0,
            tail_probes: 0,
            probe_armed: false,
            rack: self.params.rack.then(Box::default),
            tlp_high: 0,
            connecting: false,
            syn_retransmits: 0,
            fin: Fin::Open,
            rtt: RttStats::default(),
            traced: self.trace.wants(self.senders.ids.id(self.senders.len())),
            // Linux starts alpha at 1 (the first marks halve the window).
            dctcp_alpha: 1.0,
            dctcp_acked: 0,
            dctcp_marked: 0,
            dctcp_window_end: 0,
        };
        let receiver = Receiver::new(dst, src, rx_app, (sport, dport));
        (sender, receiver)
    }

    /// The application at the source writes `bytes` more.
    /// On a host that costs time this is a `send` system call; the copy is charged per
    /// segment on the transmit path.
    pub fn write(&mut self, w: &mut impl Wire, conn: u32, bytes: u64) {
        let s = &self.senders[conn];
        w.syscall(s.host, s.hash);
        self.senders[conn].app_bytes += bytes;
        self.send_more(w, conn);
    }

    /// The host whose half of connection `conn` timer `which` belongs to (the sender's
    /// retransmission timer, the receiver's delayed ACK).
    pub fn timer_host(&self, conn: u32, which: u8) -> u32 {
        if which == TIMER_DELACK {
            self.receivers[conn].host
        } else {
            self.senders[conn].host
        }
    }

    pub fn prefetch_timer(&self, conn: u32, which: u8) {
        if which == TIMER_DELACK {
            self.receivers.prefetch(conn);
        } else {
            self.senders.prefetch(conn);
        }
    }

    /// Prefetches both halves of connection `conn` (a packet of it is about to arrive).
    #[inline]
    pub fn prefetch_conn(&self, conn: u32) {
        if self.senders.ids.is_own(conn) {
            self.receivers.prefetch(conn);
            self.senders.prefetch(conn);
        }
    }

    /// A TCP packet reached host `host`: data goes to the receiver half, ACKs to the sender half.
    pub fn on_packet(&mut self, w: &mut impl Wire, pkt: &Packet) {
        let stale = if self.senders.ids.is_own(pkt.flow_id) {
            self.slots_closed && self.is_stale(pkt)
        } else {
            // From another part's host to this part's receiver half (split parts never
            // reuse a slot, so no packet of another part's connection is stale). The
            // first packet of a connection its sender linked after a passive open (the
            // peer's response to ours) links the two here too.
            if self.receivers.arrive(pkt) {
                if let Some(rev) = halves::carried_reverse(pkt) {
                    self.link_reverse(rev, pkt.flow_id);
                }
            }
            false
        };
        if stale {
            self.stale_packets += 1;
            return;
        }
        const CONTROL: u8 =
            tcp_flags::SYN | tcp_flags::HANDSHAKE_ACK | tcp_flags::FIN | tcp_flags::FIN_ACKED;
        if pkt.tcp_flags & CONTROL != 0 {
            return self.on_control(w, pkt);
        }
        if pkt.payload_bytes > 0 {
            if pkt.tcp_flags & tcp_flags::ACK_REVERSE != 0 {
                self.reverse_ack(w, pkt);
            }
            self.on_data(w, pkt);
        } else {
            self.on_ack(w, pkt);
        }
    }

    /// Retransmitted segments of every connection of the run (slots reused included).
    pub fn total_retransmits(&self) -> u64 {
        self.retired.retransmits + self.senders.iter().map(|s| s.retransmits).sum::<u64>()
    }
    /// Retransmission timeouts of every connection of the run (slots reused included).
    pub fn total_timeouts(&self) -> u64 {
        self.retired.timeouts + self.senders.iter().map(|s| s.timeouts).sum::<u64>()
    }
    /// SYNs sent again, over every connection of the run (slots reused included).
    pub fn total_syn_retransmits(&self) -> u64 {
        self.retired.syn_retransmits + self.senders.iter().map(|s| s.syn_retransmits).sum::<u64>()
    }
}

/// TCP's timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpEvent {
    /// A timer of connection `conn` (lazy: the handler checks the real deadline). `which`:
    /// 0 the sender's retransmission timer, 1 the receiver's delayed ACK.
    /// `part`: the part of the run's TCP that holds the half (`tcp::Tcp`).
    Timer { conn: u32, which: u8, part: u16 },
}

mod ack;
pub mod cc;
mod close;
pub mod config;
mod halves;
mod handshake;
mod parts;
pub use parts::Tcp;
mod output;
pub(super) mod rack;
mod receiver;
mod recovery;
pub mod scoreboard;
mod timers;
mod window;

#[cfg(test)]
mod testbed;

#[cfg(test)]
mod tests {
    use super::testbed::*;
    use super::*;

    /// A segment with data goes to the connection's receiver half, one without to its sender
    /// half; each opened connection takes the next source port and hashes its five-tuple.
    #[test]
    fn packets_reach_the_half_they_are_for() {
        let mut b = Bench::new(r#","initial_window":4"#);
        b.write(4);
        b.data(0);
        assert_eq!(b.receiver().rcv_nxt, b.mss);
        assert_eq!(b.sender().snd_una, 0, "data does not acknowledge");
        b.ack(2, &[]);
        assert_eq!(
            (b.sender().snd_una, b.receiver().rcv_nxt),
            (2 * b.mss, b.mss)
        );
        let other = b.tcp.open(0, 1, 0, 0);
        let (a, o) = (&b.tcp.senders[b.conn], &b.tcp.senders[other]);
        assert_eq!(o.sport, a.sport + 1);
        assert_eq!(o.hash, five_tuple_hash(0, 1, o.sport, o.dport, Proto::TCP));
        assert_ne!(o.hash, a.hash);
    }

    /// Totals cover every connection of the run, those whose slots were reused included.
    #[test]
    fn totals_count_retired_connections() {
        let mut b = Bench::new("");
        b.tcp.senders[0].retransmits = 3;
        b.tcp.retired.retransmits = 4;
        b.tcp.retired.timeouts = 2;
        assert_eq!((b.tcp.total_retransmits(), b.tcp.total_timeouts()), (7, 2));
    }
}
