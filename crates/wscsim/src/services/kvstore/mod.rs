//! CamCubeOS's key-value store: each object lives at the `replicas` servers that
//! `GetServersForKey(key, r)` names, the key's root (the primary) first; the paper's
//! default r = 3 puts the two copies on the primary's neighbours, over two separate links.
//!
//! A client's operation goes to the key (delivered at its root, by key-based routing) as a
//! reliable message (`streams`); a load generator's goes first to a front end, a server
//! that sends it on to the key and passes the answer back. The primary serves it:
//! - lookup: the object, read from disk if the store has one;
//! - insert, delete, compare-and-swap: a new version (delete leaves a tombstone with its
//!   version), written locally and sent to each other server of the key's replica set as
//!   the primary's view has it; once every copy is written (on disk, when there is one) and
//!   acknowledged, the primary replies. A write is acknowledged only when all its replicas
//!   have it, so no acknowledged write is lost while fewer than r of them fail.
//!
//! When a primary fails, routing delivers the key's operations to the next server of the
//! succession, which holds a replica: it is the new primary (promotion needs no message).
//! `rereplicate_ps` after each server failure, each primary copies the objects whose
//! replica set lost a member to the server that joined it. A client that has no reply after
//! `timeout_ps` sends the operation again.
//!
//! A server that rejoins keeps what its store held and is recovered in the background:
//! once it is a root again (the runtime's join hold), each primary copies it the objects
//! it should hold and lacks at their newest version (a re-replication pass). Until every
//! copy has arrived it is recovering: an operation that reaches it as primary goes on to
//! the next server of the key's replica set that is not recovering (the one that stood in
//! for it), so reads and writes continue and none sees a stale version.
//!
//! Simplified: the servers hear of a failure or a rejoin at once for re-replication and
//! recovery (routing learns them by keepalives as usual); a recovery whose copies are cut
//! off by another failure stays open (its server passes operations on until the run
//! ends). The store's own work for each message a server receives is charged to that
//! server's CPU as an application request (`Hosts::service_work`), and the store acts on
//! the message when it is done; what it costs beyond the host's `app_request` and
//! per-byte copy (hashing, serialisation, a managed runtime's overheads) is not modelled.

use super::streams::{StreamEvent, StreamParams, Streams, To};
use super::{SvcCtx, SvcEvent, SvcSched};
use crate::engine::slots::Slots;
use crate::engine::{TimePs, NEVER};
use crate::host::disk::{Disk, DiskParams};
use crate::packet::PktId;
use std::collections::BTreeMap;

mod cache;
mod recovery;

pub use super::kv_clients::{KvSpec, Op, OpKind, Status};

/// The store's service id.
pub const KVSTORE: u16 = super::KVSTORE;

/// Bytes of the store's own header in each message (the 160-bit key, version, operation),
/// beyond the runtime's: wscsim's choice.
pub const KV_HEADER_BYTES: u64 = 64;

/// Timer tags below this are the messages' (`streams`).
const OP_TIMER: u32 = 1 << 30;
/// Tags from here are delayed actions (`Pending`).
const PENDING_TIMER: u32 = 1 << 31;
/// The re-replication pass.
const REPAIR_TIMER: u32 = u32::MAX;

/// One server's copy of an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Object {
    pub version: u32,
    pub bytes: u64,
    /// Deleted: a tombstone keeps the version.
    pub deleted: bool,
}

/// What a message carries.
#[derive(Clone, Copy, Debug)]
enum Body {
    /// A load generator's operation, to its front end.
    Front { op: u32, attempt: u16 },
    /// The front end's answer to the generator.
    FrontReply { op: u32, attempt: u16 },
    /// A client's operation (or a front end's, for a generator), to the key's root.
    Request { op: u32, attempt: u16 },
    /// A copy of a write, from the primary (its write `write`) to a replica.
    Replicate { write: u32 },
    /// A replica has written copy `write`.
    ReplicaAck { write: u32 },
    /// The answer to attempt `attempt` of operation `op`.
    Reply { op: u32, attempt: u16 },
    /// A re-replication copy (no answer: the message's own acknowledgement suffices).
    Repair,
    /// A lookup through the cache, to the closest of the key and its derived keys.
    CacheRead { op: u32, attempt: u16 },
    /// A cache that missed asks the key's root.
    CacheFill { op: u32, attempt: u16 },
    /// The root's answer to a cache, with the item.
    CacheData { op: u32, attempt: u16 },
    /// The root tells a cache its copy is stale.
    Invalidate,
}

