//! The threads of a partitioned run (`[engine] threads`).
//!
//! The thread that owns the simulation runs the partitions that hold hosts (their
//! transports and applications are its alone) and any others it is given; the other
//! threads run fabric partitions (switches only), each through its own view of the network
//! (`Network::view`). A window goes: the owner opens it (`start`), each thread puts on
//! wires the packets sent across in the last window towards the lanes it runs (`land`)
//! and runs its lanes to the window's end, the owner waits for the others (`wait`) and
//! takes back what their views counted, dropped and freed, and what they sent across
//! (`absorb`), and only then is the mail handed over, in source partition order as on one
//! thread. Which thread runs which lane changes nothing in the results: lanes do not
//! interact within a window.

use super::SimEvent;
use crate::engine::partitioned::lanes::{LaneSched, SharedLanes};
use crate::engine::PartitionId;
use crate::engine::{EventQueue, TimePs};
use crate::net::{NetView, Network, RemoteSend};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::thread::Thread;

/// What one helper thread keeps between windows.
struct Helper {
    view: NetView,
    /// Its view of the layers above the network, when it may run hosts' partitions.
    upper: Option<upper::UpperView>,
    early_mail: u64,
}

impl Helper {
    /// # Safety
    ///
    /// As `Crew::new`.
    unsafe fn new(net: &Network, upper: Option<&upper::Layers<'_>>) -> Helper {
        Helper {
            view: net.view(),
            upper: upper.map(|l| upper::UpperView::new(l)),
            early_mail: 0,
        }
    }

    /// What the helper's view counted, dropped and freed, and its too-soon mail, go back to
    /// the network and the queue (between windows).
    fn take_back(&mut self, net: &mut Network, ev: &mut EventQueue<SimEvent>) {
        net.absorb(&mut self.view);
        ev.add_early_mail(std::mem::take(&mut self.early_mail));
        if let Some(u) = &self.upper {
            u.check();
        }
    }
}

/// What one thread (the owner, or a helper's view) sent on wires between partitions in
/// the last window. Written by the owner between windows only; read by every thread as
/// the next window opens.
struct Landing(UnsafeCell<Vec<RemoteSend>>);

// SAFETY: see `Landing`: writes and reads never overlap (the window's opening orders them).
unsafe impl Sync for Landing {}

/// The threads of one `run_until` call and what they share.
pub(super) struct Crew {
    /// Per sender (0: the owner, h: helper h), what it sent across in the last window:
    /// the thread that runs each wire's receiving lane puts it on the wire as the next
    /// window opens, so that no thread waits while another does.
    landing: Vec<Landing>,
    /// The partition at the receiving end of each port's wire.
    receivers: Vec<PartitionId>,
    /// Times `landing` was filled; each thread lands its share once per filling.
    landing_gen: AtomicU64,
    /// The filling the owner has landed its share of.
    owner_landed: AtomicU64,
    lanes: SharedLanes<SimEvent>,
    /// Per lane, the thread that runs it (0: the owner).
    owner: Vec<AtomicU32>,
    helpers: Vec<Mutex<Helper>>,
    /// The owner's own views, when every lane may run on any thread: it then runs its
    /// lanes as helpers do (`run_own`), through the lane's own scheduler, not the queue's.
    own: Option<Mutex<Helper>>,
    /// Whether each thread runs its lanes last to first (`engine.lane_order = "reverse"`).
    reversed: bool,
    /// Windows opened so far, and the last time of the newest.
    opened: AtomicU64,
    last_ps: AtomicU64,
    /// Per helper, the newest window it has finished.
    finished: Vec<AtomicU64>,
    /// Per helper, nanoseconds spent running lanes since `take_busy_s` (for balancing).
    busy_ns: Vec<AtomicU64>,
    stop: AtomicBool,
    failed: AtomicBool,
    /// Per helper, its thread, for waking it when it sleeps between windows (`idle`).
    sleepers: Vec<OnceLock<Thread>>,
    /// Helpers check that their events touch only their partitions (tests).
    check: bool,
}

