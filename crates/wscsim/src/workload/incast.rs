//! Incast, as in DIABLO section 4.1 (after the CMU incast test program): a client asks N
//! servers for a block split evenly between them, waits for every part, then asks again,
//! for a given number of iterations. Connections are persistent: one carries requests from
//! the client to a server, one carries the server's data back.

use super::{AppSched, Application, AppsBuild, Ctx, WorkloadCtx, WorkloadKind};
use crate::check::ConfigError;
use crate::engine::NEVER;
use crate::metrics::FlowRecord;
use crate::transport::HostPath;
use crate::transport::Note;

/// `[workload]` parameters of kind "incast" (defaults are filled in by `resolve`, below).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Servers that answer each request (default: every host but the client).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub senders: Option<i64>,
    /// The block the client asks for, split evenly over the servers (default 256 KiB).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<crate::units::Bytes>,
    /// Requests (default 40).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iterations: Option<i64>,
    /// Bytes of each request (default 64).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request: Option<crate::units::Bytes>,
    /// The client host (default 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<i64>,
}

pub struct Client {
    pub host: u32,
    /// The servers, in the order of their connections.
    pub servers: Vec<u32>,
    /// Request connection to each server (client -> server).
    pub req_conns: Vec<u32>,
    /// Data connections (server -> client), in the servers' order.
    pub data_conns: crate::workload::ConnList,
    /// Bytes each server sends per iteration (they sum to the block).
    pub part_bytes: Vec<u64>,
    pub request_bytes: u64,
    pub iterations: u32,
    iteration: u32,
    /// Data bytes expected from each server by the end of the current iteration.
    target: Vec<u64>,
    parts_done: u32,
    /// Iteration number + 1 in which each server's part completed.
    done_iter: Vec<u32>,
    iter_start_ps: u64,
    /// Where the data connections' rows start in `Metrics::connections`.
    first_row: usize,
}

impl Client {
    pub fn new(
        host: u32,
        servers: Vec<u32>,
        req_conns: Vec<u32>,
        data_conns: crate::workload::ConnList,
        part_bytes: Vec<u64>,
        request_bytes: u64,
        iterations: u32,
    ) -> Self {
        let n = part_bytes.len();
        Client {
            host,
            servers,
            req_conns,
            data_conns,
            part_bytes,
            request_bytes,
            iterations,
            iteration: 0,
            target: vec![0; n],
            parts_done: 0,
            done_iter: vec![0; n],
            iter_start_ps: 0,
            first_row: 0,
        }
    }

    pub fn start(&mut self, _id: u32, ctx: &mut Ctx<impl AppSched>) {
        *ctx.active += 1;
        // Each server's response connection is a row of the flows table (its
        // retransmissions, timeouts and round trips), carrying its part of every block.
        self.first_row = ctx.metrics.connections.len();
        for (i, (&server, &part)) in self.servers.iter().zip(&self.part_bytes).enumerate() {
            ctx.metrics.connections.push(FlowRecord {
                flow_id: self.data_conns.get(i),
                src: server,
                dst: self.host,
                size_bytes: part * u64::from(self.iterations),
                start_ps: ctx.ev.now(),
                end_ps: NEVER,
                bytes_received: 0,
                // Not one transfer on an idle network: no slowdown.
                ideal_ps: 0,
                dscp: 0,
                tcp: true,
            });
        }
        self.request(ctx);
    }

    fn request(&mut self, ctx: &mut Ctx<impl AppSched>) {
        self.iter_start_ps = ctx.ev.now();
        self.parts_done = 0;
        for (i, t) in self.target.iter_mut().enumerate() {
            *t += self.part_bytes[i];
        }
        for &c in &self.req_conns {
            ctx.transports.tcp.write(
                &mut HostPath::new(ctx.net, ctx.hosts, ctx.ev),
                c,
                self.request_bytes,
            );
        }
    }

    pub fn on_delivered(&mut self, conn: u32, total: u64, ctx: &mut Ctx<impl AppSched>) {
        let Some(i) = self.data_conns.index(conn) else {
            return;
        };
        let row = &mut ctx.metrics.connections[self.first_row + i];
        row.bytes_received = total;
        if total >= row.size_bytes && row.end_ps == NEVER {
            row.end_ps = ctx.ev.now();
        }
        // A part counts once per iteration: when server i's cumulative bytes reach the target.
        if total < self.target[i] || self.done_iter[i] == self.iteration + 1 {
            return;
        }
        self.done_iter[i] = self.iteration + 1;
        self.parts_done += 1;
        if self.parts_done as usize == self.target.len() {
            let now = ctx.ev.now();
            let block: u64 = self.part_bytes.iter().sum();
            ctx.metrics.incast.push(crate::metrics::IncastRecord {
                iteration: self.iteration,
                start_ps: self.iter_start_ps,
                end_ps: now,
                bytes: block,
            });
            self.iteration += 1;
            if self.iteration < self.iterations && now < ctx.end_ps {
                self.request(ctx);
            } else {
                *ctx.active -= 1;
            }
        }
    }
}

pub struct Server {
    pub host: u32,
    pub req_conn: u32,
    pub data_conn: u32,
    pub part_bytes: u64,
    pub request_bytes: u64,
    served: u64,
}

impl Server {
    pub fn new(
        host: u32,
        req_conn: u32,
        data_conn: u32,
        part_bytes: u64,
        request_bytes: u64,
    ) -> Self {
        Server {
            host,
            req_conn,
            data_conn,
            part_bytes,
            request_bytes,
            served: 0,
        }
    }

