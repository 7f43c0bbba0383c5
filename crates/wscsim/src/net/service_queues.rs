//! CamCubeOS's per-service queues with late link choice. A torus server keeps one queue per
//! service; a packet waits there with the set of links that lie on a shortest path to its
//! destination, and a link's NIC holds at most one frame waiting behind the one on the wire.
//! Whenever a link has room, the runtime asks the services in turn for their oldest packet
//! that may take that link (fair queueing, by packets; weighted as an option), so the link
//! a packet leaves on is chosen as late as possible: the first of its candidates to be
//! free. A full link asks nobody, which is CamCubeOS's implicit per-link congestion control.
//!
//! A service's queue at a server is a ring of (packet, candidate mask) in arrival order, so
//! the oldest packet that may take a link is the first entry whose mask has it: a scan of
//! small entries that reads no packet. Entries taken from the middle leave a hole that the
//! front skips; a count per link of the packets that may take it saves the scan when none
//! can. Each queue has a packet limit (0: none) and drops the arriving packet or its oldest
//! when full.
//!
//! Simplified: the candidate set is fixed when the packet is queued; if the server's view
//! changes while it waits, it still leaves on one of its old candidates (the next hop
//! routes it afresh).

use crate::engine::TimePs;
use crate::packet::{PacketPool, PktId, Proto, NO_PKT};
use std::collections::VecDeque;

/// The service a packet belongs to: transport packets (TCP, UDP) are service 0, the
/// service that carries the hosts' own traffic across the torus; a service's own packets
/// carry its id in `dst_port`.
#[inline]
pub fn service_of(p: &crate::packet::Packet) -> usize {
    if p.proto == Proto::SERVICE {
        usize::from(p.dst_port)
    } else {
        0
    }
}

/// How a service's queue behaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueSpec {
    /// Packets the queue holds at one server (0: no limit).
    pub limit_pkts: u32,
    /// When full, drop the oldest packet instead of the arriving one.
    pub drop_oldest: bool,
    /// Turns in a row the service gets at a link (fair queueing: 1 each).
    pub weight: u32,
}

impl Default for QueueSpec {
    fn default() -> Self {
        QueueSpec {
            limit_pkts: 1000,
            drop_oldest: false,
            weight: 1,
        }
    }
}

/// Where a link's round robin stands.
#[derive(Clone, Copy, Debug, Default)]
struct Turn {
    service: u16,
    used: u32,
}

/// A queued packet and the local ports it may leave on (NO_PKT: taken, a hole).
#[derive(Clone, Copy, Debug)]
struct Entry {
    pkt: PktId,
    mask: u8,
}

/// One service's queue at one server.
#[derive(Clone, Debug, Default)]
struct Queue {
    ring: VecDeque<Entry>,
    /// Packets queued (the ring less its holes).
    len: u32,
    /// Per local port, the queued packets that may take it.
    eligible: [u32; 6],
}

impl Queue {
    /// Takes out the entry at `i` (a packet), leaving a hole unless it is the front.
    fn take(&mut self, i: usize) -> PktId {
        let e = self.ring[i];
        for (p, n) in self.eligible.iter_mut().enumerate() {
            *n -= u32::from(e.mask >> p & 1);
        }
        self.len -= 1;
        self.ring[i].pkt = NO_PKT;
        while self.ring.front().is_some_and(|e| e.pkt == NO_PKT) {
            self.ring.pop_front();
        }
        e.pkt
    }
}

pub struct ServiceQueues {
    pub specs: Vec<QueueSpec>,
    /// Per (server, service).
    queues: Vec<Queue>,
    /// Per (server, local port) the round robin over services.
    turns: Vec<Turn>,
    /// Per server, which services have packets queued (bit s: service s; at most 64).
    busy: Vec<u64>,
    /// Packets each service's queues dropped (full).
    pub drops: Vec<u64>,
    /// The most packets any one queue held.
    pub max_len: u32,
}

/// What queueing a packet did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Queued {
    Yes,
    /// The queue was full and this packet was dropped (it is not queued).
    Dropped(PktId),
}

