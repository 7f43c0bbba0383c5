//! CamCubeOS's routing runtime on the servers of a torus: key-based routing on each
//! server's own view of failed links, failure detection by keepalives and flooding, server
//! failures and rejoins, and an oracle that checks where key-addressed packets land. Its
//! parts live here: the keyspace (`keyspace`: a key's home and its servers in order of
//! succession) and each server's view of the torus (`views`).
//!
//! - A packet addressed to a key (`packet::TO_KEY`) is delivered where its key's root is
//!   as the server holding it sees things: each hop computes the root from its own view
//!   (`views`) and delivers if it is the root, else sends the packet one hop
//!   closer to the root over a link its view believes up. A packet addressed to a server
//!   is dropped once a server's view has that server cut off.
//! - A link that fails or comes back is learnt by the server at each working end from the
//!   keepalives of the other (`Detection::learned_at`); the server then floods the change
//!   to its neighbours, each taking `flood_hop_ps`. Servers route on what they know, so a
//!   packet sent before the news arrives may go onto a dead link and be lost: the
//!   transient drops of CamCubeOS's churn experiment.
//! - A server that rejoins takes its view from the truth (its neighbours' state transfer,
//!   taken as instantaneous) and becomes a root again only `join_hold_ps` later, once the
//!   servers that stood in for it have heard that it is back; until then it forwards its
//!   keys' packets to them. This is what keeps misdelivery at zero, as in the paper.
//!
//! Simplified: keepalives and floods are events, not packets (they take no link time or
//! queue space: the paper calls control traffic negligible); changes of one link that
//! overtake each other in a flood are applied in arrival order; a server knows nothing of
//! a failure at time 0 that it has not been told, except that failures at time 0 are known
//! to all (they happened before the run).

pub mod keyspace;
pub mod views;

use super::{NetEvent, Network, Upcall};
use crate::engine::{rng::mix64, Scheduler, TimePs};
use crate::packet::{self, PktId};
use keyspace::{Key, KeySpace};
use views::{Adjacency, Detection, ViewId, Views};

/// A link's failure or repair, and who has been told of it.
#[derive(Clone, Debug)]
struct Change {
    link: u32,
    up: bool,
    at_ps: TimePs,
    /// Nodes that know or have a notice on its way (one bit each; freed when done).
    told: Vec<u64>,
    /// Notices not yet delivered.
    pending: u32,
}

/// Counts of key-addressed packets and of the control plane.
#[derive(Clone, Copy, Debug, Default)]
pub struct KbrCounters {
    /// Key-addressed packets their sources sent.
    pub key_sent: u64,
    pub key_delivered: u64,
    /// Delivered at a server that was not the key's root by the oracle at that moment.
    pub key_misdelivered: u64,
    pub key_dropped: u64,
    /// Packets dropped after `packet::MAX_HOPS` hops (routing loops).
    pub hop_limit_drops: u64,
    /// Notices servers received (learnt by keepalives, or by flooding).
    pub notices: u64,
    /// Breadth-first searches the views ran.
    pub searches: u64,
}

pub struct Kbr {
    pub views: Views,
    pub keys: KeySpace,
    pub detection: Detection,
    /// The links that are down now, as a view (the oracle's).
    pub truth: ViewId,
    /// From when each server may be a key's root (later than its rejoin by the hold).
    pub root_from_ps: Vec<TimePs>,
    phase_seed: u64,
    changes: Vec<Change>,
    /// Per canonical link port, its latest change (u32::MAX: none).
    last_change: Vec<u32>,
    notices: Vec<(u32, u32)>,
    free_notices: Vec<u32>,
    pub counters: KbrCounters,
}

/// Where a packet at a torus server goes next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// It is for this server.
    Here,
    /// Towards this host.
    Toward(u32),
    /// Its destination is cut off, as this server sees it.
    Nowhere,
}

impl Kbr {
    pub fn new(adj: Adjacency, dims: [u32; 3], detection: Detection, seed: u64) -> Kbr {
        let (n, ports) = (adj.port_base.len() - 1, adj.peer_port.len());
        let mut views = Views::new(adj);
        views.hold(views::CLEAN, 1);
        Kbr {
            views,
            keys: KeySpace::new(dims),
            detection,
            truth: views::CLEAN,
            root_from_ps: vec![0; n],
            phase_seed: mix64(seed ^ 0x6b65_6570_616c_6976),
            changes: Vec::new(),
            last_change: vec![u32::MAX; ports],
            notices: Vec::new(),
            free_notices: Vec::new(),
            counters: KbrCounters::default(),
        }
    }

