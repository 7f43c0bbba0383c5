//! The scheduler seam. Layers schedule their own event types through `Scheduler<E>`; the
//! event loop takes due events through `Driver`. Both are implemented by `EventQueue` for
//! simulated time; a wall-clock driver (real time) or a multi-partition driver implements
//! the same traits and the models do not change.
//!
//! Each layer defines one small `Copy` enum of its events (net: link arrivals and port
//! wake-ups; host: interrupts and CPU paths; transport: timers; workload: application
//! timers). The program that assembles the layers defines one enum with a variant per
//! layer and `From` conversions, so a layer's code is generic over any scheduler that
//! accepts its events and never names the events of the layers above it.

use super::{Event, EventQueue, TimePs};

/// Reads the current time.
pub trait Clock {
    fn now(&self) -> TimePs;
}

/// Accepts events of type `E` (one layer's events) for a future time.
pub trait Scheduler<E>: Clock {
    fn schedule(&mut self, at_ps: TimePs, event: E);
    /// Schedules an event that acts on partition `partition` (another partition's state:
    /// a packet reaching the far end of a link between partitions).
    fn schedule_in(&mut self, partition: super::PartitionId, at_ps: TimePs, event: E) {
        let _ = partition;
        self.schedule(at_ps, event);
    }
}

/// Hands the event loop the next due event, in (time, insertion) order.
pub trait Driver<E>: Clock {
    /// The next event due at or before `horizon_ps`, advancing the clock to it.
    fn next_due(&mut self, horizon_ps: TimePs) -> Option<Event<E>>;
    /// Called when nothing is due before `horizon_ps`: the clock moves there.
    fn idle_until(&mut self, horizon_ps: TimePs);
    /// What the next event will be, if known (a hint for prefetching its data).
    fn peek(&self) -> Option<E>;
    /// What the event after the next may be (a hint for prefetching further ahead).
    fn peek_second(&self) -> Option<E> {
        None
    }
    fn is_empty(&self) -> bool;
}

impl<W: Copy> Clock for EventQueue<W> {
    #[inline]
    fn now(&self) -> TimePs {
        EventQueue::now(self)
    }
}

impl<E, W: Copy + From<E>> Scheduler<E> for EventQueue<W> {
    #[inline]
    fn schedule(&mut self, at_ps: TimePs, event: E) {
        EventQueue::schedule(self, at_ps, W::from(event));
    }
    #[inline]
    fn schedule_in(&mut self, partition: super::PartitionId, at_ps: TimePs, event: E) {
        EventQueue::schedule_in(self, partition, at_ps, W::from(event));
    }
}

impl<W: Copy> Driver<W> for EventQueue<W> {
    #[inline]
    fn next_due(&mut self, horizon_ps: TimePs) -> Option<Event<W>> {
        self.pop_until(horizon_ps)
    }
    fn idle_until(&mut self, horizon_ps: TimePs) {
        self.advance_to(horizon_ps)
    }
    #[inline]
    fn peek(&self) -> Option<W> {
        self.peek_kind()
    }
    #[inline]
    fn peek_second(&self) -> Option<W> {
        EventQueue::peek_second_kind(self)
    }
    fn is_empty(&self) -> bool {
        EventQueue::is_empty(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Low(u32);
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct High(u32);
    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Both {
        Low(Low),
        High(High),
    }
    impl From<Low> for Both {
        fn from(e: Low) -> Self {
            Both::Low(e)
        }
    }
    impl From<High> for Both {
        fn from(e: High) -> Self {
            Both::High(e)
        }
    }

    /// A lower layer's code sees only its own events.
    fn low_layer(s: &mut impl Scheduler<Low>) {
        let t = s.now() + 5;
        s.schedule(t, Low(1));
    }

    #[test]
    fn layers_schedule_their_own_events_into_one_queue() {
        let mut q: EventQueue<Both> = EventQueue::new();
        Scheduler::schedule(&mut q, 3, High(7));
        low_layer(&mut q);
        let order: Vec<Both> = std::iter::from_fn(|| q.next_due(u64::MAX))
            .map(|e| e.kind)
            .collect();
        assert_eq!(order, vec![Both::High(High(7)), Both::Low(Low(1))]);
    }
}
