//! Reliable messages between servers of a torus, for any service: a message of any size
//! goes as packets under a sliding window with cumulative acknowledgements and a
//! retransmission timeout that doubles on each expiry (go-back-N from the first packet not
//! acknowledged). A message goes to a server, or to a key (delivered at whichever server is
//! the key's root when each packet arrives; a receiver that takes over starts from nothing,
//! so the sender goes back to what it acknowledges). Receivers keep what arrives out of
//! order within the window and acknowledge every packet.
//!
//! Each message paces itself as TCP Tahoe does: its window starts at `INITIAL_WINDOW`
//! packets, grows by one per packet acknowledged up to a threshold (slow start) and by one
//! per window beyond it, never past `window`; a timeout halves the threshold and starts
//! again from one packet. The retransmission timeout follows the round trips each sending
//! server measures (RFC 6298: smoothed RTT plus four deviations, from acknowledgements
//! that echo the data packet's send time), never below the configured one, which is also
//! where a server starts; a fixed timeout fires early behind a deep queue and resends a
//! whole window that was only waiting. Without it, many messages at once (a hundred images through
//! the external switch) would overrun the buffers on their way and collapse under
//! retransmissions. The paper's transport is not described; this is wscsim's choice.
//!
//! The owning service hears of progress through `events`: a message that has wholly
//! arrived at a server (`Arrived`, once per receiving server) and one whose every packet
//! is acknowledged (`Acked`). CamCubeOS's reliable transport service (`reliable`) and the
//! key-value store (`kvstore`) are built on it.
//!
//! Packet fields: `flow_id` the message, `seq` the packet's number (data) or the cumulative
//! acknowledgement (every packet below it has arrived), `src_port` 0 for data and 1 for
//! acks, `ts_ps` when the data packet was sent. A message's state is kept for the whole run
//! (its slot is not reused), so a late packet of a finished message is recognised.

use super::{SvcCtx, SvcEvent, SvcSched, SERVICE_HEADER_BYTES};
use crate::engine::{TimePs, NEVER};
use crate::packet::{Packet, PktId, Proto, TO_KEY};

/// Bytes of an acknowledgement's payload (message and cumulative count).
const ACK_PAYLOAD_BYTES: u32 = 16;

/// Packets a message may have in flight before its first acknowledgement.
const INITIAL_WINDOW: f64 = 4.0;

/// Where a message goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum To {
    Host(u32),
    /// The routing bits of a key.
    Key(u64),
}

/// How a service's messages travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamParams {
    /// The service whose packets these are (its id in `dst_port`).
    pub service: u16,
    /// Payload bytes per packet.
    pub payload_bytes: u32,
    /// The most packets in flight.
    pub window: u32,
    /// Initial retransmission timeout (doubled on each expiry, up to 1 s).
    pub rto_ps: TimePs,
}

/// What happened to a message, for its service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamEvent {
    /// Message `id` has wholly arrived at server `host`.
    Arrived { id: u32, host: u32 },
    /// Every packet of message `id` is acknowledged: the sender is done with it.
    Acked { id: u32 },
}

/// One message: its sender's state and outcome, and its receiver's.
#[derive(Clone, Debug)]
pub struct Stream {
    pub src: u32,
    /// When it was opened.
    pub open_ps: TimePs,
    pub to: To,
    pub size_bytes: u64,
    pub packets: u32,
    /// Packets below this are acknowledged.
    pub acked: u32,
    /// The next packet to send.
    next: u32,
    /// Packets it may have in flight now, and the slow-start threshold.
    cwnd: f64,
    ssthresh: f64,
    rto_ps: TimePs,
    /// When the retransmission timer expires (NEVER: not armed).
    deadline_ps: TimePs,
    pub retransmits: u32,
    pub timeouts: u32,
    /// When the last acknowledgement came (NEVER: not yet).
    pub end_ps: TimePs,
    /// The sender gave up on it.
    pub abandoned: bool,
    /// The server receiving it (u32::MAX: none yet).
    receiver: u32,
    /// Packets below this have arrived at the receiver.
    expected: u32,
    /// Arrived beyond `expected`, by offset (within the window).
    beyond: Vec<bool>,
}

