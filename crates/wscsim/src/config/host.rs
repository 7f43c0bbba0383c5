//! `[host]`: the stack preset, CPU and NIC parameters, resolved into a `HostSpec` with the
//! preset's costs written back so the resolved scenario shows every number used.

use super::checks::in_range;
use super::{d_scheme, err, ConfigError};
use crate::host::disk::{StorageDevice, DEVICES};
use crate::host::idle::{table as idle_table, IdleState, TABLES as IDLE_TABLES};
use crate::host::noise::{BurstSpec, NoiseSpec};
use crate::host::presets::{names, stack};
use crate::host::{HostSpec, Interrupts, IoModel, StackCosts, Threads};
use crate::units::Duration;
use serde::{Deserialize, Serialize};

/// Hosts: the scheme of each NIC's transmit queue (a FIFO by default; pFabric's end hosts
/// send in priority order too).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostCfg {
    #[serde(default = "d_scheme")]
    pub nic_scheme: serde_json::Value,
    /// Network stack preset: "ideal" (no costs), "linux_2_6_39", "linux_3_5", "user_space".
    #[serde(default = "d_stack")]
    pub stack: String,
    /// CPU clock in GHz (default the preset's machine: DIABLO's servers' 4, CamCubeOS's
    /// Xeon 5520 at 2.27).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock_ghz: Option<f64>,
    /// Cycles per instruction of the fixed-CPI timing model.
    #[serde(default = "d_cpi")]
    pub cpi: f64,
    /// CPUs (default the preset's machine: 1, or CamCubeOS's 8 logical CPUs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cores: Option<i64>,
    /// "pthread" (a blocking thread per connection) or "epoll" (one thread per application).
    #[serde(default = "d_io_model")]
    pub io_model: String,
    /// Where packet work runs: "per_flow" (pinned to core hash % cores) or "per_link" (a
    /// receive and a transmit thread per link, on any free core); default the preset's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<String>,
    /// The storage device of every server: "hdd", "x25_m", "x25_e", "fusion_io",
    /// "gordon_flash" or "ramfs" (`host::disk::DEVICES`); none by default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage: Option<String>,
    /// Receive ring size in packets (default: the stack preset's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rx_ring_packets: Option<i64>,
    /// Interrupt coalescing delay: the NIC waits this long after a packet before it
    /// interrupts (NAPI polling needs no interrupt while the CPU is busy with the ring).
    #[serde(default = "d_coalesce")]
    pub rx_coalesce: Duration,
    /// How the NIC paces its receive interrupts: "delay" (`rx_coalesce` after a packet) or
    /// "adaptive" (Intel's 10 GbE driver: at most one interrupt per 10, 50 or 125 us, as
    /// the traffic of the last interval sets; `host::moderation`).
    #[serde(default = "d_moderation")]
    pub interrupt_moderation: String,
    /// The cores' idle states: "none", or a table of `host::idle::TABLES` ("ivytown":
    /// Intel Xeon E5 v2); an idle core wakes from the deepest state its idle time reached.
    #[serde(default = "d_idle")]
    pub idle_states: String,
    /// Instructions per path, overriding the preset's (any subset).
    #[serde(default)]
    pub costs: HostCostsCfg,
    /// Operating-system noise (`host::noise`): the preset's unless given (any subset).
    #[serde(default)]
    pub noise: HostNoiseCfg,
}

