//! The forwarding function of a torus server (CamCube): every neighbour on a shortest path
//! towards the destination (`torus::TorusRouting`), or towards the server that holds a key
//! (`kbr`), is a candidate, and a packet takes the first free link among those the server
//! believes up. With CamCubeOS's runtime the choice is made late: frames wait in
//! per-service queues until a link is free (`service_queues`).

use super::kind::ForwarderKind;
use crate::engine::{Scheduler, TimePs};
use crate::net::{kbr, NetEvent, Network, NodeKind, Upcall};
use crate::packet::{self, PktId};

/// A server of a torus, which forwards.
pub struct TorusServer;

impl ForwarderKind for TorusServer {
    const NAME: &'static str = "torus_server";
    /// Its six links (+x, -x, +y, -y, +z, -z); a seventh port, to an external switch, does
    /// not take part.
    const LATE_CHOICE_LINKS: u32 = 6;

    fn fits(kind: NodeKind, forwards: bool) -> bool {
        kind == NodeKind::Host && forwards
    }

    #[inline]
    fn arrive(
        net: &mut Network,
        ev: &mut impl Scheduler<NetEvent>,
        node: u32,
        _in_port: u32,
        pkt: PktId,
    ) -> Option<Upcall> {
        let host = net.nodes[node as usize].index;
        net.torus_arrival(ev.now(), host, pkt)
    }

    #[inline]
    fn host_port(
        net: &mut Network,
        ev: &mut impl Scheduler<NetEvent>,
        host: u32,
        pkt: PktId,
    ) -> Option<u32> {
        let now = ev.now();
        let nd = &net.nodes[net.host_nodes[host as usize] as usize];
        let base = nd.port_base;
        let p = net.pool.get(pkt);
        if p.dst_host >= net.torus_servers && p.dst_host != packet::TO_KEY {
            // Out of the cube: through the server's port to the external switch, its last.
            return Some(nd.port_base + nd.nports - 1);
        }
        if p.hops == 0 && p.src_host == host && p.dst_host == packet::TO_KEY {
            net.kbr_mut().counters.key_sent += 1;
        }
        let dst = match net.torus_next(host, pkt, now) {
            kbr::Next::Here => {
                net.kbr_deliver(host, pkt, now);
                ev.schedule(now, NetEvent::Loopback { pkt });
                return None;
            }
            kbr::Next::Toward(dst) => Some(dst),
            kbr::Next::Nowhere => None,
        };
        let Some((cands, n)) = dst.and_then(|d| net.view_ports(host, d)) else {
            // No working path in this server's view: the destination is cut off.
            net.counters.unroutable_drops += 1;
            net.drop_packet(now, base, pkt);
            return None;
        };
        if net.service_queues.is_some() {
            net.service_enqueue(ev, host, pkt, &cands[..n]);
            return None;
        }
        Some(base + first_free(net, base, &cands[..n], now))
    }

    /// The link `host_port` would pick if the packet went now (the first free candidate).
    fn out_link_hint(net: &mut Network, host: u32, pkt: PktId, now: TimePs) -> u32 {
        let nd = &net.nodes[net.host_nodes[host as usize] as usize];
        let (base, last) = (nd.port_base, nd.nports - 1);
        let dst = net.pool.get(pkt).dst_host;
        if dst >= net.torus_servers && dst != packet::TO_KEY {
            return last;
        }
        match net.torus_next(host, pkt, now) {
            kbr::Next::Toward(d) => match net.view_ports(host, d) {
                Some((cands, n)) => first_free(net, base, &cands[..n], now),
                None => 0,
            },
            _ => 0,
        }
    }

    /// The first shortest-path link (in the order +x, -x, +y, -y, +z, -z).
    fn path_start(net: &Network, host: u32, dst: u32) -> u32 {
        let t = net
            .torus
            .as_ref()
            .expect("a torus server's network is a torus");
        net.nic_port(host) + u32::from(t.next_ports(host, dst).0[0])
    }

    fn path_next(net: &Network, node: u32, dst: u32) -> Option<u32> {
        let host = net.nodes[node as usize].index;
        (host != dst).then(|| Self::path_start(net, host, dst))
    }

    fn slot_route(_net: &mut Network, node: u32, _pkt: PktId) -> Option<u32> {
        unreachable!("node {node} forwards as a torus server: the timeslot engine refuses tori")
    }
}

/// Of a torus server's candidate links (local ports), the first free one (none queued,
/// none being sent), else the one with the fewest bytes queued; ties go to the first, in
/// the order +x, -x, +y, -y, +z, -z. Shortest paths are over the links the server
/// believes up (`kbr`): it may send onto a link that has failed and not yet been detected.
fn first_free(net: &Network, base: u32, cands: &[u8], now: TimePs) -> u32 {
    let mut best = (u64::MAX, u32::from(cands[0]));
    for &local in cands {
        let pt = &net.ports[(base + u32::from(local)) as usize];
        if pt.pkts_queued == 0 && pt.busy_until_ps <= now {
            return u32::from(local);
        }
        if pt.bytes_queued < best.0 {
            best = (pt.bytes_queued, u32::from(local));
        }
    }
    best.1
}
