//! Workloads: applications on hosts and the drivers that start flows.
//!
//! Every application is a variant of `App` living on one host (a flow generator is the
//! exception: it stands for the cluster's job scheduler and opens connections at sources).
//! Applications act through `Ctx` and hear from transports through `Note`s.

pub mod cdf;
pub mod dma_bench;
pub mod etc;
pub mod flows;
pub mod incast;
pub mod job;
pub mod long_lived;
pub mod mapreduce;
pub mod memcached;
pub mod ramcloud;
pub mod udp_source;

mod apps;

pub use apps::{Apps, Stack};

use crate::engine::{Scheduler, TimePs};
use crate::host::Hosts;
use crate::metrics::Metrics;
use crate::net::Network;
use crate::transport::{Dma, Note, Tcp, Udp};
use serde::{Deserialize, Serialize};

/// The workload layer's events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppEvent {
    /// A timer of application `app`, with a tag of the application's choosing. In a
    /// partitioned run it runs alone at a barrier (the application may act across hosts),
    /// unless it is a host timer (`host_timer`).
    Timer { app: u32, tag: u32 },
}

/// Marks a host timer in `AppEvent::Timer`'s `app` (a flag bit, not a variant of its
/// own: a second variant would grow every event from 12 bytes to 16).
const AT_HOST: u32 = 1 << 31;

impl AppEvent {
    /// A timer that acts at one host only, the one the application names for its tag
    /// (`Apps::timer_host`): in a partitioned run it runs in that host's partition.
    pub fn host_timer(app: u32, tag: u32) -> Self {
        debug_assert!(app < AT_HOST);
        AppEvent::Timer {
            app: app | AT_HOST,
            tag,
        }
    }

    /// Whether this is a host timer.
    #[inline]
    pub fn at_host(self) -> bool {
        let AppEvent::Timer { app, .. } = self;
        app & AT_HOST != 0
    }

    /// The application and the tag.
    #[inline]
    pub fn app_tag(self) -> (u32, u32) {
        let AppEvent::Timer { app, tag } = self;
        (app & !AT_HOST, tag)
    }
}

/// What applications schedule through: their own timers and everything below.
pub trait AppSched: crate::transport::dma::DmaSched + Scheduler<AppEvent> {}
impl<T: crate::transport::dma::DmaSched + Scheduler<AppEvent>> AppSched for T {}

/// What an application may touch.
pub struct Ctx<'a, S> {
    pub ev: &'a mut S,
    pub net: &'a mut Network,
    pub hosts: &'a mut Hosts,
    pub tcp: &'a mut Tcp,
    pub udp: &'a mut Udp,
    pub dma: &'a mut Dma,
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
    Job(Box<job::Job>),
    MapReduce(Box<mapreduce::MapReduce>),
    DmaBench(dma_bench::DmaBench),
    Ramcloud(Box<ramcloud::Ramcloud>),
    /// An endpoint that only receives (its transport counts what arrives).
    Sink,
}

impl App {
    /// What it reports when the run ends (`Report`, implemented in each application's file).
    pub fn report(&self) -> &dyn crate::metrics::report::Report {
        match self {
            App::IncastClient(a) => a,
            App::IncastServer(a) => a,
            App::FlowGen(a) => a,
            App::LongLived(a) => a,
            App::UdpSource(a) => a,
            App::Memcached(a) => &**a,
            App::Job(a) => &**a,
            App::MapReduce(a) => &**a,
            App::DmaBench(a) => a,
            App::Ramcloud(a) => &**a,
            App::Sink => &crate::metrics::report::Silent,
        }
    }

    /// Whether the run may end when this application is done (incast, finite flows,
    /// memcached); sources that run for the whole duration never end it.
    pub fn ends_by_itself(&self) -> bool {
        matches!(
            self,
            App::IncastClient(_)
                | App::FlowGen(_)
                | App::Memcached(_)
                | App::Job(_)
                | App::MapReduce(_)
                | App::DmaBench(_)
                | App::Ramcloud(_)
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
            App::Job(a) => a.start(id, ctx),
            App::MapReduce(a) => a.start(id, ctx),
            App::DmaBench(a) => a.start(id, ctx),
            App::Ramcloud(a) => a.start(id, ctx),
            App::IncastServer(_) | App::Sink => {}
        }
    }

