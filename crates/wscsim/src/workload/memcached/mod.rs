//! memcached at scale (DIABLO section 4.2): servers with a memory pool under LRU eviction,
//! and clients that send the Facebook ETC workload, each request to a server chosen
//! uniformly at random, over TCP (a persistent connection per client-server pair, opened on
//! first use; or, with `requests_per_connection`, a new connection with its handshake for
//! every so many requests, closed once their responses are in) or UDP (one datagram per
//! 1,400 bytes, each way).
//!
//! Requests and responses are sized like memcached's text protocol: `get <key>\r\n`;
//! `set <key> 0 0 <bytes>\r\n<value>\r\n`; `delete <key>\r\n`; a hit returns
//! `VALUE <key> 0 <bytes>\r\n<value>\r\nEND\r\n`, a miss `END\r\n`. Clients are open loop
//! (the gap to a client's next request, an ETC inter-arrival gap times `gap_scale`, runs
//! from its last request) or closed loop (`closed_loop`: the gap runs from the last
//! response, so a client has one request out at a time).
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
use part::{Client, ClientPair, Half, Mail, Message, Part, Pending};
use pool::Pool;
use std::borrow::Cow;
use std::collections::VecDeque;

use super::etc::{Etc, Op};
use super::Ctx;

mod part;
mod pool;
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
    /// Whether each client waits for its response before the gap to its next request
    /// (closed loop, as a client thread that sends and then reads); default false: open
    /// loop, each client sends on its own schedule. TCP only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closed_loop: Option<bool>,
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
    /// Clients wait for each response before the gap to their next request.
    pub closed_loop: bool,
}

pub struct Memcached {
    pub spec: MemcachedSpec,
    etc: Etc,
    /// One part, or one per part of the hosts over split TCP (`divide`).
    parts: Vec<Part>,
    /// Each client's and server's part, and its place there.
    client_at: Vec<(u32, u32)>,
    /// The client on each host (`NONE` on servers), for closed-loop clients.
    client_of_host: Vec<u32>,
    server_at: Vec<(u32, u32)>,
    /// The part of each host (empty: one part).
    host_part: Vec<u32>,
    /// The parts' requests, gathered when the run ends (`gather`).
    requests: Vec<RequestRecord>,
    /// Counted done where the partitions met (in parts).
    done: bool,
    id: u32,
    /// TCP kept by part (a partitioned run): a server opens a pair's response connection
    /// itself when the first request arrives (`open_response`), so each client's requests
    /// act at its own host alone and its timers are host timers (run in its partition).
    /// Requests are numbered in the order the partitions ran, and put in (start, client)
    /// order when gathered.
    split: bool,
}

impl Memcached {
    pub fn new(spec: MemcachedSpec, rngs: Vec<StreamRng>, mut warm_rng: StreamRng) -> Self {
        let etc = Etc::builtin();
        let ns = spec.servers.len();
        let mut part = Part::new(0);
        part.pools = (0..ns).map(|_| Pool::new(spec.pool_bytes)).collect();
        // A warm cache: each server holds keys of its share of the key space until full.
        for (s, pool) in part.pools.iter_mut().enumerate() {
            let mut key = s as u64;
            while key < spec.key_space {
                let v = etc.value_bytes(&mut warm_rng);
                if !pool.fits(v as u64) {
                    break;
                }
                pool.set(key, v);
                key += ns as u64;
            }
        }
        part.clients = rngs
            .into_iter()
            .map(|rng| Client {
                rng,
                sent: 0,
                pair_of: vec![NONE; ns],
            })
            .collect();
        part.issuing = part.clients.len() as u32;
        let hosts = spec
            .clients
            .iter()
            .chain(&spec.servers)
            .max()
            .map_or(0, |&h| h + 1);
        let mut client_of_host = vec![NONE; hosts as usize];
        for (c, &h) in spec.clients.iter().enumerate() {
            client_of_host[h as usize] = c as u32;
        }
        Memcached {
            client_of_host,
            client_at: (0..part.clients.len() as u32).map(|c| (0, c)).collect(),
            server_at: (0..ns as u32).map(|s| (0, s)).collect(),
            etc,
            parts: vec![part],
            host_part: Vec::new(),
            requests: Vec::new(),
            done: false,
            spec,
            id: 0,
            split: false,
        }
    }

