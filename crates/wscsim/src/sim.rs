//! A simulation: the network, transports and applications of one scenario, the event loop
//! that drives them, and the results it hands back.

use crate::config::{self, ConfigError, Resolved, Scenario};
use crate::engine::{Driver, EventQueue, TimePs};
use crate::host::nic::Ready;
use crate::host::{HostEvent, Hosts};
use crate::metrics::{self, Metrics, MetricsEvent, Table};
use crate::net::{NetEvent, Network, Upcall};
use crate::scheme::spec::CustomFactory;
use crate::services::{OnPath, Services, SvcCtx, SvcEvent};
use crate::topology::build::build_network_with;
use crate::transport::dma::DmaEvent;
use crate::transport::{self, Tcp, TcpEvent, Udp};
use crate::workload::{memcached, AppEvent, Apps, Stack};

mod dry_build;
mod slots;
mod stall;
mod threads;

/// Every layer's events, one variant per layer. Each layer schedules and handles its own
/// enum; this one only routes an event to its layer. 12 bytes, like the layers' own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimEvent {
    Net(NetEvent),
    Host(HostEvent),
    Tcp(TcpEvent),
    App(AppEvent),
    Metrics(MetricsEvent),
    Svc(SvcEvent),
    Dma(DmaEvent),
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
    Metrics(MetricsEvent),
    Svc(SvcEvent),
    Dma(DmaEvent)
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
    /// CamCubeOS services (the ping service, when the workload is pings).
    pub services: Services,
    pub metrics: Metrics,
    /// Hosts that fail whole at some point of the run (`[[failures]]` node, random_nodes).
    pub failed_hosts: Vec<u32>,
    /// The runtime's Python services, for the front end that adds them (`add_service`).
    pub python_services: Vec<crate::config::runtime::PythonService>,
    /// What each component draws, for the run's energy.
    pub power: crate::config::power::PowerSpec,
    /// The PCIe fabric's DMA engines and their transfers.
    pub dma: crate::transport::Dma,
    /// Real frames that reached their host (`Proto::Frame`) and when, for the emulator
    /// to hand to the host's kernel; it frees them.
    pub frames_out: Vec<(crate::packet::PktId, TimePs)>,
    /// Traffic may come from outside (the emulator's real frames): an empty event queue
    /// does not end the run.
    pub open_ended: bool,
    /// Prefetch two events ahead (the network's port-side state is too large to stay in
    /// cache); below that size the extra look-ups cost more than the misses they hide.
    deep_prefetch: bool,
    /// The threads of a partitioned run (1: the lanes run one after another).
    threads: usize,
    /// Per lane of a threaded run, the thread that runs it (0: this one).
    lane_owner: Vec<u32>,
    /// What decides `lane_owner`, measured as the run goes.
    balance: Balance,
    /// The timeslot engine's state (None: the event engine runs the scenario).
    slots: Option<slots::Slots>,
    started: bool,
    finished: bool,
    /// Stops a run whose events stay at one instant (`stall`).
    stall: stall::StallGuard,
    /// `engine.max_events_per_instant`.
    stall_limit: u64,
}

/// Returns the allocator's free memory to the system. glibc keeps what the simulation's
/// many small and middle-sized allocations freed for reuse, and the tables built next
/// are few large allocations that would not reuse it (measured on the 2,000-node
/// memcached run at 10,000 requests per client: 50 MB less resident after the tables).
fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; no allocation is live across it
    // in an inconsistent state (it takes the allocator's locks).
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Where the requests table goes among the result tables (after hosts).
const REQUESTS_AT: usize = 6;

/// In a partitioned run, the events that act across partitions and run alone at barriers:
/// applications' timers (an application may span hosts), the metrics sampler, services and
/// DMA engines. Every other event acts on the partition that scheduled it, or names its
/// partition (`schedule_in`: arrivals on wires between partitions); a host's application
/// thread handing a delivery to its application (`AppNote`) acts for that host.
fn global_kind(e: &SimEvent) -> crate::engine::Route {
    match e {
        SimEvent::App(_) | SimEvent::Metrics(_) | SimEvent::Svc(_) | SimEvent::Dma(_) => {
            crate::engine::Route::Global
        }
        _ => crate::engine::Route::Own,
    }
}

/// How a threaded run shares its lanes among threads: by ports at first, then every
/// `REBALANCE_WINDOWS` windows by the events each lane ran since, an event of the owner's
/// costing what the owner's events cost it against the helpers' (wall time, measured:
/// its hosts' events carry the transports). Timing decides only who runs what, never a
/// result.
#[derive(Default)]
struct Balance {
    fabric: Vec<bool>,
    windows: u64,
    events_then: Vec<u64>,
    /// Since the last rebalance: the owner's time from opening windows to reaching their
    /// ends, and when the open window was opened.
    owner_run_s: f64,
    opened_at: Option<std::time::Instant>,
    /// The helpers' time running lanes since the last rebalance, summed.
    helpers_s: f64,
    /// What a host lane's event costs against a fabric lane's (smoothed).
    host_cost: f64,
}

