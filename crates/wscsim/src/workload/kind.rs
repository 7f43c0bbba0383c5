//! What a workload kind is (`WorkloadKind`: its parameters, their checks, the applications
//! it starts) and what an application does (`Application`: its calls from timers and
//! transport notes, its results). `builtin_workloads!` in `workload/mod.rs` lists the
//! kinds; `App` (the run's applications), `WorkloadSpec` (the workload resolved) and the
//! scenario's table of workload kinds are generated from that list, so a kind is its file
//! and one line.

use super::{AppSched, Ctx};
use crate::check::ConfigError;
use crate::metrics::report::Report;
use crate::metrics::Metrics;
use crate::net::Network;
use crate::services::kind::ServiceWorkload;
pub use crate::services::kind::WorkloadCtx;
use crate::services::Services;
use crate::transport::{Note, Tcp, Udp};

/// An application on the hosts. Every call has a default that does nothing, so an
/// application writes the ones it needs; results come from its `Report`.
pub trait Application: Report {
    /// Whether the run may end when this application is done (incast, finite flows,
    /// memcached); sources that run for the whole duration never end it.
    fn ends_by_itself(&self) -> bool {
        false
    }
    /// At the start of the run; `id` is its application id (its place in the run's list).
    fn start<S: AppSched>(&mut self, _id: u32, _ctx: &mut Ctx<S>) {}
    /// Its timer with `tag` went off.
    fn on_timer<S: AppSched>(&mut self, _id: u32, _tag: u32, _ctx: &mut Ctx<S>) {}
    /// A transport's note for it (bytes delivered, a stream closed, a datagram, a DMA done).
    fn on_note<S: AppSched>(&mut self, _note: Note, _ctx: &mut Ctx<S>) {}
    /// The run ended: close the records.
    fn finish(&mut self, _udp: &Udp, _metrics: &mut Metrics) {}
    /// The host its host timer (`AppEvent::host_timer`) with `tag` acts at.
    fn timer_host(&self, _tag: u32) -> u32 {
        unreachable!("an application that sets no host timers")
    }
    /// Starts loading the state connection `conn`'s next delivery at `host` will touch.
    fn prefetch_conn(&self, _host: u32, _conn: u32) {}
    /// Whether its parts hand each other mail where a partitioned run's windows close
    /// (`after_window`). (No, by default.)
    fn meets_at_windows(&self) -> bool {
        false
    }
    /// Where a partitioned run's windows close, no partition running: what its parts sent
    /// each other is handed over. True once, when it has finished: running in parts, it
    /// cannot count itself done in its events.
    fn after_window(&mut self) -> bool {
        false
    }
}

impl<T: Application> Application for Box<T> {
    #[inline]
    fn ends_by_itself(&self) -> bool {
        (**self).ends_by_itself()
    }
    #[inline]
    fn start<S: AppSched>(&mut self, id: u32, ctx: &mut Ctx<S>) {
        (**self).start(id, ctx)
    }
    #[inline]
    fn on_timer<S: AppSched>(&mut self, id: u32, tag: u32, ctx: &mut Ctx<S>) {
        (**self).on_timer(id, tag, ctx)
    }
    #[inline]
    fn on_note<S: AppSched>(&mut self, note: Note, ctx: &mut Ctx<S>) {
        (**self).on_note(note, ctx)
    }
    fn finish(&mut self, udp: &Udp, metrics: &mut Metrics) {
        (**self).finish(udp, metrics)
    }
    fn timer_host(&self, tag: u32) -> u32 {
        (**self).timer_host(tag)
    }
    #[inline]
    fn prefetch_conn(&self, host: u32, conn: u32) {
        (**self).prefetch_conn(host, conn)
    }
    fn meets_at_windows(&self) -> bool {
        (**self).meets_at_windows()
    }
    fn after_window(&mut self) -> bool {
        (**self).after_window()
    }
}

/// The application of a workload that starts none (one a CamCubeOS service drives).
impl Application for std::convert::Infallible {}

/// What a kind's applications are built with.
pub struct AppsBuild<'a> {
    /// Where they open the connections they use.
    pub tcp: &'a mut Tcp,
    pub seed: u64,
    pub n_hosts: u32,
}

/// A workload kind: `[workload] kind = NAME`.
pub trait WorkloadKind {
    /// `workload.kind`.
    const NAME: &'static str;
    /// Whether it may run over `transport.kind = "udp"`.
    const OVER_UDP: bool = false;
    /// Whether it may run over a transport that carries messages (`transport.kind =
    /// "roce"` or `"ndp"`).
    const OVER_MESSAGES: bool = false;
    /// Whether its clients may be a torus's load generators (`topology.load_generators`).
    const USES_LOAD_GENERATORS: bool = false;
    /// The `[workload]` keys but `kind`, each an `Option` whose doc comment states its default.
    type Params: serde::de::DeserializeOwned + serde::Serialize;
    /// The parameters resolved.
    type Spec: Clone + std::fmt::Debug;
    /// Its applications (`std::convert::Infallible` if it starts none).
    type App: Application;
    /// Checks each parameter (naming `workload.<key>`) and fills in the defaults.
    fn resolve(p: &mut Self::Params, ctx: &WorkloadCtx) -> Result<Self::Spec, ConfigError>;
    /// The applications a run of `spec` starts, the connections they use opened on
    /// `b.tcp`: the list's i-th is the run's application i.
    fn applications(_spec: Self::Spec, _b: &mut AppsBuild) -> Vec<Self::App> {
        Vec::new()
    }
    /// Whether the applications of `spec` keep their state by host: their events act only
    /// on state of the host they occur at (and what another host is to hear travels by
    /// packets, or by mail between parts, `Application::after_window`), so that a
    /// partitioned run may run the hosts' partitions on any thread. (No, by default.)
    fn runs_in_partitions(_spec: &Self::Spec) -> bool {
        false
    }
    /// The CamCubeOS services a run of `spec` installs on `net` (none by default).
    fn services(_spec: &Self::Spec, _net: &Network) -> Result<Services, ConfigError> {
        Ok(Services::default())
    }
}