impl Crew {
    /// A crew of `threads` (the owner included) over `ev`'s lanes and `net`, lane i run by
    /// thread `owner[i]`.
    ///
    /// # Safety
    ///
    /// `net` and `ev` outlive the crew, and while it lives they are touched only as
    /// `Network::view` and `SharedLanes::open` allow: the owner runs only lanes it owns
    /// (`EventQueue::set_own_lanes`) and touches shared state only between windows. With
    /// `upper` (helpers may run hosts' partitions), so are the layers above the network,
    /// as `upper::UpperView::new` allows.
    pub(super) unsafe fn new(
        net: &Network,
        ev: &mut EventQueue<SimEvent>,
        threads: usize,
        owner: &[u32],
        upper: Option<upper::Layers<'_>>,
    ) -> Crew {
        Crew {
            landing: (0..threads)
                .map(|_| Landing(UnsafeCell::new(Vec::new())))
                .collect(),
            receivers: net.wire_receivers(),
            landing_gen: AtomicU64::new(0),
            owner_landed: AtomicU64::new(0),
            lanes: ev.shared_lanes().expect("a partitioned queue"),
            owner: owner.iter().map(|&t| AtomicU32::new(t)).collect(),
            helpers: (1..threads)
                .map(|_| Mutex::new(Helper::new(net, upper.as_ref())))
                .collect(),
            own: upper
                .as_ref()
                .map(|u| Mutex::new(Helper::new(net, Some(u)))),
            reversed: ev.lane_order_reversed(),
            opened: AtomicU64::new(0),
            last_ps: AtomicU64::new(0),
            finished: (1..threads).map(|_| AtomicU64::new(0)).collect(),
            busy_ns: (1..threads).map(|_| AtomicU64::new(0)).collect(),
            stop: AtomicBool::new(false),
            failed: AtomicBool::new(false),
            sleepers: (1..threads).map(|_| OnceLock::new()).collect(),
            check: net.check_partitions(),
        }
    }

    /// Gives lane i to thread `owner[i]` (between windows only).
    pub(super) fn assign(&self, owner: &[u32]) {
        for (o, &t) in self.owner.iter().zip(owner) {
            o.store(t, Ordering::Relaxed);
        }
    }

    /// Opens a window for the helpers: they run their lanes up to `last_ps`. Nothing to do
    /// when the owner runs every lane.
    pub(super) fn start(&self, last_ps: TimePs) {
        if self.owner.iter().all(|o| o.load(Ordering::Relaxed) == 0) {
            return;
        }
        self.last_ps.store(last_ps, Ordering::Relaxed);
        self.opened.fetch_add(1, Ordering::Release);
        self.wake();
    }

    /// Wakes the helpers that sleep for want of windows (a no-op for those awake).
    fn wake(&self) {
        for t in self.sleepers.iter().filter_map(OnceLock::get) {
            t.unpark();
        }
    }

    /// Waits until every helper has finished the newest window it was given.
    pub(super) fn wait(&self) {
        let window = self.opened.load(Ordering::Relaxed);
        for f in &self.finished {
            spin_until(|| f.load(Ordering::Acquire) >= window, &self.failed, false);
        }
    }

    /// Takes back what the helpers' views did since the last call (between windows), and
    /// what every thread sent across, for the next window's opening to land.
    pub(super) fn absorb(&self, net: &mut Network, ev: &mut EventQueue<SimEvent>) {
        let landed = self.landing_gen.load(Ordering::Relaxed);
        debug_assert_eq!(self.owner_landed.load(Ordering::Relaxed), landed);
        // SAFETY: between windows: every thread has finished landing the last filling.
        let sent = |t: usize| unsafe { &mut *self.landing[t].0.get() };
        sent(0).clear();
        net.swap_remote_out(sent(0));
        if let Some(own) = &self.own {
            let mut h = own.lock().expect("the owner's views");
            // What global events sent went on its wires at once (`land_global_sends`):
            // the owner's lanes, run through its views, are its only sender here.
            debug_assert!(sent(0).is_empty());
            h.view.net().swap_remote_out(sent(0));
            h.take_back(net, ev);
        }
        for (i, h) in self.helpers.iter().enumerate() {
            let mut h = h.lock().expect("a helper failed");
            sent(i + 1).clear();
            h.view.net().swap_remote_out(sent(i + 1));
            h.take_back(net, ev);
        }
        self.landing_gen.store(landed + 1, Ordering::Relaxed);
    }

