//! pcap files from captured packets: the classic libpcap format with nanosecond
//! timestamps and Ethernet link type, so tcpdump, tshark and Wireshark read them.
//!
//! Headers are synthetic but valid: hosts get MAC 02:00:00:xx:xx:xx and IPv4 address
//! 10.x.y.z from their index plus one; IPv4 carries the packet's DSCP and ECN bits, length
//! and a correct header checksum; TCP carries ports, sequence and acknowledgement numbers
//! (the simulator's 64-bit byte offsets, modulo 2^32), flags as TCP has them (ACK on every
//! segment after the first SYN, as a real stack sends it, with the last acknowledgement
//! number the connection sent when the model's segment carries none), the advertised
//! window (`transport.rcv_window`, scaled, with the scale in SYNs), and options: timestamps
//! (the model's send and echoed times, in microseconds) and the SACK blocks an ACK
//! carries; UDP carries ports and length. Times start at `[metrics.capture] epoch`. The
//! simulator has no payload bytes, so each record holds the headers only (captured length)
//! and the frame's full length (original length), as a capture with a short snap length
//! would. TCP checksums are left 0 for the same reason.

use crate::net::capture::Captured;
use crate::packet::{tcp_flags, Proto, TCP_IP_HEADER_BYTES};
use std::collections::HashMap;

/// pcap magic for nanosecond timestamps.
const MAGIC_NS: u32 = 0xa1b2_3c4d;
const LINKTYPE_ETHERNET: u32 = 1;
const SNAPLEN: u32 = 65_535;
/// Ethernet header without the FCS (a capture does not show the FCS).
const ETH_HEADER_BYTES: usize = 14;

/// A host's IPv4 address: 10.0.0.0/8, host index + 1 (so no address ends in .0.0.0).
pub fn host_ipv4(host: u32) -> [u8; 4] {
    let v = host + 1;
    [10, (v >> 16) as u8, (v >> 8) as u8, v as u8]
}

fn host_mac(host: u32) -> [u8; 6] {
    let v = host + 1;
    [0x02, 0, 0, (v >> 16) as u8, (v >> 8) as u8, v as u8]
}

/// How a run's captures are written: the wall-clock time simulated time 0 stands for, and
/// the receive window TCP advertises.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PcapStyle {
    /// Unix seconds of simulated time 0.
    pub epoch_s: u64,
    pub rcv_window_bytes: u64,
}

impl PcapStyle {
    /// The window scale (RFC 7323) that fits the window in 16 bits.
    fn window_shift(&self) -> u8 {
        (0..=14u8)
            .find(|&s| self.rcv_window_bytes >> s <= u64::from(u16::MAX))
            .unwrap_or(14)
    }
}

/// The whole pcap file for one capture point's records.
pub fn write(records: &[Captured], style: &PcapStyle) -> Vec<u8> {
    let mut out = file_header();
    out.reserve(records.len() * 90);
    // Per direction of a connection, the last acknowledgement number it sent.
    let mut last_ack: HashMap<(u32, u32, u16, u16), u32> = HashMap::new();
    for r in records {
        let frame = headers(r, style, &mut last_ack);
        // The frame without its FCS, with the options the model carries (timestamps,
        // SACK blocks) but does not charge on the wire: its frames have 20-byte TCP headers.
        let options = match r.proto {
            Proto::TCP => frame.len() as u32 - (ETH_HEADER_BYTES as u32 + TCP_IP_HEADER_BYTES),
            _ => 0,
        };
        let orig = (r.frame_bytes - 4 + options).max(frame.len() as u32);
        append_record_after(&mut out, style.epoch_s, r.time_ps, &frame, orig);
    }
    out
}