/// The workload kind of a CamCubeOS service that drives its own traffic (its file in
/// `services/`).
pub struct Driven<T>(std::marker::PhantomData<T>);

impl<T: ServiceWorkload> WorkloadKind for Driven<T> {
    const NAME: &'static str = T::NAME;
    const USES_LOAD_GENERATORS: bool = T::USES_LOAD_GENERATORS;
    type Params = T::Params;
    type Spec = T::Spec;
    type App = std::convert::Infallible;

    fn resolve(p: &mut T::Params, ctx: &WorkloadCtx) -> Result<T::Spec, ConfigError> {
        T::resolve(p, ctx)
    }

    fn services(spec: &T::Spec, net: &Network) -> Result<Services, ConfigError> {
        T::services(spec, net)
    }
}

/// `a` as what it reports.
#[inline]
pub fn report_of<T: Report>(a: &T) -> &dyn Report {
    a
}

/// Declares `App`, `WorkloadSpec` and their dispatch from the kinds' list
/// (`builtin_workloads!`).
macro_rules! declare_workloads {
    ($($(#[$attr:meta])* $variant:ident($ty:ty)),* $(,)?) => {
        /// An application of the run, of its workload's kind.
        pub enum App {
            $($(#[$attr])* $variant(<$ty as $crate::workload::WorkloadKind>::App),)*
        }

        /// The workload as the simulator runs it: its kind's parameters, resolved.
        #[derive(Clone, Debug)]
        pub enum WorkloadSpec {
            $($(#[$attr])* $variant(<$ty as $crate::workload::WorkloadKind>::Spec),)*
        }

        impl App {
            /// What it reports when the run ends.
            pub fn report(&self) -> &dyn $crate::metrics::report::Report {
                match self { $($(#[$attr])* App::$variant(a) => $crate::workload::kind::report_of(a),)* }
            }
            /// `Application::ends_by_itself`.
            pub fn ends_by_itself(&self) -> bool {
                match self { $($(#[$attr])* App::$variant(a) => $crate::workload::Application::ends_by_itself(a),)* }
            }
            #[inline]
            pub fn start(&mut self, id: u32, ctx: &mut Ctx<impl AppSched>) {
                match self { $($(#[$attr])* App::$variant(a) => $crate::workload::Application::start(a, id, ctx),)* }
            }
            #[inline]
            pub fn on_timer(&mut self, id: u32, tag: u32, ctx: &mut Ctx<impl AppSched>) {
                match self { $($(#[$attr])* App::$variant(a) => $crate::workload::Application::on_timer(a, id, tag, ctx),)* }
            }
            #[inline]
            pub fn on_note(&mut self, note: Note, ctx: &mut Ctx<impl AppSched>) {
                match self { $($(#[$attr])* App::$variant(a) => $crate::workload::Application::on_note(a, note, ctx),)* }
            }
            pub fn finish(&mut self, udp: &Udp, metrics: &mut Metrics) {
                match self { $($(#[$attr])* App::$variant(a) => $crate::workload::Application::finish(a, udp, metrics),)* }
            }
            pub fn timer_host(&self, tag: u32) -> u32 {
                match self { $($(#[$attr])* App::$variant(a) => $crate::workload::Application::timer_host(a, tag),)* }
            }
            #[inline]
            pub fn prefetch_conn(&self, host: u32, conn: u32) {
                match self { $($(#[$attr])* App::$variant(a) => $crate::workload::Application::prefetch_conn(a, host, conn),)* }
            }
            /// `Application::meets_at_windows`.
            pub fn meets_at_windows(&self) -> bool {
                match self { $($(#[$attr])* App::$variant(a) => $crate::workload::Application::meets_at_windows(a),)* }
            }
            /// `Application::after_window`.
            pub fn after_window(&mut self) -> bool {
                match self { $($(#[$attr])* App::$variant(a) => $crate::workload::Application::after_window(a),)* }
            }
        }

        impl WorkloadSpec {
            /// The applications a run of it starts (`WorkloadKind::applications`).
            pub fn applications(self, b: &mut $crate::workload::AppsBuild) -> Vec<App> {
                use $crate::workload::WorkloadKind as K;
                match self {
                    $($(#[$attr])* WorkloadSpec::$variant(s) =>
                        <$ty as K>::applications(s, b).into_iter().map(App::$variant).collect(),)*
                }
            }
            /// `WorkloadKind::runs_in_partitions`.
            pub fn runs_in_partitions(&self) -> bool {
                use $crate::workload::WorkloadKind as K;
                match self { $($(#[$attr])* WorkloadSpec::$variant(s) => <$ty as K>::runs_in_partitions(s),)* }
            }
            /// The CamCubeOS services it installs (`WorkloadKind::services`).
            pub fn services(&self, net: &Network) -> Result<$crate::services::Services, $crate::check::ConfigError> {
                use $crate::workload::WorkloadKind as K;
                match self { $($(#[$attr])* WorkloadSpec::$variant(s) => <$ty as K>::services(s, net),)* }
            }
        }
    };
}
pub(crate) use declare_workloads;
