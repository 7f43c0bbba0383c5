//! CamCubeOS services: code that runs on every server of a torus and sees its packets on
//! their way. A packet of a service carries the service's id (`Proto::SERVICE`, id in
//! `dst_port`); at every server it crosses, the runtime hands it to that server's instance
//! of the service (`on_path`), which may let it go on (the default), change it, drop it,
//! keep it, or send packets of its own; at its destination the service receives it
//! (`deliver`). Service 0 is the hosts' own TCP and UDP, which no server on the way looks at.
//!
//! A built-in service is a variant of `Service` (an enum, so a hop costs no dynamic
//! dispatch); a user's is a `user::ServiceCode` (`Service::User`). The transport's packets
//! cross the torus in the TCP/IP tunnel (`tunnel`), whose reorder buffers at each
//! destination put each flow's segments back in order.

pub mod aggregate;
pub mod kind;
pub mod kv_cache;
pub mod kv_clients;
pub mod kvstore;
pub mod multicast;
pub mod ping;
pub mod reliable;
pub mod streams;
pub mod tunnel;
pub mod user;

use crate::engine::Scheduler;
use crate::host::{HostEvent, Hosts};
use crate::metrics::report::{Headline, Report, ReportCtx};
use crate::net::{NetEvent, Network};
use crate::packet::PktId;

/// Service ids (a packet's `dst_port`). 0 is the hosts' TCP and UDP.
pub const TRANSPORT: u16 = 0;
pub const PING: u16 = 1;
pub const RELIABLE: u16 = 2;
pub const MULTICAST: u16 = 3;
pub const KVSTORE: u16 = 4;
pub const AGGREGATE: u16 = 5;

/// Bytes of CamCubeOS's own header in a service packet (service id, source, key): the
/// paper gives no figure; 32 is the simulator specification's choice.
pub const SERVICE_HEADER_BYTES: u32 = 32;

/// What a service's packets may reach: the network and the hosts' CPUs and NICs.
pub struct SvcCtx<'a, S> {
    pub net: &'a mut Network,
    pub hosts: &'a mut Hosts,
    pub ev: &'a mut S,
}

/// What a service that sends frames of `payload_bytes` from `root` across a torus needs
/// to pace them: the torus's dimensions, the frame's bytes, the framing on the wire and
/// the rate of the root's link.
pub(crate) struct RootLink {
    pub dims: [u32; 3],
    pub frame_bytes: u32,
    pub wire_overhead_bytes: u32,
    pub rate_bps: u64,
}

impl RootLink {
    /// Of a torus network (the workload's resolver checked there is one).
    pub(crate) fn of(net: &Network, root: u32, payload_bytes: u32) -> RootLink {
        let port = &net.ports()[net.nic_port(root) as usize];
        RootLink {
            dims: net.torus().expect("checked: a torus").dims,
            frame_bytes: net.frame_bytes(root, payload_bytes + SERVICE_HEADER_BYTES),
            wire_overhead_bytes: port.wire_overhead_bytes,
            rate_bps: port.rate_bps,
        }
    }
}

/// The services' events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SvcEvent {
    /// A timer of service `service` (its meaning, `tag`, is the service's own).
    Timer { service: u16, tag: u32 },
}

/// A scheduler the services can use: their own events and the layers below them.
pub trait SvcSched: Scheduler<NetEvent> + Scheduler<HostEvent> + Scheduler<SvcEvent> {}
impl<T: Scheduler<NetEvent> + Scheduler<HostEvent> + Scheduler<SvcEvent>> SvcSched for T {}

/// What a service does with a packet that crosses its server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnPath {
    /// Send it on towards its destination.
    Forward,
    /// The service has taken it (dropped and freed it, kept it, or sent it elsewhere).
    Taken,
}

