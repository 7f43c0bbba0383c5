//! The event queue a run uses: one ordered lane, or one lane per partition advanced in
//! windows of the lookahead (a partitioned run).
//!
//! In a partitioned run every event belongs to a partition (its lane) or is global. Ties in
//! time break by each lane's own insertion order, so a partition's order depends only on
//! its own events and on what reached it from others, never on how the partitions
//! interleave. Time advances in windows `[start, start + lookahead)`, where the lookahead is
//! the least delay of anything one partition schedules for another: within a window no
//! partition can affect another, so each lane runs its window on its own (in any order, or
//! on its own thread), and what partitions schedule for each other is held in per-source
//! outboxes and handed over when the window closes, source by source. Global events (an
//! application that spans partitions, the metrics sampler) run alone at barriers, with
//! every lane stopped at their time; what they schedule is routed by the caller.
//!
//! The order of one window's lanes is a parameter (`set_lane_order_reversed`) so that
//! tests can run them backwards and show that nothing depends on it: the property threads
//! need. The calling thread runs the lanes in its `order`; with `meet_at_windows`, it stops
//! where windows open and close so that the caller can run other lanes on other threads
//! (`lanes::SharedLanes`) and put what crossed between partitions in place.

use super::queue::Lane;
use super::{Event, PartitionId, TimePs};

pub mod balance;
pub mod lanes;

/// Where an event scheduled while a partition's event runs goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// The partition that scheduled it.
    Own,
    /// The global lane (it acts across partitions).
    Global,
}

/// What is running: a partition's event, a global event, or nothing (set-up, between
/// calls).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ctx {
    Outside,
    Lane(usize),
    Global,
}

/// An event one partition scheduled for another (or for the global lane: `None`).
pub(crate) type Mail<E> = (Option<PartitionId>, TimePs, E);

/// A point where the caller acts between windows (`meet_at_windows`): the lanes it runs on
/// other threads start, or every lane has reached the window's end and the mail is about
/// to be handed over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Meeting {
    /// A window `[.., last_ps]` opens: the lanes run elsewhere may start.
    Open { last_ps: TimePs },
    /// The window's lanes are done (this thread's; the caller waits for the others).
    Close,
}

struct Parts<E> {
    lanes: Vec<Lane<E>>,
    global: Lane<E>,
    /// Per source lane, what it scheduled for others in this window, in its own order.
    outbox: Vec<Vec<Mail<E>>>,
    /// Per lane, whether this thread runs it (the rest run on other threads).
    own: Vec<bool>,
    /// Per lane, a time no later than its next event (`TimePs::MAX`: none; 0: not known),
    /// so that a window and the search for the next one pass over the lanes with nothing
    /// due without looking into them: with many partitions and few events per window
    /// (a DIABLO array's 129 lanes at 1 Gbit/s) those looks were most of the queue's work.
    /// Lowered whenever this thread puts an event into a lane; made exact when a lane is
    /// looked into; 0 again for lanes another thread ran, after each window.
    next_ps: Vec<TimePs>,
    /// Per lane run elsewhere, the mail handed over for it at the last window's close, in
    /// the order it would have entered the lane: the thread that runs the lane puts it in
    /// when it opens the lane (`lanes::SharedLanes::open`), so that handing over the mail
    /// is shared between threads.
    inbox: Vec<Vec<(TimePs, E)>>,
    /// The earliest time in `inbox`, until the lanes' threads take it.
    inbox_first_ps: Option<TimePs>,
    /// Scheduled outside any partition (set-up, global events): the caller routes them.
    unrouted: Vec<(TimePs, E)>,
    classify: fn(&E) -> Route,
    lookahead_ps: TimePs,
    /// The open window's last time (inclusive); `None` when no window is open.
    window_last_ps: Option<TimePs>,
    /// The time of the barrier whose global events are running.
    barrier_ps: TimePs,
    /// The lanes this thread runs, in the order they run within a window.
    order: Vec<usize>,
    /// Whether `order` runs backwards (tests).
    reversed: bool,
    pos: usize,
    ctx: Ctx,
    /// Time outside events set by `advance_to` (`now` also counts how far lanes ran).
    now_ps: TimePs,
    /// Events a partition scheduled for another (or a global one) sooner than the window's
    /// end: the lookahead did not hold, and the partitioned order may not be exact.
    early_mail: u64,
    /// Whether `pop_until` stops for the caller where windows open and close.
    meet_at_open: bool,
    meet_at_close: bool,
    /// The meeting `pop_until` stopped for, until the caller takes it.
    meeting: Option<Meeting>,
    /// How far other threads have been told to run the open window, and whether its
    /// closing meeting has been held.
    opened_to: Option<TimePs>,
    closed: bool,
}

