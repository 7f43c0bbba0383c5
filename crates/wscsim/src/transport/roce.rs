//! RoCEv2: RDMA over UDP/IP, as an RDMA NIC sends a message on a reliable connected queue
//! pair (QP). The sender paces packets at its QP's rate, which its congestion control
//! sets (`transport::roce_cc`): DCQCN (`transport::dcqcn`: switches mark ECN, the receiver
//! returns CNPs, the sender cuts and recovers), TIMELY (`transport::timely`: the RTT the
//! ACKs measure), HPCC (`transport::hpcc`: switches' telemetry echoed in the ACKs, and a
//! window on the bytes in flight) or Swift (`transport::swift`: a delay target, a window).
//! The receiver (`roce_rx.rs`) takes packets in order and acknowledges them; a gap makes
//! it send a NAK once, and the sender goes back to the first missing byte and sends all
//! from there again (go-back-N, the reliable connection's rule), or, with selective
//! repeat (`recovery = "selective"`, newer NICs'), the receiver holds what arrives past
//! the gap and the sender sends only the packet the NAK names; a QP that hears nothing
//! for the local ACK timeout (4.096 us x 2^`timeout_exponent`, InfiniBand's rule) goes
//! back to the last acknowledged byte. Packets carry IPv4 (20 bytes), UDP (8), the base
//! transport header (12) and the invariant CRC (4) around a payload of at most `payload`
//! bytes (default 1024, RoCE's usual active MTU on a 1500-byte Ethernet MTU); an ACK or
//! NAK adds its 4-byte extended header and no payload, a CNP 16 reserved bytes.
//!
//! The NIC: a QP whose packet is due while its host's NIC already holds two frames waits
//! one frame time at line rate and tries again (so the QPs of a host take turns and the
//! NIC's queue stays short, as an RDMA NIC schedules QPs onto its port instead of queueing
//! what they offer). Simplified: no limit on bytes in flight except HPCC's and Swift's
//! windows, no read or atomic operations, ACKs for every
//! `ack_every` packets, no delayed-ACK timer; packets carry wscsim's protocol number 201
//! rather than UDP's with port 4791 (the transports are told apart by number).

use super::roce_cc::{Congestion, Control};
use super::{
    dcqcn, hpcc, swift, timely, HostPath, Note, TransportBuild, TransportKind, TransportSched, Wire,
};
use crate::check::{err, ConfigError};
use crate::engine::{TimePs, NEVER};
use crate::packet::{ecn, five_tuple_hash, framing, Packet, PktId, Proto};

/// Its protocol number (one IANA leaves unassigned).
pub const PROTO: Proto = Proto(201);
/// IPv4, UDP, the base transport header and the invariant CRC around a data payload.
pub const DATA_HEADER_BYTES: u32 = 20 + 8 + 12 + 4;
/// An ACK or NAK: the data headers and the ACK extended transport header.
pub const ACK_HEADER_BYTES: u32 = DATA_HEADER_BYTES + 4;
/// A congestion notification packet: the data headers and 16 reserved bytes.
pub const CNP_HEADER_BYTES: u32 = DATA_HEADER_BYTES + 16;

/// `dst_port` of each kind of packet (its opcode).
const DATA: u16 = 1;
const ACK: u16 = 2;
const NAK: u16 = 3;
const CNP: u16 = 4;

/// `[roce]`: RoCEv2's queue pairs.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Payload bytes per packet (default 1024B), 256B to 4096B.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<crate::units::Bytes>,
    /// Packets per ACK (default 1), 1 to 64.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ack_every: Option<i64>,
    /// Local ACK timeout 4.096 us x 2^N (default 14: 67 ms), 1 to 31.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_exponent: Option<i64>,
    /// "dcqcn" (default), "timely", "hpcc", "swift" or "none" (line rate always).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub congestion: Option<String>,
    /// DCQCN's parameters (`transport::dcqcn::Params`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dcqcn: Option<dcqcn::Params>,
    /// TIMELY's parameters (`transport::timely::Params`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timely: Option<timely::Params>,
    /// HPCC's parameters (`transport::hpcc::Params`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hpcc: Option<hpcc::Params>,
    /// Swift's parameters (`transport::swift::Params`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swift: Option<swift::Params>,
    /// Loss recovery: "go_back_n" (default) or "selective" (newer NICs' selective repeat).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery: Option<String>,
    /// DSCP of its packets (default 0; PFC's priority is the DSCP, at most 7), 0 to 63.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dscp: Option<i64>,
    /// Record each QP's rate as it sends, at most once per this interval (the
    /// `roce_rates` table; default: not recorded), above 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_samples: Option<crate::units::Duration>,
}

