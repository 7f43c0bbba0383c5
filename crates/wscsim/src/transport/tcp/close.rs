//! TCP's teardown: `Tcp::close` ends one direction of a connection with a FIN, sent once
//! all of that direction's data has been, and retransmitted by the retransmission timer
//! until acknowledged. A FIN that arrives in order (all data before it in) ends the
//! receiver's stream: the application is told (`Note::Closed`) while its own side is still
//! open, and the FIN is acknowledged after the delayed-ACK timeout so that the
//! application's own close carries the acknowledgement (Linux's CLOSE_WAIT, which enters
//! interactive mode); a side that has closed already acknowledges at once (Linux's
//! FIN_WAIT to TIME_WAIT). Once every direction of a connection (both, for two linked
//! with `link_reverse`) has its FIN acknowledged, the connection's slot is free for the
//! next `open` (the smallest free slot, once its segments have left the NIC): its counts
//! go to `Tcp::retired`, and its packets that arrive later are dropped.
//!
//! Simplified: no TIME_WAIT state (the port is not held: the model gives each connection
//! its own source port and drops packets of a connection whose slot was reused; ports
//! cycle every 60,000 connections, so a packet that arrived 60,000 connections late at a
//! slot reused by a connection with its port would be taken for that one's: stale packets
//! arrive within a round trip or two), no RST, no half-open or orphan limits, and a FIN
//! that arrives ahead of missing data is ignored (the sender's timer sends it again)
//! instead of queued.

use super::*;

impl TcpPart {
    /// The application at `conn`'s source closes its sending direction: a `close` system
    /// call on a host that costs time, then the FIN once all written data has gone.
    pub fn close(&mut self, w: &mut impl Wire, conn: u32) {
        let s = &mut self.senders[conn];
        debug_assert_eq!(s.fin, Fin::Open, "connection {conn} closed twice");
        s.fin = Fin::Wanted;
        let (host, hash) = (s.host, s.hash);
        w.syscall(host, hash);
        self.send_more(w, conn);
    }

    /// Which connection holds slot `conn` now (its source port: each connection opened
    /// takes the next), for state kept per slot outside the transport.
    pub fn epoch(&self, conn: u32) -> u32 {
        u32::from(self.receivers[conn].sport)
    }

    /// The bytes of `conn` that its application has not read yet, given `total` delivered
    /// so far; they count as read from now on.
    pub fn take_unread(&mut self, conn: u32, total: u64) -> u64 {
        let r = &mut self.receivers[conn];
        let new = total.saturating_sub(r.app_read);
        r.app_read = r.app_read.max(total);
        new
    }

    /// A packet with a handshake's or a teardown's flags reached its host.
    pub(super) fn on_control(&mut self, w: &mut impl Wire, pkt: &Packet) {
        if pkt.tcp_flags & (tcp_flags::SYN | tcp_flags::HANDSHAKE_ACK) != 0 {
            return self.on_handshake(w, pkt);
        }
        let fin = pkt.tcp_flags & tcp_flags::FIN != 0;
        if pkt.payload_bytes == 0 && !fin {
            // A pure ACK that also acknowledges the FIN.
            self.on_ack(w, pkt);
            return self.fin_acked(pkt.flow_id, pkt.ack);
        }
        if pkt.tcp_flags & tcp_flags::ACK_REVERSE != 0 {
            self.reverse_ack(w, pkt);
        }
        if pkt.payload_bytes > 0 {
            self.on_data(w, pkt);
        }
        if fin {
            self.on_fin(w, pkt);
        }
    }

    /// Sends `conn`'s FIN (at the end of its data), with the acknowledgement the reverse
    /// connection owes riding on it, and keeps the retransmission timer running for it.
    pub(super) fn send_fin(&mut self, w: &mut impl Wire, conn: u32) {
        let mut pkt = self.control_packet(w, w.now(), conn, false, tcp_flags::FIN, NEVER);
        let s = &mut self.senders[conn];
        s.fin = Fin::Sent;
        pkt.seq = s.app_bytes;
        self.carry_reverse_ack(conn, &mut pkt);
        let from = pkt.src_host;
        w.transmit(from, pkt);
        if self.senders[conn].rto_deadline == NEVER {
            self.arm_rto(w, conn);
        }
    }

