//! Workloads: applications on hosts and the drivers that start flows.
//!
//! Every application is a variant of `App` living on one host (a flow generator is the
//! exception: it stands for the cluster's job scheduler and opens connections at sources).
//! Applications act through `Ctx` and hear from transports through `Note`s.

pub mod cdf;
pub mod etc;
pub mod flows;
pub mod incast;
pub mod long_lived;
pub mod memcached;
pub mod udp_source;

mod apps;

pub use apps::{Apps, Stack};

use crate::engine::{Scheduler, TimePs};
use crate::host::Hosts;
use crate::metrics::Metrics;
use crate::net::Network;
use crate::transport::{Note, Tcp, TransportSched, Udp};

/// The workload layer's events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppEvent {
    /// A timer of application `app`, with a tag of the application's choosing.
    Timer { app: u32, tag: u32 },
}

/// What applications schedule through: their own timers and everything below.
pub trait AppSched: TransportSched + Scheduler<AppEvent> {}
impl<T: TransportSched + Scheduler<AppEvent>> AppSched for T {}

/// What an application may touch.
pub struct Ctx<'a, S> {
    pub ev: &'a mut S,
    pub net: &'a mut Network,
    pub hosts: &'a mut Hosts,
    pub tcp: &'a mut Tcp,
    pub udp: &'a mut Udp,
    pub metrics: &'a mut Metrics,
    /// Number of driver applications still working; the run ends when it reaches 0.
    pub active: &'a mut u32,
    /// Simulated end of the run (apps stop starting new work after it).
    pub end_ps: TimePs,
}

pub enum App {
    IncastClient(incast::Client),
    IncastServer(incast::Server),
    FlowGen(flows::FlowGen),
    LongLived(long_lived::LongLived),
    UdpSource(udp_source::UdpSource),
    Memcached(Box<memcached::Memcached>),
    /// An endpoint that only receives (its transport counts what arrives).
    Sink,
}

impl App {
    /// Whether the run may end when this application is done (incast, finite flows,
    /// memcached); sources that run for the whole duration never end it.
    pub fn ends_by_itself(&self) -> bool {
        matches!(
            self,
            App::IncastClient(_)
                | App::FlowGen(_)
                | App::Memcached(_)
                | App::LongLived(long_lived::LongLived { size: Some(_), .. })
        )
    }

    pub fn start(&mut self, id: u32, ctx: &mut Ctx<impl AppSched>) {
        match self {
            App::IncastClient(a) => a.start(id, ctx),
            App::FlowGen(a) => a.start(id, ctx),
            App::LongLived(a) => a.start(id, ctx),
            App::UdpSource(a) => a.start(id, ctx),
            App::Memcached(a) => a.start(id, ctx),
            App::IncastServer(_) | App::Sink => {}
        }
    }

    pub fn on_timer(&mut self, id: u32, tag: u32, ctx: &mut Ctx<impl AppSched>) {
        match self {
            App::FlowGen(a) => a.on_timer(id, ctx),
            App::UdpSource(a) => a.on_timer(id, tag, ctx),
            App::Memcached(a) => a.on_timer(tag, ctx),
            _ => {}
        }
    }

    pub fn on_note(&mut self, note: Note, ctx: &mut Ctx<impl AppSched>) {
        match (self, note) {
            (App::IncastClient(a), Note::Delivered { conn, total, .. }) => {
                a.on_delivered(conn, total, ctx)
            }
            (App::IncastServer(a), Note::Delivered { total, .. }) => a.on_request_bytes(total, ctx),
            (App::FlowGen(a), Note::Delivered { conn, total, .. }) => {
                a.on_delivered(conn, total, ctx)
            }
            (App::LongLived(a), Note::Delivered { conn, total, .. }) => {
                a.on_delivered(conn, total, ctx)
            }
            (App::Memcached(a), Note::Delivered { conn, total, .. }) => {
                a.on_delivered(conn, total, ctx)
            }
            (App::Memcached(a), Note::Datagram { stream, tag, .. }) => {
                a.on_datagram(stream, tag as u32, ctx)
            }
            _ => {}
        }
    }
}