/// The run's event queue (`Driver` and `Scheduler` for simulated time).
pub struct EventQueue<E> {
    lane: Lane<E>,
    parts: Option<Box<Parts<E>>>,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

/// Width of a partition lane's fine buckets: 2^17 ps, about 131 ns, 8 times a whole run's.
/// A lane holds a partition's share of the events, so its buckets hold about as many as
/// a whole run's narrower ones, and its 256 bucket headers (against 2,048) stay in cache
/// beside the other lanes'.
const LANE_FINE_SHIFT: u32 = 17;
/// Calendar buckets of a partition lane: 8,192 x 33.5 us, about 275 ms ahead, past
/// Linux's 200 ms minimum retransmission timeout (later events wait in its overflow heap:
/// at 137 ms every armed timer of a Linux host went there, 3.3% of a memcached run). A
/// whole run's 32,768 bucket headers are 768 KiB, which 65 lanes of a k=32 fat tree
/// would each hold.
const LANE_RING_BUCKETS: usize = 8192;

impl<E: Copy> EventQueue<E> {
    /// One lane: ties break by global insertion order.
    pub fn new() -> Self {
        EventQueue {
            lane: Lane::new(),
            parts: None,
        }
    }

    /// Switches to `n` partition lanes advanced in windows of `lookahead_ps` (> 0). Events
    /// scheduled so far, and from now on outside partitions, wait in `take_unrouted` for the
    /// caller to route; `classify` tells which events a partition schedules are global.
    pub fn partition(&mut self, n: usize, lookahead_ps: TimePs, classify: fn(&E) -> Route) {
        assert!(
            n > 0 && lookahead_ps > 0,
            "partitions need a positive lookahead"
        );
        let mut unrouted = Vec::new();
        while let Some(e) = self.lane.pop_until(TimePs::MAX) {
            unrouted.push((e.time_ps, e.kind));
        }
        self.parts = Some(Box::new(Parts {
            lanes: (0..n)
                .map(|_| Lane::with_sizes(LANE_FINE_SHIFT, LANE_RING_BUCKETS))
                .collect(),
            global: Lane::new(),
            outbox: (0..n).map(|_| Vec::new()).collect(),
            own: vec![true; n],
            next_ps: vec![0; n],
            inbox: (0..n).map(|_| Vec::new()).collect(),
            inbox_first_ps: None,
            unrouted,
            classify,
            lookahead_ps,
            window_last_ps: None,
            barrier_ps: 0,
            order: (0..n).collect(),
            reversed: false,
            pos: 0,
            ctx: Ctx::Outside,
            now_ps: 0,
            early_mail: 0,
            meet_at_open: false,
            meet_at_close: false,
            meeting: None,
            opened_to: None,
            closed: false,
        }));
    }

    pub fn is_partitioned(&self) -> bool {
        self.parts.is_some()
    }

    /// Runs the lanes of a window in reverse order (tests: results must not change).
    pub fn set_lane_order_reversed(&mut self, reversed: bool) {
        if let Some(p) = self.parts.as_mut() {
            p.reversed = reversed;
            p.order = (0..p.lanes.len()).collect();
            if reversed {
                p.order.reverse();
            }
        }
    }

    /// Whether the lanes of a window run last to first (`set_lane_order_reversed`).
    pub fn lane_order_reversed(&self) -> bool {
        self.parts.as_ref().is_some_and(|p| p.reversed)
    }

    /// Makes `pop_until` return None where windows close (and, with `open`, where they
    /// open), with the reason in `take_meeting`: the caller then acts between windows
    /// (puts what crossed between partitions in place, starts and joins other threads).
    pub fn meet_at_windows(&mut self, open: bool) {
        if let Some(p) = self.parts.as_mut() {
            p.meet_at_open = open;
            p.meet_at_close = true;
        }
    }