impl Stream {
    /// A message of `size_bytes` from `src` to `to`, opened at `open_ps`, nothing sent yet,
    /// its timeout the configured one.
    fn new(params: &StreamParams, src: u32, to: To, size_bytes: u64, open_ps: TimePs) -> Stream {
        Stream {
            src,
            open_ps,
            to,
            size_bytes,
            packets: size_bytes.div_ceil(u64::from(params.payload_bytes)).max(1) as u32,
            acked: 0,
            next: 0,
            cwnd: INITIAL_WINDOW.min(f64::from(params.window)),
            ssthresh: f64::from(params.window),
            rto_ps: params.rto_ps,
            deadline_ps: NEVER,
            retransmits: 0,
            timeouts: 0,
            end_ps: NEVER,
            abandoned: false,
            receiver: u32::MAX,
            expected: 0,
            beyond: Vec::new(),
        }
    }
}

/// A sending server's round-trip estimate (RFC 6298), in picoseconds.
#[derive(Clone, Copy, Debug, Default)]
struct RttEstimate {
    srtt: f64,
    rttvar: f64,
    sampled: bool,
}

pub struct Streams {
    pub params: StreamParams,
    pub list: Vec<Stream>,
    /// Per sending server, its round-trip estimate.
    rtt: Vec<RttEstimate>,
    /// What happened since the owner last looked (the owner drains it).
    pub events: Vec<StreamEvent>,
}

impl Streams {
    pub fn new(params: StreamParams) -> Streams {
        Streams {
            params,
            list: Vec::new(),
            rtt: Vec::new(),
            events: Vec::new(),
        }
    }

    /// Opens a message of `size_bytes` from `src` and sends what the window allows; its id.
    pub fn open(
        &mut self,
        ctx: &mut SvcCtx<impl SvcSched>,
        src: u32,
        to: To,
        size_bytes: u64,
    ) -> u32 {
        let id = self.list.len() as u32;
        let stream = Stream::new(&self.params, src, to, size_bytes, ctx.ev.now());
        self.list.push(Stream {
            rto_ps: self.rto_for(src),
            ..stream
        });
        self.fill_window(ctx, id as usize);
        id
    }

    /// Per message id, its rank by (time opened, sender, id). In a partitioned run the ids
    /// count messages in the order partitions opened them, which depends on how their
    /// events interleaved; the ranks do not: messages a server opens at one instant are
    /// opened by one partition's events, whose order is its own.
    pub fn ranks(&self) -> Vec<u32> {
        let mut order: Vec<u32> = (0..self.list.len() as u32).collect();
        order.sort_by_key(|&i| (self.list[i as usize].open_ps, self.list[i as usize].src, i));
        let mut rank = vec![0; order.len()];
        for (r, &i) in order.iter().enumerate() {
            rank[i as usize] = r as u32;
        }
        rank
    }

    /// Sends what the window allows and arms the timer if something is in flight.
    fn fill_window(&mut self, ctx: &mut SvcCtx<impl SvcSched>, f: usize) {
        let window = self.params.window;
        if !ctx.net.host_up(self.list[f].src) {
            // A failed server sends nothing; its messages stop with it.
            return;
        }
        loop {
            let t = &self.list[f];
            let allowed = (t.cwnd as u32).clamp(1, window);
            if t.next >= t.packets || t.next >= t.acked + allowed {
                break;
            }
            let seq = t.next;
            self.list[f].next += 1;
            self.send_data(ctx, f, seq);
        }
        let now = ctx.ev.now();
        let t = &mut self.list[f];
        if t.acked < t.next && t.deadline_ps == NEVER {
            t.deadline_ps = now + t.rto_ps;
            ctx.ev.schedule(
                t.deadline_ps,
                SvcEvent::Timer {
                    service: self.params.service,
                    tag: f as u32,
                },
            );
        }
    }

