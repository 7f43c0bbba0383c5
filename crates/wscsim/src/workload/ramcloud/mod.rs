//! RAMCloud's ClusterPerf "basic" benchmark as the RAMCloud-on-Atom slides ran it: one
//! client reads (or writes) objects of one size from one master, one request outstanding,
//! 30-byte keys, replication off unless asked for.
//!
//! Two transports:
//! - **fast**: RAMCloud's own request/response transport (FastTransport, the one the slides
//!   ran over the DPDK driver): a message is cut into fragments that fit the MTU, each with
//!   a 26-byte header; a sender keeps at most `window` fragments unacknowledged and the
//!   receiver acknowledges every `ack_after` fragments (RAMCloud's WINDOW_SIZE 10 and
//!   REQ_ACK_AFTER 5); a complete message needs no acknowledgement (the response, or the
//!   next request, is one). Fragments ride as UDP datagrams, so each carries the 28 bytes of
//!   an IP and UDP header where the DPDK driver has its own framing of about that size.
//! - **tcp**: RAMCloud's TCP transport over the kernel stack: a connection each way.
//!
//! The master's work per request is the host's `app_request` (`host.costs`), plus over
//! the fast transport `rpc_instructions` for RAMCloud's RPC layer; a write adds
//! `write_instructions` and `write_instructions_per_byte` of the object (the log append,
//! its checksum and the hash-table update: the "slow write" the slides name). With `replicas` > 0 the master sends each written object to that many backups
//! (the hosts after it) and answers when all have acknowledged; each backup's work is one
//! `app_request`.
//!
//! Simplified: no retransmission (a lost fragment leaves its request unfinished, counted in
//! `rpcs_unfinished`; one request at a time on a chassis switch loses nothing); no
//! coordinator, no segment cleaning, no log-structured memory, no backup disk writes.

use super::{AppSched, Ctx};
use crate::engine::{TimePs, NEVER};
use crate::metrics::{Column, Table};
use crate::transport::{HostPath, Note};

pub mod resolve;

/// `[workload]` parameters of kind "ramcloud" (defaults are filled in by `resolve`, beside it).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// "read" (default) or "write".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op: Option<String>,
    /// Bytes of each object (default 100 B).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<crate::units::Bytes>,
    /// Requests, one after another (default 1,000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<i64>,
    /// The client host (default 0) and the master (default 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub master: Option<i64>,
    /// "fast" (RAMCloud's own transport, default) or "tcp".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// Key bytes (default 30: ClusterPerf's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<crate::units::Bytes>,
    /// fast: fragments a sender may have unacknowledged (default 10) and fragments after
    /// which a receiver acknowledges (default 5).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ack_after: Option<i64>,
    /// fast: instructions of RAMCloud's RPC layer at the master per request (its dispatch
    /// thread handing the request to a worker and the reply back), beyond the host's
    /// `app_request` (default fitted: docs/ramcloud.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rpc_instructions: Option<f64>,
    /// Instructions a write costs the master beyond a read's, and per byte of the object
    /// (the log append and its checksum; defaults fitted: docs/ramcloud.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_instructions: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_instructions_per_byte: Option<f64>,
    /// Backups each written object goes to before the master answers (default 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i64>,
}

/// The benchmark as resolved.
#[derive(Clone, Debug)]
pub struct RamcloudSpec {
    pub write: bool,
    pub size_bytes: u64,
    pub count: u32,
    pub client: u32,
    pub master: u32,
    pub backups: Vec<u32>,
    pub tcp: bool,
    pub key_bytes: u64,
    pub window: u32,
    pub ack_after: u32,
    pub rpc_instructions: f64,
    pub write_instructions: f64,
    pub write_instructions_per_byte: f64,
}

/// FastTransport's header on every fragment and acknowledgement.
pub const FAST_HEADER_BYTES: u32 = 26;
/// A write's answer: status and the object's new version.
const WRITE_REPLY_BYTES: u64 = 16;
const ACK_BIT: u64 = 1 << 63;

