//! A port's output queues: admission (buffer limits, shared buffers, ingress accounting),
//! enqueueing through its scheme (or a torus NIC's slot), dequeueing, and drops.

use super::*;

impl Network {
    /// Drops `pkt` at `port` (counted there and in the drop log) and frees it.
    pub fn drop_packet(&mut self, now: TimePs, port: u32, pkt: PktId) {
        let bytes = self.pool.get(pkt).frame_bytes;
        self.log_drop(now, port, pkt);
        self.count_drop_at(port, bytes);
    }

    /// A drop of `bytes` in `port`'s statistics.
    #[inline]
    pub(super) fn count_drop_at(&mut self, port: u32, bytes: u32) {
        let st = &mut self.ports[port as usize].stats;
        st.drops += 1;
        st.drop_bytes += u64::from(bytes);
    }

    /// `drop_packet` but for `port`'s statistics, which it does not touch (and reads only
    /// fields of `port` that a run never changes): logs, counts and frees `pkt`.
    #[inline]
    pub(super) fn log_drop(&mut self, now: TimePs, port: u32, pkt: PktId) {
        let p = self.pool.get(pkt);
        let rec = DropRecord {
            time_ps: now,
            node: self.ports[port as usize].node,
            port,
            flow_id: p.flow_id,
            frame_bytes: p.frame_bytes,
            proto: p.proto,
        };
        if p.dst_host == packet::TO_KEY {
            if let Some(k) = self.kbr.as_mut() {
                k.counters.key_dropped += 1;
            }
        }
        // A segment dropped before it left its own host frees its place in the sender's
        // small-queue budget just as a departure does (a torus server's service queue can
        // drop its own segments); otherwise the sender would wait for it forever.
        if self.track_nic_departures
            && self.ports[port as usize].switch == NONE
            && p.hops == 0
            && p.payload_bytes > 0
            && p.proto == packet::Proto::TCP
        {
            self.nic_departures.push((p.flow_id, p.frame_bytes));
        }
        self.drop_log.push(rec);
        self.counters.dropped += 1;
        self.pool.free(pkt);
    }

    /// The most bytes `port`'s queues may hold after this enqueue, by the switch's buffer
    /// architecture: a dynamic-threshold share of a shared buffer, what the packet's input
    /// has left of its ingress buffer, or the port's own buffer.
    #[inline(always)]
    pub(super) fn admission_limit(&self, port: u32, in_port: u32) -> u64 {
        let pt = &self.ports[port as usize];
        if pt.switch == NONE {
            return pt.buffer_bytes;
        }
        let sw = &self.switches[pt.switch as usize];
        if let Some(sb) = &sw.shared {
            let free = sb.total_bytes - sb.used_bytes;
            let threshold = (sb.alpha * free as f64) as u64;
            threshold.min(pt.bytes_queued + free)
        } else if let Some(g) = input_buffer(sw, &self.nodes[pt.node as usize], port, in_port) {
            pt.bytes_queued + pt.buffer_bytes.saturating_sub(self.input_bytes[g])
        } else {
            pt.buffer_bytes
        }
    }

    /// The most bytes switch port `port` may hold after an enqueue when only its switch's
    /// shared buffer bounds it (PFC's lossless priorities).
    fn buffer_room(&self, port: u32) -> u64 {
        let pt = &self.ports[port as usize];
        let sb = self.switches[pt.switch as usize]
            .shared
            .expect("PFC runs on shared buffers");
        pt.bytes_queued + (sb.total_bytes - sb.used_bytes)
    }

    /// Offers `pkt` (arrived on local input `in_port`) to `port`'s scheme: classify, then
    /// enqueue within the admission limit; transmits or drops by the verdict.
    pub(super) fn enqueue_at_port(
        &mut self,
        ev: &mut impl Scheduler<NetEvent>,
        port: u32,
        pkt: PktId,
        in_port: u32,
    ) {
        let now = ev.now();
        self.acts_on(self.ports[port as usize].node);
        if !self.ports[port as usize].up {
            self.drop_on_down_link(now, port, pkt);
            return;
        }
        if self.slot_free(port) {
            self.enqueue_in_slot(ev, port, pkt);
            return;
        }
        if self.pfc.is_some() {
            return self.enqueue_lossless(ev, port, pkt, in_port);
        }
        if self.admit_with::<false>(port, pkt, in_port, now) {
            self.try_transmit_with::<false>(ev, port);
        }
        if !self.bounced.is_empty() {
            self.send_back(ev, port, in_port);
        }
    }

