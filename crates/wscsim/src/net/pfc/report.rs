//! What PFC reports: ports stuck in a circular wait (deadlock), and a table of pauses
//! per port and priority.

use super::{priority_of, Pfc, PRIORITIES};
use crate::net::{Network, NodeKind};

/// A row of the `pfc` table: port, priority, its counts, its headroom drops.
type Row = (u32, usize, super::PrioStats, u64);

impl Network {
    /// Ports whose egress is stuck for good: paused with packets waiting, where every
    /// input whose pause holds them waits in turn on ports that are themselves stuck (a
    /// circular wait, the cyclic buffer dependency of PFC deadlocks). The greatest such
    /// set, by elimination: a port leaves it as soon as one pause holding it can be
    /// lifted by a port outside it.
    pub fn pfc_deadlocked_ports(&self) -> Vec<u32> {
        let Some(pfc) = self.pfc.as_deref() else {
            return Vec::new();
        };
        let n = self.ports.len();
        let mut stuck: Vec<bool> = (0..n as u32)
            .map(|p| self.ports[p as usize].pkts_queued > 0 && self.pfc_held(p).is_none())
            .collect();
        loop {
            let mut changed = false;
            for p in 0..n as u32 {
                if stuck[p as usize] && self.pfc_can_be_lifted(p, pfc, &stuck) {
                    stuck[p as usize] = false;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        (0..n as u32).filter(|&p| stuck[p as usize]).collect()
    }

    /// Whether some pause holding port `p` can be lifted: the pausing input (the peer's
    /// end of the link) has packets of that priority at a port not in `stuck`, or none.
    fn pfc_can_be_lifted(&self, p: u32, pfc: &Pfc, stuck: &[bool]) -> bool {
        let pt = &self.ports[p as usize];
        let peer = &self.nodes[pt.peer_node as usize];
        if peer.kind == NodeKind::Host {
            return true;
        }
        let input = pt.peer_in_port;
        let heads = (pt.q_base..pt.q_base + pt.q_count)
            .filter_map(|q| {
                let id = self.queues[q as usize].head;
                (id != crate::packet::NO_PKT).then(|| 1u8 << priority_of(self.pool.get(id).dscp))
            })
            .fold(0, |a, b| a | b);
        (0..PRIORITIES).any(|prio| {
            (pfc.paused(p) & heads) >> prio & 1 == 1
                && (peer.port_base..peer.port_base + peer.nports)
                    .all(|out| !stuck[out as usize] || !self.port_holds(out, input, prio))
        })
    }

    /// Whether port `out` holds a packet that entered its node by local port `input` with
    /// priority `prio`.
    fn port_holds(&self, out: u32, input: u32, prio: usize) -> bool {
        let pt = &self.ports[out as usize];
        (pt.q_base..pt.q_base + pt.q_count).any(|q| {
            self.queues[q as usize].iter(&self.pool).any(|id| {
                let p = self.pool.get(id);
                u32::from(p.in_port) == input && priority_of(p.dscp) == prio
            })
        })
    }
}

impl Network {
    /// The `pfc` table (None without PFC): a row per port and priority that sent or
    /// received a PAUSE, or lost a lossless packet to a full headroom. `pauses_sent` and
    /// `resumes_sent` are the port's switch's, for what entered by this port;
    /// `pauses_received` and `paused_us` are this port's egress's.
    pub fn pfc_table(&self, end_ps: crate::engine::TimePs) -> Option<crate::table::Table> {
        use crate::table::{Column, Table};
        let pfc = self.pfc.as_deref()?;
        let dead = self.pfc_deadlocked_ports();
        let mut rows = Vec::new();
        for port in 0..self.ports.len() as u32 {
            for prio in 0..PRIORITIES {
                let st = pfc.prio_stats(port, prio);
                let drops = pfc.headroom_drops[port as usize * PRIORITIES + prio];
                if st.pauses_sent + st.pauses_received + drops > 0 {
                    rows.push((port, prio, st, drops));
                }
            }
        }
        let name = |n: u32| self.node_names[n as usize].clone();
        let int = |f: &dyn Fn(&Row) -> i64| Column::I64(rows.iter().map(f).collect());
        let secs = (end_ps as f64 / 1e12).max(1e-18);
        Some(Table {
            name: "pfc",
            columns: vec![
                (
                    "node_name",
                    Column::Str(
                        rows.iter()
                            .map(|r| name(self.ports[r.0 as usize].node))
                            .collect(),
                    ),
                ),
                ("port", int(&|r| i64::from(self.local_port(r.0)))),
                (
                    "peer_name",
                    Column::Str(
                        rows.iter()
                            .map(|r| name(self.ports[r.0 as usize].peer_node))
                            .collect(),
                    ),
                ),
                ("priority", int(&|r| r.1 as i64)),
                ("pauses_sent", int(&|r| r.2.pauses_sent as i64)),
                ("resumes_sent", int(&|r| r.2.resumes_sent as i64)),
                ("pauses_received", int(&|r| r.2.pauses_received as i64)),
                (
                    "paused_us",
                    Column::F64(
                        rows.iter()
                            .map(|r| pfc.paused_ps(r.0, r.1, end_ps) as f64 / 1e6)
                            .collect(),
                    ),
                ),
                (
                    "paused_fraction",
                    Column::F64(
                        rows.iter()
                            .map(|r| pfc.paused_ps(r.0, r.1, end_ps) as f64 / 1e12 / secs)
                            .collect(),
                    ),
                ),
                ("headroom_drops", int(&|r| r.3 as i64)),
                ("deadlocked", int(&|r| i64::from(dead.contains(&r.0)))),
            ],
        })
    }

    /// PFC's headline figures (none without PFC): PAUSE frames sent, the largest fraction
    /// of the run one port's priority was paused, lossless packets lost to a full
    /// headroom, and ports stuck in a deadlock at the end.
    pub fn pfc_headline(
        &self,
        end_ps: crate::engine::TimePs,
    ) -> Vec<(&'static str, serde_json::Value)> {
        let Some(pfc) = self.pfc.as_deref() else {
            return Vec::new();
        };
        let n = self.ports.len() as u32;
        let all = (0..n).flat_map(|p| (0..PRIORITIES).map(move |q| (p, q)));
        let sent: u64 = all
            .clone()
            .map(|(p, q)| pfc.prio_stats(p, q).pauses_sent)
            .sum();
        let most = all
            .map(|(p, q)| pfc.paused_ps(p, q, end_ps))
            .max()
            .unwrap_or(0) as f64
            / (end_ps.max(1) as f64);
        vec![
            ("pfc_pause_frames", sent.into()),
            ("pfc_max_paused_fraction", most.into()),
            (
                "pfc_headroom_drops",
                pfc.headroom_drops.iter().sum::<u64>().into(),
            ),
            (
                "pfc_deadlocked_ports",
                (self.pfc_deadlocked_ports().len() as u64).into(),
            ),
        ]
    }
}