    /// Makes `pop_until` return None where windows close (`Meeting::Close`), as
    /// `meet_at_windows` does, whether or not other threads run lanes.
    pub fn meet_at_close(&mut self) {
        if let Some(p) = self.parts.as_mut() {
            p.meet_at_close = true;
        }
    }

    /// Why `pop_until` last returned None, if for a meeting (taken once).
    pub fn take_meeting(&mut self) -> Option<Meeting> {
        self.parts.as_mut()?.meeting.take()
    }

    /// The lanes this thread runs in each window (the rest run elsewhere, `shared_lanes`),
    /// in order (reversed when `set_lane_order_reversed` asked for it).
    pub fn set_own_lanes(&mut self, lanes: &[usize]) {
        if let Some(p) = self.parts.as_mut() {
            p.flush_inboxes();
            p.own.fill(false);
            p.next_ps.fill(0);
            for &i in lanes {
                p.own[i] = true;
            }
            p.order = lanes.to_vec();
            if p.reversed {
                p.order.reverse();
            }
        }
    }

    /// Counts events other threads' lanes scheduled for another partition too soon.
    pub fn add_early_mail(&mut self, n: u64) {
        if let Some(p) = self.parts.as_mut() {
            p.early_mail += n;
        }
    }

    /// The lanes and outboxes, for other threads to run some of them (`SharedLanes`).
    pub fn shared_lanes(&mut self) -> Option<lanes::SharedLanes<E>> {
        let p = self.parts.as_mut()?;
        Some(lanes::SharedLanes::new(
            &mut p.lanes,
            &mut p.outbox,
            &mut p.inbox,
            p.classify,
        ))
    }

    /// Events processed so far by each partition's lane.
    pub fn lane_events(&self) -> Vec<u64> {
        self.parts.as_ref().map_or(Vec::new(), |p| {
            p.lanes.iter().map(Lane::events_processed).collect()
        })
    }

    /// Events scheduled outside partitions since the last call, in order; hand each back
    /// with `route` (then return the vector with `give_back_unrouted` to reuse it).
    pub fn take_unrouted(&mut self) -> Vec<(TimePs, E)> {
        match self.parts.as_mut() {
            Some(p) => std::mem::take(&mut p.unrouted),
            None => Vec::new(),
        }
    }

    pub fn give_back_unrouted(&mut self, mut v: Vec<(TimePs, E)>) {
        if let Some(p) = self.parts.as_mut() {
            if p.unrouted.is_empty() {
                v.clear();
                p.unrouted = v;
            }
        }
    }

    /// Queues `kind` in partition `partition`'s lane, or the global lane (None).
    pub fn route(&mut self, partition: Option<PartitionId>, time_ps: TimePs, kind: E) {
        match self.parts.as_mut() {
            Some(p) => p.enqueue(partition, time_ps, kind),
            None => self.lane.schedule(time_ps, kind),
        }
    }

    /// Whether the event being handled is a global one (what it schedules is unrouted).
    #[inline(always)]
    pub fn in_global(&self) -> bool {
        self.parts.as_ref().is_some_and(|p| p.ctx == Ctx::Global)
    }

    /// The partition whose event is being handled, in a partitioned run.
    pub fn current_partition(&self) -> Option<PartitionId> {
        match self.parts.as_ref()?.ctx {
            Ctx::Lane(i) => Some(i as PartitionId),
            _ => None,
        }
    }

    /// In a partitioned run, the arena of packets the event being handled allocates from
    /// (`packet::PacketPool::set_arenas`): its partition's, or for any other (a global
    /// event, the run's start) the last, the global events' own.
    #[inline(always)]
    pub fn arena(&self) -> Option<usize> {
        let p = self.parts.as_ref()?;
        Some(match p.ctx {
            Ctx::Lane(i) => i,
            _ => p.lanes.len(),
        })
    }

    /// The last time of the window being run, while a partition's event runs (None in an
    /// ordinary run, and during global events).
    pub fn window_last_ps(&self) -> Option<TimePs> {
        let p = self.parts.as_ref()?;
        match p.ctx {
            Ctx::Lane(_) => p.window_last_ps,
            _ => None,
        }
    }

