//! Validation and defaults: turns a parsed `Scenario` into what the builder needs, and
//! fills every default into the scenario so that `summary.json` shows the run as it ran.

pub use super::checks::{
    check_fits, host_list, int_in, one_of, only_for, read_capped, DIABLO_PRESETS, MAX_CDF_BYTES,
    MAX_EDGE_LIST_BYTES, MAX_HOSTS,
};
use super::kinds::{fields_of, Kind};
use super::{err, ConfigError, FlowSize, MetricsCfg, Scenario};
use crate::engine::rng::{family, stream};
use crate::net::link::LinkTech;
use crate::net::Forwarding;
use crate::packet::{TCP_IP_HEADER_BYTES, UDP_IP_HEADER_BYTES};
use crate::topology::build::SwitchParams;
use crate::topology::Graph;
use crate::transport::tcp::cc::Variant;
use crate::transport::tcp::Recovery;
use crate::transport::TcpParams;
use crate::workload::cdf::Cdf;
use crate::workload::flows::{FlowSizes, SizeClass};
use crate::workload::udp_source::Target;
pub use crate::workload::WorkloadSpec;

mod flows;
mod observe;
mod switch;
mod torus_services;
mod transport;
mod udp;
use flows::*;
use observe::*;
pub use observe::{capture_epoch_s, capture_port, switch_ports};
use switch::*;
use torus_services::*;
use transport::*;
use udp::*;

/// Largest buffer accepted (far above any switch; keeps byte arithmetic far from overflow).
pub const MAX_BUFFER_BYTES: u64 = 1 << 40;

/// Built-in flow-size distributions, shipped with the Python package and embedded here.
pub const BUILTIN_CDFS: &[(&str, &str)] = &[
    (
        "websearch",
        include_str!("../../../../python/wscsim/data/websearch_flow_sizes.csv"),
    ),
    (
        "datamining",
        include_str!("../../../../python/wscsim/data/datamining_flow_sizes.csv"),
    ),
    (
        "hadoop",
        include_str!("../../../../python/wscsim/data/hadoop_flow_sizes.csv"),
    ),
];

pub struct Resolved {
    pub scenario: Scenario,
    pub graph: Graph,
    pub switch: SwitchParams,
    pub tcp: TcpParams,
    pub workload: WorkloadSpec,
    pub host: crate::host::HostSpec,
    pub failures: super::failures::Failures,
    /// Per-service queues of a torus's runtime (None: per-link queues, or not a torus).
    pub service_queues: Option<Vec<crate::net::service_queues::QueueSpec>>,
    /// Python services of the runtime: (service id, class string, parameters).
    pub python_services: Vec<super::runtime::PythonService>,
    /// Torus servers pack packets waiting for a link into one frame.
    pub pack: bool,
    /// The TCP/IP tunnel's reorder buffers on a torus (None: off, or not a torus).
    pub tunnel: Option<crate::services::tunnel::TunnelSpec>,
    /// What each component draws.
    pub power: super::power::PowerSpec,
    /// The PCIe fabric's DMA engines.
    pub dma: crate::transport::dma::DmaParams,
}

