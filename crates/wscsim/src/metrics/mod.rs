//! What a run records, kept in plain vectors during the run and turned into columnar
//! tables at the end (units in column names).

pub mod energy;
pub mod pcap;
pub mod report;
pub mod slowdown;

pub mod headline;

use crate::engine::{TimePs, NEVER, PS_PER_US};
use crate::net::{Network, NodeKind};
// Tables are a bottom-layer type (table.rs): every layer that reports one builds it
// without importing this layer.
pub use crate::table::{floats, ints, us, Column, Table};

/// The metrics layer's events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricsEvent {
    /// Periodic sampling of the switch queues.
    Sample,
}

#[derive(Clone, Copy, Debug)]
pub struct FlowRecord {
    pub flow_id: u32,
    pub src: u32,
    pub dst: u32,
    /// Bytes the flow carries (0 for an endless flow).
    pub size_bytes: u64,
    pub start_ps: TimePs,
    /// When the receiver had every byte (NEVER if it did not finish).
    pub end_ps: TimePs,
    pub bytes_received: u64,
    /// Transfer time on an idle network (see `Network::ideal_transfer_ps`), for slowdown.
    pub ideal_ps: TimePs,
    /// DSCP class the flow's packets carry.
    pub dscp: u8,
    /// A TCP connection (flow_id is its connection id), or a UDP stream.
    pub tcp: bool,
}

/// What went wrong or slow for one flow, for the flows table: TCP's retransmissions,
/// timeouts and RTT samples (NaN or 0 for UDP), and its packets dropped anywhere.
#[derive(Clone, Copy, Debug, Default)]
pub struct FlowDiagnostics {
    pub retransmits: u64,
    pub timeouts: u64,
    pub rtt: crate::transport::stats::RttStats,
    pub drops: u64,
}

#[derive(Clone, Copy, Debug)]
pub struct IncastRecord {
    pub iteration: u32,
    pub start_ps: TimePs,
    pub end_ps: TimePs,
    pub bytes: u64,
}

#[derive(Clone, Copy, Debug)]
pub struct QueueSample {
    pub time_ps: TimePs,
    pub port: u32,
    pub bytes: u64,
}

#[derive(Default)]
pub struct Metrics {
    pub flows: Vec<FlowRecord>,
    /// Connections that carry a workload but are not one of its flows (an incast server's
    /// responses over every iteration): rows of the flows table after the flows, for
    /// their diagnostics; no headline figure or flow statistic counts them.
    pub connections: Vec<FlowRecord>,
    pub incast: Vec<IncastRecord>,
    pub queue: Vec<QueueSample>,
    pub sample_interval_ps: TimePs,
    pub max_queue_samples: usize,
    pub queue_samples_truncated: bool,
}

impl Metrics {
    /// The flows table's rows: the workload's flows, then its other connections.
    pub fn flow_rows(&self) -> std::borrow::Cow<'_, [FlowRecord]> {
        if self.connections.is_empty() {
            return std::borrow::Cow::Borrowed(&self.flows);
        }
        std::borrow::Cow::Owned([&self.flows[..], &self.connections[..]].concat())
    }

    /// Samples the queue of every switch port that has carried traffic.
    /// The periodic queue sample: records every switch port, then schedules the next one
    /// unless the sample table is full.
    pub fn on_sample(
        &mut self,
        ev: &mut impl crate::engine::Scheduler<MetricsEvent>,
        net: &Network,
    ) {
        let now = ev.now();
        self.sample_queues(now, net);
        if !self.queue_samples_truncated {
            ev.schedule(now + self.sample_interval_ps, MetricsEvent::Sample);
        }
    }

    pub fn sample_queues(&mut self, now: TimePs, net: &Network) {
        for (i, p) in net.ports().iter().enumerate() {
            if p.switch == crate::net::NONE
                || (p.stats.tx_pkts == 0 && p.stats.drops == 0 && p.pkts_queued == 0)
            {
                continue;
            }
            if self.queue.len() >= self.max_queue_samples {
                self.queue_samples_truncated = true;
                return;
            }
            self.queue.push(QueueSample {
                time_ps: now,
                port: i as u32,
                bytes: p.bytes_queued,
            });
        }
    }
}

