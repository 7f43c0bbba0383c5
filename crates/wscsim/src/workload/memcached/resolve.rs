//! `workload.kind = "memcached"`: servers (listed, or `server_count` spread evenly over the
//! hosts, as DIABLO put two in every rack of 31), clients (every other host), requests per
//! client, the gap scale, the memcached version, requests per connection (reconnecting
//! clients), pool size, key space, and whether clients wait for each response (closed
//! loop).

use crate::check::{err, ConfigError};
use crate::check::{host_list, int_in};
use crate::engine::rng::{family, stream};
use crate::workload::memcached::Params as WorkloadCfg;
use crate::workload::memcached::{Memcached, MemcachedSpec};

/// DIABLO: 128 servers among 1,984 hosts (two per rack of 31).
const DIABLO_SERVER_SHARE: f64 = 128.0 / 1984.0;

impl crate::workload::WorkloadKind for Memcached {
    const NAME: &'static str = "memcached";
    const OVER_UDP: bool = true;
    type Params = WorkloadCfg;
    type Spec = MemcachedSpec;
    type App = Box<Memcached>;

    fn resolve(
        p: &mut WorkloadCfg,
        ctx: &crate::workload::WorkloadCtx,
    ) -> Result<MemcachedSpec, ConfigError> {
        resolve_memcached(p, ctx.n_hosts, ctx.udp_transport)
    }

    /// Over TCP: when TCP is split, so is memcached (`Memcached::divide`); UDP's streams
    /// are numbered run-wide.
    fn runs_in_partitions(spec: &MemcachedSpec) -> bool {
        !spec.udp
    }

    fn applications(
        spec: MemcachedSpec,
        b: &mut crate::workload::AppsBuild,
    ) -> Vec<Box<Memcached>> {
        // Random streams: 1000 + i for client i; 999 fills the servers' pools.
        let rngs = (0..spec.clients.len() as u64)
            .map(|i| stream(b.seed, family::WORKLOAD, 1000 + i))
            .collect();
        let warm = stream(b.seed, family::WORKLOAD, 999);
        vec![Box::new(Memcached::new(spec, rngs, warm))]
    }
}

fn resolve_memcached(
    w: &mut WorkloadCfg,
    n_hosts: i64,
    udp: bool,
) -> Result<MemcachedSpec, ConfigError> {
    let servers = match host_list("workload.servers", &w.servers, n_hosts)? {
        Some(list) => {
            w.server_count = Some(list.len() as i64);
            list
        }
        None => {
            let default = ((n_hosts as f64 * DIABLO_SERVER_SHARE).round() as i64).max(1);
            let n = int_in(
                "workload.server_count",
                *w.server_count.get_or_insert(default),
                1,
                n_hosts - 1,
            )? as i64;
            // Evenly spread: server i on host floor(i * hosts / n).
            (0..n).map(|i| (i * n_hosts / n) as u32).collect()
        }
    };
    let mut is_server = vec![false; n_hosts as usize];
    for &s in &servers {
        if is_server[s as usize] {
            return Err(err("workload.servers", s, "distinct host indices"));
        }
        is_server[s as usize] = true;
    }
    if servers.len() as i64 >= n_hosts {
        return Err(err(
            "workload.server_count",
            servers.len(),
            format!("fewer servers than hosts ({n_hosts}), so that some hosts are clients"),
        ));
    }
    let clients: Vec<u32> = (0..n_hosts as u32)
        .filter(|&h| !is_server[h as usize])
        .collect();
    let knobs = resolve_knobs(w)?;
    let requests_per_connection = match w.requests_per_connection {
        None => None,
        Some(_) if udp => {
            return Err(err(
                "workload.requests_per_connection",
                "a value with transport.kind = \"udp\"",
                "no value under UDP (memcached's UDP has no connections)",
            ))
        }
        Some(n) => Some(int_in(
            "workload.requests_per_connection",
            n,
            1,
            u32::MAX as i64,
        )?),
    };
    let closed_loop = *w.closed_loop.get_or_insert(false);
    if closed_loop && udp {
        return Err(err(
            "workload.closed_loop",
            "true with transport.kind = \"udp\"",
            "false under UDP (a lost datagram would leave its client waiting for ever: \
             memcached's UDP has no retransmission)",
        ));
    }
    w.servers = Some(servers.iter().map(|&s| s as i64).collect());
    Ok(MemcachedSpec {
        servers,
        clients,
        requests_per_client: knobs.requests_per_client,
        gap_scale: knobs.gap_scale,
        udp,
        accept4: knobs.accept4,
        requests_per_connection,
        pool_bytes: knobs.pool_bytes,
        key_space: knobs.key_space,
        closed_loop,
    })
}

/// The load and server settings of memcached, with their defaults.
struct Knobs {
    requests_per_client: u32,
    gap_scale: f64,
    accept4: bool,
    pool_bytes: u64,
    key_space: u64,
}

fn resolve_knobs(w: &mut WorkloadCfg) -> Result<Knobs, ConfigError> {
    let requests_per_client = int_in(
        "workload.requests_per_client",
        *w.requests_per_client.get_or_insert(30_000),
        1,
        100_000_000,
    )?;
    // 160 (about 330 requests/s per client): at half that gap the 2,000-node array at
    // 1 Gbit/s with 4 KB buffers collapses under TCP timeouts, while DIABLO reports no
    // retransmissions from buffer overruns (docs/memcached.md).
    let gap_scale = *w.gap_scale.get_or_insert(160.0);
    if !(gap_scale.is_finite() && gap_scale > 0.0) {
        return Err(err(
            "workload.gap_scale",
            gap_scale,
            "a positive multiplier of the ETC inter-arrival gaps",
        ));
    }
    let version = w.version.get_or_insert_with(|| "1.4.17".into()).clone();
    let accept4 = match version.as_str() {
        "1.4.15" => false,
        "1.4.17" => true,
        other => {
            return Err(err(
                "workload.version",
                format!("{other:?}"),
                "\"1.4.15\" or \"1.4.17\" (accept4)",
            ))
        }
    };
    let pool_bytes = w.pool.get_or_insert(crate::units::Bytes(64 << 20)).0;
    if pool_bytes == 0 {
        return Err(err(
            "workload.pool",
            pool_bytes,
            "a memory pool of at least 1 byte (DIABLO: 64 MB)",
        ));
    }
    let key_space = *w.key_space.get_or_insert(1_000_000);
    if key_space < 1 {
        return Err(err("workload.key_space", key_space, "at least 1 key"));
    }
    Ok(Knobs {
        requests_per_client,
        gap_scale,
        accept4,
        pool_bytes,
        key_space: key_space as u64,
    })
}
