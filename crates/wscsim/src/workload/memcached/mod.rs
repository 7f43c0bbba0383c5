//! memcached at scale (DIABLO section 4.2): servers with a memory pool under LRU eviction,
//! and clients that send the Facebook ETC workload, each request to a server chosen
//! uniformly at random, over TCP (a persistent connection per client-server pair, opened on
//! first use; or, with `requests_per_connection`, a new connection with its handshake for
//! every so many requests, closed once their responses are in) or UDP (one datagram per
//! 1,400 bytes, each way).
//!
//! Requests and responses are sized like memcached's text protocol: `get <key>\r\n`;
//! `set <key> 0 0 <bytes>\r\n<value>\r\n`; `delete <key>\r\n`; a hit returns
//! `VALUE <key> 0 <bytes>\r\n<value>\r\nEND\r\n`, a miss `END\r\n`. Clients are open loop:
//! the gap to a client's next request is an ETC inter-arrival gap times `gap_scale`.
//!
//! On hosts that cost time, each request costs the server `app_request` instructions, and
//! the first request of a TCP connection also pays for accepting it as memcached's code
//! does: the listening thread's accept, fcntl(F_GETFL) and fcntl(F_SETFL, O_NONBLOCK) in
//! 1.4.15, or one accept4(SOCK_NONBLOCK) in 1.4.17; then, in both, the write to the
//! worker's notify pipe, the worker's read of it and its epoll_ctl(ADD): six system calls
//! against four. A reconnecting client pays socket and connect to open and close to end a
//! connection; the server, reading the end of the stream, pays epoll_ctl(DEL) and close.
//!
//! Simplified: keys are integers drawn uniformly from `key_space` and live on server
//! key mod servers; each server's pool is filled before the run with its keys at ETC value
//! sizes (a warm cache) as far as it holds them, so GETs mostly hit;
//! the pool charges the value bytes only (no slab classes or item headers); a lost UDP
//! datagram loses its request (memcached's UDP protocol has no retransmission), which then
//! has no latency. The client does not wait on its own CPU for the request bookkeeping.

use super::{AppEvent, AppSched};
use crate::transport::{HostPath, Note};
use std::collections::VecDeque;

use super::etc::{Etc, Op};
use super::Ctx;

mod results;
pub use results::RequestRecord;
pub use results::{headline, requests_table, take_requests_table, PairSwitches, HOP_CLASSES};

/// `[workload]` parameters of kind "memcached" (defaults are filled in by
/// `resolve`, beside it).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Hosts that run a memcached server (default: `server_count` spread evenly).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub servers: Option<Vec<i64>>,
    /// How many hosts run a memcached server, spread evenly over the hosts (when `servers`
    /// does not list them); the rest are clients.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_count: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests_per_client: Option<i64>,
    /// Multiplier on the ETC inter-arrival gaps (larger: lighter load).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gap_scale: Option<f64>,
    /// "1.4.15" or "1.4.17" (accept4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// TCP: requests a client sends on one connection before it opens another (with a
    /// handshake) and closes this one; absent: one persistent connection per pair.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests_per_connection: Option<i64>,
    /// Each server's memory pool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<crate::units::Bytes>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_space: Option<i64>,
}
use crate::engine::{StreamRng, TimePs, NEVER, PS_PER_US};
use crate::net::NONE;
use rand::Rng;

pub mod resolve;

/// Payload bytes of one memcached UDP datagram (frame header included).
const UDP_CHUNK_BYTES: u64 = 1400;
const UDP_FRAME_HEADER_BYTES: u64 = 8;

#[derive(Clone, Debug)]
pub struct MemcachedSpec {
    pub servers: Vec<u32>,
    pub clients: Vec<u32>,
    pub requests_per_client: u32,
    pub gap_scale: f64,
    pub udp: bool,
    /// memcached 1.4.17 and later accept new connections with accept4.
    pub accept4: bool,
    /// TCP: requests per connection before the client reconnects (None: persistent).
    pub requests_per_connection: Option<u32>,
    pub pool_bytes: u64,
    pub key_space: u64,
}

