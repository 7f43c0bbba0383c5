//! What a sender sends: new data as the windows allow (with TCP small queues holding it
//! back while the host's NIC holds enough of the connection's segments), a segment again,
//! and the packets without data (ACKs, SYNs, FINs).

use super::*;

impl TcpPart {
    pub(super) fn send_segment(&mut self, w: &mut impl Wire, conn: u32, seq: u64, len: u32) {
        // On a bidirectional connection, an in-order ACK the other direction owes rides along.
        let rev = self.reverse_receiver(conn);
        if self.params.quickack && rev != crate::net::NONE {
            // Data sent soon after data came in: an interactive exchange (Linux's pingpong).
            let r = &mut self.receivers[rev];
            if r.last_data_ps != NEVER && w.now() - r.last_data_ps < self.params.delayed_ack_ps {
                r.pingpong = true;
            }
        }
        let s = &self.senders[conn];
        let mut pkt = Packet {
            src_host: s.host,
            dst_host: s.peer,
            src_port: s.sport,
            dst_port: s.dport,
            proto: Proto::TCP,
            dscp: s.dscp,
            ecn: if self.params.ecn {
                ecn::ECT0
            } else {
                ecn::NOT_ECT
            },
            flow_id: conn,
            key: halves::carried_key(s.peer_app),
            priority: s.app_bytes - seq,
            hash: s.hash,
            frame_bytes: w.frame_bytes(s.host, len + TCP_IP_HEADER_BYTES),
            payload_bytes: len,
            seq,
            ts_ps: w.now(),
            ..Default::default()
        };
        let host = s.host;
        self.carry_reverse_ack(conn, &mut pkt);
        let frame = pkt.frame_bytes as u64;
        let s = &mut self.senders[conn];
        s.nic_bytes += frame;
        if let Some(r) = &mut s.rack {
            r.sent(seq, seq + u64::from(len), w.now());
        }
        if s.in_recovery {
            s.prr_out += u64::from(len);
        }
        w.transmit(host, pkt);
    }

    /// On a bidirectional connection, `pkt` (of `conn`) carries the in-order ACK the other
    /// direction owes (not one that owes SACK blocks, which a data segment has no room for).
    pub(super) fn carry_reverse_ack(&mut self, conn: u32, pkt: &mut Packet) {
        let rev = self.reverse_receiver(conn);
        if rev == crate::net::NONE {
            return;
        }
        // The peer's part links the pair at this packet if it could not at the open.
        pkt.key = halves::with_reverse(pkt.key, rev);
        let r = &self.receivers[rev];
        if r.pending_segs > 0 && r.ooo.ranges().is_empty() {
            let (ack, ts_echo, flags) = self.take_ack(rev);
            pkt.ack = ack;
            pkt.ts_echo_ps = ts_echo;
            pkt.tcp_flags |= flags | tcp_flags::ACK_REVERSE;
        }
    }

    /// `bytes` of `conn`'s segments left its host's NIC: a sender that was held back by the
    /// small-queues limit may send again.
    pub(super) fn nic_departed(&mut self, w: &mut impl Wire, conn: u32, bytes: u32) {
        let s = &mut self.senders[conn];
        let was_held = s.nic_bytes >= self.params.tsq_limit_bytes;
        debug_assert!(s.nic_bytes >= u64::from(bytes), "TSQ bytes below zero");
        s.nic_bytes -= u64::from(bytes);
        if s.fin == Fin::Retired {
            // A closed connection's last segment left its NIC: the slot is free.
            if s.nic_bytes == 0 {
                self.free_slot(conn);
            }
            return;
        }
        if was_held && s.nic_bytes < self.params.tsq_limit_bytes {
            if s.in_recovery && self.params.sack {
                self.sack_recovery_send(w, conn);
            } else {
                self.send_more(w, conn);
            }
        }
    }

    /// Sends as much as the congestion and receive windows allow.
    pub(super) fn send_more(&mut self, w: &mut impl Wire, conn: u32) {
        self.send_more_beyond(w, conn, 0);
    }

