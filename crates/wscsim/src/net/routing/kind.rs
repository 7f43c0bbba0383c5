//! Forwarding functions as kinds: how a node sends on what is not for it. A kind is one
//! file (its behaviour as functions over the network, whose state it reads) and one line in
//! `builtin_forwarders!` (`routing/mod.rs`), from which `Forwarder` (the tag each node
//! carries) and the network's dispatch on it are generated. The kinds hold no state of
//! their own: what they read (ECMP tables, a torus's geometry, key-based routing's views)
//! is the network's.

use crate::engine::{Scheduler, TimePs};
use crate::net::{NetEvent, Network, NodeKind, Upcall};
use crate::packet::PktId;

/// One forwarding function. Every function is called with the node it acts on; what it
/// changes belongs to that node (the partition rule).
pub trait ForwarderKind {
    /// Its name, for messages.
    const NAME: &'static str;
    /// How many of a node's first ports hold frames for a late choice of link (the
    /// per-service queues of CamCubeOS's runtime, packing, NIC slots): a torus server's
    /// six links; 0 for a kind that chooses a link when a packet arrives.
    const LATE_CHOICE_LINKS: u32 = 0;

    /// Whether it forwards the nodes the topology builder makes of `kind` that forward
    /// (`forwards`) or not. Exactly one kind fits each combination (a unit test checks).
    fn fits(kind: NodeKind, forwards: bool) -> bool;

    /// `pkt` reached node `node` through its input port `in_port` (local): deliver it to
    /// the node's host, hand it up for the host to forward, or send it on.
    fn arrive(
        net: &mut Network,
        ev: &mut impl Scheduler<NetEvent>,
        node: u32,
        in_port: u32,
        pkt: PktId,
    ) -> Option<Upcall>;

    /// `pkt` leaves host `host` (its own, or one it forwards): the port whose queue it
    /// enters, or None when the kind has dealt with it (delivered or dropped it).
    fn host_port(
        net: &mut Network,
        ev: &mut impl Scheduler<NetEvent>,
        host: u32,
        pkt: PktId,
    ) -> Option<u32>;

    /// The local port a packet host `host` sent now would most likely leave by, for a host
    /// model that picks a per-link thread before the packet is queued.
    #[inline]
    fn out_link_hint(_net: &mut Network, _host: u32, _pkt: PktId, _now: TimePs) -> u32 {
        0
    }

    /// The port a packet from host `host` to `dst` leaves it by on the path of hash 0.
    #[inline]
    fn path_start(net: &Network, host: u32, _dst: u32) -> u32 {
        net.nic_port(host)
    }

    /// On the path of hash 0 towards host `dst`, the port a packet leaves node `node` by,
    /// or None when the path ends there.
    fn path_next(net: &Network, node: u32, dst: u32) -> Option<u32>;

    /// The timeslot engine: the output port a packet landing at `node` takes, or None when
    /// it is for the node's host.
    fn slot_route(net: &mut Network, node: u32, pkt: PktId) -> Option<u32>;

    /// The next event is `pkt`'s arrival at `node` (its input port `in_port`): starts
    /// loading what that arrival will touch after the packet (a hint).
    #[inline]
    fn prefetch_arrival(_net: &Network, _node: u32, _in_port: u32, _pkt: PktId) {}
}