#[derive(Clone, Copy, Debug)]
struct Msg {
    body: Body,
    key: u32,
    object: Object,
    status: Status,
}

impl Msg {
    /// The value bytes it carries: its object's, but for an acknowledgement, which names
    /// the object without carrying it.
    fn value_bytes(&self) -> u64 {
        match self.body {
            Body::ReplicaAck { .. } => 0,
            _ => self.object.bytes,
        }
    }
}

/// A write at its primary, waiting for its copies.
#[derive(Clone, Copy, Debug)]
struct Write {
    op: u32,
    attempt: u16,
    /// The primary that made it.
    primary: u32,
    key: u32,
    object: Object,
    /// Copies (the primary's own included) not yet written.
    waiting: u32,
}

/// Something a server does when its disk is done.
#[derive(Clone, Copy, Debug)]
enum Pending {
    /// The primary's own copy of write `write` is on disk.
    PrimaryWritten { write: u32 },
    /// A replica's copy (message `msg`) is on disk: acknowledge it.
    ReplicaWritten { msg: u32, host: u32 },
    /// A lookup's object has been read: reply.
    Read { msg: u32, host: u32 },
    /// The server's CPU has done the store's work for message `msg`: act on it, unless the
    /// server has failed since (its `incarnation` then differs).
    Handled {
        msg: u32,
        host: u32,
        incarnation: u32,
    },
}

/// What the store counted over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KvCounters {
    /// Copies sent by re-replication.
    pub repairs: u64,
    /// Operations sent again after a timeout.
    pub retries: u64,
    /// Operations a recovering primary passed on to the next server of the replica set.
    pub passed_on: u64,
}

pub struct KvStore {
    pub spec: KvSpec,
    streams: Streams,
    msgs: Vec<Msg>,
    writes: Vec<Write>,
    /// What each server does when its disk or CPU is done, by the slot its timer carries.
    pending: Slots<Pending>,
    /// Per server, how many times it has failed: work begun before a failure is void.
    incarnation: Vec<u32>,
    /// Per server: its objects by key.
    pub stores: Vec<BTreeMap<u32, Object>>,
    disks: Vec<Disk>,
    /// Each key's routing bits.
    key_bits: Vec<u64>,
    /// Off a torus (the switched baseline): the keyspace of the store's servers laid out
    /// as a torus of `store_dims`, whose keys the store maps to servers itself.
    keyspace: Option<crate::net::kbr::keyspace::KeySpace>,
    pub clients: super::kv_clients::Clients,
    pub counters: KvCounters,
    /// CamCubeOS's cache in front of lookups (None: lookups go to the store).
    pub cache: Option<super::kv_cache::Cache>,
    /// Scratch: messages to stop.
    abandon: Vec<u32>,
    /// Per server: rejoined and not yet recovered (Some: the recovery copies on their way;
    /// None before its recovery pass has run).
    recovering: Vec<Option<u32>>,
    /// Per server: whether it is recovering.
    rejoined: Vec<bool>,
}

impl KvStore {
    pub fn new(spec: KvSpec, n_servers: usize) -> KvStore {
        let key_bits = (0..spec.keys)
            .map(|k| crate::engine::rng::mix64(spec.seed ^ crate::engine::rng::mix64(u64::from(k))))
            .collect();
        let disk = spec.disk.unwrap_or(DiskParams::X25_E);
        KvStore {
            streams: Streams::new(StreamParams {
                service: KVSTORE,
                payload_bytes: spec.payload_bytes,
                window: spec.window,
                rto_ps: spec.rto_ps,
            }),
            msgs: Vec::new(),
            writes: Vec::new(),
            pending: Slots::default(),
            incarnation: vec![0; n_servers],
            stores: vec![BTreeMap::new(); n_servers],
            disks: vec![Disk::new(disk); n_servers],
            key_bits,
            keyspace: spec
                .store_dims
                .map(crate::net::kbr::keyspace::KeySpace::new),
            clients: super::kv_clients::Clients::new(&spec),
            cache: None,
            counters: KvCounters::default(),
            abandon: Vec::new(),
            recovering: vec![None; n_servers],
            rejoined: vec![false; n_servers],
            spec,
        }
    }

    /// The routing bits of key `k`.
    pub fn key_bits(&self, k: u32) -> u64 {
        self.key_bits[k as usize]
    }