    /// Sends as much as the congestion window plus `extra` bytes (limited transmit's
    /// allowance) and the receive window allow.
    pub(super) fn send_more_beyond(&mut self, w: &mut impl Wire, conn: u32, extra: u64) {
        let mss = self.params.mss_bytes as u64;
        let rwnd = self.params.rcv_window_bytes;
        let tsq = self.params.tsq_limit_bytes;
        let mut sent = false;
        if self.senders[conn].connecting {
            return; // the data waits for the handshake
        }
        loop {
            let s = &mut self.senders[conn];
            if s.snd_nxt >= s.app_bytes || (tsq > 0 && s.nic_bytes >= tsq) {
                break;
            }
            // After a timeout the sender goes back to snd_una; what the receiver holds
            // (SACKed) is not sent again.
            if let Some((_, end)) = s.sacked.covering(s.snd_nxt) {
                s.snd_nxt = end;
                continue;
            }
            let wnd = (s.cwnd as u64 + extra).min(rwnd);
            let len = s.sacked.segment_at(s.snd_nxt, mss, s.app_bytes);
            let flight = s.snd_nxt - s.snd_una;
            if flight > 0 && flight + len > wnd {
                break;
            }
            let seq = s.snd_nxt;
            if seq < s.snd_max {
                s.retransmits += 1;
            }
            s.snd_nxt += len;
            s.snd_max = s.snd_max.max(s.snd_nxt);
            self.send_segment(w, conn, seq, len as u32);
            sent = true;
        }
        if sent && self.senders[conn].rto_deadline == NEVER {
            self.arm_rto(w, conn);
        }
        let s = &self.senders[conn];
        if s.fin == Fin::Wanted && s.snd_nxt >= s.app_bytes {
            self.send_fin(w, conn);
        }
    }

    pub(super) fn retransmit_first(&mut self, w: &mut impl Wire, conn: u32) {
        let mss = self.params.mss_bytes as u64;
        let s = &mut self.senders[conn];
        let len = mss.min(s.snd_max - s.snd_una) as u32;
        let seq = s.snd_una;
        s.retransmits += 1;
        self.send_segment(w, conn, seq, len);
    }

