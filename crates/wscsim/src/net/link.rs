//! Link technologies: what a link adds to a packet and how fast it carries it.
//!
//! A technology sets the data rate (after line encoding), the link-layer framing an IP
//! packet gets (header and trailer bytes per frame, a minimum frame, and for PCIe the
//! segmentation of a packet into transaction-layer packets of at most `segment_bytes`),
//! the bytes each frame costs on the wire but not in a buffer (preamble, delimiters,
//! inter-frame gap), the largest IP packet (MTU) and a default one-way latency. Sources for
//! every figure are in docs/model-reference.md ("Link technologies").
//!
//! Simplified: a packet's buffer size (`frame_bytes`) is set once, by the technology of its
//! source host's link; each link then adds its own wire overhead. A path that mixes
//! technologies with different headers keeps the first link's header size. PCIe flow
//! control credits, acknowledgement DLLPs and InfiniBand credits are not modelled.

use crate::engine::{TimePs, PS_PER_NS};

/// How a link carries frames. `Copy` and small: ports keep what the per-packet path needs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkTech {
    /// The preset's name, as a scenario gives it.
    pub name: &'static str,
    /// Which family of links it belongs to (what behaviour depends on, never the name).
    pub family: LinkFamily,
    /// The generic preset of its family: any rate the scenario gives is taken.
    pub any_rate: bool,
    /// Data rate after line encoding, bits per second.
    pub rate_bps: u64,
    /// Line encoding as (data bits, line bits): 8b/10b is (8, 10). The signalling rate is
    /// `rate_bps * line / data`.
    pub encoding: (u32, u32),
    /// Link-layer header and trailer bytes per frame (Ethernet: 14 + 4 FCS).
    pub header_bytes: u32,
    /// A shorter frame is padded to this (Ethernet: 64 bytes, header to FCS).
    pub min_frame_bytes: u32,
    /// The largest payload of one frame when a packet is split into several (PCIe's maximum
    /// TLP payload); 0 when a packet is one frame.
    pub segment_bytes: u32,
    /// Bytes per frame on the wire only: preamble, start delimiter, inter-frame gap.
    pub wire_overhead_bytes: u32,
    /// Largest IP packet one frame (or frame sequence) carries.
    pub mtu_bytes: u32,
    /// Default one-way latency of a link of this kind (cable and PHY).
    pub latency_ps: TimePs,
}

/// The families of link technologies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkFamily {
    Ethernet,
    InfiniBand,
    /// PCIe used as a network (the PCIe paper's fabric): DMA engines, TLP framing.
    Pcie,
}

const fn ethernet(name: &'static str, rate_bps: u64, encoding: (u32, u32), mtu: u32) -> LinkTech {
    LinkTech {
        name,
        family: LinkFamily::Ethernet,
        any_rate: false,
        rate_bps,
        encoding,
        header_bytes: 18,
        min_frame_bytes: 64,
        segment_bytes: 0,
        wire_overhead_bytes: 20,
        mtu_bytes: mtu,
        latency_ps: 500 * PS_PER_NS,
    }
}

const G: u64 = 1_000_000_000;

/// Generic Ethernet at whatever rate the scenario gives (standard frames): the default.
pub const ETHERNET: LinkTech = LinkTech {
    any_rate: true,
    ..ethernet("ethernet", 10 * G, (64, 66), 1500)
};
/// Ethernet jumbo frames at any rate: a 9,000-byte MTU (9,014-byte frames without FCS).
pub const ETHERNET_JUMBO: LinkTech = LinkTech {
    any_rate: true,
    ..ethernet("ethernet_jumbo", 10 * G, (64, 66), 9000)
};

