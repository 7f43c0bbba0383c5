//! Lanes run by other threads: while a window is open, each lane a thread has been given
//! is its alone, and what it schedules goes into its own lane or its own outbox, exactly
//! as on the thread that owns the queue (`Parts::schedule` and `send`).

use super::{Mail, Route};
use crate::engine::queue::{Event, Lane};
use crate::engine::sched::{Clock, Scheduler};
use crate::engine::{PartitionId, TimePs};

/// The lanes and outboxes of a partitioned queue, for threads to run some of them.
pub struct SharedLanes<E> {
    lanes: *mut Lane<E>,
    outboxes: *mut Vec<Mail<E>>,
    inboxes: *mut Vec<(TimePs, E)>,
    n: usize,
    classify: fn(&E) -> Route,
}

// SAFETY: a `SharedLanes` only hands out lanes through `open`, whose contract keeps each
// lane on one thread while a window is open.
unsafe impl<E: Send> Send for SharedLanes<E> {}
unsafe impl<E: Send> Sync for SharedLanes<E> {}

impl<E: Copy> SharedLanes<E> {
    pub(super) fn new(
        lanes: &mut [Lane<E>],
        outboxes: &mut [Vec<Mail<E>>],
        inboxes: &mut [Vec<(TimePs, E)>],
        classify: fn(&E) -> Route,
    ) -> Self {
        assert_eq!(lanes.len(), outboxes.len());
        assert_eq!(lanes.len(), inboxes.len());
        SharedLanes {
            lanes: lanes.as_mut_ptr(),
            outboxes: outboxes.as_mut_ptr(),
            inboxes: inboxes.as_mut_ptr(),
            n: lanes.len(),
            classify,
        }
    }

    /// Lane `i` for the window ending at `last_ps` (inclusive), with the mail handed over
    /// for it at the last window's close put in first.
    ///
    /// # Safety
    ///
    /// While the result lives, no other thread touches lane `i`, its outbox or its inbox
    /// (the queue's own thread does not run it: `set_own_lanes`), and the queue is neither
    /// dropped nor re-partitioned.
    pub unsafe fn open(&self, i: usize, last_ps: TimePs) -> LaneSched<'_, E> {
        assert!(i < self.n, "lane {i} of {}", self.n);
        let lane = &mut *self.lanes.add(i);
        for (t, kind) in (*self.inboxes.add(i)).drain(..) {
            lane.schedule(t, kind);
        }
        LaneSched {
            lane,
            outbox: &mut *self.outboxes.add(i),
            me: i as PartitionId,
            last_ps,
            classify: self.classify,
            early_mail: 0,
        }
    }
}

/// One lane being run to a window's end on some thread: a `Scheduler` for its events.
pub struct LaneSched<'a, E> {
    lane: &'a mut Lane<E>,
    outbox: &'a mut Vec<Mail<E>>,
    me: PartitionId,
    last_ps: TimePs,
    classify: fn(&E) -> Route,
    /// Events scheduled for another partition within the window (must stay 0).
    pub early_mail: u64,
}

impl<E: Copy> LaneSched<'_, E> {
    /// The lane's next event due in the window.
    #[inline]
    pub fn pop(&mut self) -> Option<Event<E>> {
        self.lane.pop_until(self.last_ps)
    }

    /// The lane's next event, as far as it shows it (a prefetch hint).
    #[inline]
    pub fn peek(&self) -> Option<E> {
        self.lane.peek_kind()
    }

    pub fn partition(&self) -> PartitionId {
        self.me
    }

    #[inline(never)]
    fn send(&mut self, to: Option<PartitionId>, time_ps: TimePs, kind: E) {
        if time_ps <= self.last_ps {
            self.early_mail += 1;
        }
        self.outbox.push((to, time_ps, kind));
    }
}

impl<E: Copy> Clock for LaneSched<'_, E> {
    #[inline]
    fn now(&self) -> TimePs {
        self.lane.now()
    }
}

impl<X, E: Copy + From<X>> Scheduler<X> for LaneSched<'_, E> {
    #[inline]
    fn schedule(&mut self, at_ps: TimePs, event: X) {
        let kind = E::from(event);
        match (self.classify)(&kind) {
            Route::Own => self.lane.schedule(at_ps, kind),
            Route::Global => self.send(None, at_ps, kind),
        }
    }

    #[inline]
    fn schedule_in(&mut self, partition: PartitionId, at_ps: TimePs, event: X) {
        let kind = E::from(event);
        if partition == self.me {
            self.lane.schedule(at_ps, kind);
        } else {
            self.send(Some(partition), at_ps, kind);
        }
    }
}