/// One request's times.
#[derive(Clone, Copy, Debug)]
pub struct Rpc {
    pub start_ps: TimePs,
    pub end_ps: TimePs,
}

/// A fast-transport channel: one way between two hosts, one message at a time.
#[derive(Clone, Debug, Default)]
struct Channel {
    /// The receiving host.
    to: u32,
    /// UDP stream from `from` to `to` (data), and the reverse one (acknowledgements).
    data: u32,
    acks: u32,
    frags: u32,
    last_frag_bytes: u32,
    sent: u32,
    acked: u32,
    received: u32,
}

pub struct Ramcloud {
    pub spec: RamcloudSpec,
    pub rpcs: Vec<Rpc>,
    /// fast: channel 0 client to master, 1 master to client, then per backup i 2 + 2i (to
    /// it) and 3 + 2i (back).
    channels: Vec<Channel>,
    frag_bytes: u32,
    /// tcp: request and response connections, and bytes each must have carried.
    req_conn: u32,
    resp_conn: u32,
    backups_pending: usize,
}

impl Ramcloud {
    pub fn new(spec: RamcloudSpec) -> Ramcloud {
        Ramcloud {
            spec,
            rpcs: Vec::new(),
            channels: Vec::new(),
            frag_bytes: 0,
            req_conn: 0,
            resp_conn: 0,
            backups_pending: 0,
        }
    }

    fn request_bytes(&self) -> u64 {
        self.spec.key_bytes
            + if self.spec.write {
                self.spec.size_bytes
            } else {
                0
            }
    }

    fn response_bytes(&self) -> u64 {
        if self.spec.write {
            WRITE_REPLY_BYTES
        } else {
            self.spec.size_bytes
        }
    }

    /// The client sends its next request.
    fn issue(&mut self, ctx: &mut Ctx<impl AppSched>) {
        self.rpcs.push(Rpc {
            start_ps: ctx.ev.now(),
            end_ps: NEVER,
        });
        let bytes = self.request_bytes();
        if self.spec.tcp {
            ctx.transports.tcp.write(
                &mut HostPath::new(ctx.net, ctx.hosts, ctx.ev),
                self.req_conn,
                bytes,
            );
        } else {
            self.send_message(0, bytes, ctx);
        }
    }

    /// fast: starts a message of `bytes` on channel `c`.
    fn send_message(&mut self, c: usize, bytes: u64, ctx: &mut Ctx<impl AppSched>) {
        let f = u64::from(self.frag_bytes);
        let ch = &mut self.channels[c];
        ch.frags = bytes.div_ceil(f).max(1) as u32;
        ch.last_frag_bytes = (bytes - (u64::from(ch.frags) - 1) * f) as u32;
        ch.sent = 0;
        ch.acked = 0;
        ch.received = 0;
        self.pump(c, ctx);
    }

    /// fast: sends what the window allows on channel `c`.
    fn pump(&mut self, c: usize, ctx: &mut Ctx<impl AppSched>) {
        let window = self.spec.window;
        let ch = &mut self.channels[c];
        while ch.sent < ch.frags && ch.sent < ch.acked + window {
            let data = if ch.sent + 1 == ch.frags {
                ch.last_frag_bytes
            } else {
                self.frag_bytes
            };
            let tag = (c as u64) << 48 | u64::from(ch.sent);
            ch.sent += 1;
            let payload = data + FAST_HEADER_BYTES;
            ctx.transports
                .udp
                .send_tagged(ctx.net, ctx.hosts, ctx.ev, ch.data, payload, tag);
        }
    }

    /// fast: a fragment or an acknowledgement arrived.
    pub fn on_datagram(&mut self, tag: u64, ctx: &mut Ctx<impl AppSched>) {
        let c = ((tag & !ACK_BIT) >> 48) as usize;
        if c >= self.channels.len() {
            return;
        }
        if tag & ACK_BIT != 0 {
            let ch = &mut self.channels[c];
            ch.acked = ch.acked.max((tag & 0xFFFF_FFFF) as u32);
            self.pump(c, ctx);
            return;
        }
        let ack_after = self.spec.ack_after;
        let ch = &mut self.channels[c];
        ch.received += 1;
        if ch.received == ch.frags {
            self.on_message(c, ctx);
        } else if ch.received.is_multiple_of(ack_after) {
            let tag = ACK_BIT | (c as u64) << 48 | u64::from(ch.received);
            let stream = ch.acks;
            ctx.transports.udp.send_tagged(
                ctx.net,
                ctx.hosts,
                ctx.ev,
                stream,
                FAST_HEADER_BYTES,
                tag,
            );
        }
    }