    /// When the keepalives sent out of `port` fall: `phase + k * period`.
    fn phase_ps(&self, port: u32) -> TimePs {
        let p = self.detection.keepalive_ps.max(1);
        mix64(self.phase_seed ^ u64::from(port)) % p
    }

    /// The change that the link out of `port` failing (or coming back) at `now` is: both
    /// ends' events of one physical change share one.
    fn change_for(&mut self, port: u32, up: bool, now: TimePs) -> u32 {
        let link = self.views.adj.link_of(port);
        let last = self.last_change[link as usize];
        if last != u32::MAX {
            let c = &self.changes[last as usize];
            if c.up == up && c.at_ps == now {
                return last;
            }
        }
        let n = self.root_from_ps.len();
        let id = self.changes.len() as u32;
        self.changes.push(Change {
            link,
            up,
            at_ps: now,
            told: vec![0; n.div_ceil(64)],
            pending: 0,
        });
        self.last_change[link as usize] = id;
        id
    }

    fn tell(&mut self, node: u32, change: u32) -> bool {
        let c = &mut self.changes[change as usize];
        let (w, b) = (node as usize / 64, 1u64 << (node % 64));
        if c.told[w] & b != 0 {
            return false;
        }
        c.told[w] |= b;
        c.pending += 1;
        true
    }

    fn notice(&mut self, node: u32, change: u32) -> u32 {
        match self.free_notices.pop() {
            Some(i) => {
                self.notices[i as usize] = (node, change);
                i
            }
            None => {
                self.notices.push((node, change));
                (self.notices.len() - 1) as u32
            }
        }
    }

    /// Applies a change to every server's view at once (failures before the run, or
    /// instant detection).
    fn apply_everywhere(&mut self, link: u32, up: bool) {
        for node in 0..self.root_from_ps.len() as u32 {
            let v = self
                .views
                .with_link(self.views.of_node[node as usize], link, up);
            self.views.set(node, v);
        }
    }

    /// The node a notice is for.
    pub fn notice_node(&self, notice: u32) -> u32 {
        self.notices[notice as usize].0
    }
}

impl Network {
    /// Whether `port` joins the torus to its external switch (or is the switch's).
    #[inline]
    pub fn is_external_port(&self, port: u32) -> bool {
        let Some(t) = &self.torus else { return false };
        let p = &self.ports[port as usize];
        p.node >= t.servers() || p.peer_node >= t.servers()
    }

    /// `GetServersForKey(key, r)` as server `host` sees it at `now`: up to `r` servers of
    /// the key's succession that `host`'s view reaches (a rejoined server only once it has
    /// taken its keys back), the root first. Empty off a torus.
    pub fn servers_for_key(&mut self, host: u32, key: u64, r: usize, now: TimePs) -> Vec<u32> {
        let Some(k) = self.kbr.as_mut() else {
            return Vec::new();
        };
        let view = k.views.of_node[host as usize];
        let comp = k.views.components(view);
        let mine = comp[host as usize];
        let from = &k.root_from_ps;
        k.keys.servers_for_key(&Key::new(0, key), r, |s| {
            comp[s as usize] == mine && from[s as usize] <= now
        })
    }

    /// `GetServersForKey(key, r)` by the truth at `now`: the servers that are up (and have
    /// taken their keys back), whoever looks. Empty off a torus.
    pub fn servers_for_key_truly(&mut self, key: u64, r: usize, now: TimePs) -> Vec<u32> {
        let Some(k) = self.kbr.as_mut() else {
            return Vec::new();
        };
        let up = &self.node_up;
        let from = &k.root_from_ps;
        k.keys.servers_for_key(&Key::new(0, key), r, |s| {
            up[s as usize] && from[s as usize] <= now
        })
    }

