//! Application threads on hosts that cost time. A delivery (from a transport, for an
//! application) reaches the application when its thread has run: a wake-up if the thread
//! was idle (plus an `epoll_wait` system call for epoll), a `recv` system call and the copy
//! of the new bytes. The thread stays busy while the application works in response, so a
//! delivery that arrives meanwhile needs no wake-up.
//!
//! Generic over what is held (`T`, a transport's note): this layer charges time and hands
//! the item back when its thread gets to it; it never looks inside.

use super::{HostEvent, Hosts, IoModel};
use crate::engine::slots::Slots;
use crate::engine::{Scheduler, TimePs};

/// An application thread: per connection or stream (pthread), or per host (epoll).
#[derive(Clone, Copy, Debug)]
pub enum ThreadId {
    Conn(u32),
    Stream(u32),
    Host(u32),
}

/// A delivery waiting for its thread, with where that thread runs.
#[derive(Clone, Copy, Debug)]
pub struct Held<T> {
    pub item: T,
    pub host: u32,
    pub core: u32,
    pub thread: ThreadId,
}

/// What a delivery is, for pricing it: who receives it and how many new bytes it brings.
#[derive(Clone, Copy, Debug)]
pub struct Delivery {
    pub host: u32,
    /// Connection (TCP) or stream (UDP) id.
    pub flow: u32,
    pub tcp: bool,
    pub bytes: u64,
    /// Which connection holds the slot `flow` now (TCP reuses closed connections' slots;
    /// 0 for streams): a new one starts with an idle thread.
    pub epoch: u32,
}

/// When each thread is busy until, and the deliveries waiting for their threads.
pub struct AppThreads<T> {
    /// Per connection id (ids are sparse when TCP is kept by part): when its thread is
    /// busy until, and the epoch of the connection that entry belongs to.
    conn_threads: rustc_hash::FxHashMap<u32, (TimePs, u32)>,
    stream_busy_until: Vec<TimePs>,
    host_busy_until: Vec<TimePs>,
    /// Deliveries waiting for their thread, by the slot their event carries.
    held: Slots<Held<T>>,
    /// Which part of the run's hosts these threads are (`for_part`): the low `part_bits`
    /// bits of a slot an event carries name it.
    part: u32,
    part_bits: u32,
}

impl<T> Default for AppThreads<T> {
    fn default() -> Self {
        Self::for_part(0, 1)
    }
}

impl<T> AppThreads<T> {
    /// The threads of the hosts of part `part` of `parts` (a partitioned run keeps each
    /// part's apart, touched only by its hosts' events).
    pub fn for_part(part: u32, parts: usize) -> Self {
        AppThreads {
            conn_threads: Default::default(),
            stream_busy_until: Vec::new(),
            host_busy_until: Vec::new(),
            held: Slots::default(),
            part,
            part_bits: parts.next_power_of_two().trailing_zeros(),
        }
    }

    /// The part whose threads hold `slot` (an `AppNote`'s), of `parts`.
    pub fn part_of_slot(slot: u32, parts: usize) -> usize {
        (slot & ((1u32 << parts.next_power_of_two().trailing_zeros()) - 1)) as usize
    }

    fn local(&self, slot: u32) -> u32 {
        debug_assert_eq!(slot & ((1 << self.part_bits) - 1), self.part);
        slot >> self.part_bits
    }
}

fn slot_of<V: Default + Clone>(v: &mut Vec<V>, i: u32) -> &mut V {
    if v.len() <= i as usize {
        v.resize(i as usize + 1, V::default());
    }
    &mut v[i as usize]
}

impl<T: Copy> AppThreads<T> {
    fn busy_until(&mut self, t: ThreadId) -> &mut TimePs {
        match t {
            ThreadId::Conn(i) => &mut self.conn_threads.entry(i).or_default().0,
            ThreadId::Stream(i) => slot_of(&mut self.stream_busy_until, i),
            ThreadId::Host(i) => slot_of(&mut self.host_busy_until, i),
        }
    }

