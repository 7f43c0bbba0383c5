//! Host stack presets: instruction counts per path (see docs/hosts.md for how each was
//! chosen). Time = instructions x CPI / clock, so the same preset runs slower on a slower
//! or lower-IPC CPU.

use super::noise::{BurstSpec, NoiseSpec};
use super::StackCosts;

/// The stack presets, one line each (`host.stack` takes their names, in this order).
const STACKS: &[fn() -> StackPreset] = &[ideal, linux_2_6_39, linux_3_5, user_space, camcube];

/// A stack preset: its name, its costs, the receive ring size of its NIC driver, where its
/// work runs (`host.threads`), and the TCP rules its kernel follows.
pub struct StackPreset {
    /// Its name in `host.stack`.
    pub name: &'static str,
    pub costs: StackCosts,
    pub rx_ring_packets: u32,
    pub threads: &'static str,
    /// The machine the costs were set for, unless the scenario gives its own.
    pub clock_ghz: f64,
    pub cores: u32,
    /// Operating-system noise on the preset's machine (`host.noise`; none unless a full
    /// kernel runs).
    pub noise: NoiseSpec,
    /// The loss recovery and timer rules of its kernel's TCP (`transport.rules`' default:
    /// "rfc" unless it runs a Linux TCP of its own).
    pub tcp_rules: &'static str,
}

/// DIABLO's server model: one 4 GHz core.
const DIABLO_CLOCK_GHZ: f64 = 4.0;

/// The preset named `name`.
pub fn stack(name: &str) -> Option<StackPreset> {
    STACKS.iter().map(|f| f()).find(|p| p.name == name)
}

/// The names `host.stack` takes.
pub fn names() -> Vec<&'static str> {
    STACKS.iter().map(|f| f().name).collect()
}

/// The ns-style host: nothing costs time.
fn ideal() -> StackPreset {
    StackPreset {
        name: "ideal",
        costs: StackCosts::default(),
        rx_ring_packets: u32::MAX,
        threads: "per_flow",
        clock_ghz: DIABLO_CLOCK_GHZ,
        cores: 1,
        noise: NoiseSpec::default(),
        tcp_rules: "rfc",
    }
}

/// Linux 2.6.39 with an e1000-class NIC (DIABLO's server model): a full kernel TCP/IP path
/// per packet, a context switch per wake-up, 256 receive descriptors.
fn linux_2_6_39() -> StackPreset {
    StackPreset {
        name: "linux_2_6_39",
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
        noise: linux_noise(Kernel::Linux2_6_39),
        tcp_rules: "linux_2_6_39",
    }
}

/// Linux 3.5: the same paths at a fifth of 2.6.39's cost, fitted to DIABLO Figure 14 (mean
/// memcached latency almost halved at 2,000 nodes, 10 Gbit/s, same hardware).
fn linux_3_5() -> StackPreset {
    let old = linux_2_6_39();
    // The kernel paths a fifth as long; what the application does is the same.
    let fifth = |x: f64| x / 5.0;
    StackPreset {
        name: "linux_3_5",
        costs: StackCosts {
            tx_packet: fifth(old.costs.tx_packet),
            rx_packet: fifth(old.costs.rx_packet),
            syscall: fifth(old.costs.syscall),
            wakeup: fifth(old.costs.wakeup),
            interrupt: fifth(old.costs.interrupt),
            ..old.costs
        },
        noise: linux_noise(Kernel::Linux3_5),
        tcp_rules: "linux_3_5",
        ..old
    }
}

/// A user-space polling stack (DPDK, as in the RAMCloud slides): no system calls, no
/// interrupts, no wake-ups; a short per-packet driver and protocol path. Its TCP (where a
/// workload runs one over it) follows the RFCs.
fn user_space() -> StackPreset {
    StackPreset {
        name: "user_space",
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
        noise: linux_noise(Kernel::UserSpace),
        tcp_rules: "rfc",
    }
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
        name: "camcube",
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
        // Fitted to the paper's averages with no noise: a noise model would change the fit.
        noise: NoiseSpec::default(),
        tcp_rules: "rfc",
    }
}

/// Which kernel a preset's noise stands for.
enum Kernel {
    Linux2_6_39,
    Linux3_5,
    /// A polling user-space stack on a Linux host: ticks and background work still take
    /// its core; it is never woken.
    UserSpace,
}

/// The noise of a full Linux on one core (docs/hosts.md gives each number's source; several
/// are assumptions, marked there): the kernel's default 250 Hz tick, each costing the work
/// it interrupts 5 us with its cache effects (Tsafrir, ExpCS 2007: 0.5-1.5% at 1,000 Hz);
/// short bursts (kernel threads, softirq) 10 a second of median 20 us and long ones
/// (daemons) 0.2 a second of median 1 ms, both log-normal with shape 1 (assumed; the long
/// ones put a millisecond-scale p99.9 within reach, the order Li et al., SoCC 2014, report
/// for memcached on one untuned core); a wake-up latency of median 1.2 us, shape 0.5 (fitted
/// to the spread above the minimum of Cerqueira and Brandenburg's cyclictest figures for
/// stock Linux 3.8, OSPERT 2013); work jitter of coefficient of variation 0.1 (assumed).
fn linux_noise(k: Kernel) -> NoiseSpec {
    let us = crate::engine::PS_PER_US;
    let base = NoiseSpec {
        tick_hz: 250.0,
        tick_ps: 5 * us,
        softirq: BurstSpec {
            per_s: 10.0,
            median_ps: 20 * us,
            sigma: 1.0,
        },
        daemon: BurstSpec {
            per_s: 0.2,
            median_ps: 1000 * us,
            sigma: 1.0,
        },
        wakeup_median_ps: 1200 * crate::engine::PS_PER_NS,
        wakeup_sigma: 0.5,
        work_cv: 0.1,
        seed: 0,
    };
    match k {
        Kernel::Linux2_6_39 | Kernel::Linux3_5 => base,
        // Polling: never woken; its own path is shorter and steadier (assumed half the
        // jitter).
        Kernel::UserSpace => NoiseSpec {
            wakeup_median_ps: 0,
            work_cv: 0.05,
            ..base
        },
    }
}
