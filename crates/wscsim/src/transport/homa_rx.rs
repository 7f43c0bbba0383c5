//! Homa's receiver (`transport::homa`): takes data packets, grants to the messages with
//! the fewest bytes left to arrive, asks again for what a silent message misses, and
//! acknowledges a complete message; and Homa's table and headline figures.

use super::*;

impl Homa {
    /// A control packet (`op`) from message `id`'s receiver to its sender: `seq` is a
    /// grant's offset (packets) or the packet a RESEND asks for, `prio` a grant's level.
    fn reply(
        &mut self,
        path: &mut HostPath<'_, impl TransportSched>,
        id: u32,
        op: u16,
        (seq, prio): (u32, u8),
    ) {
        let m = &self.msgs[id as usize];
        let p = Packet {
            src_host: m.dst,
            dst_host: m.src,
            dst_port: op,
            proto: PROTO,
            flow_id: id,
            hash: m.hash,
            frame_bytes: path.frame_bytes(m.dst, HEADER_BYTES),
            dscp: (self.plan.priorities - 1) as u8,
            seq: u64::from(seq),
            ack: u64::from(prio),
            ts_ps: path.now(),
            ..Default::default()
        };
        path.transmit(p.src_host, p);
    }

    /// At the receiver: a data packet. The first of a message that needs grants puts it
    /// among the host's grantable messages; each one taken may move the grants on.
    pub(super) fn on_data(&mut self, path: &mut HostPath<'_, impl TransportSched>, p: &Packet) {
        let id = p.flow_id;
        let n = p.seq as u32;
        let now = path.now();
        let rto = self.spec.rto_ps;
        let m = &mut self.msgs[id as usize];
        if m.received_ps.is_some() {
            // A packet sent again after all arrived (its ACK lost): acknowledge again.
            return self.reply(path, id, ACK, (0, 0));
        }
        let host = m.dst;
        if !m.known {
            m.known = true;
            if m.grant_sent < m.packets {
                self.grantable[host as usize].push(id);
            }
        }
        let m = &mut self.msgs[id as usize];
        if !m.got.set(n) {
            return; // a duplicate (it does not put the silence timer off)
        }
        m.rx_deadline_ps = now + rto;
        m.n_got += 1;
        m.got_bytes += u64::from(p.payload_bytes);
        if let Some(app) = m.app {
            self.notes.push(Note::Delivered {
                app,
                host,
                conn: id,
                total: m.got_bytes,
            });
        }
        if m.n_got == m.packets {
            m.received_ps = Some(now);
            self.reply(path, id, ACK, (0, 0));
        } else {
            let at = m.rx_deadline_ps;
            self.arm(path, id, Timer::ReceiverTimeout, at);
        }
        self.regrant(path, host);
    }

    /// Host `host` grants to its `overcommitment` grantable messages with the fewest
    /// bytes left to arrive, to `rtt_bytes` beyond what arrived, at the level their rank
    /// gives them; a message granted whole leaves the list.
    fn regrant(&mut self, path: &mut HostPath<'_, impl TransportSched>, host: u32) {
        let mut list = std::mem::take(&mut self.grantable[host as usize]);
        let msgs = &self.msgs;
        list.sort_unstable_by_key(|&id| {
            let m = &msgs[id as usize];
            (m.size - m.got_bytes, id)
        });
        // The shortest of each sender's, up to `overcommitment` of them (a sender sends
        // one message at a time: granting two of its would leave one link idle).
        let mut chosen = std::mem::take(&mut self.chosen);
        chosen.clear();
        for &id in &list {
            let src = msgs[id as usize].src;
            if chosen.len() as u32 == self.plan.overcommitment {
                break;
            }
            if !chosen.iter().any(|&c| msgs[c as usize].src == src) {
                chosen.push(id);
            }
        }
        let granted = chosen.len() as u32;
        for (rank, &id) in (0..).zip(&chosen) {
            let m = &mut self.msgs[id as usize];
            let target = (m.n_got + self.plan.rtt_packets).min(m.packets);
            let prio = self.plan.scheduled_prio(rank, granted);
            if target > m.grant_sent || prio != m.grant_prio {
                m.grant_sent = target;
                m.grant_prio = prio;
                m.grants += 1;
                self.stats.grants += 1;
                self.reply(path, id, GRANT, (target, prio));
            }
        }
        self.chosen = chosen;
        let msgs = &self.msgs;
        list.retain(|&id| {
            let m = &msgs[id as usize];
            m.grant_sent < m.packets
        });
        self.grantable[host as usize] = list;
    }