/// `[roce]` resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    pub payload_bytes: u32,
    pub ack_every: u32,
    pub timeout_ps: TimePs,
    pub congestion: Congestion,
    /// Selective repeat (the receiver keeps what arrives past a gap, the sender sends
    /// only what a NAK names), else go-back-N.
    pub selective: bool,
    pub dscp: u8,
    /// How often a QP's rate is recorded as it sends (None: never).
    pub rate_sample_ps: Option<TimePs>,
}

impl Default for Spec {
    fn default() -> Self {
        Params::default().resolve().expect("the defaults are valid")
    }
}

impl Params {
    /// Checks `[roce]` and fills in its defaults.
    pub fn resolve(&mut self) -> Result<Spec, ConfigError> {
        let payload = self.payload.get_or_insert(crate::units::Bytes(1024)).0;
        if !(256..=4096).contains(&payload) {
            return Err(err(
                "roce.payload",
                crate::units::Bytes(payload),
                "256B to 4096B",
            ));
        }
        let ack_every =
            crate::check::int_in("roce.ack_every", *self.ack_every.get_or_insert(1), 1, 64)?;
        let n = crate::check::int_in(
            "roce.timeout_exponent",
            *self.timeout_exponent.get_or_insert(14),
            1,
            31,
        )?;
        let cc = self.congestion.get_or_insert_with(|| "dcqcn".into());
        let congestion = Congestion::resolve(
            cc,
            &mut self.dcqcn,
            &mut self.timely,
            &mut self.hpcc,
            &mut self.swift,
        )?;
        let recovery = self.recovery.get_or_insert_with(|| "go_back_n".into());
        crate::check::one_of("roce.recovery", recovery, &["go_back_n", "selective"])?;
        let selective = recovery == "selective";
        let dscp = crate::check::int_in("roce.dscp", *self.dscp.get_or_insert(0), 0, 63)?;
        let rate_sample_ps = match self.rate_samples {
            Some(d) => Some(crate::check::positive_duration("roce.rate_samples", d)?),
            None => None,
        };
        Ok(Spec {
            rate_sample_ps,
            payload_bytes: payload as u32,
            ack_every,
            timeout_ps: 4_096_000 << n,
            congestion,
            selective,
            dscp: dscp as u8,
        })
    }
}

/// Checks what RoCE needs of the network: packets the hosts' links carry whole, and
/// what the congestion control needs: HPCC's telemetry names
/// every link's rate in 3 bits (`net::telemetry::RATES_BPS`), and rides in the packet
/// word pFabric ranks packets by.
pub fn check_network(spec: &Spec, net: &crate::net::Network) -> Result<(), ConfigError> {
    use crate::net::telemetry::{rate_code, RATES_BPS};
    super::check_packet_fits("roce.payload", spec.payload_bytes, DATA_HEADER_BYTES, net)?;
    if !spec.congestion.wants_telemetry() {
        return Ok(());
    }
    if let Some(p) = net.ports().iter().find(|p| rate_code(p.rate_bps).is_none()) {
        let rates: Vec<String> = RATES_BPS
            .iter()
            .map(|&r| format!("{}Gbps", r / 1_000_000_000))
            .collect();
        return Err(err(
            "roce.congestion",
            format!("\"hpcc\" on a link of {}", crate::units::Rate(p.rate_bps)),
            format!("\"hpcc\" only where every link runs at one of {}; another congestion control elsewhere", rates.join(", ")),
        ));
    }
    if net.schemes().iter().any(|s| s.name() == "pfabric") {
        return Err(err(
            "roce.congestion",
            "\"hpcc\" with switch.scheme pfabric",
            "\"hpcc\" with a scheme that does not rank packets by priority (pfabric does)",
        ));
    }
    Ok(())
}

