//! TCP: byte-sequenced segments, cumulative ACKs with delayed ACK, SACK with RFC 6675-style
//! recovery (or NewReno fast retransmit and recovery without SACK), RFC 6298 retransmission
//! timeout with a configurable floor, timestamps for RTT samples, optional ECN (RFC 3168
//! response), TCP small queues, and NewReno or CUBIC window growth.
//!
//! Connections opened with `Tcp::open` start established (sending at once, with the RTO
//! at the floor, as a datacenter handshake's RTT sample would leave it); `Tcp::connect`
//! opens one with a three-way handshake (tcp_handshake.rs), and `Tcp::close` ends a
//! direction with a FIN (tcp_close.rs), after which a closed connection's slot is reused.
//!
//! Loss detection by time (RACK) is an option (tcp_rack.rs).
//!
//! Simplified: two SACK blocks per ACK, no D-SACK, no Nagle, no receive-window
//! autotuning (a fixed advertised window), no pacing.

use super::cc::{CcState, Variant};
use super::scoreboard::Scoreboard;
use super::stats::{CwndSample, CwndTrace, RttStats};
use super::Note;
use super::{TcpEvent, TransportSched};
use crate::engine::{TimePs, NEVER};
use crate::host::Hosts;
use crate::net::Network;
use crate::packet::{ecn, five_tuple_hash, tcp_flags, Packet, Proto, TCP_IP_HEADER_BYTES};

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
    /// was sent, instead of once three segments above it are SACKed (tcp_rack.rs).
    pub rack: bool,
}

/// Linux's TCP_DELACK_MAX: with one segment outstanding a tail loss probe also waits for
/// the peer's longest delayed ACK.
const DELACK_MAX_PS: TimePs = 200 * crate::engine::PS_PER_MS;
/// Linux's floor on the tail loss probe timeout (10 ms).
const PTO_MIN_PS: TimePs = 10 * crate::engine::PS_PER_MS;

/// Linux's TCP_MAX_QUICKACKS: the most segments one quick-ack burst ACKs at once.
const MAX_QUICKACKS: u32 = 16;

/// Linux's first receive window (TCP_DEFAULT_INIT_RCVWND, from 2.6.39): 10 segments, so
/// the quick-ack burst at a connection's start covers half of them.
const INITIAL_RCV_WINDOW_SEGMENTS: u32 = 10;

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
    rack: Option<Box<super::tcp::rack::Rack>>,
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

/// DCTCP's estimation gain g (RFC 8257 and the DCTCP paper: 1/16).
pub const DCTCP_G: f64 = 1.0 / 16.0;

impl Sender {
    /// A timeout doubles the retransmission timer, up to `rto_max_ps`.
    fn back_off(&mut self, rto_max_ps: TimePs) {
        self.rto_ps = (self.rto_ps * 2).min(rto_max_ps);
    }

    /// Lost retransmissions: data sent after a retransmission has been SACKed while the
    /// retransmitted bytes are still missing (the path never reorders). They move from
    /// `rexmits` to `relost`; retransmissions no longer missing are forgotten.
    fn find_lost_retransmissions(&mut self) {
        let top = self.sacked.highest_end();
        let (una, sacked) = (self.snd_una, &self.sacked);
        let mut i = 0;
        while i < self.rexmits.len() {
            let (a, b, marker) = self.rexmits[i];
            let missing = b > una && sacked.unsacked_in(a.max(una), b.max(una)) > 0;
            if !missing {
                self.rexmits.swap_remove(i);
            } else if top > marker {
                self.relost.push((a.max(una), b));
                self.rexmits.swap_remove(i);
            } else {
                i += 1;
            }
        }
    }

    /// RFC 6675's pipe (bytes the sender believes are in the network: sent, neither
    /// acknowledged, SACKed nor lost), with the scoreboard's lost boundary and where the
    /// search for holes to retransmit starts.
    fn pipe(&self, mss: u64) -> (u64, u64, u64) {
        let lost_end = match &self.rack {
            None => self.sacked.lost_boundary(mss, DUP_THRESH),
            Some(r) => r.lost_end,
        };
        let from = self.high_rxt.max(self.snd_una);
        // Retransmissions lost again are not in the network either.
        let relost_bytes: u64 = self
            .relost
            .iter()
            .map(|&(a, b)| self.sacked.unsacked_in(a.max(self.snd_una).min(b), b))
            .sum();
        let pipe = ((self.snd_max - self.snd_una)
            - self.sacked.bytes_in(self.snd_una, self.snd_max)
            - self.sacked.unsacked_in(from, lost_end.max(from)))
        .saturating_sub(relost_bytes);
        (pipe, lost_end, from)
    }

    /// The window for an ACK in recovery that delivered `delivered` bytes (newly
    /// acknowledged or SACKed): PRR's (RFC 6937, with slow-start reduction bound) or rate
    /// halving's; RFC 6675 keeps ssthresh.
    fn recovery_window(&mut self, mode: Recovery, delivered: u64, mss: u64) {
        if mode == Recovery::Rfc6675 {
            return;
        }
        let pipe = self.pipe(mss).0;
        match mode {
            Recovery::Rfc6675 => {}
            Recovery::Prr => {
                self.prr_delivered += delivered;
                let ssthresh = self.ssthresh;
                let sndcnt = if pipe as f64 > ssthresh {
                    // Rounded up to whole segments, as Linux counts (in packets).
                    let share =
                        self.prr_delivered as f64 * ssthresh / self.recover_fs.max(1) as f64;
                    let due = (share / mss as f64).ceil() * mss as f64;
                    (due - self.prr_out as f64).max(0.0)
                } else {
                    let limit = self
                        .prr_delivered
                        .saturating_sub(self.prr_out)
                        .max(delivered)
                        + mss;
                    (ssthresh - pipe as f64).min(limit as f64).max(0.0)
                };
                self.cwnd = pipe as f64 + sndcnt;
            }
            Recovery::RateHalving => {
                // Only ACKs that make progress move the window (`tcp_cwnd_down`'s
                // FLAG_ANY_PROGRESS), both the halving and the cap at the flight.
                if delivered > 0 {
                    if self.halving_odd && self.cwnd > self.ssthresh {
                        self.cwnd = (self.cwnd - mss as f64).max(self.ssthresh);
                    }
                    self.halving_odd = !self.halving_odd;
                    self.cwnd = self.cwnd.min((pipe + mss) as f64);
                }
            }
        }
    }

    /// Recovery ends (everything sent before it is acknowledged): the window is ssthresh
    /// (rate halving: at most ssthresh, as Linux's `tcp_complete_cwr`).
    fn leave_recovery(&mut self, mode: Recovery) {
        self.in_recovery = false;
        self.cwnd = match mode {
            Recovery::RateHalving => self.cwnd.min(self.ssthresh),
            _ => self.ssthresh,
        };
        self.rexmits.clear();
        self.relost.clear();
    }

