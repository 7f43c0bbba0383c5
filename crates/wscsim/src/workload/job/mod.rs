//! A data-parallel job in phases, as the PCIe paper's sort, grep and Hadoop sort run: every
//! node of the job works through the same list of phases in order, each one of
//! - `read` / `write`: bytes from or to the node's storage device (`host.storage`), at the
//!   device's latency and bandwidth (`host::disk`);
//! - `compute`: cycles per byte on the node's cores at its clock; a `parallel_fraction` of
//!   the work spreads over every core, the rest runs on one (Amdahl);
//! - `shuffle`: bytes over the network by TCP, either spread evenly over every node of the
//!   job (all-to-all, keeping its own share: a sort's key exchange) or sent to one root (a
//!   reduce). A node's shuffle ends when what it sent has arrived and what it was due has
//!   come in.
//!
//! A phase with `overlap = true` starts together with the phase before it (a pipelined
//! pair: data read from storage while the previous chunk is sent, or a sort's output
//! written while it merges), and the node goes on when every phase of such a group is
//! done; a group holds at most one shuffle. There is no barrier between nodes: a node goes
//! on as soon as its own group is done, so a fast node's shuffle waits only for the data
//! it needs. The job ends when every node has
//! finished its last phase; the run ends with it, so the run's energy is the job's.
//!
//! Simplified: a compute phase holds the node's cores without contending with its network
//! stack's work (phases do not overlap on a node, so the two meet only on a costed stack's
//! last few deliveries); storage requests are one request per phase; shuffles run over
//! TCP on whatever links the topology has (PCIe links carry TCP segments as TLPs).

use super::{AppEvent, AppSched, Ctx};
use crate::engine::{TimePs, NEVER, PS_PER_S};
use crate::metrics::{Column, Table};
use crate::transport::dma::Op;
use crate::transport::{HostPath, Note};

pub mod resolve;

/// `[workload]` parameters of kind "job" (defaults are filled in by `resolve`, beside it).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The hosts that run the job (default every host).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<i64>>,
    /// The phases every node runs, in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phases: Option<Vec<PhaseCfg>>,
}

/// One phase as a scenario gives it: `{ kind = "read", bytes = "1GB" }`.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseCfg {
    /// "read", "write", "compute" or "shuffle".
    pub kind: String,
    /// Bytes per node: read, written, computed on, or (shuffle) the node's data to spread
    /// (all_to_all) or to send (to_one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<crate::units::Bytes>,
    /// compute: CPU cycles per byte.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cycles_per_byte: Option<f64>,
    /// compute: the share of the work that spreads over every core (default 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel_fraction: Option<f64>,
    /// shuffle: "all_to_all" (default) or "to_one".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// shuffle "to_one": the receiving node, an index into `nodes` (default 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<i64>,
    /// shuffle: "tcp" (sockets, default), "dma" (the PCIe data-transfer library's DMA
    /// writes through the fabric's windows) or "auto" (DMA where the links are PCIe).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// Start together with the phase before (default false: start when it is done).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overlap: Option<bool>,
}

/// A phase as the job runs it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Phase {
    Read {
        bytes: u64,
    },
    Write {
        bytes: u64,
    },
    Compute {
        cycles: f64,
        parallel_fraction: f64,
    },
    /// Node i sends `bytes / n` to every other node (all_to_all) or `bytes` to `root`, by
    /// TCP or (`dma`) by the PCIe DMA library's writes.
    Shuffle {
        bytes: u64,
        to_one: Option<u32>,
        dma: bool,
    },
}

/// Names of the phase kinds, as the table's categorical column gives them.
pub const KINDS: &[&str] = &["read", "write", "compute", "shuffle"];

impl Phase {
    fn kind(&self) -> u8 {
        match self {
            Phase::Read { .. } => 0,
            Phase::Write { .. } => 1,
            Phase::Compute { .. } => 2,
            Phase::Shuffle { .. } => 3,
        }
    }

