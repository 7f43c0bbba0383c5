//! The event loop: takes each event in turn (or a partitioned run's windows), hands it to
//! its layer, and decides when the run has ended.

use super::*;

impl Sim {
    pub(super) fn start(&mut self) {
        self.started = true;
        let spread = self.scenario.engine.as_ref().and_then(|e| e.spread_hosts);
        if spread != Some(false) && self.hosts_run_anywhere() {
            let n = self.ev.lane_events().len();
            let weight = self.net.ports_per_partition(n);
            self.balance.move_all(&weight, self.net.partition_groups(n));
            // Windows open with a meeting, where this thread runs its lanes (`meet`).
            self.ev.meet_at_windows(true);
        }
        // What the start sends is the global events' (`EventQueue::arena`).
        if let Some(a) = self.ev.arena() {
            self.net.pool_mut().enter(a);
        }
        self.apps.start(&mut stack!(self));
        if self.apps.meet_at_windows() {
            // Applications kept in parts hand over mail where windows close.
            self.ev.meet_at_close();
        }
        self.services.start(&mut svc_ctx!(self));
        self.charge_departures();
        // Segments the start put on NICs that have begun to leave them: TCP hears of it
        // now, as after any event. (Until 2026-11-29 it heard after the first event, on
        // the simulation's thread: where a helper ran every hosts' lane, never.)
        self.nic_departures();
        if self.metrics.sample_interval_ps > 0 && self.metrics.max_queue_samples > 0 {
            self.ev.schedule(0, MetricsEvent::Sample.into());
        }
        self.route_unrouted();
    }

    /// Segments left their hosts' NICs: TCP's held-back senders may go.
    #[inline]
    fn nic_departures(&mut self) {
        if self.net.has_nic_departures() {
            self.transports.tcp.on_nic_departures(&mut host_path!(self));
            self.apps.dispatch_notes(&mut stack!(self));
        }
    }

    /// Tests: declares the partition `e` acts on, so that touching another panics, and in
    /// a partitioned run that `e` came from that partition's lane.
    #[cold]
    #[inline(never)]
    fn check_partition(&self, e: SimEvent) {
        let p = self.partition_of(e);
        if self.ev.is_partitioned() && !self.ev.in_global() {
            assert_eq!(p, self.ev.current_partition(), "{e:?} ran in another lane");
        }
        self.net.enter_partition(p);
    }

    /// In a partitioned run: puts what was scheduled outside any partition's event (at the
    /// start, by a global event) into the lane of the partition it acts on.
    pub(super) fn route_unrouted(&mut self) {
        if !self.ev.is_partitioned() {
            return;
        }
        let mut v = self.ev.take_unrouted();
        for &(t, e) in &v {
            let p = self.partition_of(e);
            self.ev.route(p, t, e);
        }
        v.clear();
        self.ev.give_back_unrouted(v);
    }

    /// Runs until simulated time `until_ps` (or the end of the run). Returns whether the run ended.
    pub fn run_until(&mut self, until_ps: TimePs) -> bool {
        if self.slots.is_some() {
            return self.run_slots(until_ps);
        }
        if !self.started {
            self.start();
        }
        if (self.balance.threads() > 1 || self.owner_runs_views()) && !self.finished {
            return self.run_threaded(until_ps);
        }
        self.run_slice(until_ps, None)
    }

    /// The event loop up to `until_ps`, with `crew` running lanes on other threads.
    pub(super) fn run_slice(&mut self, until_ps: TimePs, crew: Option<&threads::Crew>) -> bool {
        let mut horizon = until_ps.min(self.apps.end_ps);
        let mut draining = false;
        while !self.finished {
            let Some(e) = self.ev.next_due(horizon) else {
                match self.ev.take_meeting() {
                    Some(m) => {
                        self.meet(m, crew);
                        // Applications kept in parts count themselves done where a window
                        // closes: the run stops at its end, as when a partition's event
                        // finished the workload. (Only there: a window opens on several
                        // threads alone, and what is done then must not depend on that.)
                        let closed = m == crate::engine::partitioned::Meeting::Close;
                        self.finished |= closed && !draining && self.apps.done();
                        continue;
                    }
                    None => break,
                }
            };
            self.prefetch_ahead();
            if let Some(a) = self.ev.arena() {
                self.net.pool_mut().enter(a);
            }
            if self.net.check_partitions() {
                self.check_partition(e.kind);
            }
            if self.stall.stalled(e.time_ps, &e.kind, self.stall_limit) {
                self.finished = true;
                break;
            }
            self.handle(e.kind);
            if self.ev.in_global() {
                self.route_unrouted();
                self.land_global_sends(crew);
            }
            self.nic_departures();
            if !draining && (self.apps.done() || self.services.done()) {
                match self.ev.window_last_ps() {
                    // A partition's event finished the workload: every partition runs to the
                    // end of the window first, so where the run stops does not depend on
                    // the order of the window's lanes.
                    Some(last) => {
                        // To the window's end even past this call's `until_ps`: where the
                        // run stops must not depend on the slices it is run in.
                        horizon = last.min(self.apps.end_ps);
                        draining = true;
                    }
                    None => self.finished = true,
                }
            }
        }
        if let Some(crew) = crew {
            // A slice may end inside a window: the helpers finish their part of it before
            // anything else touches the lanes.
            crew.wait();
        }
        if draining {
            self.finished = true;
        }
        if !self.finished {
            self.ev.idle_until(horizon);
            if horizon >= self.apps.end_ps || (Driver::is_empty(&self.ev) && !self.open_ended) {
                self.finished = true;
            }
        }
        if self.finished {
            self.apps.finish(&self.transports.udp, &mut self.metrics);
            if self.ev.is_partitioned() {
                self.net.settle_late_drops();
                if let Some(ranks) = self.services.message_ranks() {
                    self.net.renumber_service_flows(&ranks);
                }
                self.net.sort_drop_log();
            }
        }
        self.finished
    }

    pub fn run(&mut self) {
        self.run_until(self.apps.end_ps);
    }

    /// Runs `f` on the run's transports with a host path into the run: how a program (or
    /// a test) drives a transport itself, before or between runs.
    pub fn with_transports<R>(
        &mut self,
        f: impl FnOnce(
            &mut crate::transport::Transports,
            &mut crate::transport::HostPath<'_, EventQueue<SimEvent>>,
        ) -> R,
    ) -> R {
        let Sim {
            net,
            hosts,
            ev,
            transports,
            ..
        } = self;
        f(
            transports,
            &mut crate::transport::HostPath::new(net, hosts, ev),
        )
    }

    /// Whether the run has ended (workload done or duration reached).
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// Simulated time now, in picoseconds.
    pub fn now_ps(&self) -> TimePs {
        self.ev.now()
    }

    pub fn end_ps(&self) -> TimePs {
        self.apps.end_ps
    }

    /// Why the run was stopped before its end (no progress), if it was.
    pub fn fault(&self) -> Option<&str> {
        self.stall.fault.as_deref()
    }

    /// Puts `pkt` (allocated and counted as sent) on host `host`'s NIC now: a frame from
    /// outside the simulation (the emulator's).
    pub fn inject(&mut self, host: u32, pkt: crate::packet::PktId) {
        self.net.host_transmit(&mut self.ev, host, pkt);
    }
}
