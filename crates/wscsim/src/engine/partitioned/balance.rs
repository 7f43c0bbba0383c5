//! Which thread runs each lane of a partitioned run on several threads, decided again as
//! the run goes by what each lane ran and what that cost.
//!
//! Thread 0 (the owner) keeps every lane that helpers may not run (`movable` false: in a
//! run today, the partitions with hosts, whose events reach transports and applications);
//! movable lanes go, heaviest first, to the least loaded thread. At first the weights are
//! the caller's guess (a network's ports per partition); every `REBALANCE_WINDOWS` windows
//! they are the events each lane ran since, an event of the owner's kept lanes costing
//! `owner_cost` times a movable lane's, measured from both sides' wall time. Timing decides
//! only who runs what, never a result: every lane is run to the same window's end by
//! whichever thread runs it.

use std::time::Instant;

/// How often the lanes are shared again, in windows.
pub const REBALANCE_WINDOWS: u64 = 256;

/// Whether helpers are worth their two meetings a window is measured, not guessed: every
/// period of `REBALANCE_WINDOWS` windows is timed, and its wall time per event kept for
/// the way it ran (lanes shared, or the owner alone); the cheaper way runs on, and every
/// `PROBE_PERIODS` periods the other way runs one period again, for what each costs
/// changes as a run does. (A fixed floor of 1,000 events a window, from a k=8 fat tree that
/// once ran slower on two threads, kept DIABLO's memcached array, about 30 events a
/// window, and k=8, about 300, on one thread after both had become faster on two.)
pub const PROBE_PERIODS: u64 = 32;

/// The lanes' threads and what decides them.
#[derive(Default)]
pub struct LaneBalance {
    threads: usize,
    /// Per lane, whether a helper thread may run it.
    movable: Vec<bool>,
    /// Per lane, its group: the movable lanes of a group run on one thread.
    group: Vec<u32>,
    /// Per lane, the thread that runs it (0: the owner).
    owner: Vec<u32>,
    windows: u64,
    /// Each lane's events at the last rebalance.
    events_then: Vec<u64>,
    /// Since the last rebalance: the owner's time from opening windows to reaching their
    /// ends, and when the open window was opened.
    owner_run_s: f64,
    opened_at: Option<Instant>,
    /// The helpers' time running lanes since the last rebalance, summed.
    helpers_s: f64,
    /// What an event of a kept lane costs against a movable lane's (smoothed).
    owner_cost: f64,
    /// When every lane is movable: what an event costs the owner against a helper
    /// (smoothed; 1 at first). The owner also runs the global events and the meetings,
    /// and a lane's events cost what they cost wherever they run, so the helpers' and the
    /// owner's time per event differ by what the owner does besides.
    owner_slowness: f64,
    /// Whether the owner runs every lane (the helpers idle) this period.
    alone: bool,
    /// Wall time per event, smoothed, with lanes shared ([0]) and with the owner alone
    /// ([1]); None until measured.
    wall_per_event: [Option<f64>; 2],
    /// When this period began (None before the first window's end).
    period_began: Option<Instant>,
    periods: u64,
}

impl LaneBalance {
    /// `threads` threads for lanes weighing `weight` at first, of which `movable` may run
    /// on helpers.
    pub fn new(threads: usize, weight: &[u64], movable: Vec<bool>) -> LaneBalance {
        let group: Vec<u32> = (0..weight.len() as u32).collect();
        LaneBalance {
            threads,
            owner: assign_lanes(weight, &movable, &group, threads, Costs::EVEN),
            movable,
            group,
            // A first guess, replaced by measurement after the first windows.
            owner_cost: 2.0,
            owner_slowness: 1.0,
            ..Default::default()
        }
    }

    /// Every lane may run on any thread from now on (weighing `weight` at first), the
    /// lanes of one `group` on one thread.
    pub fn move_all(&mut self, weight: &[u64], group: Vec<u32>) {
        self.movable.fill(true);
        self.group = group;
        self.owner = assign_lanes(
            weight,
            &self.movable,
            &self.group,
            self.threads,
            Costs::EVEN,
        );
    }

    /// What events cost on the owner against a helper, as measured so far: a kept lane's
    /// `owner_cost`; a movable lane's, when every lane is movable, `owner_slowness`.
    fn costs(&self) -> Costs {
        Costs {
            kept: self.owner_cost,
            owner_movable: if self.all_movable() {
                self.owner_slowness
            } else {
                1.0
            },
        }
    }

    /// Whether every lane may run on any thread.
    pub fn all_movable(&self) -> bool {
        self.movable.iter().all(|&m| m)
    }