    /// Holds `item` until its thread has run (charged on the host's CPU now) and schedules
    /// `HostEvent::AppNote` for then.
    pub fn hold(
        &mut self,
        hosts: &mut Hosts,
        ev: &mut impl Scheduler<HostEvent>,
        item: T,
        d: Delivery,
    ) {
        let now = ev.now();
        let epoll = hosts.spec.io_model == IoModel::Epoll;
        let (thread, key) = match (epoll, d.tcp) {
            (true, _) => (ThreadId::Host(d.host), d.host),
            (false, true) => (ThreadId::Conn(d.flow), d.flow),
            (false, false) => (ThreadId::Stream(d.flow), d.flow),
        };
        if let ThreadId::Conn(i) = thread {
            let (busy, epoch) = self.conn_threads.entry(i).or_default();
            if *epoch != d.epoch {
                // Another connection in the slot: its thread has not run yet.
                (*busy, *epoch) = (0, d.epoch);
            }
        }
        let busy = self.busy_until(thread);
        let mut cost = hosts.syscall_ps + hosts.copy_ps(d.bytes);
        let woke = now >= *busy;
        if woke {
            cost += hosts.wakeup_ps + if epoll { hosts.syscall_ps } else { 0 };
        }
        let core = hosts.core_of(key);
        let counts_wakeup = woke && hosts.wakeup_ps > 0;
        let mut done = hosts.charge(d.host, core, now, cost);
        if counts_wakeup {
            // The scheduler's wake-up latency (`host.noise`): the thread runs later, the
            // core is not held meanwhile.
            done += hosts.wakeup_delay_ps(d.host);
        } else {
            // A thread takes its deliveries in order: this one not before the last
            // (which may still wait out its wake-up latency).
            done = done.max(*self.busy_until(thread));
        }
        *self.busy_until(thread) = done;
        hosts.count_syscalls(d.host, 1 + u64::from(woke && epoll));
        // Stacks that poll (no wake-up cost) are never woken.
        hosts.state[d.host as usize].wakeups += u64::from(counts_wakeup);
        let held = Held {
            item,
            host: d.host,
            core: core as u32,
            thread,
        };
        let slot = self.held.put(held) << self.part_bits | self.part;
        ev.schedule(done, HostEvent::AppNote { slot });
    }

    /// The held delivery of `slot` (its thread got to it); the slot is free again.
    pub fn take(&mut self, slot: u32) -> Held<T> {
        self.held.take(self.local(slot))
    }

    /// Looks at the delivery in `slot` without taking it (to prefetch what it will touch).
    pub fn peek(&self, slot: u32) -> Option<&Held<T>> {
        self.held.peek(self.local(slot))
    }

    /// The application did work in response to `h` (request work, send calls and the
    /// transmit paths they start, queued on its core after its recv): its thread runs until
    /// that ends (`core_free_after`, if later than `core_free_before`). Work other threads
    /// queued on the core does not keep this one awake.
    pub fn ran(&mut self, h: &Held<T>, core_free_before: TimePs, core_free_after: TimePs) {
        if core_free_after > core_free_before {
            let busy = self.busy_until(h.thread);
            *busy = (*busy).max(core_free_after);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EventQueue;
    use crate::host::{HostSpec, StackCosts};

    /// One-core hosts whose system calls and wake-ups take 1 us each, with `io` threads.
    fn hosts(io: IoModel) -> Hosts {
        let spec = HostSpec {
            costs: StackCosts {
                syscall: 1000.0,
                wakeup: 1000.0,
                ..Default::default()
            },
            clock_hz: 1e9,
            cores: 1,
            io_model: io,
            ..HostSpec::ideal()
        };
        Hosts::new(spec, 1)
    }

    fn delivery(flow: u32, epoch: u32) -> Delivery {
        Delivery {
            host: 0,
            flow,
            tcp: true,
            bytes: 0,
            epoch,
        }
    }

    /// A connection's thread (pthread) that is awake takes a second delivery without a
    /// wake-up; a new connection in the same slot (another epoch) starts with an idle
    /// thread, which a delivery must wake.
    #[test]
    fn a_new_connection_in_a_slot_has_an_idle_thread() {
        let us = 1_000_000;
        let mut h = hosts(IoModel::Pthread);
        let mut ev: EventQueue<HostEvent> = EventQueue::default();
        let mut t: AppThreads<u32> = AppThreads::default();
        t.hold(&mut h, &mut ev, 1, delivery(0, 7));
        assert_eq!(h.state[0].wakeups, 1);
        t.hold(&mut h, &mut ev, 2, delivery(0, 7));
        assert_eq!(h.state[0].wakeups, 1, "awake: no wake-up");
        t.hold(&mut h, &mut ev, 3, delivery(0, 8));
        assert_eq!(h.state[0].wakeups, 2, "another connection's thread wakes");
        // Wake-up + recv, recv, then wake-up + recv: 5 us of the core.
        assert_eq!(h.state[0].busy_ps, 5 * us);
    }
}
