//! Building a simulation's parts from a resolved scenario: traces and captures, the
//! CamCubeOS services a workload drives, torus packing, failures, a partitioned run's
//! partitions and lanes.

use super::parallel::global_kind;
use super::*;
use crate::engine::partitioned::balance::LaneBalance;

/// Marks the connections and ports a scenario's `[metrics.trace]` names (validated).
pub(super) fn install_traces(
    net: &mut crate::net::Network,
    tcp: &mut crate::transport::Tcp,
    graph: &crate::topology::Graph,
    t: &config::TraceCfg,
) {
    let mut wanted: Vec<u32> = t.flows.iter().map(|&f| f as u32).collect();
    wanted.sort_unstable();
    wanted.dedup();
    tcp.set_trace(wanted, t.max_records as usize);
    net.queue_trace_mut().max_records = t.max_records as usize;
    for (node, local) in
        config::resolve::switch_ports("metrics.trace.ports", &t.ports, graph).expect("validated")
    {
        net.trace_queue(node, local);
    }
}

/// Taps the ports a scenario's `[metrics.capture]` names (already validated).
pub(super) fn install_captures(
    net: &mut crate::net::Network,
    graph: &crate::topology::Graph,
    c: &config::CaptureCfg,
) -> Result<(), ConfigError> {
    net.captures_mut().max_packets = c.max_packets as u64;
    for (i, &h) in c.hosts.iter().enumerate() {
        net.tap_host(h as u32).map_err(|m| ConfigError {
            path: format!("metrics.capture.hosts[{i}]"),
            message: format!("given {h}, {m}"),
        })?;
    }
    let ports = config::resolve::switch_ports("metrics.capture.ports", &c.ports, graph)?;
    for (i, (node, local)) in ports.into_iter().enumerate() {
        net.tap_switch_port(node, local).map_err(|m| ConfigError {
            path: format!("metrics.capture.ports[{i}]"),
            message: format!("given {:?}, {m}", c.ports[i]),
        })?;
    }
    Ok(())
}

/// Torus links pack waiting packets into one frame (`runtime.pack`); hosts that cost time
/// charge each frame's sending work as it leaves.
pub(super) fn install_packing(net: &mut Network, hosts: &mut Hosts) {
    let tech = net.techs()[net.host_tech()[0] as usize];
    hosts.packing = hosts.costed;
    net.pack_frames(tech, hosts.packing);
}

/// Schedules the failures of a run: nodes failing whole and links, down and back up.
pub(super) fn schedule_failures(
    ev: &mut EventQueue<SimEvent>,
    net: &Network,
    graph: &crate::topology::Graph,
    failures: &config::failures::Failures,
) {
    for w in &failures.windows {
        ev.schedule(
            w.down_ps,
            SimEvent::Net(NetEvent::NodeDown { node: w.node }),
        );
        if w.up_ps != crate::engine::NEVER {
            ev.schedule(w.up_ps, SimEvent::Net(NetEvent::NodeUp { node: w.node }));
        }
    }
    for f in &failures.links {
        for port in crate::topology::build::ports_of_link(net, graph, f.link) {
            ev.schedule(f.down_ps, SimEvent::Net(NetEvent::LinkDown { port }));
            if f.up_ps != crate::engine::NEVER {
                ev.schedule(f.up_ps, SimEvent::Net(NetEvent::LinkUp { port }));
            }
        }
    }
}

/// A partitioned run's lanes and threads (`partition_run`) when `[engine] partitioned`
/// asks for one; else none.
pub(super) fn partition_if_asked(
    net: &mut Network,
    ev: &mut EventQueue<SimEvent>,
    engine: Option<&config::EngineCfg>,
    hosts_anywhere: bool,
) -> Result<LaneBalance, ConfigError> {
    match engine {
        Some(e) if e.partitioned == Some(true) => partition_run(net, ev, e, hosts_anywhere),
        _ => Ok(LaneBalance::default()),
    }
}

