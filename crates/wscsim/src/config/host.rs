//! `[host]`: the stack preset, CPU and NIC parameters, resolved into a `HostSpec` with the
//! preset's costs written back so the resolved scenario shows every number used.

use super::{err, ConfigError, HostCfg};
use crate::host::disk::{StorageDevice, DEVICES};
use crate::host::presets::{stack, STACKS};
use crate::host::{HostSpec, IoModel, StackCosts, Threads};

pub fn resolve_host(h: &mut HostCfg) -> Result<HostSpec, ConfigError> {
    let Some(preset) = stack(&h.stack) else {
        return Err(err(
            "host.stack",
            format!("{:?}", h.stack),
            format!(
                "one of {}",
                STACKS
                    .iter()
                    .map(|s| format!("{s:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    };
    let clock_ghz = *h.clock_ghz.get_or_insert(preset.clock_ghz);
    if !(clock_ghz.is_finite() && clock_ghz > 0.0 && clock_ghz <= 100.0) {
        return Err(err(
            "host.clock_ghz",
            clock_ghz,
            "a clock rate above 0 and at most 100 GHz",
        ));
    }
    if !(h.cpi.is_finite() && h.cpi > 0.0 && h.cpi <= 100.0) {
        return Err(err(
            "host.cpi",
            h.cpi,
            "cycles per instruction above 0 and at most 100",
        ));
    }
    let cores = *h.cores.get_or_insert(i64::from(preset.cores));
    if !(1..=1024).contains(&cores) {
        return Err(err("host.cores", cores, "1 to 1024 cores"));
    }
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
    let costs = resolve_costs(&mut h.costs, &preset.costs)?;
    let ring = *h
        .rx_ring_packets
        .get_or_insert(if preset.rx_ring_packets == u32::MAX {
            1 << 20
        } else {
            preset.rx_ring_packets as i64
        });
    if !(1..=1 << 20).contains(&ring) {
        return Err(err(
            "host.rx_ring_packets",
            ring,
            "1 to 1048576 receive descriptors",
        ));
    }
    let storage = match h.storage.as_deref() {
        None => None,
        Some(name) => Some(StorageDevice::by_name(name).ok_or_else(|| {
            let names: Vec<String> = DEVICES.iter().map(|d| format!("{:?}", d.name)).collect();
            err(
                "host.storage",
                format!("{name:?}"),
                format!("one of {}", names.join(", ")),
            )
        })?),
    };
    Ok(HostSpec {
        storage,
        costs,
        clock_hz: clock_ghz * 1e9,
        cpi: h.cpi,
        cores: cores as u32,
        rx_ring_packets: ring as u32,
        rx_coalesce_ps: h.rx_coalesce.0,
        io_model,
        threads,
    })
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

/// `host.costs`: each path's instructions, the preset's unless given, written back.
fn resolve_costs(c: &mut super::HostCostsCfg, p: &StackCosts) -> Result<StackCosts, ConfigError> {
    let field = |name: &str, v: &mut Option<f64>, default: f64| -> Result<f64, ConfigError> {
        let x = *v.get_or_insert(default);
        if !(x.is_finite() && x >= 0.0) {
            return Err(err(
                &format!("host.costs.{name}"),
                x,
                "a number of instructions, 0 or more",
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