    /// `GetServersForKey(key, r)`: as server `host`'s view has it on a torus (None: by
    /// the truth); off a torus, the servers that are up.
    fn replica_set(
        &mut self,
        net: &mut crate::net::Network,
        host: Option<u32>,
        key: u32,
        r: usize,
        now: TimePs,
    ) -> Vec<u32> {
        let bits = self.key_bits[key as usize];
        match (&mut self.keyspace, host) {
            (Some(ks), _) => {
                let k = crate::net::kbr::keyspace::Key::new(0, bits);
                ks.servers_for_key(&k, r, |s| net.host_up(s))
            }
            (None, Some(h)) => net.servers_for_key(h, bits, r, now),
            (None, None) => net.servers_for_key_truly(bits, r, now),
        }
    }

    /// Where a message for key `key`'s root goes: the key itself on a torus (key-based
    /// routing finds the root on the way); off a torus, the root the store computes.
    fn key_destination(&mut self, ctx: &mut SvcCtx<impl SvcSched>, key: u32) -> To {
        if self.keyspace.is_none() {
            return To::Key(self.key_bits(key));
        }
        let now = ctx.ev.now();
        match self.replica_set(ctx.net, None, key, 1, now).first() {
            Some(&root) => To::Host(root),
            None => To::Key(self.key_bits(key)),
        }
    }

    /// Client `c` starts its next operation, if it has one left.
    fn issue_next(&mut self, ctx: &mut SvcCtx<impl SvcSched>, c: usize) {
        let now = ctx.ev.now();
        let net = &*ctx.net;
        if let Some(op) = self.clients.next_op(c, now, |h| net.host_up(h)) {
            self.send_request(ctx, op);
        }
    }

    /// Sends (again) operation `op` to its key.
    fn send_request(&mut self, ctx: &mut SvcCtx<impl SvcSched>, op: u32) {
        let o = self.clients.ops[op as usize];
        let now = ctx.ev.now();
        let bytes = match o.kind {
            OpKind::Insert | OpKind::Cas => self.spec.value_bytes,
            OpKind::Lookup | OpKind::Delete => 0,
        };
        let object = Object {
            version: o.expect_version,
            bytes,
            deleted: false,
        };
        let attempt = o.attempts;
        let (body, to) = match o.fe == o.client {
            true => self.store_request(ctx, op, attempt, o.client),
            false => (Body::Front { op, attempt }, To::Host(o.fe)),
        };
        self.open(ctx, o.client, to, body, o.key, object, Status::Ok);
        ctx.ev.schedule(
            now + self.spec.timeout_ps,
            SvcEvent::Timer {
                service: KVSTORE,
                tag: OP_TIMER + op,
            },
        );
    }

    /// Opens a message of the store carrying `object`'s bytes (when `body` moves a value).
    #[allow(clippy::too_many_arguments)]
    fn open(
        &mut self,
        ctx: &mut SvcCtx<impl SvcSched>,
        from: u32,
        to: To,
        body: Body,
        key: u32,
        object: Object,
        status: Status,
    ) {
        let msg = Msg {
            body,
            key,
            object,
            status,
        };
        let id = self
            .streams
            .open(ctx, from, to, KV_HEADER_BYTES + msg.value_bytes());
        debug_assert_eq!(id as usize, self.msgs.len());
        self.msgs.push(msg);
        self.after_streams(ctx);
    }

    /// What the messages did: whole messages arrived are served.
    fn after_streams(&mut self, ctx: &mut SvcCtx<impl SvcSched>) {
        while let Some(e) = self.streams.events.pop() {
            if let StreamEvent::Arrived { id, host } = e {
                self.handle(ctx, id, host);
            }
        }
    }

    /// Message `id` has wholly arrived at server `host`: the store acts on it once the
    /// server's CPU has done its work for it (`Hosts::service_work`: the host's
    /// `app_request`, and its per-byte copy of the value the message carries), at once on
    /// hosts that cost no time.
    fn handle(&mut self, ctx: &mut SvcCtx<impl SvcSched>, id: u32, host: u32) {
        let m = self.msgs[id as usize];
        let now = ctx.ev.now();
        let done = ctx.hosts.service_work(host, m.key, now, m.value_bytes());
        if done == now {
            self.arrived(ctx, id, host);
        } else {
            let incarnation = self.incarnation[host as usize];
            let what = Pending::Handled {
                msg: id,
                host,
                incarnation,
            };
            self.later(ctx, done, what);
        }
    }

