//! EQDS's receiver (`transport::eqds`): an ACK for each data packet and a NACK for each
//! trimmed header, sent at once; and the host's pull pacer, which sends one PULL per full
//! packet's time on the host's link, each worth a full packet's bytes: first to the
//! flows owed bytes (trimmed, or asked for by an RTS), in turn, then in turn to the flows
//! whose pull target is above what they were pulled, and when no flow asks for any, to
//! unfinished flows up to a window beyond their target (unrequested "slow" pulls, as
//! htsim's EQDS gives: a window below the round trip's bytes would otherwise hold a lone
//! flow below line rate). And EQDS's table and headline.

use super::*;

/// A host's pull pacer.
#[derive(Clone, Debug)]
pub(crate) struct Pacer {
    /// Flows owed bytes, flows below their pull target, and unfinished flows within a
    /// window beyond it, in the order they take turns.
    owed: std::collections::VecDeque<u32>,
    active: std::collections::VecDeque<u32>,
    idle: std::collections::VecDeque<u32>,
    /// When it may send its next PULL, and its timer (NEVER: none set).
    next_ps: TimePs,
    pub(super) pull_at: TimePs,
}

impl Default for Pacer {
    fn default() -> Self {
        Pacer {
            owed: Default::default(),
            active: Default::default(),
            idle: Default::default(),
            next_ps: 0,
            pull_at: NEVER,
        }
    }
}

impl Eqds {
    /// A control packet (`op`) on flow `id`: from its receiver to its sender (ACK, NACK,
    /// PULL: `count` is the bytes pulled so far) or from its sender (RTS: `count` is the
    /// bytes it asks for); `seq` names a packet.
    pub(super) fn control(
        &mut self,
        path: &mut HostPath<'_, impl TransportSched>,
        id: u32,
        op: u16,
        (seq, count): (u64, u64),
    ) {
        let f = &self.flows[id as usize];
        let (from, to) = if op == RTS {
            (f.src, f.dst)
        } else {
            (f.dst, f.src)
        };
        let p = Packet {
            src_host: from,
            dst_host: to,
            dst_port: op,
            proto: PROTO,
            flow_id: id,
            hash: f.hash ^ (seq as u32).wrapping_mul(0x9E37_79B9),
            frame_bytes: path.frame_bytes(from, HEADER_BYTES),
            seq,
            ack: count,
            ts_ps: path.now(),
            ..Default::default()
        };
        path.transmit(from, p);
    }

    /// At the receiver: a data packet is taken and acknowledged, a trimmed header NACKed
    /// and its bytes owed, an RTS's bytes owed; the flow's pull target moves to what the
    /// packet names, and the flow waits in the pacer for what it is owed or wants.
    pub(super) fn on_data(&mut self, path: &mut HostPath<'_, impl TransportSched>, p: &Packet) {
        let id = p.flow_id;
        let full = u64::from(self.payload_bytes + HEADER_BYTES);
        if self.flows[id as usize].received_ps.is_some() {
            return self.control(path, id, ACK, (ALL, 0));
        }
        if p.dst_port == RTS {
            self.flows[id as usize].owed += p.ack;
        } else if p.framing & framing::TRIMMED != 0 {
            self.control(path, id, NACK, (p.seq, 0));
            let f = &mut self.flows[id as usize];
            f.owed += full;
            f.target = f.target.max(p.ack);
        } else {
            self.control(path, id, ACK, (p.seq, 0));
            let f = &mut self.flows[id as usize];
            f.target = f.target.max(p.ack);
            if f.got.set(p.seq as u32) {
                f.got_bytes += u64::from(p.payload_bytes);
                if let Some(app) = f.app {
                    self.notes.push(Note::Delivered {
                        app,
                        host: f.dst,
                        conn: id,
                        total: f.got_bytes,
                    });
                }
                if f.got_bytes >= f.size {
                    f.received_ps = Some(path.now());
                }
            }
        }
        self.wait_for_pulls(path, id);
    }

    /// Flow `id` joins its host's pacer's lists for what it is owed or wants (unless it
    /// waits there already, or has all its bytes), and the pacer runs if idle.
    fn wait_for_pulls(&mut self, path: &mut HostPath<'_, impl TransportSched>, id: u32) {
        let f = &self.flows[id as usize];
        if f.received_ps.is_some() {
            return;
        }
        let host = f.dst;
        self.join_lists(id);
        if self.pacers[host as usize].pull_at == NEVER {
            self.pace(path, host);
        }
    }

