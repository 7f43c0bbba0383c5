//! `[workload] kind = "kv"`: clients of CamCubeOS's key-value store on a torus.

use super::checks::{host_list, int_in, one_of};
use super::{err, Bytes, ConfigError};
use crate::host::disk::DiskParams;
use crate::net::link::LinkTech;
use crate::services::kv_clients::{KvSpec, OpKind, Params};
use crate::topology::Graph;
use crate::workload::WorkloadSpec;

/// Resolves the store's workload, writing the defaults back.
pub fn resolve_kv(
    w: &mut Params,
    graph: &Graph,
    tech: &LinkTech,
    seed: u64,
) -> Result<WorkloadSpec, ConfigError> {
    let n_hosts = graph.n_hosts() as i64;
    let store_dims = resolve_store_dims(w, graph, n_hosts)?;
    let dims = graph.torus.or(store_dims).expect("one or the other");
    let servers = i64::from(dims[0] * dims[1] * dims[2]);
    let (clients, front_ends) = resolve_clients(w, n_hosts, servers)?;
    let outstanding = int_in(
        "workload.outstanding",
        *w.outstanding.get_or_insert(1),
        1,
        10_000,
    )?;
    let operations = int_in(
        "workload.operations",
        *w.operations.get_or_insert(100),
        1,
        10_000_000,
    )?;
    let keys = int_in("workload.keys", *w.keys.get_or_insert(1000), 1, 100_000_000)?;
    let value = w.value_size.get_or_insert(Bytes(1_470_000)).0;
    crate::check::in_range("workload.value_size", value, 1, 1 << 32, "1 byte to 4 GiB")?;
    let replicas = int_in(
        "workload.replicas",
        *w.replicas.get_or_insert(3),
        1,
        servers.min(64),
    )?;
    let disk = w.disk.get_or_insert_with(|| "x25e".into()).clone();
    one_of("workload.disk", &disk, &["x25e", "none"])?;
    let rereplicate = w
        .rereplicate_after
        .get_or_insert(crate::units::Duration(180 * crate::engine::PS_PER_S))
        .0;
    let timeout = w
        .timeout
        .get_or_insert(crate::units::Duration(3 * crate::engine::PS_PER_S))
        .0;
    // A retry timer far below a round trip sends operations again faster than they can
    // be answered (at 1us a run of 1 s on 27 servers did not end in a minute).
    if timeout < 100 * crate::engine::PS_PER_US {
        return Err(err(
            "workload.timeout",
            crate::units::Duration(timeout),
            "from 100us to 1000000s, such as \"1s\"",
        ));
    }
    Ok(WorkloadSpec::Kv(KvSpec {
        clients,
        front_ends,
        outstanding,
        operations,
        mix: resolve_mix(w)?,
        keys,
        value_bytes: value,
        replicas,
        disk: (disk == "x25e").then_some(DiskParams::X25_E),
        rereplicate_ps: rereplicate,
        timeout_ps: timeout,
        payload_bytes: tech.mtu_bytes - crate::services::SERVICE_HEADER_BYTES,
        window: 64,
        rto_ps: 10 * crate::engine::PS_PER_MS,
        seed,
        store_dims,
        cache_hot_spots: resolve_cache(w, graph)?,
        preload: *w.preload.get_or_insert(false),
    }))
}

/// The cache's hot spots: Some(k) when lookups go through the cache (a torus only).
fn resolve_cache(w: &mut Params, graph: &Graph) -> Result<Option<u32>, ConfigError> {
    let k = int_in("workload.hot_spots", *w.hot_spots.get_or_insert(4), 0, 64)?;
    match (*w.cache.get_or_insert(false), graph.torus) {
        (false, _) => Ok(None),
        (true, Some(_)) => Ok(Some(k)),
        (true, None) => Err(err(
            "workload.cache",
            "true",
            "false off a torus (readers pick the closest copy by torus hops)",
        )),
    }
}

/// The store's servers off a torus (the switched baseline): `store_dims`, required there
/// and refused on a torus.
fn resolve_store_dims(
    w: &Params,
    graph: &Graph,
    n_hosts: i64,
) -> Result<Option<[u32; 3]>, ConfigError> {
    match (&w.store_dims, graph.torus) {
        (None, Some(_)) => Ok(None),
        (Some(d), Some(_)) => Err(err(
            "workload.store_dims",
            format!("{d:?}"),
            "nothing on a torus (its servers hold the store)",
        )),
        (None, None) => Err(err(
            "workload.kind",
            "\"kv\"",
            "on topology.kind = \"torus3d\", or elsewhere with workload.store_dims = [x, y, z] (hosts 0 to x*y*z - 1 hold the store)",
        )),
        (Some(d), None) => {
            let ok = d.len() == 3
                && d.iter().all(|&k| (1..=64).contains(&k))
                && d.iter().product::<i64>() < n_hosts;
            if !ok {
                return Err(err(
                    "workload.store_dims",
                    format!("{d:?}"),
                    format!("three sizes from 1 to 64 whose product is below the {n_hosts} hosts (the rest are load generators)"),
                ));
            }
            Ok(Some([d[0] as u32, d[1] as u32, d[2] as u32]))
        }
    }
}

/// The operation mix: weights by name, normalised.
fn resolve_mix(w: &mut Params) -> Result<[f64; 4], ConfigError> {
    let mix = w
        .mix
        .get_or_insert_with(|| [("insert".to_string(), 1.0)].into());
    let names: Vec<&str> = OpKind::ALL.iter().map(|k| k.name()).collect();
    let mut weights = [0.0; 4];
    for (name, &x) in mix.iter() {
        one_of("workload.mix", name, &names)?;
        if !(x.is_finite() && x >= 0.0) {
            return Err(err(
                &format!("workload.mix.{name}"),
                x,
                "a weight of 0 or more",
            ));
        }
        weights[names.iter().position(|n| n == name).expect("checked")] = x;
    }
    let sum: f64 = weights.iter().sum();
    if sum <= 0.0 {
        return Err(err(
            "workload.mix",
            "weights summing to 0",
            "at least one weight above 0",
        ));
    }
    Ok(weights.map(|x| x / sum))
}

/// Who issues operations (default: the load generators if there are any, else every
/// server), and the front ends their operations go through (none for servers).
fn resolve_clients(
    w: &mut Params,
    n_hosts: i64,
    servers: i64,
) -> Result<(Vec<u32>, Vec<u32>), ConfigError> {
    w.clients.get_or_insert_with(|| match n_hosts > servers {
        true => (servers..n_hosts).collect(),
        false => (0..n_hosts).collect(),
    });
    let clients = host_list("workload.clients", &w.clients, n_hosts)?.expect("filled in");
    if clients.is_empty() {
        return Err(err("workload.clients", "[]", "at least one server"));
    }
    // A load generator's operations go through the servers; a server runs its own.
    let front_ends = match clients.iter().any(|&c| i64::from(c) >= servers) {
        true if clients.iter().any(|&c| i64::from(c) < servers) => {
            return Err(err(
                "workload.clients",
                format!("{clients:?}"),
                "servers only or load generators only",
            ))
        }
        true => (0..servers as u32).collect(),
        false => Vec::new(),
    };
    Ok((clients, front_ends))
}
