//! Paths and what they cost: switches between hosts, a host's link and the frame a packet
//! makes on it, and the ideal time to move bytes over an empty path; taps and traced
//! queues.

use super::*;

impl Network {
    /// Nodes a packet from `src` to `dst` crosses between them (switches, or forwarding
    /// servers on a torus), on the path of hash 0; every equal-cost path has as many.
    pub fn switches_on_path(&self, src: u32, dst: u32) -> u32 {
        self.path_ports(src, dst).count() as u32 - 1
    }

    /// The output ports a packet from `src` to `dst` leaves through on the path of hash 0
    /// (a torus: the first shortest-path link at each hop): the source's port, then one
    /// port per node it crosses.
    pub(super) fn path_ports(&self, src: u32, dst: u32) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors(Some(self.forward_path_start(src, dst)), move |&port| {
            self.forward_path_next(self.ports[port as usize].peer_node, dst)
        })
        .take(self.nodes.len())
    }

    /// The technology that frames what host `host` sends.
    #[inline]
    pub fn host_link(&self, host: u32) -> &LinkTech {
        &self.techs[self.host_tech[host as usize] as usize]
    }

    /// Buffer bytes of an IP packet of `ip_bytes` sent by `host`.
    #[inline]
    pub fn frame_bytes(&self, host: u32, ip_bytes: u32) -> u32 {
        self.host_link(host).frame_bytes(ip_bytes)
    }

    /// Time to move `bytes` of payload from `src` to `dst` on an idle network in packets
    /// of at most `mss` payload bytes under `header_bytes` of IP and transport headers: the
    /// first packet crosses every hop store-and-forward (serialisation, propagation and
    /// port-to-port latency), the rest follow back to back at the path's slowest link.
    /// Leaves out ACKs, slow start and the handshake: it is the floor that slowdown divides by.
    pub fn ideal_transfer_ps(
        &self,
        (src, dst): (u32, u32),
        bytes: u64,
        mss: u32,
        header_bytes: u32,
    ) -> TimePs {
        let frame = |payload: u64| self.frame_bytes(src, payload as u32 + header_bytes) as u64;
        let first_payload = bytes.min(mss as u64);
        let rest = bytes - first_payload;
        let (n_full, last) = (rest / mss as u64, rest % mss as u64);
        let mut t = 0;
        // The slowest link by time per byte on the wire, with its per-frame overhead.
        let mut slowest = (u64::MAX, 0u64);
        for port in self.path_ports(src, dst) {
            let pt = &self.ports[port as usize];
            let wire = |f: u64| f + pt.wire_overhead_bytes as u64;
            t += serialisation_ps(wire(frame(first_payload)), pt.rate_bps)
                + pt.prop_ps
                + pt.peer_delay_ps;
            if pt.rate_bps < slowest.0 {
                slowest = (pt.rate_bps, pt.wire_overhead_bytes as u64);
            }
        }
        let (min_rate, overhead) = slowest;
        let full = frame(mss as u64) + overhead;
        t = t.saturating_add(n_full.saturating_mul(serialisation_ps(full, min_rate)));
        if last > 0 {
            t += serialisation_ps(frame(last) + overhead, min_rate);
        }
        t
    }

    /// Time a frame of `frame_bytes` takes from `src` to `dst` on an idle network,
    /// store-and-forward at every hop (serialisation, propagation, port-to-port latency).
    pub fn one_way_ps(&self, src: u32, dst: u32, frame_bytes: u32) -> TimePs {
        self.path_ports(src, dst)
            .map(|port| {
                let pt = &self.ports[port as usize];
                let wire = u64::from(frame_bytes + pt.wire_overhead_bytes);
                serialisation_ps(wire, pt.rate_bps) + pt.prop_ps + pt.peer_delay_ps
            })
            .sum()
    }

    /// Captures the packets `host` sends and receives, as one capture point.
    pub fn tap_host(&mut self, host: u32) -> Result<(), String> {
        let nic = self.nic_port(host);
        let p = &self.ports[nic as usize];
        let feeder = self.nodes[p.peer_node as usize].port_base + p.peer_in_port;
        let id = self.captures.add(format!("host-{host}"));
        self.set_capture(nic, capture::TAP_CAPTURE | id)?;
        self.set_capture(feeder, capture::TAP_CAPTURE | capture::TAP_ARRIVAL | id)
    }

    /// Captures the packets leaving local port `local` of switch node `node`.
    pub fn tap_switch_port(&mut self, node: u32, local: u32) -> Result<(), String> {
        let id = self
            .captures
            .add(format!("{}-port{local}", self.node_names[node as usize]));
        self.set_capture(
            self.nodes[node as usize].port_base + local,
            capture::TAP_CAPTURE | id,
        )
    }

    /// Records the queue length of local port `local` of `node` at every change.
    pub fn trace_queue(&mut self, node: u32, local: u32) {
        self.ports[(self.nodes[node as usize].port_base + local) as usize].taps |=
            capture::TAP_QUEUE;
    }

    pub(super) fn set_capture(&mut self, port: u32, taps: u32) -> Result<(), String> {
        let p = &mut self.ports[port as usize];
        if p.taps & capture::TAP_CAPTURE != 0 {
            let other = &self.captures.names[(p.taps & capture::TAP_ID_MASK) as usize];
            return Err(format!(
                "a port already captured as {other}; allowed: capture points that share no port"
            ));
        }
        p.taps |= taps;
        Ok(())
    }
}
