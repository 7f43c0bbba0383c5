//! RoCEv2's receiver (`transport::roce`): it takes packets in order and acknowledges
//! them; past a gap it sends a NAK once per gap; a CE-marked packet brings a CNP as often
//! as DCQCN's notification point allows. With selective repeat (`roce.recovery =
//! "selective"`) it also holds the packets that arrive past a gap, a bit per packet
//! number, and when the gap fills it takes them all at once and names the next gap, if
//! any, in a NAK of its own: the sender then sends only the packets NAKs name.

use super::*;

impl Roce {
    /// A reply (ACK, NAK or CNP, by `op`) from QP `qp`'s receiver to its sender; an ACK or
    /// NAK echoes `data`'s send time and telemetry records.
    pub(super) fn reply(
        &mut self,
        path: &mut HostPath<'_, impl TransportSched>,
        qp: u32,
        op: u16,
        seq: u64,
        data: &Packet,
    ) {
        let q = &self.qps[qp as usize];
        let header = if op == CNP {
            CNP_HEADER_BYTES
        } else {
            ACK_HEADER_BYTES
        };
        let mut p = Packet {
            src_host: q.dst,
            dst_host: q.src,
            dst_port: op,
            proto: PROTO,
            flow_id: qp,
            hash: q.hash,
            frame_bytes: path.frame_bytes(q.dst, header),
            seq,
            dscp: self.spec.dscp,
            ts_ps: path.now(),
            ..Default::default()
        };
        if op != CNP {
            // The data packet's send time and the links it crossed (Swift's hop count).
            p.ts_echo_ps = data.ts_ps;
            p.src_port = u16::from(data.hops);
            if data.int_count() > 0 {
                p.copy_int(data);
            }
        }
        path.transmit(p.src_host, p);
    }

    /// At the receiver: in order, taken (with what was held behind it) and acknowledged;
    /// past a gap, held (selective repeat) and a NAK (once per gap); CE-marked, a CNP as
    /// often as DCQCN's notification point allows.
    pub(super) fn on_data(&mut self, path: &mut HostPath<'_, impl TransportSched>, p: &Packet) {
        let qp = p.flow_id;
        let now = path.now();
        let q = &mut self.qps[qp as usize];
        if p.ecn == ecn::CE {
            if let Some(s) = self.spec.congestion.dcqcn() {
                if q.np.on_marked(s, now) {
                    self.stats.cnps += 1;
                    self.reply(path, qp, CNP, 0, p);
                }
            }
        }
        let q = &mut self.qps[qp as usize];
        if p.seq == q.expected {
            self.take(path, p);
        } else if p.seq > q.expected {
            if self.spec.selective {
                self.hold(qp, p.seq);
            }
            self.nak_gap(path, p);
        } else {
            let e = q.expected;
            self.reply(path, qp, ACK, e, p); // a duplicate: say again where it stands
        }
    }

    /// Takes in-order packet `p`, and after it what was held; acknowledges every
    /// `ack_every` packets and at the end; names the next gap if packets wait past it.
    fn take(&mut self, path: &mut HostPath<'_, impl TransportSched>, p: &Packet) {
        let qp = p.flow_id;
        let payload = u64::from(self.spec.payload_bytes);
        let q = &mut self.qps[qp as usize];
        q.expected += u64::from(p.payload_bytes);
        q.nak_for = NEVER;
        q.unacked_packets += 1;
        while q.expected < q.size && take_held(&mut q.held, q.expected / payload) {
            q.expected += (q.size - q.expected).min(payload);
            q.unacked_packets += 1;
        }
        let (expected, app) = (q.expected, q.app);
        if let Some(app) = app {
            self.notes.push(Note::Delivered {
                app,
                host: p.dst_host,
                conn: qp,
                total: expected,
            });
        }
        let q = &mut self.qps[qp as usize];
        if q.unacked_packets >= self.spec.ack_every || q.expected >= q.size {
            q.unacked_packets = 0;
            self.reply(path, qp, ACK, expected, p);
        }
        let q = &self.qps[qp as usize];
        if q.held.iter().any(|&w| w != 0) {
            self.nak_gap(path, p); // packets wait past the next gap
        }
    }

    /// Holds packet `seq` of QP `qp`, past the gap.
    fn hold(&mut self, qp: u32, seq: u64) {
        let payload = u64::from(self.spec.payload_bytes);
        let q = &mut self.qps[qp as usize];
        let n = (seq / payload) as usize;
        if q.held.is_empty() {
            q.held = vec![0; (q.size.div_ceil(payload) as usize).div_ceil(64)];
        }
        q.held[n / 64] |= 1 << (n % 64);
    }

    /// A NAK for the gap at the receiver's next expected byte, once per gap.
    fn nak_gap(&mut self, path: &mut HostPath<'_, impl TransportSched>, p: &Packet) {
        let q = &mut self.qps[p.flow_id as usize];
        if q.nak_for != q.expected {
            q.nak_for = q.expected;
            self.stats.naks += 1;
            let e = q.expected;
            self.reply(path, p.flow_id, NAK, e, p);
        }
    }
}

/// Clears and returns bit `n` of `held` (false if it is past the end).
fn take_held(held: &mut [u64], n: u64) -> bool {
    let (w, b) = ((n / 64) as usize, n % 64);
    match held.get_mut(w) {
        Some(word) if *word & (1 << b) != 0 => {
            *word &= !(1 << b);
            true
        }
        _ => false,
    }
}
