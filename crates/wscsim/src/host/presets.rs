//! Host stack presets: instruction counts per path (see docs/hosts.md for how each was
//! chosen). Time = instructions x CPI / clock, so the same preset runs slower on a slower
//! or lower-IPC CPU.

use super::StackCosts;

/// Names accepted by `host.stack`.
pub const STACKS: &[&str] = &[
    "ideal",
    "linux_2_6_39",
    "linux_3_5",
    "user_space",
    "camcube",
];

/// A stack preset: its costs, the receive ring size of its NIC driver, and where its work
/// runs (`host.threads`).
pub struct StackPreset {
    pub costs: StackCosts,
    pub rx_ring_packets: u32,
    pub threads: &'static str,
    /// The machine the costs were set for, unless the scenario gives its own.
    pub clock_ghz: f64,
    pub cores: u32,
}

/// DIABLO's server model: one 4 GHz core.
const DIABLO_CLOCK_GHZ: f64 = 4.0;

pub fn stack(name: &str) -> Option<StackPreset> {
    let p = match name {
        // The ns-style host: nothing costs time.
        "ideal" => StackPreset {
            costs: StackCosts::default(),
            rx_ring_packets: u32::MAX,
            threads: "per_flow",
            clock_ghz: DIABLO_CLOCK_GHZ,
            cores: 1,
        },
        // Linux 2.6.39 with an e1000-class NIC (DIABLO's server model): a full kernel TCP/IP
        // path per packet, a context switch per wake-up, 256 receive descriptors.
        "linux_2_6_39" => StackPreset {
            costs: StackCosts {
                tx_packet: 6200.0,
                rx_packet: 7750.0,
                per_byte: 0.5,
                syscall: 1550.0,
                wakeup: 6200.0,
                interrupt: 3900.0,
                app_request: 2000.0,
                forward_packet: 0.0,
                ..StackCosts::default()
            },
            rx_ring_packets: 256,
            threads: "per_flow",
            clock_ghz: DIABLO_CLOCK_GHZ,
            cores: 1,
        },
        // Linux 3.5: the same paths at a fifth of 2.6.39's cost, fitted to DIABLO Figure 14
        // (mean memcached latency almost halved at 2,000 nodes, 10 Gbit/s, same hardware).
        "linux_3_5" => StackPreset {
            costs: StackCosts {
                tx_packet: 1240.0,
                rx_packet: 1550.0,
                per_byte: 0.5,
                syscall: 310.0,
                wakeup: 1240.0,
                interrupt: 780.0,
                app_request: 2000.0,
                forward_packet: 0.0,
                ..StackCosts::default()
            },
            rx_ring_packets: 256,
            threads: "per_flow",
            clock_ghz: DIABLO_CLOCK_GHZ,
            cores: 1,
        },
        // A user-space polling stack (DPDK, as in the RAMCloud slides): no system calls, no
        // interrupts, no wake-ups; a short per-packet driver and protocol path.
        "user_space" => StackPreset {
            costs: StackCosts {
                tx_packet: 1550.0,
                rx_packet: 1600.0,
                per_byte: 0.5,
                syscall: 0.0,
                wakeup: 0.0,
                interrupt: 0.0,
                app_request: 2000.0,
                forward_packet: 0.0,
                ..StackCosts::default()
            },
            rx_ring_packets: 512,
            threads: "per_flow",
            clock_ghz: DIABLO_CLOCK_GHZ,
            cores: 1,
        },
        "camcube" => camcube(),
        _ => return None,
    };
    Some(p)
}

/// CamCubeOS's user-space runtime on the paper's servers (Xeon 5520 at 2.27 GHz, 8 logical
/// CPUs: the preset's machine), fitted to the paper, not measured (the arithmetic is in
/// docs/camcube.md). CPU per packet handled, F(b) = 12.9 us + 0.92 ns per frame byte, from
/// Figure 4b's six saturated links (above 87% of 8 CPUs at 1,500 bytes, under 22% jumbo:
/// 14.3 and 21.2 us per packet sent plus received); sending and receiving each take half,
/// forwarding all of it. Zero-copy: nothing per byte between the runtime and services.
/// Packing (`runtime.pack`) costs 1.84 us per packet on each side, fitted to Figure 4b's
/// "under 45%" with six packets to a frame. What the 15-hop ping leaves per hop beyond F and
/// serialisation (62 and 124 us in all) is delay that occupies no CPU: 36.5 us + 7.35 ns
/// per byte.
fn camcube() -> StackPreset {
    StackPreset {
        costs: StackCosts {
            tx_packet: 14_642.0,
            rx_packet: 14_642.0,
            // Zero-copy: services and applications work in the runtime's own buffers.
            per_byte: 0.0,
            packet_per_byte: 2.09,
            pack_packet: 4_180.0,
            syscall: 0.0,
            wakeup: 0.0,
            interrupt: 0.0,
            app_request: 2000.0,
            forward_packet: 29_283.0,
            forward_per_byte: 2.09,
            hop_latency_ns: 36_500.0,
            hop_latency_ns_per_byte: 7.35,
        },
        rx_ring_packets: 4096,
        // One receive and one transmit thread per link (the paper's shim).
        threads: "per_link",
        // Dell T3500: a quad-core Xeon 5520 at 2.27 GHz with hyper-threading.
        clock_ghz: 2.27,
        cores: 8,
    }
}
