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
use crate::transport::{self, Transports};
use crate::workload::{memcached, AppEvent, Apps, Stack};

mod dry_build;
mod slots;
mod stall;
mod threads;

/// Declares `SimEvent`: one variant per layer, and one per transport (from
/// `transport::builtin_transports!`), stored flat so that it stays 12 bytes; `Layer` is the
/// same event as the layers see it, a transport's inside `TransportEvent`.
macro_rules! sim_events {
    ($($(#[$attr:meta])* $tv:ident($tf:ident: $tty:ty)),* $(,)?) => {
        sim_events!(@ [Net(NetEvent), Host(HostEvent), App(AppEvent), Metrics(MetricsEvent), Svc(SvcEvent)]
            $($(#[$attr])* $tv(<$tty as transport::TransportKind>::Event)),*);
    };
    (@ [$($variant:ident($ty:ty)),*] $($(#[$tattr:meta])* $tv:ident($tev:ty)),*) => {
        /// Every layer's events, one variant per layer (and per transport). Each layer
        /// schedules and handles its own enum; this one only routes an event to its layer.
        /// 12 bytes, like the layers'.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum SimEvent {
            $($variant($ty),)*
            $($(#[$tattr])* $tv($tev),)*
        }
        /// An event as its layer sees it (`SimEvent::layer`).
        #[derive(Clone, Copy, Debug)]
        pub enum Layer {
            $($variant($ty),)*
            Transport(transport::TransportEvent),
        }
        impl SimEvent {
            #[inline(always)]
            pub fn layer(self) -> Layer {
                match self {
                    $(SimEvent::$variant(e) => Layer::$variant(e),)*
                    $($(#[$tattr])* SimEvent::$tv(e) => Layer::Transport(transport::TransportEvent::$tv(e)),)*
                }
            }
        }
        $(
            impl From<$ty> for SimEvent {
                #[inline]
                fn from(e: $ty) -> Self {
                    SimEvent::$variant(e)
                }
            }
        )*
        impl From<transport::TransportEvent> for SimEvent {
            #[inline]
            fn from(e: transport::TransportEvent) -> Self {
                match e {
                    $($(#[$tattr])* transport::TransportEvent::$tv(e) => SimEvent::$tv(e),)*
                }
            }
        }
    };
}
transport::builtin_transports!(sim_events);
const _: () = assert!(std::mem::size_of::<SimEvent>() == 12);

pub struct Sim {
    pub scenario: Scenario,
    pub ev: EventQueue<SimEvent>,
    pub net: Network,
    /// The hosts' CPUs and NICs (a no-op for the ideal stack).
    pub hosts: Hosts,
    /// TCP, UDP, DMA: the kinds of `transport::builtin_transports!`.
    pub transports: Transports,
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
    /// Real frames that reached their host (`Proto::FRAME`) and when, for the emulator
    /// to hand to the host's kernel; it frees them.
    pub frames_out: Vec<(crate::packet::PktId, TimePs)>,
    /// Traffic may come from outside (the emulator's real frames): an empty event queue
    /// does not end the run.
    pub open_ended: bool,
    /// Prefetch two events ahead (the network's port-side state is too large to stay in
    /// cache); below that size the extra look-ups cost more than the misses they hide.
    deep_prefetch: bool,
    /// A partitioned run's threads (one without partitions) and which lane each runs.
    balance: crate::engine::partitioned::balance::LaneBalance,
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
            transports: &mut $s.transports,
            metrics: &mut $s.metrics,
        }
    };
}

/// The hosts' path below TCP (`transport::HostPath`), borrowed out of a `Sim`.
macro_rules! host_path {
    ($s:expr) => {
        transport::HostPath::new(&mut $s.net, &mut $s.hosts, &mut $s.ev)
    };
}

/// Borrows what the services reach out of a `Sim`.
macro_rules! svc_ctx {
    ($s:expr) => {
        SvcCtx {
            net: &mut $s.net,
            hosts: &mut $s.hosts,
            ev: &mut $s.ev,
        }
    };
}

mod build;
mod parallel;
mod prefetch;
mod results;
mod run;
mod setup;
pub use results::Invariants;

impl Sim {
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
            SimEvent::App(e) => self.apps.handle(&mut stack!(self), e),
            SimEvent::Svc(e) => {
                self.services.on_event(&mut svc_ctx!(self), e);
                self.pass_up_from_tunnel();
            }
            SimEvent::Metrics(MetricsEvent::Sample) => {
                self.metrics.on_sample(&mut self.ev, &self.net)
            }
            // The other variants are the transports' (`SimEvent::layer` says so exhaustively).
            e => self.transport_timer(e),
        }
        self.charge_departures();
    }

    /// A transport's timer is due. (Out of line: timers are rare beside packets, and the
    /// event loop's match stays on `SimEvent`'s own tag.)
    #[inline(never)]
    fn transport_timer(&mut self, e: SimEvent) {
        if let Layer::Transport(e) = e.layer() {
            self.transports.on_timer(&mut host_path!(self), e);
            self.apps.dispatch_notes(&mut stack!(self));
        }
    }

    /// Packing: the sending work of the packets that have left hosts since the last look,
    /// now that they have.
    #[inline]
    fn charge_departures(&mut self) {
        if self.net.has_frames_out() {
            let now = self.ev.now();
            self.hosts.frames_sent(self.net.frames_out(), now);
        }
    }

    /// A node fails or rejoins: the network first, then the services.
    #[inline(never)]
    fn node_event(&mut self, e: NetEvent) {
        self.net.handle(&mut self.ev, e);
        match e {
            NetEvent::NodeDown { node } => self.services.on_node(&mut svc_ctx!(self), node, false),
            NetEvent::NodeUp { node } => self.services.on_node(&mut svc_ctx!(self), node, true),
            _ => {}
        }
    }

    /// What a host has finished with goes up: to its transport or service, or on its way.
    #[inline]
    fn ready(&mut self, r: Ready) {
        match r {
            Ready::Receive(pkt) => self.receive(pkt),
            Ready::Forward { pkt, host } => {
                if self.net.pool().get(pkt).proto == crate::packet::Proto::SERVICE
                    && self.services.on_path(&mut svc_ctx!(self), host, pkt) == OnPath::Taken
                {
                    return;
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
        let p = self.net.pool().get(pkt);
        // Only TCP data can be out of order in a way the tunnel repairs.
        let reorder = p.proto == Proto::TCP && p.payload_bytes > 0;
        let tunnel = reorder && self.services.tunnel.is_some();
        if tunnel || !Transports::takes(p.proto) {
            return self.receive_other(pkt);
        }
        self.transport_up(pkt);
        self.apps.dispatch_notes(&mut stack!(self));
    }

    /// The host's transport takes `pkt` (applications hear later).
    #[inline]
    fn transport_up(&mut self, pkt: crate::packet::PktId) {
        self.transports.on_packet(&mut host_path!(self), pkt);
    }

    /// What is not for the hosts' transports straight away: real frames (for the
    /// emulator) and the services' (their packets, and TCP data through the tunnel).
    /// Out of line: the common path stays small enough for the event loop to inline.
    #[inline(never)]
    fn receive_other(&mut self, pkt: crate::packet::PktId) {
        if self.net.pool().get(pkt).proto == crate::packet::Proto::FRAME {
            return self.frames_out.push((pkt, self.ev.now()));
        }
        self.services.receive(&mut svc_ctx!(self), pkt);
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
        for &pkt in &ready {
            self.transport_up(pkt);
        }
        if let Some(t) = &mut self.services.tunnel {
            t.ready = ready;
            t.ready.clear();
        }
        self.apps.dispatch_notes(&mut stack!(self));
    }
}