/// `[host.noise]`: timer ticks, background work, wake-up latency and work jitter on every
/// host's cores. Unset keys take the stack preset's values (none for `ideal`); `enabled =
/// false` turns all of it off.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostNoiseCfg {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Scheduler ticks per second on each core (the kernel's HZ).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tick_hz: Option<f64>,
    /// CPU time one tick takes from the work it interrupts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tick: Option<Duration>,
    /// Short background bursts (kernel threads, softirq work) per second on each core.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub softirq_per_s: Option<f64>,
    /// Median length of a short burst (log-normal).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub softirq_median: Option<Duration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub softirq_sigma: Option<f64>,
    /// Long background bursts (daemons) per second on each core.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub daemon_per_s: Option<f64>,
    /// Median length of a long burst (log-normal).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub daemon_median: Option<Duration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub daemon_sigma: Option<f64>,
    /// Median scheduler wake-up latency (log-normal).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wakeup_median: Option<Duration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wakeup_sigma: Option<f64>,
    /// Coefficient of variation of every piece of CPU work.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work_cv: Option<f64>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostCostsCfg {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tx_packet: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rx_packet: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_byte: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub syscall: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wakeup: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupt: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app_request: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forward_packet: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forward_per_byte: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packet_per_byte: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pack_packet: Option<f64>,
    /// Nanoseconds (not instructions) of delay per packet received or forwarded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hop_latency_ns: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hop_latency_ns_per_byte: Option<f64>,
}

fn d_stack() -> String {
    "ideal".into()
}
fn d_cpi() -> f64 {
    1.0
}
fn d_io_model() -> String {
    "pthread".into()
}
fn d_coalesce() -> Duration {
    Duration(0)
}
fn d_moderation() -> String {
    "delay".into()
}
fn d_idle() -> String {
    "none".into()
}

impl Default for HostCfg {
    fn default() -> Self {
        serde_json::from_str("{}").unwrap()
    }
}

