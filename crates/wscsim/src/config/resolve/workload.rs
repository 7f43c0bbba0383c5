//! `[workload]`: the table of workload kinds, each with its resolver, and what a
//! resolver may read of the rest of the scenario.

use super::*;
use crate::net::link::LinkFamily;

/// What a workload kind's resolver reads of the scenario resolved before it.
pub struct WorkloadCtx<'a> {
    /// The kind's name (kinds that share a resolver tell themselves apart by it).
    pub kind: &'a str,
    pub n_hosts: i64,
    pub graph: &'a Graph,
    pub host: &'a crate::host::HostSpec,
    /// The technology of the hosts' links.
    pub host_tech: &'a LinkTech,
    /// The hosts' link rate, and what a host can send out in all (a torus server: its six links).
    pub host_rate_bps: u64,
    pub host_out_bps: u64,
    pub duration: crate::config::Duration,
    pub seed: u64,
    /// `transport.kind = "udp"`.
    pub udp_transport: bool,
    /// Torus servers pack packets into shared frames (`runtime.pack`).
    pub packed: bool,
}

impl WorkloadCtx<'_> {
    /// The hosts' links are PCIe (the PCIe paper's fabric).
    pub fn pcie(&self) -> bool {
        self.host_tech.family == LinkFamily::Pcie
    }
}

/// Resolves `[workload]` with its kind's resolver, after the checks every kind shares.
pub(super) fn resolve_workload(
    w: &mut crate::config::WorkloadCfg,
    ctx: &WorkloadCtx,
) -> Result<WorkloadSpec, ConfigError> {
    let build = crate::config::kinds::find("workload.kind", WORKLOADS, &w.kind)?.build;
    udp_transport_fits(&w.kind, ctx.udp_transport)?;
    load_generators_fit(ctx.graph, &w.kind)?;
    build(w, ctx)
}

/// What resolves a workload kind: its section, read with the rest of the scenario.
pub type WorkloadBuild =
    fn(&mut crate::config::WorkloadCfg, &WorkloadCtx) -> Result<WorkloadSpec, ConfigError>;

/// The workload kinds, their parameters and resolvers. A new kind adds its entry here.
pub const WORKLOADS: &[Kind<WorkloadBuild>] = &[
    Kind {
        name: "incast",
        keys: fields_of::<crate::workload::incast::Params>,
        build: |w, c| with_params(w, |p| crate::workload::incast::resolve(p, c.n_hosts)),
    },
    Kind {
        name: "flows",
        keys: fields_of::<crate::workload::flows::Params>,
        build: |w, c| with_params(w, |p| flows_spec(p, c.n_hosts, c.host_rate_bps, c.duration)),
    },
    Kind {
        name: "permutation",
        keys: fields_of::<crate::workload::long_lived::Params>,
        build: |w, c| with_params(w, |p| long_lived_spec(p, c.n_hosts, c.kind, c.seed)),
    },
    Kind {
        name: "all_to_all",
        keys: fields_of::<crate::workload::long_lived::Params>,
        build: |w, c| with_params(w, |p| long_lived_spec(p, c.n_hosts, c.kind, c.seed)),
    },
    Kind {
        name: "many_to_one",
        keys: fields_of::<crate::workload::long_lived::Params>,
        build: |w, c| with_params(w, |p| long_lived_spec(p, c.n_hosts, c.kind, c.seed)),
    },
    Kind {
        name: "udp",
        keys: fields_of::<crate::workload::udp_source::Params>,
        build: |w, c| {
            with_params(w, |p| {
                udp_spec(p, c.graph, c.host_out_bps, c.host_tech, c.packed)
            })
        },
    },
    Kind {
        name: "ping",
        keys: fields_of::<crate::services::ping::Params>,
        build: |w, c| with_params(w, |p| ping_spec(p, c.n_hosts, c.host_tech)),
    },
    Kind {
        name: "reliable",
        keys: fields_of::<crate::services::reliable::Params>,
        build: |w, c| with_params(w, |p| reliable_spec(p, c.graph, c.host_tech, c.seed)),
    },
    Kind {
        name: "multicast",
        keys: fields_of::<crate::services::multicast::Params>,
        build: |w, c| with_params(w, |p| multicast_spec(p, c.graph, c.host_tech)),
    },
    Kind {
        name: "aggregate",
        keys: fields_of::<crate::services::aggregate::Params>,
        build: |w, c| with_params(w, |p| aggregate_spec(p, c.graph, c.host_tech)),
    },
    Kind {
        name: "kv",
        keys: fields_of::<crate::services::kv_clients::Params>,
        build: |w, c| {
            with_params(w, |p| {
                crate::config::kv::resolve_kv(p, c.graph, c.host_tech, c.seed)
            })
        },
    },
    Kind {
        name: "ramcloud",
        keys: fields_of::<crate::workload::ramcloud::Params>,
        build: |w, c| {
            with_params(w, |p| {
                crate::workload::ramcloud::resolve::resolve_ramcloud(p, c.n_hosts)
            })
        },
    },
    Kind {
        name: "dma",
        keys: fields_of::<crate::workload::dma_bench::Params>,
        build: |w, c| with_params(w, |p| dma_bench_spec(p, c.n_hosts, c.host_tech)),
    },
    Kind {
        name: "job",
        keys: fields_of::<crate::workload::job::Params>,
        build: |w, c| {
            with_params(w, |p| {
                let storage = c.host.storage.is_some();
                crate::workload::job::resolve::resolve_job(p, c.n_hosts, storage, c.pcie())
                    .map(WorkloadSpec::Job)
            })
        },
    },
    Kind {
        name: "none",
        keys: fields_of::<crate::workload::NoParams>,
        build: |w, _| {
            with_params(w, |_: &mut crate::workload::NoParams| {
                Ok(WorkloadSpec::Idle)
            })
        },
    },
    Kind {
        name: "mapreduce",
        keys: fields_of::<crate::workload::mapreduce::Params>,
        build: |w, c| {
            with_params(w, |p| {
                let storage = c.host.storage.is_some();
                crate::workload::mapreduce::resolve::resolve_mapreduce(
                    p,
                    c.n_hosts,
                    storage,
                    c.host.cores,
                    c.pcie(),
                )
                .map(WorkloadSpec::MapReduce)
            })
        },
    },
    Kind {
        name: "memcached",
        keys: fields_of::<crate::workload::memcached::Params>,
        build: |w, c| {
            with_params(w, |p| {
                crate::workload::memcached::resolve::resolve_memcached(
                    p,
                    c.n_hosts,
                    c.udp_transport,
                )
                .map(WorkloadSpec::Memcached)
            })
        },
    },
    Kind {
        name: "services",
        keys: fields_of::<crate::services::user::Params>,
        build: |w, c| {
            with_params(w, |_: &mut crate::services::user::Params| {
                services_spec(c.graph)
            })
        },
    },
];