    /// fast: a whole message arrived on channel `c`.
    fn on_message(&mut self, c: usize, ctx: &mut Ctx<impl AppSched>) {
        match c {
            0 => self.serve(ctx),
            1 => self.answered(ctx),
            _ if c.is_multiple_of(2) => {
                // A backup holds the object: its work, then its acknowledgement.
                let backup = self.channels[c].to;
                ctx.hosts.app_request(backup, backup, ctx.ev.now(), 0);
                self.send_message(c + 1, WRITE_REPLY_BYTES, ctx);
            }
            _ => {
                self.backups_pending -= 1;
                if self.backups_pending == 0 {
                    let bytes = self.response_bytes();
                    self.send_message(1, bytes, ctx);
                }
            }
        }
    }

    /// The master has a whole request: its work, then replication or the answer.
    fn serve(&mut self, ctx: &mut Ctx<impl AppSched>) {
        let (m, now) = (self.spec.master, ctx.ev.now());
        ctx.hosts.app_request(m, m, now, 0);
        let s = &self.spec;
        let mut instructions = if s.tcp { 0.0 } else { s.rpc_instructions };
        if s.write {
            instructions +=
                s.write_instructions + s.write_instructions_per_byte * s.size_bytes as f64;
        }
        if ctx.hosts.costed && instructions > 0.0 {
            let core = ctx.hosts.core_of(m);
            let cost = ctx.hosts.spec.ps(instructions);
            ctx.hosts.charge(m, core, now, cost);
        }
        if self.spec.write && !self.spec.backups.is_empty() {
            self.backups_pending = self.spec.backups.len();
            for i in 0..self.spec.backups.len() {
                self.send_message(2 + 2 * i, self.request_bytes(), ctx);
            }
            return;
        }
        let bytes = self.response_bytes();
        if self.spec.tcp {
            ctx.transports.tcp.ack_now_if_pending(
                &mut HostPath::new(ctx.net, ctx.hosts, ctx.ev),
                m,
                self.req_conn,
            );
            ctx.transports.tcp.write(
                &mut HostPath::new(ctx.net, ctx.hosts, ctx.ev),
                self.resp_conn,
                bytes,
            );
        } else {
            self.send_message(1, bytes, ctx);
        }
    }

    /// The client has its answer: the request is done; the next goes out.
    fn answered(&mut self, ctx: &mut Ctx<impl AppSched>) {
        if let Some(r) = self.rpcs.last_mut() {
            r.end_ps = ctx.ev.now();
        }
        if (self.rpcs.len() as u32) < self.spec.count && ctx.ev.now() < ctx.end_ps {
            self.issue(ctx);
        } else {
            *ctx.active -= 1;
        }
    }

    /// tcp: bytes arrived in order on a connection.
    pub fn on_delivered(&mut self, conn: u32, total: u64, ctx: &mut Ctx<impl AppSched>) {
        let n = self.rpcs.len() as u64;
        if conn == self.req_conn && total >= n * self.request_bytes() {
            self.serve(ctx);
        } else if conn == self.resp_conn && total >= n * self.response_bytes() {
            self.answered(ctx);
        }
    }
}

