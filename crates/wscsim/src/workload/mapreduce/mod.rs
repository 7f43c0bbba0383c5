//! `workload.kind = "mapreduce"`: a Hadoop-style sort (the PCIe paper's Hadoop/sort,
//! Byrne et al., HotPower 2011, section 4.3), with HDFS blocks and MapReduce splits.
//!
//! Every node holds `data` bytes of input in files of `file` bytes (Hadoop's RandomWriter
//! writes one file per map; HDFS without replication keeps every block on the node that
//! wrote it), stored in blocks of `block` bytes. Each file is cut into splits as Hadoop's
//! FileInputFormat does: pieces of `split` bytes while more than 1.1 splits remain, the
//! rest as the last one. A node runs its own splits (data-local maps), `map_slots` at a
//! time; a map task
//! 1. starts (`task_startup`: the task's JVM and set-up),
//! 2. reads its split from the node's storage, one request per block it touches,
//! 3. sorts and partitions it on one core (`map_cycles_per_byte`),
//! 4. writes its output (as many bytes as it read) to the node's storage,
//!
//! and then its output, cut evenly into one segment per reduce task, goes to the reduces:
//! a segment for a reduce on the same node at once, others over the network, by TCP
//! (Hadoop's HTTP shuffle: one connection per pair of nodes, segments in the order their
//! maps finished) or by the PCIe data-transfer library's DMA writes, one per segment
//! (the paper's port). Every node runs `reduces` reduce tasks, started with the job; a
//! reduce that has all its segments merges them on one core (`reduce_cycles_per_byte`)
//! and writes the result to the node's storage (HDFS without replication). The job ends
//! when every reduce has written.
//!
//! What HDFS's block size changes here is how many storage requests a split takes; what the
//! split size changes is how many tasks start (each paying `task_startup`), how the maps
//! fall into waves over the slots, and how many segments, of what size, cross the network.
//!
//! Simplified: map output is served from memory (the page cache), not re-read from
//! storage; a map's spills and merges inside its sort buffer are folded into its cycles per
//! byte and one write; reduces take segments as soon as maps finish (Hadoop's fetchers
//! poll, with up to five copies at a time); a task's compute does not contend with other
//! tasks or the network stack for cores (slots are taken as cores); speculative
//! execution, task failures, the JobTracker's heartbeat-paced scheduling and the
//! NameNode are not modelled.

use super::job::{pair, PairConns};
use super::{AppEvent, AppSched, Ctx};
use crate::engine::{TimePs, NEVER, PS_PER_S};
use crate::metrics::{Column, Table};
use crate::transport::dma::Op;
use crate::transport::{HostPath, Note};
use std::collections::VecDeque;

pub mod resolve;

/// `[workload]` parameters of kind "mapreduce" (defaults are filled in by
/// `resolve`, beside it).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The hosts that run the job (default every host).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<i64>>,
    /// Input bytes per node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<crate::units::Bytes>,
    /// Bytes per input file (default 1 GB, RandomWriter's bytes per map).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<crate::units::Bytes>,
    /// HDFS block size (default 64 MB, Hadoop 0.20's dfs.block.size).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<crate::units::Bytes>,
    /// Split size (default the block size).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub split: Option<crate::units::Bytes>,
    /// Map tasks a node runs at a time (default host.cores).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub map_slots: Option<i64>,
    /// Reduce tasks per node (default host.cores).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reduces: Option<i64>,
    /// Time a task takes to start before it does any work (default 4 s, fitted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_startup: Option<crate::units::Duration>,
    /// CPU cycles per input byte of a map (read, sort, partition).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub map_cycles_per_byte: Option<f64>,
    /// CPU cycles per byte of a reduce's merge.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reduce_cycles_per_byte: Option<f64>,
    /// The shuffle: "tcp" (sockets), "dma" (the PCIe data-transfer library) or "auto"
    /// (default: DMA where the links are PCIe).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
}

/// The job as resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct MapReduceSpec {
    pub nodes: Vec<u32>,
    pub data_bytes: u64,
    pub file_bytes: u64,
    pub block_bytes: u64,
    pub split_bytes: u64,
    pub map_slots: u32,
    pub reduces_per_node: u32,
    pub task_startup_ps: TimePs,
    pub map_cycles_per_byte: f64,
    pub reduce_cycles_per_byte: f64,
    pub dma: bool,
}