#[derive(Clone, Copy, Debug)]
struct Message {
    rec: u32,
    /// TCP: cumulative bytes on the connection once this message is in.
    /// UDP: datagrams it was sent in.
    end: u64,
    /// UDP: datagrams arrived so far.
    got: u16,
}

impl Message {
    /// Counts one more datagram (UDP); true when all have arrived.
    fn arrive(&mut self) -> bool {
        self.got += 1;
        self.got as u64 == self.end
    }
}

impl AsMut<Message> for Message {
    fn as_mut(&mut self) -> &mut Message {
        self
    }
}

/// A request on its way to or waiting at the server: what the server needs to do it.
/// (Kept per pair while in flight, so the per-request record stays small.)
#[derive(Clone, Copy, Debug)]
struct Pending {
    msg: Message,
    key: u64,
    value_bytes: u32,
    key_bytes: u16,
}

impl AsMut<Message> for Pending {
    fn as_mut(&mut self) -> &mut Message {
        &mut self.msg
    }
}

/// A client-server pair's connections (TCP: two one-way connections; UDP: two streams).
#[derive(Clone, Debug, Default)]
struct Pair {
    client: u32,
    server: u32,
    req: u32,
    resp: u32,
    req_end: u64,
    resp_end: u64,
    /// Requests sent and not yet done by the server, in order. Within a pair nothing is
    /// reordered, so under UDP a request whose successor's datagram arrives first was lost.
    unread: VecDeque<Pending>,
    /// Responses on their way, in order.
    responses: VecDeque<Message>,
    accepted: bool,
    /// Requests sent on this connection.
    sent: u32,
    /// No more requests go on this connection: the client closes it once the responses
    /// are in (reconnecting clients), and the flag falls.
    retiring: bool,
}

/// A server's memory pool: value sizes of the keys it holds, evicted least recently used.
struct Pool {
    capacity_bytes: u64,
    used_bytes: u64,
    lru: lru::LruCache<u64, u32>,
}

impl Pool {
    fn new(capacity_bytes: u64) -> Self {
        Pool {
            capacity_bytes,
            used_bytes: 0,
            lru: lru::LruCache::unbounded(),
        }
    }

    fn get(&mut self, key: u64) -> Option<u32> {
        self.lru.get(&key).copied()
    }

    fn set(&mut self, key: u64, bytes: u32) {
        if let Some(old) = self.lru.put(key, bytes) {
            self.used_bytes -= old as u64;
        }
        self.used_bytes += bytes as u64;
        while self.used_bytes > self.capacity_bytes {
            let Some((_, b)) = self.lru.pop_lru() else {
                break;
            };
            self.used_bytes -= b as u64;
        }
    }

    fn delete(&mut self, key: u64) -> bool {
        match self.lru.pop(&key) {
            Some(b) => {
                self.used_bytes -= b as u64;
                true
            }
            None => false,
        }
    }
}

pub struct Memcached {
    pub spec: MemcachedSpec,
    etc: Etc,
    /// One random stream per client (server choice, operation, sizes, gaps).
    rngs: Vec<StreamRng>,
    sent: Vec<u32>,
    pools: Vec<Pool>,
    pairs: Vec<Pair>,
    /// Pair index by client * servers + server (NONE until first used).
    pair_of: Vec<u32>,
    /// Pair index by TCP connection or UDP stream id.
    pair_of_conn: Vec<u32>,
    /// Pairs whose connections were closed, reused for new ones (reconnecting clients),
    /// smallest first.
    free_pairs: std::collections::BinaryHeap<std::cmp::Reverse<u32>>,
    pub requests: Vec<RequestRecord>,
    outstanding: u64,
    issuing: u32,
    id: u32,
    /// TCP kept by part (a partitioned run): a server opens a pair's response connection
    /// itself when the first request arrives (`open_response`), so each client's requests
    /// act at its own host alone and its timers are host timers (run in its partition).
    /// Requests are then numbered in the order the partitions ran, and put in (start,
    /// client) order when the run ends (`finish`).
    split: bool,
}