const REBALANCE_WINDOWS: u64 = 256;

/// What a host lane's event costs against a fabric lane's, from a period's events per lane
/// (`events`), who ran them and each side's time running lanes: the helpers ran fabric
/// events only, which prices those; the owner's time less its fabric events is its hosts'.
/// None until both sides have run some of each.
fn host_cost(
    events: &[u64],
    fabric: &[bool],
    owner: &[u32],
    owner_s: f64,
    helpers_s: f64,
) -> Option<f64> {
    let sum = |f: &dyn Fn(usize) -> bool| -> f64 {
        (0..events.len())
            .filter(|&i| f(i))
            .map(|i| events[i] as f64)
            .sum()
    };
    let helper_events = sum(&|i| owner[i] != 0);
    let owner_fabric = sum(&|i| owner[i] == 0 && fabric[i]);
    let host_events = sum(&|i| !fabric[i]);
    if helper_events == 0.0 || host_events == 0.0 || helpers_s <= 0.0 {
        return None;
    }
    let fabric_s = helpers_s / helper_events;
    let host_s = (owner_s - fabric_s * owner_fabric) / host_events;
    Some((host_s / fabric_s).clamp(0.5, 20.0))
}

/// Events per window below which helpers are not worth their two meetings per window: the
/// owner then runs every lane (measured: a k=8 fat tree, about 300 events a window, ran
/// slower on two threads than on one; k=16, about 4,000, 1.6x faster).
const MIN_EVENTS_PER_WINDOW: u64 = 1_000;

/// Port-side state (ports, their queues and wires) above which the event loop prefetches
/// two events ahead: about half of a 4 MiB second-level cache. Measured (RESULTS.md): a
/// k=8 fat tree (0.2 MiB) ran 10% slower with it, k=16 (3 MiB) 6% faster, k=32 24%.
const FAR_PREFETCH_FROM_BYTES: usize = 2 << 20;