    /// Bytes node `i` of `n` sends to node `j` in this phase.
    fn share(&self, i: usize, j: usize, n: usize) -> u64 {
        match *self {
            Phase::Shuffle { bytes, to_one, .. } if i != j => match to_one {
                Some(r) => u64::from(r as usize == j) * bytes,
                // An even split, the remainder to the first nodes, so shares sum to bytes.
                None => bytes / n as u64 + u64::from((j as u64) < bytes % n as u64),
            },
            _ => 0,
        }
    }
}

/// The job as resolved.
#[derive(Clone, Debug)]
pub struct JobSpec {
    pub nodes: Vec<u32>,
    pub phases: Vec<Phase>,
    /// Per phase: it starts together with the phase before it.
    pub overlap: Vec<bool>,
}

impl JobSpec {
    /// The phases of the group that starts at phase `first`.
    fn group(&self, first: usize) -> std::ops::Range<usize> {
        let end = (first + 1..self.phases.len())
            .find(|&k| !self.overlap[k])
            .unwrap_or(self.phases.len());
        first..end
    }
}

/// One phase of one node, for the `phases` table.
#[derive(Clone, Copy, Debug)]
pub struct PhaseRecord {
    pub host: u32,
    pub phase: u32,
    pub kind: u8,
    pub start_ps: TimePs,
    pub end_ps: TimePs,
}

/// Per node: where it is and what it waits for.
#[derive(Clone, Debug, Default)]
struct NodeState {
    /// The first phase of the node's current group.
    phase: usize,
    /// Phases of the current group not yet done.
    pending: usize,
    /// The current group's shuffle, while it is not done.
    shuffle: Option<usize>,
    start_ps: TimePs,
    /// Bytes this node sent that have not yet arrived.
    sent_pending: u64,
    /// Bytes arrived at this node so far, and what it needs by the end of each shuffle.
    received: u64,
    need_by_phase: Vec<u64>,
}

pub struct Job {
    pub spec: JobSpec,
    nodes: Vec<NodeState>,
    /// Connections from node i to every other node j (when a shuffle is by TCP).
    conns: PairConns,
    /// Per connection: bytes its receiver had at the last note.
    conn_seen: Vec<u64>,
    remaining: usize,
    pub records: Vec<PhaseRecord>,
}

impl Job {
    pub fn new(spec: JobSpec) -> Job {
        let n = spec.nodes.len();
        let nodes = (0..n)
            .map(|j| {
                let mut need = 0;
                let need_by_phase = spec
                    .phases
                    .iter()
                    .map(|p| {
                        need += (0..n).map(|i| p.share(i, j, n)).sum::<u64>();
                        need
                    })
                    .collect();
                NodeState {
                    need_by_phase,
                    ..Default::default()
                }
            })
            .collect();
        Job {
            nodes,
            conns: PairConns::default(),
            conn_seen: vec![0; n * n.saturating_sub(1)],
            remaining: n,
            records: Vec::new(),
            spec,
        }
    }

    fn tcp_shuffles(&self) -> bool {
        self.spec
            .phases
            .iter()
            .any(|p| matches!(p, Phase::Shuffle { dma: false, .. }))
    }

    /// Node `i` starts its current group of phases (or, past the last, is done).
    fn begin(&mut self, id: u32, i: usize, ctx: &mut Ctx<impl AppSched>) {
        let first = self.nodes[i].phase;
        if first >= self.spec.phases.len() {
            self.remaining -= 1;
            if self.remaining == 0 {
                *ctx.active -= 1;
            }
            return;
        }
        let group = self.spec.group(first);
        let node = &mut self.nodes[i];
        node.start_ps = ctx.ev.now();
        node.pending = group.len();
        for k in group {
            self.begin_phase(id, i, k, ctx);
        }
        if let Some(k) = self.nodes[i].shuffle {
            self.send_shares(id, i, self.spec.phases[k], ctx);
            self.check_shuffle(id, i, ctx);
        }
    }