/// A QP's timers: its next packet (pacing), DCQCN's increase timer, the ACK timeout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timer {
    Send,
    Increase,
    Timeout,
}

/// One of a QP's timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoceTimer {
    pub qp: u32,
    pub what: Timer,
}

/// One queue pair sending one message, both ends.
#[derive(Clone, Debug)]
struct Qp {
    src: u32,
    dst: u32,
    app: Option<u32>,
    hash: u32,
    size: u64,
    /// Sender: the next byte to send, the bytes acknowledged, and the most ever sent.
    next: u64,
    acked: u64,
    high: u64,
    start_ps: TimePs,
    /// Receiver: the next byte it takes, packets since its last ACK, and the byte a NAK
    /// was sent for (NEVER: none outstanding).
    expected: u64,
    unacked_packets: u32,
    nak_for: u64,
    /// Selective repeat: the receiver's packets held past the gap (a bit per packet
    /// number, allocated at the first), and the sender's packets a NAK asked for again.
    held: Vec<u64>,
    resend: Vec<u64>,
    cc: Control,
    np: dcqcn::NotifyPoint,
    line_bps: f64,
    /// When the next packet may leave (its rate), and the live timers (NEVER: none).
    next_send_ps: TimePs,
    send_at: TimePs,
    increase_at: TimePs,
    timeout_at: TimePs,
    /// The local ACK timeout runs out at this time unless an ACK moves it.
    deadline_ps: TimePs,
    /// When its last packet left, and its bits on the wire (to pace again when the rate
    /// rises).
    last_send_ps: TimePs,
    last_wire_bits: f64,
    /// When the last byte was acknowledged.
    done_ps: Option<TimePs>,
    /// When its rate was last recorded (`roce.rate_samples`; NEVER: not yet).
    sampled_ps: TimePs,
}

impl Qp {
    /// Its rate now: its control's, or its line rate without congestion control.
    fn rate_bps(&self) -> f64 {
        self.cc.rate_bps().unwrap_or(self.line_bps)
    }
}

/// What the QPs did, over the run.
#[derive(Clone, Copy, Debug, Default)]
pub struct RoceStats {
    pub data_packets: u64,
    /// Bytes sent again (after a NAK or a timeout).
    pub resent_bytes: u64,
    pub naks: u64,
    pub cnps: u64,
    pub timeouts: u64,
}

pub struct Roce {
    pub spec: Spec,
    qps: Vec<Qp>,
    /// (time, QP, rate in bit/s) as the QPs sent, when `roce.rate_samples` asks.
    rates: Vec<(TimePs, u32, f64)>,
    /// Round-trip times the ACKs measured (NIC to NIC: a data packet's send to its ACK;
    /// none under HPCC, whose ACKs carry telemetry where the send time would be echoed).
    pub rtts: super::stats::DelayHistogram,
    notes: Vec<Note>,
    pub stats: RoceStats,
}

impl Roce {
    /// Opens a QP from `src` to `dst` that sends `bytes` now; `app` hears at `dst` of the
    /// bytes taken in order (`Note::Delivered`). Its id.
    pub fn send(
        &mut self,
        path: &mut HostPath<'_, impl TransportSched>,
        src: u32,
        dst: u32,
        app: Option<u32>,
        bytes: u64,
    ) -> u32 {
        let id = self.qps.len() as u32;
        let nic = path.net.nic_port(src);
        let line_bps = path.net.ports()[nic as usize].rate_bps as f64;
        let base_rtt_ps = if self.spec.congestion.needs_base_rtt() {
            self.base_rtt_ps(path, src, dst)
        } else {
            0
        };
        self.qps.push(Qp {
            src,
            dst,
            app,
            hash: five_tuple_hash(src, dst, id as u16, 4791, PROTO),
            size: bytes,
            next: 0,
            acked: 0,
            high: 0,
            start_ps: path.now(),
            expected: 0,
            unacked_packets: 0,
            nak_for: NEVER,
            held: Vec::new(),
            resend: Vec::new(),
            cc: Control::new(
                &self.spec.congestion,
                line_bps,
                base_rtt_ps,
                self.spec.payload_bytes,
            ),
            np: Default::default(),
            line_bps,
            next_send_ps: path.now(),
            send_at: NEVER,
            increase_at: NEVER,
            timeout_at: NEVER,
            deadline_ps: NEVER,
            last_send_ps: 0,
            last_wire_bits: 0.0,
            done_ps: None,
            sampled_ps: NEVER,
        });
        self.pump(path, id);
        id
    }