    /// The timer expired with only the FIN unacknowledged: it goes again, the timer doubled.
    pub(super) fn fin_timeout(&mut self, w: &mut impl Wire, conn: u32) {
        let s = &mut self.senders[conn];
        s.timeouts += 1;
        s.back_off(self.params.rto_max_ps);
        self.send_fin(w, conn);
    }

    /// A FIN of `pkt.flow_id` reached its receiver.
    fn on_fin(&mut self, w: &mut impl Wire, pkt: &Packet) {
        let conn = pkt.flow_id;
        let rev = self.reverse_of(conn);
        let own_side_open = rev == crate::net::NONE || self.senders[rev].fin == Fin::Open;
        // With the sender in another part, this side's own FIN acknowledged first means
        // the connection is over here once this FIN is in.
        let over_here =
            !own_side_open && !self.senders.ids.is_own(conn) && self.senders[rev].fin == Fin::Acked;
        let r = &mut self.receivers[conn];
        let in_order = pkt.seq == r.rcv_nxt && !r.fin_rcvd;
        if in_order {
            r.fin_rcvd = true;
            if own_side_open {
                // The application reads the end of the stream (recv returns 0).
                self.notes.push(Note::Closed {
                    app: r.app,
                    host: r.host,
                    conn,
                });
            }
        }
        if in_order && own_side_open && rev != crate::net::NONE && self.params.delayed_ack {
            // CLOSE_WAIT: the acknowledgement waits for the application's own FIN.
            if r.pending_segs == 0 {
                r.pending_ts = pkt.ts_ps;
            }
            r.pending_segs += 1;
            self.arm_delack(w, conn);
        } else {
            // A closing side (or a one-way connection, or a FIN again, or one ahead of
            // missing data) acknowledges at once.
            if r.pending_segs == 0 {
                r.pending_ts = pkt.ts_ps;
            }
            self.send_ack(w, conn);
        }
        if in_order && over_here {
            self.retire_pair(rev, conn);
        }
    }

    /// An acknowledgement up to `ack` reached `conn`'s sender with the FIN-acknowledged
    /// flag: once it covers the FIN, this direction is done.
    pub(super) fn fin_acked(&mut self, conn: u32, ack: u64) {
        let s = &mut self.senders[conn];
        if s.fin != Fin::Sent || ack < s.app_bytes {
            return;
        }
        s.fin = Fin::Acked;
        s.rto_deadline = NEVER;
        let rev = self.reverse_of(conn);
        if rev == crate::net::NONE || self.reverse_done(rev) {
            self.retire_pair(conn, rev);
        }
    }

    /// Whether the reverse direction `rev` is over, as far as this part can tell: its FIN
    /// acknowledged when its sender is here; its FIN received when the sender is in
    /// another part (which retires its own slot when it learns the rest).
    fn reverse_done(&self, rev: u32) -> bool {
        if self.senders.ids.is_own(rev) {
            self.senders[rev].fin == Fin::Acked
        } else {
            self.receivers.contains(rev) && self.receivers[rev].fin_rcvd
        }
    }

    /// Both directions of `conn` are over: this part's slots are freed and unlinked.
    fn retire_pair(&mut self, conn: u32, rev: u32) {
        self.retire(conn);
        if rev != crate::net::NONE {
            if self.senders.ids.is_own(rev) {
                self.retire(rev);
            }
            // Only while they still name each other: with the two halves in different
            // parts, a slot may already be linked again to a newer connection.
            if self.reverse_of(conn) == rev {
                self.set_reverse(conn, crate::net::NONE);
            }
            if self.reverse_of(rev) == conn {
                self.set_reverse(rev, crate::net::NONE);
            }
        }
    }

    /// The slot of a closed connection may take the next one opened here. Not when TCP is
    /// kept in several parts: another part may still hold the connection's other half
    /// (or a link to it) until its last packets arrive there, so ids are never used twice
    /// (a closed connection's sender then stays, retired, for the rest of the run).
    pub(super) fn free_slot(&mut self, conn: u32) {
        if self.senders.ids.part_bits == 0 {
            self.free.push(std::cmp::Reverse(conn));
        }
    }