/// Hadoop's FileInputFormat: the last split of a file may be up to 10% longer than the
/// split size rather than leave a small one behind.
const SPLIT_SLOP: f64 = 1.1;

/// One map task's input: where it starts in its file and how long it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Split {
    pub offset_bytes: u64,
    pub len_bytes: u64,
}

impl MapReduceSpec {
    /// The splits of one node's input, file after file.
    pub fn splits(&self) -> Vec<Split> {
        let mut out = Vec::new();
        let mut left = self.data_bytes;
        while left > 0 {
            let file = left.min(self.file_bytes);
            left -= file;
            let mut offset = 0;
            while (file - offset) as f64 / self.split_bytes as f64 > SPLIT_SLOP {
                out.push(Split {
                    offset_bytes: offset,
                    len_bytes: self.split_bytes,
                });
                offset += self.split_bytes;
            }
            out.push(Split {
                offset_bytes: offset,
                len_bytes: file - offset,
            });
        }
        out
    }

    /// The bytes a split reads from each HDFS block it touches.
    pub fn block_pieces(&self, s: Split) -> impl Iterator<Item = u64> + '_ {
        let end = s.offset_bytes + s.len_bytes;
        let mut at = s.offset_bytes;
        std::iter::from_fn(move || {
            (at < end).then(|| {
                let next = ((at / self.block_bytes + 1) * self.block_bytes).min(end);
                let piece = next - at;
                at = next;
                piece
            })
        })
    }
}

/// Task kinds, as the `tasks` table's categorical column gives them.
pub const TASK_KINDS: &[&str] = &["map", "reduce"];

/// The steps of a task, the low bits of its timer's tag.
const STARTED: u32 = 0;
const READ: u32 = 1;
const COMPUTED: u32 = 2;
const WRITTEN: u32 = 3;
const STEPS: u32 = 4;

/// One task: maps first (node by node), then reduces (node by node).
#[derive(Clone, Copy, Debug)]
pub struct Task {
    pub node: u32,
    pub is_reduce: bool,
    pub bytes: u64,
    pub split: Split,
    pub start_ps: TimePs,
    pub end_ps: TimePs,
    /// Reduce: segments still to come.
    segments_due: u32,
}

pub struct MapReduce {
    pub spec: MapReduceSpec,
    pub tasks: Vec<Task>,
    pub n_maps: u32,
    /// Per node: its maps not yet started, and its maps running.
    queued: Vec<VecDeque<u32>>,
    running: Vec<u32>,
    /// Per ordered pair of nodes (TCP): the connection, the segments on it in order (reduce
    /// task, bytes), and the bytes of the segments delivered so far.
    conns: PairConns,
    on_conn: Vec<VecDeque<(u32, u64)>>,
    conn_seen: Vec<u64>,
    reduces_left: u32,
    /// Maps not yet done, and reduces still waiting for a segment.
    maps_left: u32,
    reduces_fetching: u32,
    pub maps_done_ps: TimePs,
    pub shuffle_done_ps: TimePs,
    pub segments_sent: u64,
}

impl MapReduce {
    pub fn new(spec: MapReduceSpec) -> MapReduce {
        let n = spec.nodes.len();
        let splits = spec.splits();
        let mut tasks = Vec::new();
        let task = |node, is_reduce, split: Split| Task {
            node: node as u32,
            is_reduce,
            bytes: 0,
            split,
            start_ps: NEVER,
            end_ps: NEVER,
            segments_due: 0,
        };
        for i in 0..n {
            tasks.extend(splits.iter().map(|&s| task(i, false, s)));
        }
        let n_maps = tasks.len() as u32;
        for i in 0..n {
            for _ in 0..spec.reduces_per_node {
                let mut t = task(
                    i,
                    true,
                    Split {
                        offset_bytes: 0,
                        len_bytes: 0,
                    },
                );
                t.segments_due = n_maps;
                tasks.push(t);
            }
        }
        let queued = (0..n)
            .map(|i| {
                (0..splits.len())
                    .map(|k| (i * splits.len() + k) as u32)
                    .collect()
            })
            .collect();
        MapReduce {
            reduces_left: n as u32 * spec.reduces_per_node,
            maps_left: n_maps,
            reduces_fetching: n as u32 * spec.reduces_per_node,
            spec,
            n_maps,
            tasks,
            queued,
            running: vec![0; n],
            conns: PairConns::default(),
            on_conn: vec![VecDeque::new(); n * n.saturating_sub(1)],
            conn_seen: vec![0; n * n.saturating_sub(1)],
            maps_done_ps: NEVER,
            shuffle_done_ps: NEVER,
            segments_sent: 0,
        }
    }

