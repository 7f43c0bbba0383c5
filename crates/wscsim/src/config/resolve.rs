//! Validation and defaults: turns a parsed `Scenario` into what the builder needs, and
//! fills every default into the scenario so that `summary.json` shows the run as it ran.

pub use super::checks::{
    check_fits, host_list, in_range, int_in, one_of, only_for, read_capped, DIABLO_PRESETS,
    MAX_EDGE_LIST_BYTES, MAX_HOSTS,
};
use super::kinds::{fields_of, Kind};
use super::{err, ConfigError, MetricsCfg, Scenario};
use crate::net::link::LinkTech;
use crate::net::Forwarding;
use crate::packet::TCP_IP_HEADER_BYTES;
use crate::topology::build::SwitchParams;
use crate::topology::Graph;
use crate::transport::TcpParams;
pub use crate::workload::WorkloadSpec;

mod observe;
mod switch;
mod workload;
use crate::transport::tcp::config::{resolve_tcp_rules, resolve_transport};
pub use crate::workload::WorkloadCtx;
use observe::*;
pub use observe::{capture_epoch_s, capture_port, switch_ports};
use switch::*;
use workload::resolve_workload;
pub use workload::{WorkloadBuild, WORKLOADS};

/// Largest buffer accepted (far above any switch; keeps byte arithmetic far from overflow).
pub const MAX_BUFFER_BYTES: u64 = 1 << 40;

pub use crate::workload::cdf::BUILTIN_CDFS;

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
    /// The sections of the transports that carry messages.
    pub messages: crate::transport::MessageSpecs,
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
    // The host's kernel chooses TCP's rules unless the scenario does (the stack was
    // checked with the host).
    let kernel_rules = crate::host::presets::stack(&sc.host.stack).map_or("rfc", |p| p.tcp_rules);
    resolve_tcp_rules(&mut sc.transport, kernel_rules, &host, &mut tcp)?;
    tcp.seed = sc.seed;
    let switch = resolve_switch(&mut sc, &graph, &tcp, &host_tech, preset_latency)?;

    let packed = graph.torus.is_some() && sc.runtime.as_ref().and_then(|r| r.pack) == Some(true);
    let ctx = WorkloadCtx {
        n_hosts,
        graph: &graph,
        host: &host,
        host_tech: &host_tech,
        host_rate_bps: rate,
        host_out_bps,
        duration: sc.duration,
        seed: sc.seed,
        udp_transport: sc.transport.kind == "udp",
        messages: crate::transport::MessageTransport::of_kind(&sc.transport.kind),
        packed,
    };
    let workload = resolve_workload(&mut sc.workload, &ctx)?;
    check_metrics(&sc.metrics, &graph, sc.duration)?;
    let failures = super::failures::resolve_failures(&mut sc, &graph)?;
    let runtime = super::runtime::resolve_runtime(&mut sc.runtime, &graph)?;
    let power = super::power::resolve_power(&mut sc.power)?;
    let dma = crate::transport::dma::resolve_dma(&mut sc.dma)?;
    let kind = &sc.transport.kind;
    let mut messages = crate::transport::MessageSpecs {
        roce: transport_section(sc.roce.as_mut(), "roce", kind, |p| p.resolve())?,
        ndp: transport_section(sc.ndp.as_mut(), "ndp", kind, |p| p.resolve())?,
        homa: transport_section(sc.homa.as_mut(), "homa", kind, |p| p.resolve())?,
        eqds: transport_section(sc.eqds.as_mut(), "eqds", kind, |p| p.resolve())?,
    };
    // Homa's receivers would measure the workload's sizes; here they are known.
    if let WorkloadSpec::Flows(f) = &workload {
        messages.homa.size_quantiles = f.sizes.quantiles(1000);
    }
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
        messages,
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

/// The most threads a run may ask for.
const MAX_THREADS: i64 = 64;

/// `[engine]`'s bounds on a run's events at one instant and on Python hooks' wall time.
fn check_engine_limits(e: &super::EngineCfg) -> Result<(), ConfigError> {
    if let Some(n) = e.max_events_per_instant {
        let allowed = "1000 to 1000000000000 events";
        crate::check::in_range(
            "engine.max_events_per_instant",
            n,
            1_000,
            1_000_000_000_000,
            allowed,
        )?;
    }
    if let Some(d) = e.python_hook_timeout {
        let (lo, hi) = (
            crate::engine::PS_PER_MS * 100,
            crate::engine::PS_PER_S * 86_400,
        );
        let allowed = "100ms to 86400s of wall time";
        crate::check::in_range(
            "engine.python_hook_timeout",
            d,
            crate::units::Duration(lo),
            crate::units::Duration(hi),
            allowed,
        )?;
    }
    Ok(())
}

/// `[engine]`: its values, and what a partitioned run does not take yet.
fn resolve_engine(sc: &mut Scenario) -> Result<(), ConfigError> {
    let Some(e) = sc.engine.as_mut() else {
        return Ok(());
    };
    let threads_given = e.threads.is_some();
    let threads = *e.threads.get_or_insert(1);
    crate::check::in_range(
        "engine.threads",
        threads,
        1,
        MAX_THREADS,
        format!("1 to {MAX_THREADS}"),
    )?;
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
        && (python(&sc.switch.scheme)
            || sc
                .switch
                .overrides
                .iter()
                .any(|o| o.scheme.as_ref().is_some_and(python)))
    {
        return Err(err(
            "engine.threads",
            threads,
            "1 with custom (Python or user) schemes",
        ));
    }
    let partitioned = *e.partitioned.get_or_insert(threads_given);
    check_engine_limits(e)?;
    let order = e.lane_order.get_or_insert_with(|| "forward".into());
    one_of("engine.lane_order", order, &["forward", "reverse"])?;
    e.spread_hosts.get_or_insert(true);
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
    if sc.emulation.is_some() {
        return Err(err(
            "engine.partitioned",
            true,
            "false with [emulation] (real frames arrive in wall-clock time, outside any window)",
        ));
    }
    Ok(())
}

/// A transport's own section (`[roce]`, `[ndp]`, `[homa]`, `[eqds]`), `name`: resolved when given with
/// `transport.kind = name`, refused with another kind, its defaults when left out.
fn transport_section<P, S: Default>(
    section: Option<&mut P>,
    name: &str,
    kind: &str,
    resolve: impl FnOnce(&mut P) -> Result<S, ConfigError>,
) -> Result<S, ConfigError> {
    match section {
        Some(_) if kind != name => Err(err(
            name,
            format!("a [{name}] section"),
            format!("one only with transport.kind = {name:?} (it is {kind:?})"),
        )),
        Some(p) => resolve(p),
        None => Ok(S::default()),
    }
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
        let WorkloadSpec::Flows(crate::workload::flows::FlowsSpec {
            sizes: crate::workload::flows::FlowSizes::Classes(c),
            ..
        }) = r.workload
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