/// A built-in service: its id (a packet's `dst_port`) and what it does at each server it
/// runs on. Every call but `deliver` has a default; its tables and headline figures come
/// from its `Report`. `builtin_services!` lists the built-ins; `Service` and its dispatch
/// are generated from that list.
pub trait ServiceKind: Report {
    /// Its id: the next after the last service of the list (the list checks, when it
    /// compiles); a packet of the service carries it in `dst_port`.
    const ID: u16;
    /// Its name in `runtime.weights` and in the runtime's list of services.
    const NAME: &'static str;
    /// At the start of the run: what the service drives by itself.
    fn start<S: SvcSched>(&mut self, _ctx: &mut SvcCtx<S>) {}
    /// Its packet `pkt` crosses server `host` on its way.
    fn on_path<S: SvcSched>(&mut self, _ctx: &mut SvcCtx<S>, _host: u32, _pkt: PktId) -> OnPath {
        OnPath::Forward
    }
    /// Its packet `pkt` reached its destination `host`: the service owns it.
    fn deliver<S: SvcSched>(&mut self, ctx: &mut SvcCtx<S>, host: u32, pkt: PktId);
    /// Its timer with `tag` went off.
    fn on_timer<S: SvcSched>(&mut self, _ctx: &mut SvcCtx<S>, _tag: u32) {}
    /// Whether it drives the run and has finished (the run may end).
    fn done(&self) -> bool {
        false
    }
    /// Per id its packets carry in `flow_id`, a number that does not depend on how a
    /// partitioned run's partitions interleaved, for tables that name them (None: its ids
    /// do not, or it numbers nothing).
    fn message_ranks(&self) -> Option<Vec<u32>> {
        None
    }
    /// Server `host` has failed (by the truth), or rejoined.
    fn on_server_down<S: SvcSched>(&mut self, _ctx: &mut SvcCtx<S>, _host: u32) {}
    fn on_server_up<S: SvcSched>(&mut self, _ctx: &mut SvcCtx<S>, _host: u32) {}
}

impl<T: ServiceKind> ServiceKind for Box<T> {
    const ID: u16 = T::ID;
    const NAME: &'static str = T::NAME;
    fn start<S: SvcSched>(&mut self, ctx: &mut SvcCtx<S>) {
        (**self).start(ctx)
    }
    #[inline]
    fn on_path<S: SvcSched>(&mut self, ctx: &mut SvcCtx<S>, host: u32, pkt: PktId) -> OnPath {
        (**self).on_path(ctx, host, pkt)
    }
    fn deliver<S: SvcSched>(&mut self, ctx: &mut SvcCtx<S>, host: u32, pkt: PktId) {
        (**self).deliver(ctx, host, pkt)
    }
    fn on_timer<S: SvcSched>(&mut self, ctx: &mut SvcCtx<S>, tag: u32) {
        (**self).on_timer(ctx, tag)
    }
    fn done(&self) -> bool {
        (**self).done()
    }
    fn message_ranks(&self) -> Option<Vec<u32>> {
        (**self).message_ranks()
    }
    fn on_server_down<S: SvcSched>(&mut self, ctx: &mut SvcCtx<S>, host: u32) {
        (**self).on_server_down(ctx, host)
    }
    fn on_server_up<S: SvcSched>(&mut self, ctx: &mut SvcCtx<S>, host: u32) {
        (**self).on_server_up(ctx, host)
    }
}

/// A built-in service's type, found in a `Service`.
pub trait FromService {
    fn from_service(s: &Service) -> Option<&Self>;
}

/// The built-in services, one line each: a variant name and the service's type (boxed if
/// large). A workload that installs one does so with `Services::with`.
macro_rules! builtin_services {
    ($m:ident) => {
        $m! {
            Ping($crate::services::ping::Ping),
            Reliable($crate::services::reliable::Reliable),
            Multicast($crate::services::multicast::Multicast),
            Kv(Box<$crate::services::kvstore::KvStore>),
            Aggregate($crate::services::aggregate::Aggregate),
        }
    };
}