/// Declares `Forwarder` (one variant per kind) and the network's dispatch on it, from
/// `builtin_forwarders!`'s list.
macro_rules! declare_forwarders {
    ($($variant:ident($ty:ty)),* $(,)?) => {
        /// How a node sends on a packet that is not for it (one of `builtin_forwarders!`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Forwarder {
            $($variant,)*
        }

        impl Forwarder {
            /// Every kind, in the list's order.
            pub const ALL: &'static [Forwarder] = &[$(Forwarder::$variant),*];

            /// The kind that forwards a node of `kind` that forwards (`forwards`) or not.
            pub fn for_node(kind: $crate::net::NodeKind, forwards: bool) -> Option<Forwarder> {
                $(if <$ty as $crate::net::routing::ForwarderKind>::fits(kind, forwards) {
                    return Some(Forwarder::$variant);
                })*
                None
            }

            pub fn name(self) -> &'static str {
                match self {
                    $(Forwarder::$variant => <$ty as $crate::net::routing::ForwarderKind>::NAME,)*
                }
            }

            /// `ForwarderKind::LATE_CHOICE_LINKS` of this kind.
            #[inline(always)]
            pub fn late_choice_links(self) -> u32 {
                match self {
                    $(Forwarder::$variant => <$ty as $crate::net::routing::ForwarderKind>::LATE_CHOICE_LINKS,)*
                }
            }
        }

        impl $crate::net::Network {
            /// `ForwarderKind::arrive` of node `node`'s kind.
            #[inline(always)]
            pub(in crate::net) fn forward_arrival(
                &mut self,
                ev: &mut impl $crate::engine::Scheduler<$crate::net::NetEvent>,
                node: u32,
                in_port: u32,
                pkt: $crate::packet::PktId,
            ) -> Option<$crate::net::Upcall> {
                match self.nodes[node as usize].forwarder {
                    $(Forwarder::$variant => <$ty as $crate::net::routing::ForwarderKind>::arrive(self, ev, node, in_port, pkt),)*
                }
            }

            /// `ForwarderKind::host_port` of host `host`'s kind.
            #[inline(always)]
            pub(in crate::net) fn forward_host_port(
                &mut self,
                ev: &mut impl $crate::engine::Scheduler<$crate::net::NetEvent>,
                host: u32,
                pkt: $crate::packet::PktId,
            ) -> Option<u32> {
                match self.nodes[self.host_nodes[host as usize] as usize].forwarder {
                    $(Forwarder::$variant => <$ty as $crate::net::routing::ForwarderKind>::host_port(self, ev, host, pkt),)*
                }
            }

            /// The local port a packet host `host` sends now would most likely leave by:
            /// on a torus, the link `host_transmit` would pick if it went now (the first
            /// free candidate); elsewhere its first port. For a host model whose work runs
            /// on per-link threads, which must pick the transmit thread before the packet
            /// is queued.
            pub fn out_link_hint(&mut self, host: u32, pkt: $crate::packet::PktId, now: $crate::engine::TimePs) -> u32 {
                match self.nodes[self.host_nodes[host as usize] as usize].forwarder {
                    $(Forwarder::$variant => <$ty as $crate::net::routing::ForwarderKind>::out_link_hint(self, host, pkt, now),)*
                }
            }

            /// `ForwarderKind::path_start` of host `host`'s kind.
            pub(in crate::net) fn forward_path_start(&self, host: u32, dst: u32) -> u32 {
                match self.nodes[self.host_nodes[host as usize] as usize].forwarder {
                    $(Forwarder::$variant => <$ty as $crate::net::routing::ForwarderKind>::path_start(self, host, dst),)*
                }
            }

            /// `ForwarderKind::path_next` of node `node`'s kind.
            pub(in crate::net) fn forward_path_next(&self, node: u32, dst: u32) -> Option<u32> {
                match self.nodes[node as usize].forwarder {
                    $(Forwarder::$variant => <$ty as $crate::net::routing::ForwarderKind>::path_next(self, node, dst),)*
                }
            }

            /// `ForwarderKind::slot_route` of node `node`'s kind.
            #[inline(always)]
            pub(in crate::net) fn forward_slot_route(&mut self, node: u32, pkt: $crate::packet::PktId) -> Option<u32> {
                match self.nodes[node as usize].forwarder {
                    $(Forwarder::$variant => <$ty as $crate::net::routing::ForwarderKind>::slot_route(self, node, pkt),)*
                }
            }

            /// `ForwarderKind::prefetch_arrival` of node `node`'s kind.
            #[inline(always)]
            pub(in crate::net) fn forward_prefetch(&self, node: u32, in_port: u32, pkt: $crate::packet::PktId) {
                match self.nodes[node as usize].forwarder {
                    $(Forwarder::$variant => <$ty as $crate::net::routing::ForwarderKind>::prefetch_arrival(self, node, in_port, pkt),)*
                }
            }
        }
    };
}
pub(crate) use declare_forwarders;

#[cfg(test)]
mod tests {
    use crate::net::routing::{ecmp::Ecmp, endpoint::Endpoint, torus_server::TorusServer};
    use crate::net::routing::{Forwarder, ForwarderKind};
    use crate::net::NodeKind;

    /// Exactly one kind fits every node the topology builder can make, else
    /// `Forwarder::for_node` would depend on the list's order.
    #[test]
    fn every_node_has_exactly_one_forwarding_function() {
        for kind in [NodeKind::Host, NodeKind::Switch] {
            for forwards in [false, true] {
                let fits = [
                    Endpoint::fits(kind, forwards),
                    Ecmp::fits(kind, forwards),
                    TorusServer::fits(kind, forwards),
                ];
                assert_eq!(Forwarder::ALL.len(), fits.len(), "a kind is missing here");
                assert_eq!(
                    fits.iter().filter(|&&f| f).count(),
                    1,
                    "{kind:?} {forwards}"
                );
            }
        }
        assert_eq!(
            Forwarder::for_node(NodeKind::Switch, false),
            Some(Forwarder::Ecmp)
        );
        assert_eq!(
            Forwarder::for_node(NodeKind::Host, true).map(Forwarder::name),
            Some("torus_server")
        );
        assert_eq!(Forwarder::Torus.late_choice_links(), 6);
        assert_eq!(Forwarder::Endpoint.late_choice_links(), 0);
    }
}