    /// Puts each client and pool in the part of its host (`host_part`), whose connection
    /// ids name their part in their low `part_bits` bits (`Tcp::conn_part_bits`).
    fn divide(&mut self, host_part: Vec<u32>, part_bits: u32) {
        let n = host_part.iter().max().map_or(1, |&p| p as usize + 1);
        let one = std::mem::take(&mut self.parts).pop().expect("one part");
        self.parts = (0..n).map(|_| Part::new(part_bits)).collect();
        for (c, client) in one.clients.into_iter().enumerate() {
            let p = host_part[self.spec.clients[c] as usize];
            let part = &mut self.parts[p as usize];
            self.client_at[c] = (p, part.clients.len() as u32);
            part.clients.push(client);
            part.issuing += 1;
        }
        for (s, pool) in one.pools.into_iter().enumerate() {
            let p = host_part[self.spec.servers[s] as usize];
            let part = &mut self.parts[p as usize];
            self.server_at[s] = (p, part.pools.len() as u32);
            part.pools.push(pool);
        }
        self.host_part = host_part;
    }

    fn part_of_host(&self, host: u32) -> u32 {
        self.host_part.get(host as usize).map_or(0, |&p| p)
    }

    /// Client `c`'s next request timer: a host timer when TCP is split (`split`); UDP's
    /// streams are numbered run-wide, so a pair's opening stays at a barrier. A closed-loop
    /// client's (TCP) is a host timer too: set where a response completes, maybe within
    /// the window, where no global event may go (unsplit TCP has every host in one part).
    fn timer(&self, c: u32) -> AppEvent {
        let (app, tag) = (self.id, c);
        if self.split || self.spec.closed_loop {
            AppEvent::host_timer(app, tag)
        } else {
            AppEvent::Timer { app, tag }
        }
    }

    /// The host of client `c` (where its timers act).
    pub fn client_host(&self, c: u32) -> u32 {
        self.spec.clients[c as usize]
    }