fn slot(v: &mut Vec<u32>, i: u32) -> &mut u32 {
    if v.len() <= i as usize {
        v.resize(i as usize + 1, NONE);
    }
    &mut v[i as usize]
}

impl Memcached {
    pub fn new(spec: MemcachedSpec, rngs: Vec<StreamRng>, mut warm_rng: StreamRng) -> Self {
        let etc = Etc::builtin();
        let mut pools: Vec<Pool> = spec
            .servers
            .iter()
            .map(|_| Pool::new(spec.pool_bytes))
            .collect();
        // A warm cache: each server holds keys of its share of the key space until full.
        let n = spec.servers.len() as u64;
        for (s, pool) in pools.iter_mut().enumerate() {
            let mut key = s as u64;
            while key < spec.key_space {
                let v = etc.value_bytes(&mut warm_rng);
                if pool.used_bytes + v as u64 > pool.capacity_bytes {
                    break;
                }
                pool.set(key, v);
                key += n;
            }
        }
        let (nc, ns) = (spec.clients.len(), spec.servers.len());
        Memcached {
            etc,
            rngs,
            sent: vec![0; nc],
            pools,
            pairs: Vec::new(),
            pair_of: vec![NONE; nc * ns],
            pair_of_conn: Vec::new(),
            free_pairs: std::collections::BinaryHeap::new(),
            requests: Vec::new(),
            outstanding: 0,
            issuing: nc as u32,
            spec,
            id: 0,
            split: false,
        }
    }

    /// Client `c`'s next request timer: a host timer when TCP is split (`split`); UDP's
    /// streams are numbered run-wide, so a pair's opening stays at a barrier.
    fn timer(&self, c: u32) -> AppEvent {
        let (app, tag) = (self.id, c);
        if self.split {
            AppEvent::host_timer(app, tag)
        } else {
            AppEvent::Timer { app, tag }
        }
    }

    /// The host of client `c` (where its timers act).
    pub fn client_host(&self, c: u32) -> u32 {
        self.spec.clients[c as usize]
    }

    /// At the end of a run whose requests were numbered in the order partitions ran
    /// (`split`): puts them in (start, client) order, each client's in its own order.
    pub fn finish(&mut self) {
        if self.split {
            self.requests.sort_by_key(|r| (r.start_ps, r.client));
        }
    }

    fn gap_ps(&mut self, c: u32) -> TimePs {
        let g = self.etc.gap_us(&mut self.rngs[c as usize]) * self.spec.gap_scale;
        ((g * PS_PER_US as f64) as TimePs).max(1)
    }

    /// The pair of client `c` and server `s`, opening its connections on first use.
    fn pair(&mut self, c: u32, s: u32, ctx: &mut Ctx<impl AppSched>) -> u32 {
        let idx = (c as usize) * self.spec.servers.len() + s as usize;
        if self.pair_of[idx] != NONE {
            return self.pair_of[idx];
        }
        let (ch, sh) = (self.spec.clients[c as usize], self.spec.servers[s as usize]);
        let (req, resp) = if self.spec.udp {
            (
                ctx.transports.udp.open(ch, sh, self.id),
                ctx.transports.udp.open(sh, ch, self.id),
            )
        } else {
            let req = if self.spec.requests_per_connection.is_some() {
                // socket() and connect(), then the handshake; the request waits for it.
                ctx.hosts.syscalls(ch, ch, ctx.ev.now(), 2);
                ctx.transports.tcp.connect(
                    &mut HostPath::new(ctx.net, ctx.hosts, ctx.ev),
                    ch,
                    sh,
                    self.id,
                    self.id,
                )
            } else {
                ctx.transports.tcp.open(ch, sh, self.id, self.id)
            };
            let resp = if self.split {
                NONE // the server opens it (`open_response`)
            } else {
                let resp = ctx.transports.tcp.open(sh, ch, self.id, self.id);
                // One bidirectional connection: responses carry the ACKs of requests.
                ctx.transports.tcp.link_reverse(req, resp);
                resp
            };
            (req, resp)
        };
        let fresh = Pair {
            client: c,
            server: s,
            req,
            resp,
            ..Default::default()
        };
        let p = match self.free_pairs.pop().map(|std::cmp::Reverse(p)| p) {
            Some(p) => {
                self.pairs[p as usize] = fresh;
                p
            }
            None => {
                self.pairs.push(fresh);
                self.pairs.len() as u32 - 1
            }
        };
        *slot(&mut self.pair_of_conn, req) = p;
        if resp != NONE {
            *slot(&mut self.pair_of_conn, resp) = p;
        }
        self.pair_of[idx] = p;
        p
    }