    /// The owner's share of the landing, as a window opens (after `start`).
    pub(super) fn land_owner(&self, net: &mut Network) {
        let gen = self.landing_gen.load(Ordering::Relaxed);
        if self.owner_landed.swap(gen, Ordering::Relaxed) < gen {
            self.land(net, 0);
        }
    }

    /// Between windows (at a global event): puts on wires everything sent across in the
    /// last window that no thread has landed yet, leaving nothing for the next opening.
    pub(super) fn land_all_now(&self, net: &mut Network) {
        // Landed already when a window opened since the last filling (`absorb`).
        let pending =
            self.owner_landed.load(Ordering::Relaxed) < self.landing_gen.load(Ordering::Relaxed);
        for l in &self.landing {
            // SAFETY: between windows, as at `absorb`: no other thread reads `landing`.
            let sent = unsafe { &mut *l.0.get() };
            if pending {
                net.land(sent, &self.receivers, |_| true);
            }
            sent.clear();
        }
    }

    /// Puts on wires what was sent across towards the lanes thread `me` runs.
    fn land(&self, net: &mut Network, me: u32) {
        for l in &self.landing {
            // SAFETY: the owner writes `landing` only between windows (`absorb`, `finish`).
            let sent = unsafe { &*l.0.get() };
            net.land(sent, &self.receivers, |p| {
                self.owner[usize::from(p)].load(Ordering::Relaxed) == me
            });
        }
    }

    /// At the end of the crew's call: lands what no window opened for, then takes back
    /// what the helpers' views did.
    pub(super) fn finish(&self, net: &mut Network, ev: &mut EventQueue<SimEvent>) {
        let gen = self.landing_gen.load(Ordering::Relaxed);
        if self.owner_landed.load(Ordering::Relaxed) < gen {
            for l in &self.landing {
                // SAFETY: the helpers have stopped.
                net.land(unsafe { &*l.0.get() }, &self.receivers, |_| true);
            }
        }
        for h in self.helpers.iter().chain(&self.own) {
            h.lock().expect("a helper failed").take_back(net, ev);
        }
    }

    /// The owner runs its lanes up to `last_ps` through its own views, as a helper runs
    /// its (`work`), after landing its share (`land_owner`).
    pub(super) fn run_own(&self, last_ps: TimePs) {
        if let Some(own) = &self.own {
            self.run_lanes(0, &mut own.lock().expect("the owner's views"), last_ps);
        }
    }

    /// Runs the lanes thread `me` is given up to `last_ps` through `h`'s views (last to
    /// first with `engine.lane_order = "reverse"`).
    fn run_lanes(&self, me: u32, h: &mut Helper, last_ps: TimePs) {
        let n = self.owner.len();
        for k in 0..n {
            let lane = if self.reversed { n - 1 - k } else { k };
            if self.owner[lane].load(Ordering::Relaxed) != me {
                continue;
            }
            // SAFETY: lane `lane` is this thread's alone in this window (`new`); the owner's
            // queue runs none that a thread runs through views (`set_own_lanes`).
            let mut s = unsafe { self.lanes.open(lane, last_ps) };
            let Helper { view, upper, .. } = &mut *h;
            run_lane(view.net(), upper.as_mut(), &mut s, self.check);
            h.early_mail += s.early_mail;
        }
    }