    /// The requests so far: every part's, in (start, client) order when TCP is split.
    pub fn requests(&self) -> Cow<'_, [RequestRecord]> {
        match &self.parts[..] {
            [one] if one.requests.is_empty() => Cow::Borrowed(&self.requests),
            [one] if self.requests.is_empty() && !self.split => Cow::Borrowed(&one.requests),
            parts => {
                let mut all = self.requests.clone();
                parts
                    .iter()
                    .for_each(|p| all.extend_from_slice(&p.requests));
                if self.split {
                    all.sort_by_key(|r| (r.start_ps, r.client));
                }
                Cow::Owned(all)
            }
        }
    }

    /// Takes the requests out (`requests`); none remain.
    pub fn take_requests(&mut self) -> Vec<RequestRecord> {
        self.gather();
        std::mem::take(&mut self.requests)
    }

    /// Moves the parts' records (and what their mail says of them) into one list.
    fn gather(&mut self) {
        self.hand_over_mail();
        for p in &mut self.parts {
            self.requests.append(&mut p.requests);
        }
        if self.split {
            self.requests.sort_by_key(|r| (r.start_ps, r.client));
        }
    }

    /// Where the partitions meet: each part's mail goes to the part it is for, in the
    /// order of the parts that sent it.
    fn hand_over_mail(&mut self) {
        for from in 0..self.parts.len() {
            let mut out = std::mem::take(&mut self.parts[from].outbox);
            for (to, m) in out.drain(..) {
                self.parts[to as usize].take(m);
            }
            self.parts[from].outbox = out;
        }
    }

    /// From a half in part `from` to the other half, in part `to`: taken now within a part,
    /// else where the partitions meet.
    fn post(&mut self, from: u32, to: u32, m: Mail) {
        if from == to {
            self.parts[to as usize].take(m);
        } else {
            self.parts[from as usize].outbox.push((to, m));
        }
    }

    fn gap_ps(&mut self, c: u32) -> TimePs {
        let (p, i) = self.client_at[c as usize];
        let rng = &mut self.parts[p as usize].clients[i as usize].rng;
        let g = self.etc.gap_us(rng) * self.spec.gap_scale;
        ((g * PS_PER_US as f64) as TimePs).max(1)
    }

    /// Client `c`'s half of its pair with server `s`, opening its connections on first
    /// use.
    fn pair(&mut self, c: u32, s: u32, ctx: &mut Ctx<impl AppSched>) -> u32 {
        let (pi, i) = self.client_at[c as usize];
        let existing = self.parts[pi as usize].clients[i as usize].pair_of[s as usize];
        if existing != NONE {
            return existing;
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
                let path = &mut HostPath::new(ctx.net, ctx.hosts, ctx.ev);
                ctx.transports.tcp.connect(path, ch, sh, self.id, self.id)
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
        let part = &mut self.parts[pi as usize];
        let p = part.add_client_pair(ClientPair {
            req,
            resp,
            ..Default::default()
        });
        if resp != NONE {
            part.conns.set(resp, Half::Client(p));
        }
        part.clients[i as usize].pair_of[s as usize] = p;
        p
    }

    /// With TCP split, the server opens its half `sp`'s response connection when the first
    /// request arrives, in its own partition's event, and links it with the request
    /// connection there (the client's part links them at the first response: the
    /// response's packets carry the request connection; its half learns the connection
    /// from the response's mail).
    fn open_response(&mut self, pi: u32, sp: u32, ctx: &mut Ctx<impl AppSched>) {
        let half = &mut self.parts[pi as usize].server_pairs[sp as usize];
        let ch = self.spec.clients[half.client as usize];
        let sh = self.spec.servers[half.server as usize];
        let resp = ctx.transports.tcp.open(sh, ch, self.id, self.id);
        ctx.transports.tcp.link_reverse_at(sh, half.req, resp);
        half.resp = resp;
    }

    /// Client `c`'s next request.
    pub fn on_timer(&mut self, c: u32, ctx: &mut Ctx<impl AppSched>) {
        let now = ctx.ev.now();
        let (pi, i) = self.client_at[c as usize];
        let rng = &mut self.parts[pi as usize].clients[i as usize].rng;
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
        let (ch, sh) = (self.spec.clients[c as usize], self.spec.servers[s as usize]);
        let part = &mut self.parts[pi as usize];
        let rec = part.requests.len() as u32;
        let r = RequestRecord::new(ch, sh, op, now, request_bytes);
        part.requests.push(r);
        let cp = &mut part.client_pairs[p as usize];
        let msg = Message {
            rec,
            end: if self.spec.udp {
                send_datagrams(ctx, cp.req, request_bytes as u64, rec) as u64
            } else {
                cp.req_end += request_bytes as u64;
                cp.req_end
            },
            got: 0,
        };
        let (first, req) = (cp.sent == 0, cp.req);
        let request = Mail::Request {
            first,
            client: c,
            server: s,
            req,
            resp: cp.resp,
            client_part: pi,
            client_pair: p,
            pending: Pending {
                msg,
                key,
                value_bytes,
                key_bytes: key_bytes as u16,
                op,
            },
        };
        self.post(pi, self.server_at[s as usize].0, request);
        if !self.spec.udp {
            let path = &mut HostPath::new(ctx.net, ctx.hosts, ctx.ev);
            ctx.transports.tcp.write(path, req, request_bytes as u64);
        }
        self.sent_one(c, s, p, ctx);
    }

    /// Client `c` sent a request on its half `p` with server `s`: the next one is due
    /// after a gap, or it is done sending; a reconnecting client's half retires after so
    /// many requests.
    fn sent_one(&mut self, c: u32, s: u32, p: u32, ctx: &mut Ctx<impl AppSched>) {
        let (pi, i) = self.client_at[c as usize];
        let part = &mut self.parts[pi as usize];
        let cp = &mut part.client_pairs[p as usize];
        cp.sent += 1;
        let client = &mut part.clients[i as usize];
        if self
            .spec
            .requests_per_connection
            .is_some_and(|n| cp.sent >= n)
        {
            // The next request to this server opens a new connection.
            cp.retiring = true;
            client.pair_of[s as usize] = NONE;
        }
        part.outstanding += 1;
        client.sent += 1;
        if client.sent < self.spec.requests_per_client {
            if !self.spec.closed_loop {
                self.next_after_gap(c, ctx);
            }
        } else {
            part.issuing -= 1;
            self.maybe_done(ctx);
        }
    }

    /// With one part, the workload is done once no client has requests to send or awaits
    /// any (in parts, that is looked at where the partitions meet: `after_window`).
    fn maybe_done(&mut self, ctx: &mut Ctx<impl AppSched>) {
        if let [part] = &mut self.parts[..] {
            if part.issuing == 0 && part.outstanding == 0 {
                *ctx.active -= 1;
                part.issuing = u32::MAX; // count down once
            }
        }
    }

    /// Where the partitions meet: the parts' mail is handed over; true (once) when every
    /// part's clients are done.
    pub fn after_window(&mut self) -> bool {
        if self.parts.len() <= 1 {
            return false;
        }
        self.hand_over_mail();
        let all_done = self
            .parts
            .iter()
            .all(|p| p.issuing == 0 && p.outstanding == 0);
        let newly = all_done && !self.done;
        self.done |= all_done;
        newly
    }

    /// The server of half `sp` (in part `pi`) has read request `q` whole: do it and answer.
    fn serve(&mut self, pi: u32, sp: u32, q: Pending, ctx: &mut Ctx<impl AppSched>) {
        let part = &mut self.parts[pi as usize];
        let half = &mut part.server_pairs[sp as usize];
        let host = self.spec.servers[half.server as usize];
        // accept4 (1.4.17) or accept + fcntl + fcntl (1.4.15), then the hand-off to a
        // worker (pipe write and read) and its epoll_ctl, the first time a TCP connection
        // is served.
        let accept_calls = match (self.spec.udp || half.accepted, self.spec.accept4) {
            (true, _) => 0,
            (false, true) => 4,
            (false, false) => 6,
        };
        ctx.hosts
            .app_request(host, half.resp, ctx.ev.now(), accept_calls);
        half.accepted = true;
        let pool = &mut part.pools[self.server_at[half.server as usize].1 as usize];
        let (hit, response_bytes) = respond(pool, &q);
        let rec = q.msg.rec;
        let end = if self.spec.udp {
            send_datagrams(ctx, half.resp, response_bytes as u64, rec) as u64
        } else {
            half.resp_end += response_bytes as u64;
            half.resp_end
        };
        let (to, client_pair, resp) = (half.client_part, half.client_pair, half.resp);
        let msg = Message { rec, end, got: 0 };
        let response = Mail::Response {
            client_pair,
            resp,
            msg,
            hit,
            response_bytes,
        };
        self.post(pi, to, response);
        if !self.spec.udp {
            let path = &mut HostPath::new(ctx.net, ctx.hosts, ctx.ev);
            ctx.transports.tcp.write(path, resp, response_bytes as u64);
        }
    }

    /// `n` requests of part `pi`'s clients were lost (UDP): they will not complete, so they
    /// are no longer awaited.
    fn forget(&mut self, pi: u32, n: u64, ctx: &mut Ctx<impl AppSched>) {
        if n > 0 {
            self.parts[pi as usize].outstanding -= n;
            self.maybe_done(ctx);
        }
    }

    /// Client `c`'s next request, after a gap from now.
    fn next_after_gap(&mut self, c: u32, ctx: &mut Ctx<impl AppSched>) {
        let next = ctx.ev.now() + self.gap_ps(c);
        ctx.ev.schedule(next, self.timer(c));
    }

    /// Request `rec` of part `pi`'s clients has its whole response (at the client's host):
    /// a closed-loop client's next request follows after a gap.
    fn complete(&mut self, pi: u32, rec: u32, ctx: &mut Ctx<impl AppSched>) {
        let part = &mut self.parts[pi as usize];
        let r = &mut part.requests[rec as usize];
        r.end_ps = ctx.ev.now();
        let host = r.client;
        part.outstanding -= 1;
        if self.spec.closed_loop {
            let c = self.client_of_host[host as usize];
            let (_, i) = self.client_at[c as usize];
            if part.clients[i as usize].sent < self.spec.requests_per_client {
                self.next_after_gap(c, ctx);
            }
        }
        self.maybe_done(ctx);
    }

    /// Prefetches the half that a delivery on connection or stream `conn` at `host` will
    /// touch.
    #[inline]
    pub fn prefetch_conn(&self, host: u32, conn: u32) {
        let part = &self.parts[self.part_of_host(host) as usize];
        match part.conns.get(conn) {
            Some(Half::Client(p)) => crate::engine::prefetch(&part.client_pairs, p as usize),
            Some(Half::Server(p)) => crate::engine::prefetch(&part.server_pairs, p as usize),
            None => {}
        }
    }

    /// TCP bytes arrived in order on connection `conn` at `host` (a request or a response
    /// stream); `total` so far.
    pub fn on_delivered(&mut self, host: u32, conn: u32, total: u64, ctx: &mut Ctx<impl AppSched>) {
        let pi = self.part_of_host(host);
        match self.parts[pi as usize].conns.get(conn) {
            Some(Half::Server(sp)) => {
                if self.parts[pi as usize].server_pairs[sp as usize].resp == NONE {
                    self.open_response(pi, sp, ctx);
                }
                loop {
                    let half = &mut self.parts[pi as usize].server_pairs[sp as usize];
                    match half.unread.front() {
                        Some(&q) if q.msg.end <= total => {
                            half.unread.pop_front();
                            self.serve(pi, sp, q, ctx);
                        }
                        _ => break,
                    }
                }
            }
            Some(Half::Client(p)) => self.responses_in(pi, p, total, ctx),
            None => unreachable!("memcached bytes on connection {conn}, which it did not open"),
        }
    }

    /// The client's half `p` (in part `pi`) has `total` response bytes in.
    fn responses_in(&mut self, pi: u32, p: u32, total: u64, ctx: &mut Ctx<impl AppSched>) {
        loop {
            let half = &mut self.parts[pi as usize].client_pairs[p as usize];
            match half.responses.front() {
                Some(&r) if r.end <= total => {
                    half.responses.pop_front();
                    self.complete(pi, r.rec, ctx);
                }
                _ => break,
            }
        }
        let part = &mut self.parts[pi as usize];
        let half = &mut part.client_pairs[p as usize];
        if half.retiring && half.responses.is_empty() {
            // The connection's last response is in: the client closes it (once), and its
            // half may serve another pair.
            half.retiring = false;
            let path = &mut HostPath::new(ctx.net, ctx.hosts, ctx.ev);
            ctx.transports.tcp.close(path, half.req);
            part.free_client_pair(p);
        }
    }

    /// The server at `host` read the end of a request stream (the client closed its
    /// connection): epoll_ctl(DEL) and close, whose FIN ends the connection; the server's
    /// half is free again.
    pub fn on_closed(&mut self, host: u32, conn: u32, ctx: &mut Ctx<impl AppSched>) {
        let pi = self.part_of_host(host);
        let part = &mut self.parts[pi as usize];
        let Some(Half::Server(sp)) = part.conns.get(conn) else {
            unreachable!("only clients close first");
        };
        let resp = part.server_pairs[sp as usize].resp;
        ctx.hosts.syscalls(host, resp, ctx.ev.now(), 1);
        let path = &mut HostPath::new(ctx.net, ctx.hosts, ctx.ev);
        ctx.transports.tcp.close(path, resp);
        part.free_server_pair(sp);
    }

    /// A UDP datagram of request or response `rec` arrived on stream `stream` at `host`.
    pub fn on_datagram(&mut self, host: u32, stream: u32, rec: u32, ctx: &mut Ctx<impl AppSched>) {
        let pi = self.part_of_host(host);
        let part = &mut self.parts[pi as usize];
        match part.conns.get(stream) {
            Some(Half::Server(sp)) => {
                let half = &mut part.server_pairs[sp as usize];
                let (lost, whole) = datagram_arrived(&mut half.unread, rec);
                // (UDP runs in one part: the client's is this one.)
                let client_part = half.client_part;
                self.forget(client_part, lost, ctx);
                if let Some(q) = whole {
                    self.serve(pi, sp, q, ctx);
                }
            }
            Some(Half::Client(p)) => {
                let half = &mut part.client_pairs[p as usize];
                let (lost, whole) = datagram_arrived(&mut half.responses, rec);
                self.forget(pi, lost, ctx);
                if whole.is_some() {
                    self.complete(pi, rec, ctx);
                }
            }
            None => unreachable!("a memcached datagram on stream {stream}, which it did not open"),
        }
    }
}

