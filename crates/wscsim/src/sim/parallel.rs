//! A partitioned run on several threads: which events are global, the helper threads and
//! the meetings at window ends (which thread runs which lane: `engine::partitioned::balance`).

use super::*;

/// In a partitioned run, the events that act across partitions and run alone at barriers:
/// applications' timers (an application may span hosts) other than those that act at one
/// host (`AppEvent::host_timer`), the metrics sampler, services and transports whose
/// events are global (`TransportKind::GLOBAL_EVENTS`: the DMA engines). Every
/// other event acts on the partition that scheduled it, or names its partition
/// (`schedule_in`: arrivals on wires between partitions); a host's application thread
/// handing a delivery to its application (`AppNote`) acts for that host.
pub(super) fn global_kind(e: &SimEvent) -> crate::engine::Route {
    match e.layer() {
        Layer::App(e) if !e.at_host() => crate::engine::Route::Global,
        Layer::Transport(e) if e.is_global() => crate::engine::Route::Global,
        Layer::Metrics(_) | Layer::Svc(_) => crate::engine::Route::Global,
        // A node's state of health is read by services and applications that span
        // servers (`Network::host_up`); its links fail by their own events.
        Layer::Net(NetEvent::NodeDown { .. } | NetEvent::NodeUp { .. }) => {
            crate::engine::Route::Global
        }
        Layer::App(_) | Layer::Transport(_) | Layer::Net(_) | Layer::Host(_) => {
            crate::engine::Route::Own
        }
    }
}

impl Sim {
    /// `run_until` on the run's threads: helpers run fabric partitions through views of
    /// the network while this thread runs the rest (`threads`).
    pub(super) fn run_threaded(&mut self, until_ps: TimePs) -> bool {
        self.take_own_lanes();
        let upper = self.balance.all_movable().then_some(threads::Layers {
            hosts: &self.hosts,
            transports: &self.transports,
            apps: &self.apps,
            metrics: &self.metrics,
        });
        // SAFETY: the crew lives within this call, and `run_slice` touches the network and
        // the helpers' lanes only at meetings, after `Crew::wait` (`meet`); with `upper`
        // (`hosts_run_anywhere`), this thread touches the layers above the network only
        // in the lanes it runs and at meetings.
        let crew = unsafe {
            threads::Crew::new(
                &self.net,
                &mut self.ev,
                self.balance.threads(),
                self.balance.owners(),
                upper,
            )
        };
        let finished = std::thread::scope(|scope| {
            for me in 1..self.balance.threads() as u32 {
                let crew = &crew;
                scope.spawn(move || crew.work(me));
            }
            let _stop = threads::StopOnDrop(&crew);
            self.run_slice(until_ps, Some(&crew))
        });
        // A slice may end inside a window whose helpers' lanes have already run it.
        crew.finish(&mut self.net, &mut self.ev);
        finished
    }

    /// Where the lanes of a partitioned run meet (`EventQueue::meet_at_windows`): helpers
    /// start a window, or have finished it and what crossed between partitions is put in
    /// place before the mail is handed over.
    pub(super) fn meet(
        &mut self,
        m: crate::engine::partitioned::Meeting,
        crew: Option<&threads::Crew>,
    ) {
        use crate::engine::partitioned::Meeting;
        match (m, crew) {
            (Meeting::Open { last_ps }, Some(crew)) => {
                self.balance.opened();
                crew.start(last_ps);
                crew.land_owner(&mut self.net);
                crew.run_own(last_ps);
            }
            (Meeting::Open { .. }, None) => {}
            (Meeting::Close, crew) => {
                if let Some(crew) = crew {
                    self.balance.owner_done();
                    crew.wait();
                    self.balance.helpers_done(crew.take_busy_s());
                    crew.absorb(&mut self.net, &mut self.ev);
                    if self.balance.after_window(|| self.ev.lane_events()) {
                        crew.assign(self.balance.owners());
                        self.take_own_lanes();
                    }
                } else {
                    self.net.put_remote_on_wires();
                }
                self.net.settle_late_drops();
                // No partition runs until the next window opens: free packet slots go
                // where they are short (each arena gets back only what ends in its part).
                self.net.pool_mut().rebalance();
                self.apps.after_window();
            }
        }
    }

    /// A global event (run between windows) sent packets on wires between partitions:
    /// they go on their wires now, for their arrivals may be due in the next window (a
    /// lane's come later than its window's end, and wait for it to close). What the last
    /// window sent across, which threads otherwise land as the next one opens, goes first,
    /// so that each wire keeps its packets in the order they were sent.
    pub(super) fn land_global_sends(&mut self, crew: Option<&threads::Crew>) {
        if !self.net.has_remote_out() {
            return;
        }
        if let Some(crew) = crew {
            crew.land_all_now(&mut self.net);
        }
        self.net.put_remote_on_wires();
    }

    /// Whether the hosts' partitions may run on any thread: every layer above the network
    /// keeps its state by partition or is unused, so that a partition's events touch only
    /// their own part of it (`threads::upper`): hosts keep their CPUs' and application
    /// threads' state by host and part. CamCubeOS's services and packing, and applications
    /// that act across hosts keep the hosts' partitions on this thread.
    pub fn hosts_run_anywhere(&self) -> bool {
        self.ev.is_partitioned()
            && !self.hosts.packing
            && !self.open_ended
            && self.services.list.iter().all(Option::is_none)
            && self.services.tunnel.is_none()
            && self.transports.run_in_partitions()
            && self.apps.run_in_partitions()
    }

    /// This thread runs the lanes the balance gives it (thread 0): through the queue, or,
    /// when every lane may run anywhere, through views of its own as helpers do
    /// (`threads::Crew::run_own`), the queue then running none.
    pub(super) fn take_own_lanes(&mut self) {
        if self.owner_runs_views() {
            self.ev.set_own_lanes(&[]);
        } else {
            self.ev.set_own_lanes(&self.balance.own_lanes());
        }
    }

    /// Whether this thread runs its lanes through views (`take_own_lanes`): when every lane
    /// may run on any thread, on one thread too. A lane's events then go straight to its
    /// scheduler (`LaneSched`) instead of through the queue's dispatch over lanes, which
    /// cost a partitioned run on one thread about a tenth of its time (2026-11-29).
    pub(super) fn owner_runs_views(&self) -> bool {
        self.ev.is_partitioned() && self.balance.all_movable()
    }
}