/// Every preset, by name.
pub const PRESETS: &[LinkTech] = &[
    ETHERNET,
    ETHERNET_JUMBO,
    ethernet("1gbe", G, (8, 10), 1500),
    ethernet("1gbe_jumbo", G, (8, 10), 9000),
    ethernet("2.5gbe", 2_500_000_000, (8, 10), 1500),
    ethernet("2.5gbe_jumbo", 2_500_000_000, (8, 10), 9000),
    ethernet("10gbe", 10 * G, (64, 66), 1500),
    ethernet("10gbe_jumbo", 10 * G, (64, 66), 9000),
    ethernet("40gbe", 40 * G, (64, 66), 1500),
    ethernet("40gbe_jumbo", 40 * G, (64, 66), 9000),
    ethernet("100gbe", 100 * G, (64, 66), 1500),
    ethernet("100gbe_jumbo", 100 * G, (64, 66), 9000),
    // InfiniBand QDR 4x: 40 Gbit/s signalling, 8b/10b, so 32 Gbit/s of data. IP over IB
    // (RFC 4391, datagram mode over a 4,096-byte IB MTU): LRH 8 + BTH 12 + DETH 8 + ICRC 4 +
    // VCRC 2 bytes per packet plus the 4-byte IPoIB header; start and end delimiters on the
    // wire.
    LinkTech {
        name: "ib_qdr_4x",
        family: LinkFamily::InfiniBand,
        any_rate: false,
        rate_bps: 32 * G,
        encoding: (8, 10),
        header_bytes: 38,
        min_frame_bytes: 0,
        segment_bytes: 0,
        wire_overhead_bytes: 2,
        mtu_bytes: 4092,
        latency_ps: 100 * PS_PER_NS,
    },
    pcie_gen2("pcie_gen2_x1", 1),
    pcie_gen2("pcie_gen2_x2", 2),
    pcie_gen2("pcie_gen2_x4", 4),
    pcie_gen2("pcie_gen2_x8", 8),
    pcie_gen2("pcie_gen2_x12", 12),
    pcie_gen2("pcie_gen2_x16", 16),
    pcie_gen2("pcie_gen2_x32", 32),
];

/// The link widths PCIe defines (lanes per link).
pub const PCIE_LANES: &[u32] = &[1, 2, 4, 8, 12, 16, 32];

/// PCIe Gen2 with `lanes` lanes: 5 GT/s per lane, 8b/10b, so 4 Gbit/s of data per lane each
/// way (x4: 2 GB/s, the paper's figure). A packet travels as memory-write TLPs of at most
/// 256 payload bytes, each with 24 bytes of framing, sequence number, 4-DW header and LCRC.
const fn pcie_gen2(name: &'static str, lanes: u64) -> LinkTech {
    LinkTech {
        name,
        family: LinkFamily::Pcie,
        any_rate: false,
        rate_bps: 4 * G * lanes,
        encoding: (8, 10),
        header_bytes: 24,
        min_frame_bytes: 0,
        segment_bytes: 256,
        wire_overhead_bytes: 0,
        mtu_bytes: 4096,
        latency_ps: 100 * PS_PER_NS,
    }
}

/// The most power a link's two ends draw: the NIC (or adapter) at the server and the
/// switch port at the other end. Maxima, as the sources give them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkPower {
    pub nic_w: f64,
    pub switch_port_w: f64,
}

/// Table 1 of Byrne et al. (HotPower 2011), which lists per-node network power as one NIC
/// plus one switch port: 1GbE 1.9 + 2.0 W (Intel Gigabit CT; HP ProCurve 2650), 10GbE
/// 10 + 7.3 W (Intel NE020; Brocade TurboIron 24X), InfiniBand QDR 15.5 + 5.6 W (Mellanox
/// ConnectX MHQH19; IS5024), PCIe "< 1 W" per x4 node (PEX8609 adapter and a port of the
/// PEX8696), taken as 1 W split evenly and scaled by lanes.
const TABLE_1: &[(&str, LinkPower)] = &[
    (
        "1gbe",
        LinkPower {
            nic_w: 1.9,
            switch_port_w: 2.0,
        },
    ),
    (
        "10gbe",
        LinkPower {
            nic_w: 10.0,
            switch_port_w: 7.3,
        },
    ),
    (
        "ib_qdr_4x",
        LinkPower {
            nic_w: 15.5,
            switch_port_w: 5.6,
        },
    ),
];

impl LinkTech {
    pub fn by_name(name: &str) -> Option<LinkTech> {
        PRESETS.iter().find(|t| t.name == name).copied()
    }

