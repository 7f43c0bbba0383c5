//! Real Ethernet frames as the emulator carries them: what the fabric needs from their
//! headers (addresses, protocol, ports, DSCP and ECN), and the one change it makes to them
//! (an ECN mark written into the IPv4 header, its checksum updated as RFC 1624 says).

use crate::packet::{ecn, Proto};

pub const ETH_HEADER_BYTES: usize = 14;
const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_ARP: u16 = 0x0806;

/// Locally administered, unicast MAC addresses: 02:57:53:00:hh:hh for host hhhh (bytes
/// 0x57 0x53 are "WS").
pub fn host_mac(host: u32) -> [u8; 6] {
    let h = (host as u16).to_be_bytes();
    [0x02, 0x57, 0x53, 0x00, h[0], h[1]]
}

/// The host a MAC address names, if it is one of `host_mac`'s.
pub fn mac_host(mac: &[u8]) -> Option<u32> {
    (mac.len() == 6 && mac[..4] == [0x02, 0x57, 0x53, 0x00])
        .then(|| u32::from(u16::from_be_bytes([mac[4], mac[5]])))
}

/// What the fabric reads from a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameInfo {
    pub src_host: u32,
    pub dst_host: u32,
    /// Bytes after the Ethernet header (the IP packet, or an ARP message).
    pub ip_bytes: u32,
    /// The IP protocol as the fabric's schemes see it (TCP, UDP; anything else as UDP).
    pub proto: Proto,
    pub src_port: u16,
    pub dst_port: u16,
    pub dscp: u8,
    pub ecn: u8,
    /// The IPv4 payload length as TCP or UDP see it (0 for other frames).
    pub payload_bytes: u32,
}

/// Why a frame is not carried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Shorter than an Ethernet header.
    Runt,
    /// Broadcast, multicast, or to a MAC address of no emulated host.
    NotToAHost,
    /// Neither IPv4 nor ARP (IPv6 is switched off in the hosts' namespaces).
    OtherEthertype,
}

/// Reads a frame `src_host` sent.
pub fn parse(src_host: u32, frame: &[u8]) -> Result<FrameInfo, Refused> {
    if frame.len() < ETH_HEADER_BYTES {
        return Err(Refused::Runt);
    }
    let dst_host = mac_host(&frame[..6]).ok_or(Refused::NotToAHost)?;
    let ethertype = u16::from_be_bytes([frame[12], frame[13]]);
    let ip = &frame[ETH_HEADER_BYTES..];
    let mut info = FrameInfo {
        src_host,
        dst_host,
        ip_bytes: ip.len() as u32,
        proto: Proto::UDP,
        src_port: 0,
        dst_port: 0,
        dscp: 0,
        ecn: ecn::NOT_ECT,
        payload_bytes: 0,
    };
    match ethertype {
        ETHERTYPE_IPV4 if ip.len() >= 20 => {
            let ihl = usize::from(ip[0] & 0x0f) * 4;
            info.dscp = ip[1] >> 2;
            info.ecn = ip[1] & 0b11;
            let total = usize::from(u16::from_be_bytes([ip[2], ip[3]])).min(ip.len());
            info.proto = match ip[9] {
                6 => Proto::TCP,
                _ => Proto::UDP,
            };
            if (ip[9] == 6 || ip[9] == 17) && ip.len() >= ihl + 4 {
                info.src_port = u16::from_be_bytes([ip[ihl], ip[ihl + 1]]);
                info.dst_port = u16::from_be_bytes([ip[ihl + 2], ip[ihl + 3]]);
            }
            info.payload_bytes = total.saturating_sub(ihl) as u32;
            Ok(info)
        }
        ETHERTYPE_IPV4 | ETHERTYPE_ARP => Ok(info),
        _ => Err(Refused::OtherEthertype),
    }
}