    /// Node `i` starts queued maps while it has free slots.
    fn fill_slots(&mut self, id: u32, i: usize, ctx: &mut Ctx<impl AppSched>) {
        while self.running[i] < self.spec.map_slots {
            let Some(t) = self.queued[i].pop_front() else {
                return;
            };
            self.running[i] += 1;
            self.launch(id, t, ctx);
        }
    }

    fn launch(&mut self, id: u32, t: u32, ctx: &mut Ctx<impl AppSched>) {
        let now = ctx.ev.now();
        self.tasks[t as usize].start_ps = now;
        self.after(id, t, STARTED, now + self.spec.task_startup_ps, ctx);
    }

    fn after(&self, id: u32, t: u32, step: u32, at: TimePs, ctx: &mut Ctx<impl AppSched>) {
        let tag = t * STEPS + step;
        ctx.ev.schedule(at, AppEvent::Timer { app: id, tag });
    }

    /// Map `t` has written its output: it frees its slot and sends its segments.
    fn map_done(&mut self, id: u32, t: u32, ctx: &mut Ctx<impl AppSched>) {
        let task = &mut self.tasks[t as usize];
        task.end_ps = ctx.ev.now();
        let i = task.node as usize;
        let bytes = task.bytes;
        self.running[i] -= 1;
        self.maps_left -= 1;
        if self.maps_left == 0 {
            self.maps_done_ps = ctx.ev.now();
        }
        self.send_segments(id, i, bytes, ctx);
        self.fill_slots(id, i, ctx);
    }

    /// Cuts a map's output on node `i` into a segment per reduce and sends each on.
    fn send_segments(&mut self, id: u32, i: usize, bytes: u64, ctx: &mut Ctx<impl AppSched>) {
        let n = self.spec.nodes.len();
        let r_total = self.tasks.len() as u32 - self.n_maps;
        for r in 0..r_total {
            let seg =
                bytes / u64::from(r_total) + u64::from(u64::from(r) < bytes % u64::from(r_total));
            let reduce = self.n_maps + r;
            let j = self.tasks[reduce as usize].node as usize;
            if j == i || seg == 0 {
                self.segment_in(id, reduce, seg, ctx);
                continue;
            }
            self.segments_sent += 1;
            let k = pair(i, j, n);
            if self.spec.dma {
                let (a, b) = (self.spec.nodes[i], self.spec.nodes[j]);
                ctx.transports
                    .dma
                    .submit(ctx.net, ctx.ev, Op::Write, a, b, seg, id, reduce);
            } else {
                self.on_conn[k].push_back((reduce, seg));
                let conn = self.conns.conn(i, j, n);
                ctx.transports
                    .tcp
                    .write(&mut HostPath::new(ctx.net, ctx.hosts, ctx.ev), conn, seg);
            }
        }
    }

    /// A segment of `bytes` has reached reduce task `reduce`.
    fn segment_in(&mut self, id: u32, reduce: u32, bytes: u64, ctx: &mut Ctx<impl AppSched>) {
        let task = &mut self.tasks[reduce as usize];
        task.bytes += bytes;
        task.segments_due -= 1;
        if task.segments_due == 0 {
            self.reduces_fetching -= 1;
            if self.reduces_fetching == 0 {
                self.shuffle_done_ps = ctx.ev.now();
            }
            self.maybe_merge(id, reduce, ctx);
        }
    }

    /// A reduce merges once it has started and every segment is in.
    fn maybe_merge(&mut self, id: u32, t: u32, ctx: &mut Ctx<impl AppSched>) {
        let task = self.tasks[t as usize];
        let started = ctx.ev.now() >= task.start_ps + self.spec.task_startup_ps;
        if task.segments_due > 0 || !started {
            return;
        }
        let host = self.spec.nodes[task.node as usize] as usize;
        let done = compute(
            task.bytes as f64 * self.spec.reduce_cycles_per_byte,
            host,
            ctx,
        );
        self.after(id, t, COMPUTED, done, ctx);
    }

