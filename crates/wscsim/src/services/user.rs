//! Services written by users (in Rust): the same calls as the built-in ones, through a
//! trait object. A user's service sees the network and hosts like a built-in one; its
//! scheduler is a `Dyn` (a dynamic scheduler of every layer a service may use), so the
//! trait stays object-safe while the lower layers keep their generic, statically
//! dispatched code. Each call costs one dynamic dispatch, which built-in services avoid.

use super::{OnPath, SvcCtx, SvcEvent, SvcSched};
use crate::engine::{Clock, Scheduler, TimePs};
use crate::host::HostEvent;
use crate::net::NetEvent;
use crate::packet::PktId;

/// Object-safe scheduling of the events a service may cause.
pub trait DynSched {
    fn now_ps(&self) -> TimePs;
    fn net(&mut self, at_ps: TimePs, e: NetEvent);
    fn host(&mut self, at_ps: TimePs, e: HostEvent);
    fn svc(&mut self, at_ps: TimePs, e: SvcEvent);
}

impl<T: SvcSched> DynSched for T {
    fn now_ps(&self) -> TimePs {
        Clock::now(self)
    }
    fn net(&mut self, at_ps: TimePs, e: NetEvent) {
        self.schedule(at_ps, e)
    }
    fn host(&mut self, at_ps: TimePs, e: HostEvent) {
        self.schedule(at_ps, e)
    }
    fn svc(&mut self, at_ps: TimePs, e: SvcEvent) {
        self.schedule(at_ps, e)
    }
}

/// A `DynSched` as the scheduler of every layer a service uses.
pub struct Dyn<'a>(pub &'a mut dyn DynSched);

impl Clock for Dyn<'_> {
    fn now(&self) -> TimePs {
        self.0.now_ps()
    }
}
impl Scheduler<NetEvent> for Dyn<'_> {
    fn schedule(&mut self, at_ps: TimePs, e: NetEvent) {
        self.0.net(at_ps, e)
    }
}
impl Scheduler<HostEvent> for Dyn<'_> {
    fn schedule(&mut self, at_ps: TimePs, e: HostEvent) {
        self.0.host(at_ps, e)
    }
}
impl Scheduler<SvcEvent> for Dyn<'_> {
    fn schedule(&mut self, at_ps: TimePs, e: SvcEvent) {
        self.0.svc(at_ps, e)
    }
}

/// A user's service. Its packets carry `Proto::SERVICE` and its id in `dst_port`; it sends
/// them with `ctx.hosts.send(ctx.net, ctx.ev, host, pkt)` and sets timers with
/// `ctx.ev.schedule(at, SvcEvent::Timer { service: its id, tag })`.
pub trait ServiceCode: Send {
    /// At the start of the run.
    fn start(&mut self, _ctx: &mut SvcCtx<Dyn>) {}
    /// `pkt` crosses server `host` on its way: forward it (the default), or change it and
    /// forward it, or take it (free it with `Network::drop_packet` or keep it).
    fn on_path(&mut self, _ctx: &mut SvcCtx<Dyn>, _host: u32, _pkt: PktId) -> OnPath {
        OnPath::Forward
    }
    /// `pkt` reached its destination `host`. The service owns it: free it with
    /// `Network::delivered`, or count it delivered (`Network::count_delivered`) and send
    /// it on again (an intermediate stop).
    fn deliver(&mut self, ctx: &mut SvcCtx<Dyn>, host: u32, pkt: PktId);
    /// A timer of this service with `tag` went off.
    fn on_timer(&mut self, _ctx: &mut SvcCtx<Dyn>, _tag: u32) {}
    /// What the service found, for the run's summary (`services`, by id), if anything.
    fn results(&self) -> Option<serde_json::Value> {
        None
    }
}

/// `[workload]` parameters of kind "services": none. The run's traffic is what the
/// runtime's services (`runtime.services`, or services added with `Sim::add_service`) make.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

/// Workload kind "services": no traffic of its own; the runtime's services make it.
pub struct RuntimeServices;

impl super::kind::ServiceWorkload for RuntimeServices {
    const NAME: &'static str = "services";
    type Params = Params;
    type Spec = ();

    /// On a torus only.
    fn resolve(
        _: &mut Params,
        ctx: &super::kind::WorkloadCtx,
    ) -> Result<(), crate::check::ConfigError> {
        if ctx.graph.torus.is_none() {
            return Err(crate::check::err(
                "workload.kind",
                "\"services\"",
                "another kind (the runtime's services run on a topology.kind = \"torus3d\")",
            ));
        }
        Ok(())
    }

    /// Those of `runtime.services` (installed by the run, not by the workload).
    fn services(
        _: &(),
        _: &crate::net::Network,
    ) -> Result<super::Services, crate::check::ConfigError> {
        Ok(super::Services::default())
    }
}

/// Runs `f` with a context whose scheduler is dynamic.
pub(super) fn with_dyn<S: SvcSched, R>(
    ctx: &mut SvcCtx<S>,
    f: impl FnOnce(&mut SvcCtx<Dyn>) -> R,
) -> R {
    let mut d = SvcCtx {
        net: &mut *ctx.net,
        hosts: &mut *ctx.hosts,
        ev: &mut Dyn(&mut *ctx.ev),
    };
    f(&mut d)
}