    /// Packets `port`'s scheme would not take go back towards their sources from its
    /// switch, as if they had just arrived there (on `in_port`).
    #[cold]
    #[inline(never)]
    fn send_back(&mut self, ev: &mut impl Scheduler<NetEvent>, port: u32, in_port: u32) {
        let node = self.ports[port as usize].node;
        while let Some(pkt) = self.bounced.pop() {
            self.forward_arrival(ev, node, in_port, pkt);
        }
    }

    /// `enqueue_at_port` under PFC (`net::pfc`): its input's admission and accounting,
    /// and the PAUSE frames the change calls for.
    #[cold]
    #[inline(never)]
    fn enqueue_lossless(
        &mut self,
        ev: &mut impl Scheduler<NetEvent>,
        port: u32,
        pkt: PktId,
        in_port: u32,
    ) {
        if self.admit_with::<true>(port, pkt, in_port, ev.now()) {
            self.try_transmit_with::<true>(ev, port);
        }
        self.pfc_flush(ev);
    }

    /// `admit_with`, with or without PFC as the network runs.
    #[inline]
    pub(super) fn admit(&mut self, port: u32, pkt: PktId, in_port: u32, now: TimePs) -> bool {
        if self.pfc.is_some() {
            self.admit_with::<true>(port, pkt, in_port, now)
        } else {
            self.admit_with::<false>(port, pkt, in_port, now)
        }
    }

    /// Offers `pkt` (arrived on local input `in_port`) to `port`'s scheme within the
    /// admission limit, counting marks, drops and the buffer's use; returns whether the
    /// port has a packet newly queued (it may start sending).
    /// `LOSSLESS`: the network runs PFC (its input's admission and accounting apply).
    #[inline(always)]
    pub(super) fn admit_with<const LOSSLESS: bool>(
        &mut self,
        port: u32,
        pkt: PktId,
        in_port: u32,
        now: TimePs,
    ) -> bool {
        let governed = if LOSSLESS {
            self.pfc_admits(port, in_port, pkt)
        } else {
            None
        };
        let limit_bytes = match governed {
            None => self.admission_limit(port, in_port),
            // Lossless: the output's threshold does not apply, only the input's headroom,
            // and the buffer's free bytes (which lossy traffic may have taken).
            Some(true) => self.buffer_room(port),
            Some(false) => {
                let input = self.nodes[self.ports[port as usize].node as usize].port_base + in_port;
                let prio = pfc::priority_of(self.pool.get(pkt).dscp);
                let pfc = self.pfc.as_deref_mut().expect("admitted by PFC");
                pfc.count_headroom_drop(input, prio);
                self.drop_packet(now, port, pkt);
                return false;
            }
        };
        let Network {
            pool,
            ports,
            queues,
            masks,
            schemes,
            queue_trace,
            ..
        } = self;
        let pt = &mut ports[port as usize];
        pool.get_mut(pkt).enqueued_ps = now;
        let before = pt.bytes_queued;
        let mut ctx = port_ctx(pt, queues, masks, pool, limit_bytes, now);
        let scheme = &mut schemes[port as usize];
        let q = scheme.classify(&mut ctx, pkt, in_port);
        let frame = ctx.pool.get(pkt).frame_bytes as u64;
        let verdict = scheme.enqueue(&mut ctx, pkt, q);
        if verdict == Verdict::AcceptedMarked {
            ctx.pool.get_mut(pkt).ecn = packet::ecn::CE;
            pt.stats.ecn_marks += 1;
        }
        let after = pt.bytes_queued;
        if after > pt.stats.max_queue_bytes {
            pt.stats.max_queue_bytes = after;
        }
        if pt.taps & capture::TAP_QUEUE != 0 {
            queue_trace.record(now, port, after);
        }
        if self.account_enqueue(port, in_port, before, frame, verdict) {
            self.counters.buffer_violations += 1;
        }
        match verdict {
            Verdict::Accepted | Verdict::AcceptedMarked => {
                if LOSSLESS {
                    self.pfc_book(port, pkt, true);
                }
                true
            }
            Verdict::Dropped => {
                self.drop_packet(now, port, pkt);
                false
            }
            Verdict::Bounced if self.ports[port as usize].switch == NONE => {
                // A host's own port sends nothing back (it would reach the host itself).
                self.drop_packet(now, port, pkt);
                false
            }
            Verdict::Bounced => {
                let p = self.pool.get_mut(pkt);
                (p.src_host, p.dst_host) = (p.dst_host, p.src_host);
                p.framing |= packet::framing::BOUNCED;
                self.bounced.push(pkt);
                false
            }
            Verdict::DroppedOther(other) => {
                if LOSSLESS {
                    self.pfc_book(port, pkt, true);
                    self.pfc_book(port, other, false);
                }
                self.drop_packet(now, port, other);
                true
            }
        }
    }