    fn reduce_done(&mut self, t: u32, ctx: &mut Ctx<impl AppSched>) {
        self.tasks[t as usize].end_ps = ctx.ev.now();
        self.reduces_left -= 1;
        if self.reduces_left == 0 {
            *ctx.active -= 1;
        }
    }

    /// A shuffle segment's DMA write has arrived (`tag` is its reduce task).
    pub fn on_dma(&mut self, id: u32, xfer: u32, tag: u32, ctx: &mut Ctx<impl AppSched>) {
        let bytes = ctx.transports.dma.transfers[xfer as usize].bytes;
        self.segment_in(id, tag, bytes, ctx);
    }

    /// Bytes have arrived on a shuffle connection: the segments they complete are in.
    pub fn on_delivered(&mut self, id: u32, conn: u32, total: u64, ctx: &mut Ctx<impl AppSched>) {
        let Some(k) = self.conns.index(conn) else {
            return;
        };
        while let Some(&(reduce, seg)) = self.on_conn[k].front() {
            if total - self.conn_seen[k] < seg {
                break;
            }
            self.conn_seen[k] += seg;
            self.on_conn[k].pop_front();
            self.segment_in(id, reduce, seg, ctx);
        }
    }

    /// When the job ended (NEVER while a reduce is still working).
    pub fn end_ps(&self) -> TimePs {
        if self.reduces_left > 0 {
            return NEVER;
        }
        self.tasks.iter().map(|t| t.end_ps).max().unwrap_or(0)
    }
}

/// One core's work of `cycles` on `host`, from now: when it ends.
fn compute(cycles: f64, host: usize, ctx: &mut Ctx<impl AppSched>) -> TimePs {
    let ps = (cycles / ctx.hosts.spec.clock_hz * PS_PER_S as f64).round() as TimePs;
    ctx.hosts.compute_ps[host] += ps;
    ctx.ev.now() + ps
}

/// The `tasks` table: a row per map and reduce task.
pub fn table(mr: &MapReduce) -> Table {
    let us = |ps: TimePs| {
        if ps == NEVER {
            f64::NAN
        } else {
            ps as f64 / 1e6
        }
    };
    let t = &mr.tasks;
    let host = |x: &Task| i64::from(mr.spec.nodes[x.node as usize]);
    Table {
        name: "tasks",
        columns: vec![
            ("task", Column::I64((0..t.len() as i64).collect())),
            ("host", Column::I64(t.iter().map(host).collect())),
            (
                "kind",
                Column::Cat {
                    levels: TASK_KINDS,
                    codes: t.iter().map(|x| u8::from(x.is_reduce)).collect(),
                },
            ),
            (
                "bytes",
                Column::I64(t.iter().map(|x| x.bytes as i64).collect()),
            ),
            (
                "start_us",
                Column::F64(t.iter().map(|x| us(x.start_ps)).collect()),
            ),
            (
                "duration_us",
                Column::F64(t.iter().map(|x| us(x.end_ps) - us(x.start_ps)).collect()),
            ),
        ],
    }
}

/// The headline's figures: the job's length, its tasks, and when its maps and its shuffle
/// were done.
pub fn headline(h: &mut serde_json::Map<String, serde_json::Value>, mr: &MapReduce) {
    let s = |ps: TimePs| ps as f64 / PS_PER_S as f64;
    let end = mr.end_ps();
    if end != NEVER {
        h.insert("job_seconds".into(), s(end).into());
    }
    h.insert("mapreduce_maps".into(), mr.n_maps.into());
    let reduces = mr.tasks.len() as u32 - mr.n_maps;
    h.insert("mapreduce_reduces".into(), reduces.into());
    h.insert("mapreduce_segments_sent".into(), mr.segments_sent.into());
    for (key, ps) in [
        ("mapreduce_maps_done_seconds", mr.maps_done_ps),
        ("mapreduce_shuffle_done_seconds", mr.shuffle_done_ps),
    ] {
        if ps != NEVER {
            h.insert(key.into(), s(ps).into());
        }
    }
}

/// Its table and headline figures.
impl crate::metrics::report::Report for MapReduce {
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

impl crate::workload::Application for MapReduce {
    fn ends_by_itself(&self) -> bool {
        true
    }