    /// With TCP split, the server opens pair `p`'s response connection when the first
    /// request arrives, in its own partition's event, and links it with the request
    /// connection there (the client's part links them at the first response: the
    /// response's packets carry the request connection).
    fn open_response(&mut self, p: u32, ctx: &mut Ctx<impl AppSched>) {
        let pair = &mut self.pairs[p as usize];
        let ch = self.spec.clients[pair.client as usize];
        let sh = self.spec.servers[pair.server as usize];
        let resp = ctx.transports.tcp.open(sh, ch, self.id, self.id);
        ctx.transports.tcp.link_reverse_at(sh, pair.req, resp);
        pair.resp = resp;
        *slot(&mut self.pair_of_conn, resp) = p;
    }

    /// Client `c`'s next request.
    pub fn on_timer(&mut self, c: u32, ctx: &mut Ctx<impl AppSched>) {
        let now = ctx.ev.now();
        let rng = &mut self.rngs[c as usize];
        // The key picks its server (key mod servers), as a client library's hashing does; a
        // uniform key makes the server uniform too.
        let key = rng.random_range(0..self.spec.key_space);
        let s = (key % self.spec.servers.len() as u64) as u32;
        let op = self.etc.op(rng);
        let key_bytes = self.etc.key_bytes(rng);
        let value_bytes = if op == Op::Set {
            self.etc.value_bytes(rng)
        } else {
            0
        };
        let request_bytes = match op {
            Op::Get => key_bytes + 6,
            Op::Set => key_bytes + value_bytes + digits(value_bytes) + 13,
            Op::Delete => key_bytes + 9,
        };
        let p = self.pair(c, s, ctx);
        let rec = self.requests.len() as u32;
        let pair = &mut self.pairs[p as usize];
        let r = RequestRecord::new(
            self.spec.clients[c as usize],
            self.spec.servers[s as usize],
            op,
            now,
            request_bytes,
        );
        self.requests.push(r);
        let mut pending = Pending {
            msg: Message {
                rec,
                end: 0,
                got: 0,
            },
            key,
            value_bytes,
            key_bytes: key_bytes as u16,
        };
        if self.spec.udp {
            pending.msg.end = send_datagrams(ctx, pair.req, request_bytes as u64, rec) as u64;
            pair.unread.push_back(pending);
        } else {
            pair.req_end += request_bytes as u64;
            pending.msg.end = pair.req_end;
            pair.unread.push_back(pending);
            ctx.transports.tcp.write(
                &mut HostPath::new(ctx.net, ctx.hosts, ctx.ev),
                pair.req,
                request_bytes as u64,
            );
        }
        pair.sent += 1;
        if self
            .spec
            .requests_per_connection
            .is_some_and(|n| pair.sent >= n)
        {
            // The next request to this server opens a new connection.
            pair.retiring = true;
            self.pair_of[c as usize * self.spec.servers.len() + s as usize] = NONE;
        }
        self.outstanding += 1;
        self.sent[c as usize] += 1;
        if self.sent[c as usize] < self.spec.requests_per_client {
            let next = now + self.gap_ps(c);
            ctx.ev.schedule(next, self.timer(c));
        } else {
            self.issuing -= 1;
            self.maybe_done(ctx);
        }
    }

    fn maybe_done(&mut self, ctx: &mut Ctx<impl AppSched>) {
        if self.issuing == 0 && self.outstanding == 0 {
            *ctx.active -= 1;
            self.issuing = u32::MAX; // count down once
        }
    }