    pub fn on_timer(&mut self, id: u32, tag: u32, ctx: &mut Ctx<impl AppSched>) {
        match self {
            App::FlowGen(a) => a.on_timer(id, ctx),
            App::UdpSource(a) => a.on_timer(id, tag, ctx),
            App::Memcached(a) => a.on_timer(tag, ctx),
            App::Job(a) => a.on_timer(id, tag, ctx),
            App::MapReduce(a) => a.on_timer(id, tag, ctx),
            _ => {}
        }
    }

    pub fn on_note(&mut self, note: Note, ctx: &mut Ctx<impl AppSched>) {
        match (self, note) {
            (App::Job(a), Note::Delivered { app, conn, total }) => {
                a.on_delivered(app, conn, total, ctx)
            }
            (App::DmaBench(a), Note::Dma { app, .. }) => a.on_done(app, ctx),
            (App::Ramcloud(a), Note::Datagram { tag, .. }) => a.on_datagram(tag, ctx),
            (App::Ramcloud(a), Note::Delivered { conn, total, .. }) => {
                a.on_delivered(conn, total, ctx)
            }
            (App::Job(a), Note::Dma { app, xfer, tag }) => a.on_dma(app, xfer, tag, ctx),
            (App::MapReduce(a), Note::Dma { app, xfer, tag }) => a.on_dma(app, xfer, tag, ctx),
            (App::MapReduce(a), Note::Delivered { app, conn, total }) => {
                a.on_delivered(app, conn, total, ctx)
            }
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
            (App::Memcached(a), Note::Closed { conn, .. }) => a.on_closed(conn, ctx),
            (App::Memcached(a), Note::Datagram { stream, tag, .. }) => {
                a.on_datagram(stream, tag as u32, ctx)
            }
            _ => {}
        }
    }
}

/// A flow size: a size in bytes or "infinite" (long-lived).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowSize {
    Finite(u64),
    Infinite,
}

impl Serialize for FlowSize {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            FlowSize::Finite(b) => crate::units::Bytes(*b).serialize(s),
            FlowSize::Infinite => s.serialize_str("infinite"),
        }
    }
}

impl<'de> Deserialize<'de> for FlowSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        if v.as_str() == Some("infinite") {
            return Ok(FlowSize::Infinite);
        }
        let b: Result<crate::units::Bytes, _> = serde_json::from_value(v.clone());
        match b {
            Ok(b) => Ok(FlowSize::Finite(b.0)),
            Err(_) => Err(serde::de::Error::custom(format!(
                "given {v}; allowed: \"infinite\" or {}",
                crate::units::BYTES_ALLOWED
            ))),
        }
    }
}

/// `workload.destination`: a host index, or (UDP only) "random": every datagram goes to a
/// host drawn uniformly among all but its source, as in Flexplane's throughput stress test;
/// or "round_robin": each source sends to every other host in turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Destination {
    Host(i64),
    Random,
    RoundRobin,
    /// A uniformly random key per datagram (a torus of CamCubeOS servers: delivered at the
    /// key's root).
    RandomKey,
    /// As `Random`, among the servers the sender's own view of a torus can reach (a
    /// sender that knows a server has failed does not send to it).
    RandomReachable,
    /// Each torus server's neighbours in turn, over its first `workload.links` links
    /// (+x, -x, +y, -y, +z, -z): one hop, every link used saturated at a high enough rate.
    Neighbours,
}

impl Serialize for Destination {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Destination::Host(h) => s.serialize_i64(*h),
            Destination::Random => s.serialize_str("random"),
            Destination::RoundRobin => s.serialize_str("round_robin"),
            Destination::RandomKey => s.serialize_str("random_key"),
            Destination::RandomReachable => s.serialize_str("random_reachable"),
            Destination::Neighbours => s.serialize_str("neighbours"),
        }
    }
}