/// Seconds since 1970-01-01T00:00:00Z of a UTC date, "YYYY-MM-DD" or
/// "YYYY-MM-DDTHH:MM:SS" (a trailing "Z" allowed), years 1970 to 2105 (pcap's seconds are
/// 32 bits). None for anything else.
pub fn utc_seconds(text: &str) -> Option<u64> {
    let text = text.strip_suffix('Z').unwrap_or(text);
    let (date, time) = text.split_once('T').unwrap_or((text, "00:00:00"));
    let num = |s: &str, lo: u64, hi: u64| -> Option<u64> {
        let v: u64 = s
            .parse()
            .ok()
            .filter(|_| s.bytes().all(|b| b.is_ascii_digit()))?;
        (lo..=hi).contains(&v).then_some(v)
    };
    let d: Vec<&str> = date.split('-').collect();
    let t: Vec<&str> = time.split(':').collect();
    let widths_ok = d.len() == 3
        && t.len() == 3
        && d[0].len() == 4
        && d[1..].iter().chain(&t).all(|p| p.len() == 2);
    if !widths_ok {
        return None;
    }
    let (y, m) = (num(d[0], 1970, 2105)?, num(d[1], 1, 12)?);
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let day = num(d[2], 1, month_days[m as usize - 1])?;
    let (hh, mm, ss) = (num(t[0], 0, 23)?, num(t[1], 0, 59)?, num(t[2], 0, 59)?);
    let leaps_before = |y: u64| (y - 1) / 4 - (y - 1) / 100 + (y - 1) / 400;
    let days_to_year = (y - 1970) * 365 + leaps_before(y) - leaps_before(1970);
    let days_to_month: u64 = month_days[..m as usize - 1].iter().sum();
    let days = days_to_year + days_to_month + day - 1;
    Some(((days * 24 + hh) * 60 + mm) * 60 + ss)
}

/// A pcap file's header: nanosecond timestamps, Ethernet frames.
pub fn file_header() -> Vec<u8> {
    let mut out = Vec::with_capacity(24);
    for v in [MAGIC_NS, 0x0004_0002] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    // version 2.4 is written as two u16 above; then thiszone, sigfigs, snaplen, linktype.
    for v in [0u32, 0, SNAPLEN, LINKTYPE_ETHERNET] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// One record: `frame` (as captured) at `time_ps`, of `orig_bytes` on the wire.
pub fn append_record(out: &mut Vec<u8>, time_ps: u64, frame: &[u8], orig_bytes: u32) {
    append_record_after(out, 0, time_ps, frame, orig_bytes)
}

/// One record at `time_ps` after Unix second `epoch_s`.
fn append_record_after(
    out: &mut Vec<u8>,
    epoch_s: u64,
    time_ps: u64,
    frame: &[u8],
    orig_bytes: u32,
) {
    let ns = time_ps / 1000;
    for v in [
        (epoch_s + ns / 1_000_000_000) as u32,
        (ns % 1_000_000_000) as u32,
        frame.len() as u32,
        orig_bytes,
    ] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(frame);
}

/// Ethernet, IPv4 and TCP or UDP headers of a captured packet.
fn headers(
    r: &Captured,
    style: &PcapStyle,
    last_ack: &mut HashMap<(u32, u32, u16, u16), u32>,
) -> Vec<u8> {
    let mut f = Vec::with_capacity(ETH_HEADER_BYTES + 72);
    f.extend_from_slice(&host_mac(r.dst_host));
    f.extend_from_slice(&host_mac(r.src_host));
    f.extend_from_slice(&0x0800u16.to_be_bytes());
    let l4 = if r.proto == Proto::TCP {
        tcp_header(r, style, last_ack)
    } else {
        let mut u = Vec::with_capacity(8);
        u.extend_from_slice(&r.src_port.to_be_bytes());
        u.extend_from_slice(&r.dst_port.to_be_bytes());
        u.extend_from_slice(&((8 + r.payload_bytes).min(u16::MAX as u32) as u16).to_be_bytes());
        u.extend_from_slice(&[0, 0]); // no checksum (allowed for UDP over IPv4)
        u
    };
    let ip_total = (20 + l4.len() as u32 + r.payload_bytes).min(u16::MAX as u32) as u16;
    let ip_start = f.len();
    f.extend_from_slice(&[0x45, (r.dscp << 2) | (r.ecn & 0b11)]);
    f.extend_from_slice(&ip_total.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x40, 0, 64, r.proto.0, 0, 0]); // id 0, DF, TTL 64
    f.extend_from_slice(&host_ipv4(r.src_host));
    f.extend_from_slice(&host_ipv4(r.dst_host));
    let sum = ipv4_checksum(&f[ip_start..ip_start + 20]);
    f[ip_start + 10..ip_start + 12].copy_from_slice(&sum.to_be_bytes());
    f.extend_from_slice(&l4);
    f
}

