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

mod build;
mod parallel;
mod prefetch;
mod results;
mod setup;
use parallel::Balance;
pub use results::Invariants;

impl Sim {
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
            self.prefetch_ahead();
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
                tcp.on_nic_departures(&mut transport::HostPath::new(net, hosts, ev));
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

    /// Routes an event to its layer; what a layer hands up (a packet for a host, a packet
    /// for a transport, notes for applications) goes to the layer above. Always inlined
    /// into the event loop, its one caller, with the network's handler: whether LLVM's
    /// budget would take them otherwise swings with unrelated code (benchmarks/RESULTS.md,
    /// 2026-11-27), and a call per event costs about 5% at k=8.
    #[inline(always)]
    fn handle(&mut self, e: SimEvent) {
        match e {
            SimEvent::Net(e @ (NetEvent::NodeDown { .. } | NetEvent::NodeUp { .. })) => {
                self.node_event(e)
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
            SimEvent::Tcp(e) => {
                let Sim {
                    net,
                    hosts,
                    ev,
                    tcp,
                    ..
                } = self;
                tcp.on_timer(&mut transport::HostPath::new(net, hosts, ev), e);
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

    /// A node fails or rejoins: the network first, then the services if it is a server.
    #[inline(never)]
    fn node_event(&mut self, e: NetEvent) {
        self.net.handle(&mut self.ev, e);
        match e {
            NetEvent::NodeDown { node } => self.node_down(node),
            NetEvent::NodeUp { node } => self.node_up(node),
            _ => {}
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
        use crate::packet::Proto;
        let p = self.net.pool.get(pkt);
        // Only TCP data can be out of order in a way the tunnel repairs.
        let reorder = p.proto == Proto::Tcp && p.payload_bytes > 0;
        let tunnel = reorder && self.services.tunnel.is_some();
        if tunnel || !matches!(p.proto, Proto::Tcp | Proto::Udp) {
            return self.receive_other(pkt);
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

    /// What is not for the hosts' TCP or UDP straight away: real frames, DMA, services'
    /// packets, and TCP data through the tunnel. (Out of line: the common path stays small
    /// enough for the event loop to inline.)
    #[inline(never)]
    fn receive_other(&mut self, pkt: crate::packet::PktId) {
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
        // TCP data with a tunnel (`receive` sends the rest of TCP and UDP straight up).
        let t = self
            .services
            .tunnel
            .as_mut()
            .expect("only tunnelled TCP data");
        t.arrive(
            &mut SvcCtx {
                net: &mut self.net,
                hosts: &mut self.hosts,
                ev: &mut self.ev,
            },
            pkt,
        );
        self.pass_up_from_tunnel();
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
}