    /// The server of pair `p` has read request `q` whole: do it and answer.
    fn serve(&mut self, p: u32, q: Pending, ctx: &mut Ctx<impl AppSched>) {
        let rec = q.msg.rec;
        let pair = &mut self.pairs[p as usize];
        let host = self.spec.servers[pair.server as usize];
        // accept4 (1.4.17) or accept + fcntl + fcntl (1.4.15), then the hand-off to a
        // worker (pipe write and read) and its epoll_ctl, the first time a TCP connection
        // is served.
        let accept_calls = match (self.spec.udp || pair.accepted, self.spec.accept4) {
            (true, _) => 0,
            (false, true) => 4,
            (false, false) => 6,
        };
        ctx.hosts
            .app_request(host, pair.resp, ctx.ev.now(), accept_calls);
        pair.accepted = true;
        let r = &mut self.requests[rec as usize];
        let pool = &mut self.pools[pair.server as usize];
        let response = match r.op() {
            Op::Get => match pool.get(q.key) {
                Some(v) => {
                    r.set_hit(true);
                    // VALUE <key> 0 <bytes>\r\n<value>\r\nEND\r\n
                    q.key_bytes as u32 + v + 6 + 3 + digits(v) + 2 + 2 + 5
                }
                None => 5,
            },
            Op::Set => {
                pool.set(q.key, q.value_bytes);
                8
            }
            Op::Delete => {
                r.set_hit(pool.delete(q.key));
                if r.hit() {
                    9
                } else {
                    11
                }
            }
        };
        r.response_bytes = response;
        if self.spec.udp {
            let n = send_datagrams(ctx, pair.resp, response as u64, rec);
            pair.responses.push_back(Message {
                rec,
                end: n as u64,
                got: 0,
            });
        } else {
            pair.resp_end += response as u64;
            pair.responses.push_back(Message {
                rec,
                end: pair.resp_end,
                got: 0,
            });
            ctx.transports.tcp.write(
                &mut HostPath::new(ctx.net, ctx.hosts, ctx.ev),
                pair.resp,
                response as u64,
            );
        }
    }

    /// `n` requests were lost (UDP): they will not complete, so they are no longer awaited.
    fn forget(&mut self, n: u64, ctx: &mut Ctx<impl AppSched>) {
        if n > 0 {
            self.outstanding -= n;
            self.maybe_done(ctx);
        }
    }

    fn complete(&mut self, rec: u32, ctx: &mut Ctx<impl AppSched>) {
        self.requests[rec as usize].end_ps = ctx.ev.now();
        self.outstanding -= 1;
        self.maybe_done(ctx);
    }

    /// TCP bytes arrived in order on connection `conn` (a request or a response stream).
    /// Prefetches the pair that a delivery on connection or stream `conn` will touch.
    #[inline]
    pub fn prefetch_conn(&self, conn: u32) {
        if let Some(&p) = self.pair_of_conn.get(conn as usize) {
            crate::engine::prefetch(&self.pairs, p as usize);
        }
    }

    pub fn on_delivered(&mut self, conn: u32, total: u64, ctx: &mut Ctx<impl AppSched>) {
        let p = self.pair_of_conn[conn as usize];
        if conn == self.pairs[p as usize].req {
            if self.pairs[p as usize].resp == NONE {
                self.open_response(p, ctx);
            }
            while let Some(&q) = self.pairs[p as usize].unread.front() {
                if q.msg.end > total {
                    break;
                }
                self.pairs[p as usize].unread.pop_front();
                self.serve(p, q, ctx);
            }
        } else {
            while let Some(&r) = self.pairs[p as usize].responses.front() {
                if r.end > total {
                    break;
                }
                self.pairs[p as usize].responses.pop_front();
                self.complete(r.rec, ctx);
            }
            let pair = &mut self.pairs[p as usize];
            if pair.retiring && pair.unread.is_empty() && pair.responses.is_empty() {
                // The connection's last response is in: the client closes it (once).
                pair.retiring = false;
                ctx.transports
                    .tcp
                    .close(&mut HostPath::new(ctx.net, ctx.hosts, ctx.ev), pair.req);
            }
        }
    }