    pub fn threads(&self) -> usize {
        self.threads.max(1)
    }

    /// Per lane, the thread that runs it.
    pub fn owners(&self) -> &[u32] {
        &self.owner
    }

    /// The lanes the owner (thread 0) runs.
    pub fn own_lanes(&self) -> Vec<usize> {
        (0..self.owner.len())
            .filter(|&i| self.owner[i] == 0)
            .collect()
    }

    /// A window has opened: the owner's time on it starts.
    pub fn opened(&mut self) {
        self.opened_at = Some(Instant::now());
    }

    /// The owner has reached the open window's end (its own lanes are run).
    pub fn owner_done(&mut self) {
        if let Some(t) = self.opened_at.take() {
            self.owner_run_s += t.elapsed().as_secs_f64();
        }
    }

    /// The helpers have finished the window, having spent `busy_s` on their lanes.
    pub fn helpers_done(&mut self, busy_s: f64) {
        self.helpers_s += busy_s;
    }

    /// After each window, with each lane's events so far (asked for only at a period's
    /// end): every `REBALANCE_WINDOWS` windows the lanes are shared again, and this says
    /// so (`owners` has changed).
    pub fn after_window(&mut self, lane_events: impl FnOnce() -> Vec<u64>) -> bool {
        self.windows += 1;
        if self.windows == 1 {
            self.period_began = Some(Instant::now());
        }
        if !self.windows.is_multiple_of(REBALANCE_WINDOWS) {
            return false;
        }
        let now = Instant::now();
        let began = self.period_began.replace(now).unwrap_or(now);
        self.after_period(lane_events(), now.duration_since(began).as_secs_f64())
    }

    /// The end of a period of windows that took `wall_s`, with each lane's events so far.
    fn after_period(&mut self, lane_events: Vec<u64>, wall_s: f64) -> bool {
        let recent: Vec<u64> = lane_events
            .iter()
            .zip(self.events_then.iter().chain(std::iter::repeat(&0)))
            .map(|(n, t)| n - t)
            .collect();
        self.events_then = lane_events;
        let events = recent.iter().sum::<u64>();
        if events > 0 && wall_s > 0.0 {
            let c = wall_s / events as f64;
            let m = &mut self.wall_per_event[usize::from(self.alone)];
            *m = Some(m.map_or(c, |old| (old + c) / 2.0));
        }
        self.periods += 1;
        let was_alone = self.alone;
        self.alone = self.threads > 1 && alone_next(self.wall_per_event, self.periods);
        let threads = if self.alone { 1 } else { self.threads };
        let helpers_s = std::mem::take(&mut self.helpers_s);
        let owner_s = std::mem::take(&mut self.owner_run_s);
        self.owner_cost = owner_cost(&recent, &self.movable, &self.owner, owner_s, helpers_s)
            .map_or(self.owner_cost, |c| (self.owner_cost + c) / 2.0);
        if let Some(c) = owner_slowness(&recent, &self.owner, owner_s, helpers_s) {
            self.owner_slowness = (self.owner_slowness + c) / 2.0;
        }
        let costs = self.costs();
        let loads = |owner: &[u32]| thread_loads(&recent, &self.movable, owner, costs);
        let now = loads(&self.owner);
        let next = assign_lanes(&recent, &self.movable, &self.group, threads, costs);
        // A lane that moves takes its working set to another core's cache: lanes stay
        // where they are unless the new assignment evens the load out markedly.
        if threads == self.threads
            && !was_alone
            && self.all_movable()
            && max_of(&loads(&next)) > max_of(&now) * (1.0 - KEEP_WITHIN)
        {
            return false;
        }
        self.owner = next;
        true
    }
}

/// Whether the owner should run every lane next period, from the wall time per event
/// measured each way (`LaneBalance::wall_per_event`) and the periods so far: each way is
/// measured first (lanes shared, then the owner alone); then the cheaper, but every
/// `PROBE_PERIODS` periods the other.
fn alone_next(wall_per_event: [Option<f64>; 2], periods: u64) -> bool {
    match wall_per_event {
        [None, _] => false,
        [Some(_), None] => true,
        [Some(shared), Some(alone)] => (alone < shared) != periods.is_multiple_of(PROBE_PERIODS),
    }
}

/// A new assignment of lanes to threads must lower the busiest thread's load by this
/// fraction to be taken.
const KEEP_WITHIN: f64 = 0.05;

/// What an event costs where it runs, against a movable lane's on a helper.
#[derive(Clone, Copy, Debug)]
struct Costs {
    /// A kept lane's (on the owner).
    kept: f64,
    /// A movable lane's on the owner.
    owner_movable: f64,
}

