//! The CamCubeOS services' workloads: services, multicast, aggregate, reliable, ping.

use super::*;

/// Kind "services": the runtime's services make the traffic, on a torus.
pub(super) fn services_spec(graph: &Graph) -> Result<WorkloadSpec, ConfigError> {
    if graph.torus.is_none() {
        return Err(err(
            "workload.kind",
            "\"services\"",
            "another kind (the runtime's services run on a topology.kind = \"torus3d\")",
        ));
    }
    Ok(WorkloadSpec::Services)
}

/// A torus's load generators (hosts outside it) only serve the key-value store's clients.
pub(super) fn load_generators_fit(graph: &Graph, kind: &str) -> Result<(), ConfigError> {
    if let Some(d) = graph.torus {
        let outside = graph.n_hosts() as u32 - d[0] * d[1] * d[2];
        if outside > 0 && kind != "kv" {
            return Err(err(
                "topology.load_generators",
                outside,
                "0 unless workload.kind = \"kv\" (only the key-value store's clients use them)",
            ));
        }
    }
    Ok(())
}

/// A file from one server to all others over six disjoint trees (a torus of 3 or more
/// servers along each axis).
pub(super) fn multicast_spec(
    w: &mut crate::services::multicast::Params,
    graph: &Graph,
    tech: &LinkTech,
) -> Result<WorkloadSpec, ConfigError> {
    check_six_trees(graph, "multicast")?;
    let n_hosts = graph.n_hosts() as i64;
    w.roots.get_or_insert_with(|| vec![0]);
    let roots = host_list("workload.roots", &w.roots, n_hosts)?.expect("filled in");
    if roots.len() > 64 {
        return Err(err("workload.roots", roots.len(), "at most 64 instances"));
    }
    let size = w.size.get_or_insert(crate::config::Bytes(750_000_000)).0;
    let payload = service_payload(&mut w.packet_size, tech)?;
    // A bit per packet at each member, for each instance.
    let members = n_hosts as u64 * roots.len() as u64;
    crate::config::checks::tree_service_size(size, payload, members)?;
    let rate_fraction_ppm = tree_rate_fraction_ppm(&mut w.rate_fraction)?;
    Ok(WorkloadSpec::Multicast(
        crate::services::multicast::MulticastSpec {
            roots,
            size_bytes: size,
            payload_bytes: payload,
            rate_fraction_ppm,
        },
    ))
}

/// Camdoop-style aggregation to one server up six trees.
pub(super) fn aggregate_spec(
    w: &mut crate::services::aggregate::Params,
    graph: &Graph,
    tech: &LinkTech,
) -> Result<WorkloadSpec, ConfigError> {
    check_six_trees(graph, "aggregate")?;
    let n_hosts = graph.n_hosts() as i64;
    let root = int_in("workload.root", *w.root.get_or_insert(0), 0, n_hosts - 1)?;
    let size = w.size.get_or_insert(crate::config::Bytes(100_000_000)).0;
    let payload = service_payload(&mut w.packet_size, tech)?;
    // A byte per packet at each server: how many children's packets it has merged.
    crate::config::checks::tree_service_size(size, payload, 8 * n_hosts as u64)?;
    let rate_fraction_ppm = tree_rate_fraction_ppm(&mut w.rate_fraction)?;
    Ok(WorkloadSpec::Aggregate(
        crate::services::aggregate::AggregateSpec {
            root,
            size_bytes: size,
            payload_bytes: payload,
            rate_fraction_ppm,
        },
    ))
}

/// `workload.rate_fraction` of a tree service (default 0.98), in millionths: a smaller
/// fraction would be 0, a tree that never sends.
fn tree_rate_fraction_ppm(v: &mut Option<f64>) -> Result<u32, ConfigError> {
    let f = *v.get_or_insert(0.98);
    in_range("workload.rate_fraction", f, 1e-6, 1.0, "from 0.000001 to 1")?;
    Ok((f * 1e6).round() as u32)
}

/// A service over six disjoint trees needs a torus of at least 3 along each axis.
pub(super) fn check_six_trees(graph: &Graph, kind: &str) -> Result<(), ConfigError> {
    if graph.torus.is_none_or(|d| d.iter().any(|&k| k < 3)) {
        return Err(err(
            "workload.kind",
            format!("\"{kind}\""),
            "another kind, unless topology.kind = \"torus3d\" with at least 3 servers along each axis (six disjoint trees need six distinct neighbours)",
        ));
    }
    Ok(())
}

/// A service packet's payload: at most the MTU less CamCubeOS's header (the default).
pub(super) fn service_payload(
    packet_size: &mut Option<crate::config::Bytes>,
    tech: &LinkTech,
) -> Result<u32, ConfigError> {
    let max_payload = u64::from(tech.mtu_bytes - crate::services::SERVICE_HEADER_BYTES);
    let payload = packet_size
        .get_or_insert(crate::config::Bytes(max_payload))
        .0;
    let allowed = format!("1 to {max_payload} bytes (the MTU less CamCubeOS's 32-byte header)");
    in_range("workload.packet_size", payload, 1, max_payload, allowed)?;
    Ok(payload as u32)
}