/// `x` in microseconds if any RTT sample was taken, else NaN.
fn if_sampled(d: &FlowDiagnostics, x: TimePs) -> f64 {
    if d.rtt.samples > 0 {
        us(x)
    } else {
        f64::NAN
    }
}

pub fn flows_table(m: &Metrics, end_ps: TimePs, diag: &[FlowDiagnostics]) -> Table {
    let f = &m.flow_rows();
    let done = |r: &FlowRecord| r.end_ps != NEVER;
    let goodput = |r: &FlowRecord| {
        let stop = if done(r) { r.end_ps } else { end_ps };
        if stop > r.start_ps {
            r.bytes_received as f64 * 8.0 / ((stop - r.start_ps) as f64 / 1e12) / 1e9
        } else {
            f64::NAN
        }
    };
    let dst = |r: &FlowRecord| {
        if r.dst == crate::net::NONE {
            -1
        } else {
            r.dst as i64
        }
    };
    Table {
        name: "flows",
        columns: vec![
            ("flow_id", ints(f, |r| r.flow_id as i64)),
            ("src", ints(f, |r| r.src as i64)),
            ("dst", ints(f, dst)),
            ("size_bytes", ints(f, |r| r.size_bytes as i64)),
            ("start_us", floats(f, |r| us(r.start_ps))),
            (
                "fct_us",
                floats(f, |r| {
                    if done(r) {
                        us(r.end_ps - r.start_ps)
                    } else {
                        f64::NAN
                    }
                }),
            ),
            (
                "slowdown",
                floats(f, |r| {
                    if done(r) && r.ideal_ps != 0 {
                        (r.end_ps - r.start_ps) as f64 / r.ideal_ps as f64
                    } else {
                        f64::NAN
                    }
                }),
            ),
            ("bytes_received", ints(f, |r| r.bytes_received as i64)),
            ("goodput_gbps", floats(f, goodput)),
            ("dscp", ints(f, |r| r.dscp as i64)),
            ("retransmits", ints(diag, |d| d.retransmits as i64)),
            ("timeouts", ints(diag, |d| d.timeouts as i64)),
            ("drops", ints(diag, |d| d.drops as i64)),
            ("rtt_samples", ints(diag, |d| d.rtt.samples as i64)),
            (
                "rtt_mean_us",
                floats(diag, |d| d.rtt.mean_ps().map_or(f64::NAN, us_f)),
            ),
            ("rtt_min_us", floats(diag, |d| if_sampled(d, d.rtt.min_ps))),
            ("rtt_max_us", floats(diag, |d| if_sampled(d, d.rtt.max_ps))),
        ],
    }
}

pub fn incast_table(m: &Metrics) -> Table {
    let r = &m.incast;
    Table {
        name: "incast",
        columns: vec![
            (
                "iteration",
                Column::I64(r.iter().map(|x| x.iteration as i64).collect()),
            ),
            (
                "start_us",
                Column::F64(r.iter().map(|x| us(x.start_ps)).collect()),
            ),
            (
                "duration_us",
                Column::F64(r.iter().map(|x| us(x.end_ps - x.start_ps)).collect()),
            ),
            (
                "block_bytes",
                Column::I64(r.iter().map(|x| x.bytes as i64).collect()),
            ),
            (
                "goodput_mbps",
                Column::F64(
                    r.iter()
                        .map(|x| {
                            x.bytes as f64 * 8.0 / ((x.end_ps - x.start_ps) as f64 / 1e12) / 1e6
                        })
                        .collect(),
                ),
            ),
        ],
    }
}

pub fn queue_table(m: &Metrics, net: &Network) -> Table {
    let q = &m.queue;
    Table {
        name: "queues",
        columns: vec![
            (
                "time_us",
                Column::F64(q.iter().map(|s| us(s.time_ps)).collect()),
            ),
            (
                "node",
                Column::I64(
                    q.iter()
                        .map(|s| net.ports()[s.port as usize].node as i64)
                        .collect(),
                ),
            ),
            (
                "port",
                Column::I64(q.iter().map(|s| net.local_port(s.port) as i64).collect()),
            ),
            (
                "queue_bytes",
                Column::I64(q.iter().map(|s| s.bytes as i64).collect()),
            ),
        ],
    }
}