/// Sets a partitioned run up (`[engine] partitioned`): the network's partitions and their
/// wires, the queue's lanes, and how many threads run which lanes. Hosts are given
/// partitions of their own unless `hosts_anywhere` (the layers above the network keep
/// their state by host, so that hosts' partitions may run on any thread): then they stay
/// with their switches, and the lookahead is not cut to a host link's propagation delay.
fn partition_run(
    net: &mut Network,
    ev: &mut EventQueue<SimEvent>,
    e: &config::EngineCfg,
    hosts_anywhere: bool,
) -> Result<LaneBalance, ConfigError> {
    let (lookahead_ps, n) = net
        .partition_wires(!hosts_anywhere)
        .map_err(|m| config::err("engine.partitioned", true, format!("false: {m}")))?;
    ev.partition(n, lookahead_ps, global_kind);
    // One arena of packets per partition, and one for global events (`EventQueue::arena`).
    net.pool_mut().set_arenas(n + 1);
    ev.set_lane_order_reversed(e.lane_order.as_deref() == Some("reverse"));
    let threads = e.threads.unwrap_or(1) as usize;
    ev.meet_at_windows(threads > 1);
    if threads > 1 && net.schemes().iter().any(|s| s.is_custom()) {
        return Err(config::err(
            "engine.threads",
            threads,
            "1 with custom (Python or user) schemes",
        ));
    }
    // Helpers run partitions without hosts; at first by ports, then by measured cost.
    Ok(LaneBalance::new(
        threads,
        &net.ports_per_partition(n),
        net.fabric_only(n),
    ))
}

/// The network, built with its schemes (`custom` makes Python or user ones), and its
/// hosts; torus links pack frames when `pack`.
pub(super) fn network_and_hosts(
    graph: &crate::topology::Graph,
    switch: &crate::topology::build::SwitchParams,
    custom: Option<&mut CustomFactory>,
    host: crate::host::HostSpec,
    pack: bool,
) -> Result<(Network, Hosts), ConfigError> {
    let mut net = build_network_with(graph, switch, custom).map_err(|m| ConfigError {
        path: "switch.scheme".into(),
        message: m,
    })?;
    net.check_trimming(switch.pfc.is_some())?;
    if let Some(pfc) = &switch.pfc {
        net.enable_pfc(pfc.clone())?;
    }
    let mut hosts = Hosts::new(host, net.n_hosts());
    if pack {
        install_packing(&mut net, &mut hosts);
    }
    Ok((net, hosts))
}

/// The timeslot engine of `engine.mode = "timeslots"` (for open-loop UDP sources), None
/// for the event engine.
pub(super) fn timeslot_engine(
    workload: &crate::workload::WorkloadSpec,
    scenario: &Scenario,
    net: &Network,
) -> Result<Option<slots::Slots>, ConfigError> {
    match (
        workload,
        config::EngineCfg::timeslots(scenario.engine.as_ref()),
    ) {
        (
            crate::workload::WorkloadSpec::Udp(crate::workload::udp_source::UdpSpec {
                sources,
                payload_bytes,
                ..
            }),
            true,
        ) => {
            let host = sources.first().copied().unwrap_or(0);
            Ok(Some(slots::Slots::new(net, host, *payload_bytes)?))
        }
        _ => Ok(None),
    }
}

/// The host indices of the nodes that fail whole during the run.
pub(super) fn failed_hosts(failures: &config::failures::Failures, net: &Network) -> Vec<u32> {
    failures
        .nodes
        .iter()
        .filter(|&&n| net.nodes()[n as usize].kind == crate::net::NodeKind::Host)
        .map(|&n| net.nodes()[n as usize].index)
        .collect()
}

/// The metrics layer, sampling queues as `[metrics]` says.
pub(super) fn metrics_for(cfg: &config::MetricsCfg) -> Metrics {
    Metrics {
        sample_interval_ps: cfg.queue_sample_interval.0,
        max_queue_samples: cfg.max_queue_samples as usize,
        ..Default::default()
    }
}

/// What forwarding needs beyond the topology: key-based routing (with its failure
/// detection), the services' queues on servers that forward, the NICs' send slots.
pub(super) fn install_forwarding(
    net: &mut Network,
    failures: &config::failures::Failures,
    service_queues: Option<Vec<crate::net::service_queues::QueueSpec>>,
    seed: u64,
) {
    net.install_kbr(failures.detection, seed);
    net.install_service_queues(service_queues);
    net.use_nic_slots();
}