    /// Whether `port` keeps its waiting frame in `nic_slots` and has room there now (nothing
    /// queued: a frame queued behind others goes to the scheme's queue, after them).
    #[inline(always)]
    pub(super) fn slot_free(&self, port: u32) -> bool {
        self.nic_slots
            .get(port as usize)
            .is_some_and(|&s| s == packet::NO_PKT)
            && self.ports[port as usize].pkts_queued == 0
    }

    /// A torus link's NIC takes `pkt` as its waiting frame: what a DropTail queue with an
    /// unlimited buffer does with it, without the scheme's queue (the common case under
    /// late link choice, where a link's NIC holds one frame behind the one on the wire).
    #[inline]
    pub(super) fn enqueue_in_slot(
        &mut self,
        ev: &mut impl Scheduler<NetEvent>,
        port: u32,
        pkt: PktId,
    ) {
        let p = self.pool.get_mut(pkt);
        p.enqueued_ps = ev.now();
        let frame = u64::from(p.frame_bytes);
        let pt = &mut self.ports[port as usize];
        pt.pkts_queued = 1;
        pt.bytes_queued = frame;
        pt.stats.max_queue_bytes = pt.stats.max_queue_bytes.max(frame);
        self.nic_slots[port as usize] = pkt;
        self.try_transmit(ev, port);
    }

    /// Which ports may keep their waiting frame in `nic_slots`: the torus links of servers
    /// with per-service queues whose NIC scheme is DropTail with an unlimited buffer and no
    /// packet limit, not observed by a capture or a queue trace (their queue behaves
    /// exactly as the slot does). Call once the network is complete.
    pub fn use_nic_slots(&mut self) {
        if self.service_queues.is_none() {
            return;
        }
        let slot_port = |n: &Network, port: usize| {
            let pt = &n.ports[port];
            let nd = &n.nodes[pt.node as usize];
            let plain = matches!(&n.schemes[port], crate::scheme::Scheme::DropTail(d) if d.limit_packets.is_none());
            (port as u32 - nd.port_base) < nd.forwarder.late_choice_links()
                && plain
                && pt.buffer_bytes == u64::MAX
                && pt.taps == 0
        };
        let any = (0..self.ports.len()).any(|p| slot_port(self, p));
        if any {
            self.nic_slots = (0..self.ports.len())
                .map(|p| {
                    if slot_port(self, p) {
                        packet::NO_PKT
                    } else {
                        NOT_A_SLOT
                    }
                })
                .collect();
        }
    }

    /// Books an enqueue in the switch's buffer (shared or per input); returns whether a
    /// buffer now holds more than it may (an invariant violation).
    #[inline(always)]
    pub(super) fn account_enqueue(
        &mut self,
        port: u32,
        in_port: u32,
        before: u64,
        frame: u64,
        verdict: Verdict,
    ) -> bool {
        let pt = &self.ports[port as usize];
        let after = pt.bytes_queued;
        if pt.switch == NONE {
            return after > pt.buffer_bytes;
        }
        let node = &self.nodes[pt.node as usize];
        let sw = &mut self.switches[pt.switch as usize];
        if let Some(sb) = sw.shared.as_mut() {
            sb.used_bytes = sb.used_bytes + after - before;
            return sb.used_bytes > sb.total_bytes;
        }
        let Some(g) = input_buffer(sw, node, port, in_port) else {
            return after > pt.buffer_bytes;
        };
        // Credit what entered to its input and debit what a scheme pushed out to the
        // evicted packet's own input.
        match verdict {
            Verdict::Accepted | Verdict::AcceptedMarked => self.input_bytes[g] += frame,
            Verdict::DroppedOther(other) => {
                self.input_bytes[g] += frame;
                let o = self.pool.get(other);
                let w = input_buffer(sw, node, port, u32::from(o.in_port)).expect("as above");
                self.input_bytes[w] -= o.frame_bytes as u64;
            }
            Verdict::Dropped | Verdict::Bounced => {}
        }
        self.input_bytes[g] > pt.buffer_bytes
    }

    /// `dequeue_with`, with or without PFC as the network runs.
    #[inline]
    pub(super) fn dequeue(&mut self, port: u32, now: TimePs) -> Option<PktId> {
        if self.pfc.is_some() {
            self.dequeue_with::<true>(port, now)
        } else {
            self.dequeue_with::<false>(port, now)
        }
    }

