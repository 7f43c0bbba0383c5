//! TCP workloads: flows (sizes from a CDF or classes, Poisson arrivals at a load) and
//! long-lived ones (incast resolves beside its model, `workload::incast::resolve`).

use super::*;

/// Most flows a `flows` workload may start in a run: some 10 us of wall time and a
/// kilobyte of memory each.
pub(super) const MAX_FLOWS: f64 = 1e7;

/// The workload of its kind, checked, with defaults filled in.
pub(super) fn flows_spec(
    w: &mut crate::workload::flows::Params,
    n_hosts: i64,
    rate: u64,
    duration: crate::config::Duration,
) -> Result<WorkloadSpec, ConfigError> {
    let load = *w.load.get_or_insert(0.5);
    if !(load.is_finite() && load > 0.0 && load <= 1.0) {
        return Err(err(
            "workload.load",
            load,
            "a fraction of edge-link capacity greater than 0 and at most 1",
        ));
    }
    let sizes = match &w.size_classes {
        Some(classes) => {
            if w.size_cdf.is_some() {
                return Err(err(
                    "workload.size_classes",
                    "both size_classes and size_cdf",
                    "one of them",
                ));
            }
            size_classes(classes)?
        }
        None => {
            let name = w.size_cdf.get_or_insert_with(|| "websearch".into()).clone();
            let text = match BUILTIN_CDFS.iter().find(|(n, _)| *n == name) {
                        Some((_, t)) => t.to_string(),
                        None => read_capped(&name, "workload.size_cdf", "\"websearch\", \"datamining\", \"hadoop\" or a readable CSV file of size_bytes,cdf", MAX_CDF_BYTES)?,
                    };
            FlowSizes::Cdf(Cdf::parse(&text).map_err(|m| ConfigError {
                path: "workload.size_cdf".into(),
                message: format!("{name}: {m}"),
            })?)
        }
    };
    let all: Vec<u32> = (0..n_hosts as u32).collect();
    let receivers =
        host_list("workload.clients", &w.clients, n_hosts)?.unwrap_or_else(|| all.clone());
    let senders = host_list("workload.servers", &w.servers, n_hosts)?.unwrap_or(all);
    if !senders.iter().any(|s| receivers.iter().any(|r| r != s)) {
        return Err(err(
            "workload.servers",
            format!("{senders:?}"),
            "at least one host that differs from a host of workload.clients",
        ));
    }
    let max_flows = match w.flows {
        Some(f) => int_in("workload.flows", f, 1, i32::MAX as i64)? as u64,
        None => u64::MAX,
    };
    // Arrival rate so that the busier side's edge links carry `load` on average.
    let ends = senders.len().min(receivers.len()) as f64;
    let rate_per_s = load * rate as f64 * ends / (sizes.mean() * 8.0);
    let expected = rate_per_s * duration.0 as f64 / crate::engine::PS_PER_S as f64;
    if expected.min(max_flows as f64) > MAX_FLOWS {
        let (path, given) = match w.flows {
            Some(f) if (f as f64) < expected => ("workload.flows", f.to_string()),
            _ => ("workload.load", load.to_string()),
        };
        return Err(err(
            path,
            given,
            format!("at most {MAX_FLOWS:.0} flows started in a run (each is a connection and a row of the flows table); here {expected:.3e} would start over duration = {duration} at a mean flow of {:.0} bytes: lower the load or the duration, give workload.flows, or larger flows", sizes.mean()),
        ));
    }
    Ok(WorkloadSpec::Flows {
        sizes,
        rate_per_s,
        senders,
        receivers,
        max_flows,
    })
}

/// The workload of its kind, checked, with defaults filled in.
pub(super) fn long_lived_spec(
    w: &mut crate::workload::long_lived::Params,
    n_hosts: i64,
    wk: &str,
    seed: u64,
) -> Result<WorkloadSpec, ConfigError> {
    let size = match *w.size.get_or_insert(FlowSize::Infinite) {
        FlowSize::Infinite => None,
        FlowSize::Finite(0) => {
            return Err(err(
                "workload.size",
                0,
                "\"infinite\" or a positive size such as \"1MiB\"",
            ))
        }
        FlowSize::Finite(b) => Some(b),
    };
    let n = n_hosts as u32;
    let pairs = if wk == "many_to_one" {
        let (sources, dst) =
            sources_and_destination(&mut w.destination, &mut w.sources, n_hosts, false)?;
        let dst = dst.expect("many_to_one has one destination");
        sources.into_iter().map(|s| (s, dst)).collect()
    } else if wk == "permutation" {
        // Sattolo's shuffle gives a single cycle: no host sends to itself.
        let mut perm: Vec<u32> = (0..n).collect();
        let mut rng = stream(seed, family::WORKLOAD, 0);
        for i in (1..n as usize).rev() {
            let j = rand::Rng::random_range(&mut rng, 0..i);
            perm.swap(i, j);
        }
        (0..n).map(|i| (i, perm[i as usize])).collect()
    } else {
        if n > 1024 {
            return Err(err(
                "topology",
                format!("{n} hosts"),
                "at most 1024 hosts for all_to_all (n^2 flows)",
            ));
        }
        (0..n)
            .flat_map(|a| (0..n).filter(move |&b| b != a).map(move |b| (a, b)))
            .collect()
    };
    let dscp = match &w.dscp {
        Some(list) if list.is_empty() => {
            return Err(err(
                "workload.dscp",
                "[]",
                "a list of DSCP values from 0 to 63",
            ))
        }
        Some(list) => list
            .iter()
            .map(|&d| int_in("workload.dscp", d, 0, 63).map(|d| d as u8))
            .collect::<Result<Vec<_>, _>>()?,
        None => vec![],
    };
    Ok(WorkloadSpec::LongLived { pairs, size, dscp })
}

/// `workload.size_classes`: positive sizes, weights that are positive (normalised to
/// probabilities) and DSCP values from 0 to 63.
pub(super) fn size_classes(
    classes: &[crate::config::SizeClassCfg],
) -> Result<FlowSizes, ConfigError> {
    if classes.is_empty() {
        return Err(err(
            "workload.size_classes",
            "[]",
            "at least one {size, weight, dscp} class",
        ));
    }
    // Scaled by the largest weight first, so that huge weights (1e308) cannot overflow the
    // sum to infinity and leave every probability at zero.
    let largest = classes.iter().map(|c| c.weight).fold(0.0, f64::max);
    let total: f64 = classes.iter().map(|c| c.weight / largest).sum();
    let mut out = vec![];
    for (i, c) in classes.iter().enumerate() {
        let at = format!("workload.size_classes[{i}]");
        if c.size.0 == 0 {
            return Err(err(
                &format!("{at}.size"),
                c.size,
                "a positive size such as \"1500B\"",
            ));
        }
        if !(c.weight.is_finite() && c.weight > 0.0) {
            return Err(err(
                &format!("{at}.weight"),
                c.weight,
                "a positive weight (weights are normalised to sum to 1)",
            ));
        }
        let dscp = int_in(&format!("{at}.dscp"), c.dscp, 0, 63)? as u8;
        out.push(SizeClass {
            size_bytes: c.size.0,
            probability: c.weight / largest / total,
            dscp,
        });
    }
    Ok(FlowSizes::Classes(out))
}