    /// When QP `qp`'s last byte was acknowledged, if it has been.
    pub fn done_ps(&self, qp: u32) -> Option<TimePs> {
        self.qps[qp as usize].done_ps
    }

    /// A round trip from `src` to `dst` on the empty network: a full data packet out and
    /// an ACK back, each through every hop store-and-forward.
    fn base_rtt_ps(&self, path: &HostPath<'_, impl TransportSched>, src: u32, dst: u32) -> TimePs {
        let data = path.frame_bytes(src, self.spec.payload_bytes + DATA_HEADER_BYTES);
        let ack = path.frame_bytes(dst, ACK_HEADER_BYTES);
        path.net.one_way_ps(src, dst, data) + path.net.one_way_ps(dst, src, ack)
    }

    /// QP `qp`'s rate now (its line rate without congestion control).
    pub fn rate_bps(&self, qp: u32) -> f64 {
        let q = &self.qps[qp as usize];
        q.rate_bps()
    }

    /// Sends QP `qp`'s next packet if its rate and its NIC allow, and sets the timer for
    /// the one after.
    fn pump(&mut self, path: &mut HostPath<'_, impl TransportSched>, qp: u32) {
        let now = path.now();
        let q = &self.qps[qp as usize];
        // A packet a NAK asked for again goes first, whatever the window (it is in it).
        let seq = q.resend.first().copied().unwrap_or(q.next);
        if seq >= q.size || q.done_ps.is_some() {
            return;
        }
        // A full window waits for an ACK; it holds at least `ack_every` packets, or the
        // ACK that would open it never comes.
        let least = u64::from(self.spec.ack_every) * u64::from(self.spec.payload_bytes);
        if q.resend.is_empty()
            && q.cc
                .window_bytes()
                .is_some_and(|w| q.next - q.acked >= w.max(least))
        {
            return;
        }
        let payload = (q.size - seq).min(u64::from(self.spec.payload_bytes)) as u32;
        let frame = path.frame_bytes(q.src, payload + DATA_HEADER_BYTES);
        let nic = &path.net.ports()[path.net.nic_port(q.src) as usize];
        let wire_bits = f64::from(frame + nic.wire_overhead_bytes) * 8.0;
        let at = if now < q.next_send_ps {
            q.next_send_ps
        } else if nic.pkts_queued >= 2 {
            now + (wire_bits * 1e12 / q.line_bps).ceil() as TimePs
        } else {
            self.send_data(path, qp, payload, frame);
            let q = &mut self.qps[qp as usize];
            (q.last_send_ps, q.last_wire_bits) = (now, wire_bits);
            let rate = q.rate_bps();
            q.next_send_ps = now + (wire_bits * 1e12 / rate).ceil() as TimePs;
            if q.next >= q.size && q.resend.is_empty() {
                return;
            }
            q.next_send_ps
        };
        self.arm(path, qp, Timer::Send, at);
    }

    /// Schedules QP `qp`'s timer `what` at `at`, unless it is already due then.
    fn arm(
        &mut self,
        path: &mut HostPath<'_, impl TransportSched>,
        qp: u32,
        what: Timer,
        at: TimePs,
    ) {
        let q = &mut self.qps[qp as usize];
        let slot = match what {
            Timer::Send => &mut q.send_at,
            Timer::Increase => &mut q.increase_at,
            Timer::Timeout => &mut q.timeout_at,
        };
        if *slot != at {
            *slot = at;
            path.ev
                .schedule(at, super::TransportEvent::from(RoceTimer { qp, what }));
        }
    }