pub fn resolve(mut sc: Scenario) -> Result<Resolved, ConfigError> {
    if sc.duration.0 == 0 {
        return Err(err(
            "duration",
            sc.duration,
            "a positive duration such as \"1s\"",
        ));
    }
    let super::topology::TopologyOut {
        graph,
        host_rate_bps: rate,
        host_out_bps,
        host_tech,
        preset_latency_ps: preset_latency,
    } = super::topology::resolve_topology(&mut sc.topology)?;
    let n_hosts = graph.n_hosts() as i64;

    let host = super::host::resolve_host(&mut sc.host, sc.seed)?;
    let mut tcp = resolve_transport(&mut sc.transport, &host_tech)?;
    resolve_tcp_rules(&mut sc.transport, &sc.host.stack, &host, &mut tcp)?;
    tcp.seed = sc.seed;
    let switch = resolve_switch(&mut sc, &graph, &tcp, &host_tech, preset_latency)?;

    // --- workload ---
    let duration = sc.duration;
    let w = &mut sc.workload;
    let names: Vec<&str> = WORKLOADS.iter().map(|k| k.name).collect();
    one_of("workload.kind", &w.kind, &names)?;
    let wk = w.kind.clone();
    let udp = sc.transport.kind == "udp";
    udp_transport_fits(&wk, udp)?;
    load_generators_fit(&graph, &wk)?;
    let workload = match wk.as_str() {
        "incast" => with_params(w, |p| incast_spec(p, n_hosts))?,
        "flows" => with_params(w, |p| flows_spec(p, n_hosts, rate, duration))?,
        "permutation" | "all_to_all" | "many_to_one" => {
            with_params(w, |p| long_lived_spec(p, n_hosts, &wk, sc.seed))?
        }
        "dma" => with_params(w, |p| dma_bench_spec(p, n_hosts, host_tech.name))?,
        "ramcloud" => with_params(w, |p| super::ramcloud::resolve_ramcloud(p, n_hosts))?,
        "job" => with_params(w, |p| {
            let pcie = host_tech.name.starts_with("pcie");
            super::job::resolve_job(p, n_hosts, host.storage.is_some(), pcie).map(WorkloadSpec::Job)
        })?,
        "mapreduce" => with_params(w, |p| {
            let pcie = host_tech.name.starts_with("pcie");
            let storage = host.storage.is_some();
            super::mapreduce::resolve_mapreduce(p, n_hosts, storage, host.cores, pcie)
                .map(WorkloadSpec::MapReduce)
        })?,
        "none" => with_params(w, |_: &mut crate::workload::NoParams| {
            Ok(WorkloadSpec::Idle)
        })?,
        "memcached" => with_params(w, |p| {
            super::memcached::resolve_memcached(p, n_hosts, udp).map(WorkloadSpec::Memcached)
        })?,
        "ping" => with_params(w, |p| ping_spec(p, n_hosts, &host_tech))?,
        "reliable" => with_params(w, |p| reliable_spec(p, &graph, &host_tech, sc.seed))?,
        "multicast" => with_params(w, |p| multicast_spec(p, &graph, &host_tech))?,
        "kv" => with_params(w, |p| super::kv::resolve_kv(p, &graph, &host_tech, sc.seed))?,
        "aggregate" => with_params(w, |p| aggregate_spec(p, &graph, &host_tech))?,
        "services" => with_params(w, |_: &mut crate::services::user::Params| {
            services_spec(&graph)
        })?,
        _ => {
            let packed =
                graph.torus.is_some() && sc.runtime.as_ref().and_then(|r| r.pack) == Some(true);
            with_params(w, |p| udp_spec(p, &graph, host_out_bps, &host_tech, packed))?
        }
    };
    check_metrics(&sc.metrics, &graph, sc.duration)?;
    let failures = super::failures::resolve_failures(&mut sc, &graph)?;
    let runtime = super::runtime::resolve_runtime(&mut sc.runtime, &graph)?;
    let power = super::power::resolve_power(&mut sc.power)?;
    let dma = super::dma::resolve_dma(&mut sc.dma)?;
    if let Some(e) = sc.emulation.as_mut() {
        super::emulation::resolve(e, n_hosts, sc.duration.0)?;
    }
    resolve_engine(&mut sc)?;
    if super::EngineCfg::timeslots(sc.engine.as_ref()) {
        let py = !runtime.python_services.is_empty();
        super::timeslots::check(&sc, &graph, &workload, &host, py)?;
    }
    if let (Some(w), None) = (power.storage_w, host.storage) {
        return Err(err(
            "power.storage_w",
            w,
            "a storage device's power, given only with a device (host.storage)",
        ));
    }
    Ok(Resolved {
        power,
        dma,
        service_queues: runtime.queues,
        tunnel: runtime.tunnel,
        pack: runtime.pack,
        python_services: runtime.python_services,
        scenario: sc,
        graph,
        switch,
        tcp,
        workload,
        host,
        failures,
    })
}