/// A TCP header with its options (timestamps; SACK blocks; the window scale in a SYN).
fn tcp_header(
    r: &Captured,
    style: &PcapStyle,
    last_ack: &mut HashMap<(u32, u32, u16, u16), u32>,
) -> Vec<u8> {
    let flags = tcp_header_flags(r.tcp_flags);
    let syn = flags & TCP_SYN != 0;
    let model_acks = r.tcp_flags
        & (tcp_flags::ACK
            | tcp_flags::ACK_REVERSE
            | tcp_flags::HANDSHAKE_ACK
            | tcp_flags::FIN_ACKED)
        != 0;
    let key = (r.src_host, r.dst_host, r.src_port, r.dst_port);
    let ack = if model_acks {
        // A FIN takes one sequence number: what acknowledges it reads one more.
        let a = (r.ack + u64::from(r.tcp_flags & tcp_flags::FIN_ACKED != 0)) as u32;
        last_ack.insert(key, a);
        a
    } else {
        last_ack.get(&key).copied().unwrap_or(0)
    };
    let mut opts = vec![1, 1, 8, 10]; // NOP, NOP, timestamps
    opts.extend_from_slice(&((r.ts_ps / 1_000_000) as u32).to_be_bytes());
    opts.extend_from_slice(&((r.ts_echo_ps / 1_000_000) as u32).to_be_bytes());
    let blocks: Vec<(u32, u32)> = r
        .sack
        .chunks(2)
        .filter(|b| b[1] > 0)
        .map(|b| (b[0], b[1]))
        .collect();
    if !blocks.is_empty() && !syn {
        opts.extend_from_slice(&[1, 1, 5, 2 + 8 * blocks.len() as u8]);
        for (offset, len) in blocks {
            let left = (r.ack + u64::from(offset)) as u32;
            opts.extend_from_slice(&left.to_be_bytes());
            opts.extend_from_slice(&left.wrapping_add(len).to_be_bytes());
        }
    }
    let shift = style.window_shift();
    if syn {
        opts.extend_from_slice(&[1, 3, 3, shift]); // NOP, window scale
    }
    // A SYN's window is never scaled (RFC 7323, 2.2).
    let window = if syn {
        style.rcv_window_bytes.min(u64::from(u16::MAX))
    } else {
        style.rcv_window_bytes >> shift
    } as u16;
    let mut t = Vec::with_capacity(20 + opts.len());
    t.extend_from_slice(&r.src_port.to_be_bytes());
    t.extend_from_slice(&r.dst_port.to_be_bytes());
    t.extend_from_slice(&(r.seq as u32).to_be_bytes());
    t.extend_from_slice(&ack.to_be_bytes());
    t.extend_from_slice(&[((20 + opts.len()) as u8 / 4) << 4, flags]);
    t.extend_from_slice(&window.to_be_bytes());
    t.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
    t.extend_from_slice(&opts);
    t
}

const TCP_SYN: u8 = 0x02;

/// Real TCP flag bits from the model's: SYN, ACK, ECE and CWR sit where TCP has them; the
/// model's "acknowledges the reverse connection" bit (where TCP has FIN), its
/// handshake-ACK bit (where TCP has RST) and its FIN-acknowledged bit become ACK; its FIN
/// bit becomes TCP's FIN.
fn tcp_header_flags(model: u8) -> u8 {
    const TCP_FIN: u8 = 0x01;
    let mut f = model & (tcp_flags::SYN | tcp_flags::ACK | tcp_flags::ECE | tcp_flags::CWR);
    // Every segment but the first SYN carries ACK (RFC 9293 3.10.7: once connected, ACK
    // is always sent), whether or not the model's segment acknowledges anything new.
    if model & tcp_flags::SYN == 0 || model & tcp_flags::ACK != 0 {
        f |= tcp_flags::ACK;
    }
    if model & tcp_flags::FIN != 0 {
        f |= TCP_FIN;
    }
    f
}