/// What a server does for request `q` with its pool: whether the key was found (for a GET
/// or DELETE) and the response's size in memcached's text protocol.
fn respond(pool: &mut Pool, q: &Pending) -> (bool, u32) {
    match q.op {
        Op::Get => match pool.get(q.key) {
            // VALUE <key> 0 <bytes>\r\n<value>\r\nEND\r\n
            Some(v) => (true, q.key_bytes as u32 + v + 6 + 3 + digits(v) + 2 + 2 + 5),
            None => (false, 5),
        },
        Op::Set => {
            pool.set(q.key, q.value_bytes);
            (false, 8)
        }
        Op::Delete => match pool.delete(q.key) {
            true => (true, 9),
            false => (false, 11),
        },
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
        let requests = self.requests();
        if !requests.is_empty() {
            headline(h, &requests);
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
        if self.split {
            let tcp = &ctx.transports.tcp;
            self.divide(tcp.host_parts().to_vec(), tcp.conn_part_bits());
        }
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
            Note::Delivered {
                host, conn, total, ..
            } => self.on_delivered(host, conn, total, ctx),
            Note::Closed { host, conn, .. } => self.on_closed(host, conn, ctx),
            Note::Datagram {
                host, stream, tag, ..
            } => self.on_datagram(host, stream, tag as u32, ctx),
            Note::Dma { .. } => {}
        }
    }

    fn finish(&mut self, _: &crate::transport::Udp, _: &mut crate::metrics::Metrics) {
        self.gather()
    }

    fn after_window(&mut self) -> bool {
        Memcached::after_window(self)
    }

    fn meets_at_windows(&self) -> bool {
        self.parts.len() > 1
    }

    /// A client's timer acts at the client's host.
    fn timer_host(&self, tag: u32) -> u32 {
        self.client_host(tag)
    }

    #[inline]
    fn prefetch_conn(&self, host: u32, conn: u32) {
        Memcached::prefetch_conn(self, host, conn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_protocol_sizes() {
        assert_eq!(digits(0), 1);
        assert_eq!(digits(9), 1);
        assert_eq!(digits(10), 2);
        assert_eq!(digits(1_048_576), 7);
    }
}
