//! UDP sources: who sends, to where, at what rate (`rate`, or `load` on a torus).

use super::*;

/// The workload of its kind, checked, with defaults filled in (`packed`: see `udp_packet`).
pub(super) fn udp_spec(
    w: &mut crate::workload::udp_source::Params,
    graph: &Graph,
    host_out_bps: u64,
    tech: &LinkTech,
    packed: bool,
) -> Result<WorkloadSpec, ConfigError> {
    let n_hosts = graph.n_hosts() as i64;
    let (size, ip, wire) = udp_packet(w, tech, packed)?;
    // Checked before the rate, which depends on the links used.
    let neighbours = match w.destination {
        Some(crate::config::Destination::Neighbours) => Some(neighbours_target(w, graph)?),
        _ => None,
    };
    let r = udp_rate(w, graph, ip, wire)?;
    let max_ip_rate = (host_out_bps as f64 * ip as f64 / wire).floor() as u64;
    if r > max_ip_rate {
        return Err(err("workload.rate", crate::config::Rate(r), format!("at most {} of IP traffic, what the host's links ({}) carry at this packet size with {:?} framing", crate::config::Rate(max_ip_rate), crate::config::Rate(host_out_bps), tech.name)));
    }
    if let (Some(l), false) = (
        w.links,
        w.destination == Some(crate::config::Destination::Neighbours),
    ) {
        return Err(err(
            "workload.links",
            l,
            "nothing unless workload.destination = \"neighbours\"",
        ));
    }
    let (sources, dst) =
        sources_and_destination(&mut w.destination, &mut w.sources, n_hosts, true)?;
    let arrival = w.arrival.get_or_insert_with(|| "constant".into()).clone();
    one_of("workload.arrival", &arrival, &["constant", "poisson"])?;
    let destination = udp_target(dst, w.destination, graph, neighbours)?;
    Ok(WorkloadSpec::Udp {
        sources,
        destination,
        rate_bps: r,
        payload_bytes: size as u32,
        poisson: arrival == "poisson",
    })
}

/// The datagrams' payload (checked against the MTU), their IP bytes and what each takes
/// on the wire with its share of framing. `packed`: torus servers pack packets into
/// shared frames (`runtime.pack`), so the links carry more of them.
fn udp_packet(
    w: &mut crate::workload::udp_source::Params,
    tech: &LinkTech,
    packed: bool,
) -> Result<(u64, u64, f64), ConfigError> {
    let max_payload = u64::from(tech.mtu_bytes - UDP_IP_HEADER_BYTES);
    let size = w
        .packet_size
        .get_or_insert(crate::config::Bytes(max_payload))
        .0;
    let allowed = format!(
        "a UDP payload from 1 to {max_payload} bytes (an IP packet of at most the {}-byte MTU of {:?})",
        tech.mtu_bytes, tech.name
    );
    in_range("workload.packet_size", size, 1, max_payload, allowed)?;
    // The rate is counted in IP bytes; on the wire each datagram also carries the link's
    // framing, and the host's links must keep up with both.
    let ip = size + u64::from(UDP_IP_HEADER_BYTES);
    let mut wire = f64::from(tech.wire_bytes(tech.frame_bytes(ip as u32)));
    if packed {
        // Packed as many to a frame as its MTU takes, each packet carries its share of one
        // frame's header and wire overhead.
        let per_frame = (u64::from(tech.mtu_bytes) / ip).max(1) as f64;
        wire = ip as f64 + f64::from(tech.header_bytes + tech.wire_overhead_bytes) / per_frame;
    }
    Ok((size, ip, wire))
}

/// Where the datagrams go: a host, in turn, a neighbour, a key's server, or at random.
fn udp_target(
    dst: Option<u32>,
    given: Option<crate::config::Destination>,
    graph: &Graph,
    neighbours: Option<Target>,
) -> Result<Target, ConfigError> {
    Ok(match (dst, given) {
        (Some(h), _) => Target::Host(h),
        (None, Some(crate::config::Destination::RoundRobin)) => Target::RoundRobin,
        (None, Some(crate::config::Destination::Neighbours)) => neighbours.expect("checked above"),
        (None, Some(crate::config::Destination::RandomKey)) => {
            if graph.torus.is_none() {
                return Err(err(
                    "workload.destination",
                    "\"random_key\"",
                    "a host index, \"random\" or \"round_robin\" (keys need a topology.kind = \"torus3d\")",
                ));
            }
            Target::RandomKey
        }
        (None, Some(crate::config::Destination::RandomReachable)) => {
            if graph.torus.is_none() {
                return Err(err(
                    "workload.destination",
                    "\"random_reachable\"",
                    "a host index, \"random\" or \"round_robin\" (reachability is a torus server's view: topology.kind = \"torus3d\")",
                ));
            }
            Target::RandomReachable
        }
        (None, _) => Target::Random,
    })
}

/// Destination "neighbours": a torus, and `workload.links` from 1 to the links a server has.
pub(super) fn neighbours_target(
    w: &mut crate::workload::udp_source::Params,
    graph: &Graph,
) -> Result<Target, ConfigError> {
    if graph.torus.is_none_or(|d| d.iter().any(|&k| k < 3)) {
        return Err(err(
            "workload.destination",
            "\"neighbours\"",
            "a host index, \"random\" or \"round_robin\" (neighbours need a topology.kind = \"torus3d\" of at least 3 servers along each axis: six distinct neighbours)",
        ));
    }
    let links = int_in("workload.links", *w.links.get_or_insert(6), 1, 6)?;
    Ok(Target::Neighbours { links })
}

