//! What a run records beyond its tables: queue sampling, packet captures, traces.

use super::*;

/// Most queue-sampling instants in a run: the sampler runs at every one of them, whether
/// or not a port has anything to record (10^9 take some ten minutes).
pub(super) const MAX_SAMPLING_INSTANTS: u64 = 1_000_000_000;

/// The `[metrics]` table: captures and traces name ports that exist; sample counts are
/// not negative; the run has at most `MAX_SAMPLING_INSTANTS`.
pub(super) fn check_metrics(
    m: &MetricsCfg,
    graph: &Graph,
    duration: crate::config::Duration,
) -> Result<(), ConfigError> {
    let interval = m.queue_sample_interval;
    let least = crate::config::Duration(duration.0.div_ceil(MAX_SAMPLING_INSTANTS));
    if interval.0 > 0 && m.max_queue_samples > 0 && interval.0 < least.0 {
        return Err(err(
            "metrics.queue_sample_interval",
            interval,
            format!("\"0s\" (no sampling) or at least {least} with duration = {duration} (at most 10^9 samplings in a run)"),
        ));
    }
    if let Some(c) = &m.capture {
        check_capture(c, graph)?;
    }
    if let Some(t) = &m.trace {
        check_trace(t, graph)?;
    }
    if m.max_queue_samples < 0 {
        return Err(err(
            "metrics.max_queue_samples",
            m.max_queue_samples,
            "0 or more (0 records no samples)",
        ));
    }
    Ok(())
}

/// `[metrics.capture]`: hosts in range and each once; ports as "SWITCH:INDEX" naming a
/// switch of the topology and one of its ports.
pub(super) fn check_capture(
    c: &crate::config::CaptureCfg,
    graph: &Graph,
) -> Result<(), ConfigError> {
    let n_hosts = graph.n_hosts() as i64;
    for (i, &h) in c.hosts.iter().enumerate() {
        int_in(&format!("metrics.capture.hosts[{i}]"), h, 0, n_hosts - 1)?;
        if c.hosts[..i].contains(&h) {
            return Err(err(
                &format!("metrics.capture.hosts[{i}]"),
                h,
                "each host once",
            ));
        }
    }
    switch_ports("metrics.capture.ports", &c.ports, graph)?;
    int_in("metrics.capture.max_packets", c.max_packets, 1, 10_000_000)?;
    capture_epoch_s(c)?;
    Ok(())
}

/// `[metrics.capture] epoch` in Unix seconds (0 when not given).
pub fn capture_epoch_s(c: &crate::config::CaptureCfg) -> Result<u64, ConfigError> {
    const LAST: u64 = u32::MAX as u64; // pcap's seconds are 32 bits
    let given = match &c.epoch {
        None => return Ok(0),
        Some(v) => v,
    };
    let seconds = match given {
        serde_json::Value::Number(n) => n.as_u64().filter(|&s| s <= LAST),
        serde_json::Value::String(s) => crate::metrics::pcap::utc_seconds(s),
        _ => None,
    };
    seconds.ok_or_else(|| {
        err(
            "metrics.capture.epoch",
            given,
            format!("a UTC date such as \"2026-11-27\" or \"2026-11-27T12:00:00Z\" (1970 to 2105), or Unix seconds from 0 to {LAST}"),
        )
    })
}

/// `[metrics.trace]`: flow ids that can be connection ids, ports as for captures.
pub(super) fn check_trace(t: &crate::config::TraceCfg, graph: &Graph) -> Result<(), ConfigError> {
    for (i, &f) in t.flows.iter().enumerate() {
        int_in(
            &format!("metrics.trace.flows[{i}]"),
            f,
            0,
            i64::from(i32::MAX),
        )?;
    }
    if t.flows.len() > 10_000 {
        return Err(err(
            "metrics.trace.flows",
            format!("{} flows", t.flows.len()),
            "at most 10,000",
        ));
    }
    switch_ports("metrics.trace.ports", &t.ports, graph)?;
    int_in("metrics.trace.max_records", t.max_records, 1, 100_000_000)?;
    Ok(())
}

/// The (switch node, local port) of each "SWITCH:INDEX" in the list at `field`.
pub fn switch_ports(
    field: &str,
    specs: &[String],
    graph: &Graph,
) -> Result<Vec<(u32, u32)>, ConfigError> {
    specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            capture_port(graph, spec)
                .map_err(|allowed| err(&format!("{field}[{i}]"), format!("{spec:?}"), allowed))
        })
        .collect()
}

/// The switch node and local port index of a "SWITCH:INDEX" capture spec, or what is allowed.
pub fn capture_port(graph: &Graph, spec: &str) -> Result<(u32, u32), String> {
    let form = "\"SWITCH:PORT\", a switch of the topology and a port index, such as \"tor0:1\""
        .to_string();
    let (name, index) = spec.rsplit_once(':').ok_or_else(|| form.clone())?;
    let node = graph.nodes.iter().position(|n| n.kind == crate::net::NodeKind::Switch && n.name == name).ok_or_else(|| format!("{form} ({name:?} is not a switch; switches are listed in the links table's node_name)"))? as u32;
    let ports = graph
        .links
        .iter()
        .filter(|l| l.a == node || l.b == node)
        .count() as u32;
    match index.parse::<u32>() {
        Ok(p) if p < ports => Ok((node, p)),
        _ => Err(format!(
            "{form} ({name} has ports 0 to {})",
            ports.saturating_sub(1)
        )),
    }
}