    /// Frees a closed connection's slot, keeping its counts.
    fn retire(&mut self, conn: u32) {
        let s = &mut self.senders[conn];
        self.slots_closed = true;
        let t = &mut self.retired;
        t.connections += 1;
        t.retransmits += s.retransmits;
        t.timeouts += s.timeouts;
        t.syn_retransmits += s.syn_retransmits;
        t.tail_probes += s.tail_probes;
        (s.retransmits, s.timeouts, s.syn_retransmits, s.tail_probes) = (0, 0, 0, 0);
        s.rto_deadline = NEVER;
        s.fin = Fin::Retired;
        // Departures are reported (naming the slot) only with TCP small queues on.
        if s.nic_bytes == 0 || self.params.tsq_limit_bytes == 0 {
            self.free_slot(conn);
        } // else once its last segment leaves the NIC (`on_nic_departures`)
        self.receivers[conn].delack_deadline = NEVER;
    }

    /// Whether `pkt` belongs to a closed connection: its slot is closed, or reused by
    /// another whose hosts and ports, either way round, are not the packet's. (Nothing
    /// needs it: both FINs were acknowledged, so it is a copy sent again needlessly.)
    pub(super) fn is_stale(&self, pkt: &Packet) -> bool {
        let s = &self.senders[pkt.flow_id];
        if s.fin == Fin::Retired {
            return true;
        }
        let forward = (s.host, s.peer, s.sport, s.dport);
        let reverse = (s.peer, s.host, s.dport, s.sport);
        let seen = (pkt.src_host, pkt.dst_host, pkt.src_port, pkt.dst_port);
        seen != forward && seen != reverse
    }
}

#[cfg(test)]
mod tests {
    use super::super::testbed::*;
    use super::super::*;