/// `[engine]`: its values, and what a partitioned run does not take yet.
/// The most threads a run may ask for.
const MAX_THREADS: i64 = 64;

fn resolve_engine(sc: &mut Scenario) -> Result<(), ConfigError> {
    let Some(e) = sc.engine.as_mut() else {
        return Ok(());
    };
    let threads_given = e.threads.is_some();
    let threads = *e.threads.get_or_insert(1);
    if !(1..=MAX_THREADS).contains(&threads) {
        return Err(err(
            "engine.threads",
            threads,
            format!("1 to {MAX_THREADS}"),
        ));
    }
    if threads > 1 && e.partitioned == Some(false) {
        return Err(err(
            "engine.threads",
            threads,
            "1 when engine.partitioned = false (threads run partitions)",
        ));
    }
    // Python schemes are called under the interpreter's lock, from one thread.
    let python = |v: &serde_json::Value| v.get("kind").and_then(|k| k.as_str()) == Some("python");
    if threads > 1
        && (python(&sc.switch.scheme) || sc.switch.overrides.iter().any(|o| python(&o.scheme)))
    {
        return Err(err(
            "engine.threads",
            threads,
            "1 with custom (Python or user) schemes",
        ));
    }
    let partitioned = *e.partitioned.get_or_insert(threads_given);
    if let Some(n) = e.max_events_per_instant {
        if !(1_000..=1_000_000_000_000).contains(&n) {
            return Err(err(
                "engine.max_events_per_instant",
                n,
                "1000 to 1000000000000 events",
            ));
        }
    }
    if let Some(d) = e.python_hook_timeout {
        if !(crate::engine::PS_PER_MS * 100..=crate::engine::PS_PER_S * 86_400).contains(&d.0) {
            return Err(err(
                "engine.python_hook_timeout",
                d,
                "100ms to 86400s of wall time",
            ));
        }
    }
    let order = e.lane_order.get_or_insert_with(|| "forward".into());
    one_of("engine.lane_order", order, &["forward", "reverse"])?;
    if let Some(mode) = &e.mode {
        one_of("engine.mode", mode, super::timeslots::MODES)?;
    }
    if !partitioned {
        return Ok(());
    }
    let tapped = sc.metrics.capture.is_some() || sc.metrics.trace.is_some();
    if threads > 1 && tapped {
        return Err(err(
            "engine.threads",
            threads,
            "1 with [metrics.capture] or [metrics.trace] (their records are shared by every partition)",
        ));
    }
    let refused = [
        (!sc.failures.is_empty(), "[[failures]]"),
        (sc.churn.is_some(), "[churn]"),
        (sc.emulation.is_some(), "[emulation]"),
    ];
    if let Some((_, what)) = refused.iter().find(|(on, _)| *on) {
        return Err(err(
            "engine.partitioned",
            true,
            format!("false with {what} (a link failing between partitions acts on the far side at once, which a partitioned run cannot order yet)"),
        ));
    }
    Ok(())
}