/// The IPv4 header checksum (RFC 791): ones' complement of the ones' complement sum (of
/// a header whose checksum field is zero).
pub fn ipv4_checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    const STYLE: PcapStyle = PcapStyle {
        epoch_s: 0,
        rcv_window_bytes: 1 << 20,
    };

    fn tcp_record() -> Captured {
        Captured {
            time_ps: 1_500_000_000_123_000,
            seq: (1 << 32) + 1460,
            ack: 7,
            capture: 0,
            src_host: 0,
            dst_host: 258,
            payload_bytes: 1460,
            frame_bytes: 1518,
            src_port: 1000,
            dst_port: 80,
            proto: Proto::TCP,
            dscp: 1,
            ecn: 0b11,
            tcp_flags: tcp_flags::ACK | tcp_flags::ECE,
            sack: [0; 4],
            ts_ps: 3_000_000,
            ts_echo_ps: 1_000_000,
        }
    }

    /// The TCP header of the single record of `r`'s file.
    fn tcp_of(r: Captured) -> Vec<u8> {
        write(&[r], &STYLE)[24 + 16 + 34..].to_vec()
    }

    #[test]
    fn header_fields_land_where_pcap_readers_expect_them() {
        let bytes = write(&[tcp_record()], &STYLE);
        assert_eq!(&bytes[0..4], &MAGIC_NS.to_le_bytes());
        let rec = &bytes[24..];
        assert_eq!(u32::from_le_bytes(rec[0..4].try_into().unwrap()), 1500); // seconds
        assert_eq!(u32::from_le_bytes(rec[4..8].try_into().unwrap()), 123); // nanoseconds
        assert_eq!(
            u32::from_le_bytes(rec[8..12].try_into().unwrap()),
            14 + 20 + 32
        ); // with timestamps
        assert_eq!(
            u32::from_le_bytes(rec[12..16].try_into().unwrap()),
            1514 + 12
        ); // no FCS, with options
        let frame = &rec[16..];
        assert_eq!(&frame[12..14], &[0x08, 0x00]);
        let ip = &frame[14..34];
        assert_eq!(ip[1], (1 << 2) | 0b11); // DSCP 1, CE
        assert_eq!(u16::from_be_bytes([ip[2], ip[3]]), 20 + 32 + 1460);
        assert_eq!(&ip[12..16], &[10, 0, 0, 1]);
        assert_eq!(&ip[16..20], &[10, 0, 1, 3]);
        assert_eq!(
            ipv4_checksum(ip),
            0,
            "a header with its checksum sums to zero"
        );
        let tcp = &frame[34..];
        assert_eq!(u32::from_be_bytes(tcp[4..8].try_into().unwrap()), 1460); // seq modulo 2^32
        assert_eq!(tcp[12] >> 4, 8, "32 bytes of header");
        assert_eq!(tcp[13], 0x50); // ACK + ECE
                                   // 1 MiB advertised with a scale of 5 (2^20 >> 5 = 32768).
        assert_eq!(u16::from_be_bytes([tcp[14], tcp[15]]), 32768);
        assert_eq!(&tcp[20..24], &[1, 1, 8, 10]);
        assert_eq!(u32::from_be_bytes(tcp[24..28].try_into().unwrap()), 3); // us
        assert_eq!(u32::from_be_bytes(tcp[28..32].try_into().unwrap()), 1);
    }

    #[test]
    fn every_segment_after_the_first_syn_carries_the_last_ack() {
        let mut ack = tcp_record();
        ack.tcp_flags = tcp_flags::ACK;
        ack.ack = 900;
        let (mut back, mut data) = (ack, tcp_record());
        // The data segment of the other direction carries no acknowledgement in the
        // model: it repeats the last one its side sent.
        std::mem::swap(&mut back.src_host, &mut back.dst_host);
        std::mem::swap(&mut back.src_port, &mut back.dst_port);
        data.tcp_flags = 0;
        let mut from_other = data;
        std::mem::swap(&mut from_other.src_host, &mut from_other.dst_host);
        std::mem::swap(&mut from_other.src_port, &mut from_other.dst_port);
        let file = write(&[data, ack, from_other], &STYLE);
        let mut at = 24;
        let mut acks = vec![];
        while at < file.len() {
            let len = u32::from_le_bytes(file[at + 8..at + 12].try_into().unwrap()) as usize;
            let tcp = &file[at + 16 + 34..at + 16 + len];
            assert_eq!(tcp[13] & 0x10, 0x10, "ACK on every segment");
            acks.push(u32::from_be_bytes(tcp[8..12].try_into().unwrap()));
            at += 16 + len;
        }
        assert_eq!(acks, vec![0, 900, 0]);
    }

    #[test]
    fn sack_blocks_and_the_syns_window_scale() {
        let mut r = tcp_record();
        r.sack = [1460, 2920, 8760, 1460];
        r.ack = 10_000;
        let tcp = tcp_of(r);
        assert_eq!(tcp[12] >> 4, (20 + 12 + 20) / 4);
        assert_eq!(&tcp[32..36], &[1, 1, 5, 18]);
        let word = |i: usize| u32::from_be_bytes(tcp[i..i + 4].try_into().unwrap());
        assert_eq!((word(36), word(40)), (11_460, 14_380));
        assert_eq!((word(44), word(48)), (18_760, 20_220));
        r.tcp_flags = tcp_flags::SYN;
        r.sack = [0; 4];
        let syn = tcp_of(r);
        assert_eq!(syn[13], 0x02, "the first SYN alone has no ACK");
        assert_eq!(
            u16::from_be_bytes([syn[14], syn[15]]),
            65535,
            "a SYN's window is not scaled"
        );
        assert_eq!(&syn[32..36], &[1, 3, 3, 5]);
    }

    #[test]
    fn flags_of_the_handshake_teardown_and_reverse_acks() {
        let mut r = tcp_record();
        for (model, real) in [
            (tcp_flags::ACK_REVERSE, 0x10),
            (tcp_flags::SYN, 0x02),
            (tcp_flags::SYN | tcp_flags::ACK, 0x12),
            (tcp_flags::ACK | tcp_flags::HANDSHAKE_ACK, 0x10),
            // Teardown: the FIN as TCP's FIN (with the ACK it carries), its ACK an ACK.
            (tcp_flags::FIN | tcp_flags::ACK, 0x11),
            (tcp_flags::FIN, 0x11),
            (tcp_flags::ACK | tcp_flags::FIN_ACKED, 0x10),
        ] {
            r.tcp_flags = model;
            assert_eq!(tcp_of(r)[13], real, "model flags {model:#x}");
        }
        // What acknowledges a FIN reads one more than the FIN's sequence number.
        r.tcp_flags = tcp_flags::ACK | tcp_flags::FIN_ACKED;
        r.ack = 500;
        assert_eq!(
            u32::from_be_bytes(tcp_of(r)[8..12].try_into().unwrap()),
            501
        );
    }

    #[test]
    fn udp_and_the_epoch() {
        let mut r = tcp_record();
        r.proto = Proto::UDP;
        r.payload_bytes = 100;
        let style = PcapStyle {
            epoch_s: utc_seconds("2026-11-27T12:00:00Z").unwrap(),
            ..STYLE
        };
        let bytes = write(&[r], &style);
        let udp = &bytes[24 + 16 + 34..];
        assert_eq!(udp.len(), 8);
        assert_eq!(u16::from_be_bytes([udp[4], udp[5]]), 108);
        // `date -u -d 2026-11-27T12:00:00Z +%s` is 1795780800; the record is 1500 s later.
        assert_eq!(
            u32::from_le_bytes(bytes[24..28].try_into().unwrap()),
            1_795_780_800 + 1500
        );
    }

    #[test]
    fn utc_dates() {
        assert_eq!(utc_seconds("1970-01-01"), Some(0));
        assert_eq!(utc_seconds("2000-03-01T00:00:00Z"), Some(951_868_800));
        assert_eq!(utc_seconds("2024-02-29"), Some(1_709_164_800));
        for bad in [
            "2023-02-29",
            "1969-12-31",
            "2026-13-01",
            "2026-1-01",
            "26-01-01",
            "x",
            "2026-01-01T24:00:00",
        ] {
            assert_eq!(utc_seconds(bad), None, "{bad}");
        }
    }
}
