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
//! timer: a lost SYN-ACK is repaired by the SYN's timer). Teardown: tcp_close.rs.

use super::*;

impl Tcp {
    /// Opens a connection from `src` to `dst` with a handshake: its SYN goes now. Returns
    /// the connection id (see `open`).
    #[allow(clippy::too_many_arguments)]
    pub fn connect(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        src: u32,
        dst: u32,
        tx_app: u32,
        rx_app: u32,
    ) -> u32 {
        let conn = self.open(src, dst, tx_app, rx_app);
        let s = &mut self.senders[conn as usize];
        s.connecting = true;
        s.rto_ps = self.params.initial_rto_ps;
        self.send_control(net, hosts, ev, conn, false, tcp_flags::SYN, NEVER);
        self.arm_rto(ev, conn);
        conn
    }

    /// A SYN, a SYN-ACK or a handshake's pure ACK reached its host.
    pub(super) fn on_handshake(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        pkt: &Packet,
    ) {
        let conn = pkt.flow_id;
        let syn_ack = tcp_flags::SYN | tcp_flags::ACK;
        if pkt.tcp_flags & syn_ack == tcp_flags::SYN {
            // At the listener: answer, echoing the SYN's timestamp.
            self.send_control(net, hosts, ev, conn, true, syn_ack, pkt.ts_ps);
        } else if pkt.tcp_flags & syn_ack == syn_ack {
            let s = &mut self.senders[conn as usize];
            let first = s.connecting;
            if first {
                s.connecting = false;
                s.rto_deadline = NEVER;
                self.rtt_sample(conn, ev.now(), pkt.ts_echo_ps);
            }
            let s = &self.senders[conn as usize];
            if first && (s.app_bytes > s.snd_nxt || s.fin == Fin::Wanted) {
                // The data (or a FIN, closed before any was written) carries the ACK.
                self.send_more(net, hosts, ev, conn);
            } else {
                // A pure ACK (again, for a SYN-ACK repeated because the ACK was lost).
                let ack = tcp_flags::ACK | tcp_flags::HANDSHAKE_ACK;
                self.send_control(net, hosts, ev, conn, false, ack, pkt.ts_ps);
            }
        }
        // A handshake's pure ACK changes nothing at the listener.
    }

    /// The SYN's timer expired with no SYN-ACK: the SYN goes again and the timer doubles.
    pub(super) fn syn_timeout(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        conn: u32,
    ) {
        let s = &mut self.senders[conn as usize];
        s.syn_retransmits += 1;
        s.back_off(self.params.rto_max_ps);
        self.send_control(net, hosts, ev, conn, false, tcp_flags::SYN, NEVER);
        self.arm_rto(ev, conn);
    }

    /// Sends a packet of the handshake (`control_packet`'s) now.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn send_control(
        &mut self,
        net: &mut Network,
        hosts: &mut Hosts,
        ev: &mut impl TransportSched,
        conn: u32,
        reverse: bool,
        flags: u8,
        ts_echo_ps: TimePs,
    ) {
        let pkt = self.control_packet(net, ev.now(), conn, reverse, flags, ts_echo_ps);
        let from = pkt.src_host;
        let id = net.pool.alloc(pkt);
        hosts.send(net, ev, from, id);
    }
}