impl Costs {
    /// Every event costs the same wherever it runs (a first guess).
    const EVEN: Costs = Costs {
        kept: 1.0,
        owner_movable: 1.0,
    };

    fn of(self, movable: bool, thread: u32) -> f64 {
        match (movable, thread) {
            (false, _) => self.kept,
            (true, 0) => self.owner_movable,
            (true, _) => 1.0,
        }
    }
}

/// Each thread's load under `owner`: its lanes' events, each weighing its cost there.
fn thread_loads(events: &[u64], movable: &[bool], owner: &[u32], costs: Costs) -> Vec<f64> {
    let mut load = vec![0f64; owner.iter().max().map_or(1, |&t| t as usize + 1)];
    for (i, &e) in events.iter().enumerate() {
        load[owner[i] as usize] += e as f64 * costs.of(movable[i], owner[i]);
    }
    load
}

fn max_of(v: &[f64]) -> f64 {
    v.iter().copied().fold(0.0, f64::max)
}

/// What an event of a kept lane costs against a movable lane's, from a period's events per
/// lane (`events`), who ran them and each side's time running lanes: the helpers ran
/// movable lanes only, which prices those; the owner's time less its movable lanes' events
/// is its kept lanes'. None until both sides have run some of each.
fn owner_cost(
    events: &[u64],
    movable: &[bool],
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
    let owner_movable = sum(&|i| owner[i] == 0 && movable[i]);
    let kept_events = sum(&|i| !movable[i]);
    if helper_events == 0.0 || kept_events == 0.0 || helpers_s <= 0.0 {
        return None;
    }
    let movable_s = helpers_s / helper_events;
    let kept_s = (owner_s - movable_s * owner_movable) / kept_events;
    Some((kept_s / movable_s).clamp(0.5, 20.0))
}

/// What an event costs the owner against a helper, from a period's events per lane, who
/// ran them and each side's time running lanes (summed over helpers). None until both
/// sides have run some.
fn owner_slowness(events: &[u64], owner: &[u32], owner_s: f64, helpers_s: f64) -> Option<f64> {
    let (mut own, mut helpers) = (0u64, 0u64);
    for (&e, &t) in events.iter().zip(owner) {
        if t == 0 {
            own += e;
        } else {
            helpers += e;
        }
    }
    if own == 0 || helpers == 0 || owner_s <= 0.0 || helpers_s <= 0.0 {
        return None;
    }
    Some(((owner_s / own as f64) / (helpers_s / helpers as f64)).clamp(0.5, 4.0))
}

