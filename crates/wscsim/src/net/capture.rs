//! Packet capture at chosen ports: the header fields of every packet that leaves a
//! tapped port, with the time it was on that link, up to a cap per capture point. The
//! records become pcap files (`metrics::pcap`) at the end of a run.
//!
//! Port taps cost one branch per packet-hop on untapped ports (`Port::taps == 0`).

use crate::engine::TimePs;
use crate::packet::{Packet, Proto};

/// `Port::taps` bits: packets leaving the port are captured (capture id in the low bits)...
pub const TAP_CAPTURE: u32 = 1 << 31;
/// ...stamped with their arrival at the far end (a host's receive side is tapped on the
/// switch port that feeds it)...
pub const TAP_ARRIVAL: u32 = 1 << 30;
/// ...and the port's queue length is recorded at every change.
pub const TAP_QUEUE: u32 = 1 << 29;
pub const TAP_ID_MASK: u32 = (1 << 29) - 1;

/// What a tapped port records as `p` leaves it at `now` (`bytes_queued`: its queue after).
#[cold]
pub fn on_departure(
    taps: u32,
    port: u32,
    now: TimePs,
    bytes_queued: u64,
    p: &Packet,
    captures: &mut Captures,
    queue: &mut QueueTrace,
) {
    if taps & TAP_CAPTURE != 0 {
        let at = if taps & TAP_ARRIVAL != 0 {
            p.rx_done_ps
        } else {
            now
        };
        captures.record(taps & TAP_ID_MASK, at, p);
    }
    if taps & TAP_QUEUE != 0 {
        queue.record(now, port, bytes_queued);
    }
}

/// Queue length of traced ports at every enqueue and departure, up to a cap.
#[derive(Clone, Debug, Default)]
pub struct QueueTrace {
    /// (time, global port, bytes queued after the change).
    pub records: Vec<(TimePs, u32, u64)>,
    pub max_records: usize,
    pub truncated: bool,
}

impl QueueTrace {
    #[cold]
    pub fn record(&mut self, now: TimePs, port: u32, bytes: u64) {
        if self.records.len() >= self.max_records {
            self.truncated = true;
        } else {
            self.records.push((now, port, bytes));
        }
    }
}

/// The header fields of one captured packet (what a pcap needs; payload bytes are not
/// simulated, so captures hold headers only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Captured {
    pub time_ps: TimePs,
    pub seq: u64,
    pub ack: u64,
    pub capture: u32,
    pub src_host: u32,
    pub dst_host: u32,
    pub payload_bytes: u32,
    pub frame_bytes: u32,
    pub src_port: u16,
    pub dst_port: u16,
    pub proto: Proto,
    pub dscp: u8,
    pub ecn: u8,
    pub tcp_flags: u8,
    /// TCP's SACK blocks (`Packet::sack`) and timestamps.
    pub sack: [u32; 4],
    pub ts_ps: TimePs,
    pub ts_echo_ps: TimePs,
}

/// Capture points and what they recorded.
#[derive(Clone, Debug, Default)]
pub struct Captures {
    /// Name of each capture point ("host-3", "tor0-port2").
    pub names: Vec<String>,
    pub records: Vec<Captured>,
    /// Packets recorded and seen per capture point (seen > recorded when capped).
    pub recorded: Vec<u64>,
    pub seen: Vec<u64>,
    pub max_packets: u64,
}

impl Captures {
    /// Adds a capture point; returns its index.
    pub fn add(&mut self, name: String) -> u32 {
        self.names.push(name);
        self.recorded.push(0);
        self.seen.push(0);
        (self.names.len() - 1) as u32
    }

    /// Records `p` at capture point `capture` as on the link at `time_ps`.
    pub fn record(&mut self, capture: u32, time_ps: TimePs, p: &Packet) {
        let c = capture as usize;
        self.seen[c] += 1;
        if self.recorded[c] >= self.max_packets {
            return;
        }
        self.recorded[c] += 1;
        self.records.push(Captured {
            time_ps,
            seq: p.seq,
            ack: p.ack,
            capture,
            src_host: p.src_host,
            dst_host: p.dst_host,
            payload_bytes: p.payload_bytes,
            frame_bytes: p.frame_bytes,
            src_port: p.src_port,
            dst_port: p.dst_port,
            proto: p.proto,
            dscp: p.dscp,
            ecn: p.ecn,
            tcp_flags: p.tcp_flags,
            sack: p.sack,
            ts_ps: p.ts_ps,
            ts_echo_ps: p.ts_echo_ps,
        });
    }

    /// Each capture point's records in time order (ties in the order they were taken).
    pub fn by_point(&self) -> Vec<(&str, Vec<Captured>)> {
        let mut out: Vec<(&str, Vec<Captured>)> = self
            .names
            .iter()
            .map(|n| (n.as_str(), Vec::new()))
            .collect();
        for r in &self.records {
            out[r.capture as usize].1.push(*r);
        }
        for (_, v) in &mut out {
            v.sort_by_key(|r| r.time_ps);
        }
        out
    }
}
