//! pcap files from captured packets: the classic libpcap format with nanosecond
//! timestamps and Ethernet link type, so tcpdump, tshark and Wireshark read them.
//!
//! Headers are synthetic but valid: hosts get MAC 02:00:00:xx:xx:xx and IPv4 address
//! 10.x.y.z from their index plus one; IPv4 carries the packet's DSCP and ECN bits, length
//! and a correct header checksum; TCP carries ports, sequence and acknowledgement numbers
//! (the simulator's 64-bit byte offsets, modulo 2^32) and the ACK, ECE and CWR flags; UDP
//! carries ports and length. The simulator has no payload bytes, so each record holds the
//! headers only (captured length) and the frame's full length (original length), as a
//! capture with a short snap length would. TCP checksums are left 0 for the same reason.

use crate::net::capture::Captured;
use crate::packet::{
    tcp_flags, Proto, ETH_HEADER_FCS_BYTES, TCP_IP_HEADER_BYTES, UDP_IP_HEADER_BYTES,
};

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

/// The whole pcap file for one capture point's records.
pub fn write(records: &[Captured]) -> Vec<u8> {
    let mut out = file_header();
    out.reserve(records.len() * 70);
    for r in records {
        let frame = headers(r);
        let orig = (r.frame_bytes - 4).max(frame.len() as u32); // the frame without its FCS
        append_record(&mut out, r.time_ps, &frame, orig);
    }
    out
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
    let ns = time_ps / 1000;
    for v in [
        (ns / 1_000_000_000) as u32,
        (ns % 1_000_000_000) as u32,
        frame.len() as u32,
        orig_bytes,
    ] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(frame);
}

/// Ethernet, IPv4 and TCP or UDP headers of a captured packet.
fn headers(r: &Captured) -> Vec<u8> {
    let mut f = Vec::with_capacity(ETH_HEADER_BYTES + 40);
    f.extend_from_slice(&host_mac(r.dst_host));
    f.extend_from_slice(&host_mac(r.src_host));
    f.extend_from_slice(&0x0800u16.to_be_bytes());
    let l4_header = if r.proto == Proto::Tcp {
        TCP_IP_HEADER_BYTES - 20
    } else {
        UDP_IP_HEADER_BYTES - 20
    };
    let ip_total = (20 + l4_header + r.payload_bytes).min(u16::MAX as u32) as u16;
    let ip_start = f.len();
    f.extend_from_slice(&[0x45, (r.dscp << 2) | (r.ecn & 0b11)]);
    f.extend_from_slice(&ip_total.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x40, 0, 64, r.proto as u8, 0, 0]); // id 0, DF, TTL 64
    f.extend_from_slice(&host_ipv4(r.src_host));
    f.extend_from_slice(&host_ipv4(r.dst_host));
    let sum = ipv4_checksum(&f[ip_start..ip_start + 20]);
    f[ip_start + 10..ip_start + 12].copy_from_slice(&sum.to_be_bytes());
    f.extend_from_slice(&r.src_port.to_be_bytes());
    f.extend_from_slice(&r.dst_port.to_be_bytes());
    if r.proto == Proto::Tcp {
        f.extend_from_slice(&(r.seq as u32).to_be_bytes());
        // A FIN takes one sequence number: what acknowledges it reads one more.
        let ack = r.ack + u64::from(r.tcp_flags & tcp_flags::FIN_ACKED != 0);
        f.extend_from_slice(&(ack as u32).to_be_bytes());
        f.extend_from_slice(&[5 << 4, tcp_header_flags(r.tcp_flags)]);
        f.extend_from_slice(&[0xff, 0xff, 0, 0, 0, 0]); // window, checksum, urgent pointer
    } else {
        f.extend_from_slice(&((8 + r.payload_bytes).min(u16::MAX as u32) as u16).to_be_bytes());
        f.extend_from_slice(&[0, 0]); // no checksum (allowed for UDP over IPv4)
    }
    debug_assert!(f.len() as u32 <= r.frame_bytes.max(ETH_HEADER_FCS_BYTES + 40));
    f
}