    /// DCTCP: counts `acked` bytes (marked if the ACK echoed CE) and, once a window of data
    /// has been acknowledged, folds the window's marked fraction into alpha.
    fn dctcp_on_ack(&mut self, acked: u64, ece: bool) {
        self.dctcp_acked += acked;
        if ece {
            self.dctcp_marked += acked;
        }
        if self.snd_una >= self.dctcp_window_end {
            if self.dctcp_acked > 0 {
                let f = self.dctcp_marked as f64 / self.dctcp_acked as f64;
                self.dctcp_alpha = (1.0 - DCTCP_G) * self.dctcp_alpha + DCTCP_G * f;
            }
            self.dctcp_acked = 0;
            self.dctcp_marked = 0;
            self.dctcp_window_end = self.snd_nxt;
        }
    }

    /// Window change for `acked` newly acknowledged bytes outside loss recovery: an ECN echo
    /// reduces it once per window (RFC 3168, no retransmission); otherwise slow start or
    /// congestion avoidance grows it.
    fn grow_window(&mut self, acked: f64, ece: bool, mss: f64, now: TimePs) {
        match self.cc.variant {
            Variant::PFabric => return,
            Variant::Dctcp => {
                self.dctcp_on_ack(acked as u64, ece);
                if ece && self.snd_una > self.ecn_recover {
                    // Cut by alpha / 2, once per window of data.
                    self.cwnd = (self.cwnd * (1.0 - self.dctcp_alpha / 2.0)).max(2.0 * mss);
                    self.ssthresh = self.cwnd;
                    self.ecn_recover = self.snd_max;
                    return;
                }
            }
            _ => {}
        }
        if ece && self.snd_una > self.ecn_recover {
            let flight = (self.snd_max - self.snd_una) as f64 + acked;
            self.ssthresh = self.cc.on_loss(self.cwnd, flight, mss);
            self.cwnd = self.ssthresh;
            self.ecn_recover = self.snd_max;
        } else if self.cwnd < self.ssthresh {
            self.cwnd += acked;
        } else {
            self.cwnd = self
                .cc
                .on_ack_avoidance(self.cwnd, acked, mss, now, self.srtt_ps);
        }
    }
}