    /// Message `id`'s receiver heard nothing of it for `rto`: it asks again for each
    /// packet granted (or unscheduled) that has not arrived, or, if none is missing,
    /// grants again (the grant may be what was lost).
    pub(super) fn on_receiver_timeout(
        &mut self,
        path: &mut HostPath<'_, impl TransportSched>,
        id: u32,
    ) {
        let now = path.now();
        let m = &mut self.msgs[id as usize];
        m.rx_timer_ps = NEVER;
        if m.received_ps.is_some() {
            return;
        }
        if now < m.rx_deadline_ps {
            let at = m.rx_deadline_ps;
            return self.arm(path, id, Timer::ReceiverTimeout, at);
        }
        self.stats.timeouts += 1;
        m.rx_deadline_ps = now + self.spec.rto_ps;
        let at = m.rx_deadline_ps;
        let missing: Vec<u32> = (0..m.grant_sent).filter(|&n| !m.got.has(n)).collect();
        if missing.is_empty() && m.grant_sent > m.unscheduled {
            let grant = (m.grant_sent, m.grant_prio);
            self.reply(path, id, GRANT, grant);
        }
        for n in missing {
            self.stats.resends += 1;
            self.reply(path, id, RESEND, (n, 0));
        }
        self.arm(path, id, Timer::ReceiverTimeout, at);
    }

    /// The `homa` table: one row per message (none if the run started none).
    pub(super) fn table(&self, out: &mut Vec<crate::table::Table>) {
        use crate::table::{Column, Table};
        if self.msgs.is_empty() {
            return;
        }
        let f = &self.msgs;
        let int = |g: &dyn Fn(&Msg) -> i64| Column::I64(f.iter().map(g).collect());
        out.push(Table {
            name: "homa",
            columns: vec![
                ("message", Column::I64((0..f.len() as i64).collect())),
                ("src", int(&|x| i64::from(x.src))),
                ("dst", int(&|x| i64::from(x.dst))),
                ("size_bytes", int(&|x| x.size as i64)),
                (
                    "start_us",
                    Column::F64(f.iter().map(|x| x.start_ps as f64 / 1e6).collect()),
                ),
                (
                    "fct_us",
                    Column::F64(
                        f.iter()
                            .map(|x| {
                                x.received_ps
                                    .map_or(f64::NAN, |t| (t - x.start_ps) as f64 / 1e6)
                            })
                            .collect(),
                    ),
                ),
                ("unscheduled_packets", int(&|x| i64::from(x.unscheduled))),
                (
                    "unscheduled_priority",
                    int(&|x| i64::from(x.unscheduled_prio)),
                ),
                ("grants", int(&|x| i64::from(x.grants))),
                ("received_bytes", int(&|x| x.got_bytes as i64)),
            ],
        });
    }

    pub(super) fn headline_figures(&self, h: &mut serde_json::Map<String, serde_json::Value>) {
        if self.msgs.is_empty() {
            return;
        }
        let done = self.msgs.iter().filter(|m| m.received_ps.is_some()).count() as u64;
        let s = &self.stats;
        let plan = &self.plan;
        for (k, v) in [
            ("homa_messages", self.msgs.len() as u64),
            ("homa_completed", done),
            ("homa_unscheduled_packets", s.unscheduled_packets),
            ("homa_grants", s.grants),
            ("homa_resends", s.resends),
            ("homa_resent_packets", s.resent_packets),
            ("homa_timeouts", s.timeouts),
            ("homa_rtt_bytes", plan.rtt_bytes),
            (
                "homa_unscheduled_priorities",
                u64::from(plan.unscheduled_levels),
            ),
        ] {
            h.insert(k.into(), v.into());
        }
    }
}
