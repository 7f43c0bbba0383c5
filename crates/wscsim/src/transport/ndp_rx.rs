//! NDP's receiver (`transport::ndp`): an ACK for each data packet and a NACK for each
//! trimmed header, sent at once; and for each arrival a PULL queued in the host's pull
//! pacer, which sends one per full data packet's time on the host's link, taking the
//! flows with pulls waiting in turn, so that the data they bring arrives at line rate.

use super::*;

/// A host's pull pacer.
#[derive(Clone, Debug)]
pub(crate) struct Pacer {
    /// Flows with pulls waiting, in the order they take their turns.
    waiting: std::collections::VecDeque<u32>,
    /// When it may send its next PULL, and its timer (NEVER: none set).
    next_ps: TimePs,
    pub(super) pull_at: TimePs,
}

impl Default for Pacer {
    fn default() -> Self {
        Pacer {
            waiting: Default::default(),
            next_ps: 0,
            pull_at: NEVER,
        }
    }
}

impl Ndp {
    /// A control packet (`op`) from flow `id`'s receiver to its sender about packet `seq`
    /// (a PULL: `pulls` is its count).
    fn reply(
        &mut self,
        path: &mut HostPath<'_, impl TransportSched>,
        id: u32,
        op: u16,
        (seq, pulls): (u64, u64),
    ) {
        let f = &self.flows[id as usize];
        let p = Packet {
            src_host: f.dst,
            dst_host: f.src,
            dst_port: op,
            proto: PROTO,
            flow_id: id,
            hash: f.hash ^ (seq as u32).wrapping_mul(0x9E37_79B9),
            frame_bytes: path.frame_bytes(f.dst, HEADER_BYTES),
            seq,
            ack: pulls,
            ts_ps: path.now(),
            ..Default::default()
        };
        path.transmit(p.src_host, p);
    }

    /// At the receiver: a data packet is taken and acknowledged, a trimmed header
    /// NACKed; either way a pull waits in the host's pacer (unless everything arrived).
    pub(super) fn on_data(&mut self, path: &mut HostPath<'_, impl TransportSched>, p: &Packet) {
        let id = p.flow_id;
        let n = p.seq as u32;
        let trimmed = p.framing & framing::TRIMMED != 0;
        self.reply(path, id, if trimmed { NACK } else { ACK }, (p.seq, 0));
        let f = &mut self.flows[id as usize];
        if !trimmed && f.got.set(n) {
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
        let f = &mut self.flows[id as usize];
        if f.received_ps.is_some() {
            return;
        }
        f.pulls_waiting += 1;
        let host = f.dst;
        if f.pulls_waiting == 1 {
            self.pacers[host as usize].waiting.push_back(id);
        }
        if self.pacers[host as usize].pull_at == NEVER {
            self.pace(path, host);
        }
    }

    /// Host `host`'s pacer sends its next PULL if its time has come (else sets its timer
    /// for then), to the flow whose turn it is.
    pub(super) fn pace(&mut self, path: &mut HostPath<'_, impl TransportSched>, host: u32) {
        let now = path.now();
        let pacer = &self.pacers[host as usize];
        if now < pacer.next_ps {
            let at = pacer.next_ps;
            return self.arm(path, host, Timer::Pull, at);
        }
        // The flow whose turn it is (one that has all its data waits no more).
        let id = loop {
            let Some(id) = self.pacers[host as usize].waiting.pop_front() else {
                return;
            };
            let f = &mut self.flows[id as usize];
            if f.received_ps.is_none() {
                break id;
            }
            f.pulls_waiting = 0;
        };
        let f = &mut self.flows[id as usize];
        f.pulls_waiting -= 1;
        f.pulls_sent += 1;
        let pulls = f.pulls_sent;
        if f.pulls_waiting > 0 {
            self.pacers[host as usize].waiting.push_back(id);
        }
        self.stats.pulls += 1;
        self.reply(path, id, PULL, (0, pulls));
        // One full data packet's time on this host's link.
        let nic = &path.net.ports()[path.net.nic_port(host) as usize];
        let frame = self.full_frame(path, host);
        let next = now + nic.wire_time_ps(u64::from(frame + nic.wire_overhead_bytes));
        let pacer = &mut self.pacers[host as usize];
        pacer.next_ps = next;
        if !pacer.waiting.is_empty() {
            self.arm(path, host, Timer::Pull, next);
        }
    }
}