    /// The names a scenario may give, for error messages.
    pub fn names() -> Vec<&'static str> {
        PRESETS.iter().map(|t| t.name).collect()
    }

    /// Bytes an IP packet of `ip_bytes` takes in a buffer once framed for this link.
    #[inline]
    pub fn frame_bytes(&self, ip_bytes: u32) -> u32 {
        let frames = if self.segment_bytes == 0 {
            1
        } else {
            ip_bytes.div_ceil(self.segment_bytes).max(1)
        };
        (ip_bytes + frames * self.header_bytes).max(self.min_frame_bytes)
    }

    /// Bytes on the wire for a buffered frame of `frame_bytes` (adds the per-frame wire
    /// overhead once per segment).
    #[inline]
    pub fn wire_bytes(&self, frame_bytes: u32) -> u32 {
        frame_bytes + self.wire_overhead_bytes
    }

    /// This technology's power at `rate_bps` (Table 1), or None where no source gives one
    /// (2.5, 40 and 100 GbE; generic Ethernet at another rate than 1 or 10 Gbit/s).
    pub fn power(&self, rate_bps: u64) -> Option<LinkPower> {
        if let Some(lanes) = self.name.strip_prefix("pcie_gen2_x") {
            let per_lane_w = 0.5 / 4.0 * lanes.parse::<f64>().ok()?;
            return Some(LinkPower {
                nic_w: per_lane_w,
                switch_port_w: per_lane_w,
            });
        }
        let family = match self.name {
            "ethernet" | "ethernet_jumbo" if rate_bps == G => "1gbe",
            "ethernet" | "ethernet_jumbo" if rate_bps == 10 * G => "10gbe",
            n => n.strip_suffix("_jumbo").unwrap_or(n),
        };
        TABLE_1.iter().find(|(n, _)| *n == family).map(|&(_, p)| p)
    }

    /// Signalling rate on the line (before encoding).
    pub fn line_rate_bps(&self) -> u64 {
        self.rate_bps * self.encoding.1 as u64 / self.encoding.0 as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ethernet_framing_matches_the_standard() {
        let t = LinkTech::by_name("10gbe").unwrap();
        assert_eq!(t.frame_bytes(1500), 1518);
        assert_eq!(t.wire_bytes(1518), 1538);
        assert_eq!(t.frame_bytes(40), 64, "padded to the minimum frame");
        assert_eq!(
            LinkTech::by_name("1gbe_jumbo").unwrap().frame_bytes(9000),
            9018
        );
        assert_eq!(t.line_rate_bps(), 10_312_500_000);
    }

    #[test]
    fn pcie_splits_packets_into_tlps() {
        let t = LinkTech::by_name("pcie_gen2_x4").unwrap();
        // 1,500 bytes: 6 TLPs of at most 256 bytes, 24 bytes each.
        assert_eq!(t.frame_bytes(1500), 1500 + 6 * 24);
        assert_eq!(t.frame_bytes(256), 280);
        assert_eq!(t.frame_bytes(257), 257 + 48);
        // 2 GB/s of data: 5 GT/s x 4 lanes, 8b/10b.
        assert_eq!(t.rate_bps, 16_000_000_000);
        assert_eq!(t.line_rate_bps(), 20_000_000_000);
    }

    #[test]
    fn infiniband_qdr_carries_32_gbits() {
        let t = LinkTech::by_name("ib_qdr_4x").unwrap();
        assert_eq!(t.line_rate_bps(), 40_000_000_000);
        assert_eq!(t.frame_bytes(4092), 4092 + 38);
    }

    #[test]
    fn table_1_network_power_per_node() {
        let node_w = |name: &str, rate: u64| {
            let p = LinkTech::by_name(name).unwrap().power(rate).unwrap();
            p.nic_w + p.switch_port_w
        };
        assert!((node_w("1gbe", G) - 3.9).abs() < 1e-9);
        assert!((node_w("ethernet", 10 * G) - 17.3).abs() < 1e-9);
        assert!((node_w("ib_qdr_4x", 32 * G) - 21.1).abs() < 1e-9);
        assert!(node_w("pcie_gen2_x4", 16 * G) <= 1.0);
        assert_eq!(
            node_w("pcie_gen2_x8", 32 * G),
            2.0 * node_w("pcie_gen2_x4", 16 * G)
        );
        assert_eq!(
            LinkTech::by_name("2.5gbe").unwrap().power(2_500_000_000),
            None
        );
        assert_eq!(LinkTech::by_name("ethernet").unwrap().power(40 * G), None);
    }

    #[test]
    fn pcie_widths_carry_4_gbits_per_lane() {
        for &lanes in PCIE_LANES {
            let t = LinkTech::by_name(&format!("pcie_gen2_x{lanes}")).unwrap();
            assert_eq!(t.rate_bps, 4 * G * u64::from(lanes));
        }
    }

    #[test]
    fn names_are_unique() {
        let mut n = LinkTech::names();
        n.sort_unstable();
        n.dedup();
        assert_eq!(n.len(), PRESETS.len());
    }
}