/// A column of strings, one per row.
pub fn strs<T>(rows: &[T], f: impl Fn(&T) -> String) -> Column {
    Column::Str(rows.iter().map(f).collect())
}

pub fn links_table(net: &Network, end_ps: TimePs) -> Table {
    let p = net.ports();
    let secs = (end_ps as f64 / 1e12).max(1e-18);
    let name = |node: u32| net.node_names()[node as usize].clone();
    let kind = |x: &crate::net::Port| {
        if net.nodes()[x.node as usize].kind == NodeKind::Host {
            "nic".to_string()
        } else {
            "switch".to_string()
        }
    };
    let ids: Vec<u32> = (0..p.len() as u32).collect();
    let mean_wait = |x: &crate::net::Port| {
        if x.stats.tx_pkts > 0 {
            us(x.stats.wait_ps_sum) / x.stats.tx_pkts as f64
        } else {
            f64::NAN
        }
    };
    let mut t = Table {
        name: "links",
        columns: vec![
            ("node", ints(p, |x| x.node as i64)),
            ("node_name", strs(p, |x| name(x.node))),
            ("kind", strs(p, kind)),
            ("port", ints(&ids, |&i| net.local_port(i) as i64)),
            ("peer_name", strs(p, |x| name(x.peer_node))),
            ("rate_bps", ints(p, |x| x.rate_bps as i64)),
            ("tx_bytes", ints(p, |x| x.stats.tx_wire_bytes as i64)),
            ("tx_packets", ints(p, |x| x.stats.tx_pkts as i64)),
            (
                "utilisation",
                floats(p, |x| {
                    x.stats.tx_wire_bytes as f64 * 8.0 / (x.rate_bps as f64 * secs)
                }),
            ),
            ("drops", ints(p, |x| x.stats.drops as i64)),
            ("drop_bytes", ints(p, |x| x.stats.drop_bytes as i64)),
            (
                "ecn_marks",
                ints(&ids, |&i| {
                    let (x, s) = (&p[i as usize], &net.schemes()[i as usize]);
                    (x.stats.ecn_marks + s.marks_at_dequeue()) as i64
                }),
            ),
            ("mean_wait_us", floats(p, mean_wait)),
            (
                "max_queue_bytes",
                ints(p, |x| x.stats.max_queue_bytes as i64),
            ),
        ],
    };
    // Packets cut to their headers, where a scheme may trim (NDP's switches).
    if net.schemes().iter().any(|s| s.can_trim()) {
        let trims = ints(&ids, |&i| net.schemes()[i as usize].trims() as i64);
        t.columns.insert(t.columns.len() - 2, ("trims", trims));
    }
    t
}

/// One row per host when hosts cost time (empty for the ideal stack): CPU utilisation and
/// what the CPU and NIC did.
pub fn hosts_table(net: &Network, h: &crate::host::Hosts, end_ps: TimePs) -> Table {
    let ids: Vec<u32> = if h.costed {
        (0..net.n_hosts() as u32).collect()
    } else {
        vec![]
    };
    let col = |f: &dyn Fn(&crate::host::HostState) -> u64| {
        Column::I64(
            ids.iter()
                .map(|&i| f(&h.state[i as usize]) as i64)
                .collect(),
        )
    };
    Table {
        name: "hosts",
        columns: vec![
            ("host", Column::I64(ids.iter().map(|&i| i as i64).collect())),
            (
                "node_name",
                Column::Str(
                    ids.iter()
                        .map(|&i| net.node_names()[net.host_nodes()[i as usize] as usize].clone())
                        .collect(),
                ),
            ),
            (
                "cpu_utilisation",
                Column::F64(ids.iter().map(|&i| h.utilisation(i, end_ps)).collect()),
            ),
            ("rx_packets", col(&|s| s.rx_packets)),
            ("tx_packets", col(&|s| s.tx_packets)),
            ("rx_ring_drops", col(&|s| s.rx_ring_drops)),
            ("interrupts", col(&|s| s.interrupts)),
            ("wakeups", col(&|s| s.wakeups)),
            ("syscalls", col(&|s| s.syscalls)),
            (
                "noise_stolen_us",
                Column::F64(ids.iter().map(|&i| us(h.noise_stolen_ps(i))).collect()),
            ),
        ],
    }
}