/// Kind "dma": the PCIe paper's DMA microbenchmarks.
fn dma_bench_spec(
    p: &mut crate::workload::dma_bench::Params,
    n_hosts: i64,
    technology: &str,
) -> Result<WorkloadSpec, ConfigError> {
    use crate::transport::dma::Op;
    if !technology.starts_with("pcie") {
        return Err(err(
            "workload.kind",
            format!("\"dma\" on {technology:?} links"),
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
    let count = super::checks::int_in("workload.count", *p.count.get_or_insert(10), 1, 10_000_000)?;
    let initiator = super::checks::int_in(
        "workload.initiator",
        *p.initiator.get_or_insert(0),
        0,
        n_hosts - 1,
    )?;
    let peers = super::checks::host_list("workload.peers", &p.peers, n_hosts)?
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

/// The workload kinds and their parameters. A new kind adds its line here.
pub const WORKLOADS: &[Kind] = &[
    Kind {
        name: "incast",
        keys: fields_of::<crate::workload::incast::Params>,
    },
    Kind {
        name: "flows",
        keys: fields_of::<crate::workload::flows::Params>,
    },
    Kind {
        name: "permutation",
        keys: fields_of::<crate::workload::long_lived::Params>,
    },
    Kind {
        name: "all_to_all",
        keys: fields_of::<crate::workload::long_lived::Params>,
    },
    Kind {
        name: "many_to_one",
        keys: fields_of::<crate::workload::long_lived::Params>,
    },
    Kind {
        name: "udp",
        keys: fields_of::<crate::workload::udp_source::Params>,
    },
    Kind {
        name: "ping",
        keys: fields_of::<crate::services::ping::Params>,
    },
    Kind {
        name: "reliable",
        keys: fields_of::<crate::services::reliable::Params>,
    },
    Kind {
        name: "multicast",
        keys: fields_of::<crate::services::multicast::Params>,
    },
    Kind {
        name: "aggregate",
        keys: fields_of::<crate::services::aggregate::Params>,
    },
    Kind {
        name: "kv",
        keys: fields_of::<crate::services::kv_clients::Params>,
    },
    Kind {
        name: "ramcloud",
        keys: fields_of::<crate::workload::ramcloud::Params>,
    },
    Kind {
        name: "dma",
        keys: fields_of::<crate::workload::dma_bench::Params>,
    },
    Kind {
        name: "job",
        keys: fields_of::<crate::workload::job::Params>,
    },
    Kind {
        name: "none",
        keys: fields_of::<crate::workload::NoParams>,
    },
    Kind {
        name: "mapreduce",
        keys: fields_of::<crate::workload::mapreduce::Params>,
    },
    Kind {
        name: "memcached",
        keys: fields_of::<crate::workload::memcached::Params>,
    },
    Kind {
        name: "services",
        keys: fields_of::<crate::services::user::Params>,
    },
];

/// Parses the workload kind's parameters, resolves them with `f`, and writes them back
/// with their defaults.
fn with_params<P: serde::de::DeserializeOwned + serde::Serialize>(
    w: &mut super::WorkloadCfg,
    f: impl FnOnce(&mut P) -> Result<WorkloadSpec, ConfigError>,
) -> Result<WorkloadSpec, ConfigError> {
    let mut p: P = super::kinds::parse("workload", WORKLOADS, &w.kind, &["kind"], &w.params)?;
    let spec = f(&mut p)?;
    super::kinds::write_back(&mut w.params, &p);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::size::machine_memory_bytes;

    fn resolve_json(json: &str) -> Result<Resolved, ConfigError> {
        resolve(super::super::parse_json(json)?)
    }

    #[test]
    fn huge_weights_still_give_probabilities_summing_to_one() {
        let r = resolve_json(
            r#"{"topology": {"kind": "single_switch", "hosts": 4}, "workload": {"kind": "flows",
                "size_classes": [{"size": "1000B", "weight": 1e308}, {"size": "9000B", "weight": 1e308}]}}"#,
        )
        .unwrap();
        let WorkloadSpec::Flows {
            sizes: FlowSizes::Classes(c),
            ..
        } = r.workload
        else {
            panic!("not size classes")
        };
        assert_eq!(
            c.iter().map(|k| k.probability).collect::<Vec<_>>(),
            vec![0.5, 0.5]
        );
    }

    #[test]
    fn a_network_too_big_for_the_machine_is_refused_before_it_is_built() {
        if machine_memory_bytes().is_none() {
            return;
        }
        let e = resolve_json(r#"{"topology": {"kind": "leaf_spine", "leaves": 4096, "spines": 4096}, "workload": {"kind": "permutation"}}"#).err().unwrap();
        assert_eq!(e.path, "topology");
        assert!(
            e.message.contains("GB to build") && e.message.contains("this machine's memory"),
            "{e}"
        );
    }

    #[test]
    fn devices_are_not_read() {
        let e = resolve_json(r#"{"topology": {"kind": "edge_list", "file": "/dev/zero"}, "workload": {"kind": "permutation"}}"#).err().unwrap();
        assert_eq!(e.path, "topology.file");
        assert!(e.message.contains("not a regular file"), "{e}");
    }
}
