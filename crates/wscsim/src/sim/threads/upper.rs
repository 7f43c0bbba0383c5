//! A helper thread's view of the layers above the network (hosts, transports,
//! applications, metrics), for running hosts' partitions: given only when every one of
//! them keeps its state by partition or is unused (`Sim::hosts_run_anywhere`), so that a
//! partition's events touch only their own part of it.
//!
//! The view handles what a hosts' partition's lane holds, as `Sim::handle` does on the
//! simulation's own thread: packets reaching hosts go up through the host's receive path
//! to its transport and the notes to applications; transports' timers and applications'
//! host timers act at their host. Events that act across partitions are global and never
//! reach a lane.

use crate::engine::partitioned::lanes::LaneSched;
use crate::host::nic::Ready;
use crate::host::{HostEvent, Hosts};
use crate::metrics::Metrics;
use crate::net::{Network, Upcall};
use crate::sim::{Layer, SimEvent};
use crate::transport::{HostPath, Transports};
use crate::workload::{Apps, AppsView, Stack};
use std::mem::ManuallyDrop;

/// The layers above the network, borrowed to make views of.
pub(in crate::sim) struct Layers<'a> {
    pub hosts: &'a Hosts,
    pub transports: &'a Transports,
    pub apps: &'a Apps,
    pub metrics: &'a Metrics,
}

/// A bitwise copy of a layer whose state is kept by partition: it shares everything with
/// the original and is never dropped. Its inline fields are its thread's own and are
/// lost when the copy goes (a new crew copies the layers again), so a layer keeps none
/// that outlives an event or names a part (`Tcp` keeps where its calls left notes, and
/// forgets it when they are taken).
struct Shared<T>(ManuallyDrop<T>);

impl<T> Shared<T> {
    /// # Safety
    ///
    /// As `UpperView::new`.
    unsafe fn of(t: &T) -> Shared<T> {
        Shared(ManuallyDrop::new(std::ptr::read(t)))
    }
}

pub(in crate::sim) struct UpperView {
    hosts: Shared<Hosts>,
    transports: Shared<Transports>,
    apps: AppsView,
    metrics: Shared<Metrics>,
}

// SAFETY: see `UpperView::new`: the view and the layers touch disjoint state until they
// meet, which is what sending it to another thread needs.
unsafe impl Send for UpperView {}

type Sched<'a> = LaneSched<'a, SimEvent>;

impl UpperView {
    /// # Safety
    ///
    /// Every layer keeps its state by partition, or is unused (`Sim::hosts_run_anywhere`),
    /// and the layers outlive the view, are not moved, and touch no partition the view's
    /// thread runs until the threads meet (as `Network::view` and `Apps::view`).
    pub unsafe fn new(l: &Layers<'_>) -> UpperView {
        UpperView {
            hosts: Shared::of(l.hosts),
            transports: Shared::of(l.transports),
            apps: l.apps.view(),
            metrics: Shared::of(l.metrics),
        }
    }

    /// Where the threads meet: the view changed nothing it shares but its partitions'.
    pub fn check(&self) {
        self.apps.check();
    }

    /// Starts loading what `next`, a hosts' lane's next event above the network, will
    /// touch (`sim::prefetch::prefetch_upper`).
    // Out of line: a fabric lane's loop (`run_lane`) stays as small as it was.
    #[inline(never)]
    pub fn prefetch(&self, net: &Network, next: SimEvent) {
        crate::sim::prefetch::prefetch_upper(net, &self.transports.0, self.apps.apps_ref(), next);
    }

    /// What the network handed up at a host.
    // Out of line: a fabric lane's loop (`run_lane`) stays as small as it was.
    #[inline(never)]
    pub fn upcall(&mut self, net: &mut Network, s: &mut Sched<'_>, up: Upcall) {
        match up {
            Upcall::Deliver { pkt, host } => {
                if let Some(pkt) = self.hosts.0.on_arrival(net, s, host, pkt) {
                    self.receive(net, s, pkt);
                }
            }
            Upcall::Forward { pkt, host } => {
                let r = self.hosts.0.forward(net, s, host, pkt);
                self.ready(net, s, r);
            }
        }
    }

    /// A packet the host's CPU is done with (as `Sim::ready`, without services: a run
    /// with services keeps hosts on the simulation's thread).
    fn ready(&mut self, net: &mut Network, s: &mut Sched<'_>, r: Option<Ready>) {
        match r {
            Some(Ready::Forward { pkt, host }) => net.host_transmit(s, host, pkt),
            Some(Ready::Receive(pkt)) => self.receive(net, s, pkt),
            None => {}
        }
    }

    /// A hosts' partition's event other than the network's.
    // Out of line: a fabric lane's loop (`run_lane`) stays as small as it was.
    #[inline(never)]
    pub fn event(&mut self, net: &mut Network, s: &mut Sched<'_>, kind: SimEvent) {
        match kind.layer() {
            Layer::Transport(e) => {
                let t = &mut *self.transports.0;
                t.on_timer(&mut HostPath::new(net, &mut self.hosts.0, s), e);
                self.dispatch(net, s);
            }
            Layer::App(e) => {
                let (apps, mut stack) = self.split(net, s);
                apps.handle(&mut stack, e);
            }
            Layer::Host(HostEvent::AppNote { slot }) => {
                let (apps, mut stack) = self.split(net, s);
                apps.on_thread_ran(&mut stack, slot);
            }
            Layer::Host(e) => {
                let r = self.hosts.0.handle_packet_event(net, s, e);
                self.ready(net, s, r);
            }
            _ => panic!("{kind:?} reached a helper's lane (it runs on the simulation's thread)"),
        }
    }

    /// The applications, and the layers below them.
    fn split<'a, 'b>(
        &'a mut self,
        net: &'a mut Network,
        s: &'a mut Sched<'b>,
    ) -> (&'a mut Apps, Stack<'a, Sched<'b>>) {
        let UpperView {
            hosts,
            transports,
            apps,
            metrics,
        } = self;
        let stack = Stack {
            ev: s,
            net,
            hosts: &mut hosts.0,
            transports: &mut transports.0,
            metrics: &mut metrics.0,
        };
        (apps.apps(), stack)
    }

    fn dispatch(&mut self, net: &mut Network, s: &mut Sched<'_>) {
        let (apps, mut stack) = self.split(net, s);
        apps.dispatch_notes(&mut stack);
    }

    /// The host's transport takes `pkt`, and applications hear what it delivered.
    fn receive(&mut self, net: &mut Network, s: &mut Sched<'_>, pkt: crate::packet::PktId) {
        let proto = net.pool().get(pkt).proto;
        assert!(
            Transports::takes(proto),
            "a {proto:?} packet reached a helper's host"
        );
        let t = &mut *self.transports.0;
        t.on_packet(&mut HostPath::new(net, &mut self.hosts.0, s), pkt);
        self.dispatch(net, s);
    }

    /// Segments left their hosts' NICs in an event of a hosts' partition
    /// (`Network::has_nic_departures`, looked at after every event, as on the simulation's
    /// thread): held-back senders may go.
    // Out of line: a fabric lane's loop (`run_lane`) stays as small as it was.
    #[inline(never)]
    pub fn nic_departures(&mut self, net: &mut Network, s: &mut Sched<'_>) {
        let t = &mut self.transports.0.tcp;
        t.on_nic_departures(&mut HostPath::new(net, &mut self.hosts.0, s));
        self.dispatch(net, s);
    }
}