    /// The server read the end of a request stream (the client closed its connection):
    /// epoll_ctl(DEL) and close, whose FIN ends the connection; the pair is free again.
    pub fn on_closed(&mut self, conn: u32, ctx: &mut Ctx<impl AppSched>) {
        let p = self.pair_of_conn[conn as usize];
        let pair = &self.pairs[p as usize];
        debug_assert_eq!(conn, pair.req, "only clients close first");
        let host = self.spec.servers[pair.server as usize];
        ctx.hosts.syscalls(host, pair.resp, ctx.ev.now(), 1);
        ctx.transports
            .tcp
            .close(&mut HostPath::new(ctx.net, ctx.hosts, ctx.ev), pair.resp);
        self.free_pairs.push(std::cmp::Reverse(p));
    }

    /// A UDP datagram of request or response `rec` arrived on stream `stream`.
    pub fn on_datagram(&mut self, stream: u32, rec: u32, ctx: &mut Ctx<impl AppSched>) {
        let p = self.pair_of_conn[stream as usize];
        let pair = &mut self.pairs[p as usize];
        if stream == pair.req {
            let (lost, whole) = datagram_arrived(&mut pair.unread, rec);
            self.forget(lost, ctx);
            if let Some(q) = whole {
                self.serve(p, q, ctx);
            }
        } else {
            let (lost, whole) = datagram_arrived(&mut pair.responses, rec);
            self.forget(lost, ctx);
            if whole.is_some() {
                self.complete(rec, ctx);
            }
        }
    }
}

/// A datagram of `rec` arrived on a pair's stream whose messages wait in `q` in send order.
/// Messages ahead of it that are still incomplete lost a datagram (nothing is reordered
/// within a pair): they are dropped and counted. Returns that count and the message if this
/// datagram completed it.
fn datagram_arrived<T: AsMut<Message>>(q: &mut VecDeque<T>, rec: u32) -> (u64, Option<T>) {
    let mut lost = 0;
    while q.front_mut().is_some_and(|m| m.as_mut().rec != rec) {
        q.pop_front();
        lost += 1;
    }
    let whole = q.front_mut().is_some_and(|m| m.as_mut().arrive());
    (lost, if whole { q.pop_front() } else { None })
}

/// Sends `bytes` of memcached UDP payload as datagrams of at most 1,400 bytes (each with
/// the 8-byte frame header), tagged with the request; returns how many.
fn send_datagrams(ctx: &mut Ctx<impl AppSched>, stream: u32, bytes: u64, rec: u32) -> u16 {
    let n = bytes
        .div_ceil(UDP_CHUNK_BYTES - UDP_FRAME_HEADER_BYTES)
        .max(1);
    let mut left = bytes;
    for _ in 0..n {
        let chunk = left.min(UDP_CHUNK_BYTES - UDP_FRAME_HEADER_BYTES);
        left -= chunk;
        ctx.transports.udp.send_tagged(
            ctx.net,
            ctx.hosts,
            ctx.ev,
            stream,
            (chunk + UDP_FRAME_HEADER_BYTES) as u32,
            rec as u64,
        );
    }
    n.min(u16::MAX as u64) as u16
}

fn digits(v: u32) -> u32 {
    v.checked_ilog10().unwrap_or(0) + 1
}

/// Its headline figures (its requests table is built apart: it takes the records).
impl crate::metrics::report::Report for Memcached {
    fn headline(
        &self,
        _ctx: &crate::metrics::report::ReportCtx,
        h: &mut crate::metrics::report::Headline,
    ) {
        if !self.requests.is_empty() {
            headline(h, &self.requests);
        }
    }
}

impl crate::workload::Application for Memcached {
    fn ends_by_itself(&self) -> bool {
        true
    }