    /// Starts phase `k` of node `i`: a storage or compute phase sets its timer; a shuffle
    /// is marked open and sent once the whole group has started.
    fn begin_phase(&mut self, id: u32, i: usize, k: usize, ctx: &mut Ctx<impl AppSched>) {
        let now = ctx.ev.now();
        let host = self.spec.nodes[i];
        let phase = self.spec.phases[k];
        let done = match phase {
            Phase::Read { bytes } | Phase::Write { bytes } => {
                let disk = &mut ctx.hosts.disks[host as usize];
                disk.request(now, bytes, matches!(phase, Phase::Write { .. }))
            }
            Phase::Compute {
                cycles,
                parallel_fraction,
            } => {
                let spec = &ctx.hosts.spec;
                let serial_s = cycles / spec.clock_hz;
                let cores = f64::from(spec.cores);
                let wall_s = serial_s * ((1.0 - parallel_fraction) + parallel_fraction / cores);
                ctx.hosts.compute_ps[host as usize] += (serial_s * PS_PER_S as f64) as TimePs;
                now + (wall_s * PS_PER_S as f64).round() as TimePs
            }
            Phase::Shuffle { .. } => {
                self.nodes[i].shuffle = Some(k);
                return;
            }
        };
        let tag = (i * self.spec.phases.len() + k) as u32;
        ctx.ev.schedule(done, AppEvent::Timer { app: id, tag });
    }

    fn send_shares(&mut self, id: u32, i: usize, phase: Phase, ctx: &mut Ctx<impl AppSched>) {
        let n = self.spec.nodes.len();
        for j in 0..n {
            let bytes = phase.share(i, j, n);
            if bytes == 0 {
                continue;
            }
            self.nodes[i].sent_pending += bytes;
            let k = pair(i, j, n);
            if matches!(phase, Phase::Shuffle { dma: true, .. }) {
                let (a, b) = (self.spec.nodes[i], self.spec.nodes[j]);
                ctx.transports
                    .dma
                    .submit(ctx.net, ctx.ev, Op::Write, a, b, bytes, id, k as u32);
            } else {
                let conn = self.conns.conn(i, j, n);
                ctx.transports.tcp.write(
                    &mut HostPath::new(ctx.net, ctx.hosts, ctx.ev),
                    conn,
                    bytes,
                );
            }
        }
    }

    /// Node `i` may be in a shuffle: is it done?
    fn check_shuffle(&mut self, id: u32, i: usize, ctx: &mut Ctx<impl AppSched>) {
        let node = &self.nodes[i];
        let Some(k) = node.shuffle else { return };
        if node.sent_pending == 0 && node.received >= node.need_by_phase[k] {
            self.nodes[i].shuffle = None;
            self.phase_done(id, i, k, ctx);
        }
    }

    /// Phase `k` of node `i` is done; the node goes on when its whole group is.
    fn phase_done(&mut self, id: u32, i: usize, k: usize, ctx: &mut Ctx<impl AppSched>) {
        let node = &mut self.nodes[i];
        self.records.push(PhaseRecord {
            host: self.spec.nodes[i],
            phase: k as u32,
            kind: self.spec.phases[k].kind(),
            start_ps: node.start_ps,
            end_ps: ctx.ev.now(),
        });
        node.pending -= 1;
        if node.pending == 0 {
            node.phase = self.spec.group(node.phase).end;
            self.begin(id, i, ctx);
        }
    }

    /// A shuffle's DMA write of pair `tag` has arrived.
    pub fn on_dma(&mut self, id: u32, xfer: u32, tag: u32, ctx: &mut Ctx<impl AppSched>) {
        let bytes = ctx.transports.dma.transfers[xfer as usize].bytes;
        let (i, j) = unpair(tag as usize, self.spec.nodes.len());
        self.arrived(id, i, j, bytes, ctx);
    }

    pub fn on_delivered(&mut self, id: u32, conn: u32, total: u64, ctx: &mut Ctx<impl AppSched>) {
        let n = self.spec.nodes.len();
        let Some(k) = self.conns.index(conn) else {
            return;
        };
        let new = total.saturating_sub(self.conn_seen[k]);
        self.conn_seen[k] = total;
        let (i, j) = unpair(k, n);
        self.arrived(id, i, j, new, ctx);
    }