    /// The next flow to pull for at host `host`: the first owed bytes, else the first
    /// below its target (flows that need nothing more leave the lists).
    fn next_to_pull(&mut self, host: u32) -> Option<u32> {
        let pacer = &mut self.pacers[host as usize];
        while let Some(id) = pacer.owed.pop_front() {
            let f = &mut self.flows[id as usize];
            f.in_rtx = false;
            if f.owed > 0 && f.received_ps.is_none() {
                return Some(id);
            }
        }
        while let Some(id) = pacer.active.pop_front() {
            let f = &mut self.flows[id as usize];
            f.in_active = false;
            if f.target > f.pulled && f.received_ps.is_none() {
                return Some(id);
            }
        }
        let window = self.speculative_bytes;
        while let Some(id) = pacer.idle.pop_front() {
            let f = &mut self.flows[id as usize];
            f.in_idle = false;
            if f.pulled < f.target + window && f.received_ps.is_none() {
                return Some(id);
            }
        }
        None
    }

    /// Host `host`'s pacer sends its next PULL if its time has come (else sets its timer
    /// for then): a full packet's bytes more for the flow whose turn it is.
    pub(super) fn pace(&mut self, path: &mut HostPath<'_, impl TransportSched>, host: u32) {
        let now = path.now();
        if now < self.pacers[host as usize].next_ps {
            let at = self.pacers[host as usize].next_ps;
            return self.arm(path, host, Timer::Pull, at);
        }
        let Some(id) = self.next_to_pull(host) else {
            return;
        };
        let full = u64::from(self.payload_bytes + HEADER_BYTES);
        let f = &mut self.flows[id as usize];
        f.pulled += full;
        f.owed -= f.owed.min(full);
        let pulled = f.pulled;
        self.stats.pulls += 1;
        self.control(path, id, PULL, (0, pulled));
        self.join_lists(id);
        let nic = &path.net.ports()[path.net.nic_port(host) as usize];
        let frame = self.full_frame(path, host);
        let next = now + nic.wire_time_ps(u64::from(frame + nic.wire_overhead_bytes));
        let pacer = &mut self.pacers[host as usize];
        pacer.next_ps = next;
        if !(pacer.owed.is_empty() && pacer.active.is_empty() && pacer.idle.is_empty()) {
            self.arm(path, host, Timer::Pull, next);
        }
    }

    /// Flow `id` takes a place at the back of each list it needs and is not in.
    fn join_lists(&mut self, id: u32) {
        let window = self.speculative_bytes;
        let f = &mut self.flows[id as usize];
        let pacer = &mut self.pacers[f.dst as usize];
        if f.pulled < f.target + window && !f.in_idle && f.received_ps.is_none() {
            f.in_idle = true;
            pacer.idle.push_back(id);
        }
        if f.owed > 0 && !f.in_rtx {
            f.in_rtx = true;
            pacer.owed.push_back(id);
        }
        if f.target > f.pulled && !f.in_active {
            f.in_active = true;
            pacer.active.push_back(id);
        }
    }

    /// The `eqds` table: one row per flow (none if the run started none).
    pub(super) fn table(&self, out: &mut Vec<crate::table::Table>) {
        use crate::table::{Column, Table};
        if self.flows.is_empty() {
            return;
        }
        let f = &self.flows;
        let int = |g: &dyn Fn(&Flow) -> i64| Column::I64(f.iter().map(g).collect());
        let us = |g: &dyn Fn(&Flow) -> Option<TimePs>| {
            Column::F64(
                f.iter()
                    .map(|x| g(x).map_or(f64::NAN, |t| (t - x.start_ps) as f64 / 1e6))
                    .collect(),
            )
        };
        out.push(Table {
            name: "eqds",
            columns: vec![
                ("flow", Column::I64((0..f.len() as i64).collect())),
                ("src", int(&|x| i64::from(x.src))),
                ("dst", int(&|x| i64::from(x.dst))),
                ("size_bytes", int(&|x| x.size as i64)),
                (
                    "start_us",
                    Column::F64(f.iter().map(|x| x.start_ps as f64 / 1e6).collect()),
                ),
                ("fct_us", us(&|x| x.received_ps)),
                ("acked_us", us(&|x| x.done_ps)),
                ("received_bytes", int(&|x| x.got_bytes as i64)),
                ("pulled_bytes", int(&|x| x.pulled as i64)),
            ],
        });
    }

    pub(super) fn headline_figures(&self, h: &mut serde_json::Map<String, serde_json::Value>) {
        if self.flows.is_empty() {
            return;
        }
        let done = self
            .flows
            .iter()
            .filter(|f| f.received_ps.is_some())
            .count() as u64;
        let s = &self.stats;
        for (k, v) in [
            ("eqds_flows", self.flows.len() as u64),
            ("eqds_completed", done),
            ("eqds_speculative_bytes", self.speculative_bytes),
            ("eqds_rto_ns", self.rto_ps / 1000),
            ("eqds_speculative_packets", s.speculative_packets),
            ("eqds_nacks", s.nacks),
            ("eqds_bounced", s.bounced),
            ("eqds_pulls", s.pulls),
            ("eqds_timeouts", s.timeouts),
            ("eqds_rts", s.rts),
            ("eqds_resent_packets", s.resent_packets),
        ] {
            h.insert(k.into(), v.into());
        }
    }
}
