//! Workloads: applications on hosts and the drivers that start flows.
//!
//! A workload kind (`kind::WorkloadKind`) is one file: its parameters, their checks, and
//! the applications it starts, each an `Application` living on one host (a flow generator
//! is the exception: it stands for the cluster's job scheduler and opens connections at
//! sources). Applications act through `Ctx` and hear from transports through `Note`s.

pub mod cdf;
pub mod collective;
pub mod dma_bench;
pub mod etc;
pub mod flows;
pub mod idle;
pub mod incast;
pub mod job;
pub mod long_lived;
pub mod mapreduce;
pub mod matrix;
pub mod memcached;
pub mod ramcloud;
pub mod transfer;
pub mod udp_source;

mod apps;
pub mod kind;
/// docs/extending.md's example application, compiled for the tests.
#[cfg(test)]
#[path = "../../tests/toys/application.rs"]
pub mod toy;

pub use apps::{Apps, AppsView, Stack};
pub use kind::{Application, AppsBuild, Driven, WorkloadCtx, WorkloadKind};

/// The workload kinds, one line each: a variant name and the kind's type. `App`,
/// `WorkloadSpec`, their dispatch and the scenario's table of workload kinds
/// (`config::resolve::WORKLOADS`, in this order) are generated from it. A CamCubeOS
/// service that drives its own traffic is listed through `Driven`.
macro_rules! builtin_workloads {
    ($m:ident) => {
        $m! {
            Incast($crate::workload::incast::Incast),
            Flows($crate::workload::flows::FlowGen),
            Collective($crate::workload::collective::Collective),
            Permutation($crate::workload::long_lived::Permutation),
            AllToAll($crate::workload::long_lived::AllToAll),
            ManyToOne($crate::workload::long_lived::ManyToOne),
            Udp($crate::workload::udp_source::UdpSource),
            Ping($crate::workload::Driven<$crate::services::ping::Ping>),
            Reliable($crate::workload::Driven<$crate::services::reliable::Reliable>),
            Multicast($crate::workload::Driven<$crate::services::multicast::Multicast>),
            Aggregate($crate::workload::Driven<$crate::services::aggregate::Aggregate>),
            Kv($crate::workload::Driven<$crate::services::kv_clients::KvWorkload>),
            Ramcloud($crate::workload::ramcloud::Ramcloud),
            DmaBench($crate::workload::dma_bench::DmaBench),
            Job($crate::workload::job::Job),
            Idle($crate::workload::idle::Idle),
            MapReduce($crate::workload::mapreduce::MapReduce),
            Memcached($crate::workload::memcached::Memcached),
            Services($crate::workload::Driven<$crate::services::user::RuntimeServices>),
            #[cfg(test)]
            ToyEcho($crate::workload::toy::ToyEcho),
        }
    };
}
pub(crate) use builtin_workloads;
use kind::declare_workloads;
builtin_workloads!(declare_workloads);

use crate::engine::{Scheduler, TimePs};
use crate::host::Hosts;
use crate::metrics::Metrics;
use crate::net::Network;
use crate::transport::{Note, Transports, Udp};
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
pub trait AppSched: crate::transport::TransportSched + Scheduler<AppEvent> {}
impl<T: crate::transport::TransportSched + Scheduler<AppEvent>> AppSched for T {}

/// What an application may touch.
pub struct Ctx<'a, S> {
    pub ev: &'a mut S,
    pub net: &'a mut Network,
    pub hosts: &'a mut Hosts,
    /// The run's transports (`transport::builtin_transports!`).
    pub transports: &'a mut Transports,
    pub metrics: &'a mut Metrics,
    /// Number of driver applications still working; the run ends when it reaches 0.
    pub active: &'a mut u32,
    /// Simulated end of the run (apps stop starting new work after it).
    pub end_ps: TimePs,
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

/// `workload.sources` (default: every host but the destination) and `workload.destination`
/// (default 0), checked and written back as resolved.
/// (`destination` None: "random", allowed only when `allow_random`; then every host sends
/// by default.)
pub fn sources_and_destination(
    destination: &mut Option<Destination>,
    sources_cfg: &mut Option<Vec<i64>>,
    n_hosts: i64,
    allow_random: bool,
) -> Result<(Vec<u32>, Option<u32>), crate::check::ConfigError> {
    let d = *destination.get_or_insert(Destination::Host(0));
    let given = serde_json::to_string(&d).expect("a destination serialises");
    let given = given.as_str();
    let dst = match d {
        Destination::Host(h) => Some(crate::check::int_in(
            "workload.destination",
            h,
            0,
            n_hosts - 1,
        )?),
        _ if !allow_random => {
            return Err(crate::check::err(
                "workload.destination",
                given,
                format!("a host index ({given} is for workload.kind = \"udp\")"),
            ))
        }
        _ => {
            if n_hosts < 2 {
                return Err(crate::check::err(
                    "workload.destination",
                    given,
                    format!("a host index (a {given} destination needs at least 2 hosts)"),
                ));
            }
            None
        }
    };
    let sources = match crate::check::host_list("workload.sources", sources_cfg, n_hosts)? {
        Some(v) => v,
        None => (0..n_hosts as u32).filter(|&h| Some(h) != dst).collect(),
    };
    if let Some(i) = sources.iter().position(|&s| Some(s) == dst) {
        return Err(crate::check::err(
            &format!("workload.sources[{i}]"),
            sources[i],
            "hosts other than workload.destination",
        ));
    }
    *sources_cfg = Some(sources.iter().map(|&s| s as i64).collect());
    Ok((sources, dst))
}

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