/// Real TCP flag bits from the model's: SYN, ACK, ECE and CWR sit where TCP has them; the
/// model's "acknowledges the reverse connection" bit (where TCP has FIN), its
/// handshake-ACK bit (where TCP has RST) and its FIN-acknowledged bit become ACK; its FIN
/// bit becomes TCP's FIN.
fn tcp_header_flags(model: u8) -> u8 {
    const TCP_FIN: u8 = 0x01;
    let mut f = model & (tcp_flags::SYN | tcp_flags::ACK | tcp_flags::ECE | tcp_flags::CWR);
    let acks = tcp_flags::ACK_REVERSE | tcp_flags::HANDSHAKE_ACK | tcp_flags::FIN_ACKED;
    if model & acks != 0 {
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
            proto: Proto::Tcp,
            dscp: 1,
            ecn: 0b11,
            tcp_flags: tcp_flags::ACK | tcp_flags::ECE,
        }
    }

    #[test]
    fn header_fields_land_where_pcap_readers_expect_them() {
        let bytes = write(&[tcp_record()]);
        assert_eq!(&bytes[0..4], &MAGIC_NS.to_le_bytes());
        let rec = &bytes[24..];
        assert_eq!(u32::from_le_bytes(rec[0..4].try_into().unwrap()), 1500); // seconds
        assert_eq!(u32::from_le_bytes(rec[4..8].try_into().unwrap()), 123); // nanoseconds
        assert_eq!(u32::from_le_bytes(rec[8..12].try_into().unwrap()), 54); // captured: 14 + 20 + 20
        assert_eq!(u32::from_le_bytes(rec[12..16].try_into().unwrap()), 1514); // the frame without FCS
        let frame = &rec[16..];
        assert_eq!(&frame[12..14], &[0x08, 0x00]);
        let ip = &frame[14..34];
        assert_eq!(ip[1], (1 << 2) | 0b11); // DSCP 1, CE
        assert_eq!(u16::from_be_bytes([ip[2], ip[3]]), 1500);
        assert_eq!(&ip[12..16], &[10, 0, 0, 1]);
        assert_eq!(&ip[16..20], &[10, 0, 1, 3]);
        assert_eq!(
            ipv4_checksum(ip),
            0,
            "a header with its checksum sums to zero"
        );
        let tcp = &frame[34..54];
        assert_eq!(u32::from_be_bytes(tcp[4..8].try_into().unwrap()), 1460); // seq modulo 2^32
        assert_eq!(tcp[13], 0x50); // ACK + ECE
    }

    #[test]
    fn udp_and_reverse_acks() {
        let mut r = tcp_record();
        r.tcp_flags = tcp_flags::ACK_REVERSE;
        let bytes = write(&[r]);
        assert_eq!(bytes[24 + 16 + 34 + 13], tcp_flags::ACK, "never FIN");
        // A handshake: SYN as is, SYN-ACK as is, the third packet an ACK (never RST).
        for (model, real) in [
            (tcp_flags::SYN, 0x02),
            (tcp_flags::SYN | tcp_flags::ACK, 0x12),
            (tcp_flags::ACK | tcp_flags::HANDSHAKE_ACK, 0x10),
            // Teardown: the FIN as TCP's FIN (with the ACK it carries), its ACK an ACK.
            (tcp_flags::FIN | tcp_flags::ACK, 0x11),
            (tcp_flags::ACK | tcp_flags::FIN_ACKED, 0x10),
        ] {
            r.tcp_flags = model;
            assert_eq!(write(&[r])[24 + 16 + 34 + 13], real);
        }
        // What acknowledges a FIN reads one more than the FIN's sequence number.
        r.tcp_flags = tcp_flags::ACK | tcp_flags::FIN_ACKED;
        r.ack = 500;
        let tcp = &write(&[r])[24 + 16 + 34..];
        assert_eq!(u32::from_be_bytes(tcp[8..12].try_into().unwrap()), 501);
        r.proto = Proto::Udp;
        r.payload_bytes = 100;
        let bytes = write(&[r]);
        let udp = &bytes[24 + 16 + 34..];
        assert_eq!(udp.len(), 8);
        assert_eq!(u16::from_be_bytes([udp[4], udp[5]]), 108);
    }
}
