//! A toy transport, the example of docs/extending.md ("Adding a transport"): stop and
//! wait. A message goes one segment at a time; the receiver acknowledges each, and the
//! sender sends the next once the acknowledgement is back, or sends the same segment again
//! when its timer runs out first. The receiver counts a segment once, however often it
//! comes, and tells the receiving application, if one listens, what arrived
//! (`Note::Delivered`). This file
//! and one line in `transport::builtin_transports!` are all it takes; it is compiled into
//! the crate for its tests only (`#[cfg(test)]` on that line).
//!
//! What it leaves out: handshakes, windows, congestion control; its timeout is fixed
//! (`rto_ps`), not measured.

use super::{HostPath, Note, TransportBuild, TransportKind, TransportSched, Wire};
use crate::engine::TimePs;
use crate::packet::{five_tuple_hash, Packet, PktId, Proto, UDP_IP_HEADER_BYTES};

/// Its protocol number: one IANA leaves unassigned (146-252).
pub const PROTO: Proto = Proto(200);
/// `dst_port` of a data segment and of an acknowledgement.
const DATA: u16 = 1;
const ACK: u16 = 2;

/// A segment's timer: message `msg`'s `round`-th send (a timer of an older send finds its
/// segment acknowledged and does nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToyTimer {
    msg: u32,
    round: u32,
}

/// One message, both ends.
struct Message {
    src: u32,
    dst: u32,
    /// The application told of arrivals (None: none listens).
    app: Option<u32>,
    hash: u32,
    bytes: u64,
    /// Bytes the sender has had acknowledged, and the receiver has taken.
    acked: u64,
    received: u64,
    /// Sends so far (the timer's `round`).
    round: u32,
    /// When the last acknowledgement came back (the message is done).
    done_ps: Option<TimePs>,
}

pub struct StopAndWait {
    /// Payload bytes per segment.
    pub segment_bytes: u32,
    /// How long the sender waits for an acknowledgement before sending again.
    pub rto_ps: TimePs,
    /// Segments sent again.
    pub retransmits: u64,
    messages: Vec<Message>,
    notes: Vec<Note>,
}

impl StopAndWait {
    /// Sends `bytes` from `src` to `dst`; `app` hears of them at `dst`. Its id.
    pub fn send(
        &mut self,
        path: &mut HostPath<'_, impl TransportSched>,
        src: u32,
        dst: u32,
        app: Option<u32>,
        bytes: u64,
    ) -> u32 {
        let msg = self.messages.len() as u32;
        self.messages.push(Message {
            src,
            dst,
            app,
            hash: five_tuple_hash(src, dst, msg as u16, 7, PROTO),
            bytes,
            acked: 0,
            received: 0,
            round: 0,
            done_ps: None,
        });
        self.send_segment(path, msg);
        msg
    }

    /// When message `msg`'s last acknowledgement came back, if it has.
    pub fn done_ps(&self, msg: u32) -> Option<TimePs> {
        self.messages[msg as usize].done_ps
    }

    /// The segment after the acknowledged bytes, and its timer.
    fn send_segment(&mut self, path: &mut HostPath<'_, impl TransportSched>, msg: u32) {
        let m = &mut self.messages[msg as usize];
        let payload = (m.bytes - m.acked).min(u64::from(self.segment_bytes)) as u32;
        m.round += 1;
        let p = Packet {
            src_host: m.src,
            dst_host: m.dst,
            dst_port: DATA,
            proto: PROTO,
            flow_id: msg,
            hash: m.hash,
            frame_bytes: path.frame_bytes(m.src, payload + UDP_IP_HEADER_BYTES),
            payload_bytes: payload,
            seq: m.acked,
            ts_ps: path.now(),
            ..Default::default()
        };
        let (src, round) = (m.src, m.round);
        path.transmit(src, p);
        let at = path.now() + self.rto_ps;
        let timer = ToyTimer { msg, round };
        path.ev.schedule(at, super::TransportEvent::from(timer));
    }