/// Parses the workload kind's parameters, resolves them with `f`, and writes them back
/// with their defaults.
fn with_params<P: serde::de::DeserializeOwned + serde::Serialize>(
    w: &mut crate::config::WorkloadCfg,
    f: impl FnOnce(&mut P) -> Result<WorkloadSpec, ConfigError>,
) -> Result<WorkloadSpec, ConfigError> {
    let mut p: P =
        crate::config::kinds::parse("workload", WORKLOADS, &w.kind, &["kind"], &w.params)?;
    let spec = f(&mut p)?;
    crate::config::kinds::write_back(&mut w.params, &p);
    Ok(spec)
}

/// UDP transport is for UDP workloads.
fn udp_transport_fits(wk: &str, udp_transport: bool) -> Result<(), ConfigError> {
    if udp_transport && wk != "udp" && wk != "memcached" {
        return Err(err(
            "transport.kind",
            "\"udp\"",
            format!("\"tcp\" for workload.kind = {wk:?} (UDP traffic is workload.kind = \"udp\")"),
        ));
    }
    Ok(())
}

/// Kind "dma": the PCIe paper's DMA microbenchmarks.
fn dma_bench_spec(
    p: &mut crate::workload::dma_bench::Params,
    n_hosts: i64,
    tech: &LinkTech,
) -> Result<WorkloadSpec, ConfigError> {
    use crate::transport::dma::Op;
    if tech.family != LinkFamily::Pcie {
        return Err(err(
            "workload.kind",
            format!("\"dma\" on {:?} links", tech.name),
            "\"dma\" only with topology.link.technology = \"pcie_gen2\"",
        ));
    }
    let op = match p.op.get_or_insert_with(|| "write".into()).as_str() {
        "write" => Op::Write,
        "read" => Op::Read,
        "load" => Op::Load,
        other => {
            return Err(err(
                "workload.op",
                format!("{other:?}"),
                "\"write\", \"read\" or \"load\"",
            ))
        }
    };
    let size = p.size.get_or_insert(crate::units::Bytes(64 << 20)).0;
    if size == 0 {
        return Err(err("workload.size", 0, "1 byte or more"));
    }
    let count =
        crate::config::checks::int_in("workload.count", *p.count.get_or_insert(10), 1, 10_000_000)?;
    let initiator = crate::config::checks::int_in(
        "workload.initiator",
        *p.initiator.get_or_insert(0),
        0,
        n_hosts - 1,
    )?;
    let peers = crate::config::checks::host_list("workload.peers", &p.peers, n_hosts)?
        .unwrap_or_else(|| vec![u32::from(initiator == 0)]);
    if let Some(i) = peers.iter().position(|&q| q == initiator) {
        return Err(err(
            &format!("workload.peers[{i}]"),
            initiator,
            "a host other than the initiator",
        ));
    }
    p.peers = Some(peers.iter().map(|&q| i64::from(q)).collect());
    Ok(WorkloadSpec::DmaBench(
        crate::workload::dma_bench::DmaBenchSpec {
            op,
            size_bytes: size,
            count,
            initiator,
            peers,
        },
    ))
}