    /// `new` bytes from node `i` have reached node `j`.
    fn arrived(&mut self, id: u32, i: usize, j: usize, new: u64, ctx: &mut Ctx<impl AppSched>) {
        self.nodes[i].sent_pending -= new;
        self.nodes[j].received += new;
        self.check_shuffle(id, i, ctx);
        self.check_shuffle(id, j, ctx);
    }

    /// When the job ended (NEVER while some node is still working).
    pub fn end_ps(&self) -> TimePs {
        if self.remaining > 0 {
            return NEVER;
        }
        self.records.iter().map(|r| r.end_ps).max().unwrap_or(0)
    }
}

/// TCP connections from every node of a job to every other, opened together: the one from
/// node i to node j != i is the `pair(i, j, n)`th.
#[derive(Clone, Debug, Default)]
pub struct PairConns(crate::workload::ConnList);

impl PairConns {
    /// Opens them, for application `app` at both ends.
    pub fn open(nodes: &[u32], app: u32, tcp: &mut crate::transport::Tcp) -> PairConns {
        let n = nodes.len();
        let mut c = crate::workload::ConnList::default();
        for i in 0..n {
            for j in (0..n).filter(|&j| j != i) {
                debug_assert_eq!(c.len(), pair(i, j, n));
                c.push(tcp.open(nodes[i], nodes[j], app, app));
            }
        }
        PairConns(c)
    }

    /// The connection from node `i` to node `j` of `n`.
    pub fn conn(&self, i: usize, j: usize, n: usize) -> u32 {
        self.0.get(pair(i, j, n))
    }

    /// The pair index of connection `conn`, if it is one of these.
    pub fn index(&self, conn: u32) -> Option<usize> {
        self.0.index(conn)
    }
}

/// The index of the connection from node `i` to node `j != i` among `n` nodes' connections.
pub(super) fn pair(i: usize, j: usize, n: usize) -> usize {
    i * (n - 1) + if j < i { j } else { j - 1 }
}

/// The (from, to) nodes of connection index `k`: the inverse of `pair`.
fn unpair(k: usize, n: usize) -> (usize, usize) {
    let (i, r) = (k / (n - 1), k % (n - 1));
    (i, if r < i { r } else { r + 1 })
}

/// The `phases` table: a row per phase of each node.
pub fn table(records: &[PhaseRecord]) -> Table {
    let us = |ps: TimePs| ps as f64 / 1e6;
    Table {
        name: "phases",
        columns: vec![
            (
                "host",
                Column::I64(records.iter().map(|r| i64::from(r.host)).collect()),
            ),
            (
                "phase",
                Column::I64(records.iter().map(|r| i64::from(r.phase)).collect()),
            ),
            (
                "kind",
                Column::Cat {
                    levels: KINDS,
                    codes: records.iter().map(|r| r.kind).collect(),
                },
            ),
            (
                "start_us",
                Column::F64(records.iter().map(|r| us(r.start_ps)).collect()),
            ),
            (
                "duration_us",
                Column::F64(records.iter().map(|r| us(r.end_ps - r.start_ps)).collect()),
            ),
        ],
    }
}

/// The headline's job figures: its length (start to the last node's end) and, per phase
/// kind, the mean over nodes of the time a node spent in phases of that kind.
pub fn headline(h: &mut serde_json::Map<String, serde_json::Value>, job: &Job) {
    let end = job.end_ps();
    if end != NEVER {
        h.insert("job_seconds".into(), (end as f64 / PS_PER_S as f64).into());
    }
    let n = job.spec.nodes.len().max(1) as f64;
    for (k, name) in KINDS.iter().enumerate() {
        let total_ps: TimePs = job
            .records
            .iter()
            .filter(|r| r.kind as usize == k)
            .map(|r| r.end_ps - r.start_ps)
            .sum();
        if job.spec.phases.iter().any(|p| p.kind() as usize == k) {
            h.insert(
                format!("job_{name}_seconds"),
                (total_ps as f64 / PS_PER_S as f64 / n).into(),
            );
        }
    }
}