    fn start<S: AppSched>(&mut self, id: u32, ctx: &mut Ctx<S>) {
        self.id = id;
        self.split = !self.spec.udp && ctx.transports.tcp.is_split();
        *ctx.active += 1;
        for c in 0..self.spec.clients.len() as u32 {
            let first = self.gap_ps(c);
            ctx.ev.schedule(first, self.timer(c));
        }
    }

    #[inline]
    fn on_timer<S: AppSched>(&mut self, _id: u32, tag: u32, ctx: &mut Ctx<S>) {
        Memcached::on_timer(self, tag, ctx)
    }

    #[inline]
    fn on_note<S: AppSched>(&mut self, note: Note, ctx: &mut Ctx<S>) {
        match note {
            Note::Delivered { conn, total, .. } => self.on_delivered(conn, total, ctx),
            Note::Closed { conn, .. } => self.on_closed(conn, ctx),
            Note::Datagram { stream, tag, .. } => self.on_datagram(stream, tag as u32, ctx),
            Note::Dma { .. } => {}
        }
    }

    fn finish(&mut self, _: &crate::transport::Udp, _: &mut crate::metrics::Metrics) {
        Memcached::finish(self)
    }

    /// A client's timer acts at the client's host.
    fn timer_host(&self, tag: u32) -> u32 {
        self.client_host(tag)
    }

    #[inline]
    fn prefetch_conn(&self, conn: u32) {
        Memcached::prefetch_conn(self, conn)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn nth_smallest_matches_a_sort() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        let values: Vec<u64> = (0..20_000)
            .map(|i| match i % 3 {
                0 => rng.random_range(0..100),
                1 => rng.random_range(0..5_000_000),
                _ => rng.random_range(0..u64::MAX),
            })
            .collect();
        let mut sorted = values.clone();
        sorted.sort_unstable();
        let ranks = [0, 1, 63, 64, 9_999, 19_800, 19_998, 19_999];
        assert_eq!(
            super::results::nth_smallest(|| values.iter().copied(), &ranks),
            ranks.iter().map(|&r| sorted[r]).collect::<Vec<_>>()
        );
        let mut last = 0;
        for x in (0..1_000_000u64).chain([u64::MAX / 3, u64::MAX - 1, u64::MAX]) {
            let b = super::results::log_bucket(x);
            assert!(b >= last && b < super::results::LOG_BUCKETS);
            last = b;
        }
    }

    #[test]
    fn a_record_keeps_its_kind_hit_and_size_in_32_bytes() {
        use super::{Op, RequestRecord};
        assert_eq!(std::mem::size_of::<RequestRecord>(), 32);
        for op in [Op::Get, Op::Set, Op::Delete] {
            let mut r = RequestRecord::new(1, 2, op, 3, (1 << 29) - 1);
            assert_eq!(
                (r.op(), r.hit(), r.request_bytes()),
                (op, false, (1 << 29) - 1)
            );
            r.set_hit(true);
            assert_eq!(
                (r.op(), r.hit(), r.request_bytes()),
                (op, true, (1 << 29) - 1)
            );
            r.set_hit(false);
            assert_eq!((r.op(), r.hit()), (op, false));
        }
    }

    use super::*;

    #[test]
    fn pool_evicts_least_recently_used_by_bytes() {
        let mut p = Pool::new(100);
        p.set(1, 40);
        p.set(2, 40);
        assert_eq!(p.get(1), Some(40)); // 1 is now the most recent
        p.set(3, 40); // 120 > 100: evict 2
        assert_eq!(p.get(2), None);
        assert_eq!(p.get(1), Some(40));
        assert_eq!(p.used_bytes, 80);
        p.set(1, 10); // replace: 50 bytes
        assert_eq!(p.used_bytes, 50);
        assert!(p.delete(3));
        assert!(!p.delete(3));
        assert_eq!(p.used_bytes, 10);
    }

    #[test]
    fn text_protocol_sizes() {
        assert_eq!(digits(0), 1);
        assert_eq!(digits(9), 1);
        assert_eq!(digits(10), 2);
        assert_eq!(digits(1_048_576), 7);
    }
}