    /// The store acts on message `id`, wholly arrived at server `host`.
    fn arrived(&mut self, ctx: &mut SvcCtx<impl SvcSched>, id: u32, host: u32) {
        let m = self.msgs[id as usize];
        match m.body {
            Body::Request { op, attempt } => self.serve(ctx, id, host, op, attempt),
            Body::Replicate { .. } | Body::Repair => self.store_copy(ctx, id, host),
            Body::ReplicaAck { write } => self.copy_written(ctx, write),
            Body::Front { op, attempt } => {
                let (body, to) = self.store_request(ctx, op, attempt, host);
                self.open(ctx, host, to, body, m.key, m.object, Status::Ok);
            }
            Body::CacheRead { op, attempt } => self.cache_read(ctx, host, op, attempt),
            Body::CacheFill { op, attempt } => self.cache_fill(ctx, id, host, op, attempt),
            Body::CacheData { op, attempt } => {
                let obj = (m.status == Status::Ok).then_some(m.object);
                if let (Some(c), Some(o)) = (&mut self.cache, obj) {
                    c.keep(host, m.key, o.version);
                }
                self.reply(ctx, host, op, attempt, m.key, m.status, obj);
            }
            Body::Invalidate => {
                if let Some(c) = &mut self.cache {
                    c.invalidate(host, m.key);
                }
            }
            Body::Reply { op, attempt } if self.clients.ops[op as usize].client != host => {
                // A front end passes the answer on to its generator.
                let client = self.clients.ops[op as usize].client;
                let body = Body::FrontReply { op, attempt };
                self.open(ctx, host, To::Host(client), body, m.key, m.object, m.status);
            }
            Body::Reply { op, attempt } | Body::FrontReply { op, attempt } => {
                let now = ctx.ev.now();
                let c = self
                    .clients
                    .on_reply(op, attempt, m.status, m.object.version, now);
                if let Some(c) = c {
                    self.issue_next(ctx, c);
                }
            }
        }
    }

    /// The primary `host` serves attempt `attempt` of operation `op` (message `id`); a
    /// recovering one passes it on.
    fn serve(
        &mut self,
        ctx: &mut SvcCtx<impl SvcSched>,
        id: u32,
        host: u32,
        op: u32,
        attempt: u16,
    ) {
        let o = self.clients.ops[op as usize];
        if self.rejoined[host as usize] && self.pass_on(ctx, host, op, attempt) {
            return;
        }
        let current = self.stores[host as usize].get(&o.key).copied();
        let live = current.filter(|x| !x.deleted);
        match o.kind {
            OpKind::Lookup => {
                let Some(obj) = live else {
                    return self.reply(ctx, host, op, attempt, o.key, Status::Missing, None);
                };
                match self.spec.disk {
                    Some(_) => {
                        let now = ctx.ev.now();
                        let done = self.disks[host as usize].request(now, obj.bytes, false);
                        self.later(ctx, done, Pending::Read { msg: id, host });
                    }
                    None => self.reply(ctx, host, op, attempt, o.key, Status::Ok, Some(obj)),
                }
            }
            OpKind::Cas if live.map_or(0, |x| x.version) != o.expect_version => {
                let status = Status::Conflict;
                self.reply(ctx, host, op, attempt, o.key, status, current);
            }
            OpKind::Insert | OpKind::Cas | OpKind::Delete => {
                let deleted = o.kind == OpKind::Delete;
                let object = Object {
                    version: current.map_or(0, |x| x.version) + 1,
                    bytes: if deleted { 0 } else { self.spec.value_bytes },
                    deleted,
                };
                self.write(ctx, host, op, attempt, o.key, object);
            }
        }
    }