    fn start<S: AppSched>(&mut self, id: u32, ctx: &mut Ctx<S>) {
        *ctx.active += 1;
        let n = self.spec.nodes.len();
        if !self.spec.dma {
            self.conns = PairConns::open(&self.spec.nodes, id, &mut ctx.transports.tcp);
        }
        for t in self.n_maps..self.tasks.len() as u32 {
            self.launch(id, t, ctx);
        }
        for i in 0..n {
            self.fill_slots(id, i, ctx);
        }
    }

    /// A step of task `tag / STEPS` is done: start its next one.
    fn on_timer<S: AppSched>(&mut self, id: u32, tag: u32, ctx: &mut Ctx<S>) {
        let (t, step) = (tag / STEPS, tag % STEPS);
        let task = self.tasks[t as usize];
        let host = self.spec.nodes[task.node as usize] as usize;
        let now = ctx.ev.now();
        match (task.is_reduce, step) {
            (false, STARTED) => {
                let mut done = now;
                for piece in self.spec.block_pieces(task.split) {
                    done = ctx.hosts.disks[host].request(now, piece, false);
                }
                self.tasks[t as usize].bytes = task.split.len_bytes;
                self.after(id, t, READ, done, ctx);
            }
            (true, STARTED) => self.maybe_merge(id, t, ctx),
            (false, READ) => {
                let cpb = self.spec.map_cycles_per_byte;
                let done = compute(task.bytes as f64 * cpb, host, ctx);
                self.after(id, t, COMPUTED, done, ctx);
            }
            (_, COMPUTED) => {
                let done = ctx.hosts.disks[host].request(now, task.bytes, true);
                self.after(id, t, WRITTEN, done, ctx);
            }
            (false, _) => self.map_done(id, t, ctx),
            (true, _) => self.reduce_done(t, ctx),
        }
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

    fn spec(data: u64, file: u64, block: u64, split: u64) -> MapReduceSpec {
        MapReduceSpec {
            nodes: vec![0, 1, 2],
            data_bytes: data,
            file_bytes: file,
            block_bytes: block,
            split_bytes: split,
            map_slots: 4,
            reduces_per_node: 4,
            task_startup_ps: 0,
            map_cycles_per_byte: 1.0,
            reduce_cycles_per_byte: 1.0,
            dma: false,
        }
    }

    const MB: u64 = 1_000_000;

    #[test]
    fn splits_follow_file_input_format_slop() {
        // A 1000 MB file in 550 MB splits: 1000/550 = 1.8 > 1.1, so 550 then 450.
        let s = spec(2000 * MB, 1000 * MB, 256 * MB, 550 * MB).splits();
        let lens: Vec<u64> = s.iter().map(|x| x.len_bytes / MB).collect();
        assert_eq!(lens, vec![550, 450, 550, 450]);
        // 600 MB left of 550 MB splits: 600/550 = 1.09 <= 1.1, one split of 600.
        let s = spec(600 * MB, 1000 * MB, 256 * MB, 550 * MB).splits();
        assert_eq!(
            s,
            vec![Split {
                offset_bytes: 0,
                len_bytes: 600 * MB
            }]
        );
    }

    #[test]
    fn a_split_reads_each_block_it_touches() {
        let sp = spec(1000 * MB, 1000 * MB, 256 * MB, 550 * MB);
        let second = sp.splits()[1];
        // 550..1000 MB touches blocks 2 (550..768) and 3 (768..1000).
        let pieces: Vec<u64> = sp.block_pieces(second).map(|b| b / MB).collect();
        assert_eq!(pieces, vec![218, 232]);
        let sp = spec(1000 * MB, 1000 * MB, 512 * MB, 550 * MB);
        let first: Vec<u64> = sp.block_pieces(sp.splits()[0]).map(|b| b / MB).collect();
        assert_eq!(first, vec![512, 38]);
    }

    #[test]
    fn every_reduce_waits_for_a_segment_of_every_map() {
        let mr = MapReduce::new(spec(1000 * MB, 1000 * MB, 256 * MB, 256 * MB));
        // 1000 MB in 256 MB splits: 256, 256, 256, then 232 (488/256 > 1.1, 232/256 not).
        assert_eq!(mr.n_maps, 3 * 4);
        assert_eq!(mr.tasks.len(), 12 + 12);
        assert!(mr.tasks[12..]
            .iter()
            .all(|r| r.is_reduce && r.segments_due == 12));
    }
}
