//! Prefetching the next events' state while the current one runs (the event loop's
//! cache misses are most of a large topology's per-hop cost).

use super::*;

/// Port-side state (ports, their queues and wires) above which the event loop prefetches
/// two events ahead: about half of a 4 MiB second-level cache. Measured (RESULTS.md): a
/// k=8 fat tree (0.2 MiB) ran 10% slower with it, k=16 (3 MiB) 6% faster, k=32 24%.
pub(super) const FAR_PREFETCH_FROM_BYTES: usize = 2 << 20;

impl Sim {
    /// Prefetches for the next event (and, on a large topology, the one after), while
    /// the current one runs.
    #[inline]
    pub(super) fn prefetch_ahead(&self) {
        if self.deep_prefetch {
            if let Some(after) = self.ev.peek_second() {
                self.prefetch_far(after);
            }
            if let Some(next) = self.ev.peek() {
                self.prefetch_near(next);
            }
        } else if let Some(next) = self.ev.peek() {
            self.prefetch(next);
        }
    }

    /// Starts loading the first things the event after the next will touch (what its own
    /// fields index), so that `prefetch` can follow them one event later without waiting.
    #[inline]
    pub(super) fn prefetch_far(&self, e: SimEvent) {
        match e {
            SimEvent::Net(NetEvent::LinkArrive { port }) => self.net.prefetch_arrival(port),
            SimEvent::Net(NetEvent::PortWake { port }) => self.net.prefetch_port(port),
            _ => {}
        }
    }

    /// With `deep_prefetch`: the next event's own prefetch, one step further down the chain
    /// of look-ups than `prefetch` (its first steps were taken by `prefetch_far`).
    #[inline]
    pub(super) fn prefetch_near(&self, next: SimEvent) {
        match next {
            SimEvent::Net(NetEvent::LinkArrive { port }) => self.net.prefetch_route(port),
            SimEvent::Net(NetEvent::PortWake { port }) => {
                self.net.prefetch_queue_head(port);
                self.net.prefetch_wake(port);
            }
            _ => self.prefetch(next),
        }
    }

    /// Starts loading what the next event will touch, so that its cache misses overlap
    /// this event's work (large arrays of connections miss on every access).
    #[inline]
    pub(super) fn prefetch(&self, next: SimEvent) {
        match next {
            SimEvent::Net(e) => self.net.prefetch_event(e),
            e => prefetch_upper(&self.net, &self.transports, &self.apps, e),
        }
    }

    /// The partition whose state event `e` changes, where one does (None: an application
    /// that spans hosts, the metrics sampler, which only reads, or a node failing or
    /// rejoining, which services that span servers hear of: `parallel::global_kind`).
    pub(super) fn partition_of(&self, e: SimEvent) -> Option<crate::engine::PartitionId> {
        let host = match e.layer() {
            Layer::Net(NetEvent::NodeDown { .. } | NetEvent::NodeUp { .. }) => return None,
            Layer::Net(e) => return Some(self.net.partition_of(e)),
            Layer::Host(HostEvent::Irq { host, .. } | HostEvent::ForwardDone { host, .. }) => host,
            Layer::Host(HostEvent::RxDone { pkt }) => self.net.pool().get(pkt).dst_host,
            Layer::Host(HostEvent::TxDone { pkt }) => self.net.pool().get(pkt).src_host,
            Layer::Transport(e) => self.transports.timer_host(e)?,
            Layer::Host(HostEvent::AppNote { slot }) => self.apps.held_host(slot)?,
            Layer::App(e) if e.at_host() => {
                let (app, tag) = e.app_tag();
                self.apps.timer_host(app, tag)
            }
            Layer::App(_) | Layer::Metrics(_) | Layer::Svc(_) => return None,
        };
        Some(self.net.host_partition(host))
    }
}

/// Starts loading what the next event of a layer above the network will touch: the
/// connection a packet handed up or a timer acts on, the NIC a sent packet leaves, the
/// delivery an application thread gets to (on the simulation's thread and in helpers'
/// lanes alike: a sender's state missed on every TCP timer without it).
#[inline]
pub(super) fn prefetch_upper(net: &Network, transports: &Transports, apps: &Apps, next: SimEvent) {
    match next {
        SimEvent::Host(HostEvent::RxDone { pkt }) => {
            transports.prefetch_packet(net.pool().get(pkt));
        }
        SimEvent::Host(HostEvent::TxDone { pkt }) => net.prefetch_nic(net.pool().get(pkt).src_host),
        SimEvent::Host(HostEvent::AppNote { slot }) => apps.prefetch_held(slot),
        SimEvent::Net(_)
        | SimEvent::Host(_)
        | SimEvent::App(_)
        | SimEvent::Metrics(_)
        | SimEvent::Svc(_) => {}
        // The other variants are the transports' (`SimEvent::layer`).
        e => {
            if let Layer::Transport(e) = e.layer() {
                transports.prefetch_timer(e);
            }
        }
    }
}