impl<'de> Deserialize<'de> for Destination {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        match (&v, v.as_i64()) {
            (_, Some(h)) => Ok(Destination::Host(h)),
            (serde_json::Value::String(s), _) if s == "random" => Ok(Destination::Random),
            (serde_json::Value::String(s), _) if s == "round_robin" => Ok(Destination::RoundRobin),
            (serde_json::Value::String(s), _) if s == "random_key" => Ok(Destination::RandomKey),
            (serde_json::Value::String(s), _) if s == "neighbours" => Ok(Destination::Neighbours),
            (serde_json::Value::String(s), _) if s == "random_reachable" => {
                Ok(Destination::RandomReachable)
            }
            _ => Err(serde::de::Error::custom(format!(
                "given {v}; allowed: a host index, \"random\", \"round_robin\", \"random_key\", \"random_reachable\" or \"neighbours\""
            ))),
        }
    }
}

/// The workload as the simulator runs it.
#[derive(Clone, Debug)]
pub enum WorkloadSpec {
    Incast {
        client: u32,
        servers: Vec<u32>,
        block_bytes: u64,
        iterations: u32,
        request_bytes: u64,
    },
    Flows {
        sizes: flows::FlowSizes,
        rate_per_s: f64,
        senders: Vec<u32>,
        receivers: Vec<u32>,
        max_flows: u64,
    },
    LongLived {
        pairs: Vec<(u32, u32)>,
        size: Option<u64>,
        dscp: Vec<u8>,
    },
    /// Datagrams from each source to one host, a random other host, or each in turn.
    Udp {
        sources: Vec<u32>,
        destination: udp_source::Target,
        rate_bps: u64,
        payload_bytes: u32,
        poisson: bool,
    },
    Memcached(crate::workload::memcached::MemcachedSpec),
    /// A data-parallel job in phases (storage, compute, shuffle).
    Job(job::JobSpec),
    /// A Hadoop-style sort: maps, a shuffle, reduces.
    MapReduce(mapreduce::MapReduceSpec),
    /// DMA microbenchmarks on a PCIe fabric.
    DmaBench(dma_bench::DmaBenchSpec),
    /// RAMCloud's ClusterPerf client and master.
    Ramcloud(ramcloud::RamcloudSpec),
    /// Pings, driven by the ping service (no application of the workload layer).
    Ping(crate::services::ping::PingSpec),
    /// Transfers over the reliable transport service.
    Reliable(crate::services::reliable::ReliableSpec),
    /// A file sent to every server over six disjoint trees.
    Multicast(crate::services::multicast::MulticastSpec),
    /// Clients of the key-value store.
    Kv(crate::services::kv_clients::KvSpec),
    /// Every server's data combined up six trees to one.
    Aggregate(crate::services::aggregate::AggregateSpec),
    /// No traffic of its own: the runtime's services make it.
    Services,
    /// No traffic at all: real programs make it (`wscsim emulate`).
    Idle,
}

/// `[workload]` parameters of kind "none": there are none.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

/// Connections an application opened, in its own order, and each one's place in it (ids
/// need not be consecutive: a split run's TCP numbers connections by part).
#[derive(Clone, Debug, Default)]
pub struct ConnList {
    ids: Vec<u32>,
    index_of: rustc_hash::FxHashMap<u32, u32>,
}

impl ConnList {
    pub fn push(&mut self, conn: u32) {
        self.index_of.insert(conn, self.ids.len() as u32);
        self.ids.push(conn);
    }
    pub fn len(&self) -> usize {
        self.ids.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
    /// The `i`th connection.
    pub fn get(&self, i: usize) -> u32 {
        self.ids[i]
    }
    /// Where `conn` is in the list, if it is one of these.
    pub fn index(&self, conn: u32) -> Option<usize> {
        self.index_of.get(&conn).map(|&k| k as usize)
    }
}

impl FromIterator<u32> for ConnList {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
        let mut l = ConnList::default();
        for c in iter {
            l.push(c);
        }
        l
    }
}
