//! CamCubeOS services: code that runs on every server of a torus and sees its packets on
//! their way. A packet of a service carries the service's id (`Proto::Service`, id in
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

pub enum Service {
    Ping(ping::Ping),
    Reliable(reliable::Reliable),
    Multicast(multicast::Multicast),
    Kv(Box<kvstore::KvStore>),
    Aggregate(aggregate::Aggregate),
    User(Box<dyn user::ServiceCode>),
}

/// The services of a run, by id (index 0, the transport, holds none).
#[derive(Default)]
pub struct Services {
    pub list: Vec<Option<Service>>,
    /// The TCP/IP tunnel's reorder buffers at each destination (a torus's transport).
    pub tunnel: Option<tunnel::Tunnel>,
}

impl Services {
    pub fn with_ping(p: ping::Ping) -> Services {
        let mut s = Services::default();
        s.list.resize_with(usize::from(PING) + 1, || None);
        s.list[usize::from(PING)] = Some(Service::Ping(p));
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

    fn get(&mut self, id: u16) -> Option<&mut Service> {
        self.list.get_mut(usize::from(id))?.as_mut()
    }

    /// Services with the reliable transport driving `spec`'s transfers.
    pub fn with_reliable(r: reliable::Reliable) -> Services {
        let mut s = Services::default();
        s.list.resize_with(usize::from(RELIABLE) + 1, || None);
        s.list[usize::from(RELIABLE)] = Some(Service::Reliable(r));
        s
    }

    /// Services with a file distribution over six trees.
    pub fn with_multicast(m: multicast::Multicast) -> Services {
        let mut s = Services::default();
        s.list.resize_with(usize::from(MULTICAST) + 1, || None);
        s.list[usize::from(MULTICAST)] = Some(Service::Multicast(m));
        s
    }

    /// Services with the key-value store and its clients.
    pub fn with_kv(k: kvstore::KvStore) -> Services {
        let mut s = Services::default();
        s.list.resize_with(usize::from(KVSTORE) + 1, || None);
        s.list[usize::from(KVSTORE)] = Some(Service::Kv(Box::new(k)));
        s
    }

    /// Services with a Camdoop-style aggregation.
    pub fn with_aggregate(a: aggregate::Aggregate) -> Services {
        let mut s = Services::default();
        s.list.resize_with(usize::from(AGGREGATE) + 1, || None);
        s.list[usize::from(AGGREGATE)] = Some(Service::Aggregate(a));
        s
    }

    /// The aggregation, if this run has one.
    pub fn aggregate(&self) -> Option<&aggregate::Aggregate> {
        match self.list.get(usize::from(AGGREGATE))?.as_ref()? {
            Service::Aggregate(a) => Some(a),
            _ => None,
        }
    }

    /// The key-value store, if this run has one.
    pub fn kv(&self) -> Option<&kvstore::KvStore> {
        match self.list.get(usize::from(KVSTORE))?.as_ref()? {
            Service::Kv(k) => Some(k),
            _ => None,
        }
    }

    /// Node `node` has failed (`up` false) or rejoined, and the network knows: if it is a
    /// server, the services that act on failures hear.
    pub fn on_node(&mut self, ctx: &mut SvcCtx<impl SvcSched>, node: u32, up: bool) {
        match ctx.net.host_of_node(node) {
            Some(host) if up => self.on_server_up(ctx, host),
            Some(host) => self.on_server_down(ctx, host),
            None => {}
        }
    }

    /// A packet the services take at its destination: a service's own (`Proto::Service`)
    /// or, with a tunnel, TCP data into its reorder buffers (what they let go waits in
    /// `tunnel.ready` for the hosts' transport).
    pub fn receive(&mut self, ctx: &mut SvcCtx<impl SvcSched>, pkt: PktId) {
        let p = ctx.net.pool().get(pkt);
        if p.proto == crate::packet::Proto::Service {
            let host = p.dst_host;
            return self.deliver(ctx, host, pkt);
        }
        let t = self.tunnel.as_mut().expect("only tunnelled TCP data");
        t.arrive(ctx, pkt);
    }

    /// Server `host` has failed (by the truth): the services that act on failures hear.
    fn on_server_down(&mut self, ctx: &mut SvcCtx<impl SvcSched>, host: u32) {
        if let Some(Service::Kv(k)) = self.get(KVSTORE) {
            k.on_server_down(ctx, host);
        }
    }

    /// The file distribution, if this run has one.
    pub fn multicast(&self) -> Option<&multicast::Multicast> {
        match self.list.get(usize::from(MULTICAST))?.as_ref()? {
            Service::Multicast(m) => Some(m),
            _ => None,
        }
    }

    /// The reliable transport, if this run drives one.
    pub fn reliable(&self) -> Option<&reliable::Reliable> {
        match self.list.get(usize::from(RELIABLE))?.as_ref()? {
            Service::Reliable(r) => Some(r),
            _ => None,
        }
    }

    /// The ping service, if this run has one.
    pub fn ping(&self) -> Option<&ping::Ping> {
        match self.list.get(usize::from(PING))?.as_ref()? {
            Service::Ping(p) => Some(p),
            _ => None,
        }
    }

    /// Starts what the services drive by themselves.
    pub fn start(&mut self, ctx: &mut SvcCtx<impl SvcSched>) {
        for s in self.list.iter_mut().flatten() {
            match s {
                Service::Ping(p) => p.start(ctx),
                Service::Reliable(r) => r.start(ctx),
                Service::Multicast(m) => m.start(ctx),
                Service::Kv(k) => k.start(ctx),
                Service::Aggregate(a) => a.start(ctx),
                Service::User(u) => user::with_dyn(ctx, |c| u.start(c)),
            }
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

    /// Server `host` has rejoined: the key-value store recovers it.
    fn on_server_up(&mut self, ctx: &mut SvcCtx<impl SvcSched>, host: u32) {
        if let Some(Some(Service::Kv(k))) = self.list.get_mut(usize::from(KVSTORE)) {
            k.on_server_up(ctx, host);
        }
    }

    /// Whether a service drives the run and has finished (the run may end).
    #[inline]
    pub fn done(&self) -> bool {
        // Asked after every event: a run without services answers at once.
        if self.list.is_empty() {
            return false;
        }
        self.ping().is_some_and(|p| p.done())
            || self.reliable().is_some_and(|r| r.done())
            || self.multicast().is_some_and(|m| m.done())
            || self.kv().is_some_and(|k| k.done())
            || self.aggregate().is_some_and(|a| a.done())
    }

    /// Service packet `pkt` crosses server `host`.
    pub fn on_path(&mut self, ctx: &mut SvcCtx<impl SvcSched>, host: u32, pkt: PktId) -> OnPath {
        let id = ctx.net.pool().get(pkt).dst_port;
        match self.get(id) {
            Some(Service::Ping(p)) => p.on_path(ctx, host, pkt),
            Some(Service::Reliable(r)) => r.on_path(ctx, host, pkt),
            Some(Service::Multicast(m)) => m.on_path(ctx, host, pkt),
            Some(Service::Kv(k)) => k.on_path(ctx, host, pkt),
            Some(Service::Aggregate(a)) => a.on_path(ctx, host, pkt),
            Some(Service::User(u)) => user::with_dyn(ctx, |c| u.on_path(c, host, pkt)),
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
        match self.get(service) {
            Some(Service::Ping(p)) => p.on_timer(ctx, tag),
            Some(Service::Reliable(r)) => r.on_timer(ctx, tag),
            Some(Service::Multicast(m)) => m.on_timer(ctx, tag),
            Some(Service::Kv(k)) => k.on_timer(ctx, tag),
            Some(Service::Aggregate(a)) => a.on_timer(ctx, tag),
            Some(Service::User(u)) => user::with_dyn(ctx, |c| u.on_timer(c, tag)),
            None => {}
        }
    }

    /// Service packet `pkt` reached its destination `host`.
    pub fn deliver(&mut self, ctx: &mut SvcCtx<impl SvcSched>, host: u32, pkt: PktId) {
        let id = ctx.net.pool().get(pkt).dst_port;
        match self.get(id) {
            Some(Service::Ping(p)) => p.deliver(ctx, host, pkt),
            Some(Service::Reliable(r)) => r.deliver(ctx, host, pkt),
            Some(Service::Multicast(m)) => m.deliver(ctx, host, pkt),
            Some(Service::Kv(k)) => k.deliver(ctx, host, pkt),
            Some(Service::Aggregate(a)) => a.deliver(ctx, host, pkt),
            Some(Service::User(u)) => user::with_dyn(ctx, |c| u.deliver(c, host, pkt)),
            // No such service at this server: the packet is consumed unread.
            None => ctx.net.delivered(pkt),
        }
    }
}

impl Report for Service {
    fn tables(&self, ctx: &ReportCtx, out: &mut Vec<crate::table::Table>) {
        match self {
            Service::Ping(p) => out.push(ping::table(&p.records, ctx.net)),
            Service::Reliable(r) => out.push(reliable::table(r)),
            Service::Multicast(m) => out.push(multicast::table(m)),
            Service::Kv(k) => out.push(kv_clients::table(&k.clients)),
            Service::Aggregate(_) | Service::User(_) => {}
        }
    }

    fn headline(&self, ctx: &ReportCtx, h: &mut Headline) {
        match self {
            Service::Ping(p) => ping::headline(h, &p.records),
            Service::Reliable(r) => reliable::headline(h, r),
            Service::Multicast(m) => multicast::headline(h, m),
            Service::Aggregate(a) => aggregate::headline(h, a),
            Service::Kv(k) => kvstore::headline(h, k, ctx.net, ctx.now_ps),
            Service::User(_) => {}
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