/// The UDP rate per source (IP bits per second): `rate`, or `load` times the expected
/// all-to-all rate of a torus (a link-level figure, converted to IP bits). The resolved
/// scenario shows the rate either way, beside the load it came from; a rate given with a
/// load is taken when it is the one the load gives (so that a resolved scenario, checked
/// again, resolves the same), and refused otherwise.
pub(super) fn udp_rate(
    w: &mut crate::workload::udp_source::Params,
    graph: &Graph,
    ip: u64,
    wire: f64,
) -> Result<u64, ConfigError> {
    match (w.rate, w.load, graph.torus) {
        (Some(r), None, _) => Ok(r.0),
        (given, Some(l), Some(dims)) => {
            let r = rate_from_load(w, graph, ip, wire, l, dims)?;
            if given.is_some_and(|g| g.0 != r) {
                return Err(err(
                    "workload.load",
                    l,
                    format!("nothing when workload.rate is given (give one of the two; this load gives {})", crate::config::Rate(r)),
                ));
            }
            w.rate = Some(crate::config::Rate(r));
            Ok(r)
        }
        (Some(_), Some(l), None) => Err(err(
            "workload.load",
            l,
            "nothing when workload.rate is given (give one of the two)",
        )),
        (None, Some(l), None) => Err(err(
            "workload.load",
            l,
            "only on a topology.kind = \"torus3d\" (where the expected all-to-all rate is known); give workload.rate instead",
        )),
        (None, None, _) => Err(err(
            "workload.rate",
            "nothing",
            "a rate per source such as \"1Gbps\" (or workload.load on a torus)",
        )),
    }
}

/// `load` (a fraction of the expected all-to-all, or one-hop, rate of a torus of `dims`)
/// as IP bits per second per source.
pub(super) fn rate_from_load(
    w: &crate::workload::udp_source::Params,
    graph: &Graph,
    ip: u64,
    wire: f64,
    l: f64,
    dims: [u32; 3],
) -> Result<u64, ConfigError> {
    if !(l.is_finite() && l > 0.0 && l <= 10.0) {
        return Err(err(
            "workload.load",
            l,
            "a fraction of the expected all-to-all rate above 0 and at most 10",
        ));
    }
    if !matches!(
        w.destination,
        Some(
            crate::config::Destination::Random
                | crate::config::Destination::RoundRobin
                | crate::config::Destination::RandomKey
                | crate::config::Destination::RandomReachable
                | crate::config::Destination::Neighbours
        )
    ) {
        return Err(err(
            "workload.destination",
            match &w.destination {
                Some(d) => serde_json::to_string(d).expect("a destination serialises"),
                None => "nothing (a single destination, host 0)".into(),
            },
            "\"random\", \"round_robin\", \"random_key\", \"random_reachable\" or \"neighbours\" with workload.load (the expected rate is for all-to-all or one-hop traffic)",
        ));
    }
    let link_bps = graph.links[0].rate_bps;
    // Neighbours: one hop over `links` links, each at its line rate.
    let expected = match w.destination {
        Some(crate::config::Destination::Neighbours) => {
            w.links.unwrap_or(6).clamp(1, 6) as f64 * link_bps as f64
        }
        _ => crate::net::routing::torus::expected_all_to_all_bps(dims, link_bps),
    };
    Ok((l * expected * ip as f64 / wire).floor() as u64)
}

/// `workload.sources` (default: every host but the destination) and `workload.destination`
/// (default 0), checked and written back as resolved.
/// (`destination` None: "random", allowed only when `allow_random`; then every host sends
/// by default.)
pub(super) fn sources_and_destination(
    destination: &mut Option<crate::config::Destination>,
    sources_cfg: &mut Option<Vec<i64>>,
    n_hosts: i64,
    allow_random: bool,
) -> Result<(Vec<u32>, Option<u32>), ConfigError> {
    let d = *destination.get_or_insert(crate::config::Destination::Host(0));
    let given = serde_json::to_string(&d).expect("a destination serialises");
    let given = given.as_str();
    let dst = match d {
        crate::config::Destination::Host(h) => {
            Some(int_in("workload.destination", h, 0, n_hosts - 1)?)
        }
        _ if !allow_random => {
            return Err(err(
                "workload.destination",
                given,
                format!("a host index ({given} is for workload.kind = \"udp\")"),
            ))
        }
        _ => {
            if n_hosts < 2 {
                return Err(err(
                    "workload.destination",
                    given,
                    format!("a host index (a {given} destination needs at least 2 hosts)"),
                ));
            }
            None
        }
    };
    let sources = match host_list("workload.sources", sources_cfg, n_hosts)? {
        Some(v) => v,
        None => (0..n_hosts as u32).filter(|&h| Some(h) != dst).collect(),
    };
    if let Some(i) = sources.iter().position(|&s| Some(s) == dst) {
        return Err(err(
            &format!("workload.sources[{i}]"),
            sources[i],
            "hosts other than workload.destination",
        ));
    }
    *sources_cfg = Some(sources.iter().map(|&s| s as i64).collect());
    Ok((sources, dst))
}