pub fn resolve_host(h: &mut HostCfg, seed: u64) -> Result<HostSpec, ConfigError> {
    let Some(preset) = stack(&h.stack) else {
        return Err(err(
            "host.stack",
            format!("{:?}", h.stack),
            format!(
                "one of {}",
                names()
                    .iter()
                    .map(|s| format!("{s:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    };
    let clock_ghz = *h.clock_ghz.get_or_insert(preset.clock_ghz);
    let clock_note = "a clock rate from 0.01 to 100 GHz";
    in_range("host.clock_ghz", clock_ghz, 0.01, 100.0, clock_note)?;
    let cpi_note = "cycles per instruction from 0.01 to 100";
    in_range("host.cpi", h.cpi, 0.01, 100.0, cpi_note)?;
    let cores = *h.cores.get_or_insert(i64::from(preset.cores));
    in_range("host.cores", cores, 1, 1024, "1 to 1024 cores")?;
    let io_model = match h.io_model.as_str() {
        "pthread" => IoModel::Pthread,
        "epoll" => IoModel::Epoll,
        other => {
            return Err(err(
                "host.io_model",
                format!("{other:?}"),
                "\"pthread\" (a blocking thread per connection) or \"epoll\"",
            ))
        }
    };
    let threads = resolve_threads(h.threads.get_or_insert_with(|| preset.threads.into()))?;
    let costs = resolve_costs(&mut h.costs, &preset.costs, h.cpi / (clock_ghz * 1e9))?;
    let ring = *h
        .rx_ring_packets
        .get_or_insert(if preset.rx_ring_packets == u32::MAX {
            1 << 20
        } else {
            preset.rx_ring_packets as i64
        });
    let ring_note = "1 to 1048576 receive descriptors";
    in_range("host.rx_ring_packets", ring, 1, 1 << 20, ring_note)?;
    let storage = resolve_storage(h.storage.as_deref())?;
    let interrupts = resolve_interrupts(h, &costs)?;
    let idle_states = resolve_idle(&h.idle_states, &costs)?;
    let asked = match h.noise.enabled {
        Some(on) => on,
        None => noise_keys_given(&h.noise),
    };
    if costs.is_zero() && asked {
        return Err(err(
            "host.noise.enabled",
            "true",
            "false with a stack whose paths cost nothing (\"ideal\"): noise delays the host's work, and it has none; choose a costed host.stack",
        ));
    }
    let noise = resolve_noise(&mut h.noise, &preset.noise, seed)?;
    Ok(HostSpec {
        noise,
        storage,
        costs,
        clock_hz: clock_ghz * 1e9,
        cpi: h.cpi,
        cores: cores as u32,
        rx_ring_packets: ring as u32,
        rx_coalesce_ps: h.rx_coalesce.0,
        interrupts,
        idle_states,
        io_model,
        threads,
    })
}

/// `host.storage`: the server's storage device, if it has one.
fn resolve_storage(name: Option<&str>) -> Result<Option<StorageDevice>, ConfigError> {
    let Some(name) = name else { return Ok(None) };
    let device = StorageDevice::by_name(name).ok_or_else(|| {
        let names: Vec<String> = DEVICES.iter().map(|d| format!("{:?}", d.name)).collect();
        err(
            "host.storage",
            format!("{name:?}"),
            format!("one of {}", names.join(", ")),
        )
    })?;
    Ok(Some(device))
}

/// `host.interrupt_moderation`: how the NIC paces its interrupts. Adaptive moderation sets
/// its own intervals, so it takes no `rx_coalesce`; and a stack whose paths cost nothing
/// takes no interrupts at all.
fn resolve_interrupts(h: &HostCfg, costs: &StackCosts) -> Result<Interrupts, ConfigError> {
    match h.interrupt_moderation.as_str() {
        "delay" => Ok(Interrupts::Delay),
        "adaptive" if h.rx_coalesce.0 > 0 => Err(err(
            "host.rx_coalesce",
            h.rx_coalesce.to_string(),
            "0 with host.interrupt_moderation = \"adaptive\" (its intervals follow the traffic)",
        )),
        "adaptive" if costs.interrupt == 0.0 => Err(err(
            "host.interrupt_moderation",
            "\"adaptive\"",
            "\"delay\" with a stack that takes no interrupts (\"ideal\", or one that polls: its costs.interrupt is 0); choose a stack that takes them, such as \"linux_3_5\"",
        )),
        "adaptive" => Ok(Interrupts::Adaptive),
        other => Err(err(
            "host.interrupt_moderation",
            format!("{other:?}"),
            "\"delay\" (the interrupt follows a packet after rx_coalesce) or \"adaptive\" (Intel's 10 GbE driver)",
        )),
    }
}

/// `host.idle_states`: a table of `host::idle::TABLES`; only hosts that do work have cores
/// that sleep.
fn resolve_idle(name: &str, costs: &StackCosts) -> Result<&'static [IdleState], ConfigError> {
    let Some(states) = idle_table(name) else {
        let names: Vec<String> = IDLE_TABLES
            .iter()
            .map(|t| format!("{:?} ({})", t.0, t.1))
            .collect();
        return Err(err(
            "host.idle_states",
            format!("{name:?}"),
            format!("one of {}", names.join(", ")),
        ));
    };
    if !states.is_empty() && costs.interrupt == 0.0 {
        return Err(err(
            "host.idle_states",
            format!("{name:?}"),
            "\"none\" with a stack that takes no interrupts (\"ideal\", whose cores never work, or one that polls, whose cores never sleep: its costs.interrupt is 0); choose a stack that takes them, such as \"linux_3_5\"",
        ));
    }
    Ok(states)
}

/// `host.threads`: where packet work runs.
fn resolve_threads(name: &str) -> Result<Threads, ConfigError> {
    match name {
        "per_flow" => Ok(Threads::PerFlow),
        "per_link" => Ok(Threads::PerLink),
        other => Err(err(
            "host.threads",
            format!("{other:?}"),
            "\"per_flow\" (a flow's work pinned to one core) or \"per_link\" (a receive and a transmit thread per link, on any free core)",
        )),
    }
}

/// Longest one path of a host's stack may take, in seconds of its CPU: a system call or a
/// packet's processing that takes longer describes no computer, and would stall a run
/// (its noise is drawn over every scheduler tick the work spans).
const MAX_PATH_SECONDS: f64 = 1.0;
/// Largest segment a per-byte cost is charged for (a 64 KiB TSO segment), for the same bound.
const PER_BYTE_SPAN_BYTES: f64 = 65_536.0;

/// `host.costs`: each path's instructions, the preset's unless given, written back; each
/// path (a per-byte cost over a 64 KiB segment) at most `MAX_PATH_SECONDS` of the CPU
/// given by `seconds_per_instruction` (cpi / clock).
fn resolve_costs(
    c: &mut super::HostCostsCfg,
    p: &StackCosts,
    seconds_per_instruction: f64,
) -> Result<StackCosts, ConfigError> {
    let field = |name: &str, v: &mut Option<f64>, default: f64| -> Result<f64, ConfigError> {
        let x = *v.get_or_insert(default);
        let per_byte = name.ends_with("per_byte");
        let span = if per_byte { PER_BYTE_SPAN_BYTES } else { 1.0 };
        // Latencies are nanoseconds of delay, not instructions.
        let (unit_seconds, unit) = if name.starts_with("hop_latency") {
            (1e-9, "nanoseconds")
        } else {
            (seconds_per_instruction, "instructions")
        };
        let most = MAX_PATH_SECONDS / (span * unit_seconds);
        if !(x.is_finite() && x >= 0.0 && x <= most) {
            let (what, over) = if per_byte {
                (format!("{unit} per byte"), "per 64 KiB segment")
            } else {
                (unit.to_string(), "per path")
            };
            return Err(err(
                &format!("host.costs.{name}"),
                x,
                format!("0 to {most:.4e} {what} (at most {MAX_PATH_SECONDS} s {over} at this host's clock_ghz and cpi)"),
            ));
        }
        Ok(x)
    };
    let costs = StackCosts {
        tx_packet: field("tx_packet", &mut c.tx_packet, p.tx_packet)?,
        rx_packet: field("rx_packet", &mut c.rx_packet, p.rx_packet)?,
        per_byte: field("per_byte", &mut c.per_byte, p.per_byte)?,
        syscall: field("syscall", &mut c.syscall, p.syscall)?,
        wakeup: field("wakeup", &mut c.wakeup, p.wakeup)?,
        interrupt: field("interrupt", &mut c.interrupt, p.interrupt)?,
        app_request: field("app_request", &mut c.app_request, p.app_request)?,
        packet_per_byte: field("packet_per_byte", &mut c.packet_per_byte, p.packet_per_byte)?,
        pack_packet: field("pack_packet", &mut c.pack_packet, p.pack_packet)?,
        forward_packet: field("forward_packet", &mut c.forward_packet, p.forward_packet)?,
        forward_per_byte: field(
            "forward_per_byte",
            &mut c.forward_per_byte,
            p.forward_per_byte,
        )?,
        hop_latency_ns: field("hop_latency_ns", &mut c.hop_latency_ns, p.hop_latency_ns)?,
        hop_latency_ns_per_byte: field(
            "hop_latency_ns_per_byte",
            &mut c.hop_latency_ns_per_byte,
            p.hop_latency_ns_per_byte,
        )?,
    };
    Ok(costs)
}

/// `host.noise`: each key the preset's unless given, written back; checked for range.
fn resolve_noise(c: &mut HostNoiseCfg, p: &NoiseSpec, seed: u64) -> Result<NoiseSpec, ConfigError> {
    // A key given turns noise on for a stack whose preset has none (on `ideal` that is
    // then refused, instead of the key being ignored).
    let any_given = noise_keys_given(c);
    if !*c.enabled.get_or_insert(!p.is_off() || any_given) {
        return Ok(NoiseSpec::default());
    }
    let (tick_hz, tick_ps) = resolve_ticks(c, p)?;
    let (softirq, daemon) = resolve_bursts(c, p)?;
    let wakeup_median_ps = c
        .wakeup_median
        .get_or_insert(Duration(p.wakeup_median_ps))
        .0;
    let wakeup_sigma = noise_number(
        "wakeup_sigma",
        &mut c.wakeup_sigma,
        p.wakeup_sigma,
        5.0,
        SIGMA,
    )?;
    let work_cv = noise_number(
        "work_cv",
        &mut c.work_cv,
        p.work_cv,
        10.0,
        "a coefficient of variation, 0 to 10",
    )?;
    Ok(NoiseSpec {
        tick_hz,
        tick_ps,
        softirq,
        daemon,
        wakeup_median_ps,
        wakeup_sigma,
        work_cv,
        seed,
    })
}

/// The timer tick's rate and the length of its work.
fn resolve_ticks(c: &mut HostNoiseCfg, p: &NoiseSpec) -> Result<(f64, u64), ConfigError> {
    let tick_hz = noise_number(
        "tick_hz",
        &mut c.tick_hz,
        p.tick_hz,
        100_000.0,
        "ticks per second, 0 to 100000",
    )?;
    if tick_hz > 0.0 && tick_hz < 1.0 {
        return Err(err(
            "host.noise.tick_hz",
            tick_hz,
            "0 (no ticks) or 1 to 100000 ticks per second",
        ));
    }
    let tick_ps = c.tick.get_or_insert(Duration(p.tick_ps)).0;
    if tick_hz > 0.0
        && (tick_ps == 0 || tick_ps as f64 * tick_hz * 2.0 > crate::engine::PS_PER_S as f64)
    {
        return Err(err(
            "host.noise.tick",
            Duration(tick_ps),
            "above 0 and at most half the tick period (1 / tick_hz) when tick_hz is above 0",
        ));
    }
    Ok((tick_hz, tick_ps))
}

/// Softirq and daemon bursts, whose mean load on a core must leave it time to work.
fn resolve_bursts(
    c: &mut HostNoiseCfg,
    p: &NoiseSpec,
) -> Result<(BurstSpec, BurstSpec), ConfigError> {
    let softirq = burst(
        "softirq",
        (
            &mut c.softirq_per_s,
            &mut c.softirq_median,
            &mut c.softirq_sigma,
        ),
        &p.softirq,
    )?;
    let daemon = burst(
        "daemon",
        (
            &mut c.daemon_per_s,
            &mut c.daemon_median,
            &mut c.daemon_sigma,
        ),
        &p.daemon,
    )?;
    // The bursts' mean load on a core (rate x mean length).
    let load: f64 = [&softirq, &daemon]
        .iter()
        .map(|b| {
            b.per_s * b.median_ps as f64 / crate::engine::PS_PER_S as f64
                * (b.sigma * b.sigma / 2.0).exp()
        })
        .sum();
    if load > 0.5 {
        return Err(err(
            "host.noise.daemon_per_s",
            format!("background bursts taking {:.0}% of each core", load * 100.0),
            "bursts (softirq and daemon together: rate x median x exp(sigma^2 / 2)) taking at most 50% of a core",
        ));
    }
    Ok((softirq, daemon))
}

const SIGMA: &str = "a log-normal shape, 0 to 5";

/// A number of `host.noise` in 0..=max, the preset's unless given.
fn noise_number(
    name: &str,
    v: &mut Option<f64>,
    default: f64,
    max: f64,
    allowed: &str,
) -> Result<f64, ConfigError> {
    let x = *v.get_or_insert(default);
    crate::check::in_range(&format!("host.noise.{name}"), x, 0.0, max, allowed)
}

/// One kind of background burst (`{kind}_per_s`, `_median`, `_sigma`).
fn burst(
    kind: &str,
    (per_s, median, sigma): (&mut Option<f64>, &mut Option<Duration>, &mut Option<f64>),
    p: &BurstSpec,
) -> Result<BurstSpec, ConfigError> {
    let per_s = noise_number(
        &format!("{kind}_per_s"),
        per_s,
        p.per_s,
        1e6,
        "bursts per second, 0 to 1000000",
    )?;
    let median_ps = median.get_or_insert(Duration(p.median_ps)).0;
    if per_s > 0.0 && median_ps == 0 {
        return Err(err(
            &format!("host.noise.{kind}_median"),
            Duration(0),
            format!("a positive duration when {kind}_per_s is above 0"),
        ));
    }
    let sigma = noise_number(&format!("{kind}_sigma"), sigma, p.sigma, 5.0, SIGMA)?;
    Ok(BurstSpec {
        per_s,
        median_ps,
        sigma,
    })
}

/// Whether the scenario sets any of `host.noise`'s rates or sizes.
fn noise_keys_given(c: &HostNoiseCfg) -> bool {
    c.tick_hz.is_some()
        || c.tick.is_some()
        || c.softirq_per_s.is_some()
        || c.daemon_per_s.is_some()
        || c.wakeup_median.is_some()
        || c.work_cv.is_some()
}