/// Borrows the layers below the applications out of a `Sim`.
macro_rules! stack {
    ($s:expr) => {
        Stack {
            ev: &mut $s.ev,
            net: &mut $s.net,
            hosts: &mut $s.hosts,
            tcp: &mut $s.tcp,
            udp: &mut $s.udp,
            dma: &mut $s.dma,
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
    /// In a partitioned run, events one partition scheduled for another (or a global one)
    /// sooner than the lookahead allows: the run's order is then not exact.
    pub lookahead_violations: u64,
}

impl Invariants {
    pub fn ok(&self) -> bool {
        self.packets_sent == self.packets_delivered + self.packets_dropped + self.packets_in_flight
            && self.buffer_violations == 0
            && self.time_reversals == 0
            && self.lookahead_violations == 0
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

/// The CamCubeOS services a workload drives (none for the hosts' own applications).
fn services_for(
    workload: &crate::workload::WorkloadSpec,
    net: &Network,
) -> Result<Services, ConfigError> {
    use crate::workload::WorkloadSpec as W;
    Ok(match workload {
        W::Ping(spec) => Services::with_ping(crate::services::ping::Ping::new(spec.clone())),
        W::Reliable(spec) => {
            Services::with_reliable(crate::services::reliable::Reliable::new(spec.clone()))
        }
        W::Multicast(spec) => multicast_service(net, spec)?,
        W::Aggregate(spec) => aggregate_service(net, spec)?,
        W::Kv(spec) => Services::with_kv(crate::services::kvstore::KvStore::new(
            spec.clone(),
            net.n_hosts(),
        )),
        _ => Services::default(),
    })
}

/// Torus links pack waiting packets into one frame (`runtime.pack`); hosts that cost time
/// charge each frame's sending work as it leaves.
fn install_packing(net: &mut Network, hosts: &mut Hosts) {
    let tech = net.techs[net.host_tech[0] as usize];
    net.pack = Some(crate::net::Pack {
        header_bytes: tech.header_bytes,
        mtu_bytes: tech.mtu_bytes,
    });
    hosts.packing = hosts.costed;
    net.record_departures = hosts.packing;
}

/// The aggregation of a run, up six disjoint trees of its torus.
fn aggregate_service(
    net: &Network,
    spec: &crate::services::aggregate::AggregateSpec,
) -> Result<Services, ConfigError> {
    let dims = net.torus.as_ref().expect("checked: a torus").dims;
    let frame = net.frame_bytes(
        spec.root,
        spec.payload_bytes + crate::services::SERVICE_HEADER_BYTES,
    );
    let port = &net.ports[net.nic_port(spec.root) as usize];
    let (overhead, rate) = (port.wire_overhead_bytes, port.rate_bps);
    crate::services::aggregate::Aggregate::new(spec.clone(), dims, frame, overhead, rate)
        .map(Services::with_aggregate)
        .ok_or_else(|| ConfigError {
            path: "workload.root".into(),
            message: format!(
                "given {}; allowed: a root from which six disjoint trees were found",
                spec.root
            ),
        })
}

/// The file distribution of a run, over six disjoint trees of its torus.
fn multicast_service(
    net: &Network,
    spec: &crate::services::multicast::MulticastSpec,
) -> Result<Services, ConfigError> {
    let dims = net.torus.as_ref().expect("checked: a torus").dims;
    let root = spec.roots[0];
    let frame = net.frame_bytes(
        root,
        spec.payload_bytes + crate::services::SERVICE_HEADER_BYTES,
    );
    let port = &net.ports[net.nic_port(root) as usize];
    crate::services::multicast::Multicast::new(
        spec.clone(),
        dims,
        frame,
        port.wire_overhead_bytes,
        port.rate_bps,
    )
    .map(Services::with_multicast)
    .ok_or_else(|| ConfigError {
        path: "workload.roots".into(),
        message: format!(
            "given {:?}; allowed: roots from which six disjoint trees were found (from one, none was)",
            spec.roots
        ),
    })
}

/// Schedules the failures of a run: nodes failing whole and links, down and back up.
fn schedule_failures(
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

/// Sets a partitioned run up (`[engine] partitioned`): the network's partitions and their
/// wires, the queue's lanes, and how many threads run which lanes.
fn partition_run(
    net: &mut Network,
    ev: &mut EventQueue<SimEvent>,
    e: &config::EngineCfg,
) -> Result<(usize, Vec<u32>, Balance), ConfigError> {
    let (lookahead_ps, n) = net
        .partition_wires()
        .map_err(|m| config::err("engine.partitioned", true, format!("false: {m}")))?;
    ev.partition(n, lookahead_ps, global_kind);
    ev.set_lane_order_reversed(e.lane_order.as_deref() == Some("reverse"));
    let threads = e.threads.unwrap_or(1) as usize;
    ev.meet_at_windows(threads > 1);
    if threads > 1 && net.schemes.iter().any(|s| s.is_custom()) {
        return Err(config::err(
            "engine.threads",
            threads,
            "1 with custom (Python or user) schemes",
        ));
    }
    let balance = Balance {
        fabric: net.fabric_only(n),
        // A first guess, replaced by measurement after the first windows.
        host_cost: 2.0,
        ..Default::default()
    };
    let owner = threads::assign_lanes(&net.ports_per_partition(n), &balance.fabric, threads, 1.0);
    Ok((threads, owner, balance))
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
        if !r.python_services.is_empty() && custom.is_none() {
            return Err(ConfigError {
                path: "runtime.services".into(),
                message: "given Python services; allowed: none here (they run from the Python front end: wscsim run, or wscsim.run)".into(),
            });
        }
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
            service_queues,
            tunnel,
            pack,
            python_services,
            power,
            dma,
        } = r;
        let mut net = build_network_with(&graph, &switch, custom).map_err(|m| ConfigError {
            path: "switch.scheme".into(),
            message: m,
        })?;
        let mut hosts = Hosts::new(host, net.n_hosts());
        if pack {
            install_packing(&mut net, &mut hosts);
        }
        net.track_nic_departures = tcp.tsq_limit_bytes > 0;
        let mut tcp = Tcp::new(tcp);
        if let Some(t) = &scenario.metrics.trace {
            install_traces(&mut net, &mut tcp, &graph, t);
        }
        let end_ps = scenario.duration.0;
        let mut services = services_for(&workload, &net)?;
        services.tunnel = tunnel.map(crate::services::tunnel::Tunnel::new);
        let slots = match (
            &workload,
            config::EngineCfg::timeslots(scenario.engine.as_ref()),
        ) {
            (
                crate::workload::WorkloadSpec::Udp {
                    sources,
                    payload_bytes,
                    ..
                },
                true,
            ) => {
                let host = sources.first().copied().unwrap_or(0);
                Some(slots::Slots::new(&net, host, *payload_bytes)?)
            }
            _ => None,
        };
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
        net.install_kbr(failures.detection, scenario.seed);
        net.service_queues = service_queues
            .map(|specs| crate::net::service_queues::ServiceQueues::new(net.n_hosts(), specs));
        net.use_nic_slots();
        schedule_failures(&mut ev, &net, &graph, &failures);
        let failed_hosts = failures
            .nodes
            .iter()
            .filter(|&&n| net.nodes[n as usize].kind == crate::net::NodeKind::Host)
            .map(|&n| net.nodes[n as usize].index)
            .collect();
        let dma = crate::transport::Dma::new(dma, net.n_hosts());
        let engine = scenario.engine.as_ref();
        let (threads, lane_owner, balance) = match engine.filter(|e| e.partitioned == Some(true)) {
            Some(e) => partition_run(&mut net, &mut ev, e)?,
            None => (1, Vec::new(), Balance::default()),
        };
        let deep_prefetch = net.port_state_bytes() > FAR_PREFETCH_FROM_BYTES;
        let stall_limit = engine
            .and_then(|e| e.max_events_per_instant)
            .map_or(stall::STALL_EVENTS, |n| n as u64);
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
            services,
            metrics,
            failed_hosts,
            python_services,
            power,
            dma,
            frames_out: Vec::new(),
            open_ended: false,
            deep_prefetch,
            threads,
            lane_owner,
            balance,
            slots,
            started: false,
            finished: false,
            stall: stall::StallGuard::default(),
            stall_limit,
        })
    }

    fn start(&mut self) {
        self.started = true;
        self.apps.start(&mut stack!(self));
        self.services.start(&mut SvcCtx {
            net: &mut self.net,
            hosts: &mut self.hosts,
            ev: &mut self.ev,
        });
        self.charge_departures();
        if self.metrics.sample_interval_ps > 0 && self.metrics.max_queue_samples > 0 {
            self.ev.schedule(0, MetricsEvent::Sample.into());
        }
        self.route_unrouted();
    }

    /// Tests: declares the partition `e` acts on, so that touching another panics, and in
    /// a partitioned run that `e` came from that partition's lane.
    #[cold]
    #[inline(never)]
    fn check_partition(&self, e: SimEvent) {
        let p = self.partition_of(e);
        if self.ev.is_partitioned() && !self.ev.in_global() {
            assert_eq!(p, self.ev.current_partition(), "{e:?} ran in another lane");
        }
        self.net.enter_partition(p);
    }

    /// In a partitioned run: puts what was scheduled outside any partition's event (at the
    /// start, by a global event) into the lane of the partition it acts on.
    fn route_unrouted(&mut self) {
        if !self.ev.is_partitioned() {
            return;
        }
        let mut v = self.ev.take_unrouted();
        for &(t, e) in &v {
            let p = self.partition_of(e);
            self.ev.route(p, t, e);
        }
        v.clear();
        self.ev.give_back_unrouted(v);
    }

    /// Adds a user's service (`services::user::ServiceCode`) under `id`, before the run
    /// starts. On a torus it gets a queue of its own at every server, with the limit and
    /// drop policy of the transport's.
    pub fn add_service(
        &mut self,
        id: u16,
        code: Box<dyn crate::services::user::ServiceCode>,
    ) -> Result<(), String> {
        if self.started {
            return Err("services are added before the run starts".into());
        }
        self.services.add(id, code)?;
        if let Some(sq) = self.net.service_queues.as_mut() {
            let spec = sq.specs[0];
            sq.grow(usize::from(id) + 1, spec);
        }
        Ok(())
    }

    /// Whether the run has ended (workload done or duration reached).
    /// Puts `pkt` (allocated and counted as sent) on host `host`'s NIC now: a frame from
    /// outside the simulation (the emulator's).
    pub fn inject(&mut self, host: u32, pkt: crate::packet::PktId) {
        self.net.host_transmit(&mut self.ev, host, pkt);
    }

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

    /// Why the run was stopped before its end (no progress), if it was.
    pub fn fault(&self) -> Option<&str> {
        self.stall.fault.as_deref()
    }

    /// Runs until simulated time `until_ps` (or the end of the run). Returns whether the run ended.
    pub fn run_until(&mut self, until_ps: TimePs) -> bool {
        if self.slots.is_some() {
            return self.run_slots(until_ps);
        }
        if !self.started {
            self.start();
        }
        if self.threads > 1 && !self.finished {
            return self.run_threaded(until_ps);
        }
        self.run_slice(until_ps, None)
    }

    /// `run_until` on the run's threads: helpers run fabric partitions through views of
    /// the network while this thread runs the rest (`threads`).
    fn run_threaded(&mut self, until_ps: TimePs) -> bool {
        self.take_own_lanes();
        // SAFETY: the crew lives within this call, and `run_slice` touches the network and
        // the helpers' lanes only at meetings, after `Crew::wait` (`meet`).
        let crew =
            unsafe { threads::Crew::new(&self.net, &mut self.ev, self.threads, &self.lane_owner) };
        let finished = std::thread::scope(|scope| {
            for me in 1..self.threads as u32 {
                let crew = &crew;
                scope.spawn(move || crew.work(me));
            }
            let _stop = threads::StopOnDrop(&crew);
            self.run_slice(until_ps, Some(&crew))
        });
        // A slice may end inside a window whose helpers' lanes have already run it.
        crew.finish(&mut self.net, &mut self.ev);
        finished
    }

    /// Where the lanes of a partitioned run meet (`EventQueue::meet_at_windows`): helpers
    /// start a window, or have finished it and what crossed between partitions is put in
    /// place before the mail is handed over.
    fn meet(&mut self, m: crate::engine::partitioned::Meeting, crew: Option<&threads::Crew>) {
        use crate::engine::partitioned::Meeting;
        match (m, crew) {
            (Meeting::Open { last_ps }, Some(crew)) => {
                self.balance.opened_at = Some(std::time::Instant::now());
                crew.start(last_ps);
                crew.land_owner(&mut self.net);
            }
            (Meeting::Open { .. }, None) => {}
            (Meeting::Close, crew) => {
                if let Some(crew) = crew {
                    if let Some(t) = self.balance.opened_at.take() {
                        self.balance.owner_run_s += t.elapsed().as_secs_f64();
                    }
                    crew.wait();
                    self.balance.helpers_s += crew.take_busy_s();
                    crew.absorb(&mut self.net, &mut self.ev);
                    self.rebalance(crew);
                } else {
                    self.net.put_remote_on_wires();
                }
            }
        }
    }

    /// Every `REBALANCE_WINDOWS` windows, shares the fabric lanes among threads again by
    /// the events each ran since and what they cost (`Balance`; between windows; changes
    /// no result).
    fn rebalance(&mut self, crew: &threads::Crew) {
        let b = &mut self.balance;
        b.windows += 1;
        if !b.windows.is_multiple_of(REBALANCE_WINDOWS) {
            return;
        }
        let now = self.ev.lane_events();
        let recent: Vec<u64> = now
            .iter()
            .zip(b.events_then.iter().chain(std::iter::repeat(&0)))
            .map(|(n, t)| n - t)
            .collect();
        b.events_then = now;
        let per_window = recent.iter().sum::<u64>() / REBALANCE_WINDOWS;
        let threads = if per_window < MIN_EVENTS_PER_WINDOW {
            1
        } else {
            self.threads
        };
        let helper_s = std::mem::take(&mut b.helpers_s);
        let owner_s = std::mem::take(&mut b.owner_run_s);
        b.host_cost = host_cost(&recent, &b.fabric, &self.lane_owner, owner_s, helper_s)
            .map_or(b.host_cost, |c| (b.host_cost + c) / 2.0);
        self.lane_owner = threads::assign_lanes(&recent, &b.fabric, threads, b.host_cost);
        crew.assign(&self.lane_owner);
        self.take_own_lanes();
    }

    /// This thread runs the lanes `lane_owner` gives it (thread 0).
    fn take_own_lanes(&mut self) {
        let own: Vec<usize> = (0..self.lane_owner.len())
            .filter(|&i| self.lane_owner[i] == 0)
            .collect();
        self.ev.set_own_lanes(&own);
    }

    /// The event loop up to `until_ps`, with `crew` running lanes on other threads.
    fn run_slice(&mut self, until_ps: TimePs, crew: Option<&threads::Crew>) -> bool {
        let mut horizon = until_ps.min(self.apps.end_ps);
        let mut draining = false;
        while !self.finished {
            let Some(e) = self.ev.next_due(horizon) else {
                match self.ev.take_meeting() {
                    Some(m) => {
                        self.meet(m, crew);
                        continue;
                    }
                    None => break,
                }
            };
            if self.deep_prefetch {
                if let Some(after) = self.ev.peek_second() {
                    self.prefetch_far(after);
                }
                if let Some(next) = self.ev.peek() {
                    self.prefetch_near(next);
                }
            } else if let Some(next) = self.ev.peek() {
                self.prefetch(next);
            }
            if self.net.check_partitions {
                self.check_partition(e.kind);
            }
            if self.stall.stalled(e.time_ps, &e.kind, self.stall_limit) {
                self.finished = true;
                break;
            }
            self.handle(e.kind);
            if self.ev.in_global() {
                self.route_unrouted();
            }
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
            if !draining && (self.apps.done() || self.services.done()) {
                match self.ev.window_last_ps() {
                    // A partition's event finished the workload: every partition runs to the
                    // end of the window first, so where the run stops does not depend on
                    // the order of the window's lanes.
                    Some(last) => {
                        // To the window's end even past this call's `until_ps`: where the
                        // run stops must not depend on the slices it is run in.
                        horizon = last.min(self.apps.end_ps);
                        draining = true;
                    }
                    None => self.finished = true,
                }
            }
        }
        if let Some(crew) = crew {
            // A slice may end inside a window: the helpers finish their part of it before
            // anything else touches the lanes.
            crew.wait();
        }
        if draining {
            self.finished = true;
        }
        if !self.finished {
            self.ev.idle_until(horizon);
            if horizon >= self.apps.end_ps || (Driver::is_empty(&self.ev) && !self.open_ended) {
                self.finished = true;
            }
        }
        if self.finished {
            self.apps.finish(&self.udp, &mut self.metrics);
            if self.ev.is_partitioned() {
                self.net.sort_drop_log();
            }
        }
        self.finished
    }

    pub fn run(&mut self) {
        self.run_until(self.apps.end_ps);
    }

    /// Starts loading the first things the event after the next will touch (what its own
    /// fields index), so that `prefetch` can follow them one event later without waiting.
    #[inline]
    fn prefetch_far(&self, e: SimEvent) {
        match e {
            SimEvent::Net(NetEvent::LinkArrive { port }) => self.net.prefetch_arrival(port),
            SimEvent::Net(NetEvent::PortWake { port }) => self.net.prefetch_port(port),
            _ => {}
        }
    }

    /// With `deep_prefetch`: the next event's own prefetch, one step further down the chain
    /// of look-ups than `prefetch` (its first steps were taken by `prefetch_far`).
    #[inline]
    fn prefetch_near(&self, next: SimEvent) {
        match next {
            SimEvent::Net(NetEvent::LinkArrive { port }) => self.net.prefetch_route(port),
            SimEvent::Net(NetEvent::PortWake { port }) => {
                self.net.prefetch_queue_head(port);
                self.net.prefetch_wake(port);
            }
            _ => self.prefetch(next),
        }
    }

    /// Starts loading what the next event will touch, so that its cache misses overlap
    /// this event's work (large arrays of connections miss on every access).
    #[inline]
    fn prefetch(&self, next: SimEvent) {
        match next {
            SimEvent::Net(e) => self.net.prefetch_event(e),
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
            SimEvent::Host(HostEvent::AppNote { slot }) => self.apps.held_host(slot)?,
            SimEvent::App(_) | SimEvent::Metrics(_) | SimEvent::Svc(_) | SimEvent::Dma(_) => {
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
            SimEvent::Net(NetEvent::NodeDown { node }) => {
                self.net.handle(&mut self.ev, NetEvent::NodeDown { node });
                self.node_down(node);
            }
            SimEvent::Net(NetEvent::NodeUp { node }) => {
                self.net.handle(&mut self.ev, NetEvent::NodeUp { node });
                self.node_up(node);
            }
            SimEvent::Net(e) => match self.net.handle(&mut self.ev, e) {
                None => {}
                Some(Upcall::Deliver { pkt, host }) => {
                    let Sim { net, hosts, ev, .. } = self;
                    if let Some(pkt) = hosts.on_arrival(net, ev, host, pkt) {
                        self.receive(pkt);
                    }
                }
                Some(Upcall::Forward { pkt, host }) => {
                    if let Some(r) = self.hosts.forward(&mut self.net, &mut self.ev, host, pkt) {
                        self.ready(r);
                    }
                }
            },
            SimEvent::Host(HostEvent::AppNote { slot }) => {
                self.apps.on_thread_ran(&mut stack!(self), slot)
            }
            SimEvent::Host(e) => {
                let Sim { net, hosts, ev, .. } = self;
                if let Some(r) = hosts.handle_packet_event(net, ev, e) {
                    self.ready(r);
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
            SimEvent::Svc(e) => {
                let mut ctx = SvcCtx {
                    net: &mut self.net,
                    hosts: &mut self.hosts,
                    ev: &mut self.ev,
                };
                self.services.on_event(&mut ctx, e);
                self.pass_up_from_tunnel();
            }
            SimEvent::Metrics(MetricsEvent::Sample) => {
                self.metrics.on_sample(&mut self.ev, &self.net)
            }
            SimEvent::Dma(e) => {
                self.dma.on_timer(&mut self.net, &mut self.ev, e);
                self.apps.dispatch_notes(&mut stack!(self));
            }
        }
        self.charge_departures();
    }

    /// Packing: the sending work of the packets that have left hosts since the last look,
    /// now that they have.
    #[inline]
    fn charge_departures(&mut self) {
        if !self.net.frames_out.is_empty() {
            self.hosts
                .frames_sent(&mut self.net.frames_out, self.ev.now());
        }
    }

    /// Node `node` has failed: if it is a server, the services hear.
    fn node_down(&mut self, node: u32) {
        let n = &self.net.nodes[node as usize];
        if n.kind != crate::net::NodeKind::Host {
            return;
        }
        let host = n.index;
        let mut ctx = SvcCtx {
            net: &mut self.net,
            hosts: &mut self.hosts,
            ev: &mut self.ev,
        };
        self.services.on_server_down(&mut ctx, host);
    }

    /// Node `node` has rejoined: if it is a server, the services hear.
    fn node_up(&mut self, node: u32) {
        let n = &self.net.nodes[node as usize];
        if n.kind != crate::net::NodeKind::Host {
            return;
        }
        let host = n.index;
        let mut ctx = SvcCtx {
            net: &mut self.net,
            hosts: &mut self.hosts,
            ev: &mut self.ev,
        };
        self.services.on_server_up(&mut ctx, host);
    }

    /// What a host has finished with goes up: to its transport or service, or on its way.
    #[inline]
    fn ready(&mut self, r: Ready) {
        match r {
            Ready::Receive(pkt) => self.receive(pkt),
            Ready::Forward { pkt, host } => {
                if self.net.pool.get(pkt).proto == crate::packet::Proto::Service {
                    let mut ctx = SvcCtx {
                        net: &mut self.net,
                        hosts: &mut self.hosts,
                        ev: &mut self.ev,
                    };
                    if self.services.on_path(&mut ctx, host, pkt) == OnPath::Taken {
                        return;
                    }
                }
                self.net.host_transmit(&mut self.ev, host, pkt);
            }
        }
    }

    /// The host's transport (or service) takes `pkt`, and applications hear what it
    /// delivered.
    #[inline]
    fn receive(&mut self, pkt: crate::packet::PktId) {
        let p = self.net.pool.get(pkt);
        if p.proto == crate::packet::Proto::Frame {
            self.frames_out.push((pkt, self.ev.now()));
            return;
        }
        if p.proto == crate::packet::Proto::Dma {
            self.dma.on_packet(&mut self.net, &mut self.ev, pkt);
            self.apps.dispatch_notes(&mut stack!(self));
            return;
        }
        if p.proto == crate::packet::Proto::Service {
            let host = p.dst_host;
            let mut ctx = SvcCtx {
                net: &mut self.net,
                hosts: &mut self.hosts,
                ev: &mut self.ev,
            };
            self.services.deliver(&mut ctx, host, pkt);
            return;
        }
        // Only TCP data can be out of order in a way the tunnel repairs; the rest goes
        // straight up.
        let reorder = p.proto == crate::packet::Proto::Tcp && p.payload_bytes > 0;
        if let Some(t) = self.services.tunnel.as_mut().filter(|_| reorder) {
            t.arrive(
                &mut SvcCtx {
                    net: &mut self.net,
                    hosts: &mut self.hosts,
                    ev: &mut self.ev,
                },
                pkt,
            );
            self.pass_up_from_tunnel();
            return;
        }
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

    /// What the tunnel's reorder buffers let go goes to the hosts' transport, in order.
    fn pass_up_from_tunnel(&mut self) {
        let Some(t) = &mut self.services.tunnel else {
            return;
        };
        if t.ready.is_empty() {
            return;
        }
        let ready = std::mem::take(&mut t.ready);
        let Sim {
            net,
            hosts,
            ev,
            tcp,
            udp,
            ..
        } = self;
        for &pkt in &ready {
            transport::receive(net, hosts, ev, tcp, udp, pkt);
        }
        if let Some(t) = &mut self.services.tunnel {
            t.ready = ready;
            t.ready.clear();
        }
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
            time_reversals: self.ev.past_schedules(),
            lookahead_violations: self.ev.early_mail(),
        }
    }

    /// The result tables, releasing the per-request records once their table is built: a
    /// full-length memcached run holds tens of millions of them, and the front end needs
    /// the memory for the conversion. Later calls see no requests; take the summary first.
    pub fn take_tables(&mut self) -> Vec<Table> {
        let (mut tables, records, pairs) = self.tables_but_requests();
        tables.insert(REQUESTS_AT, memcached::take_requests_table(records, &pairs));
        tables
    }

    /// The result tables, consuming the simulation: everything else it holds (packets,
    /// queues, connections) is released before the requests table is built, which in a
    /// full-length memcached run is the largest thing the run makes.
    pub fn into_tables(mut self) -> Vec<Table> {
        let (mut tables, records, pairs) = self.tables_but_requests();
        drop(self);
        give_back_freed_memory();
        tables.insert(REQUESTS_AT, memcached::take_requests_table(records, &pairs));
        tables
    }

    /// Every table but `requests`, with the records that table is made of (taken) and
    /// what it needs of the network.
    fn tables_but_requests(
        &mut self,
    ) -> (
        Vec<Table>,
        Vec<memcached::RequestRecord>,
        memcached::PairSwitches,
    ) {
        let records = self.apps.take_requests();
        let pairs = memcached::PairSwitches::of(&records, &self.net);
        (self.tables_without_requests(), records, pairs)
    }

    /// pcap files of the capture points, by name ("host-3", "tor0-port1"), with how many
    /// packets each holds and saw (more than it holds when `max_packets` capped it).
    pub fn captures(&self) -> Vec<(String, Vec<u8>, u64, u64)> {
        let c = &self.net.captures;
        let epoch_s = self
            .scenario
            .metrics
            .capture
            .as_ref()
            .map_or(Ok(0), config::resolve::capture_epoch_s)
            .unwrap_or(0);
        let style = metrics::pcap::PcapStyle {
            epoch_s,
            rcv_window_bytes: self.tcp.params.rcv_window_bytes,
        };
        c.by_point()
            .into_iter()
            .enumerate()
            .map(|(i, (name, records))| {
                (
                    name.to_string(),
                    metrics::pcap::write(&records, &style),
                    c.recorded[i],
                    c.seen[i],
                )
            })
            .collect()
    }

    pub fn tables(&self) -> Vec<Table> {
        let mut tables = self.tables_without_requests();
        let requests = memcached::requests_table(self.memcached_requests(), &self.net);
        tables.insert(REQUESTS_AT, requests);
        tables
    }

    /// The result tables but `requests` (memcached's), which goes at `REQUESTS_AT`.
    fn tables_without_requests(&self) -> Vec<Table> {
        let end = self.ev.now();
        let mut tables = vec![
            metrics::flows_table(
                &self.metrics,
                end,
                &metrics::flow_diagnostics(&self.metrics, &self.tcp, &self.net),
            ),
            metrics::incast_table(&self.metrics),
            metrics::queue_table(&self.metrics, &self.net),
            metrics::links_table(&self.net, end),
            metrics::drops_table(&self.net),
            metrics::hosts_table(&self.net, &self.hosts, end),
        ];
        if let Some(p) = self.services.ping() {
            tables.push(crate::services::ping::table(&p.records, &self.net));
        }
        if let Some(r) = self.services.reliable() {
            tables.push(crate::services::reliable::table(r));
        }
        if let Some(m) = self.services.multicast() {
            tables.push(crate::services::multicast::table(m));
        }
        if let Some(k) = self.services.kv() {
            tables.push(crate::services::kv_clients::table(&k.clients));
        }
        if let Some(j) = self.apps.job() {
            tables.push(crate::workload::job::table(&j.records));
        }
        if let Some(m) = self.apps.mapreduce() {
            tables.push(crate::workload::mapreduce::table(m));
        }
        if !self.dma.transfers.is_empty() {
            tables.push(crate::transport::dma::table(&self.dma));
        }
        if let Some(r) = self.apps.ramcloud() {
            tables.push(crate::workload::ramcloud::table(r));
        }
        tables.push(metrics::energy::table(&self.energy(), &self.net));
        if self.scenario.metrics.trace.is_some() {
            tables.push(metrics::cwnd_trace_table(&self.tcp.trace));
            tables.push(metrics::queue_trace_table(&self.net.queue_trace, &self.net));
        }
        tables
    }

    /// The run's energy so far, by component and node.
    pub fn energy(&self) -> metrics::energy::Energy {
        metrics::energy::energy(&self.net, &self.hosts, &self.power, self.ev.now())
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
            failed_hosts: &self.failed_hosts,
            udp_target: self.apps.udp_target().map(udp_pattern),
            now_ps: self.ev.now(),
        });
        let reqs = self.memcached_requests();
        if !reqs.is_empty() {
            memcached::headline(&mut headline, reqs);
        }
        if let Some(p) = self.services.ping() {
            crate::services::ping::headline(&mut headline, &p.records);
        }
        if let Some(r) = self.services.reliable() {
            crate::services::reliable::headline(&mut headline, r);
        }
        if let Some(m) = self.services.multicast() {
            crate::services::multicast::headline(&mut headline, m);
        }
        if let Some(a) = self.services.aggregate() {
            crate::services::aggregate::headline(&mut headline, a);
        }
        if let Some(k) = self.services.kv() {
            crate::services::kvstore::headline(&mut headline, k, &self.net, self.ev.now());
        }
        if self.net.torus.is_some() && !self.tcp.senders.is_empty() {
            crate::services::tunnel::headline(
                &mut headline,
                self.services.tunnel.as_ref(),
                metrics::headline::inbound_gbps_per_host(&self.metrics, self.ev.now()),
            );
        }
        if let Some(j) = self.apps.job() {
            crate::workload::job::headline(&mut headline, j);
        }
        if let Some(m) = self.apps.mapreduce() {
            crate::workload::mapreduce::headline(&mut headline, m);
        }
        if let Some(r) = self.apps.ramcloud() {
            crate::workload::ramcloud::headline(&mut headline, r);
        }
        let dma_dropped = self
            .net
            .drop_log
            .iter()
            .filter(|d| d.proto == crate::packet::Proto::Dma)
            .count() as u64;
        crate::transport::dma::headline(&mut headline, &self.dma, dma_dropped);
        metrics::energy::headline(
            &mut headline,
            &self.energy(),
            self.net.n_hosts(),
            self.net.counters.delivered_bytes,
        );
        serde_json::json!({
            "scenario": self.scenario,
            "seed": self.scenario.seed,
            "simulated_seconds": sim_s,
            "events": self.ev.events_processed(),
            "packet_hops": self.net.counters.packet_hops,
            "data_packet_hops": self.net.counters.data_packet_hops,
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
                "lookahead_violations": inv.lookahead_violations,
                "ok": inv.ok(),
            },
            "queue_samples_truncated": self.metrics.queue_samples_truncated,
            "timeslots": self.slots.as_ref().map(|s| serde_json::json!({
                "slots": s.done,
                "slot_ns": s.slot_ps as f64 / 1e3,
            })),
            "services": self.services.user_results(),
        })
    }
}

/// A UDP workload's destinations as the headline sees them.
fn udp_pattern(t: crate::workload::udp_source::Target) -> metrics::headline::UdpPattern {
    use crate::workload::udp_source::Target;
    use metrics::headline::UdpPattern;
    match t {
        Target::Random => UdpPattern::Random,
        Target::Neighbours { .. } => UdpPattern::Neighbours,
        _ => UdpPattern::Other,
    }
}