    fn send_data(&mut self, ctx: &mut SvcCtx<impl SvcSched>, f: usize, seq: u32) {
        let t = &self.list[f];
        let sent = u64::from(seq) * u64::from(self.params.payload_bytes);
        let payload =
            (t.size_bytes.saturating_sub(sent)).min(u64::from(self.params.payload_bytes)) as u32;
        let (dst, key) = match t.to {
            To::Host(h) => (h, 0),
            To::Key(k) => (TO_KEY, k),
        };
        let frame = ctx.net.frame_bytes(t.src, payload + SERVICE_HEADER_BYTES);
        let pkt = ctx.net.pool_mut().alloc(Packet {
            proto: Proto::SERVICE,
            dst_port: self.params.service,
            src_host: t.src,
            dst_host: dst,
            key,
            flow_id: f as u32,
            seq: u64::from(seq),
            ts_ps: ctx.ev.now(),
            payload_bytes: payload,
            frame_bytes: frame,
            hash: crate::engine::rng::mix64(f as u64) as u32,
            ..Default::default()
        });
        ctx.hosts.send(ctx.net, ctx.ev, t.src, pkt);
    }

    /// A packet of these messages reached its destination `host` (data or ack).
    pub fn deliver(&mut self, ctx: &mut SvcCtx<impl SvcSched>, host: u32, pkt: PktId) {
        let p = *ctx.net.pool().get(pkt);
        ctx.net.delivered(pkt);
        let f = p.flow_id as usize;
        if p.src_port == 1 {
            let now = ctx.ev.now();
            self.sample(p.dst_host, now.saturating_sub(p.ts_echo_ps));
            self.on_ack(ctx, f, p.seq as u32);
            return;
        }
        let window = self.params.window as usize;
        let r = &mut self.list[f];
        if r.receiver != host {
            // A new receiver (the first, or a key's new root): it starts from nothing.
            r.receiver = host;
            r.expected = 0;
            r.beyond = vec![false; window];
        }
        let seq = p.seq as u32;
        if seq >= r.expected && ((seq - r.expected) as usize) < window {
            let was = r.expected;
            r.beyond[(seq - r.expected) as usize] = true;
            while r.beyond[0] {
                r.beyond.rotate_left(1);
                r.beyond[window - 1] = false;
                r.expected += 1;
            }
            if was < r.packets && r.expected >= r.packets {
                self.events
                    .push(StreamEvent::Arrived { id: f as u32, host });
            }
        }
        let ack = self.list[f].expected;
        let frame = ctx
            .net
            .frame_bytes(host, ACK_PAYLOAD_BYTES + SERVICE_HEADER_BYTES);
        let a = ctx.net.pool_mut().alloc(Packet {
            proto: Proto::SERVICE,
            dst_port: self.params.service,
            src_port: 1,
            src_host: host,
            dst_host: p.src_host,
            flow_id: p.flow_id,
            seq: u64::from(ack),
            payload_bytes: ACK_PAYLOAD_BYTES,
            frame_bytes: frame,
            hash: p.hash,
            ts_echo_ps: p.ts_ps,
            ..Default::default()
        });
        ctx.hosts.send(ctx.net, ctx.ev, host, a);
    }

    /// The timeout a message from `src` starts with: its round-trip estimate's, or the
    /// configured one before any sample (never below it).
    fn rto_for(&self, src: u32) -> TimePs {
        let floor = self.params.rto_ps;
        match self.rtt.get(src as usize) {
            Some(e) if e.sampled => ((e.srtt + 4.0 * e.rttvar) as TimePs).max(floor),
            _ => floor,
        }
    }