    /// Starts the runtime on a torus network (nothing elsewhere).
    pub fn install_kbr(&mut self, detection: Detection, seed: u64) {
        let Some(t) = &self.torus else { return };
        // Links to the external switch (and the switch's own) are not the torus's: they
        // join a node to itself here, so no search crosses them.
        let servers = t.servers();
        self.torus_servers = servers;
        let outside = |p: &super::Port| p.node >= servers || p.peer_node >= servers;
        let adj = Adjacency {
            port_base: self
                .nodes
                .iter()
                .map(|n| n.port_base)
                .chain(std::iter::once(self.ports.len() as u32))
                .collect(),
            peer_node: self
                .ports
                .iter()
                .map(|p| if outside(p) { p.node } else { p.peer_node })
                .collect(),
            peer_port: self
                .ports
                .iter()
                .enumerate()
                .map(|(i, p)| match outside(p) {
                    true => i as u32,
                    false => self.nodes[p.peer_node as usize].port_base + p.peer_in_port,
                })
                .collect(),
        };
        self.kbr = Some(Kbr::new(adj, t.dims, detection, seed));
    }

    pub(super) fn kbr_mut(&mut self) -> &mut Kbr {
        self.kbr
            .as_mut()
            .expect("a torus has the CamCubeOS runtime")
    }

    /// The link out of `port` failed or came back at `now`: the truth changes at once, and
    /// the server at this end learns it from the keepalives (if it is alive then).
    pub(super) fn kbr_link_changed(
        &mut self,
        ev: &mut impl Scheduler<NetEvent>,
        port: u32,
        up: bool,
    ) {
        let now = ev.now();
        let owner = self.ports[port as usize].node;
        if self.is_external_port(port) {
            return;
        }
        let peer_port = {
            let pt = &self.ports[port as usize];
            self.nodes[pt.peer_node as usize].port_base + pt.peer_in_port
        };
        let Some(k) = self.kbr.as_mut() else { return };
        let link = k.views.adj.link_of(port);
        let truth = k.views.with_link(k.truth, link, up);
        if truth != k.truth {
            k.views.hold(truth, 1);
            k.views.release(k.truth);
            k.truth = truth;
            if now == 0 || k.detection.instant() {
                k.apply_everywhere(link, up);
            }
        }
        if now == 0 || k.detection.instant() {
            return;
        }
        let change = k.change_for(port, up, now);
        if k.tell(owner, change) {
            let at = k.detection.learned_at(now, k.phase_ps(peer_port), up);
            let i = k.notice(owner, change);
            ev.schedule(at, NetEvent::Learn { notice: i });
        }
    }

    /// Server `node` receives notice `notice`: it updates its view and floods the change
    /// to the neighbours it believes reachable that have not been told.
    pub(super) fn kbr_learn(&mut self, ev: &mut impl Scheduler<NetEvent>, notice: u32) {
        let now = ev.now();
        let Network {
            kbr,
            nodes,
            ports,
            node_up,
            ..
        } = self;
        let k = kbr.as_mut().expect("notices come from the runtime");
        let (node, change) = k.notices[notice as usize];
        k.free_notices.push(notice);
        k.counters.notices += 1;
        let c = &mut k.changes[change as usize];
        c.pending -= 1;
        let (link, up) = (c.link, c.up);
        // A change that a newer one of the same link has overtaken is ignored: the newer
        // one's flood brings the state that holds. (At the link's ends this is a failure
        // whose keepalives resumed before enough were missed: no verdict at all.)
        let current = k.last_change[link as usize] == change;
        if node_up[node as usize] && current {
            let mut v = k.views.with_link(k.views.of_node[node as usize], link, up);
            if up && k.views.adj.touches(link, node) {
                // A new adjacency: the two ends exchange what they know (link-state
                // databases), so a server that has just rejoined catches up on the changes
                // flooded while its neighbours still believed its links down. Modelled as
                // taking the truth.
                v = k.truth;
            }
            k.views.set(node, v);
            let nd = &nodes[node as usize];
            for p in nd.port_base..nd.port_base + nd.nports {
                let peer = ports[p as usize].peer_node;
                if ports[p as usize].up && k.views.port_up(v, p) && k.tell(peer, change) {
                    let i = k.notice(peer, change);
                    ev.schedule(
                        now + k.detection.flood_hop_ps,
                        NetEvent::Learn { notice: i },
                    );
                }
            }
        }
        let c = &mut k.changes[change as usize];
        if c.pending == 0 {
            c.told = Vec::new();
        }
    }

    /// Server `node` comes back: it takes the current state from its neighbours and may be
    /// a root again after the hold.
    pub(super) fn kbr_node_up(&mut self, now: TimePs, node: u32) {
        let Some(k) = self.kbr.as_mut() else { return };
        let truth = k.truth;
        k.views.set(node, truth);
        if now > 0 {
            k.root_from_ps[node as usize] = now + k.detection.join_hold_ps;
        }
    }