/// A reliable transfer's destination: a host, or None for "key" (a torus only).
pub(super) fn reliable_destination(
    w: &mut crate::services::reliable::Params,
    graph: &Graph,
) -> Result<Option<u32>, ConfigError> {
    let n_hosts = graph.n_hosts() as i64;
    let dest = w.destination.get_or_insert(serde_json::json!(0)).clone();
    let to_key = dest.as_str() == Some("key");
    if to_key && graph.torus.is_none() {
        return Err(err(
            "workload.destination",
            "\"key\"",
            "a host index (keys need a topology.kind = \"torus3d\")",
        ));
    }
    let dst = match (dest.as_i64(), to_key) {
        (Some(h), _) => Some(int_in("workload.destination", h, 0, n_hosts - 1)?),
        (None, true) => None,
        _ => {
            return Err(err(
                "workload.destination",
                &dest,
                "a host index or \"key\"",
            ))
        }
    };
    Ok(dst)
}

/// Transfers over CamCubeOS's reliable transport service.
pub(super) fn reliable_spec(
    w: &mut crate::services::reliable::Params,
    graph: &Graph,
    tech: &LinkTech,
    seed: u64,
) -> Result<WorkloadSpec, ConfigError> {
    use crate::services::reliable::{ReliableSpec, To};
    let n_hosts = graph.n_hosts() as i64;
    let dst = reliable_destination(w, graph)?;
    let everyone: Vec<i64> = (0..n_hosts).filter(|&h| Some(h as u32) != dst).collect();
    w.sources.get_or_insert(everyone);
    let sources = host_list("workload.sources", &w.sources, n_hosts)?.expect("filled in");
    if let (Some(d), Some(i)) = (dst, sources.iter().position(|&s| Some(s) == dst)) {
        return Err(err(
            &format!("workload.sources[{i}]"),
            d,
            "hosts other than the destination",
        ));
    }
    let size = w.size.get_or_insert(crate::config::Bytes(1_000_000)).0;
    if size == 0 {
        return Err(err("workload.size", size, "at least 1 byte"));
    }
    let payload = service_payload(&mut w.packet_size, tech)?;
    let window = int_in("workload.window", *w.window.get_or_insert(64), 1, 1_000_000)?;
    let rto = *w
        .rto
        .get_or_insert(crate::config::Duration(crate::engine::PS_PER_S / 100));
    if rto.0 == 0 {
        return Err(err(
            "workload.rto",
            rto,
            "a positive duration such as \"10ms\"",
        ));
    }
    let mut rng = crate::engine::rng::stream(seed, crate::engine::rng::family::WORKLOAD, 7);
    let transfers = sources
        .iter()
        .map(|&s| {
            let to = match dst {
                Some(d) => To::Host(d),
                None => To::Key(rand::Rng::random(&mut rng)),
            };
            (s, to)
        })
        .collect();
    Ok(WorkloadSpec::Reliable(ReliableSpec {
        transfers,
        size_bytes: size,
        payload_bytes: payload,
        window,
        rto_ps: rto.0,
    }))
}

/// Pings from one host to others in turn (CamCubeOS's ping service).
pub(super) fn ping_spec(
    w: &mut crate::services::ping::Params,
    n_hosts: i64,
    tech: &LinkTech,
) -> Result<WorkloadSpec, ConfigError> {
    if n_hosts < 2 {
        return Err(err("topology", n_hosts, "at least 2 hosts for pings"));
    }
    let source = int_in(
        "workload.source",
        *w.source.get_or_insert(0),
        0,
        n_hosts - 1,
    )?;
    let others: Vec<i64> = (0..n_hosts).filter(|&h| h != i64::from(source)).collect();
    w.destinations.get_or_insert(others);
    let destinations =
        host_list("workload.destinations", &w.destinations, n_hosts)?.expect("filled in");
    if let Some(i) = destinations.iter().position(|&d| d == source) {
        return Err(err(
            &format!("workload.destinations[{i}]"),
            source,
            "a host other than workload.source",
        ));
    }
    let count = int_in("workload.count", *w.count.get_or_insert(100), 1, 10_000_000)?;
    let header = crate::services::SERVICE_HEADER_BYTES;
    let max_payload = u64::from(tech.mtu_bytes - header);
    let size = w
        .packet_size
        .get_or_insert(crate::config::Bytes(max_payload))
        .0;
    let allowed = format!(
        "a ping payload from 1 to {max_payload} bytes (with the {header}-byte CamCubeOS header, at most the {}-byte MTU of {:?})",
        tech.mtu_bytes, tech.name
    );
    crate::check::in_range("workload.packet_size", size, 1, max_payload, allowed)?;
    let timeout = *w
        .timeout
        .get_or_insert(crate::config::Duration(crate::engine::PS_PER_S));
    if timeout.0 == 0 {
        return Err(err(
            "workload.timeout",
            timeout,
            "a positive duration such as \"1s\"",
        ));
    }
    Ok(WorkloadSpec::Ping(crate::services::ping::PingSpec {
        source,
        destinations,
        count,
        payload_bytes: size as u32,
        timeout_ps: timeout.0,
    }))
}