impl ServiceQueues {
    pub fn new(servers: usize, specs: Vec<QueueSpec>) -> ServiceQueues {
        let s = specs.len();
        assert!((1..=64).contains(&s), "1 to 64 services");
        ServiceQueues {
            queues: vec![Queue::default(); servers * s],
            turns: vec![Turn::default(); servers * 6],
            busy: vec![0; servers],
            drops: vec![0; s],
            max_len: 0,
            specs,
        }
    }

    pub fn services(&self) -> usize {
        self.specs.len()
    }

    /// Gives services up to id `n - 1` queues of their own (those added get `spec`); only
    /// while every queue is empty (before a run starts).
    pub fn grow(&mut self, n: usize, spec: QueueSpec) {
        let old = self.specs.len();
        if n <= old {
            return;
        }
        assert!(n <= 64, "at most 64 services");
        assert!(
            self.queues.iter().all(|q| q.len == 0),
            "queues grow before the run"
        );
        let servers = self.queues.len() / old;
        self.specs.resize(n, spec);
        self.drops.resize(n, 0);
        self.queues = vec![Queue::default(); servers * n];
    }

    /// Packets waiting at `server` for service `s`.
    pub fn len(&self, server: u32, s: usize) -> u32 {
        self.queues[server as usize * self.services() + s].len
    }

    /// Queues `pkt` of service `s` at `server` with candidate ports `mask`; a full queue
    /// drops the newcomer or its oldest packet, by the service's policy.
    pub fn push(
        &mut self,
        pool: &mut PacketPool,
        server: u32,
        s: usize,
        mask: u8,
        pkt: PktId,
        now: TimePs,
    ) -> Queued {
        debug_assert!(mask != 0 && mask < 64);
        let spec = self.specs[s];
        let q = &mut self.queues[server as usize * self.specs.len() + s];
        let mut dropped = None;
        if spec.limit_pkts > 0 && q.len >= spec.limit_pkts {
            self.drops[s] += 1;
            if !spec.drop_oldest {
                return Queued::Dropped(pkt);
            }
            dropped = Some(q.take(0));
        }
        pool.get_mut(pkt).enqueued_ps = now;
        q.ring.push_back(Entry { pkt, mask });
        self.busy[server as usize] |= 1 << s;
        q.len += 1;
        for (p, n) in q.eligible.iter_mut().enumerate() {
            *n += u32::from(mask >> p & 1);
        }
        self.max_len = self.max_len.max(q.len);
        match dropped {
            Some(old) => Queued::Dropped(old),
            None => Queued::Yes,
        }
    }

    /// The oldest packet of queue `q` that may take local port `port`, taken out if `fits`
    /// (a queue's packets leave in order: a packet that does not fit holds back the rest).
    fn pop_oldest(&mut self, q: usize, port: usize, fits: impl Fn(PktId) -> bool) -> Option<PktId> {
        let queue = &mut self.queues[q];
        if queue.eligible[port] == 0 {
            return None;
        }
        let bit = 1u8 << port;
        let i = queue
            .ring
            .iter()
            .position(|e| e.pkt != NO_PKT && e.mask & bit != 0)
            .expect("a packet counted as eligible is queued");
        fits(queue.ring[i].pkt).then(|| queue.take(i))
    }

    /// Starts loading what `pull(server, port)` will read.
    #[inline]
    pub fn prefetch(&self, server: u32, port: usize) {
        crate::engine::prefetch(&self.turns, server as usize * 6 + port);
        let base = server as usize * self.specs.len();
        let busy = self.busy[server as usize];
        for s in 0..self.specs.len() {
            if busy >> s & 1 != 0 {
                crate::engine::prefetch(&self.queues, base + s);
            }
        }
    }

    /// Local port `port` of `server` has room: the next service in turn that has a packet
    /// which may take it gives its oldest such packet.
    pub fn pull(&mut self, server: u32, port: usize) -> Option<PktId> {
        self.pull_if(server, port, |_| true)
    }