    /// Where packet `pkt` at torus server `host` goes, as `host` sees it.
    pub(super) fn torus_next(&mut self, host: u32, pkt: PktId, now: TimePs) -> Next {
        let p = self.pool.get(pkt);
        if p.dst_host != packet::TO_KEY {
            return if p.dst_host == host {
                Next::Here
            } else {
                Next::Toward(p.dst_host)
            };
        }
        let key = Key::new(0, p.key);
        let k = self.kbr_mut();
        let view = k.views.of_node[host as usize];
        let from = &k.root_from_ps;
        match k
            .views
            .root(view, host, &key, &mut k.keys, |s| from[s as usize] <= now)
        {
            Some(r) if r == host => Next::Here,
            Some(r) => Next::Toward(r),
            None => Next::Nowhere,
        }
    }

    /// A key-addressed packet is delivered at `host`: the oracle checks that `host` is the
    /// key's root by the truth at this moment, and the packet becomes addressed to it.
    pub(super) fn kbr_deliver(&mut self, host: u32, pkt: PktId, now: TimePs) {
        let p = self.pool.get_mut(pkt);
        if p.dst_host != packet::TO_KEY {
            return;
        }
        p.dst_host = host;
        let key = Key::new(0, p.key);
        let k = self.kbr_mut();
        k.counters.key_delivered += 1;
        let truth = k.truth;
        let Kbr {
            views,
            keys,
            root_from_ps,
            ..
        } = k;
        let root = views.root(truth, host, &key, keys, |s| root_from_ps[s as usize] <= now);
        if root != Some(host) {
            k.counters.key_misdelivered += 1;
        }
    }

    /// Whether torus server `host`'s view has a working path to server `dst` (itself
    /// included).
    pub fn reachable_in_view(&mut self, host: u32, dst: u32) -> bool {
        host == dst || self.view_ports(host, dst).is_some()
    }

    /// The local ports of torus server `host` on a shortest path to `dst` over the links
    /// its view believes up, in direction order; None when its view has `dst` cut off.
    pub(super) fn view_ports(&mut self, host: u32, dst: u32) -> Option<([u8; 6], usize)> {
        let Network {
            nodes,
            host_nodes,
            kbr,
            torus,
            ..
        } = self;
        let torus = torus.as_ref().expect("a torus node has torus routing");
        let k = kbr.as_mut().expect("a torus has the CamCubeOS runtime");
        let node = host_nodes[host as usize];
        let view = k.views.of_node[node as usize];
        if k.views.is_clean(view) {
            return Some(torus.next_ports(host, dst));
        }
        let dst_node = host_nodes[dst as usize];
        k.views.distances(view, dst_node);
        let dist = k.views.known_distances(view, dst_node);
        let here = dist[node as usize];
        if here == views::UNREACHABLE {
            return None;
        }
        let base = nodes[node as usize].port_base;
        let mut out = [super::routing::torus::NO_PORT; 6];
        let mut n = 0;
        for &local in &torus.hosts[host as usize].dir_port {
            if local == super::routing::torus::NO_PORT {
                continue;
            }
            let p = base + u32::from(local);
            if k.views.port_up(view, p)
                && dist[k.views.adj.peer_node[p as usize] as usize] + 1 == here
            {
                out[n] = local;
                n += 1;
            }
        }
        (n > 0).then_some((out, n))
    }

    /// A packet arrived at torus server `host`: delivered, forwarded, or dropped when its
    /// destination is cut off or it has taken too many hops.
    pub(super) fn torus_arrival(&mut self, now: TimePs, host: u32, pkt: PktId) -> Option<Upcall> {
        match self.torus_next(host, pkt, now) {
            Next::Here => {
                self.kbr_deliver(host, pkt, now);
                Some(Upcall::Deliver { pkt, host })
            }
            _ if self.pool.get(pkt).hops == packet::MAX_HOPS => {
                self.kbr_mut().counters.hop_limit_drops += 1;
                let port = self.nodes[self.host_nodes[host as usize] as usize].port_base;
                self.drop_packet(now, port, pkt);
                None
            }
            _ => Some(Upcall::Forward { pkt, host }),
        }
    }
}
