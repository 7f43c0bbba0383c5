//! The forwarding function of a host that does not forward (a server of a switched
//! network): everything that reaches it is for it, and what it sends leaves by its NIC (a
//! server with several NICs spreads its flows over them by flow hash).

use super::kind::ForwarderKind;
use crate::engine::Scheduler;
use crate::net::{NetEvent, Network, NodeKind, Upcall};
use crate::packet::PktId;

/// A host that does not forward.
pub struct Endpoint;

impl ForwarderKind for Endpoint {
    const NAME: &'static str = "endpoint";

    fn fits(kind: NodeKind, forwards: bool) -> bool {
        kind == NodeKind::Host && !forwards
    }

    #[inline(always)]
    fn arrive(
        net: &mut Network,
        _ev: &mut impl Scheduler<NetEvent>,
        node: u32,
        _in_port: u32,
        pkt: PktId,
    ) -> Option<Upcall> {
        let host = net.nodes[node as usize].index;
        Some(Upcall::Deliver { pkt, host })
    }

    #[inline(always)]
    fn host_port(
        net: &mut Network,
        _ev: &mut impl Scheduler<NetEvent>,
        host: u32,
        pkt: PktId,
    ) -> Option<u32> {
        let nd = &net.nodes[net.host_nodes[host as usize] as usize];
        Some(match nd.nports {
            1 => nd.port_base,
            n => nd.port_base + net.pool.get(pkt).hash % n,
        })
    }

    fn path_next(_net: &Network, _node: u32, _dst: u32) -> Option<u32> {
        None
    }

    #[inline]
    fn slot_route(_net: &mut Network, _node: u32, _pkt: PktId) -> Option<u32> {
        None
    }
}