/// The `rpcs` table: a row per request.
pub fn table(r: &Ramcloud) -> Table {
    let us = |ps: TimePs| ps as f64 / 1e6;
    let rpcs = &r.rpcs;
    Table {
        name: "rpcs",
        columns: vec![
            (
                "op",
                Column::Cat {
                    levels: &["read", "write"],
                    codes: vec![u8::from(r.spec.write); rpcs.len()],
                },
            ),
            (
                "size_bytes",
                Column::I64(vec![r.spec.size_bytes as i64; rpcs.len()]),
            ),
            (
                "start_us",
                Column::F64(rpcs.iter().map(|x| us(x.start_ps)).collect()),
            ),
            (
                "latency_us",
                Column::F64(
                    rpcs.iter()
                        .map(|x| {
                            if x.end_ps == NEVER {
                                f64::NAN
                            } else {
                                us(x.end_ps - x.start_ps)
                            }
                        })
                        .collect(),
                ),
            ),
        ],
    }
}

/// The headline: mean, least and greatest latency of finished requests (us), and the
/// slides' bandwidth, object bytes over the mean latency in MiB/s (sizes are decimal,
/// bandwidths binary, as ClusterPerf prints them).
pub fn headline(h: &mut serde_json::Map<String, serde_json::Value>, r: &Ramcloud) {
    let lat: Vec<f64> = r
        .rpcs
        .iter()
        .filter(|x| x.end_ps != NEVER)
        .map(|x| (x.end_ps - x.start_ps) as f64 / 1e6)
        .collect();
    h.insert("rpcs_unfinished".into(), (r.rpcs.len() - lat.len()).into());
    if lat.is_empty() {
        return;
    }
    let mean = lat.iter().sum::<f64>() / lat.len() as f64;
    h.insert("rpcs".into(), lat.len().into());
    h.insert("rpc_mean_us".into(), mean.into());
    h.insert(
        "rpc_min_us".into(),
        lat.iter().cloned().fold(f64::INFINITY, f64::min).into(),
    );
    h.insert(
        "rpc_max_us".into(),
        lat.iter().cloned().fold(0.0, f64::max).into(),
    );
    let mib_s = r.spec.size_bytes as f64 / (mean * 1e-6) / (1u64 << 20) as f64;
    h.insert("rpc_mib_per_s".into(), mib_s.into());
}

/// Its table and headline figures.
impl crate::metrics::report::Report for Ramcloud {
    fn tables(&self, _ctx: &crate::metrics::report::ReportCtx, out: &mut Vec<Table>) {
        out.push(table(self));
    }

    fn headline(
        &self,
        _ctx: &crate::metrics::report::ReportCtx,
        h: &mut crate::metrics::report::Headline,
    ) {
        headline(h, self);
    }
}

impl crate::workload::Application for Ramcloud {
    fn ends_by_itself(&self) -> bool {
        true
    }

    fn start<S: AppSched>(&mut self, id: u32, ctx: &mut Ctx<S>) {
        *ctx.active += 1;
        let (c, m) = (self.spec.client, self.spec.master);
        if self.spec.tcp {
            self.req_conn = ctx.transports.tcp.open(c, m, id, id);
            self.resp_conn = ctx.transports.tcp.open(m, c, id, id);
            // One kernel TCP session (socket): responses carry the ACKs of requests.
            ctx.transports
                .tcp
                .link_reverse(self.req_conn, self.resp_conn);
        } else {
            let mtu = ctx.net.host_link(c).mtu_bytes;
            self.frag_bytes = mtu - crate::packet::UDP_IP_HEADER_BYTES - FAST_HEADER_BYTES;
            let mut pairs = vec![(c, m), (m, c)];
            for &b in &self.spec.backups {
                pairs.extend([(m, b), (b, m)]);
            }
            for (from, to) in pairs {
                let data = ctx.transports.udp.open(from, to, id);
                let acks = ctx.transports.udp.open(to, from, id);
                self.channels.push(Channel {
                    to,
                    data,
                    acks,
                    ..Default::default()
                });
            }
        }
        self.issue(ctx);
    }

    fn on_note<S: AppSched>(&mut self, note: Note, ctx: &mut Ctx<S>) {
        match note {
            Note::Datagram { tag, .. } => self.on_datagram(tag, ctx),
            Note::Delivered { conn, total, .. } => self.on_delivered(conn, total, ctx),
            Note::Closed { .. } | Note::Dma { .. } => {}
        }
    }
}