/// Declares `Service` (the built-ins and a user's `ServiceCode`) and its dispatch.
macro_rules! declare_services {
    ($($variant:ident($ty:ty)),* $(,)?) => {
        /// A service at work in a run.
        pub enum Service {
            $($variant($ty),)*
            User(Box<dyn user::ServiceCode>),
        }

        $(impl From<$ty> for Service {
            fn from(s: $ty) -> Service {
                Service::$variant(s)
            }
        }

        impl FromService for $ty {
            fn from_service(s: &Service) -> Option<&$ty> {
                match s {
                    Service::$variant(x) => Some(x),
                    _ => None,
                }
            }
        })*

        /// The built-in services' ids are 1, 2, ... in the list's order (0 is the
        /// transport's), so that `NAMES` is indexed by id.
        const _: () = {
            let ids = [$(<$ty as ServiceKind>::ID),*];
            let mut i = 0;
            while i < ids.len() {
                assert!(ids[i] as usize == i + 1, "service ids are 1, 2, ... in the list's order");
                i += 1;
            }
        };

        /// The runtime's services by id: the transport's, then the built-ins.
        pub const NAMES: &[&str] = &["transport", $(<$ty as ServiceKind>::NAME),*];

        impl Service {
            fn start(&mut self, ctx: &mut SvcCtx<impl SvcSched>) {
                match self {
                    $(Service::$variant(s) => ServiceKind::start(s, ctx),)*
                    Service::User(u) => user::with_dyn(ctx, |c| u.start(c)),
                }
            }
            #[inline]
            fn on_path(&mut self, ctx: &mut SvcCtx<impl SvcSched>, host: u32, pkt: PktId) -> OnPath {
                match self {
                    $(Service::$variant(s) => ServiceKind::on_path(s, ctx, host, pkt),)*
                    Service::User(u) => user::with_dyn(ctx, |c| u.on_path(c, host, pkt)),
                }
            }
            fn deliver(&mut self, ctx: &mut SvcCtx<impl SvcSched>, host: u32, pkt: PktId) {
                match self {
                    $(Service::$variant(s) => ServiceKind::deliver(s, ctx, host, pkt),)*
                    Service::User(u) => user::with_dyn(ctx, |c| u.deliver(c, host, pkt)),
                }
            }
            fn on_timer(&mut self, ctx: &mut SvcCtx<impl SvcSched>, tag: u32) {
                match self {
                    $(Service::$variant(s) => ServiceKind::on_timer(s, ctx, tag),)*
                    Service::User(u) => user::with_dyn(ctx, |c| u.on_timer(c, tag)),
                }
            }
            /// A user's service never ends the run.
            fn done(&self) -> bool {
                match self {
                    $(Service::$variant(s) => ServiceKind::done(s),)*
                    Service::User(_) => false,
                }
            }
            fn message_ranks(&self) -> Option<Vec<u32>> {
                match self {
                    $(Service::$variant(s) => ServiceKind::message_ranks(s),)*
                    Service::User(_) => None,
                }
            }
            fn on_server(&mut self, ctx: &mut SvcCtx<impl SvcSched>, host: u32, up: bool) {
                match (self, up) {
                    $((Service::$variant(s), true) => ServiceKind::on_server_up(s, ctx, host),
                    (Service::$variant(s), false) => ServiceKind::on_server_down(s, ctx, host),)*
                    (Service::User(_), _) => {}
                }
            }
        }

        impl Report for Service {
            fn tables(&self, ctx: &ReportCtx, out: &mut Vec<crate::table::Table>) {
                match self {
                    $(Service::$variant(s) => s.tables(ctx, out),)*
                    Service::User(_) => {}
                }
            }

            fn headline(&self, ctx: &ReportCtx, h: &mut Headline) {
                match self {
                    $(Service::$variant(s) => s.headline(ctx, h),)*
                    Service::User(_) => {}
                }
            }
        }
    };
}
builtin_services!(declare_services);

/// The services of a run, by id (index 0, the transport, holds none).
#[derive(Default)]
pub struct Services {
    pub list: Vec<Option<Service>>,
    /// The TCP/IP tunnel's reorder buffers at each destination (a torus's transport).
    pub tunnel: Option<tunnel::Tunnel>,
    /// The id of the built-in service that drives the run (`with`), if any.
    driver: Option<u16>,
}

impl Services {
    /// Services with one built-in service at its id (the one a workload drives).
    pub fn with<T: ServiceKind + Into<Service>>(service: T) -> Services {
        let mut s = Services::default();
        let id = usize::from(T::ID);
        s.list.resize_with(id + 1, || None);
        s.list[id] = Some(service.into());
        s.driver = Some(T::ID);
        s
    }

    /// Adds a user's service under `id` (1 to 63; not 0, the transport); an id already
    /// taken is refused.
    pub fn add(&mut self, id: u16, code: Box<dyn user::ServiceCode>) -> Result<(), String> {
        let i = usize::from(id);
        if id == TRANSPORT || id >= 64 || self.list.get(i).is_some_and(|s| s.is_some()) {
            return Err(format!(
                "service id {id} is taken or too large; allowed: an unused id from 1 to 63"
            ));
        }
        if self.list.len() <= i {
            self.list.resize_with(i + 1, || None);
        }
        self.list[i] = Some(Service::User(code));
        Ok(())
    }

    /// The built-in service `T`, if this run has it (`Box<T>` for those boxed in the list).
    pub fn find<T: ServiceKind + FromService>(&self) -> Option<&T> {
        T::from_service(self.list.get(usize::from(T::ID))?.as_ref()?)
    }