    /// A packet of connection `conn` without data, sent now: from its sender's host
    /// (`reverse` false) or from its receiver's (an ACK, a SYN-ACK), with `flags` and an
    /// echoed timestamp.
    pub(super) fn control_packet(
        &self,
        w: &impl Wire,
        now: TimePs,
        conn: u32,
        reverse: bool,
        flags: u8,
        ts_echo_ps: TimePs,
    ) -> Packet {
        // The sender's packets carry what a receiver half in another part is made from.
        let (from, to, sport, dport, dscp, key) = if reverse {
            let r = &self.receivers[conn];
            (r.host, r.peer, r.dport, r.sport, r.dscp, 0)
        } else {
            let s = &self.senders[conn];
            let key = halves::carried_key(s.peer_app);
            (s.host, s.peer, s.sport, s.dport, s.dscp, key)
        };
        Packet {
            src_host: from,
            dst_host: to,
            src_port: sport,
            dst_port: dport,
            proto: Proto::TCP,
            dscp,
            tcp_flags: flags,
            flow_id: conn,
            key,
            hash: five_tuple_hash(from, to, sport, dport, Proto::TCP),
            frame_bytes: w.frame_bytes(from, TCP_IP_HEADER_BYTES),
            ts_ps: now,
            ts_echo_ps,
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testbed::*;
    use super::super::*;
    use crate::engine::PS_PER_US;

    /// The frame of one full segment on the bench's link.
    fn full_frame_bytes(b: &Bench) -> u32 {
        b.mss as u32 + TCP_IP_HEADER_BYTES + FRAME_OVERHEAD_BYTES
    }

    /// TCP small queues: the sender stops once the host's NIC holds the limit's worth of
    /// its frames, and goes on as they leave.
    #[test]
    fn small_queues_hold_the_sender_until_its_frames_leave_the_nic() {
        let mut b = Bench::new(r#","tsq_limit":"4000B","initial_window":10"#);
        let frame = full_frame_bytes(&b);
        assert!(2 * frame < 4000 && 3 * frame >= 4000, "the bench's MSS");
        assert_eq!(b.write(10), 3, "stops at the first segment over the limit");
        assert_eq!(b.nic_bytes(b.conn), 3 * u64::from(frame));
        b.wire.departures.push((b.conn, frame));
        let before = b.sent();
        b.departures();
        assert_eq!(b.sent() - before, 1, "one left, one more goes");
        assert!(
            b.wire.departures.is_empty(),
            "the transport empties the list"
        );
    }

    /// Every write and close is a system call of the sending host.
    #[test]
    fn writes_and_closes_are_system_calls() {
        let mut b = Bench::new("");
        b.write(1);
        b.write(1);
        assert_eq!(b.wire.syscalls, 2);
        let conn = b.conn;
        b.tcp.close(&mut b.wire, conn);
        assert_eq!(b.wire.syscalls, 3);
    }

    /// A data segment names its connection, its bytes, when it was sent (for the echo) and
    /// what is left of the write (pFabric's priority); with ECN it is ECN-capable.
    #[test]
    fn a_data_segment_carries_what_its_receiver_and_the_fabric_read() {
        for ecn in [false, true] {
            let mut b = Bench::new(&format!(r#","ecn":{ecn},"variant":"newreno""#));
            b.advance_us(7);
            b.write_bytes(b.conn, 2 * b.mss + 100);
            let p = b.wire.sent[1];
            assert_eq!((p.src_host, p.dst_host, p.flow_id), (0, 1, b.conn));
            assert_eq!((p.seq, p.payload_bytes), (b.mss, b.mss as u32));
            assert_eq!(p.frame_bytes, full_frame_bytes(&b));
            assert_eq!(p.ts_ps, 7 * PS_PER_US);
            assert_eq!(
                p.priority,
                b.mss + 100,
                "bytes from this segment to the write's end"
            );
            let want = if ecn {
                crate::packet::ecn::ECT0
            } else {
                crate::packet::ecn::NOT_ECT
            };
            assert_eq!(p.ecn, want);
            assert_eq!(
                b.wire.sent[2].payload_bytes, 100,
                "the rest in a short segment"
            );
        }
    }

    /// The receive window caps the bytes in flight whatever the congestion window allows.
    #[test]
    fn the_receive_window_limits_the_flight() {
        let mut p = params(r#","initial_window":10"#);
        p.delayed_ack = false;
        p.rcv_window_bytes = 3 * u64::from(p.mss_bytes);
        let mut b = Bench::with_params(p);
        assert_eq!(b.write(10), 3);
        assert_eq!(b.ack(1, &[]), (1, 0), "one out, one in");
    }

    /// On a bidirectional connection, data going the other way carries the ACK the
    /// receiver owes, and the delayed ACK it replaces does not go.
    #[test]
    fn data_the_other_way_carries_the_pending_ack() {
        let mut b = Bench::new(r#","delayed_ack":true,"quickack":false"#);
        let rev = b.open_reverse();
        assert_eq!(b.data(0), 0, "the ACK waits");
        let mark = b.mark();
        assert_eq!(b.write_bytes(rev, 100), 1);
        let p = b.wire.sent[mark];
        assert_eq!((p.src_host, p.flow_id, p.ack), (1, rev, b.mss));
        assert_ne!(p.tcp_flags & tcp_flags::ACK_REVERSE, 0);
        let at = b.wire.timers.iter().find(|t| {
            t.1 == TcpEvent::Timer {
                conn: b.conn,
                which: TIMER_DELACK,
                part: 0,
            }
        });
        b.advance_to(at.expect("the delayed ACK was armed").0);
        let before = b.sent();
        b.fire(b.conn, TIMER_DELACK);
        assert_eq!(b.sent(), before, "nothing left to acknowledge");
    }
}