    /// The primary writes `object` and sends its copies.
    fn write(
        &mut self,
        ctx: &mut SvcCtx<impl SvcSched>,
        host: u32,
        op: u32,
        attempt: u16,
        key: u32,
        object: Object,
    ) {
        let now = ctx.ev.now();
        let set = self.replica_set(ctx.net, Some(host), key, self.spec.replicas as usize, now);
        let others: Vec<u32> = set.into_iter().filter(|&s| s != host).collect();
        let w = self.writes.len() as u32;
        self.writes.push(Write {
            op,
            attempt,
            primary: host,
            key,
            object,
            waiting: others.len() as u32 + 1,
        });
        self.stores[host as usize].insert(key, object);
        let stale = self.cache.as_mut().map(|c| c.take_holders(host, key));
        for h in stale.unwrap_or_default() {
            let none = Object { bytes: 0, ..object };
            self.open(
                ctx,
                host,
                To::Host(h),
                Body::Invalidate,
                key,
                none,
                Status::Ok,
            );
        }
        for m in others {
            let body = Body::Replicate { write: w };
            self.open(ctx, host, To::Host(m), body, key, object, Status::Ok);
        }
        match self.spec.disk {
            Some(_) => {
                let done = self.disks[host as usize].request(now, object.bytes, true);
                self.later(ctx, done, Pending::PrimaryWritten { write: w });
            }
            None => self.copy_written(ctx, w),
        }
    }

    /// Recovering primary `host` sends operation `op` to the next server of its key's
    /// replica set that is not recovering; false if there is none (it serves it itself).
    fn pass_on(
        &mut self,
        ctx: &mut SvcCtx<impl SvcSched>,
        host: u32,
        op: u32,
        attempt: u16,
    ) -> bool {
        let key = self.clients.ops[op as usize].key;
        let (r, now) = (self.spec.replicas as usize, ctx.ev.now());
        let set = self.replica_set(ctx.net, None, key, r, now);
        let Some(&next) = set
            .iter()
            .find(|&&m| m != host && !self.rejoined[m as usize])
        else {
            return false;
        };
        self.counters.passed_on += 1;
        let body = Body::Request { op, attempt };
        let none = Object {
            version: 0,
            bytes: 0,
            deleted: false,
        };
        self.open(ctx, host, To::Host(next), body, key, none, Status::Ok);
        true
    }

    /// The primary answers attempt `attempt` of `op`.
    #[allow(clippy::too_many_arguments)]
    fn reply(
        &mut self,
        ctx: &mut SvcCtx<impl SvcSched>,
        host: u32,
        op: u32,
        attempt: u16,
        key: u32,
        status: Status,
        object: Option<Object>,
    ) {
        let o = self.clients.ops[op as usize];
        let mut object = object.unwrap_or(Object {
            version: 0,
            bytes: 0,
            deleted: false,
        });
        if o.kind != OpKind::Lookup {
            object.bytes = 0;
        }
        let body = Body::Reply { op, attempt };
        self.open(ctx, host, To::Host(o.fe), body, key, object, status);
    }

    /// Runs `what` at `at` (when a disk is done).
    fn later(&mut self, ctx: &mut SvcCtx<impl SvcSched>, at: TimePs, what: Pending) {
        let i = self.pending.put(what);
        ctx.ev.schedule(
            at,
            SvcEvent::Timer {
                service: KVSTORE,
                tag: PENDING_TIMER + i,
            },
        );
    }
}

impl KvStore {
    fn run_pending(&mut self, ctx: &mut SvcCtx<impl SvcSched>, i: u32) {
        match self.pending.take(i) {
            Pending::PrimaryWritten { write } => self.copy_written(ctx, write),
            Pending::ReplicaWritten { msg, host } => self.ack_copy(ctx, msg, host),
            // A server that failed while working on a message does not act on it.
            Pending::Handled {
                msg,
                host,
                incarnation,
            } if incarnation == self.incarnation[host as usize] => self.arrived(ctx, msg, host),
            Pending::Handled { .. } => {}
            Pending::Read { msg, host } => {
                let m = self.msgs[msg as usize];
                let Body::Request { op, attempt } = m.body else {
                    return;
                };
                let obj = self.stores[host as usize].get(&m.key).copied();
                let live = obj.filter(|x| !x.deleted);
                let status = if live.is_some() {
                    Status::Ok
                } else {
                    Status::Missing
                };
                self.reply(ctx, host, op, attempt, m.key, status, live);
            }
        }
    }
}