    /// At the receiver: a segment not seen before counts; each is acknowledged.
    fn on_data(&mut self, path: &mut HostPath<'_, impl TransportSched>, p: &Packet) {
        let m = &mut self.messages[p.flow_id as usize];
        if p.seq == m.received {
            m.received += u64::from(p.payload_bytes);
            if let Some(app) = m.app {
                let total = m.received;
                self.notes.push(Note::Delivered {
                    app,
                    host: p.dst_host,
                    conn: p.flow_id,
                    total,
                });
            }
        }
        let ack = Packet {
            src_host: m.dst,
            dst_host: m.src,
            dst_port: ACK,
            proto: PROTO,
            flow_id: p.flow_id,
            hash: m.hash,
            frame_bytes: path.frame_bytes(m.dst, UDP_IP_HEADER_BYTES),
            seq: p.seq + u64::from(p.payload_bytes),
            ts_ps: path.now(),
            ..Default::default()
        };
        path.transmit(ack.src_host, ack);
    }

    /// At the sender: an acknowledgement of new bytes lets the next segment go.
    fn on_ack(&mut self, path: &mut HostPath<'_, impl TransportSched>, p: &Packet) {
        let m = &mut self.messages[p.flow_id as usize];
        if p.seq <= m.acked {
            return; // a duplicate's acknowledgement
        }
        m.acked = p.seq;
        if m.acked == m.bytes {
            m.done_ps = Some(path.now());
            return;
        }
        self.send_segment(path, p.flow_id);
    }
}

impl TransportKind for StopAndWait {
    const NAME: &'static str = "toy stop-and-wait";
    const PROTO: Proto = PROTO;
    type Event = ToyTimer;

    /// (A real transport reads its resolved parameters from `b`; the toy's are fixed.)
    fn build(_b: &TransportBuild) -> Self {
        StopAndWait {
            segment_bytes: 1000,
            rto_ps: 1_000_000_000, // 1 ms
            retransmits: 0,
            messages: Vec::new(),
            notes: Vec::new(),
        }
    }

    fn on_packet(&mut self, path: &mut HostPath<'_, impl TransportSched>, pkt: PktId) {
        let p = path.take(pkt);
        match p.dst_port {
            DATA => self.on_data(path, &p),
            _ => self.on_ack(path, &p),
        }
    }

    fn on_timer(&mut self, path: &mut HostPath<'_, impl TransportSched>, e: ToyTimer) {
        let m = &self.messages[e.msg as usize];
        if e.round != m.round || m.done_ps.is_some() {
            return; // that send was acknowledged
        }
        self.retransmits += 1;
        self.send_segment(path, e.msg);
    }

    fn timer_host(&self, e: ToyTimer) -> u32 {
        self.messages[e.msg as usize].src
    }

    fn has_notes(&self) -> bool {
        !self.notes.is_empty()
    }

    fn take_notes(&mut self, into: &mut Vec<Note>) {
        into.append(&mut self.notes);
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::TimePs;
    use crate::sim::Sim;

    /// Sends one message of `bytes` from host 0 to host 1 with the given timeout; when it
    /// was done, and the segments sent again.
    fn transfer(bytes: u64, rto_ps: TimePs) -> (TimePs, u64) {
        let mut s = Sim::from_json(
            r#"{"duration":"1s","topology":{"kind":"single_switch","hosts":2},
            "workload":{"kind":"none"}}"#,
        )
        .unwrap();
        s.transports.toy.rto_ps = rto_ps;
        let msg = s.with_transports(|t, path| t.toy.send(path, 0, 1, None, bytes));
        s.run();
        let done = s.transports.toy.done_ps(msg).expect("the message arrived");
        (done, s.transports.toy.retransmits)
    }

    /// Stop and wait takes one round trip per segment: ten full segments take ten times
    /// as long as one. A timeout shorter than a round trip sends segments again, and the
    /// message still arrives, as fast as the acknowledgements come.
    #[test]
    fn one_round_trip_per_segment_and_timeouts_send_again() {
        let (one, r1) = transfer(1000, 1_000_000_000);
        let (ten, r10) = transfer(10_000, 1_000_000_000);
        assert_eq!((r1, r10), (0, 0));
        assert_eq!(ten, 10 * one, "{ten} ps against 10 x {one} ps");
        let (hasty, again) = transfer(10_000, one / 2);
        assert!(again >= 10, "{again} segments sent again");
        assert!(hasty >= ten, "{hasty} ps against {ten} ps");
    }
}
