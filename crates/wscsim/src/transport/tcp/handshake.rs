//! TCP's three-way handshake, for connections opened with `Tcp::connect` (those opened
//! with `Tcp::open` start established, as a datacenter's long-lived connections do).
//!
//! The connecting side sends a SYN and arms its retransmission timer at the initial RTO
//! (`TcpParams::initial_rto_ps`), doubling it for each SYN sent again; data written
//! meanwhile waits. The listening side answers every SYN with a SYN-ACK echoing its
//! timestamp, which gives the connecting side its first RTT sample (and so its RTO, as in
//! Linux). The third packet is the first data segment when data is waiting (Linux
//! saves that ACK when a write is pending), else a pure ACK.
//!
//! Simplified: the listening side keeps no half-open state (no SYN queue, no SYN-ACK
//! timer: a lost SYN-ACK is repaired by the SYN's timer). Teardown: close.rs.

use super::*;

impl TcpPart {
    /// Opens a connection from `src` to `dst` with a handshake: its SYN goes now. Returns
    /// the connection id (see `open`).
    #[allow(clippy::too_many_arguments)]
    pub fn connect(
        &mut self,
        w: &mut impl Wire,
        src: u32,
        dst: u32,
        tx_app: u32,
        rx_app: u32,
    ) -> u32 {
        let conn = self.open(src, dst, tx_app, rx_app);
        let s = &mut self.senders[conn];
        s.connecting = true;
        s.rto_ps = self.params.initial_rto_ps;
        self.send_control(w, conn, false, tcp_flags::SYN, NEVER);
        self.arm_rto(w, conn);
        conn
    }

    /// A SYN, a SYN-ACK or a handshake's pure ACK reached its host.
    pub(super) fn on_handshake(&mut self, w: &mut impl Wire, pkt: &Packet) {
        let conn = pkt.flow_id;
        let syn_ack = tcp_flags::SYN | tcp_flags::ACK;
        if pkt.tcp_flags & syn_ack == tcp_flags::SYN {
            // At the listener: answer, echoing the SYN's timestamp.
            self.send_control(w, conn, true, syn_ack, pkt.ts_ps);
        } else if pkt.tcp_flags & syn_ack == syn_ack {
            let s = &mut self.senders[conn];
            let first = s.connecting;
            if first {
                s.connecting = false;
                s.rto_deadline = NEVER;
                self.rtt_sample(conn, w.now(), pkt.ts_echo_ps);
            }
            let s = &self.senders[conn];
            if first && (s.app_bytes > s.snd_nxt || s.fin == Fin::Wanted) {
                // The data (or a FIN, closed before any was written) carries the ACK.
                self.send_more(w, conn);
            } else {
                // A pure ACK (again, for a SYN-ACK repeated because the ACK was lost).
                let ack = tcp_flags::ACK | tcp_flags::HANDSHAKE_ACK;
                self.send_control(w, conn, false, ack, pkt.ts_ps);
            }
        }
        // A handshake's pure ACK changes nothing at the listener.
    }

    /// The SYN's timer expired with no SYN-ACK: the SYN goes again and the timer doubles.
    pub(super) fn syn_timeout(&mut self, w: &mut impl Wire, conn: u32) {
        let s = &mut self.senders[conn];
        s.syn_retransmits += 1;
        s.back_off(self.params.rto_max_ps);
        self.send_control(w, conn, false, tcp_flags::SYN, NEVER);
        self.arm_rto(w, conn);
    }

    /// Sends a packet of the handshake (`control_packet`'s) now.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn send_control(
        &mut self,
        w: &mut impl Wire,
        conn: u32,
        reverse: bool,
        flags: u8,
        ts_echo_ps: TimePs,
    ) {
        let pkt = self.control_packet(w, w.now(), conn, reverse, flags, ts_echo_ps);
        let from = pkt.src_host;
        w.transmit(from, pkt);
    }
}

#[cfg(test)]
mod tests {
    use super::super::testbed::*;
    use super::super::*;
    use crate::engine::PS_PER_US;

    /// The three-way handshake: a SYN goes at connect; data written meanwhile waits; the
    /// listener answers with a SYN-ACK echoing the SYN's time; the SYN-ACK gives the first
    /// RTT sample and lets the data out, the first segment carrying the third ACK.
    #[test]
    fn a_handshake_holds_data_until_the_syn_ack() {
        let mut b = Bench::new(r#","initial_window":4"#);
        let before = b.mark();
        b.conn = b.tcp.connect(&mut b.wire, 0, 1, 0, 0);
        assert_eq!(b.write(3), 0, "nothing before the SYN-ACK");
        let syn = b.sent_by(0, before);
        assert_eq!(syn, [(tcp_flags::SYN, 0)]);
        // The listener's answer.
        b.advance_to(30 * PS_PER_US);
        let syn_pkt = b.wire.sent[before];
        let mark = b.mark();
        b.deliver(&syn_pkt);
        let answer = b.sent_by(1, mark);
        assert_eq!(answer, [(tcp_flags::SYN | tcp_flags::ACK, 0)]);
        let syn_ack = b.wire.sent[mark];
        assert_eq!(syn_ack.ts_echo_ps, 0);
        // Its arrival: an RTT sample of 60 us, and the three segments go.
        b.advance_to(60 * PS_PER_US);
        let sent = b.sent();
        b.deliver(&syn_ack);
        assert_eq!(b.sent() - sent, 3);
        assert_eq!(b.sender().srtt_ps, 60 * PS_PER_US);
    }

    /// A lost SYN goes again after the initial RTO (3 s for Linux 2.6.39, 1 s from 3.1), then
    /// after twice that.
    #[test]
    fn a_lost_syn_waits_out_the_initial_rto() {
        for (rules, initial_s) in [("linux_2_6_39", 3), ("linux_3_5", 1), ("rfc", 1)] {
            let mut b = Bench::new(&format!(r#","rules":"{rules}","rto_granularity":"0s""#));
            b.conn = b.tcp.connect(&mut b.wire, 0, 1, 0, 0);
            let first = b.sender().rto_deadline;
            assert_eq!(first, initial_s * crate::engine::PS_PER_S, "{rules}");
            b.advance_to(first);
            let sent = b.sent();
            b.fire_rto();
            assert_eq!((b.sent() - sent, b.sender().syn_retransmits), (1, 1));
            assert_eq!(
                b.sender().timeouts,
                0,
                "a SYN's timeout is not a data timeout"
            );
            assert_eq!(
                b.sender().rto_deadline,
                first + 2 * initial_s * crate::engine::PS_PER_S
            );
        }
    }
}