pub fn drops_table(net: &Network) -> Table {
    let d = net.drop_log();
    Table {
        name: "drops",
        columns: vec![
            (
                "time_us",
                Column::F64(d.iter().map(|x| us(x.time_ps)).collect()),
            ),
            (
                "node",
                Column::I64(
                    d.iter()
                        .map(|x| net.ports()[x.port as usize].node as i64)
                        .collect(),
                ),
            ),
            (
                "port",
                Column::I64(d.iter().map(|x| net.local_port(x.port) as i64).collect()),
            ),
            (
                "flow_id",
                Column::I64(d.iter().map(|x| x.flow_id as i64).collect()),
            ),
            (
                "frame_bytes",
                Column::I64(d.iter().map(|x| x.frame_bytes as i64).collect()),
            ),
        ],
    }
}

fn us_f(ps: f64) -> f64 {
    ps / PS_PER_US as f64
}

/// `cwnd_trace`: a traced connection's window after every ACK and timeout.
pub fn cwnd_trace_table(t: &crate::transport::stats::CwndTrace) -> Table {
    let s = &t.samples;
    Table {
        name: "cwnd_trace",
        columns: vec![
            (
                "flow_id",
                Column::I64(s.iter().map(|r| r.conn as i64).collect()),
            ),
            (
                "time_us",
                Column::F64(s.iter().map(|r| us(r.time_ps)).collect()),
            ),
            (
                "cwnd_bytes",
                Column::F64(s.iter().map(|r| r.cwnd_bytes).collect()),
            ),
            (
                "ssthresh_bytes",
                Column::F64(s.iter().map(|r| r.ssthresh_bytes).collect()),
            ),
            (
                "srtt_us",
                Column::F64(s.iter().map(|r| us(r.srtt_ps)).collect()),
            ),
            (
                "in_flight_bytes",
                Column::I64(s.iter().map(|r| r.in_flight_bytes as i64).collect()),
            ),
        ],
    }
}

/// `queue_trace`: a traced port's queue after every enqueue and departure.
pub fn queue_trace_table(t: &crate::net::capture::QueueTrace, net: &Network) -> Table {
    let r = &t.records;
    let node = |port: u32| net.ports()[port as usize].node;
    Table {
        name: "queue_trace",
        columns: vec![
            ("time_us", Column::F64(r.iter().map(|x| us(x.0)).collect())),
            (
                "node_name",
                Column::Str(
                    r.iter()
                        .map(|x| net.node_names()[node(x.1) as usize].clone())
                        .collect(),
                ),
            ),
            (
                "port",
                Column::I64(r.iter().map(|x| net.local_port(x.1) as i64).collect()),
            ),
            (
                "queue_bytes",
                Column::I64(r.iter().map(|x| x.2 as i64).collect()),
            ),
        ],
    }
}

/// Retransmissions, timeouts, RTT samples and drops of every flow in the flows table.
pub fn flow_diagnostics(
    m: &Metrics,
    tcp: &crate::transport::Tcp,
    net: &Network,
) -> Vec<FlowDiagnostics> {
    let mut tcp_drops: std::collections::HashMap<u32, u64> = Default::default();
    let mut udp_drops: std::collections::HashMap<u32, u64> = Default::default();
    for d in net.drop_log() {
        match d.proto {
            crate::packet::Proto::TCP => {
                *tcp_drops.entry(d.flow_id).or_default() += 1;
            }
            crate::packet::Proto::UDP => *udp_drops.entry(d.flow_id).or_default() += 1,
            _ => {}
        }
    }
    let diag = |r: &FlowRecord| match (r.tcp, tcp.sender(r.flow_id)) {
        (true, Some(s)) => FlowDiagnostics {
            retransmits: s.retransmits,
            timeouts: s.timeouts,
            rtt: s.rtt,
            drops: tcp_drops.get(&r.flow_id).copied().unwrap_or(0),
        },
        _ => FlowDiagnostics {
            drops: udp_drops.get(&r.flow_id).copied().unwrap_or(0),
            ..Default::default()
        },
    };
    m.flow_rows().iter().map(diag).collect()
}