    /// Cross-partition events scheduled sooner than their window's end (must stay 0).
    pub fn early_mail(&self) -> u64 {
        self.parts.as_ref().map_or(0, |p| p.early_mail)
    }

    #[inline]
    pub fn now(&self) -> TimePs {
        match self.parts.as_deref() {
            None => self.lane.now(),
            Some(p) => p.now(),
        }
    }

    #[inline]
    pub fn schedule(&mut self, time_ps: TimePs, kind: E) {
        match self.parts.as_deref_mut() {
            None => self.lane.schedule(time_ps, kind),
            Some(p) => p.schedule(time_ps, kind),
        }
    }

    /// Schedules `kind` for partition `partition` (another partition's state: a packet
    /// reaching the far end of a link between partitions). In an ordinary run the same as
    /// `schedule`.
    #[inline]
    pub fn schedule_in(&mut self, partition: PartitionId, time_ps: TimePs, kind: E) {
        match self.parts.as_deref_mut() {
            None => self.lane.schedule(time_ps, kind),
            Some(p) => p.send(Some(partition), time_ps, kind),
        }
    }

    /// Pops the next event due at or before `until_ps`.
    #[inline]
    pub fn pop_until(&mut self, until_ps: TimePs) -> Option<Event<E>> {
        match self.parts.as_deref_mut() {
            None => self.lane.pop_until(until_ps),
            Some(p) => p.pop_until(until_ps),
        }
    }