    /// Takes the next packet the scheme sends from `port`, releasing its buffer space
    /// (`LOSSLESS`: the network runs PFC, whose paused queues wait and whose inputs are
    /// credited).
    #[inline(always)]
    pub(super) fn dequeue_with<const LOSSLESS: bool>(
        &mut self,
        port: u32,
        now: TimePs,
    ) -> Option<PktId> {
        let pt = &mut self.ports[port as usize];
        if pt.pkts_queued == 0 {
            return None;
        }
        if let Some(slot) = self.nic_slots.get_mut(port as usize) {
            if *slot != packet::NO_PKT && *slot != NOT_A_SLOT {
                let pkt = std::mem::replace(slot, packet::NO_PKT);
                pt.pkts_queued -= 1;
                pt.bytes_queued -= u64::from(self.pool.get(pkt).frame_bytes);
                return Some(pkt);
            }
        }
        let held = if LOSSLESS {
            // Queues whose head's priority is paused are hidden from the scheme.
            let held = self.pfc_held(port)?;
            let m0 = self.ports[port as usize].mask_base as usize;
            self.masks[m0] &= !held;
            held
        } else {
            0
        };
        let Network {
            pool,
            ports,
            queues,
            masks,
            schemes,
            switches,
            nodes,
            input_bytes,
            ..
        } = self;
        let pt = &mut ports[port as usize];
        let before = pt.bytes_queued;
        let mut ctx = port_ctx(pt, queues, masks, pool, u64::MAX, now);
        let pkt = schemes[port as usize].schedule(&mut ctx);
        if held != 0 {
            masks[pt.mask_base as usize] |= held;
        }
        let pkt = pkt?;
        if pt.switch != NONE {
            let sw = &mut switches[pt.switch as usize];
            if let Some(sb) = sw.shared.as_mut() {
                sb.used_bytes -= before - pt.bytes_queued;
            } else if let Some(g) = input_buffer(
                sw,
                &nodes[pt.node as usize],
                port,
                u32::from(pool.get(pkt).in_port),
            ) {
                input_bytes[g] -= before - pt.bytes_queued;
            }
        }
        if LOSSLESS {
            self.pfc_book(port, pkt, false);
        }
        Some(pkt)
    }
}

impl Network {
    /// Refuses trimming (`scheme::trim`) where the network books a packet's bytes by the
    /// size it arrived with: under PFC (`pfc`), and in buffers that belong to inputs.
    pub fn check_trimming(&self, pfc: bool) -> Result<(), crate::check::ConfigError> {
        let Some(p) = (0..self.ports.len()).find(|&p| self.schemes[p].can_trim()) else {
            return Ok(());
        };
        let on_switch = self.ports[p].switch != NONE;
        let field = if on_switch {
            "switch.scheme"
        } else {
            "host.nic_scheme"
        };
        let given = format!("\"{}\"", self.schemes[p].name());
        if pfc {
            let allowed = "a scheme that never changes a packet's size with switch.pfc (PFC books the bytes a packet arrived with)";
            return Err(crate::check::err(
                field,
                format!("{given} with switch.pfc"),
                allowed,
            ));
        }
        if let Some(sw) = self
            .switches
            .iter()
            .find(|s| s.input_buffers != InputBuffers::No)
        {
            let allowed = format!("{given} with switch.buffer \"per_port\" or \"shared\" (a trimmed packet's bytes would be booked to another input of switch {})", sw.name);
            return Err(crate::check::err(
                "switch.buffer",
                "a buffer per input",
                allowed,
            ));
        }
        Ok(())
    }
}

/// Where a packet that entered switch `node` on local input `in_port` and is queued at its
/// output `port` counts its bytes, when the buffer belongs to its input (`Network::
/// input_bytes`): its input port, or with per-VOQ buffers its input's queue at `port`
/// (inputs share a queue beyond `MAX_QUEUES`, as the schemes' VOQs do). None: the output
/// port's own buffer (or a shared one) holds it.
#[inline]
fn input_buffer(sw: &Switch, node: &Node, port: u32, in_port: u32) -> Option<usize> {
    match sw.input_buffers {
        InputBuffers::No => None,
        InputBuffers::PerInput => Some((node.port_base + in_port) as usize),
        InputBuffers::PerVoq => {
            let voqs = crate::scheme::MAX_QUEUES;
            Some((port * voqs + in_port % voqs) as usize)
        }
    }
}