    /// Helper `me` (1..threads): runs its lanes in each window until told to stop.
    pub(super) fn work(&self, me: u32) {
        let _flag = FailFlag(&self.failed);
        let _ = self.sleepers[me as usize - 1].set(std::thread::current());
        let mut done = 0;
        let mut landed = 0;
        loop {
            spin_until(
                || self.opened.load(Ordering::Acquire) > done || self.stop.load(Ordering::Acquire),
                &self.failed,
                true,
            );
            let window = self.opened.load(Ordering::Acquire);
            if window == done {
                return; // stopped
            }
            let last_ps = self.last_ps.load(Ordering::Relaxed);
            let began = std::time::Instant::now();
            let mut h = self.helpers[me as usize - 1].lock().expect("one user");
            let gen = self.landing_gen.load(Ordering::Relaxed);
            if landed < gen {
                self.land(h.view.net(), me);
                landed = gen;
            }
            self.run_lanes(me, &mut h, last_ps);
            drop(h);
            let busy = began.elapsed().as_nanos() as u64;
            self.busy_ns[me as usize - 1].fetch_add(busy, Ordering::Relaxed);
            done = window;
            self.finished[me as usize - 1].store(done, Ordering::Release);
        }
    }

    /// The helpers' time running lanes since the last call, in seconds, summed over the
    /// helpers (between windows).
    pub(super) fn take_busy_s(&self) -> f64 {
        let ns: u64 = self
            .busy_ns
            .iter()
            .map(|b| b.swap(0, Ordering::Relaxed))
            .sum();
        ns as f64 / 1e9
    }

    /// Tells the helpers to return once they have finished what they were given.
    pub(super) fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        self.wake();
    }
}

/// Stops the crew when the owner's work ends, even by a panic (else the scope would wait
/// for helpers that never return).
pub(super) struct StopOnDrop<'a>(pub &'a Crew);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.failed.store(true, Ordering::Release);
        }
        self.0.stop();
    }
}

/// Marks the crew failed if a helper panics, so the owner stops waiting for it.
struct FailFlag<'a>(&'a AtomicBool);

impl Drop for FailFlag<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Release);
        }
    }
}

/// Spins, then yields, until `ready`; panics if another thread of the crew failed. With
/// `may_sleep` (a helper waiting for a window, which may not come for long when the owner
/// runs every lane), it then sleeps until woken (`Crew::wake`) or for a millisecond at
/// most: yielding in a loop cost a 1,984-host memcached run on 2 threads as much system
/// time as the run's own work.
fn spin_until(mut ready: impl FnMut() -> bool, failed: &AtomicBool, may_sleep: bool) {
    let mut spins = 0u32;
    while !ready() {
        assert!(
            !failed.load(Ordering::Acquire),
            "another thread of the simulation failed"
        );
        spins = spins.saturating_add(1);
        if spins < 1 << 10 {
            std::hint::spin_loop();
        } else if !may_sleep || spins < 1 << 12 {
            std::thread::yield_now();
        } else {
            std::thread::park_timeout(std::time::Duration::from_millis(1));
        }
    }
}

/// Runs a partition's lane to the window's end: a fabric partition's (switches' events
/// only), or, with `upper`, a hosts' partition's.
fn run_lane(
    net: &mut Network,
    mut upper: Option<&mut upper::UpperView>,
    s: &mut LaneSched<'_, SimEvent>,
    check: bool,
) {
    if check {
        net.enter_partition(Some(s.partition()));
    }
    net.pool_mut().enter(usize::from(s.partition()));
    while let Some(e) = s.pop() {
        match (s.peek(), upper.as_deref()) {
            (Some(SimEvent::Net(next)), _) => net.prefetch_event(next),
            (Some(next), Some(upper)) => upper.prefetch(net, next),
            _ => {}
        }
        match (e.kind, upper.as_deref_mut()) {
            (SimEvent::Net(ne), upper) => {
                if let Some(up) = net.handle(s, ne) {
                    let upper = upper.unwrap_or_else(|| panic!("a fabric lane handed {up:?} up"));
                    upper.upcall(net, s, up);
                }
            }
            (kind, Some(upper)) => upper.event(net, s, kind),
            (kind, None) => panic!("a fabric partition's lane held {kind:?}"),
        }
        if let Some(upper) = upper.as_deref_mut().filter(|_| net.has_nic_departures()) {
            upper.nic_departures(net, s);
        }
    }
}

mod upper;
pub(super) use upper::Layers;