    /// A round trip of `sample_ps` measured at `src`.
    fn sample(&mut self, src: u32, sample_ps: TimePs) {
        if self.rtt.len() <= src as usize {
            self.rtt.resize(src as usize + 1, RttEstimate::default());
        }
        let e = &mut self.rtt[src as usize];
        let r = sample_ps as f64;
        if e.sampled {
            e.rttvar = 0.75 * e.rttvar + 0.25 * (e.srtt - r).abs();
            e.srtt = 0.875 * e.srtt + 0.125 * r;
        } else {
            *e = RttEstimate {
                srtt: r,
                rttvar: r / 2.0,
                sampled: true,
            };
        }
    }

    fn on_ack(&mut self, ctx: &mut SvcCtx<impl SvcSched>, f: usize, ack: u32) {
        let now = ctx.ev.now();
        let fresh_rto = self.rto_for(self.list[f].src);
        let t = &mut self.list[f];
        if t.end_ps != NEVER || t.abandoned {
            return;
        }
        if ack < t.acked {
            // A receiver that took over knows less: go back to what it has.
            t.next = ack;
        }
        if ack > t.acked {
            let newly = f64::from(ack - t.acked);
            t.cwnd = if t.cwnd < t.ssthresh {
                t.cwnd + newly
            } else {
                t.cwnd + newly / t.cwnd
            }
            .min(f64::from(self.params.window));
        }
        if ack != t.acked {
            t.acked = ack;
            t.rto_ps = fresh_rto;
            t.deadline_ps = NEVER;
        }
        if t.acked >= t.packets {
            t.end_ps = now;
            self.events.push(StreamEvent::Acked { id: f as u32 });
            return;
        }
        self.fill_window(ctx, f);
    }

    /// Message `tag`'s timer: if it is the live one, go back to the first unacknowledged
    /// packet and double the timeout.
    pub fn on_timer(&mut self, ctx: &mut SvcCtx<impl SvcSched>, tag: u32) {
        let f = tag as usize;
        let now = ctx.ev.now();
        let t = &mut self.list[f];
        if t.deadline_ps != now || t.end_ps != NEVER || t.abandoned {
            return;
        }
        t.timeouts += 1;
        t.ssthresh = (t.cwnd / 2.0).max(2.0);
        t.cwnd = 1.0;
        t.retransmits += t.next - t.acked;
        t.next = t.acked;
        t.rto_ps = (t.rto_ps * 2).min(crate::engine::PS_PER_S);
        t.deadline_ps = NEVER;
        self.fill_window(ctx, f);
    }

    /// Stops sending message `id` (its sender gave up on it, or failed).
    pub fn abandon(&mut self, id: u32) {
        let t = &mut self.list[id as usize];
        t.abandoned = true;
        t.deadline_ps = NEVER;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranks_of(opened: &[(u32, TimePs)]) -> Vec<u32> {
        let params = StreamParams {
            service: 1,
            payload_bytes: 1,
            window: 1,
            rto_ps: 1,
        };
        let mut s = Streams::new(params);
        s.list = opened
            .iter()
            .map(|&(src, t)| Stream::new(&params, src, To::Host(0), 1, t))
            .collect();
        s.ranks()
    }

    /// Two partitions open messages at the same instants, in either order: each message
    /// gets the same rank (by time, then sender, then the order its own sender opened
    /// them in).
    #[test]
    fn ranks_do_not_depend_on_which_partition_opened_first() {
        // Server 7's partition ran first, then server 2's: ids 0-1 are 7's, 2-4 are 2's.
        let a = ranks_of(&[(7, 10), (7, 10), (2, 10), (2, 10), (2, 5)]);
        // The other way round: ids 0-2 are 2's, 3-4 are 7's.
        let b = ranks_of(&[(2, 10), (2, 10), (2, 5), (7, 10), (7, 10)]);
        assert_eq!(a, vec![3, 4, 1, 2, 0]);
        assert_eq!(b, vec![1, 2, 0, 3, 4]);
        // The same message (sender, time, its place among its sender's) has one rank.
        assert_eq!((a[0], a[1]), (b[3], b[4]));
        assert_eq!((a[2], a[3], a[4]), (b[0], b[1], b[2]));
    }
}
