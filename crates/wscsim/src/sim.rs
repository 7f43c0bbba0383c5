//! A simulation: the network, transports and applications of one scenario, the event loop
//! that drives them, and the results it hands back.

use crate::config::{self, ConfigError, Resolved, Scenario};
use crate::engine::{Driver, EventQueue, TimePs};
use crate::host::{HostEvent, Hosts};
use crate::metrics::{self, Metrics, MetricsEvent, Table};
use crate::net::{NetEvent, Network, Upcall};
use crate::scheme::spec::CustomFactory;
use crate::topology::build::build_network_with;
use crate::transport::{self, Tcp, TcpEvent, Udp};
use crate::workload::{memcached, AppEvent, Apps, Stack};

/// Every layer's events, one variant per layer. Each layer schedules and handles its own
/// enum; this one only routes an event to its layer. 12 bytes, like the layers' own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimEvent {
    Net(NetEvent),
    Host(HostEvent),
    Tcp(TcpEvent),
    App(AppEvent),
    Metrics(MetricsEvent),
}

macro_rules! layer_events {
    ($($variant:ident($ty:ty)),*) => {$(
        impl From<$ty> for SimEvent {
            #[inline]
            fn from(e: $ty) -> Self {
                SimEvent::$variant(e)
            }
        }
    )*};
}
layer_events!(
    Net(NetEvent),
    Host(HostEvent),
    Tcp(TcpEvent),
    App(AppEvent),
    Metrics(MetricsEvent)
);

pub struct Sim {
    pub scenario: Scenario,
    pub ev: EventQueue<SimEvent>,
    pub net: Network,
    /// The hosts' CPUs and NICs (a no-op for the ideal stack).
    pub hosts: Hosts,
    pub tcp: Tcp,
    pub udp: Udp,
    pub apps: Apps,
    pub metrics: Metrics,
    started: bool,
    finished: bool,
}

/// Borrows the layers below the applications out of a `Sim`.
macro_rules! stack {
    ($s:expr) => {
        Stack {
            ev: &mut $s.ev,
            net: &mut $s.net,
            hosts: &mut $s.hosts,
            tcp: &mut $s.tcp,
            udp: &mut $s.udp,
            metrics: &mut $s.metrics,
        }
    };
}

/// Invariants checked at the end of every run.
#[derive(Clone, Copy, Debug)]
pub struct Invariants {
    pub packets_sent: u64,
    pub packets_delivered: u64,
    pub packets_dropped: u64,
    pub packets_in_flight: u64,
    pub buffer_violations: u64,
    pub time_reversals: u64,
}

impl Invariants {
    pub fn ok(&self) -> bool {
        self.packets_sent == self.packets_delivered + self.packets_dropped + self.packets_in_flight
            && self.buffer_violations == 0
            && self.time_reversals == 0
    }
}

/// Marks the connections and ports a scenario's `[metrics.trace]` names (validated).
fn install_traces(
    net: &mut crate::net::Network,
    tcp: &mut Tcp,
    graph: &crate::topology::Graph,
    t: &config::TraceCfg,
) {
    let mut wanted: Vec<u32> = t.flows.iter().map(|&f| f as u32).collect();
    wanted.sort_unstable();
    wanted.dedup();
    tcp.trace.wanted = wanted;
    tcp.trace.max_samples = t.max_records as usize;
    net.queue_trace.max_records = t.max_records as usize;
    for (node, local) in
        config::resolve::switch_ports("metrics.trace.ports", &t.ports, graph).expect("validated")
    {
        net.trace_queue(node, local);
    }
}