    /// As `pull`, but a service offers its oldest packet for the link only if `fits` (when
    /// packing packets into one frame: if it has room for it).
    pub fn pull_if(
        &mut self,
        server: u32,
        port: usize,
        fits: impl Fn(PktId) -> bool,
    ) -> Option<PktId> {
        let n = self.services();
        let t = server as usize * 6 + port;
        let base = server as usize * n;
        let busy = self.busy[server as usize];
        if busy == 0 {
            return None;
        }
        let Turn { service, used } = self.turns[t];
        let start = service as usize;
        for i in 0..n {
            let s = (start + i) % n;
            if busy >> s & 1 == 0 {
                continue;
            }
            let Some(pkt) = self.pop_oldest(base + s, port, &fits) else {
                continue;
            };
            if self.queues[base + s].len == 0 {
                self.busy[server as usize] &= !(1 << s);
            }
            // The service keeps the turn until it has used its weight.
            let used = if i == 0 { used + 1 } else { 1 };
            self.turns[t] = if used >= self.specs[s].weight {
                Turn {
                    service: ((s + 1) % n) as u16,
                    used: 0,
                }
            } else {
                Turn {
                    service: s as u16,
                    used,
                }
            };
            return Some(pkt);
        }
        None
    }
}

impl super::Network {
    /// Queues `pkt` at torus server `host` for the links in `cands[..n]` (local ports),
    /// then fills those of them that have room.
    pub(super) fn service_enqueue(
        &mut self,
        ev: &mut impl crate::engine::Scheduler<super::NetEvent>,
        host: u32,
        pkt: PktId,
        cands: &[u8],
    ) {
        let now = ev.now();
        let node = self.host_nodes[host as usize];
        let base = self.nodes[node as usize].port_base;
        let mask = cands.iter().fold(0u8, |m, &l| m | 1 << l);
        let sq = self.service_queues.as_mut().expect("per-service queues");
        // A service the runtime has no queue for shares the transport's.
        let s = service_of(self.pool.get(pkt));
        let s = if s < sq.services() { s } else { 0 };
        if let Queued::Dropped(lost) = sq.push(&mut self.pool, host, s, mask, pkt, now) {
            self.counters.service_queue_drops += 1;
            self.drop_packet(now, base + u32::from(cands[0]), lost);
        }
        for &local in cands {
            let port = base + u32::from(local);
            if self.ports[port as usize].pkts_queued == 0 {
                self.service_refill(ev, port);
            }
        }
    }

