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
use crate::transport::cc::Variant;
use crate::transport::tcp::Recovery;
use crate::transport::TcpParams;
use crate::workload::cdf::Cdf;
use crate::workload::flows::{FlowSizes, SizeClass};
use crate::workload::udp_source::Target;
pub use crate::workload::WorkloadSpec;

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

/// Most queue-sampling instants in a run: the sampler runs at every one of them, whether
/// or not a port has anything to record (10^9 take some ten minutes).
const MAX_SAMPLING_INSTANTS: u64 = 1_000_000_000;

/// The `[metrics]` table: captures and traces name ports that exist; sample counts are
/// not negative; the run has at most `MAX_SAMPLING_INSTANTS`.
fn check_metrics(
    m: &MetricsCfg,
    graph: &Graph,
    duration: super::Duration,
) -> Result<(), ConfigError> {
    let interval = m.queue_sample_interval;
    let least = super::Duration(duration.0.div_ceil(MAX_SAMPLING_INSTANTS));
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

/// Kind "services": the runtime's services make the traffic, on a torus.
fn services_spec(graph: &Graph) -> Result<WorkloadSpec, ConfigError> {
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
fn load_generators_fit(graph: &Graph, kind: &str) -> Result<(), ConfigError> {
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

/// A file from one server to all others over six disjoint trees (a torus of 3 or more
/// servers along each axis).
fn multicast_spec(
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
    let size = w.size.get_or_insert(super::Bytes(750_000_000)).0;
    let payload = service_payload(&mut w.packet_size, tech)?;
    // A bit per packet at each member, for each instance.
    let members = n_hosts as u64 * roots.len() as u64;
    super::checks::tree_service_size(size, payload, members)?;
    let f = *w.rate_fraction.get_or_insert(0.98);
    // Kept in millionths: a smaller fraction would be 0, a tree that never sends.
    if !(f.is_finite() && (1e-6..=1.0).contains(&f)) {
        return Err(err("workload.rate_fraction", f, "from 0.000001 to 1"));
    }
    Ok(WorkloadSpec::Multicast(
        crate::services::multicast::MulticastSpec {
            roots,
            size_bytes: size,
            payload_bytes: payload,
            rate_fraction_ppm: (f * 1e6).round() as u32,
        },
    ))
}

/// Camdoop-style aggregation to one server up six trees.
fn aggregate_spec(
    w: &mut crate::services::aggregate::Params,
    graph: &Graph,
    tech: &LinkTech,
) -> Result<WorkloadSpec, ConfigError> {
    check_six_trees(graph, "aggregate")?;
    let n_hosts = graph.n_hosts() as i64;
    let root = int_in("workload.root", *w.root.get_or_insert(0), 0, n_hosts - 1)?;
    let size = w.size.get_or_insert(super::Bytes(100_000_000)).0;
    let payload = service_payload(&mut w.packet_size, tech)?;
    // A byte per packet at each server: how many children's packets it has merged.
    super::checks::tree_service_size(size, payload, 8 * n_hosts as u64)?;
    let f = *w.rate_fraction.get_or_insert(0.98);
    // Kept in millionths: a smaller fraction would be 0, a tree that never sends.
    if !(f.is_finite() && (1e-6..=1.0).contains(&f)) {
        return Err(err("workload.rate_fraction", f, "from 0.000001 to 1"));
    }
    Ok(WorkloadSpec::Aggregate(
        crate::services::aggregate::AggregateSpec {
            root,
            size_bytes: size,
            payload_bytes: payload,
            rate_fraction_ppm: (f * 1e6).round() as u32,
        },
    ))
}

/// A service over six disjoint trees needs a torus of at least 3 along each axis.
fn check_six_trees(graph: &Graph, kind: &str) -> Result<(), ConfigError> {
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
fn service_payload(
    packet_size: &mut Option<super::Bytes>,
    tech: &LinkTech,
) -> Result<u32, ConfigError> {
    let max_payload = u64::from(tech.mtu_bytes - crate::services::SERVICE_HEADER_BYTES);
    let payload = packet_size.get_or_insert(super::Bytes(max_payload)).0;
    if !(1..=max_payload).contains(&payload) {
        return Err(err(
            "workload.packet_size",
            payload,
            format!("1 to {max_payload} bytes (the MTU less CamCubeOS's 32-byte header)"),
        ));
    }
    Ok(payload as u32)
}

/// A reliable transfer's destination: a host, or None for "key" (a torus only).
fn reliable_destination(
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
fn reliable_spec(
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
    let size = w.size.get_or_insert(super::Bytes(1_000_000)).0;
    if size == 0 {
        return Err(err("workload.size", size, "at least 1 byte"));
    }
    let max_payload = u64::from(tech.mtu_bytes - crate::services::SERVICE_HEADER_BYTES);
    let payload = w.packet_size.get_or_insert(super::Bytes(max_payload)).0;
    if !(1..=max_payload).contains(&payload) {
        return Err(err(
            "workload.packet_size",
            payload,
            format!("1 to {max_payload} bytes (the MTU less CamCubeOS's 32-byte header)"),
        ));
    }
    let window = int_in("workload.window", *w.window.get_or_insert(64), 1, 1_000_000)?;
    let rto = *w
        .rto
        .get_or_insert(super::Duration(crate::engine::PS_PER_S / 100));
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
        payload_bytes: payload as u32,
        window,
        rto_ps: rto.0,
    }))
}

/// Pings from one host to others in turn (CamCubeOS's ping service).
fn ping_spec(
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
    let size = w.packet_size.get_or_insert(super::Bytes(max_payload)).0;
    if !(1..=max_payload).contains(&size) {
        return Err(err(
            "workload.packet_size",
            size,
            format!(
                "a ping payload from 1 to {max_payload} bytes (with the {header}-byte CamCubeOS header, at most the {}-byte MTU of {:?})",
                tech.mtu_bytes, tech.name
            ),
        ));
    }
    let timeout = *w
        .timeout
        .get_or_insert(super::Duration(crate::engine::PS_PER_S));
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

/// The workload of its kind, checked, with defaults filled in.
fn incast_spec(
    w: &mut crate::workload::incast::Params,
    n_hosts: i64,
) -> Result<WorkloadSpec, ConfigError> {
    let senders = int_in(
        "workload.senders",
        *w.senders.get_or_insert(n_hosts - 1),
        1,
        n_hosts - 1,
    )?;
    let client = int_in(
        "workload.client",
        *w.client.get_or_insert(0),
        0,
        n_hosts - 1,
    )?;
    let block = w.block.get_or_insert(super::Bytes(256 * 1024)).0;
    if block < senders as u64 {
        return Err(err(
            "workload.block",
            block,
            format!("at least one byte per sender ({senders})"),
        ));
    }
    let iterations = int_in(
        "workload.iterations",
        *w.iterations.get_or_insert(40),
        1,
        1_000_000,
    )?;
    let request = w.request.get_or_insert(super::Bytes(64)).0;
    if request == 0 {
        return Err(err("workload.request", request, "at least 1 byte"));
    }
    let servers = (0..n_hosts as u32)
        .filter(|&h| h != client)
        .take(senders as usize)
        .collect();
    Ok(WorkloadSpec::Incast {
        client,
        servers,
        block_bytes: block,
        iterations,
        request_bytes: request,
    })
}

/// Most flows a `flows` workload may start in a run: some 10 us of wall time and a
/// kilobyte of memory each.
const MAX_FLOWS: f64 = 1e7;

/// The workload of its kind, checked, with defaults filled in.
fn flows_spec(
    w: &mut crate::workload::flows::Params,
    n_hosts: i64,
    rate: u64,
    duration: super::Duration,
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
fn long_lived_spec(
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

/// The workload of its kind, checked, with defaults filled in.
/// `packed`: torus servers pack packets into shared frames (`runtime.pack`), so the links
/// carry more of them.
fn udp_spec(
    w: &mut crate::workload::udp_source::Params,
    graph: &Graph,
    host_out_bps: u64,
    tech: &LinkTech,
    packed: bool,
) -> Result<WorkloadSpec, ConfigError> {
    let n_hosts = graph.n_hosts() as i64;
    let max_payload = u64::from(tech.mtu_bytes - UDP_IP_HEADER_BYTES);
    let size = w.packet_size.get_or_insert(super::Bytes(max_payload)).0;
    if !(1..=max_payload).contains(&size) {
        return Err(err(
            "workload.packet_size",
            size,
            format!(
                "a UDP payload from 1 to {max_payload} bytes (an IP packet of at most the {}-byte MTU of {:?})",
                tech.mtu_bytes, tech.name
            ),
        ));
    }
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
    // Checked before the rate, which depends on the links used.
    let neighbours = match w.destination {
        Some(super::Destination::Neighbours) => Some(neighbours_target(w, graph)?),
        _ => None,
    };
    let r = udp_rate(w, graph, ip, wire)?;
    let max_ip_rate = (host_out_bps as f64 * ip as f64 / wire).floor() as u64;
    if r > max_ip_rate {
        return Err(err("workload.rate", super::Rate(r), format!("at most {} of IP traffic, what the host's links ({}) carry at this packet size with {:?} framing", super::Rate(max_ip_rate), super::Rate(host_out_bps), tech.name)));
    }
    if let (Some(l), false) = (
        w.links,
        w.destination == Some(super::Destination::Neighbours),
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
    let destination = match (dst, w.destination) {
        (Some(h), _) => Target::Host(h),
        (None, Some(super::Destination::RoundRobin)) => Target::RoundRobin,
        (None, Some(super::Destination::Neighbours)) => neighbours.expect("checked above"),
        (None, Some(super::Destination::RandomKey)) => {
            if graph.torus.is_none() {
                return Err(err(
                    "workload.destination",
                    "\"random_key\"",
                    "a host index, \"random\" or \"round_robin\" (keys need a topology.kind = \"torus3d\")",
                ));
            }
            Target::RandomKey
        }
        (None, Some(super::Destination::RandomReachable)) => {
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
    };
    Ok(WorkloadSpec::Udp {
        sources,
        destination,
        rate_bps: r,
        payload_bytes: size as u32,
        poisson: arrival == "poisson",
    })
}

/// Destination "neighbours": a torus, and `workload.links` from 1 to the links a server has.
fn neighbours_target(
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
fn udp_rate(
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
                    format!("nothing when workload.rate is given (give one of the two; this load gives {})", super::Rate(r)),
                ));
            }
            w.rate = Some(super::Rate(r));
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
fn rate_from_load(
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
            super::Destination::Random
                | super::Destination::RoundRobin
                | super::Destination::RandomKey
                | super::Destination::RandomReachable
                | super::Destination::Neighbours
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
        Some(super::Destination::Neighbours) => {
            w.links.unwrap_or(6).clamp(1, 6) as f64 * link_bps as f64
        }
        _ => crate::net::routing::torus::expected_all_to_all_bps(dims, link_bps),
    };
    Ok((l * expected * ip as f64 / wire).floor() as u64)
}

/// `[metrics.capture]`: hosts in range and each once; ports as "SWITCH:INDEX" naming a
/// switch of the topology and one of its ports.
fn check_capture(c: &super::CaptureCfg, graph: &Graph) -> Result<(), ConfigError> {
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
pub fn capture_epoch_s(c: &super::CaptureCfg) -> Result<u64, ConfigError> {
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
fn check_trace(t: &super::TraceCfg, graph: &Graph) -> Result<(), ConfigError> {
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

/// `[switch]`: buffers, forwarding, latency and schemes (with `host.nic_scheme`).
fn resolve_switch(
    sc: &mut Scenario,
    graph: &Graph,
    tcp: &TcpParams,
    tech: &LinkTech,
    preset_latency: crate::engine::TimePs,
) -> Result<SwitchParams, ConfigError> {
    let s = &mut sc.switch;
    one_of(
        "switch.buffer",
        &s.buffer,
        &["per_port", "per_input_port", "shared"],
    )?;
    let names: Vec<&str> = super::switch_model::SWITCH_MODELS
        .iter()
        .map(|m| m.name)
        .collect();
    one_of("switch.model", &s.model, &names)?;
    let model = super::switch_model::by_name(&s.model).expect("checked above");
    let forwarding = s.forwarding.get_or_insert_with(|| {
        if model.cut_through {
            "cut_through"
        } else {
            "store_and_forward"
        }
        .into()
    });
    one_of(
        "switch.forwarding",
        forwarding,
        &["store_and_forward", "cut_through"],
    )?;
    let cut_through = forwarding == "cut_through";
    let scheme = super::scheme::resolve_scheme("switch.scheme", &mut s.scheme)?;
    let nic_scheme = super::scheme::resolve_scheme("host.nic_scheme", &mut sc.host.nic_scheme)?;
    if matches!(nic_scheme, crate::scheme::SchemeSpec::Custom { .. }) {
        return Err(err(
            "host.nic_scheme.kind",
            "\"python\"",
            "a built-in scheme (custom schemes run on switches)",
        ));
    }
    let overrides = scheme_overrides(&mut s.overrides, graph)?;
    let shared = buffers(s, graph, tcp.mss_bytes, tech)?;
    let p2p = s
        .port_to_port_latency
        .get_or_insert(super::Duration(
            model.port_to_port_ps.unwrap_or(preset_latency),
        ))
        .0;
    Ok(SwitchParams {
        buffer_per_port_bytes: s.buffer_per_port.0,
        shared_buffer_bytes: shared,
        ingress_buffers: s.buffer == "per_input_port",
        dt_alpha: s.dt_alpha,
        port_to_port_ps: p2p,
        forwarding: if cut_through {
            Forwarding::CutThrough
        } else {
            Forwarding::StoreAndForward
        },
        scheme,
        overrides,
        nic_scheme,
        seed: sc.seed,
    })
}

/// `switch.buffer_per_port` and `shared_buffer`: in range and at least one full frame;
/// returns the shared buffer's size when the buffer is shared.
fn buffers(
    s: &mut super::SwitchCfg,
    graph: &Graph,
    mss_bytes: u32,
    tech: &LinkTech,
) -> Result<Option<u64>, ConfigError> {
    let full_frame = tech.frame_bytes(mss_bytes + TCP_IP_HEADER_BYTES) as u64;
    for (path, b) in [
        ("switch.buffer_per_port", Some(s.buffer_per_port)),
        ("switch.shared_buffer", s.shared_buffer),
    ] {
        if let Some(b) = b {
            if b.0 > MAX_BUFFER_BYTES {
                return Err(err(path, b, "at most 1TiB"));
            }
        }
    }
    if s.buffer_per_port.0 < full_frame {
        return Err(err(
            "switch.buffer_per_port",
            s.buffer_per_port,
            format!(
                "at least one full-size frame ({full_frame} bytes at transport.mss = {})",
                mss_bytes
            ),
        ));
    }
    let shared = if s.buffer == "shared" {
        let max_ports = graph_max_switch_ports(graph);
        let total = *s
            .shared_buffer
            .get_or_insert(super::Bytes(s.buffer_per_port.0.saturating_mul(max_ports)));
        if total.0 < full_frame {
            return Err(err(
                "switch.shared_buffer",
                total,
                format!("at least one full-size frame ({full_frame} bytes)"),
            ));
        }
        if !(s.dt_alpha.is_finite() && s.dt_alpha > 0.0 && s.dt_alpha <= 1000.0) {
            return Err(err(
                "switch.dt_alpha",
                s.dt_alpha,
                "a number greater than 0, at most 1000 (1 is the usual dynamic threshold)",
            ));
        }
        Some(total.0)
    } else {
        only_for(
            "switch.shared_buffer",
            &s.shared_buffer,
            "switch.buffer = \"shared\" (it is",
            &s.buffer,
        )?;
        None
    };
    Ok(shared)
}

/// `switch.overrides`: each names the tiers or switches its scheme is for.
fn scheme_overrides(
    list: &mut [super::OverrideCfg],
    graph: &Graph,
) -> Result<Vec<crate::topology::build::SchemeOverride>, ConfigError> {
    let mut overrides = Vec::new();
    for (i, o) in list.iter_mut().enumerate() {
        let at = format!("switch.overrides[{i}]");
        let spec = super::scheme::resolve_scheme(&format!("{at}.scheme"), &mut o.scheme)?;
        let tiers = match &o.tiers {
            Some(t) => t
                .iter()
                .map(|&v| int_in(&format!("{at}.tiers"), v, 0, 255).map(|v| v as u8))
                .collect::<Result<Vec<_>, _>>()?,
            None => vec![],
        };
        let names = o.switches.clone().unwrap_or_default();
        for n in &names {
            if !graph
                .nodes
                .iter()
                .any(|nd| nd.kind == crate::net::NodeKind::Switch && &nd.name == n)
            {
                return Err(err(&format!("{at}.switches"), format!("{n:?}"), "names of switches in the topology (see summary.json's switches, e.g. \"tor0\")"));
            }
        }
        if tiers.is_empty() && names.is_empty() {
            return Err(err(
                &at,
                "neither tiers nor switches",
                "tiers = [..] or switches = [..] saying which switches the scheme is for",
            ));
        }
        overrides.push(crate::topology::build::SchemeOverride {
            tiers,
            switches: names,
            spec,
        });
    }
    Ok(overrides)
}

/// `[transport]`: its variant and timers, checked.
fn resolve_transport(
    tr: &mut super::TransportCfg,
    tech: &LinkTech,
) -> Result<TcpParams, ConfigError> {
    one_of("transport.kind", &tr.kind, &["tcp", "udp"])?;
    one_of(
        "transport.variant",
        &tr.variant,
        &["newreno", "cubic", "dctcp", "pfabric"],
    )?;
    if tr.variant == "dctcp" {
        // DCTCP needs ECN-capable packets; say so in the resolved scenario.
        tr.ecn = true;
    }
    if tr.rto_min.0 == 0 {
        return Err(err(
            "transport.rto_min",
            tr.rto_min,
            "a positive duration such as \"200ms\" or \"1ms\"",
        ));
    }
    // Both find losses through SACK's scoreboard; without it they would do nothing.
    for (path, on) in [("transport.tlp", tr.tlp), ("transport.rack", tr.rack)] {
        if on && !tr.sack {
            return Err(err(
                path,
                on,
                "false unless transport.sack = true (it needs SACK)",
            ));
        }
    }
    if tr.rto_max.0 < tr.rto_min.0 {
        return Err(err(
            "transport.rto_max",
            tr.rto_max,
            format!("at least transport.rto_min ({})", tr.rto_min),
        ));
    }
    let max_mss = u64::from(tech.mtu_bytes - TCP_IP_HEADER_BYTES);
    let mss = *tr.mss.get_or_insert(super::Bytes(max_mss));
    if !(64..=max_mss).contains(&mss.0) {
        return Err(err(
            "transport.mss",
            mss,
            format!(
                "from 64 to {max_mss} bytes (the {}-byte MTU of topology.link.technology = {:?}, less 40 bytes of IPv4 and TCP headers)",
                tech.mtu_bytes, tech.name
            ),
        ));
    }
    let iw = int_in("transport.initial_window", tr.initial_window, 1, 10_000)?;
    if tr.rcv_window.0 < mss.0 || tr.rcv_window.0 > 1 << 30 {
        return Err(err(
            "transport.rcv_window",
            tr.rcv_window,
            format!(
                "from one segment (transport.mss = {}) to 1GiB (TCP's largest scaled window)",
                mss.0
            ),
        ));
    }
    if tr.delayed_ack && tr.delayed_ack_timeout.0 == 0 {
        return Err(err(
            "transport.delayed_ack_timeout",
            tr.delayed_ack_timeout,
            "a positive duration (or transport.delayed_ack = false)",
        ));
    }
    Ok(TcpParams {
        variant: match tr.variant.as_str() {
            "cubic" => Variant::Cubic,
            "dctcp" => Variant::Dctcp,
            "pfabric" => Variant::PFabric,
            _ => Variant::NewReno,
        },
        mss_bytes: mss.0 as u32,
        initial_window_segments: iw,
        rto_min_ps: tr.rto_min.0,
        rto_max_ps: tr.rto_max.0,
        rcv_window_bytes: tr.rcv_window.0,
        delayed_ack: tr.delayed_ack,
        delayed_ack_ps: tr.delayed_ack_timeout.0,
        ecn: tr.ecn,
        tsq_limit_bytes: tr.tsq_limit.0,
        sack: tr.sack,
        recovery: Recovery::Rfc6675,
        limited_transmit: false,
        linux_rto: false,
        rto_granularity_ps: 0,
        seed: 0,
        quickack: false,
        tlp: tr.tlp,
        initial_rto_ps: 0,
        rack: tr.rack,
    })
}

/// `transport.rules` and the keys it sets (`recovery`, `limited_transmit`, `rto_formula`,
/// `rto_granularity`, `quickack`), each written back. A Linux host stack's kernel is the default:
/// 2.6.39 recovers by rate halving, 3.5 (from 3.2) by proportional rate reduction; both
/// have limited transmit, quick-ack mode, Linux's timeout formula and timers on the jiffy
/// clock (the host noise's tick, else HZ 250).
fn resolve_tcp_rules(
    tr: &mut super::TransportCfg,
    stack: &str,
    host: &crate::host::HostSpec,
    tcp: &mut TcpParams,
) -> Result<(), ConfigError> {
    let rules = tr.rules.get_or_insert_with(|| {
        match stack {
            "linux_2_6_39" | "linux_3_5" => stack,
            _ => "rfc",
        }
        .into()
    });
    one_of(
        "transport.rules",
        rules,
        &["rfc", "linux_2_6_39", "linux_3_5"],
    )?;
    let linux = rules != "rfc";
    let recovery = tr.recovery.get_or_insert_with(|| {
        match rules.as_str() {
            "linux_2_6_39" => "rate_halving",
            "linux_3_5" => "prr",
            _ => "rfc6675",
        }
        .into()
    });
    one_of(
        "transport.recovery",
        recovery,
        &["rfc6675", "prr", "rate_halving"],
    )?;
    tcp.recovery = match recovery.as_str() {
        "prr" => Recovery::Prr,
        "rate_halving" => Recovery::RateHalving,
        _ => Recovery::Rfc6675,
    };
    tcp.limited_transmit = *tr.limited_transmit.get_or_insert(linux);
    tcp.quickack = *tr.quickack.get_or_insert(linux);
    let formula = tr
        .rto_formula
        .get_or_insert_with(|| if linux { "linux" } else { "rfc6298" }.into());
    one_of("transport.rto_formula", formula, &["rfc6298", "linux"])?;
    tcp.linux_rto = formula == "linux";
    let hz = if host.noise.tick_hz > 0.0 {
        host.noise.tick_hz
    } else {
        250.0
    };
    let jiffy = super::Duration((crate::engine::PS_PER_S as f64 / hz).round() as u64);
    let g = tr
        .rto_granularity
        .get_or_insert(if linux { jiffy } else { super::Duration(0) })
        .0;
    if g > 0 && g > tcp.rto_min_ps.max(crate::engine::PS_PER_MS) * 1000 {
        return Err(err(
            "transport.rto_granularity",
            super::Duration(g),
            "0s (exact timers) or a timer tick at most 1000 times transport.rto_min",
        ));
    }
    tcp.rto_granularity_ps = g;
    let initial = tr
        .initial_rto
        .get_or_insert(super::Duration(
            if rules == "linux_2_6_39" { 3 } else { 1 } * crate::engine::PS_PER_S,
        ))
        .0;
    if initial < tcp.rto_min_ps || initial > tcp.rto_max_ps {
        return Err(err(
            "transport.initial_rto",
            super::Duration(initial),
            "a duration from transport.rto_min to transport.rto_max",
        ));
    }
    tcp.initial_rto_ps = initial;
    Ok(())
}

/// `workload.sources` (default: every host but the destination) and `workload.destination`
/// (default 0), checked and written back as resolved.
/// (`destination` None: "random", allowed only when `allow_random`; then every host sends
/// by default.)
fn sources_and_destination(
    destination: &mut Option<super::Destination>,
    sources_cfg: &mut Option<Vec<i64>>,
    n_hosts: i64,
    allow_random: bool,
) -> Result<(Vec<u32>, Option<u32>), ConfigError> {
    let d = *destination.get_or_insert(super::Destination::Host(0));
    let given = serde_json::to_string(&d).expect("a destination serialises");
    let given = given.as_str();
    let dst = match d {
        super::Destination::Host(h) => Some(int_in("workload.destination", h, 0, n_hosts - 1)?),
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

fn graph_max_switch_ports(g: &Graph) -> u64 {
    let mut deg = vec![0u64; g.nodes.len()];
    for l in &g.links {
        deg[l.a as usize] += 1;
        deg[l.b as usize] += 1;
    }
    g.nodes
        .iter()
        .zip(deg)
        .filter(|(n, _)| n.kind == crate::net::NodeKind::Switch)
        .map(|(_, d)| d)
        .max()
        .unwrap_or(1)
}

/// `workload.size_classes`: positive sizes, weights that are positive (normalised to
/// probabilities) and DSCP values from 0 to 63.
fn size_classes(classes: &[super::SizeClassCfg]) -> Result<FlowSizes, ConfigError> {
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