/// Which thread runs each lane: lanes that may not move stay with the owner (0); the
/// movable lanes of each group (`group[i]` names lane i's) go together, heaviest group
/// first, to the thread least loaded once it has them (by `weight`, each weighing its
/// cost on that thread: `costs`).
fn assign_lanes(
    weight: &[u64],
    movable: &[bool],
    group: &[u32],
    threads: usize,
    costs: Costs,
) -> Vec<u32> {
    let threads = threads.max(1);
    let mut load = vec![0f64; threads];
    let mut owner = vec![0u32; weight.len()];
    let mut group_weight = vec![0u64; weight.len()];
    for (i, &w) in weight.iter().enumerate() {
        if movable[i] {
            group_weight[group[i] as usize] += w;
        } else {
            load[0] += w as f64 * costs.kept;
        }
    }
    let mut order: Vec<usize> = (0..weight.len()).filter(|&g| group_weight[g] > 0).collect();
    order.sort_by_key(|&g| (std::cmp::Reverse(group_weight[g]), g));
    let mut thread_of = vec![0u32; weight.len()];
    for g in order {
        let after = |t: usize| load[t] + group_weight[g] as f64 * costs.of(true, t as u32);
        let t = (0..threads)
            .min_by(|&a, &b| after(a).total_cmp(&after(b)))
            .expect("a thread");
        load[t] = after(t);
        thread_of[g] = t as u32;
    }
    for i in (0..weight.len()).filter(|&i| movable[i]) {
        owner[i] = thread_of[group[i] as usize];
    }
    owner
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each of five lanes in a group of its own.
    const ALONE: [u32; 5] = [0, 1, 2, 3, 4];

    #[test]
    fn the_lanes_of_a_group_run_on_one_thread() {
        // Lanes 1 and 3 form a group (60), as do 2 and 4 (60); lane 0 is alone (10).
        let weight = [10, 50, 40, 10, 20];
        let owner = assign_lanes(&weight, &[true; 5], &[0, 1, 2, 1, 2], 2, Costs::EVEN);
        assert_eq!(owner[1], owner[3]);
        assert_eq!(owner[2], owner[4]);
        assert_ne!(owner[1], owner[2], "the two heavy groups are shared out");
    }

    #[test]
    fn an_owner_that_runs_events_slower_is_given_fewer() {
        // The owner's events cost three times a helper's: of four equal lanes it runs one.
        let slow = Costs {
            owner_movable: 3.0,
            ..Costs::EVEN
        };
        let owner = assign_lanes(&[10; 4], &[true; 4], &[0, 1, 2, 3], 2, slow);
        assert_eq!(owner.iter().filter(|&&t| t == 0).count(), 1, "{owner:?}");
        let even = assign_lanes(&[10; 4], &[true; 4], &[0, 1, 2, 3], 2, Costs::EVEN);
        assert_eq!(even.iter().filter(|&&t| t == 0).count(), 2, "{even:?}");
    }

    #[test]
    fn kept_lanes_stay_with_the_owner_and_movable_lanes_balance() {
        let weight = [10, 50, 40, 30, 20];
        let movable = [false, true, true, true, true];
        let owner = assign_lanes(&weight, &movable, &ALONE, 2, Costs::EVEN);
        assert_eq!(owner[0], 0);
        let load = |t| -> u64 { (0..5).filter(|&i| owner[i] == t).map(|i| weight[i]).sum() };
        assert_eq!((load(0), load(1)), (80, 70));
        assert_eq!(
            assign_lanes(&weight, &movable, &ALONE, 1, Costs::EVEN),
            vec![0; 5]
        );
        // Kept events that cost three times a movable one's leave the owner fewer movable
        // events (60) than the 70 above.
        let three_times = Costs {
            kept: 3.0,
            ..Costs::EVEN
        };
        let owner = assign_lanes(&weight, &movable, &ALONE, 2, three_times);
        let load = |t| -> u64 { (0..5).filter(|&i| owner[i] == t).map(|i| weight[i]).sum() };
        assert_eq!((load(0), load(1)), (70, 80));
    }

    #[test]
    fn the_owners_cost_is_its_time_less_its_movable_lanes_priced_by_the_helpers() {
        // Helpers ran 100 movable events in 1 s (10 ms each); the owner ran 50 movable
        // (0.5 s) and 25 kept events in 2.5 s all told: 80 ms each, 8 times a movable one.
        let events = [25, 50, 100];
        let c = owner_cost(&events, &[false, true, true], &[0, 0, 1], 2.5, 1.0).unwrap();
        assert!((c - 8.0).abs() < 1e-9, "{c}");
        // Nothing measured on one side: no figure.
        assert_eq!(
            owner_cost(&events, &[false, true, true], &[0, 0, 0], 3.0, 0.0),
            None
        );
    }

    /// Each way is measured once, then the cheaper runs, and the other now and then.
    #[test]
    fn the_cheaper_way_runs_and_the_other_is_tried_now_and_then() {
        assert!(!alone_next([None, None], 1), "lanes shared first");
        assert!(alone_next([Some(1.0), None], 2), "then the owner alone");
        assert!(alone_next([Some(2.0), Some(1.0)], 3));
        assert!(!alone_next([Some(1.0), Some(2.0)], 3));
        assert!(
            alone_next([Some(1.0), Some(2.0)], PROBE_PERIODS),
            "tried again"
        );
        assert!(!alone_next([Some(2.0), Some(1.0)], 2 * PROBE_PERIODS));
    }

    /// When the owner alone ran a period's events for less than shared lanes did, it runs
    /// every lane; when sharing is cheaper again, the lanes are shared again.
    #[test]
    fn windows_cheaper_on_one_thread_go_back_to_the_owner() {
        let mut b = LaneBalance::new(2, &[1, 10, 10], vec![false, true, true]);
        assert!(b.owners().contains(&1));
        let mut events = vec![0u64; 3];
        let mut period = |b: &mut LaneBalance, wall_s: f64| {
            events.iter_mut().for_each(|e| *e += 100);
            b.after_period(events.clone(), wall_s)
        };
        // Shared: 3 s for 300 events; then the owner alone, as a probe.
        period(&mut b, 3.0);
        assert_eq!(b.owners(), &[0, 0, 0]);
        // Alone: 1 s, cheaper: it stays alone.
        period(&mut b, 1.0);
        assert_eq!(b.own_lanes(), vec![0, 1, 2]);
        // Alone grows dear (smoothed: (1 + 9) / 2 = 5 s against 3): shared again.
        period(&mut b, 9.0);
        assert!(b.owners().contains(&1), "{:?}", b.owners());
    }
}