    /// Torus port `port` has room for a frame: the services in turn offer one. A failed
    /// link always has room (its NIC loses what it is given), so it takes every packet
    /// offered until its server learns of the failure and stops offering.
    pub(super) fn service_refill(
        &mut self,
        ev: &mut impl crate::engine::Scheduler<super::NetEvent>,
        port: u32,
    ) {
        let node = self.ports[port as usize].node;
        let nd = &self.nodes[node as usize];
        let (host, local) = (nd.index, (port - nd.port_base) as usize);
        if local >= 6 {
            // A server's port to the external switch: not a torus link, fed directly.
            return;
        }
        loop {
            let Some(sq) = self.service_queues.as_mut() else {
                return;
            };
            let Some(pkt) = sq.pull(host, local) else {
                return;
            };
            self.enqueue_at_port(ev, port, pkt, 0);
            if self.ports[port as usize].up {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Packet;

    fn pkt(pool: &mut PacketPool, seq: u64) -> PktId {
        pool.alloc(Packet {
            seq,
            frame_bytes: 100,
            ..Default::default()
        })
    }

    #[test]
    fn a_link_takes_the_oldest_packet_that_may_use_it() {
        let mut pool = PacketPool::new();
        let mut q = ServiceQueues::new(1, vec![QueueSpec::default()]);
        // Packets for links {0}, {1}, {0,1}, {2} at times 1..4.
        for (i, mask) in [1u8, 2, 3, 4].into_iter().enumerate() {
            let p = pkt(&mut pool, i as u64);
            assert_eq!(q.push(&mut pool, 0, 0, mask, p, i as u64 + 1), Queued::Yes);
        }
        let seq = |q: &mut ServiceQueues, pool: &mut PacketPool, port| {
            q.pull(0, port).map(|p| pool.get(p).seq)
        };
        assert_eq!(seq(&mut q, &mut pool, 1), Some(1));
        assert_eq!(
            seq(&mut q, &mut pool, 1),
            Some(2),
            "the packet for either link"
        );
        assert_eq!(seq(&mut q, &mut pool, 1), None);
        assert_eq!(seq(&mut q, &mut pool, 0), Some(0));
        assert_eq!(seq(&mut q, &mut pool, 2), Some(3));
        assert_eq!(q.len(0, 0), 0);
    }

    /// Three services always backlogged: a link serves them 1:1:1, or by weight.
    #[test]
    fn services_share_a_link_by_turns() {
        let shares = |weights: [u32; 3]| {
            let mut pool = PacketPool::new();
            let specs = weights
                .iter()
                .map(|&w| QueueSpec {
                    limit_pkts: 0,
                    drop_oldest: false,
                    weight: w,
                })
                .collect();
            let mut q = ServiceQueues::new(2, specs);
            for s in 0..3 {
                for i in 0..600 {
                    let p = pkt(&mut pool, s as u64);
                    q.push(&mut pool, 1, s, 0b100001, p, i);
                }
            }
            let mut got = [0u32; 3];
            for _ in 0..600 {
                let p = q.pull(1, 5).unwrap();
                got[pool.get(p).seq as usize] += 1;
            }
            got
        };
        assert_eq!(shares([1, 1, 1]), [200, 200, 200]);
        assert_eq!(shares([1, 2, 3]), [100, 200, 300]);
    }

    /// Packing asks for what fits: a service whose oldest packet for the link does not fit
    /// offers nothing (its packets stay in order); another service's may.
    #[test]
    fn pulling_what_fits_keeps_each_queue_in_order() {
        let mut pool = PacketPool::new();
        let mut q = ServiceQueues::new(1, vec![QueueSpec::default(); 2]);
        let mut add = |q: &mut ServiceQueues, s: usize, frame_bytes: u32| {
            let p = pool.alloc(Packet {
                frame_bytes,
                ..Default::default()
            });
            q.push(&mut pool, 0, s, 1, p, 0);
            p
        };
        let big = add(&mut q, 0, 900);
        let small = add(&mut q, 0, 100);
        let other = add(&mut q, 1, 200);
        let sizes = [(big, 900), (small, 100), (other, 200)];
        let size = |p: PktId| sizes.iter().find(|s| s.0 == p).unwrap().1;
        let fits = |room: u32| move |p: PktId| size(p) <= room;
        assert_eq!(
            q.pull_if(0, 0, fits(500)),
            Some(other),
            "service 0 waits for room"
        );
        assert_eq!(q.pull_if(0, 0, fits(500)), None);
        assert_eq!(q.pull_if(0, 0, fits(1000)), Some(big));
        assert_eq!(q.pull_if(0, 0, fits(100)), Some(small));
    }

    #[test]
    fn a_full_queue_drops_by_its_policy() {
        for (oldest, kept) in [(false, [0u64, 1]), (true, [1, 2])] {
            let mut pool = PacketPool::new();
            let spec = QueueSpec {
                limit_pkts: 2,
                drop_oldest: oldest,
                weight: 1,
            };
            let mut q = ServiceQueues::new(1, vec![spec]);
            let ids: Vec<_> = (0..3).map(|i| pkt(&mut pool, i)).collect();
            assert_eq!(q.push(&mut pool, 0, 0, 1, ids[0], 0), Queued::Yes);
            assert_eq!(q.push(&mut pool, 0, 0, 1, ids[1], 1), Queued::Yes);
            let third = q.push(&mut pool, 0, 0, 1, ids[2], 2);
            assert_eq!(third, Queued::Dropped(if oldest { ids[0] } else { ids[2] }));
            let mut rest = Vec::new();
            while let Some(p) = q.pull(0, 0) {
                rest.push(pool.get(p).seq);
            }
            assert_eq!(rest, kept);
            assert_eq!(q.drops, vec![1]);
        }
    }
}