#[derive(Clone, Debug)]
pub struct Receiver {
    pub host: u32,
    pub peer: u32,
    pub app: u32,
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

pub struct Tcp {
    pub params: TcpParams,
    pub senders: Vec<Sender>,
    pub receivers: Vec<Receiver>,
    pub notes: Vec<Note>,
    /// For connections linked into a bidirectional pair: the connection going the other
    /// way (NONE otherwise).
    reverse: Vec<u32>,
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

impl Tcp {
    pub fn new(params: TcpParams) -> Self {
        Tcp {
            params,
            senders: Vec::new(),
            receivers: Vec::new(),
            notes: Vec::new(),
            reverse: Vec::new(),
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
    /// real TCP does, instead of a separate ACK.
    pub fn link_reverse(&mut self, a: u32, b: u32) {
        let n = self.senders.len();
        self.reverse.resize(n, crate::net::NONE);
        self.reverse[a as usize] = b;
        self.reverse[b as usize] = a;
    }

    fn reverse_of(&self, conn: u32) -> u32 {
        self.reverse
            .get(conn as usize)
            .copied()
            .unwrap_or(crate::net::NONE)
    }

    /// What receiver `conn` acknowledges now (ack point, echoed timestamp, flags), with its
    /// pending-ACK state cleared: the ACK is on its way.
    fn take_ack(&mut self, conn: u32) -> (u64, TimePs, u8) {
        let variant = self.params.variant;
        let r = &mut self.receivers[conn as usize];
        let mut flags = tcp_flags::ACK;
        if (variant == Variant::Dctcp && r.ce_state) || (variant != Variant::Dctcp && r.ce_pending)
        {
            flags |= tcp_flags::ECE;
        }
        if r.fin_rcvd {
            flags |= tcp_flags::FIN_ACKED;
        }
        r.pending_segs = 0;
        r.ce_pending = false;
        r.delack_deadline = NEVER;
        (r.rcv_nxt, r.pending_ts, flags)
    }

    /// Opens a connection from `src` to `dst`; data written to it is delivered to
    /// application `rx_app` at the destination. Returns the connection id: a new slot, or
    /// the slot of a connection closed before (its packets still in flight are dropped on
    /// arrival: the new connection has another source port).
    pub fn open(&mut self, src: u32, dst: u32, tx_app: u32, rx_app: u32) -> u32 {
        let (sender, receiver) = self.fresh_halves(src, dst, tx_app, rx_app);
        self.opened = self.opened.wrapping_add(1);
        match self.free.pop().map(|std::cmp::Reverse(c)| c) {
            Some(conn) => {
                self.senders[conn as usize] = sender;
                self.senders[conn as usize].traced = self.trace.wants(conn);
                self.receivers[conn as usize] = receiver;
                if let Some(r) = self.reverse.get_mut(conn as usize) {
                    *r = crate::net::NONE;
                }
                conn
            }
            None => {
                self.senders.push(sender);
                self.receivers.push(receiver);
                self.senders.len() as u32 - 1
            }
        }
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
            hash: five_tuple_hash(src, dst, sport, dport, Proto::Tcp),
            app: tx_app,
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
            traced: self.trace.wants(self.senders.len() as u32),
            // Linux starts alpha at 1 (the first marks halve the window).
            dctcp_alpha: 1.0,
            dctcp_acked: 0,
            dctcp_marked: 0,
            dctcp_window_end: 0,
        };
        let receiver = Receiver {
            host: dst,
            peer: src,
            app: rx_app,
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
        };
        (sender, receiver)
    }

    /// The application at the source writes `bytes` more.
    /// On a host that costs time this is a `send` system call; the copy is charged per
    /// segment on the transmit path.
    pub fn write(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        conn: u32,
        bytes: u64,
    ) {
        if hosts.costed {
            let s = &self.senders[conn as usize];
            let core = hosts.core_of(s.hash);
            hosts.syscall(s.host, core, ev.now(), 0);
        }
        self.senders[conn as usize].app_bytes += bytes;
        self.send_more(net, hosts, ev, conn);
    }

    fn send_segment(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        conn: u32,
        seq: u64,
        len: u32,
    ) {
        // On a bidirectional connection, an in-order ACK the other direction owes rides along.
        let rev = self.reverse_of(conn);
        if self.params.quickack && rev != crate::net::NONE {
            // Data sent soon after data came in: an interactive exchange (Linux's pingpong).
            let r = &mut self.receivers[rev as usize];
            if r.last_data_ps != NEVER && ev.now() - r.last_data_ps < self.params.delayed_ack_ps {
                r.pingpong = true;
            }
        }
        let s = &self.senders[conn as usize];
        let mut pkt = Packet {
            src_host: s.host,
            dst_host: s.peer,
            src_port: s.sport,
            dst_port: s.dport,
            proto: Proto::Tcp,
            dscp: s.dscp,
            ecn: if self.params.ecn {
                ecn::ECT0
            } else {
                ecn::NOT_ECT
            },
            flow_id: conn,
            priority: s.app_bytes - seq,
            hash: s.hash,
            frame_bytes: net.frame_bytes(s.host, len + TCP_IP_HEADER_BYTES),
            payload_bytes: len,
            seq,
            ts_ps: ev.now(),
            ..Default::default()
        };
        let host = s.host;
        self.carry_reverse_ack(conn, &mut pkt);
        let frame = pkt.frame_bytes as u64;
        let s = &mut self.senders[conn as usize];
        s.nic_bytes += frame;
        if let Some(r) = &mut s.rack {
            r.sent(seq, seq + u64::from(len), ev.now());
        }
        if s.in_recovery {
            s.prr_out += u64::from(len);
        }
        let id = net.pool.alloc(pkt);
        hosts.send(net, ev, host, id);
    }

    /// On a bidirectional connection, `pkt` (of `conn`) carries the in-order ACK the other
    /// direction owes (not one that owes SACK blocks, which a data segment has no room for).
    fn carry_reverse_ack(&mut self, conn: u32, pkt: &mut Packet) {
        let rev = self.reverse_of(conn);
        if rev == crate::net::NONE {
            return;
        }
        let r = &self.receivers[rev as usize];
        if r.pending_segs > 0 && r.ooo.ranges().is_empty() {
            let (ack, ts_echo, flags) = self.take_ack(rev);
            pkt.ack = ack;
            pkt.ts_echo_ps = ts_echo;
            pkt.tcp_flags |= flags | tcp_flags::ACK_REVERSE;
        }
    }

    /// Segments of connections left their host NICs: sender that were held back by the
    /// small-queues limit may send again.
    pub fn on_nic_departures(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
    ) {
        while !net.nic_departures.is_empty() {
            let batch = std::mem::take(&mut net.nic_departures);
            for &(conn, bytes) in &batch {
                let s = &mut self.senders[conn as usize];
                let was_held = s.nic_bytes >= self.params.tsq_limit_bytes;
                debug_assert!(s.nic_bytes >= u64::from(bytes), "TSQ bytes below zero");
                s.nic_bytes -= u64::from(bytes);
                if s.fin == Fin::Retired {
                    // A closed connection's last segment left its NIC: the slot is free.
                    if s.nic_bytes == 0 {
                        self.free.push(std::cmp::Reverse(conn));
                    }
                    continue;
                }
                if was_held && s.nic_bytes < self.params.tsq_limit_bytes {
                    if s.in_recovery && self.params.sack {
                        self.sack_recovery_send(net, hosts, ev, conn);
                    } else {
                        self.send_more(net, hosts, ev, conn);
                    }
                }
            }
            if net.nic_departures.is_empty() {
                net.nic_departures = batch;
                net.nic_departures.clear();
            }
        }
    }

    /// Sends as much as the congestion and receive windows allow.
    fn send_more(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        conn: u32,
    ) {
        self.send_more_beyond(net, hosts, ev, conn, 0);
    }

    /// Sends as much as the congestion window plus `extra` bytes (limited transmit's
    /// allowance) and the receive window allow.
    fn send_more_beyond(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        conn: u32,
        extra: u64,
    ) {
        let mss = self.params.mss_bytes as u64;
        let rwnd = self.params.rcv_window_bytes;
        let tsq = self.params.tsq_limit_bytes;
        let mut sent = false;
        if self.senders[conn as usize].connecting {
            return; // the data waits for the handshake
        }
        loop {
            let s = &mut self.senders[conn as usize];
            if s.snd_nxt >= s.app_bytes || (tsq > 0 && s.nic_bytes >= tsq) {
                break;
            }
            // After a timeout the sender goes back to snd_una; what the receiver holds
            // (SACKed) is not sent again.
            if let Some((_, end)) = s.sacked.covering(s.snd_nxt) {
                s.snd_nxt = end;
                continue;
            }
            let wnd = (s.cwnd as u64 + extra).min(rwnd);
            let len = s.sacked.segment_at(s.snd_nxt, mss, s.app_bytes);
            let flight = s.snd_nxt - s.snd_una;
            if flight > 0 && flight + len > wnd {
                break;
            }
            let seq = s.snd_nxt;
            if seq < s.snd_max {
                s.retransmits += 1;
            }
            s.snd_nxt += len;
            s.snd_max = s.snd_max.max(s.snd_nxt);
            self.send_segment(net, hosts, ev, conn, seq, len as u32);
            sent = true;
        }
        if sent && self.senders[conn as usize].rto_deadline == NEVER {
            self.arm_rto(ev, conn);
        }
        let s = &self.senders[conn as usize];
        if s.fin == Fin::Wanted && s.snd_nxt >= s.app_bytes {
            self.send_fin(net, hosts, ev, conn);
        }
    }

    fn retransmit_first(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        conn: u32,
    ) {
        let mss = self.params.mss_bytes as u64;
        let s = &mut self.senders[conn as usize];
        let len = mss.min(s.snd_max - s.snd_una) as u32;
        let seq = s.snd_una;
        s.retransmits += 1;
        self.send_segment(net, hosts, ev, conn, seq, len);
    }

    /// After new data is acknowledged: stop the timer if nothing is outstanding, else restart it.
    fn rearm_rto(&mut self, ev: &mut impl TransportSched, conn: u32) {
        let s = &mut self.senders[conn as usize];
        if s.snd_una >= s.snd_max && s.fin != Fin::Sent {
            s.rto_deadline = NEVER;
        } else {
            self.arm_rto(ev, conn);
        }
    }

    fn arm_rto(&mut self, ev: &mut impl TransportSched, conn: u32) {
        let (host, rto) = (
            self.senders[conn as usize].host,
            self.senders[conn as usize].rto_ps,
        );
        let probe = self.probe_timeout_ps(conn).filter(|&p| p < rto);
        let now = ev.now();
        let mut deadline = self.timer_deadline(host, now, probe.unwrap_or(rto));
        let s = &self.senders[conn as usize];
        // RACK's reordering timer, when it comes first.
        let reo = s.rack.as_ref().map_or(NEVER, |r| r.deadline_ps);
        let reo = (reo != NEVER).then(|| self.timer_deadline(host, now, reo.max(now + 1) - now));
        let reo_first = reo.is_some_and(|r| r < deadline);
        if let Some(r) = reo.filter(|_| reo_first) {
            deadline = r;
        }
        let s = &mut self.senders[conn as usize];
        s.probe_armed = probe.is_some() && !reo_first;
        if let Some(r) = &mut s.rack {
            r.timer_armed = reo_first;
        }
        s.rto_deadline = deadline;
        arm_lazy(ev, &mut s.rto_event_at, deadline, conn, TIMER_RTO);
    }

    /// The tail loss probe's timeout for `conn`, when a probe is due before a timeout:
    /// probes on, SACK on, not in recovery, an RTT sampled, and no probe unanswered (Linux
    /// 3.10's `tcp_schedule_loss_probe`).
    fn probe_timeout_ps(&self, conn: u32) -> Option<TimePs> {
        let s = &self.senders[conn as usize];
        // Only in Linux's open state: not in recovery, nor going back over data after a
        // timeout (snd_nxt below snd_max).
        if !self.params.tlp
            || s.snd_max == s.snd_una
            || !self.params.sack
            || s.in_recovery
            || s.snd_nxt < s.snd_max
            || s.srtt_ps == 0
            || s.snd_una < s.tlp_high
        {
            return None;
        }
        let mut pto = 2 * s.srtt_ps;
        if s.snd_max - s.snd_una <= u64::from(self.params.mss_bytes) {
            pto = pto.max(s.srtt_ps * 3 / 2 + DELACK_MAX_PS);
        }
        Some(pto.max(PTO_MIN_PS))
    }

    /// The probe timeout passed with no ACK: one segment goes, new data if the windows
    /// allow, else the last segment again; then the retransmission timer.
    fn send_probe(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        conn: u32,
    ) {
        let mss = u64::from(self.params.mss_bytes);
        let rwnd = self.params.rcv_window_bytes;
        let s = &mut self.senders[conn as usize];
        s.tail_probes += 1;
        let (seq, len) = if s.snd_nxt < s.app_bytes && s.snd_nxt - s.snd_una + mss <= rwnd {
            let len = mss.min(s.app_bytes - s.snd_nxt);
            let seq = s.snd_nxt;
            s.snd_nxt += len;
            s.snd_max = s.snd_max.max(s.snd_nxt);
            (seq, len)
        } else {
            let seq = s.snd_max.saturating_sub(mss).max(s.snd_una);
            s.retransmits += 1;
            (seq, s.snd_max - seq)
        };
        s.tlp_high = s.snd_max;
        self.send_segment(net, hosts, ev, conn, seq, len as u32);
        self.arm_rto(ev, conn);
    }

    /// When a timer armed at `now` for `delay` on `host` fires: exactly then, or with a
    /// timer clock (`rto_granularity`, Linux's jiffies), at the tick `ceil(delay / tick)`
    /// ticks after the one `now` falls in (so between one tick less and `delay` rounded up).
    fn timer_deadline(&self, host: u32, now: TimePs, delay: TimePs) -> TimePs {
        let g = self.params.rto_granularity_ps;
        if g == 0 {
            return now + delay;
        }
        let phase = self.clock_phase(host);
        // Ticks at phase + k g; `next` counts the ticks up to and including the first
        // after `now`.
        let next = (now + g - phase) / g;
        phase + (next + delay.div_ceil(g) - 1) * g
    }

    /// The phase of `host`'s timer clock (each host's ticks start at their own time).
    fn clock_phase(&self, host: u32) -> TimePs {
        let g = self.params.rto_granularity_ps;
        crate::engine::rng::mix64(self.params.seed ^ u64::from(host).wrapping_mul(0x9E37_79B9)) % g
    }

    /// An RTT sample as the kernel measures it: exact, or with a timer clock, in whole
    /// ticks between sending and the ACK, at least one (Linux counts RTTs in jiffies).
    fn measured_rtt(&self, host: u32, sent_ps: TimePs, now: TimePs) -> TimePs {
        let g = self.params.rto_granularity_ps;
        if g == 0 {
            return now - sent_ps;
        }
        let phase = self.clock_phase(host);
        let tick = |t: TimePs| (t + g - phase) / g;
        (tick(now) - tick(sent_ps)).max(1) * g
    }

    /// The host whose half of connection `conn` timer `which` belongs to (the sender's
    /// retransmission timer, the receiver's delayed ACK).
    pub fn timer_host(&self, conn: u32, which: u8) -> u32 {
        if which == TIMER_DELACK {
            self.receivers[conn as usize].host
        } else {
            self.senders[conn as usize].host
        }
    }

    pub fn prefetch_timer(&self, conn: u32, which: u8) {
        if which == TIMER_DELACK {
            crate::engine::prefetch(&self.receivers, conn as usize);
        } else {
            crate::engine::prefetch(&self.senders, conn as usize);
        }
    }

    /// Prefetches both halves of connection `conn` (a packet of it is about to arrive).
    #[inline]
    pub fn prefetch_conn(&self, conn: u32) {
        crate::engine::prefetch(&self.receivers, conn as usize);
        crate::engine::prefetch(&self.senders, conn as usize);
    }

    /// A TCP packet reached host `host`: data goes to the receiver half, ACKs to the sender half.
    pub fn on_packet(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        pkt: &Packet,
    ) {
        if self.slots_closed && self.is_stale(pkt) {
            self.stale_packets += 1;
            return;
        }
        const CONTROL: u8 =
            tcp_flags::SYN | tcp_flags::HANDSHAKE_ACK | tcp_flags::FIN | tcp_flags::FIN_ACKED;
        if pkt.tcp_flags & CONTROL != 0 {
            return self.on_control(net, hosts, ev, pkt);
        }
        if pkt.payload_bytes > 0 {
            if pkt.tcp_flags & tcp_flags::ACK_REVERSE != 0 {
                self.reverse_ack(net, hosts, ev, pkt);
            }
            self.on_data(net, hosts, ev, pkt);
        } else {
            self.on_ack(net, hosts, ev, pkt);
        }
    }

    /// The acknowledgement a segment of `pkt.flow_id` carries for the reverse connection,
    /// taken first, as TCP processes a segment. Data never counts as a duplicate ACK (RFC
    /// 5681), so only new acknowledgements are taken.
    fn reverse_ack(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        pkt: &Packet,
    ) {
        let rev = self.reverse_of(pkt.flow_id);
        if pkt.ack > self.senders[rev as usize].snd_una {
            let ack = Packet {
                flow_id: rev,
                payload_bytes: 0,
                sack: [0; 4],
                ..*pkt
            };
            self.on_ack(net, hosts, ev, &ack);
        }
        if pkt.tcp_flags & tcp_flags::FIN_ACKED != 0 {
            self.fin_acked(rev, pkt.ack);
        }
    }

    fn on_ack(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        pkt: &Packet,
    ) {
        self.on_ack_untraced(net, hosts, ev, pkt);
        if self.senders[pkt.flow_id as usize].traced {
            self.record_trace(pkt.flow_id, ev.now());
        }
    }

    /// Records a traced connection's window, threshold, smoothed RTT and bytes in flight.
    #[cold]
    fn record_trace(&mut self, conn: u32, now: TimePs) {
        let s = &self.senders[conn as usize];
        let sample = CwndSample {
            time_ps: now,
            conn,
            cwnd_bytes: s.cwnd,
            ssthresh_bytes: s.ssthresh,
            srtt_ps: s.srtt_ps,
            in_flight_bytes: s.snd_max - s.snd_una,
        };
        self.trace.push(sample);
    }

    fn on_ack_untraced(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        pkt: &Packet,
    ) {
        if self.params.sack {
            return self.on_ack_sack(net, hosts, ev, pkt);
        }
        let conn = pkt.flow_id;
        let now = ev.now();
        let mss = self.params.mss_bytes as f64;
        let ack = pkt.ack;
        if ack > self.senders[conn as usize].snd_una {
            let (acked, ece) = self.advance_una(conn, now, pkt);
            let s = &mut self.senders[conn as usize];
            if s.in_recovery {
                if ack >= s.recover {
                    s.in_recovery = false;
                    s.cwnd = s.ssthresh;
                } else {
                    // Partial ACK: the next hole is lost too; retransmit it and deflate.
                    s.cwnd = (s.cwnd - acked + mss).max(mss);
                    s.dupacks = 0;
                    self.retransmit_first(net, hosts, ev, conn);
                    self.arm_rto(ev, conn);
                    self.send_more(net, hosts, ev, conn);
                    return;
                }
            } else {
                s.grow_window(acked, ece, mss, now);
            }
            s.dupacks = 0;
            self.rearm_rto(ev, conn);
            self.send_more(net, hosts, ev, conn);
        } else if ack == self.senders[conn as usize].snd_una
            && self.senders[conn as usize].snd_max > ack
        {
            let s = &mut self.senders[conn as usize];
            s.dupacks += 1;
            if s.dupacks == 3 && !s.in_recovery && (ack > s.recover || s.recover == 0) {
                let flight = (s.snd_max - s.snd_una) as f64;
                s.ssthresh = s.cc.on_loss(s.cwnd, flight, mss);
                s.cwnd = s.ssthresh + 3.0 * mss;
                s.in_recovery = true;
                s.recover = s.snd_max;
                self.retransmit_first(net, hosts, ev, conn);
                self.arm_rto(ev, conn);
            } else if s.in_recovery {
                s.cwnd += mss;
                self.send_more(net, hosts, ev, conn);
            } else if self.params.limited_transmit && s.dupacks <= 2 {
                // RFC 3042: each of the first two duplicate ACKs lets one new segment out.
                let extra = u64::from(s.dupacks) * self.params.mss_bytes as u64;
                self.send_more_beyond(net, hosts, ev, conn, extra);
            }
        }
    }

    /// An ACK of new data (NewReno and SACK alike): an RTT sample, then snd_una moves up to
    /// it. Returns the bytes newly acknowledged and whether the ACK echoes congestion (ECE).
    fn advance_una(&mut self, conn: u32, now: TimePs, pkt: &Packet) -> (f64, bool) {
        self.rtt_sample(conn, now, pkt.ts_echo_ps);
        let s = &mut self.senders[conn as usize];
        let acked = (pkt.ack - s.snd_una) as f64;
        s.snd_una = pkt.ack;
        s.snd_nxt = s.snd_nxt.max(pkt.ack);
        (acked, pkt.tcp_flags & tcp_flags::ECE != 0)
    }

    /// Takes an RTT sample from the echoed timestamp and updates the RTO (RFC 6298).
    fn rtt_sample(&mut self, conn: u32, now: TimePs, ts_echo_ps: TimePs) {
        if ts_echo_ps == NEVER || self.params.variant == Variant::PFabric {
            return;
        }
        let (rto_min, rto_max) = (self.params.rto_min_ps, self.params.rto_max_ps);
        let r = self.measured_rtt(self.senders[conn as usize].host, ts_echo_ps, now);
        let linux = self.params.linux_rto;
        let s = &mut self.senders[conn as usize];
        s.rtt.add(now - ts_echo_ps);
        if s.srtt_ps == 0 {
            s.srtt_ps = r;
            s.rttvar_ps = r / 2;
        } else {
            let diff = s.srtt_ps.abs_diff(r);
            s.rttvar_ps = (3 * s.rttvar_ps + diff) / 4;
            s.srtt_ps = (7 * s.srtt_ps + r) / 8;
        }
        s.rto_ps = if linux {
            // Linux keeps its variance term at least rto_min (`tcp_rtt_estimator`).
            (s.srtt_ps + (4 * s.rttvar_ps).max(rto_min)).min(rto_max)
        } else {
            (s.srtt_ps + (4 * s.rttvar_ps).max(1)).clamp(rto_min, rto_max)
        };
    }

    /// ACK processing with SACK (RFC 6675, simplified): the scoreboard marks what the
    /// receiver holds; a hole is lost once DupThresh segments' worth above it are SACKed;
    /// in recovery the sender keeps `pipe` (its estimate of bytes in the network) under
    /// cwnd, retransmitting lost holes first, then new data; the window's course through
    /// recovery is `TcpParams::recovery`'s.
    fn on_ack_sack(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        pkt: &Packet,
    ) {
        let conn = pkt.flow_id;
        let now = ev.now();
        let mss = self.params.mss_bytes as f64;
        let ack = pkt.ack;
        // What the receiver held before this ACK (for what it delivers: PRR, rate halving).
        let counts_delivery = self.params.recovery != Recovery::Rfc6675;
        let held_before = {
            let s = &self.senders[conn as usize];
            counts_delivery.then(|| s.snd_una + s.sacked.bytes_in(s.snd_una, s.snd_max))
        };
        {
            let s = &mut self.senders[conn as usize];
            for b in pkt.sack.chunks_exact(2) {
                if b[1] > 0 {
                    let start = ack + b[0] as u64;
                    s.sacked.insert(start, start + b[1] as u64);
                }
            }
        }
        let mut duplicate = false;
        if ack > self.senders[conn as usize].snd_una {
            let (acked, ece) = self.advance_una(conn, now, pkt);
            let s = &mut self.senders[conn as usize];
            s.high_rxt = s.high_rxt.max(ack);
            s.sacked.prune_below(ack);
            if s.in_recovery {
                if ack >= s.recover {
                    s.leave_recovery(self.params.recovery);
                }
            } else {
                s.grow_window(acked, ece, mss, now);
            }
            s.dupacks = 0;
            self.rearm_rto(ev, conn);
        } else {
            let s = &mut self.senders[conn as usize];
            if ack == s.snd_una && s.snd_max > s.snd_una {
                s.dupacks += 1;
                duplicate = true;
            }
        }
        let delivered = held_before.map_or(0, |before| {
            let s = &self.senders[conn as usize];
            (s.snd_una + s.sacked.bytes_in(s.snd_una, s.snd_max)).saturating_sub(before)
        });
        if self.senders[conn as usize].rack.is_some() {
            self.rack_detect(conn, now, pkt.ts_echo_ps);
        } else {
            self.senders[conn as usize].find_lost_retransmissions();
        }
        let entered = self.enter_recovery_if_due(conn);
        let s = &mut self.senders[conn as usize];
        if s.in_recovery {
            self.recovery_send(net, hosts, ev, conn, entered, delivered);
        } else if duplicate && self.params.limited_transmit && s.dupacks <= 2 {
            // RFC 3042: each of the first two duplicate ACKs lets one new segment out.
            let extra = u64::from(s.dupacks) * self.params.mss_bytes as u64;
            self.send_more_beyond(net, hosts, ev, conn, extra);
        } else {
            self.send_more(net, hosts, ev, conn);
        }
        let s = &self.senders[conn as usize];
        if s.rack.as_ref().is_some_and(|r| r.deadline_ps != NEVER) && s.snd_max > s.snd_una {
            self.arm_rto(ev, conn); // the reordering timer, if it comes first
        }
    }

    /// In SACK recovery, after an ACK that delivered `delivered` bytes or a RACK timer: the
    /// window first (the fast retransmission counts against it), then the retransmission
    /// that starts recovery (when it just `entered`) goes whatever it says, then what the
    /// window leaves room for.
    fn recovery_send(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        conn: u32,
        entered: bool,
        delivered: u64,
    ) {
        let mss = u64::from(self.params.mss_bytes);
        self.senders[conn as usize].recovery_window(self.params.recovery, delivered, mss);
        if entered {
            self.fast_retransmit(net, hosts, ev, conn);
        }
        self.sack_recovery_send(net, hosts, ev, conn);
    }

    /// Enters SACK recovery once DupThresh duplicate ACKs came or a hole is lost by the
    /// scoreboard (and the last recovery's data is acknowledged): the window threshold
    /// falls. Returns whether it did.
    fn enter_recovery_if_due(&mut self, conn: u32) -> bool {
        let mss = self.params.mss_bytes as f64;
        let mss_u = self.params.mss_bytes as u64;
        let s = &mut self.senders[conn as usize];
        let after_recover = s.snd_una > s.recover || s.recover == 0;
        let lost_found = match &s.rack {
            // RACK: once it has found a segment lost (DupThresh plays no part).
            Some(r) => r.lost_end > s.snd_una || !s.relost.is_empty(),
            None => {
                s.dupacks >= DUP_THRESH as u32
                    || s.sacked.lost_boundary(mss_u, DUP_THRESH) > s.snd_una
            }
        };
        if s.in_recovery || s.snd_max <= s.snd_una || !after_recover || !lost_found {
            return false;
        }
        let flight = (s.snd_max - s.snd_una) as f64;
        s.ssthresh = s.cc.on_loss(s.cwnd, flight, mss);
        match self.params.recovery {
            Recovery::Rfc6675 => s.cwnd = s.ssthresh,
            Recovery::Prr => {
                (s.prr_delivered, s.prr_out) = (0, 0);
                s.recover_fs = s.snd_max - s.snd_una;
            }
            Recovery::RateHalving => s.halving_odd = false,
        }
        s.in_recovery = true;
        s.recover = s.snd_max;
        true
    }

    /// The first hole goes again at once as recovery starts (RFC 6675 step 4.3).
    fn fast_retransmit(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        conn: u32,
    ) {
        let s = &self.senders[conn as usize];
        // With RACK a range retransmitted before goes again only once RACK finds it lost
        // again (Linux keeps its retransmitted mark): the first hole above them.
        let from = match &s.rack {
            None => s.snd_una,
            Some(_) => s.high_rxt.max(s.snd_una),
        };
        let hole = s.sacked.first_unsacked(from);
        let lost_end = s.pipe(u64::from(self.params.mss_bytes)).1;
        if s.rack.is_none() || (hole < lost_end && hole < s.snd_max) {
            self.resend_hole(net, hosts, ev, conn, hole);
        }
        self.arm_rto(ev, conn);
    }

    /// Sends in SACK recovery while pipe leaves room in cwnd: lost holes first (RFC 6675
    /// NextSeg rule 1), then new data (rule 2).
    fn sack_recovery_send(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        conn: u32,
    ) {
        let mss = self.params.mss_bytes as u64;
        let rwnd = self.params.rcv_window_bytes;
        let tsq = self.params.tsq_limit_bytes;
        loop {
            let s = &mut self.senders[conn as usize];
            if tsq > 0 && s.nic_bytes >= tsq {
                break;
            }
            let (pipe, lost_end, from) = s.pipe(mss);
            if (pipe + mss) as f64 > s.cwnd {
                break;
            }
            // Rule 0: a retransmission that was lost again.
            if let Some(i) = (0..s.relost.len()).min_by_key(|&i| s.relost[i].0) {
                let (a, b) = s.relost.swap_remove(i);
                let hole = s.sacked.first_unsacked(a.max(s.snd_una));
                if hole < b {
                    let len = s.sacked.segment_at(hole, mss, b);
                    if hole + len < b {
                        s.relost.push((hole + len, b));
                    }
                    self.sack_retransmit(net, hosts, ev, conn, hole, len);
                }
                continue;
            }
            let hole = s.sacked.first_unsacked(from);
            if hole < lost_end && hole < s.snd_max {
                self.resend_hole(net, hosts, ev, conn, hole);
                continue;
            }
            if s.snd_nxt < s.app_bytes && s.snd_nxt - s.snd_una < rwnd {
                let len = mss.min(s.app_bytes - s.snd_nxt);
                let seq = s.snd_nxt;
                s.snd_nxt += len;
                s.snd_max = s.snd_max.max(s.snd_nxt);
                self.send_segment(net, hosts, ev, conn, seq, len as u32);
                continue;
            }
            // Rule 3: nothing lost and no new data, but a hole lies below SACKed data.
            let highest_sacked = s.sacked.highest_end();
            if hole < highest_sacked && hole < s.snd_max {
                self.resend_hole(net, hosts, ev, conn, hole);
                continue;
            }
            break;
        }
        if self.senders[conn as usize].rto_deadline == NEVER
            && self.senders[conn as usize].snd_max > self.senders[conn as usize].snd_una
        {
            self.arm_rto(ev, conn);
        }
    }

    /// Resends the segment at `hole` (up to the next SACKed byte) and moves the
    /// retransmission mark past it (RFC 6675's HighRxt).
    fn resend_hole(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        conn: u32,
        hole: u64,
    ) {
        let mss = self.params.mss_bytes as u64;
        let s = &mut self.senders[conn as usize];
        let len = s.sacked.segment_at(hole, mss, s.snd_max);
        s.high_rxt = match s.rack {
            None => hole + len,
            // RACK: the mark only rises (what lies below was retransmitted).
            Some(_) => s.high_rxt.max(hole + len),
        };
        self.sack_retransmit(net, hosts, ev, conn, hole, len);
    }

    /// Resends [hole, hole + len) in SACK recovery and remembers it, with what had been sent
    /// by then, to find out whether it is lost again.
    fn sack_retransmit(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        conn: u32,
        hole: u64,
        len: u64,
    ) {
        let s = &mut self.senders[conn as usize];
        s.retransmits += 1;
        if s.rack.is_none() {
            // (RACK finds lost retransmissions by their send times instead.)
            s.rexmits.push((hole, hole + len, s.snd_max));
        }
        self.send_segment(net, hosts, ev, conn, hole, len as u32);
    }

    /// The retransmission timer of `conn` fired (lazily: the deadline may have moved).
    pub fn on_timer(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        conn: u32,
        which: u8,
    ) {
        if which == TIMER_DELACK {
            return self.delack_timer(net, hosts, ev, conn);
        }
        let s = &mut self.senders[conn as usize];
        if !lazy_due(ev, &mut s.rto_event_at, s.rto_deadline, conn, which) {
            return;
        }
        // The timer is spent: whatever it was armed for re-arms it.
        s.rto_deadline = NEVER;
        if s.rack.as_ref().is_some_and(|r| r.timer_armed) {
            return self.rack_timeout(net, hosts, ev, conn);
        }
        if s.probe_armed {
            return self.send_probe(net, hosts, ev, conn);
        }
        if s.connecting {
            return self.syn_timeout(net, hosts, ev, conn);
        }
        if s.fin == Fin::Sent {
            if s.snd_una >= s.snd_max {
                return self.fin_timeout(net, hosts, ev, conn);
            }
            s.fin = Fin::Wanted; // going back over the data, then the FIN again
        }
        self.timeout(net, hosts, ev, conn);
    }

    /// Receiver `conn`'s delayed-ACK timer event (lazy, like the retransmission timer's).
    fn delack_timer(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        conn: u32,
    ) {
        let r = &mut self.receivers[conn as usize];
        if !lazy_due(
            ev,
            &mut r.delack_event_at,
            r.delack_deadline,
            conn,
            TIMER_DELACK,
        ) {
            return;
        }
        // A delayed ACK no answer took along: Linux leaves interactive mode.
        r.pingpong = false;
        self.send_ack(net, hosts, ev, conn);
    }

    /// A retransmission timeout: back to one segment, go back N, double the timer
    /// (pFabric: same window, same timer).
    fn timeout(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        conn: u32,
    ) {
        let mss = self.params.mss_bytes as f64;
        let rto_max = self.params.rto_max_ps;
        let s = &mut self.senders[conn as usize];
        s.timeouts += 1;
        let flight = (s.snd_max - s.snd_una) as f64;
        let fixed = s.cc.variant == Variant::PFabric;
        s.ssthresh = s.cc.on_loss(s.cwnd, flight, mss);
        if !fixed {
            s.cwnd = mss;
        }
        s.in_recovery = false;
        s.dupacks = 0;
        s.recover = s.snd_max;
        s.snd_nxt = s.snd_una;
        s.rexmits.clear();
        s.relost.clear();
        if let Some(r) = &mut s.rack {
            // Everything goes again from snd_una: no range waits for its window.
            (r.deadline_ps, r.timer_armed) = (NEVER, false);
        }
        if !fixed {
            s.back_off(rto_max);
        }
        s.rto_deadline = NEVER;
        if s.traced {
            self.record_trace(conn, ev.now());
        }
        self.send_more(net, hosts, ev, conn);
    }

    fn on_data(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        pkt: &Packet,
    ) {
        let conn = pkt.flow_id;
        let delayed = self.params.delayed_ack;
        let ce = pkt.ecn == ecn::CE;
        let dctcp = self.params.variant == Variant::Dctcp;
        if dctcp && ce != self.receivers[conn as usize].ce_state {
            // DCTCP receiver: when the CE state flips, ACK what is pending with the old
            // state at once, so the sender sees exactly which bytes were marked.
            if self.receivers[conn as usize].pending_segs > 0 {
                self.send_ack(net, hosts, ev, conn);
            }
            self.receivers[conn as usize].ce_state = ce;
        }
        let r = &mut self.receivers[conn as usize];
        let (seq, end) = (pkt.seq, pkt.seq + pkt.payload_bytes as u64);
        if ce {
            r.ce_pending = true;
        }
        if r.pending_segs == 0 {
            r.pending_ts = pkt.ts_ps;
        }
        let mut ack_now = !delayed || (ce && !dctcp);
        if self.params.quickack {
            let gap_ps = self.quickack_gap_ps(conn);
            let r = &mut self.receivers[conn as usize];
            ack_now |= quick_ack(r, &self.params, ev.now(), seq, gap_ps);
        }
        let r = &mut self.receivers[conn as usize];
        if end <= r.rcv_nxt {
            ack_now = true; // a duplicate: tell the sender at once
        } else if seq <= r.rcv_nxt {
            let filled_hole = !r.ooo.ranges().is_empty();
            r.rcv_nxt = r.ooo.advance_through(end);
            self.notes.push(Note::Delivered {
                app: r.app,
                conn,
                total: r.rcv_nxt,
            });
            r.pending_segs += 1;
            if filled_hole || r.pending_segs >= 2 {
                ack_now = true;
            }
        } else {
            r.ooo.insert(seq, end);
            r.last_ooo = seq;
            ack_now = true; // out of order: a duplicate ACK at once
        }
        if ack_now {
            self.send_ack(net, hosts, ev, conn);
        } else {
            self.arm_delack(ev, conn);
        }
    }

    /// Starts receiver `conn`'s delayed-ACK timer unless it runs already.
    fn arm_delack(&mut self, ev: &mut impl TransportSched, conn: u32) {
        let r = &mut self.receivers[conn as usize];
        if r.delack_deadline != NEVER {
            return;
        }
        r.delack_deadline = ev.now() + self.params.delayed_ack_ps;
        arm_lazy(
            ev,
            &mut r.delack_event_at,
            r.delack_deadline,
            conn,
            TIMER_DELACK,
        );
    }

    /// How long a pause in `conn`'s data restarts quick-acks: Linux compares it with the
    /// receiving socket's RTO, which is the reverse half's on a bidirectional connection;
    /// a one-way connection's receiver has none, so the floor plus two timer ticks stands
    /// for it (a socket that sends small requests has about that).
    fn quickack_gap_ps(&self, conn: u32) -> TimePs {
        match self.reverse_of(conn) {
            crate::net::NONE => self.params.rto_min_ps + 2 * self.params.rto_granularity_ps,
            rev => self.senders[rev as usize].rto_ps,
        }
    }

    /// The receiving application answers on the reverse path: in a real stack the answer
    /// carries the pending ACK, so it goes now instead of after the delayed-ACK timer.
    pub fn ack_now_if_pending(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        conn: u32,
    ) {
        if self.receivers[conn as usize].pending_segs > 0 {
            self.send_ack(net, hosts, ev, conn);
        }
    }

    fn send_ack(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        conn: u32,
    ) {
        let (ack, ts_echo, flags) = self.take_ack(conn);
        let mut pkt = self.control_packet(net, ev.now(), conn, true, flags, ts_echo);
        pkt.ack = ack;
        let r = &self.receivers[conn as usize];
        if self.params.sack && !r.ooo.ranges().is_empty() {
            // First the block holding the segment received last, then the highest other.
            let blocks = r.ooo.ranges();
            let first = r.ooo.index_covering(r.last_ooo).unwrap_or(blocks.len() - 1);
            let second = (0..blocks.len()).rev().find(|&i| i != first);
            for (slot, i) in [Some(first), second].into_iter().enumerate() {
                if let Some(i) = i {
                    let (a, b) = blocks[i];
                    pkt.sack[2 * slot] = (a - r.rcv_nxt) as u32;
                    pkt.sack[2 * slot + 1] = (b - a) as u32;
                }
            }
        }
        let host = r.host;
        let id = net.pool.alloc(pkt);
        hosts.send(net, ev, host, id);
    }

    /// A packet of connection `conn` without data, sent now: from its sender's host
    /// (`reverse` false) or from its receiver's (an ACK, a SYN-ACK), with `flags` and an
    /// echoed timestamp.
    fn control_packet(
        &self,
        net: &Network,
        now: TimePs,
        conn: u32,
        reverse: bool,
        flags: u8,
        ts_echo_ps: TimePs,
    ) -> Packet {
        let s = &self.senders[conn as usize];
        let (from, to, sport, dport) = if reverse {
            (s.peer, s.host, s.dport, s.sport)
        } else {
            (s.host, s.peer, s.sport, s.dport)
        };
        Packet {
            src_host: from,
            dst_host: to,
            src_port: sport,
            dst_port: dport,
            proto: Proto::Tcp,
            dscp: s.dscp,
            tcp_flags: flags,
            flow_id: conn,
            hash: five_tuple_hash(from, to, sport, dport, Proto::Tcp),
            frame_bytes: net.frame_bytes(from, TCP_IP_HEADER_BYTES),
            ts_ps: now,
            ts_echo_ps,
            ..Default::default()
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

/// Arms a lazy timer (one event kept queued, the real deadline beside it, checked when the
/// event fires) for `deadline`: an event goes unless one comes at or before it.
fn arm_lazy(
    ev: &mut impl TransportSched,
    event_at: &mut TimePs,
    deadline: TimePs,
    conn: u32,
    which: u8,
) {
    if *event_at == NEVER || *event_at > deadline {
        *event_at = deadline;
        ev.schedule(deadline, TcpEvent::Timer { conn, which });
    }
}

/// A lazy timer's event fired now: whether its deadline has come. A stale event or a
/// disarmed timer is not due; a deadline moved later is not either, and its event goes
/// again.
fn lazy_due(
    ev: &mut impl TransportSched,
    event_at: &mut TimePs,
    deadline: TimePs,
    conn: u32,
    which: u8,
) -> bool {
    let now = ev.now();
    if now != *event_at {
        return false;
    }
    *event_at = NEVER;
    if deadline == NEVER {
        return false;
    }
    if now < deadline {
        arm_lazy(ev, event_at, deadline, conn, which);
        return false;
    }
    true
}

/// Linux's quick-ack mode (2.6.39 to 4.17) for a data segment starting at `seq` reaching
/// receiver `r` at `now`: a burst of immediate ACKs (half the receive window in segments,
/// at most 16; at the connection's first data half of the first window, 5) begins at the
/// connection's first data, after a gap longer than the timeout floor (Linux: longer than
/// the RTO, "the sender failed to restart its window"), and on any segment that is not the
/// next expected one (already held, partly held or out of order: `tcp_data_queue`), which
/// also ends interactive mode; in interactive mode (`Receiver::pingpong`: its side answers
/// within the delayed-ACK timeout) ACKs wait to ride on answers instead. Returns whether
/// this segment is ACKed at once.
fn quick_ack(r: &mut Receiver, p: &TcpParams, now: TimePs, seq: u64, gap_ps: TimePs) -> bool {
    let first = r.last_data_ps == NEVER;
    let window_segments = if first {
        u64::from(INITIAL_RCV_WINDOW_SEGMENTS)
    } else {
        p.rcv_window_bytes / u64::from(p.mss_bytes)
    };
    let burst = (window_segments / 2).min(u64::from(MAX_QUICKACKS)) as u32;
    let gap = first || now - r.last_data_ps > gap_ps;
    let unexpected = seq != r.rcv_nxt;
    if gap || unexpected {
        r.quick_acks = r.quick_acks.max(burst);
    }
    if unexpected {
        // Linux enters quick-ack mode, leaving interactive mode.
        r.pingpong = false;
    }
    r.last_data_ps = now;
    if r.quick_acks > 0 && !r.pingpong {
        r.quick_acks -= 1;
        return true;
    }
    false
}

#[path = "tcp_handshake.rs"]
mod handshake;

#[path = "tcp_close.rs"]
mod close;

#[path = "tcp_rack.rs"]
pub(super) mod rack;

#[cfg(test)]
#[path = "tcp_tests.rs"]
mod tests;