/// Headline figures: operations answered and their rate, latency percentiles, the bytes
/// written per second, retries, re-replication copies, and acknowledged writes lost.
pub fn headline(
    h: &mut serde_json::Map<String, serde_json::Value>,
    k: &KvStore,
    net: &crate::net::Network,
    now_ps: TimePs,
) {
    let ops = &k.clients.ops;
    let done: Vec<&Op> = ops.iter().filter(|o| o.end_ps != NEVER).collect();
    h.insert("kv_ops".into(), ops.len().into());
    h.insert("kv_ops_answered".into(), done.len().into());
    let secs = now_ps as f64 / 1e12;
    if secs > 0.0 {
        h.insert("kv_ops_per_s".into(), (done.len() as f64 / secs).into());
        let written = done
            .iter()
            .filter(|o| matches!(o.kind, OpKind::Insert | OpKind::Cas) && o.status == Status::Ok)
            .count() as f64;
        let gbps = written * k.spec.value_bytes as f64 * 8.0 / secs / 1e9;
        h.insert("kv_write_gbps".into(), gbps.into());
    }
    let mut lat: Vec<f64> = done
        .iter()
        .map(|o| (o.end_ps - o.start_ps) as f64 / 1e6)
        .collect();
    lat.sort_by(f64::total_cmp);
    if !lat.is_empty() {
        let at = |q: f64| lat[((lat.len() - 1) as f64 * q).round() as usize];
        h.insert("kv_median_latency_us".into(), at(0.5).into());
        h.insert("kv_p95_latency_us".into(), at(0.95).into());
    }
    h.insert("kv_retries".into(), k.counters.retries.into());
    if let Some(c) = &k.cache {
        h.insert("kv_cache_hits".into(), c.counters.hits.into());
        h.insert("kv_cache_misses".into(), c.counters.misses.into());
    }
    h.insert("kv_rereplication_copies".into(), k.counters.repairs.into());
    h.insert(
        "kv_acknowledged_writes_lost".into(),
        k.lost_writes(net).into(),
    );
    h.insert("kv_stale_reads".into(), k.clients.stale_reads.into());
    h.insert(
        "kv_passed_on_while_recovering".into(),
        k.counters.passed_on.into(),
    );
}

impl super::ServiceKind for KvStore {
    const ID: u16 = super::KVSTORE;
    const NAME: &'static str = "kvstore";
    fn message_ranks(&self) -> Option<Vec<u32>> {
        Some(self.streams.ranks())
    }
    fn start<S: SvcSched>(&mut self, ctx: &mut SvcCtx<S>) {
        if let (Some(k), Some(t)) = (self.spec.cache_hot_spots, ctx.net.torus()) {
            let servers = t.servers() as usize;
            self.cache = Some(super::kv_cache::Cache::new(t.dims, servers, k));
        }
        if self.spec.preload {
            self.preload(ctx);
        }
        for c in 0..self.spec.clients.len() {
            for _ in 0..self.spec.outstanding {
                self.issue_next(ctx, c);
            }
        }
    }
    fn deliver<S: SvcSched>(&mut self, ctx: &mut SvcCtx<S>, host: u32, pkt: PktId) {
        self.streams.deliver(ctx, host, pkt);
        self.after_streams(ctx);
    }

    fn on_timer<S: SvcSched>(&mut self, ctx: &mut SvcCtx<S>, tag: u32) {
        match tag {
            REPAIR_TIMER => self.repair(ctx),
            t if t >= PENDING_TIMER => self.run_pending(ctx, t - PENDING_TIMER),
            t if t >= OP_TIMER => {
                let op = t - OP_TIMER;
                let now = ctx.ev.now();
                let net = &*ctx.net;
                if self
                    .clients
                    .timed_out(op, now, self.spec.timeout_ps, |h| net.host_up(h))
                {
                    self.counters.retries += 1;
                    self.send_request(ctx, op);
                }
            }
            t => self.streams.on_timer(ctx, t),
        }
        self.after_streams(ctx);
    }

    fn done(&self) -> bool {
        self.clients.done()
    }
    fn on_server_down<S: SvcSched>(&mut self, ctx: &mut SvcCtx<S>, host: u32) {
        KvStore::on_server_down(self, ctx, host)
    }
    fn on_server_up<S: SvcSched>(&mut self, ctx: &mut SvcCtx<S>, host: u32) {
        KvStore::on_server_up(self, ctx, host)
    }
}

impl crate::metrics::report::Report for KvStore {
    fn tables(&self, _: &crate::metrics::report::ReportCtx, out: &mut Vec<crate::table::Table>) {
        out.push(super::kv_clients::table(&self.clients));
    }

    fn headline(
        &self,
        ctx: &crate::metrics::report::ReportCtx,
        h: &mut crate::metrics::report::Headline,
    ) {
        headline(h, self, ctx.net, ctx.now_ps);
    }
}
