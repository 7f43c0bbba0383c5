//! Host stack presets: instruction counts per path (see docs/hosts.md for how each was
//! chosen). Time = instructions x CPI / clock, so the same preset runs slower on a slower
//! or lower-IPC CPU.

use super::StackCosts;

/// Names accepted by `host.stack`.
pub const STACKS: &[&str] = &["ideal", "linux_2_6_39", "linux_3_5", "user_space"];

/// A stack preset: its costs and the receive ring size of its NIC driver.
pub struct StackPreset {
    pub costs: StackCosts,
    pub rx_ring_packets: u32,
}

pub fn stack(name: &str) -> Option<StackPreset> {
    let p = match name {
        // The ns-style host: nothing costs time.
        "ideal" => StackPreset {
            costs: StackCosts::default(),
            rx_ring_packets: u32::MAX,
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
            },
            rx_ring_packets: 256,
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
            },
            rx_ring_packets: 256,
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
            },
            rx_ring_packets: 512,
        },
        _ => return None,
    };
    Some(p)
}