/// Writes Congestion Experienced into an IPv4 frame whose sender marked it ECN-capable,
/// updating the header checksum incrementally (RFC 1624, eqn. 3). Returns whether it did.
pub fn mark_ce(frame: &mut [u8]) -> bool {
    if frame.len() < ETH_HEADER_BYTES + 20
        || u16::from_be_bytes([frame[12], frame[13]]) != ETHERTYPE_IPV4
    {
        return false;
    }
    let ip = &mut frame[ETH_HEADER_BYTES..];
    if ip[1] & 0b11 == ecn::NOT_ECT || ip[1] & 0b11 == ecn::CE {
        return false;
    }
    let old_word = u16::from_be_bytes([ip[0], ip[1]]);
    ip[1] |= ecn::CE;
    let new_word = u16::from_be_bytes([ip[0], ip[1]]);
    let old_sum = u16::from_be_bytes([ip[10], ip[11]]);
    // HC' = ~(~HC + ~m + m'), in one's-complement arithmetic.
    let mut sum = u32::from(!old_sum) + u32::from(!old_word) + u32::from(new_word);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The IPv4 header checksum computed from scratch.
    fn checksum(ip: &[u8]) -> u16 {
        let mut sum: u32 = ip[..20]
            .chunks(2)
            .enumerate()
            .filter(|(i, _)| *i != 5)
            .map(|(_, w)| u32::from(u16::from_be_bytes([w[0], w[1]])))
            .sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    /// An Ethernet frame from host 1 to host 2 carrying a UDP datagram of `payload` bytes
    /// from port 5000 to port 6000 with the given TOS byte.
    fn udp_frame(tos: u8, payload: usize) -> Vec<u8> {
        let mut f = Vec::new();
        f.extend(host_mac(2));
        f.extend(host_mac(1));
        f.extend(ETHERTYPE_IPV4.to_be_bytes());
        let total = (20 + 8 + payload) as u16;
        let mut ip = vec![0x45, tos];
        ip.extend(total.to_be_bytes());
        ip.extend([0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 2, 10, 0, 0, 3]);
        let c = checksum(&ip);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        f.extend(ip);
        f.extend(5000u16.to_be_bytes());
        f.extend(6000u16.to_be_bytes());
        f.extend((8 + payload as u16).to_be_bytes());
        f.extend([0, 0]);
        f.extend(vec![0xab; payload]);
        f
    }

    #[test]
    fn macs_name_hosts_and_nothing_else() {
        assert_eq!(mac_host(&host_mac(4095)), Some(4095));
        assert_eq!(mac_host(&[0xff; 6]), None);
        assert_eq!(mac_host(&[0x02, 0x57, 0x53, 0x01, 0, 1]), None);
    }

    #[test]
    fn a_udp_frame_gives_its_ports_dscp_and_ecn() {
        let f = udp_frame((10 << 2) | ecn::ECT0, 100);
        let info = parse(1, &f).unwrap();
        assert_eq!((info.src_host, info.dst_host), (1, 2));
        assert_eq!((info.src_port, info.dst_port), (5000, 6000));
        assert_eq!(
            (info.dscp, info.ecn, info.proto),
            (10, ecn::ECT0, Proto::UDP)
        );
        assert_eq!(info.ip_bytes, 128);
        assert_eq!(info.payload_bytes, 108);
    }

    #[test]
    fn frames_to_no_host_or_of_other_kinds_are_refused() {
        let mut f = udp_frame(0, 10);
        f[..6].copy_from_slice(&[0xff; 6]);
        assert_eq!(parse(1, &f), Err(Refused::NotToAHost));
        let mut f = udp_frame(0, 10);
        f[12..14].copy_from_slice(&0x86ddu16.to_be_bytes());
        assert_eq!(parse(1, &f), Err(Refused::OtherEthertype));
        assert_eq!(parse(1, &f[..10]), Err(Refused::Runt));
    }

    #[test]
    fn a_ce_mark_keeps_the_checksum_right() {
        for tos in [ecn::ECT0, 0b01, (46 << 2) | ecn::ECT0, 0xfe] {
            let mut f = udp_frame(tos, 64);
            assert!(mark_ce(&mut f), "tos {tos:#x}");
            let ip = &f[ETH_HEADER_BYTES..];
            assert_eq!(ip[1], tos | ecn::CE);
            assert_eq!(u16::from_be_bytes([ip[10], ip[11]]), checksum(ip));
        }
    }

    #[test]
    fn only_ecn_capable_packets_are_marked() {
        let mut f = udp_frame(46 << 2, 64);
        let before = f.clone();
        assert!(!mark_ce(&mut f));
        assert_eq!(f, before);
    }
}