    fn send_data(
        &mut self,
        path: &mut HostPath<'_, impl TransportSched>,
        qp: u32,
        payload: u32,
        frame: u32,
    ) {
        let now = path.now();
        let q = &mut self.qps[qp as usize];
        // A packet a NAK asked for again, else the next new one.
        let again = (!q.resend.is_empty()).then(|| q.resend.remove(0));
        let p = Packet {
            src_host: q.src,
            dst_host: q.dst,
            dst_port: DATA,
            proto: PROTO,
            flow_id: qp,
            hash: q.hash,
            frame_bytes: frame,
            payload_bytes: payload,
            seq: again.unwrap_or(q.next),
            dscp: self.spec.dscp,
            ecn: if self.spec.congestion.ecn_capable() {
                ecn::ECT0
            } else {
                ecn::NOT_ECT
            },
            framing: if self.spec.congestion.wants_telemetry() {
                framing::INT
            } else {
                0
            },
            ts_ps: now,
            ..Default::default()
        };
        if again.is_some() || q.next < q.high {
            self.stats.resent_bytes += u64::from(payload);
        }
        if again.is_none() {
            q.next += u64::from(payload);
            q.high = q.high.max(q.next);
        }
        self.stats.data_packets += 1;
        if let Some(every) = self.spec.rate_sample_ps {
            if q.sampled_ps == NEVER || now >= q.sampled_ps + every {
                q.sampled_ps = now;
                self.rates.push((now, qp, q.rate_bps()));
            }
        }
        if let (Control::Dcqcn(rp), Some(s)) = (&mut q.cc, self.spec.congestion.dcqcn()) {
            rp.on_sent(s, now, u64::from(frame));
        }
        let src = q.src;
        path.transmit(src, p);
        self.extend_deadline(path, qp, false);
    }

    /// Starts the ACK timeout when the QP sends with none running (`progress`: an ACK
    /// moved the acknowledged point, and the timeout counts from now). One timer runs at
    /// a time; it finds the deadline moved and waits for it.
    fn extend_deadline(
        &mut self,
        path: &mut HostPath<'_, impl TransportSched>,
        qp: u32,
        progress: bool,
    ) {
        let q = &mut self.qps[qp as usize];
        if q.timeout_at == NEVER || progress {
            q.deadline_ps = path.now() + self.spec.timeout_ps;
        }
        if q.timeout_at == NEVER {
            let at = q.deadline_ps;
            self.arm(path, qp, Timer::Timeout, at);
        }
    }

    /// The QP's rate changed: its next packet leaves at the new rate's pace from its last
    /// send (sooner, by a timer set again; later, when the timer set finds it early).
    fn repace(&mut self, path: &mut HostPath<'_, impl TransportSched>, qp: u32) {
        let now = path.now();
        let q = &mut self.qps[qp as usize];
        if q.next >= q.size {
            return;
        }
        let rate = q.rate_bps();
        let paced = (q.last_send_ps + (q.last_wire_bits * 1e12 / rate).ceil() as TimePs).max(now);
        let sooner = paced < q.next_send_ps;
        q.next_send_ps = paced;
        if sooner && q.send_at != NEVER {
            self.arm(path, qp, Timer::Send, paced);
        }
    }

    /// At the sender: an ACK moves the acknowledged point; a NAK sends everything from
    /// its byte again.
    fn on_ack(&mut self, path: &mut HostPath<'_, impl TransportSched>, p: &Packet, nak: bool) {
        let qp = p.flow_id;
        let now = path.now();
        if p.int_count() == 0 {
            // (HPCC's ACKs carry telemetry in the echo's word instead.)
            self.rtts.add(now.saturating_sub(p.ts_echo_ps));
        }
        let q = &mut self.qps[qp as usize];
        if p.seq > q.acked {
            q.acked = p.seq;
            // A late ACK may acknowledge past a go-back's restart point.
            q.next = q.next.max(q.acked);
            if q.acked >= q.size {
                q.done_ps = Some(now);
                return;
            }
            self.extend_deadline(path, qp, true);
        }
        let q = &mut self.qps[qp as usize];
        if q.cc.on_ack(&self.spec.congestion, now, p, p.seq, q.next) {
            self.repace(path, qp);
        }
        let q = &mut self.qps[qp as usize];
        // A NAK's go-back sends at once; a window that opened sends if nothing waits.
        let mut send = q.send_at == NEVER;
        if nak {
            q.cc.on_loss(&self.spec.congestion, now, false);
        }
        if nak && p.seq >= q.acked && p.seq < q.next {
            if !self.spec.selective {
                q.next = p.seq;
                send = true;
            } else if !q.resend.contains(&p.seq) {
                q.resend.push(p.seq); // only the packet the NAK names
                send = true;
            }
        }
        if send {
            self.pump(path, qp);
        }
    }