/// Its table and headline figures.
impl crate::metrics::report::Report for Job {
    fn tables(&self, _ctx: &crate::metrics::report::ReportCtx, out: &mut Vec<Table>) {
        out.push(table(&self.records));
    }

    fn headline(
        &self,
        _ctx: &crate::metrics::report::ReportCtx,
        h: &mut crate::metrics::report::Headline,
    ) {
        headline(h, self);
    }
}

impl crate::workload::Application for Job {
    fn ends_by_itself(&self) -> bool {
        true
    }

    fn start<S: AppSched>(&mut self, id: u32, ctx: &mut Ctx<S>) {
        *ctx.active += 1;
        let n = self.spec.nodes.len();
        if self.tcp_shuffles() {
            self.conns = PairConns::open(&self.spec.nodes, id, &mut ctx.transports.tcp);
        }
        for i in 0..n {
            self.begin(id, i, ctx);
        }
    }

    /// A storage or compute phase is done (`tag` = node x phases + phase).
    fn on_timer<S: AppSched>(&mut self, id: u32, tag: u32, ctx: &mut Ctx<S>) {
        let n_phases = self.spec.phases.len();
        let (i, k) = (tag as usize / n_phases, tag as usize % n_phases);
        self.phase_done(id, i, k, ctx);
    }

    fn on_note<S: AppSched>(&mut self, note: Note, ctx: &mut Ctx<S>) {
        match note {
            Note::Delivered {
                app, conn, total, ..
            } => self.on_delivered(app, conn, total, ctx),
            Note::Dma { app, xfer, tag } => self.on_dma(app, xfer, tag, ctx),
            Note::Closed { .. } | Note::Datagram { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_to_all_shares_sum_to_the_data_less_the_own_share() {
        let p = Phase::Shuffle {
            bytes: 1_000_001,
            to_one: None,
            dma: false,
        };
        let n = 3;
        let sent: u64 = (0..n).map(|j| p.share(0, j, n)).sum();
        // Node 0 keeps its own share (the first, with the remainder byte).
        assert_eq!(sent, 1_000_001 - 333_334);
        assert_eq!(p.share(1, 1, n), 0);
    }

    #[test]
    fn overlapping_phases_form_groups() {
        let spec = JobSpec {
            nodes: vec![0],
            phases: vec![Phase::Read { bytes: 1 }; 4],
            overlap: vec![false, true, false, true],
        };
        assert_eq!(spec.group(0), 0..2);
        assert_eq!(spec.group(2), 2..4);
    }

    #[test]
    fn connection_pairs_invert() {
        let n = 4;
        let ks: Vec<usize> = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| pair(i, j, n))
            .collect();
        assert_eq!(ks, (0..n * (n - 1)).collect::<Vec<_>>());
        assert!(ks.iter().all(|&k| {
            let (i, j) = unpair(k, n);
            pair(i, j, n) == k
        }));
    }

    #[test]
    fn to_one_sends_everything_to_the_root_only() {
        let p = Phase::Shuffle {
            bytes: 500,
            to_one: Some(2),
            dma: false,
        };
        assert_eq!(p.share(0, 2, 4), 500);
        assert_eq!(p.share(0, 1, 4), 0);
        assert_eq!(p.share(2, 2, 4), 0);
    }

    #[test]
    fn a_node_needs_what_every_other_sends_it_by_each_shuffle() {
        let job = Job::new(JobSpec {
            overlap: vec![false; 3],
            nodes: vec![0, 1, 2],
            phases: vec![
                Phase::Read { bytes: 10 },
                Phase::Shuffle {
                    bytes: 300,
                    to_one: None,
                    dma: false,
                },
                Phase::Shuffle {
                    bytes: 50,
                    to_one: Some(0),
                    dma: true,
                },
            ],
        });
        assert_eq!(job.nodes[0].need_by_phase, vec![0, 200, 300]);
        assert_eq!(job.nodes[1].need_by_phase, vec![0, 200, 200]);
    }
}