    /// Request bytes arrived in order: answer every complete request.
    pub fn on_request_bytes(&mut self, total: u64, ctx: &mut Ctx<impl AppSched>) {
        while total >= (self.served + 1) * self.request_bytes {
            self.served += 1;
            // The server application's own work for one request.
            ctx.hosts
                .app_request(self.host, self.data_conn, ctx.ev.now(), 0);
            ctx.transports.tcp.ack_now_if_pending(
                &mut HostPath::new(ctx.net, ctx.hosts, ctx.ev),
                self.host,
                self.req_conn,
            );
            ctx.transports.tcp.write(
                &mut HostPath::new(ctx.net, ctx.hosts, ctx.ev),
                self.data_conn,
                self.part_bytes,
            );
        }
    }
}

/// An incast resolved: who asks, who answers, how much and how often.
#[derive(Clone, Debug)]
pub struct IncastSpec {
    pub client: u32,
    pub servers: Vec<u32>,
    pub block_bytes: u64,
    pub iterations: u32,
    pub request_bytes: u64,
}

/// Workload kind "incast": its client and servers.
pub enum Incast {
    Client(Client),
    Server(Server),
}

impl WorkloadKind for Incast {
    const NAME: &'static str = "incast";
    type Params = Params;
    type Spec = IncastSpec;
    type App = Incast;

    fn resolve(p: &mut Params, ctx: &WorkloadCtx) -> Result<IncastSpec, ConfigError> {
        resolve(p, ctx.n_hosts)
    }

    /// The client (application 0) and one server application per server, with the
    /// connections between them.
    fn applications(spec: IncastSpec, b: &mut AppsBuild) -> Vec<Incast> {
        wire(b.tcp, spec)
    }
}

impl Application for Incast {
    fn ends_by_itself(&self) -> bool {
        matches!(self, Incast::Client(_))
    }

    fn start<S: AppSched>(&mut self, id: u32, ctx: &mut Ctx<S>) {
        if let Incast::Client(c) = self {
            c.start(id, ctx)
        }
    }

    #[inline]
    fn on_note<S: AppSched>(&mut self, note: Note, ctx: &mut Ctx<S>) {
        match (self, note) {
            (Incast::Client(c), Note::Delivered { conn, total, .. }) => {
                c.on_delivered(conn, total, ctx)
            }
            (Incast::Server(s), Note::Delivered { total, .. }) => s.on_request_bytes(total, ctx),
            _ => {}
        }
    }
}

/// Opens the connections of an incast: the client is application 0, the server of
/// `spec.servers[i]` application 1 + i.
fn wire(tcp: &mut crate::transport::Tcp, spec: IncastSpec) -> Vec<Incast> {
    let IncastSpec {
        client,
        servers,
        block_bytes,
        iterations,
        request_bytes,
    } = spec;
    let n = servers.len() as u64;
    let parts: Vec<u64> = (0..n)
        .map(|i| block_bytes / n + u64::from(i < block_bytes % n))
        .collect();
    let client_app = 0;
    let req_conns: Vec<u32> = servers
        .iter()
        .enumerate()
        .map(|(i, &s)| tcp.open(client, s, client_app, 1 + i as u32))
        .collect();
    let data: crate::workload::ConnList = servers
        .iter()
        .map(|&s| tcp.open(s, client, 0, client_app))
        .collect();
    let answering = servers.iter().enumerate().map(|(i, &s)| {
        Incast::Server(Server::new(
            s,
            req_conns[i],
            data.get(i),
            parts[i],
            request_bytes,
        ))
    });
    let answering: Vec<Incast> = answering.collect();
    let asking = Client::new(
        client,
        servers,
        req_conns,
        data,
        parts,
        request_bytes,
        iterations,
    );
    std::iter::once(Incast::Client(asking))
        .chain(answering)
        .collect()
}

/// `[workload]` of kind "incast", checked, with defaults filled in.
fn resolve(w: &mut Params, n_hosts: i64) -> Result<IncastSpec, ConfigError> {
    let senders = crate::check::int_in(
        "workload.senders",
        *w.senders.get_or_insert(n_hosts - 1),
        1,
        n_hosts - 1,
    )?;
    let client = crate::check::int_in(
        "workload.client",
        *w.client.get_or_insert(0),
        0,
        n_hosts - 1,
    )?;
    let block = w.block.get_or_insert(crate::units::Bytes(256 * 1024)).0;
    if block < senders as u64 {
        return Err(crate::check::err(
            "workload.block",
            block,
            format!("at least one byte per sender ({senders})"),
        ));
    }
    let iterations = crate::check::int_in(
        "workload.iterations",
        *w.iterations.get_or_insert(40),
        1,
        1_000_000,
    )?;
    let request = w.request.get_or_insert(crate::units::Bytes(64)).0;
    if request == 0 {
        return Err(crate::check::err(
            "workload.request",
            request,
            "at least 1 byte",
        ));
    }
    let servers = (0..n_hosts as u32)
        .filter(|&h| h != client)
        .take(senders as usize)
        .collect();
    Ok(IncastSpec {
        client,
        servers,
        block_bytes: block,
        iterations,
        request_bytes: request,
    })
}

/// No results of its own (the flows, hosts and links tables show its traffic).
impl crate::metrics::report::Report for Incast {}