    fn on_cnp(&mut self, path: &mut HostPath<'_, impl TransportSched>, qp: u32) {
        let now = path.now();
        let (Some(&s), q) = (self.spec.congestion.dcqcn(), &mut self.qps[qp as usize]) else {
            return;
        };
        let Control::Dcqcn(rp) = &mut q.cc else {
            return;
        };
        let cut = rp.on_cnp(&s, now);
        if cut || (rp.limited() && q.increase_at == NEVER) {
            // A cut starts the increase timer again (Zhu et al.'s rate-increase events
            // count from the last cut).
            self.arm(path, qp, Timer::Increase, now + s.time_reset_ps);
        }
    }
}

impl TransportKind for Roce {
    const NAME: &'static str = "RoCEv2";
    const PROTO: Proto = PROTO;
    type Event = RoceTimer;

    fn build(b: &TransportBuild) -> Self {
        Roce {
            spec: b.messages.roce.clone(),
            qps: Vec::new(),
            rates: Vec::new(),
            rtts: Default::default(),
            notes: Vec::new(),
            stats: RoceStats::default(),
        }
    }

    fn on_packet(&mut self, path: &mut HostPath<'_, impl TransportSched>, pkt: PktId) {
        let p = path.take(pkt);
        match p.dst_port {
            DATA => self.on_data(path, &p),
            ACK => self.on_ack(path, &p, false),
            NAK => self.on_ack(path, &p, true),
            _ => self.on_cnp(path, p.flow_id),
        }
    }

    fn on_timer(&mut self, path: &mut HostPath<'_, impl TransportSched>, e: RoceTimer) {
        let now = path.now();
        let q = &mut self.qps[e.qp as usize];
        match e.what {
            Timer::Send if q.send_at == now => {
                q.send_at = NEVER;
                self.pump(path, e.qp);
            }
            Timer::Increase if q.increase_at == now => {
                q.increase_at = NEVER;
                let (Some(&s), Control::Dcqcn(rp)) = (self.spec.congestion.dcqcn(), &mut q.cc)
                else {
                    return;
                };
                rp.on_timer(&s, now);
                if rp.limited() && q.done_ps.is_none() {
                    self.arm(path, e.qp, Timer::Increase, now + s.time_reset_ps);
                }
                self.repace(path, e.qp);
            }
            Timer::Timeout if q.timeout_at == now && q.done_ps.is_none() => {
                q.timeout_at = NEVER;
                if now < q.deadline_ps {
                    let at = q.deadline_ps;
                    return self.arm(path, e.qp, Timer::Timeout, at);
                }
                self.stats.timeouts += 1;
                q.cc.on_loss(&self.spec.congestion, now, true);
                // Everything from the last acknowledged byte again, under either recovery:
                // a timeout says the NAKs were lost too (a selective receiver ACKs what it
                // already holds).
                q.resend.clear();
                q.next = q.acked;
                q.next_send_ps = now;
                self.pump(path, e.qp);
            }
            _ => {} // a timer set again since, or of a finished QP
        }
    }

    fn timer_host(&self, e: RoceTimer) -> u32 {
        self.qps[e.qp as usize].src
    }

    /// Unused in this run: the QPs are one list, opened by the flows workload's global
    /// events (which keep hosts on the simulation's thread).
    fn runs_in_partitions(&self) -> bool {
        self.qps.is_empty()
    }

    fn has_notes(&self) -> bool {
        !self.notes.is_empty()
    }

    fn take_notes(&mut self, into: &mut Vec<Note>) {
        into.append(&mut self.notes);
    }

    /// The `roce` table, and `roce_rates` when the rates were recorded (`roce_report.rs`).
    fn tables(&self, out: &mut Vec<crate::table::Table>) {
        self.report_tables(out);
    }

    fn headline(
        &self,
        _net: &crate::net::Network,
        h: &mut serde_json::Map<String, serde_json::Value>,
    ) {
        self.report_headline(h);
    }
}

#[path = "roce_report.rs"]
mod report;

#[path = "roce_rx.rs"]
mod rx;

#[cfg(test)]
#[path = "roce_tests.rs"]
mod tests;
