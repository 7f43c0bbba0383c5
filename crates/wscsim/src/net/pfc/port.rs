//! The network's side of PFC: admission and accounting as queues change, PAUSE frames
//! sent and obeyed, and queues held while their priority is paused.

use super::{err, held_queues, priority_of, Announce, Pfc, Spec, FRAME_BYTES};
use crate::check::ConfigError;
use crate::engine::Scheduler;
use crate::net::{NetEvent, Network, NONE};
use crate::packet::{Packet, PktId, Proto};
use crate::units::Bytes;

impl Network {
    /// Turns PFC on for every switch (each must have a shared buffer) and every port's
    /// egress. Fails with the message for `switch.shared_buffer` when a switch's buffer
    /// cannot hold its inputs' headroom and reserve.
    pub fn enable_pfc(&mut self, spec: Spec) -> Result<(), ConfigError> {
        if let Some(p) = (0..self.ports.len()).find(|&p| !self.schemes[p].serves_heads()) {
            let on_switch = self.ports[p].switch != NONE;
            return Err(err(
                if on_switch { "switch.scheme" } else { "host.nic_scheme" },
                format!("\"{}\" with switch.pfc", self.schemes[p].name()),
                format!(
                    "a scheme that sends the heads of its queues ({}): PFC holds a paused priority's queues",
                    crate::scheme::Scheme::kinds_serving_heads().join(", ")
                ),
            ));
        }
        if self.switches.is_empty() {
            return Err(err(
                "switch.pfc",
                "a topology without switches",
                "a topology with switches (PFC runs in switches)",
            ));
        }
        let headroom: Vec<u64> = (0..self.ports.len() as u32)
            .map(|p| self.default_headroom(p, &spec))
            .collect();
        let mut buffers = Vec::with_capacity(self.switches.len());
        let mut inputs = Vec::with_capacity(self.switches.len());
        for sw in &self.switches {
            let Some(sb) = sw.shared else {
                let given = match sw.input_buffers {
                    crate::net::InputBuffers::No => "\"per_port\"",
                    crate::net::InputBuffers::PerInput => "\"per_input_port\"",
                    crate::net::InputBuffers::PerVoq => "\"per_voq\"",
                };
                return Err(err(
                    "switch.buffer",
                    given,
                    "\"shared\" with switch.pfc (lossless switches share one buffer)",
                ));
            };
            buffers.push(sb.total_bytes);
            let nd = &self.nodes[sw.node as usize];
            inputs.push((nd.port_base..nd.port_base + nd.nports).collect());
        }
        let pfc = Pfc::new(spec, &buffers, &inputs, headroom).map_err(|(s, kept)| {
            err(
                "switch.shared_buffer",
                Bytes(buffers[s]),
                format!(
                    "more than the {} its inputs keep as PFC headroom and reserve (switch {})",
                    Bytes(kept),
                    self.switches[s].name
                ),
            )
        })?;
        self.pfc = Some(Box::new(pfc));
        Ok(())
    }

    /// The headroom of port `port` as a switch's input: the most bytes that can still be
    /// let in by it after it decides to pause. The PAUSE waits for the frame this port is
    /// sending (one frame time F), takes its own time on the wire and the link's
    /// propagation, and the upstream switch's port-to-port latency (it enters that switch
    /// like any frame); the upstream port then finishes the frame it is sending (another
    /// F). Frames sent until then are let in here up to a propagation delay, F and this
    /// switch's latency after they started, and those let in after the decision started
    /// within that whole span, one frame more than it holds at the link's rate: in all,
    /// the rate times (2 propagation delays, both latencies and the PAUSE) plus 4 frames.
    /// 0 for a host's port (hosts send no PAUSE).
    fn default_headroom(&self, port: u32, spec: &Spec) -> u64 {
        let pt = &self.ports[port as usize];
        if pt.switch == NONE {
            return 0;
        }
        if let Some(h) = spec.headroom_bytes {
            return h;
        }
        let tech = &self.techs[self.port_tech[port as usize] as usize];
        let frame = u64::from(tech.frame_bytes(tech.mtu_bytes) + tech.wire_overhead_bytes);
        let pause = u64::from(FRAME_BYTES + pt.wire_overhead_bytes);
        let latencies = self.switches[pt.switch as usize].port_to_port_ps + pt.peer_delay_ps;
        let span_ps = 2 * pt.prop_ps + latencies;
        let span_bytes =
            (u128::from(span_ps) * u128::from(pt.rate_bps)).div_ceil(8_000_000_000_000);
        span_bytes as u64 + pause + 4 * frame
    }

    /// The network's PFC state, if it runs PFC.
    pub fn pfc(&self) -> Option<&Pfc> {
        self.pfc.as_deref()
    }

