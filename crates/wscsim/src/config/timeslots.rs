//! `engine.mode = "timeslots"`: what the timeslot engine (`sim::slots`, Flexplane's
//! emulator model) can run. It moves the packets of open-loop UDP sources through
//! switches in timeslots of one full-size frame; anything that needs events at their own
//! times (transports' timers, host CPUs, failures, torus forwarding, threads) is refused
//! here with the field that asked for it.

use super::{err, ConfigError, Scenario};
use crate::host::HostSpec;
use crate::topology::Graph;
use crate::workload::{udp_source::Target, WorkloadSpec};

/// The engine modes.
pub const MODES: &[&str] = &["events", "timeslots"];

/// Checks a scenario asking for timeslots against what they model.
pub fn check(
    sc: &Scenario,
    graph: &Graph,
    workload: &WorkloadSpec,
    host: &HostSpec,
    python_services: bool,
) -> Result<(), ConfigError> {
    let refuse = |path: &str, given: &dyn std::fmt::Display, allowed: &str| {
        Err(err(
            path,
            given,
            format!("{allowed} with engine.mode = \"timeslots\" (the timeslot engine moves open-loop UDP packets through switches; docs/schemes.md)"),
        ))
    };
    match workload {
        WorkloadSpec::Udp(crate::workload::udp_source::UdpSpec { destination, .. }) => {
            if !matches!(
                destination,
                Target::Host(_) | Target::Random | Target::RoundRobin
            ) {
                return refuse(
                    "workload.destination",
                    &format!("{destination:?}"),
                    "a host index, \"random\" or \"round_robin\"",
                );
            }
        }
        _ => return refuse("workload.kind", &sc.workload.kind, "\"udp\""),
    }
    if graph.torus.is_some() {
        return refuse(
            "topology.kind",
            &sc.topology.kind,
            "a switched topology (servers that forward, as on a torus, are not emulated)",
        );
    }
    let e = sc.engine.as_ref().expect("mode given");
    if e.partitioned == Some(true) {
        return refuse("engine.partitioned", &true, "false");
    }
    let refused = [
        (!sc.failures.is_empty(), "failures", "no [[failures]]"),
        (sc.churn.is_some(), "churn", "no [churn]"),
        (sc.emulation.is_some(), "emulation", "no [emulation]"),
        (
            sc.metrics.capture.is_some(),
            "metrics.capture",
            "no capture",
        ),
        (sc.metrics.trace.is_some(), "metrics.trace", "no trace"),
        (python_services, "runtime.services", "no services"),
        (
            sc.switch.pfc.is_some(),
            "switch.pfc",
            "no PFC (PAUSE frames are events)",
        ),
    ];
    if let Some((_, path, allowed)) = refused.iter().find(|r| r.0) {
        return refuse(path, &"a table", allowed);
    }
    if !host.costs.is_zero() || host.rx_coalesce_ps > 0 || host.storage.is_some() {
        return refuse(
            "host",
            &"a host model with costs",
            "the ideal host (endpoints are sources and sinks, as in Flexplane's emulator)",
        );
    }
    Ok(())
}