    fn get(&mut self, id: u16) -> Option<&mut Service> {
        self.list.get_mut(usize::from(id))?.as_mut()
    }

    /// Node `node` has failed (`up` false) or rejoined, and the network knows: if it is a
    /// server, the services hear (those that act on failures, the key-value store, act).
    pub fn on_node(&mut self, ctx: &mut SvcCtx<impl SvcSched>, node: u32, up: bool) {
        if let Some(host) = ctx.net.host_of_node(node) {
            for s in self.list.iter_mut().flatten() {
                s.on_server(ctx, host, up);
            }
        }
    }

    /// A packet the services take at its destination: a service's own (`Proto::SERVICE`)
    /// or, with a tunnel, TCP data into its reorder buffers (what they let go waits in
    /// `tunnel.ready` for the hosts' transport).
    pub fn receive(&mut self, ctx: &mut SvcCtx<impl SvcSched>, pkt: PktId) {
        let p = ctx.net.pool().get(pkt);
        if p.proto == crate::packet::Proto::SERVICE {
            let host = p.dst_host;
            return self.deliver(ctx, host, pkt);
        }
        let t = self.tunnel.as_mut().expect("only tunnelled TCP data");
        t.arrive(ctx, pkt);
    }

    /// Starts what the services drive by themselves.
    pub fn start(&mut self, ctx: &mut SvcCtx<impl SvcSched>) {
        for s in self.list.iter_mut().flatten() {
            s.start(ctx);
        }
    }

    /// What each user service found (`ServiceCode::results`), by service id.
    pub fn user_results(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut out = serde_json::Map::new();
        for (id, s) in self.list.iter().enumerate() {
            if let Some(Service::User(u)) = s {
                if let Some(v) = u.results() {
                    out.insert(id.to_string(), v);
                }
            }
        }
        out
    }

    /// `ServiceKind::message_ranks` of the service that drives the run.
    pub fn message_ranks(&self) -> Option<Vec<u32>> {
        self.list[usize::from(self.driver?)]
            .as_ref()?
            .message_ranks()
    }

    /// Whether a service drives the run and has finished (the run may end).
    #[inline]
    pub fn done(&self) -> bool {
        // Asked after every event: one look at the service that drives the run.
        match self.driver {
            Some(id) => self.list[usize::from(id)]
                .as_ref()
                .is_some_and(Service::done),
            None => false,
        }
    }

    /// Service packet `pkt` crosses server `host`.
    pub fn on_path(&mut self, ctx: &mut SvcCtx<impl SvcSched>, host: u32, pkt: PktId) -> OnPath {
        let id = ctx.net.pool().get(pkt).dst_port;
        match self.get(id) {
            Some(s) => s.on_path(ctx, host, pkt),
            None => OnPath::Forward,
        }
    }

    /// A service's timer went off.
    pub fn on_event(&mut self, ctx: &mut SvcCtx<impl SvcSched>, e: SvcEvent) {
        let SvcEvent::Timer { service, tag } = e;
        if service == TRANSPORT {
            if let Some(t) = &mut self.tunnel {
                t.on_timer(ctx, tag);
            }
            return;
        }
        if let Some(s) = self.get(service) {
            s.on_timer(ctx, tag);
        }
    }

    /// Service packet `pkt` reached its destination `host`.
    pub fn deliver(&mut self, ctx: &mut SvcCtx<impl SvcSched>, host: u32, pkt: PktId) {
        let id = ctx.net.pool().get(pkt).dst_port;
        match self.get(id) {
            Some(s) => s.deliver(ctx, host, pkt),
            // No such service at this server: the packet is consumed unread.
            None => ctx.net.delivered(pkt),
        }
    }
}

/// The services in the order of their ids; the tunnel reports when TCP ran over it.
impl Report for Services {
    fn tables(&self, ctx: &ReportCtx, out: &mut Vec<crate::table::Table>) {
        self.list.iter().flatten().for_each(|s| s.tables(ctx, out));
    }

    fn headline(&self, ctx: &ReportCtx, h: &mut Headline) {
        self.list.iter().flatten().for_each(|s| s.headline(ctx, h));
        if ctx.net.torus().is_some() && ctx.tcp_in_use {
            let inbound = crate::metrics::headline::inbound_gbps_per_host(ctx.metrics, ctx.now_ps);
            tunnel::headline(h, self.tunnel.as_ref(), inbound);
        }
    }
}