/// Taps the ports a scenario's `[metrics.capture]` names (already validated).
fn install_captures(
    net: &mut crate::net::Network,
    graph: &crate::topology::Graph,
    c: &config::CaptureCfg,
) -> Result<(), ConfigError> {
    net.captures.max_packets = c.max_packets as u64;
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

impl Sim {
    /// Builds a simulation from scenario JSON, refusing bad input with a named field.
    pub fn from_json(text: &str) -> Result<Sim, ConfigError> {
        let sc = config::parse_json(text)?;
        Self::from_scenario(sc)
    }

    /// Validates scenario JSON without building the network (fast even for the largest
    /// topologies); returns the scenario with every default filled in.
    pub fn check_json(text: &str) -> Result<serde_json::Value, ConfigError> {
        let r = config::resolve(config::parse_json(text)?)?;
        Ok(serde_json::to_value(&r.scenario).expect("a resolved scenario serialises"))
    }

    pub fn from_scenario(sc: Scenario) -> Result<Sim, ConfigError> {
        Self::from_scenario_with(sc, None)
    }

    /// Like `from_json`, with a factory for custom (`kind = "python"` or user) schemes.
    pub fn from_json_with(
        text: &str,
        custom: Option<&mut CustomFactory>,
    ) -> Result<Sim, ConfigError> {
        Self::from_scenario_with(config::parse_json(text)?, custom)
    }

    pub fn from_scenario_with(
        sc: Scenario,
        custom: Option<&mut CustomFactory>,
    ) -> Result<Sim, ConfigError> {
        let r = config::resolve(sc)?;
        Self::build(r, custom)
    }

    fn build(r: Resolved, custom: Option<&mut CustomFactory>) -> Result<Sim, ConfigError> {
        let Resolved {
            scenario,
            graph,
            switch,
            tcp,
            workload,
            host,
            failures,
        } = r;
        let mut net = build_network_with(&graph, &switch, custom).map_err(|m| ConfigError {
            path: "switch.scheme".into(),
            message: m,
        })?;
        let hosts = Hosts::new(host, net.n_hosts());
        net.track_nic_departures = tcp.tsq_limit_bytes > 0;
        let mut tcp = Tcp::new(tcp);
        if let Some(t) = &scenario.metrics.trace {
            install_traces(&mut net, &mut tcp, &graph, t);
        }
        let end_ps = scenario.duration.0;
        let apps = Apps::build(
            workload,
            &mut tcp,
            scenario.seed,
            net.n_hosts() as u32,
            end_ps,
        );
        if let Some(c) = &scenario.metrics.capture {
            install_captures(&mut net, &graph, c)?;
        }
        let metrics = Metrics {
            sample_interval_ps: scenario.metrics.queue_sample_interval.0,
            max_queue_samples: scenario.metrics.max_queue_samples as usize,
            ..Default::default()
        };
        let mut ev = EventQueue::new();
        for f in &failures {
            for port in crate::topology::build::ports_of_link(&net, &graph, f.link) {
                ev.schedule(f.down_ps, SimEvent::Net(NetEvent::LinkDown { port }));
                if f.up_ps != crate::engine::NEVER {
                    ev.schedule(f.up_ps, SimEvent::Net(NetEvent::LinkUp { port }));
                }
            }
        }
        Ok(Sim {
            scenario,
            ev,
            net,
            hosts,
            tcp,
            udp: Udp {
                steady_from_ps: end_ps / 2,
                ..Default::default()
            },
            apps,
            metrics,
            started: false,
            finished: false,
        })
    }

    fn start(&mut self) {
        self.started = true;
        self.apps.start(&mut stack!(self));
        if self.metrics.sample_interval_ps > 0 && self.metrics.max_queue_samples > 0 {
            self.ev.schedule(0, MetricsEvent::Sample.into());
        }
    }

    /// Whether the run has ended (workload done or duration reached).
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// Simulated time now, in picoseconds.
    pub fn now_ps(&self) -> TimePs {
        self.ev.now()
    }

    pub fn end_ps(&self) -> TimePs {
        self.apps.end_ps
    }

    /// Runs until simulated time `until_ps` (or the end of the run). Returns whether the run ended.
    pub fn run_until(&mut self, until_ps: TimePs) -> bool {
        if !self.started {
            self.start();
        }
        let horizon = until_ps.min(self.apps.end_ps);
        while !self.finished {
            let Some(e) = self.ev.next_due(horizon) else {
                break;
            };
            if let Some(next) = self.ev.peek() {
                self.prefetch(next);
            }
            if self.net.check_partitions {
                self.net.enter_partition(self.partition_of(e.kind));
            }
            self.handle(e.kind);
            if !self.net.nic_departures.is_empty() {
                let Sim {
                    net,
                    hosts,
                    ev,
                    tcp,
                    ..
                } = self;
                tcp.on_nic_departures(net, hosts, ev);
                self.apps.dispatch_notes(&mut stack!(self));
            }
            if self.apps.done() {
                self.finished = true;
            }
        }
        if !self.finished {
            self.ev.idle_until(horizon);
            if horizon >= self.apps.end_ps || Driver::is_empty(&self.ev) {
                self.finished = true;
            }
        }
        if self.finished {
            self.apps.finish(&self.udp, &mut self.metrics);
        }
        self.finished
    }

    pub fn run(&mut self) {
        self.run_until(self.apps.end_ps);
    }

    /// Starts loading what the next event will touch, so that its cache misses overlap
    /// this event's work (large arrays of connections miss on every access).
    #[inline]
    fn prefetch(&self, next: SimEvent) {
        match next {
            SimEvent::Net(NetEvent::LinkArrive { port }) => self.net.prefetch_arrival(port),
            SimEvent::Tcp(TcpEvent::Timer { conn, which }) => self.tcp.prefetch_timer(conn, which),
            SimEvent::Host(HostEvent::RxDone { pkt }) => {
                let p = self.net.pool.get(pkt);
                if p.proto == crate::packet::Proto::Tcp {
                    self.tcp.prefetch_conn(p.flow_id);
                }
            }
            SimEvent::Host(HostEvent::TxDone { pkt }) => {
                self.net.prefetch_nic(self.net.pool.get(pkt).src_host)
            }
            SimEvent::Host(HostEvent::AppNote { slot }) => self.apps.prefetch_held(slot),
            _ => {}
        }
    }

    /// The partition whose state event `e` changes, where one does (None: an application
    /// that spans hosts, or the metrics sampler, which only reads).
    fn partition_of(&self, e: SimEvent) -> Option<crate::engine::PartitionId> {
        let host = match e {
            SimEvent::Net(e) => return Some(self.net.partition_of(e)),
            SimEvent::Host(HostEvent::Irq { host } | HostEvent::ForwardDone { host, .. }) => host,
            SimEvent::Host(HostEvent::RxDone { pkt }) => self.net.pool.get(pkt).dst_host,
            SimEvent::Host(HostEvent::TxDone { pkt }) => self.net.pool.get(pkt).src_host,
            SimEvent::Tcp(TcpEvent::Timer { conn, which }) => self.tcp.timer_host(conn, which),
            SimEvent::Host(HostEvent::AppNote { .. }) | SimEvent::App(_) | SimEvent::Metrics(_) => {
                return None
            }
        };
        Some(self.net.host_partition(host))
    }

    /// Routes an event to its layer; what a layer hands up (a packet for a host, a packet
    /// for a transport, notes for applications) goes to the layer above.
    #[inline]
    fn handle(&mut self, e: SimEvent) {
        match e {
            SimEvent::Net(e) => match self.net.handle(&mut self.ev, e) {
                None => {}
                Some(Upcall::Deliver { pkt, host }) => {
                    let Sim { net, hosts, ev, .. } = self;
                    if let Some(pkt) = hosts.on_arrival(net, ev, host, pkt) {
                        self.receive(pkt);
                    }
                }
                Some(Upcall::Forward { pkt, host }) => {
                    self.hosts.forward(&mut self.net, &mut self.ev, host, pkt)
                }
            },
            SimEvent::Host(HostEvent::AppNote { slot }) => {
                self.apps.on_thread_ran(&mut stack!(self), slot)
            }
            SimEvent::Host(e) => {
                let Sim { net, hosts, ev, .. } = self;
                if let Some(pkt) = hosts.handle_packet_event(net, ev, e) {
                    self.receive(pkt);
                }
            }
            SimEvent::Tcp(TcpEvent::Timer { conn, which }) => {
                let Sim {
                    net,
                    hosts,
                    ev,
                    tcp,
                    ..
                } = self;
                tcp.on_timer(net, hosts, ev, conn, which);
                self.apps.dispatch_notes(&mut stack!(self));
            }
            SimEvent::App(e) => self.apps.handle(&mut stack!(self), e),
            SimEvent::Metrics(MetricsEvent::Sample) => {
                self.metrics.on_sample(&mut self.ev, &self.net)
            }
        }
    }

    /// The host's transport takes `pkt`, and applications hear what it delivered.
    #[inline]
    fn receive(&mut self, pkt: crate::packet::PktId) {
        let Sim {
            net,
            hosts,
            ev,
            tcp,
            udp,
            ..
        } = self;
        transport::receive(net, hosts, ev, tcp, udp, pkt);
        self.apps.dispatch_notes(&mut stack!(self));
    }

    /// The memcached requests of this run (empty for other workloads).
    pub fn memcached_requests(&self) -> &[memcached::RequestRecord] {
        self.apps.memcached_requests()
    }

    pub fn invariants(&self) -> Invariants {
        let c = &self.net.counters;
        Invariants {
            packets_sent: c.sent,
            packets_delivered: c.delivered,
            packets_dropped: c.dropped,
            packets_in_flight: self.net.pool.live(),
            buffer_violations: c.buffer_violations,
            time_reversals: self.ev.past_schedules,
        }
    }

    /// The result tables, releasing the per-request records once their table is built: a
    /// full-length memcached run holds tens of millions of them, and the front end needs
    /// the memory for the conversion. Later calls see no requests; take the summary first.
    pub fn take_tables(&mut self) -> Vec<Table> {
        let tables = self.tables();
        self.apps.release_requests();
        tables
    }

    /// pcap files of the capture points, by name ("host-3", "tor0-port1"), with how many
    /// packets each holds and saw (more than it holds when `max_packets` capped it).
    pub fn captures(&self) -> Vec<(String, Vec<u8>, u64, u64)> {
        let c = &self.net.captures;
        c.by_point()
            .into_iter()
            .enumerate()
            .map(|(i, (name, records))| {
                (
                    name.to_string(),
                    metrics::pcap::write(&records),
                    c.recorded[i],
                    c.seen[i],
                )
            })
            .collect()
    }

    pub fn tables(&self) -> Vec<Table> {
        let end = self.ev.now();
        let mut tables = vec![
            metrics::flows_table(&self.metrics, end, &self.flow_diagnostics()),
            metrics::incast_table(&self.metrics),
            metrics::queue_table(&self.metrics, &self.net),
            metrics::links_table(&self.net, end),
            metrics::drops_table(&self.net),
            metrics::hosts_table(&self.net, &self.hosts, end),
            memcached::requests_table(self.memcached_requests(), &self.net),
        ];
        if self.scenario.metrics.trace.is_some() {
            tables.push(metrics::cwnd_trace_table(&self.tcp.trace));
            tables.push(metrics::queue_trace_table(&self.net.queue_trace, &self.net));
        }
        tables
    }

    /// Retransmissions, timeouts, RTT samples and drops of every flow in the flows table.
    fn flow_diagnostics(&self) -> Vec<metrics::FlowDiagnostics> {
        let mut tcp_drops = vec![0u64; self.tcp.senders.len()];
        let mut udp_drops: std::collections::HashMap<u32, u64> = Default::default();
        for d in &self.net.drop_log {
            match d.proto {
                crate::packet::Proto::Tcp => {
                    if let Some(c) = tcp_drops.get_mut(d.flow_id as usize) {
                        *c += 1;
                    }
                }
                crate::packet::Proto::Udp => *udp_drops.entry(d.flow_id).or_default() += 1,
            }
        }
        let diag = |r: &metrics::FlowRecord| match (r.tcp, self.tcp.senders.get(r.flow_id as usize))
        {
            (true, Some(s)) => metrics::FlowDiagnostics {
                retransmits: s.retransmits,
                timeouts: s.timeouts,
                rtt: s.rtt,
                drops: tcp_drops[r.flow_id as usize],
            },
            _ => metrics::FlowDiagnostics {
                drops: udp_drops.get(&r.flow_id).copied().unwrap_or(0),
                ..Default::default()
            },
        };
        self.metrics.flows.iter().map(diag).collect()
    }

    /// Headline figures and run statistics, as JSON (the front end adds wall time and version).
    pub fn summary(&self) -> serde_json::Value {
        let inv = self.invariants();
        let sim_s = self.ev.now() as f64 / 1e12;
        let mut headline = metrics::headline::headline(&metrics::headline::RunView {
            metrics: &self.metrics,
            net: &self.net,
            hosts: &self.hosts,
            tcp: &self.tcp,
            udp: &self.udp,
            now_ps: self.ev.now(),
        });
        let reqs = self.memcached_requests();
        if !reqs.is_empty() {
            memcached::headline(&mut headline, reqs);
        }
        serde_json::json!({
            "scenario": self.scenario,
            "seed": self.scenario.seed,
            "simulated_seconds": sim_s,
            "events": self.ev.events_processed(),
            "packet_hops": self.net.counters.packet_hops,
            "hosts": self.net.n_hosts(),
            "switches": self.net.switches.len(),
            "headline": headline,
            "invariants": {
                "packets_sent": inv.packets_sent,
                "packets_delivered": inv.packets_delivered,
                "packets_dropped": inv.packets_dropped,
                "packets_in_flight": inv.packets_in_flight,
                "buffer_violations": inv.buffer_violations,
                "time_reversals": inv.time_reversals,
                "ok": inv.ok(),
            },
            "queue_samples_truncated": self.metrics.queue_samples_truncated,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(json: &str) -> Sim {
        let mut s = Sim::from_json(json).unwrap_or_else(|e| panic!("{e}"));
        s.run();
        let inv = s.invariants();
        assert!(inv.ok(), "invariants broken: {inv:?}");
        s
    }

    /// One request-response at a time (incast with one server). Each exchange makes 4
    /// system calls (client send, server recv, server send, client recv) and one request's
    /// work at the server, so more instructions in either lengthen every exchange by exactly
    /// their time at the modelled clock and CPI. (Against ideal hosts the difference is
    /// 67.2 ns less: there the response also waits behind the server's pure ACK on the NIC.)
    #[test]
    fn host_costs_add_up_exactly() {
        let exchange_ps = |syscall: u32, app_request: u32| {
            let s = run(&format!(
                r#"{{"duration":"1s","topology":{{"kind":"single_switch","hosts":2,"link":{{"rate":"10Gbps"}}}},
                "host":{{"stack":"ideal","clock_ghz":2.0,"cpi":1.5,"costs":{{"syscall":{syscall},"app_request":{app_request}}}}},
                "transport":{{"delayed_ack":false}},"workload":{{"kind":"incast","senders":1,"block":"100B","request":"30B","iterations":20}}}}"#
            ));
            assert!(s.hosts.costed);
            assert_eq!(s.metrics.incast.len(), 20);
            s.metrics
                .incast
                .iter()
                .map(|r| r.end_ps - r.start_ps)
                .collect::<Vec<_>>()
        };
        let base = exchange_ps(1000, 3000);
        // 1,000 instructions x 1.5 CPI / 2 GHz = 750 ns per system call, 4 per exchange.
        for (b, s) in base.iter().zip(exchange_ps(2000, 3000)) {
            assert_eq!(s - b, 4 * 750_000);
        }
        // 2,000 more instructions of request work = 1.5 us.
        for (b, a) in base.iter().zip(exchange_ps(1000, 5000)) {
            assert_eq!(a - b, 1_500_000);
        }
    }

    /// A receiver whose CPU cannot keep up drops at its receive ring and counts it.
    #[test]
    fn a_saturated_cpu_drops_at_its_receive_ring() {
        let s = run(
            r#"{"duration":"20ms","topology":{"kind":"single_switch","hosts":2,"link":{"rate":"10Gbps"}},
            "host":{"stack":"linux_2_6_39","clock_ghz":1.0,"rx_ring_packets":64,"costs":{"tx_packet":0,"per_byte":0}},"transport":{"kind":"udp"},
            "workload":{"kind":"udp","sources":[1],"destination":0,"rate":"9Gbps"}}"#,
        );
        let h = &s.hosts.state[0];
        // 9 Gbit/s of 1,500-byte packets is 750k packets/s (sending costs nothing here);
        // 5,000 instructions at 1 GHz receive at most 200k/s, so most are dropped at the ring.
        assert!(
            h.rx_ring_drops > h.rx_packets,
            "drops {} received {}",
            h.rx_ring_drops,
            h.rx_packets
        );
        assert!(s.hosts.utilisation(0, s.ev.now()) > 0.95);
        let nic = s.net.nic_port(0) as usize;
        assert_eq!(s.net.ports[nic].stats.drops, h.rx_ring_drops);
    }

    /// memcached over TCP links each client-server pair into one bidirectional connection:
    /// a response carries the ACK of its request, so a server sends about one packet per
    /// request (two without piggybacking: a pure ACK, then the response).
    #[test]
    fn responses_carry_the_acks_of_requests() {
        let s = run(
            r#"{"duration":"10s","topology":{"kind":"diablo_array","racks":2,"preset":"10g"},
            "transport":{"kind":"tcp"},"workload":{"kind":"memcached","requests_per_client":50}}"#,
        );
        let reqs = s.memcached_requests();
        assert!(reqs.iter().all(|r| r.end_ps != crate::engine::NEVER));
        let servers: std::collections::BTreeSet<u32> = reqs.iter().map(|r| r.server).collect();
        let server_pkts: u64 = servers
            .iter()
            .map(|&h| s.net.ports[s.net.nic_port(h) as usize].stats.tx_pkts)
            .sum();
        let n = reqs.len() as u64;
        assert!(
            server_pkts >= n && server_pkts < n + n / 5,
            "server packets {server_pkts} for {n} requests"
        );
    }

    /// The partition rule: with pods as partitions, every event of the network, host and
    /// transport layers changes the state of its own partition only (the check panics
    /// otherwise), for TCP permutation traffic, incast and a torus all-to-all.
    #[test]
    fn events_keep_to_their_partitions() {
        for json in [
            r#"{"duration":"3ms","topology":{"kind":"fat_tree","k":4},"transport":{"rto_min":"1ms"},"workload":{"kind":"permutation"}}"#,
            r#"{"duration":"1s","topology":{"kind":"fat_tree","k":4},"switch":{"buffer":"shared"},
               "host":{"stack":"linux_2_6_39"},"workload":{"kind":"incast","senders":8,"block":"256KiB","iterations":3}}"#,
            r#"{"duration":"1ms","topology":{"kind":"torus3d","dims":[4,4,4]},"transport":{"kind":"udp"},
               "workload":{"kind":"udp","destination":"random","load":0.5}}"#,
        ] {
            let mut s = Sim::from_json(json).unwrap_or_else(|e| panic!("{e}"));
            let parts: std::collections::BTreeSet<_> =
                s.net.nodes.iter().map(|n| n.partition).collect();
            assert!(parts.len() >= 4, "{parts:?}");
            s.net.check_partitions = true;
            s.run();
            assert!(s.invariants().ok());
            assert!(s.net.counters.packet_hops > 1000);
        }
    }

    #[test]
    #[should_panic(expected = "touched node")]
    fn touching_another_partition_is_caught() {
        let mut s = Sim::from_json(
            r#"{"duration":"1ms","topology":{"kind":"fat_tree","k":4},"workload":{"kind":"permutation"}}"#,
        )
        .unwrap();
        // Host 0 is in pod 0 (partition 1); act as partition 2 and send from it.
        let pkt = s.net.pool.alloc(crate::packet::Packet {
            dst_host: 15,
            frame_bytes: 64,
            ..Default::default()
        });
        s.net.enter_partition(Some(2));
        let mut q: EventQueue<NetEvent> = EventQueue::new();
        s.net.host_transmit(&mut q, 0, pkt);
    }

    /// A link that fails loses exactly what is on its wire and in its queues when it fails,
    /// and what is sent to it while it is down; then traffic flows again.
    #[test]
    fn a_failed_link_loses_exactly_its_packets() {
        // Host 1 sends 1,472-byte datagrams at 5 Gbit/s (a 1,500-byte IP packet every
        // 2.4 us, the first at 2.4 us) over 10 Gbit/s links with 500 ns of propagation.
        let s = run(
            r#"{"duration":"3ms","topology":{"kind":"single_switch","hosts":2,"link":{"rate":"10Gbps","delay":"500ns"}},
            "transport":{"kind":"udp"},"workload":{"kind":"udp","sources":[1],"destination":0,"rate":"5Gbps"},
            "failures":[{"link":["h1","switch"],"at":"1ms","until":"2ms"}]}"#,
        );
        let (gap, at, until) = (2_400_000u64, 1_000_000_000u64, 2_000_000_000u64);
        // 1,538 bytes on the wire at 10 Gbit/s, then the propagation delay.
        let flight = 1538 * 800 + 500_000;
        let sends = |t0: u64, t1: u64| (t0.div_ceil(gap).max(1)..t1.div_ceil(gap)).count() as u64;
        // The NIC is idle between datagrams (2.4 us apart, 1.23 us each): nothing queued.
        let on_wire = (1..at.div_ceil(gap))
            .filter(|k| k * gap + flight > at)
            .count() as u64;
        let expected = on_wire + sends(at, until);
        assert_eq!(s.net.counters.link_down_drops, expected);
        assert_eq!(s.net.counters.dropped, expected, "no other losses");
        let st = &s.udp.streams[0];
        assert!(st.recv_pkts > 0 && st.sent_pkts - st.recv_pkts >= expected);
        // Delivery resumed after the link came back.
        let after = sends(until, s.ev.now() - 2 * flight);
        assert!(st.recv_pkts >= sends(0, at) - on_wire + after);
    }

    /// Events are small values: the queue moves them on every sift, so the per-layer enums
    /// must pack into the 12 bytes one flat enum took.
    #[test]
    fn an_event_is_twelve_bytes() {
        assert!(std::mem::size_of::<SimEvent>() <= 12);
    }

    #[test]
    fn incast_completes_and_conserves_packets() {
        let s = run(
            r#"{"duration":"5s","topology":{"kind":"single_switch","hosts":5,"link":{"rate":"1Gbps"}},
            "switch":{"buffer_per_port":"4KiB"},"transport":{"rto_min":"1ms"},
            "workload":{"kind":"incast","senders":4,"block":"64KiB","iterations":5}}"#,
        );
        assert_eq!(s.metrics.incast.len(), 5);
        assert!(
            s.net.counters.dropped > 0,
            "4 KB per port must drop under incast"
        );
    }

    #[test]
    fn switches_wider_than_the_voq_limit_share_queues() {
        let s = run(
            r#"{"duration":"2s","topology":{"kind":"single_switch","hosts":150},
            "switch":{"buffer":"per_input_port","buffer_per_port":"16KiB"},"transport":{"rto_min":"1ms"},
            "workload":{"kind":"incast","senders":149,"block":"1MiB","iterations":3}}"#,
        );
        assert_eq!(s.metrics.incast.len(), 3);
        assert!(s
            .net
            .ports
            .iter()
            .all(|p| p.q_count <= crate::topology::build::MAX_VOQS));
    }

    #[test]
    fn every_buffer_mode_keeps_its_limits() {
        for buffer in ["per_port", "per_input_port", "shared"] {
            let s = run(&format!(
                r#"{{"duration":"3ms","topology":{{"kind":"fat_tree","k":4}},"switch":{{"buffer":"{buffer}","buffer_per_port":"16KiB"}},
                "transport":{{"rto_min":"1ms"}},"workload":{{"kind":"all_to_all"}}}}"#
            ));
            assert!(s.net.counters.packet_hops > 1000);
        }
    }

    /// Open-loop UDP with a random destination per datagram: every host receives about its
    /// share, nothing is lost at 50% load with deep buffers, and every datagram crossed the
    /// switch (two hops each).
    #[test]
    fn udp_to_random_destinations_spreads_evenly() {
        let s = run(
            r#"{"duration":"20ms","topology":{"kind":"single_switch","hosts":8,"link":{"rate":"10Gbps"}},
            "transport":{"kind":"udp"},"workload":{"kind":"udp","destination":"random","rate":"5Gbps","arrival":"poisson"}}"#,
        );
        assert_eq!(s.metrics.flows.len(), 8);
        assert!(s.metrics.flows.iter().all(|f| f.dst == crate::net::NONE));
        let sent: u64 = s.udp.streams.iter().map(|st| st.sent_pkts).sum();
        let got: u64 = s.udp.streams.iter().map(|st| st.recv_pkts).sum();
        assert!(
            sent > 50_000 && sent - got < 100,
            "sent {sent} received {got}"
        );
        // What the switch sent towards each host, against the mean.
        let mean = got as f64 / 8.0;
        for h in 0..8u32 {
            let node = s.net.host_nodes[h as usize];
            let rx: u64 = s
                .net
                .ports
                .iter()
                .filter(|p| p.switch != crate::net::NONE && p.peer_node == node)
                .map(|p| p.stats.tx_pkts)
                .sum();
            assert!(
                (rx as f64 - mean).abs() < 0.05 * mean,
                "host {h} received {rx}, mean {mean}"
            );
        }
        // Each delivered datagram made two hops; the few still on the way made one or two.
        let hops = s.net.counters.packet_hops;
        assert!(
            hops >= 2 * got && hops <= 2 * sent,
            "hops {hops} sent {sent} received {got}"
        );
    }

    #[test]
    fn cut_through_is_faster_than_store_and_forward_on_an_idle_path() {
        let fct = |fwd: &str| {
            let s = run(&format!(
                r#"{{"duration":"10ms","topology":{{"kind":"fat_tree","k":4,"link":{{"rate":"10Gbps","delay":"100ns"}}}},
                "switch":{{"forwarding":"{fwd}","port_to_port_latency":"100ns"}},
                "workload":{{"kind":"many_to_one","sources":[15],"destination":0,"size":"1400B"}}}}"#
            ));
            let f = s.metrics.flows[0];
            f.end_ps - f.start_ps
        };
        let (saf, ct) = (fct("store_and_forward"), fct("cut_through"));
        // 5 switches on the path: cut-through saves most of a 1.2 us serialisation at each.
        assert!(saf > ct + 4 * 1_000_000, "saf {saf} ct {ct}");
    }

    #[test]
    fn flows_to_one_client_that_also_serves_terminate() {
        // clients = [0] while servers default to every host, host 0 included.
        let s = run(
            r#"{"duration":"50ms","topology":{"kind":"single_switch","hosts":4},
            "workload":{"kind":"flows","clients":[0],"flows":30,"size_cdf":"hadoop","load":0.3}}"#,
        );
        assert_eq!(s.metrics.flows.len(), 30);
        assert!(s.metrics.flows.iter().all(|f| f.dst == 0 && f.src != 0));
    }

    #[test]
    fn sack_repairs_bursts_of_losses_with_fewer_timeouts() {
        let sc = |sack: bool| {
            format!(
                r#"{{"duration":"2s","topology":{{"kind":"single_switch","hosts":9}},"switch":{{"buffer_per_port":"30KiB"}},
                "transport":{{"sack":{sack},"rto_min":"10ms"}},"workload":{{"kind":"many_to_one","destination":0,"size":"2MiB"}}}}"#
            )
        };
        let (with, without) = (run(&sc(true)), run(&sc(false)));
        for s in [&with, &without] {
            assert!(s
                .metrics
                .flows
                .iter()
                .all(|f| f.end_ps != crate::engine::NEVER));
            assert!(s.net.counters.dropped > 50);
        }
        let last = |s: &Sim| s.metrics.flows.iter().map(|f| f.end_ps).max().unwrap();
        assert!(
            with.tcp.total_timeouts() < without.tcp.total_timeouts(),
            "{} vs {}",
            with.tcp.total_timeouts(),
            without.tcp.total_timeouts()
        );
        assert!(last(&with) < last(&without));
    }

    #[test]
    fn same_seed_same_result_other_seed_differs() {
        let sc = |seed: u64| {
            format!(
                r#"{{"seed":{seed},"duration":"20ms","topology":{{"kind":"fat_tree","k":4}},"workload":{{"kind":"flows","load":0.4,"size_cdf":"hadoop"}}}}"#
            )
        };
        let key = |s: &Sim| {
            s.metrics
                .flows
                .iter()
                .map(|f| (f.src, f.dst, f.size_bytes, f.end_ps))
                .collect::<Vec<_>>()
        };
        let (a, b, c) = (run(&sc(1)), run(&sc(1)), run(&sc(2)));
        assert_eq!(key(&a), key(&b));
        assert_ne!(key(&a), key(&c));
    }
}