    /// PFC's admission of `pkt`, arriving on local input `in_port`, at switch port `port`:
    /// None if PFC does not govern it (no PFC, a host's port, a lossy priority), else
    /// whether its input takes it (then its output's threshold does not apply).
    #[inline]
    pub(in crate::net) fn pfc_admits(&self, port: u32, in_port: u32, pkt: PktId) -> Option<bool> {
        let pfc = self.pfc.as_deref()?;
        let pt = &self.ports[port as usize];
        let prio = priority_of(self.pool.get(pkt).dscp);
        if pt.switch == NONE || !pfc.lossless(prio) {
            return None;
        }
        let input = self.nodes[pt.node as usize].port_base + in_port;
        let bytes = u64::from(self.pool.get(pkt).frame_bytes);
        Some(pfc.admits(pt.switch, input, prio, bytes))
    }

    /// Books a packet entering (`entered`) or leaving a switch's queue at port `port`;
    /// a port with something to announce is put on `pfc_kick`.
    #[inline]
    pub(in crate::net) fn pfc_book(&mut self, port: u32, pkt: PktId, entered: bool) {
        let Some(pfc) = self.pfc.as_deref_mut() else {
            return;
        };
        let pt = &self.ports[port as usize];
        let p = self.pool.get(pkt);
        let prio = priority_of(p.dscp);
        if pt.switch == NONE || !pfc.lossless(prio) {
            return;
        }
        let input = self.nodes[pt.node as usize].port_base + u32::from(p.in_port);
        let bytes = u64::from(p.frame_bytes);
        let a = if entered {
            pfc.arrive(pt.switch, input, prio, bytes)
        } else {
            pfc.leave(pt.switch, input, prio, bytes)
        };
        if a == Announce::Frame {
            self.pfc_kick.push(input);
        }
    }

    /// Ports that have announcements start sending them (each when its wire is free).
    pub(in crate::net) fn pfc_flush(&mut self, ev: &mut impl Scheduler<NetEvent>) {
        while let Some(port) = self.pfc_kick.pop() {
            self.try_transmit_with::<true>(ev, port);
        }
    }

    /// Whether port `port` has a PFC announcement to send (none on a failed link).
    #[inline]
    pub(in crate::net) fn pfc_announcing(&self, port: u32) -> bool {
        self.pfc.as_deref().is_some_and(|p| p.announcing(port)) && self.ports[port as usize].up
    }

    /// Sends port `port`'s announcement now (`pfc_announcing` said it has one; its wire
    /// is free).
    pub(in crate::net) fn pfc_send_announcement(
        &mut self,
        ev: &mut impl Scheduler<NetEvent>,
        port: u32,
    ) {
        let now = ev.now();
        let pfc = self.pfc.as_deref_mut().expect("announcing");
        let (changed, paused) = pfc.take_announcement(port);
        let frame = self.pool.alloc(Packet {
            proto: Proto::PFC,
            frame_bytes: FRAME_BYTES,
            enqueued_ps: now,
            dst_host: NONE,
            scheme_fields: [u32::from(changed), u32::from(paused)],
            ..Default::default()
        });
        self.counters.control_sent += 1;
        // `transmit` wakes the port at the frame's end if data waits; a later
        // announcement kicks the port itself.
        self.transmit(ev, port, frame);
    }

    /// A PAUSE frame reached node `node` on local port `in_port`: the egress of that port
    /// obeys it, and sends again if a priority resumed.
    #[cold]
    pub(in crate::net) fn pfc_receive(
        &mut self,
        ev: &mut impl Scheduler<NetEvent>,
        node: u32,
        in_port: u32,
        frame: PktId,
    ) {
        let [changed, paused] = self.pool.get(frame).scheme_fields;
        self.pool.free(frame);
        self.counters.control_received += 1;
        let port = self.nodes[node as usize].port_base + in_port;
        let pfc = self
            .pfc
            .as_deref_mut()
            .expect("PFC frames only run with PFC");
        if pfc.obey(port, changed as u8, paused as u8, ev.now()) {
            self.try_transmit(ev, port);
        }
    }

    /// Which of port `port`'s queues must not send now (their head's priority is paused),
    /// as bits of its first mask word; None if no queue may send.
    #[inline]
    pub(in crate::net) fn pfc_held(&self, port: u32) -> Option<u64> {
        let Some(pfc) = self.pfc.as_deref() else {
            return Some(0);
        };
        let paused = pfc.paused(port);
        if paused == 0 {
            return Some(0);
        }
        let pt = &self.ports[port as usize];
        let nonempty = if pt.q_count == 1 {
            1
        } else {
            self.masks[pt.mask_base as usize]
        };
        let head = |q: usize| {
            let id = self.queues[pt.q_base as usize + q].head;
            priority_of(self.pool.get(id).dscp)
        };
        held_queues(nonempty, paused, head)
    }
}
