//! A partitioned run on several threads: which events are global, how lanes are shared
//! among threads and rebalanced by measured cost, and the meetings at window ends.

use super::*;

/// In a partitioned run, the events that act across partitions and run alone at barriers:
/// applications' timers (an application may span hosts) other than those that act at one
/// host (`AppEvent::host_timer`), the metrics sampler, services and DMA engines. Every
/// other event acts on the partition that scheduled it, or names its partition
/// (`schedule_in`: arrivals on wires between partitions); a host's application thread
/// handing a delivery to its application (`AppNote`) acts for that host.
pub(super) fn global_kind(e: &SimEvent) -> crate::engine::Route {
    match e {
        SimEvent::App(e) if !e.at_host() => crate::engine::Route::Global,
        SimEvent::Metrics(_) | SimEvent::Svc(_) | SimEvent::Dma(_) => crate::engine::Route::Global,
        _ => crate::engine::Route::Own,
    }
}

/// How a threaded run shares its lanes among threads: by ports at first, then every
/// `REBALANCE_WINDOWS` windows by the events each lane ran since, an event of the owner's
/// costing what the owner's events cost it against the helpers' (wall time, measured:
/// its hosts' events carry the transports). Timing decides only who runs what, never a
/// result.
#[derive(Default)]
pub(super) struct Balance {
    pub(super) fabric: Vec<bool>,
    pub(super) windows: u64,
    pub(super) events_then: Vec<u64>,
    /// Since the last rebalance: the owner's time from opening windows to reaching their
    /// ends, and when the open window was opened.
    pub(super) owner_run_s: f64,
    pub(super) opened_at: Option<std::time::Instant>,
    /// The helpers' time running lanes since the last rebalance, summed.
    pub(super) helpers_s: f64,
    /// What a host lane's event costs against a fabric lane's (smoothed).
    pub(super) host_cost: f64,
}

pub(super) const REBALANCE_WINDOWS: u64 = 256;

/// What a host lane's event costs against a fabric lane's, from a period's events per lane
/// (`events`), who ran them and each side's time running lanes: the helpers ran fabric
/// events only, which prices those; the owner's time less its fabric events is its hosts'.
/// None until both sides have run some of each.
pub(super) fn host_cost(
    events: &[u64],
    fabric: &[bool],
    owner: &[u32],
    owner_s: f64,
    helpers_s: f64,
) -> Option<f64> {
    let sum = |f: &dyn Fn(usize) -> bool| -> f64 {
        (0..events.len())
            .filter(|&i| f(i))
            .map(|i| events[i] as f64)
            .sum()
    };
    let helper_events = sum(&|i| owner[i] != 0);
    let owner_fabric = sum(&|i| owner[i] == 0 && fabric[i]);
    let host_events = sum(&|i| !fabric[i]);
    if helper_events == 0.0 || host_events == 0.0 || helpers_s <= 0.0 {
        return None;
    }
    let fabric_s = helpers_s / helper_events;
    let host_s = (owner_s - fabric_s * owner_fabric) / host_events;
    Some((host_s / fabric_s).clamp(0.5, 20.0))
}

/// Events per window below which helpers are not worth their two meetings per window: the
/// owner then runs every lane (measured: a k=8 fat tree, about 300 events a window, ran
/// slower on two threads than on one; k=16, about 4,000, 1.6x faster).
pub(super) const MIN_EVENTS_PER_WINDOW: u64 = 1_000;

impl Sim {
    /// `run_until` on the run's threads: helpers run fabric partitions through views of
    /// the network while this thread runs the rest (`threads`).
    pub(super) fn run_threaded(&mut self, until_ps: TimePs) -> bool {
        self.take_own_lanes();
        // SAFETY: the crew lives within this call, and `run_slice` touches the network and
        // the helpers' lanes only at meetings, after `Crew::wait` (`meet`).
        let crew =
            unsafe { threads::Crew::new(&self.net, &mut self.ev, self.threads, &self.lane_owner) };
        let finished = std::thread::scope(|scope| {
            for me in 1..self.threads as u32 {
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
                self.balance.opened_at = Some(std::time::Instant::now());
                crew.start(last_ps);
                crew.land_owner(&mut self.net);
            }
            (Meeting::Open { .. }, None) => {}
            (Meeting::Close, crew) => {
                if let Some(crew) = crew {
                    if let Some(t) = self.balance.opened_at.take() {
                        self.balance.owner_run_s += t.elapsed().as_secs_f64();
                    }
                    crew.wait();
                    self.balance.helpers_s += crew.take_busy_s();
                    crew.absorb(&mut self.net, &mut self.ev);
                    self.rebalance(crew);
                } else {
                    self.net.put_remote_on_wires();
                }
            }
        }
    }

    /// Every `REBALANCE_WINDOWS` windows, shares the fabric lanes among threads again by
    /// the events each ran since and what they cost (`Balance`; between windows; changes
    /// no result).
    pub(super) fn rebalance(&mut self, crew: &threads::Crew) {
        let b = &mut self.balance;
        b.windows += 1;
        if !b.windows.is_multiple_of(REBALANCE_WINDOWS) {
            return;
        }
        let now = self.ev.lane_events();
        let recent: Vec<u64> = now
            .iter()
            .zip(b.events_then.iter().chain(std::iter::repeat(&0)))
            .map(|(n, t)| n - t)
            .collect();
        b.events_then = now;
        let per_window = recent.iter().sum::<u64>() / REBALANCE_WINDOWS;
        let threads = if per_window < MIN_EVENTS_PER_WINDOW {
            1
        } else {
            self.threads
        };
        let helper_s = std::mem::take(&mut b.helpers_s);
        let owner_s = std::mem::take(&mut b.owner_run_s);
        b.host_cost = host_cost(&recent, &b.fabric, &self.lane_owner, owner_s, helper_s)
            .map_or(b.host_cost, |c| (b.host_cost + c) / 2.0);
        self.lane_owner = threads::assign_lanes(&recent, &b.fabric, threads, b.host_cost);
        crew.assign(&self.lane_owner);
        self.take_own_lanes();
    }

    /// This thread runs the lanes `lane_owner` gives it (thread 0).
    pub(super) fn take_own_lanes(&mut self) {
        let own: Vec<usize> = (0..self.lane_owner.len())
            .filter(|&i| self.lane_owner[i] == 0)
            .collect();
        self.ev.set_own_lanes(&own);
    }
}