    /// A one-way connection's close: the FIN follows the data at once, carries the data's
    /// end as its sequence number, is ignored by a receiver still missing data and
    /// acknowledged at once by one that has it all (the application reads the end of the
    /// stream); its acknowledgement frees the slot, which the next connection takes with
    /// another port, so a packet of the old connection is dropped on arrival.
    #[test]
    fn a_closed_connection_sends_its_fin_after_its_data_and_frees_its_slot() {
        let mut b = Bench::new(r#","initial_window":4"#);
        let start = b.mark();
        assert_eq!(b.write(2), 2);
        let conn = b.conn;
        b.tcp.close(&mut b.wire, conn);
        let sent = b.sent_by(0, start);
        assert_eq!(sent.len(), 3);
        assert_eq!(sent[2], (tcp_flags::FIN, 0), "the FIN after the data");
        let fin = b.wire.sent[start + 2];
        assert_eq!(fin.seq, 2 * b.mss);
        // The FIN alone, ahead of the data: acknowledged at once, not taken.
        let mark = b.mark();
        b.deliver(&fin);
        assert_eq!(b.sent_by(1, mark), [(tcp_flags::ACK, 0)]);
        assert!(b.tcp.notes.is_empty());
        // The data, then the FIN: the end of the stream, acknowledged with the FIN.
        assert_eq!(b.data(0) + b.data(1), 2);
        b.tcp.notes.clear();
        let mark = b.mark();
        b.deliver(&fin);
        assert_eq!(
            b.sent_by(1, mark),
            [(tcp_flags::ACK | tcp_flags::FIN_ACKED, 0)]
        );
        assert!(matches!(b.tcp.notes[..], [Note::Closed { conn: c, .. }] if c == conn));
        assert_eq!(b.tcp.retired.connections, 0);
        let fin_ack = b.wire.sent[mark];
        b.deliver(&fin_ack);
        assert_eq!(b.sender().fin, Fin::Retired);
        assert_eq!(b.tcp.retired.connections, 1);
        // Closed, the connection takes no packet; its slot waits for its segments to leave
        // the NIC (their departures name the slot).
        let mark = b.mark();
        b.deliver(&fin);
        assert_eq!((b.tcp.stale_packets, b.sent_by(1, mark).len()), (1, 0));
        assert_ne!(b.tcp.open(0, 1, 0, 0), conn, "not before its segments left");
        b.drain_nic(conn);
        // The slot again, with another port; the old connection's FIN is stale there.
        let old_port = b.sender().sport;
        assert_eq!(b.tcp.open(0, 1, 0, 0), conn);
        assert_ne!(b.sender().sport, old_port);
        let mark = b.mark();
        b.deliver(&fin);
        assert_eq!(b.tcp.stale_packets, 2);
        assert_eq!(b.sent_by(1, mark), []);
    }

    /// A FIN whose acknowledgement is lost goes again when the retransmission timer expires
    /// (a timeout, doubling the timer), even though all data is acknowledged.
    #[test]
    fn a_lost_fin_goes_again_on_the_timer() {
        let mut b = Bench::new(r#","initial_window":4,"rto_granularity":"0s""#);
        assert_eq!(b.write(1), 1);
        let conn = b.conn;
        b.tcp.close(&mut b.wire, conn);
        assert_eq!(b.ack(1, &[]), (0, 0));
        let deadline = b.sender().rto_deadline;
        assert_ne!(deadline, NEVER, "the timer still covers the FIN");
        b.advance_to(deadline);
        let mark = b.mark();
        b.fire_rto();
        assert_eq!(b.sent_by(0, mark), [(tcp_flags::FIN, 0)]);
        assert_eq!(b.sender().timeouts, 1);
        // Armed at time 0 for one RTO; now twice that, from the timeout.
        assert_eq!(b.sender().rto_ps, 2 * deadline);
        assert_eq!(b.sender().rto_deadline, 3 * deadline);
    }

    /// A bidirectional connection (two linked halves) closes in three packets: the client's
    /// FIN carries its pending acknowledgement; the server's application reads the end of
    /// the stream and closes, its FIN carrying the acknowledgement of the client's; the
    /// client, closed already, acknowledges at once and is not told. Both slots are then free.
    #[test]
    fn a_request_connection_closes_in_three_packets() {
        let mut b = Bench::new(r#","initial_window":4,"delayed_ack":true"#);
        let (req, resp) = (b.conn, b.open_reverse());
        let start = b.mark();
        b.write_bytes(req, 100);
        let (answer, mark) = b.pass(0, start);
        assert_eq!(answer, [], "the request's ACK waits for the response");
        b.write_bytes(resp, 200);
        let (answer, mark) = b.pass(1, mark);
        assert_eq!(answer, [], "the response's ACK waits");
        b.tcp.notes.clear();
        b.tcp.close(&mut b.wire, req);
        let fin = b.sent_by(0, mark);
        assert_eq!(
            fin,
            [(tcp_flags::FIN | tcp_flags::ACK | tcp_flags::ACK_REVERSE, 0)]
        );
        let (answer, _) = b.pass(0, mark);
        assert_eq!(
            answer,
            [],
            "the server's ACK waits for its application's close"
        );
        assert!(matches!(b.tcp.notes[..], [Note::Closed { conn, .. }] if conn == req));
        b.tcp.notes.clear();
        let mark = b.mark();
        b.tcp.close(&mut b.wire, resp);
        let server_fin = b.sent_by(1, mark);
        let acks_fin = tcp_flags::ACK | tcp_flags::ACK_REVERSE | tcp_flags::FIN_ACKED;
        assert_eq!(server_fin, [(tcp_flags::FIN | acks_fin, 0)]);
        let (answer, mark) = b.pass(1, mark);
        assert_eq!(answer, [(tcp_flags::ACK | tcp_flags::FIN_ACKED, 0)]);
        assert!(b.tcp.notes.is_empty(), "the closed side is not told");
        assert_eq!(b.tcp.senders[req].fin, Fin::Acked);
        assert_eq!(b.tcp.retired.connections, 0);
        b.pass(0, mark);
        assert_eq!(b.tcp.retired.connections, 2);
        b.drain_nic(req);
        b.drain_nic(resp);
        let again = [b.tcp.open(1, 0, 0, 0), b.tcp.open(0, 1, 0, 0)];
        assert_eq!(
            again,
            [req.min(resp), req.max(resp)],
            "the freed slots, smallest first"
        );
    }
}