    /// Moves time forward to `t` when no event is due before it (end of a run slice).
    pub fn advance_to(&mut self, t: TimePs) {
        match self.parts.as_deref_mut() {
            None => self.lane.advance_to(t),
            Some(p) => {
                p.ctx = Ctx::Outside;
                p.now_ps = p.now_ps.max(t);
                for l in p.lanes.iter_mut() {
                    l.advance_to(t);
                }
                p.global.advance_to(t);
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// When the next event is due, if any is queued (an ordinary run's; a partitioned run
    /// gives the earliest of its lanes').
    pub fn next_time_ps(&mut self) -> Option<TimePs> {
        match self.parts.as_deref_mut() {
            None => self.lane.next_time_ps(),
            Some(p) => p.next_times().map(|(lane, global)| {
                lane.unwrap_or(TimePs::MAX)
                    .min(global.unwrap_or(TimePs::MAX))
            }),
        }
    }

    pub fn len(&self) -> usize {
        match self.parts.as_deref() {
            None => self.lane.len(),
            Some(p) => {
                p.lanes.iter().map(Lane::len).sum::<usize>()
                    + p.global.len()
                    + p.outbox.iter().map(Vec::len).sum::<usize>()
                    + p.inbox.iter().map(Vec::len).sum::<usize>()
                    + p.unrouted.len()
            }
        }
    }

    pub fn events_processed(&self) -> u64 {
        match self.parts.as_deref() {
            None => self.lane.events_processed(),
            Some(p) => {
                p.lanes.iter().map(Lane::events_processed).sum::<u64>()
                    + p.global.events_processed()
            }
        }
    }

    /// Attempts to schedule into the past (must stay 0).
    pub fn past_schedules(&self) -> u64 {
        match self.parts.as_deref() {
            None => self.lane.past_schedules,
            Some(p) => {
                p.lanes.iter().map(|l| l.past_schedules).sum::<u64>() + p.global.past_schedules
            }
        }
    }

    /// What the next event is, without taking it (a prefetch hint).
    #[inline]
    pub fn peek_kind(&self) -> Option<E> {
        match self.parts.as_deref() {
            None => self.lane.peek_kind(),
            Some(p) => p.peek(false),
        }
    }

    /// The event after the next one, as far as the queue shows it (a prefetch hint).
    #[inline]
    pub fn peek_second_kind(&self) -> Option<E> {
        match self.parts.as_deref() {
            None => self.lane.peek_second_kind(),
            Some(p) => p.peek(true),
        }
    }
}

/// Into partition `to`'s lane, or the global lane (None).
fn enqueue<E: Copy>(
    lanes: &mut [Lane<E>],
    next_ps: &mut [TimePs],
    global: &mut Lane<E>,
    to: Option<PartitionId>,
    time_ps: TimePs,
    kind: E,
) {
    match to {
        Some(q) => {
            lanes[q as usize].schedule(time_ps, kind);
            next_ps[q as usize] = next_ps[q as usize].min(time_ps);
        }
        None => global.schedule(time_ps, kind),
    }
}

// The partitioned paths are kept out of line so that an ordinary run's calls stay small
// enough to inline (measured: inlined, they cost an ordinary k=8 run 7%).
impl<E: Copy> Parts<E> {
    #[inline(never)]
    fn now(&self) -> TimePs {
        match self.ctx {
            Ctx::Lane(i) => self.lanes[i].now(),
            Ctx::Global => self.global.now(),
            // The latest any lane reached: read only when asked, after other threads
            // have finished their part of a window (reading their lanes while they run
            // would race).
            Ctx::Outside => self
                .lanes
                .iter()
                .map(Lane::now)
                .fold(self.now_ps.max(self.global.now()), TimePs::max),
        }
    }

    #[inline(never)]
    fn schedule(&mut self, time_ps: TimePs, kind: E) {
        match self.ctx {
            Ctx::Lane(i) => match (self.classify)(&kind) {
                Route::Own => {
                    self.lanes[i].schedule(time_ps, kind);
                    self.next_ps[i] = self.next_ps[i].min(time_ps);
                }
                Route::Global => self.send(None, time_ps, kind),
            },
            Ctx::Global | Ctx::Outside => self.unrouted.push((time_ps, kind)),
        }
    }

    /// From a partition's event: into the outbox (or its own lane). From a global event or
    /// outside: straight into the lane, every partition being stopped.
    #[inline(never)]
    fn send(&mut self, to: Option<PartitionId>, time_ps: TimePs, kind: E) {
        match self.ctx {
            Ctx::Lane(i) if to != Some(i as PartitionId) => {
                if self.window_last_ps.is_some_and(|last| time_ps <= last) {
                    self.early_mail += 1;
                }
                self.outbox[i].push((to, time_ps, kind));
            }
            _ => self.enqueue(to, time_ps, kind),
        }
    }

    fn enqueue(&mut self, to: Option<PartitionId>, time_ps: TimePs, kind: E) {
        enqueue(
            &mut self.lanes,
            &mut self.next_ps,
            &mut self.global,
            to,
            time_ps,
            kind,
        );
    }

    #[inline(never)]
    fn peek(&self, second: bool) -> Option<E> {
        match self.ctx {
            Ctx::Lane(i) if second => self.lanes[i].peek_second_kind(),
            Ctx::Lane(i) => self.lanes[i].peek_kind(),
            _ => None,
        }
    }

    /// Hands every outbox over, source lane by source lane: into this thread's lanes and
    /// the global lane, and into the inboxes of lanes other threads run (each lane gets its
    /// mail in the same order either way).
    fn deliver(&mut self) {
        let Parts {
            outbox,
            lanes,
            global,
            own,
            inbox,
            inbox_first_ps,
            next_ps,
            ..
        } = self;
        // Lanes other threads ran: their next events are theirs to know.
        for (np, &mine) in next_ps.iter_mut().zip(own.iter()) {
            if !mine {
                *np = 0;
            }
        }
        for mail in outbox.iter_mut() {
            for (to, t, kind) in mail.drain(..) {
                match to {
                    Some(q) if !own[q as usize] => {
                        inbox[q as usize].push((t, kind));
                        *inbox_first_ps = Some(inbox_first_ps.map_or(t, |f| f.min(t)));
                    }
                    _ => enqueue(lanes, next_ps, global, to, t, kind),
                }
            }
        }
    }

    /// Puts the inboxes' mail into its lanes here (before anything else may enter them: a
    /// global event's, or a change of which thread runs which lane).
    fn flush_inboxes(&mut self) {
        if self.inbox_first_ps.take().is_none() {
            return;
        }
        let lanes = self.lanes.iter_mut().zip(self.next_ps.iter_mut());
        for ((lane, np), mail) in lanes.zip(self.inbox.iter_mut()) {
            for (t, kind) in mail.drain(..) {
                lane.schedule(t, kind);
                *np = (*np).min(t);
            }
        }
    }

    /// The earliest time in any partition lane (or inbox) and in the global lane; None
    /// when all are empty.
    fn next_times(&mut self) -> Option<(Option<TimePs>, Option<TimePs>)> {
        let mut best = self.inbox_first_ps.unwrap_or(TimePs::MAX);
        for (lane, np) in self.lanes.iter_mut().zip(self.next_ps.iter_mut()) {
            // A lane whose bound is no earlier than the best so far cannot be earlier.
            if *np < best {
                *np = lane.next_time_ps().unwrap_or(TimePs::MAX);
                best = best.min(*np);
            }
        }
        let lane = (best != TimePs::MAX).then_some(best);
        let global = self.global.next_time_ps();
        (lane.is_some() || global.is_some()).then_some((lane, global))
    }

    #[inline(never)]
    fn pop_until(&mut self, until_ps: TimePs) -> Option<Event<E>> {
        let e = self.pop_next(until_ps);
        if e.is_none() {
            // Nothing more is due (or the caller is to act between windows): time outside
            // events is the latest any lane reached (`now`).
            self.ctx = Ctx::Outside;
        }
        e
    }

    fn pop_next(&mut self, until_ps: TimePs) -> Option<Event<E>> {
        loop {
            if self.ctx == Ctx::Global || self.barrier_open() {
                if let Some(e) = self.global.pop_until(self.barrier_ps.min(until_ps)) {
                    self.ctx = Ctx::Global;
                    return Some(e);
                }
                self.ctx = Ctx::Outside;
                if self.barrier_open() {
                    return None; // the barrier lies beyond `until_ps`
                }
            }
            if let Some(last) = self.window_last_ps {
                // Other threads run to the caller's horizon too: a window may be run in
                // pieces (slices), each opened again.
                let bound = last.min(until_ps);
                if self.meet_at_open && self.opened_to.is_none_or(|t| t < bound) {
                    self.opened_to = Some(bound);
                    // The lanes' threads take their inboxes as they open them.
                    self.inbox_first_ps = None;
                    self.meeting = Some(Meeting::Open { last_ps: bound });
                    return None;
                }
                while self.pos < self.order.len() {
                    let i = self.order[self.pos];
                    if self.next_ps[i] <= bound {
                        if let Some(e) = self.lanes[i].pop_until(bound) {
                            self.ctx = Ctx::Lane(i);
                            return Some(e);
                        }
                        self.next_ps[i] = self.lanes[i].next_time_ps().unwrap_or(TimePs::MAX);
                    }
                    self.pos += 1;
                }
                self.ctx = Ctx::Outside;
                self.pos = 0;
                if until_ps < last {
                    // Cut by the caller's horizon: the window stays open, and the next call
                    // runs every lane on from there (lanes do not interact within it).
                    return None;
                }
                if self.meet_at_close && !self.closed {
                    self.closed = true;
                    self.meeting = Some(Meeting::Close);
                    return None;
                }
                (self.opened_to, self.closed) = (None, false);
                self.window_last_ps = None;
                self.deliver();
            }
            let (lane, global) = self.next_times()?;
            if let Some(g) = global.filter(|&g| lane.is_none_or(|l| g <= l)) {
                if g > until_ps {
                    return None;
                }
                // A barrier: every lane has run up to `g`; global events run alone, after
                // the mail that reached the lanes before them.
                self.flush_inboxes();
                self.barrier_ps = g;
                for l in self.lanes.iter_mut() {
                    l.advance_to(g);
                }
                self.global.advance_to(g);
                continue;
            }
            let start = lane.expect("a lane has events");
            if start > until_ps {
                return None;
            }
            // Up to the lookahead, and before the next global event (which comes later).
            let last = start.saturating_add(self.lookahead_ps - 1);
            self.window_last_ps = Some(global.map_or(last, |g| last.min(g - 1)));
        }
    }

    /// Whether global events due at the barrier's time are still waiting.
    fn barrier_open(&mut self) -> bool {
        self.window_last_ps.is_none() && self.global.next_time_ps() == Some(self.barrier_ps)
    }
}

#[cfg(test)]
mod tests;
