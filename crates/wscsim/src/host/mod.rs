//! Servers as computers (DIABLO section 3.3): a CPU that costs time for every packet,
//! system call, wake-up and interrupt, and a NIC with a receive ring and interrupt
//! coalescing.
//!
//! The CPU follows DIABLO's fixed-CPI timing model: each kernel or application path costs a
//! number of instructions, and time = instructions x CPI / clock. Every core is one FIFO
//! server: work charged at time t starts when the core is free and runs to completion
//! (no preemption), so a busy CPU delays what comes after it. Paths:
//!
//! - transmit: each packet a host sends costs `tx_packet` (+ `per_byte` x payload) on the
//!   core of its flow before it reaches the NIC queue;
//! - receive: the NIC puts an arriving packet in its receive ring; an interrupt
//!   (`interrupt`, after `rx_coalesce` unless the CPU is already polling, as NAPI does)
//!   starts processing; each packet costs `rx_packet` and is handed to the transport when
//!   done. A full ring drops the packet (counted per host): a saturated CPU loses packets
//!   exactly there;
//! - application: a transport's delivery reaches the application after its thread runs:
//!   a wake-up (`wakeup`, only if the thread was idle), for epoll an `epoll_wait` system
//!   call, then a `recv` system call and the copy (`per_byte` x bytes). With blocking
//!   threads (pthread) every connection has its own thread; with epoll one thread serves
//!   all of an application's connections, so one wake-up covers many deliveries;
//! - a `send` system call (+ copy) for every application write, and `app_request` for each
//!   request a server application handles.
//!
//! Where work runs (`Threads`): with `per_flow` (kernel stacks, as with receive-side
//! scaling) a flow's packets and threads are pinned to core (hash % cores). With `per_link`
//! (CamCubeOS's runtime) each link has a receive thread and a transmit thread and each
//! application thread is a thread of its own; threads take turns on whichever core can
//! start them first, as an OS schedules more threads than cores. A thread runs one piece of
//! work at a time, in the order charged.
//!
//! Simplified: cores are FIFO (interrupt work does not preempt a running thread; a piece of
//! work charged later never fills an idle gap before work charged earlier); receive-window flow control from
//! the application's reading is not modelled (the socket buffer is as large as
//! `transport.rcv_window`). With the `ideal` stack every cost is zero and none of this runs.

pub mod disk;
pub mod idle;
pub mod moderation;
pub mod nic;
pub mod noise;
pub mod presets;
pub mod threads;

use crate::engine::{Scheduler, TimePs, PS_PER_S};
use crate::net::NetEvent;
use crate::packet::PktId;

/// The host layer's events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostEvent {
    /// A NIC's coalescing timer: raise receive queue `queue`'s interrupt.
    Irq { host: u32, queue: u32 },
    /// The CPU finished receiving packet `pkt`: hand it to the transport.
    RxDone { pkt: u32 },
    /// The CPU finished the transmit path of `pkt`: put it in the NIC queue.
    TxDone { pkt: u32 },
    /// An application thread got to the delivery held in slot `slot` (see `threads`).
    AppNote { slot: u32 },
    /// Host `host`'s CPU finished forwarding `pkt` (a torus server): out it goes.
    ForwardDone { pkt: u32, host: u32 },
}

/// What the host layer schedules through: its own events and the network's.
pub trait HostSched: Scheduler<HostEvent> + Scheduler<NetEvent> {}
impl<T: Scheduler<HostEvent> + Scheduler<NetEvent>> HostSched for T {}

/// Instructions per path; multiplied by CPI / clock to give time.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StackCosts {
    pub tx_packet: f64,
    pub rx_packet: f64,
    /// Per payload byte copied between user and kernel (send and recv).
    pub per_byte: f64,
    pub syscall: f64,
    pub wakeup: f64,
    pub interrupt: f64,
    pub app_request: f64,
    /// Per frame byte of each packet sent or received, apart from any copy (a runtime's own
    /// handling of its buffers); half is charged on sending, half on receiving.
    pub packet_per_byte: f64,
    /// Per packet packed into, or unpacked from, a shared frame (when the runtime packs):
    /// charged on sending and on receiving each packet in place of the per-frame paths,
    /// which each frame pays once.
    pub pack_packet: f64,
    /// Per packet a server forwards for others (a torus server's software switch).
    pub forward_packet: f64,
    /// Per frame byte a server forwards for others.
    pub forward_per_byte: f64,
    /// Not instructions: a delay that occupies no CPU, added to each packet a host receives
    /// or forwards (a user-space runtime's hand-offs between its receive thread, the
    /// service and its transmit thread, batched asynchronous I/O), in nanoseconds, fixed
    /// and per frame byte.
    pub hop_latency_ns: f64,
    pub hop_latency_ns_per_byte: f64,
}

impl StackCosts {
    pub fn is_zero(&self) -> bool {
        *self == StackCosts::default()
    }
}

/// How application threads wait for data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoModel {
    /// One blocking thread per connection (the pthread incast client).
    Pthread,
    /// One event-driven thread per application (epoll, as memcached).
    Epoll,
}

/// How a NIC paces its receive interrupts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interrupts {
    /// The interrupt follows a packet after `rx_coalesce_ps` (at once if 0).
    Delay,
    /// At most one interrupt per throttle interval, the interval set by the traffic as
    /// Intel's 10 GbE driver does (`moderation`).
    Adaptive,
}

/// Where a host's packet and application work runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Threads {
    /// Pinned: a flow's packets and threads on core hash % cores.
    PerFlow,
    /// A receive and a transmit thread per link, application threads of their own, all
    /// run by whichever core can start them first.
    PerLink,
}

/// Per-link threads: local port `l` has receive thread `l` and transmit thread
/// `MAX_LINKS + l`; application thread `c` (core_of's key) is `2 * MAX_LINKS + c`.
pub const MAX_LINKS: usize = 8;

/// A host model, resolved from the scenario's `[host]` table.
#[derive(Clone, Debug)]
pub struct HostSpec {
    pub costs: StackCosts,
    pub clock_hz: f64,
    pub cpi: f64,
    pub cores: u32,
    pub rx_ring_packets: u32,
    pub rx_coalesce_ps: TimePs,
    /// How the NIC paces its receive interrupts.
    pub interrupts: Interrupts,
    /// The cores' idle states (`idle`), from the shallowest; empty: none.
    pub idle_states: &'static [idle::IdleState],
    pub io_model: IoModel,
    pub threads: Threads,
    /// Every server's storage device (None: no storage).
    pub storage: Option<disk::StorageDevice>,
    /// Operating-system noise on every host's cores (`noise`; off by default).
    pub noise: noise::NoiseSpec,
}

impl HostSpec {
    pub fn ideal() -> Self {
        HostSpec {
            costs: StackCosts::default(),
            clock_hz: 4e9,
            cpi: 1.0,
            cores: 1,
            rx_ring_packets: u32::MAX,
            rx_coalesce_ps: 0,
            interrupts: Interrupts::Delay,
            idle_states: &[],
            io_model: IoModel::Pthread,
            threads: Threads::PerFlow,
            storage: None,
            noise: noise::NoiseSpec::default(),
        }
    }

    /// Picoseconds that `instructions` take on this CPU.
    #[inline]
    pub fn ps(&self, instructions: f64) -> TimePs {
        (instructions * self.cpi / self.clock_hz * PS_PER_S as f64).round() as TimePs
    }
}

/// One receive queue of a NIC and its interrupt vector. A host has one, or with adaptive
/// moderation and per-flow threads one per core: receive-side scaling hashes each flow to
/// its core's queue, whose interrupts keep their own pace (`moderation`).
#[derive(Clone, Debug, Default)]
pub struct RxQueue {
    /// Packets in the ring that wait for an interrupt.
    pub waiting: Vec<PktId>,
    pub irq_pending: bool,
    /// Until when the CPU is polling the queue (NAPI): arrivals before it need no interrupt.
    pub polling_until_ps: TimePs,
    /// Adaptive interrupt moderation (used with `Interrupts::Adaptive`).
    pub moderation: moderation::Moderation,
}

/// Per-host CPU and NIC state.
#[derive(Clone, Debug, Default)]
pub struct HostState {
    /// When each core finishes the work charged to it so far.
    pub core_free_ps: Vec<TimePs>,
    /// Per-link threads: when each thread finishes its work (see `MAX_LINKS`).
    pub thread_free_ps: Vec<TimePs>,
    /// Packets in the receive ring: arrived, not yet handed to the transport.
    pub rx_in_ring: u32,
    /// The NIC's receive queues, each with its interrupt (see `RxQueue`).
    pub rx_queues: Vec<RxQueue>,
    pub busy_ps: u64,
    pub rx_packets: u64,
    pub tx_packets: u64,
    /// Packets forwarded for other servers at a cost.
    pub forwarded: u64,
    pub rx_ring_drops: u64,
    pub interrupts: u64,
    pub wakeups: u64,
    pub syscalls: u64,
}

/// The hosts' CPUs and NICs.
#[derive(Clone, Debug)]
pub struct Hosts {
    pub spec: HostSpec,
    /// False for the ideal stack: packets and deliveries take no time and skip this model.
    pub costed: bool,
    pub state: Vec<HostState>,
    /// Every server's storage device (empty when servers have none).
    pub disks: Vec<disk::Disk>,
    /// Operating-system noise (None: off, or hosts that cost no time).
    pub noise: Option<Box<noise::Noise>>,
    /// Per host, the CPU time of applications' compute phases (charged on every stack,
    /// the ideal one included: it is the application's work, not the network's).
    pub compute_ps: Vec<TimePs>,
    /// Precomputed path times.
    pub tx_packet_ps: TimePs,
    pub rx_packet_ps: TimePs,
    pub syscall_ps: TimePs,
    pub wakeup_ps: TimePs,
    pub interrupt_ps: TimePs,
    pub app_request_ps: TimePs,
    pub forward_packet_ps: TimePs,
    pub pack_packet_ps: TimePs,
    /// The runtime packs packets into shared frames on torus links (and hosts cost time):
    /// sending work is charged as packets leave (`frames_sent`), receiving work as they
    /// arrive; a packet that crossed or leaves by a packing link pays `pack_packet`, and the
    /// fixed path (its own transmit or receive path, or its half of forwarding) only if it
    /// leads its frame (`packed_fixed_ps`).
    pub packing: bool,
    per_byte_ps: f64,
    /// Half of `packet_per_byte` in picoseconds: each of sending and receiving.
    half_packet_byte_ps: f64,
    forward_per_byte_ps: f64,
    hop_latency_ps: f64,
    hop_latency_ps_per_byte: f64,
}

/// When work ready at `ready_ps` starts on a core free from `free_ps`: at once if the core
/// is busy until then, else once it has woken from the idle state it reached.
#[inline]
fn awake_at(states: &[idle::IdleState], free_ps: TimePs, ready_ps: TimePs) -> TimePs {
    if ready_ps > free_ps {
        ready_ps + idle::wake_ps(states, ready_ps - free_ps)
    } else {
        free_ps
    }
}

/// Receive queues per NIC: one per core with adaptive moderation and per-flow threads
/// (receive-side scaling), else one.
fn rx_queue_count(spec: &HostSpec) -> usize {
    if spec.interrupts == Interrupts::Adaptive && spec.threads == Threads::PerFlow {
        spec.cores as usize
    } else {
        1
    }
}

impl Hosts {
    pub fn new(spec: HostSpec, n_hosts: usize) -> Self {
        let costed = !spec.costs.is_zero();
        let c = spec.costs;
        let state = if costed {
            vec![
                HostState {
                    core_free_ps: vec![0; spec.cores as usize],
                    thread_free_ps: match spec.threads {
                        Threads::PerFlow => Vec::new(),
                        Threads::PerLink => vec![0; 2 * MAX_LINKS + spec.cores as usize],
                    },
                    rx_queues: vec![RxQueue::default(); rx_queue_count(&spec)],
                    ..Default::default()
                };
                n_hosts
            ]
        } else {
            Vec::new()
        };
        Hosts {
            tx_packet_ps: spec.ps(c.tx_packet),
            rx_packet_ps: spec.ps(c.rx_packet),
            syscall_ps: spec.ps(c.syscall),
            wakeup_ps: spec.ps(c.wakeup),
            interrupt_ps: spec.ps(c.interrupt),
            app_request_ps: spec.ps(c.app_request),
            forward_packet_ps: spec.ps(c.forward_packet),
            pack_packet_ps: spec.ps(c.pack_packet),
            packing: false,
            per_byte_ps: c.per_byte * spec.cpi / spec.clock_hz * PS_PER_S as f64,
            half_packet_byte_ps: c.packet_per_byte / 2.0 * spec.cpi / spec.clock_hz
                * PS_PER_S as f64,
            forward_per_byte_ps: c.forward_per_byte * spec.cpi / spec.clock_hz * PS_PER_S as f64,
            hop_latency_ps: c.hop_latency_ns * 1000.0,
            hop_latency_ps_per_byte: c.hop_latency_ns_per_byte * 1000.0,
            disks: spec
                .storage
                .map(|d| vec![disk::Disk::new(d.params); n_hosts])
                .unwrap_or_default(),
            compute_ps: vec![0; n_hosts],
            noise: (costed && !spec.noise.is_off())
                .then(|| Box::new(noise::Noise::new(&spec.noise, n_hosts, spec.cores as usize))),
            spec,
            costed,
            state,
        }
    }

    /// CPU time host `host` has been busy, summed over its cores: its network stack's work
    /// (on a costed stack) and its applications' compute phases.
    pub fn cpu_busy_ps(&self, host: u32) -> TimePs {
        let stack = if self.costed {
            self.state[host as usize].busy_ps
        } else {
            0
        };
        stack + self.compute_ps[host as usize]
    }

    /// CPU time to forward a frame of `frame_bytes`.
    #[inline]
    pub fn forward_ps(&self, frame_bytes: u32) -> TimePs {
        self.forward_packet_ps
            + (f64::from(frame_bytes) * self.forward_per_byte_ps).round() as TimePs
    }

    /// The delay that occupies no CPU for a frame of `frame_bytes` received or forwarded.
    #[inline]
    pub fn hop_latency_ps(&self, frame_bytes: u32) -> TimePs {
        (self.hop_latency_ps + f64::from(frame_bytes) * self.hop_latency_ps_per_byte).round()
            as TimePs
    }

    /// The per-byte part of sending or of receiving a frame of `frame_bytes`.
    #[inline]
    pub fn half_packet_bytes_ps(&self, frame_bytes: u32) -> TimePs {
        (f64::from(frame_bytes) * self.half_packet_byte_ps).round() as TimePs
    }

    /// Time to copy `bytes` between user and kernel.
    #[inline]
    pub fn copy_ps(&self, bytes: u64) -> TimePs {
        (bytes as f64 * self.per_byte_ps).round() as TimePs
    }

    /// The core that serves work keyed by `key` (a flow hash or thread id).
    #[inline]
    pub fn core_of(&self, key: u32) -> usize {
        (key % self.spec.cores) as usize
    }

    /// Queues `cost_ps` of work on `core` of `host` (per-link threads: on application
    /// thread `core`), ready at `ready_ps`; returns when it is done. Work on one core (or
    /// thread) runs in the order it is charged.
    #[inline]
    pub fn charge(&mut self, host: u32, core: usize, ready_ps: TimePs, cost_ps: TimePs) -> TimePs {
        if self.spec.threads == Threads::PerLink {
            return self.charge_thread(host, 2 * MAX_LINKS + core, ready_ps, cost_ps);
        }
        let st = &mut self.state[host as usize];
        let free = st.core_free_ps[core];
        if cost_ps == 0 && !self.spec.idle_states.is_empty() {
            // Nothing to do: a sleeping core sleeps on.
            return free.max(ready_ps);
        }
        let start = awake_at(self.spec.idle_states, free, ready_ps);
        let (done, own) =
            noise::run_on(self.noise.as_deref_mut(), host, core, free, start, cost_ps);
        st.core_free_ps[core] = done;
        st.busy_ps += own;
        done
    }

    /// When the work charged so far to `core` of `host` (`charge`'s: per-link threads, to
    /// application thread `core`) is done.
    pub fn free_ps(&self, host: u32, core: usize) -> TimePs {
        let st = &self.state[host as usize];
        match self.spec.threads {
            Threads::PerFlow => st.core_free_ps[core],
            Threads::PerLink => st.thread_free_ps[2 * MAX_LINKS + core],
        }
    }

    /// Queues `cost_ps` of work on thread `thread` of `host` (per-link threads), ready at
    /// `ready_ps`: it starts when the thread has finished its earlier work and a core is
    /// free, on the core that can start it first (of those, the one idle the shortest
    /// time); returns when it is done.
    pub fn charge_thread(
        &mut self,
        host: u32,
        thread: usize,
        ready_ps: TimePs,
        cost_ps: TimePs,
    ) -> TimePs {
        let st = &mut self.state[host as usize];
        let ready = ready_ps.max(st.thread_free_ps[thread]);
        if cost_ps == 0 {
            return ready;
        }
        let (mut core, mut start, mut free) = (0, TimePs::MAX, 0);
        for (c, &f) in st.core_free_ps.iter().enumerate() {
            // The core that can start it first, a sleeping one once it has woken.
            let s = awake_at(self.spec.idle_states, f, ready);
            if s < start || (s == start && f > free) {
                (core, start, free) = (c, s, f);
            }
        }
        let (done, own) =
            noise::run_on(self.noise.as_deref_mut(), host, core, free, start, cost_ps);
        st.core_free_ps[core] = done;
        st.thread_free_ps[thread] = done;
        st.busy_ps += own;
        done
    }

    /// Packing: the packets that left hosts' ports pay their sending work now, on the
    /// link's transmit thread (per-link threads; else the core of the port): a host's own
    /// packet its transmit path, a forwarded one the sending half of forwarding, but a
    /// packet packed behind another none of the fixed part, and a packed one its packing
    /// (a port that does not pack, as to an external switch, packs nothing). As in
    /// CamCubeOS, whose transmit thread packs what waits for its link, the work is done
    /// for packets already queued for the link; it occupies the CPU but does not delay the
    /// frame (the runtime's batched sends overlap the wire).
    pub fn frames_sent(&mut self, departures: &mut Vec<crate::net::Departure>, now_ps: TimePs) {
        use crate::packet::framing;
        for d in departures.iter() {
            let (fixed, bytes) = if d.framing & framing::OWN != 0 {
                let b = self.copy_ps(u64::from(d.payload_bytes))
                    + self.half_packet_bytes_ps(d.frame_bytes);
                (self.tx_packet_ps, b)
            } else {
                let b = self.forward_ps(d.frame_bytes) - self.forward_packet_ps;
                let f = self.forward_packet_ps;
                (f - f / 2, b - b / 2)
            };
            let cost = self.packed_fixed_ps(d.framing, fixed) + bytes;
            let link = usize::from(d.local).min(MAX_LINKS - 1);
            if self.spec.threads == Threads::PerLink {
                self.charge_thread(d.host, MAX_LINKS + link, now_ps, cost);
            } else {
                let core = self.core_of(link as u32);
                self.charge(d.host, core, now_ps, cost);
            }
        }
        departures.clear();
    }

    /// The delay before a thread of `host` woken now runs (the scheduler's wake-up
    /// latency, `host.noise`; 0 without noise).
    #[inline]
    pub fn wakeup_delay_ps(&mut self, host: u32) -> TimePs {
        self.noise
            .as_deref_mut()
            .map_or(0, |n| n.wakeup_delay_ps(host))
    }

    /// CPU time the operating system's noise took from `host`'s work (ticks and
    /// background bursts; 0 without noise).
    pub fn noise_stolen_ps(&self, host: u32) -> TimePs {
        self.noise.as_deref().map_or(0, |n| n.stolen_ps(host))
    }

    /// A system call (plus a copy of `bytes`) by a thread on `core`; returns when it ends.
    pub fn syscall(&mut self, host: u32, core: usize, now: TimePs, bytes: u64) -> TimePs {
        self.count_syscalls(host, 1);
        let cost = self.syscall_ps + self.copy_ps(bytes);
        self.charge(host, core, now, cost)
    }

    /// `n` system calls without copies by the thread of `key` on `host`, from `now`;
    /// returns when they end (`now` on hosts that cost no time).
    pub fn syscalls(&mut self, host: u32, key: u32, now: TimePs, n: u64) -> TimePs {
        if !self.costed || n == 0 {
            return now;
        }
        self.count_syscalls(host, n);
        let core = self.core_of(key);
        self.charge(host, core, now, n * self.syscall_ps)
    }

    /// A server application's own work for one request (`app_request`), plus `syscalls`
    /// more system calls it makes for it, on the core of `key`, from `now`. Nothing on
    /// hosts that cost no time.
    pub fn app_request(&mut self, host: u32, key: u32, now: TimePs, syscalls: u64) {
        if !self.costed {
            return;
        }
        let core = self.core_of(key);
        let cost = self.app_request_ps + syscalls * self.syscall_ps;
        self.count_syscalls(host, syscalls);
        self.charge(host, core, now, cost);
    }

    /// A service's own work for one message it handles at `host` (CamCubeOS's services run
    /// in the runtime, as an application would): `app_request`, plus `per_byte` for each
    /// byte of content it copies (0 in a zero-copy runtime), on the application thread of
    /// `key`, ready at `ready_ps`; returns when it is done (`ready_ps` on hosts that cost no
    /// time).
    pub fn service_work(&mut self, host: u32, key: u32, ready_ps: TimePs, bytes: u64) -> TimePs {
        if !self.costed {
            return ready_ps;
        }
        let cost = self.app_request_ps + self.copy_ps(bytes);
        if cost == 0 {
            return ready_ps;
        }
        let core = self.core_of(key);
        self.charge(host, core, ready_ps, cost)
    }

    /// Counts `n` system calls made by `host` (whose time the caller charged). A stack whose
    /// system calls cost nothing (polling, user space) makes none.
    pub fn count_syscalls(&mut self, host: u32, n: u64) {
        if self.syscall_ps > 0 {
            self.state[host as usize].syscalls += n;
        }
    }

    /// Fraction of the run each host's CPU was busy (all cores together). Work charged
    /// but still queued past the end of the run (a transmit backlog) is cut off at 1.
    pub fn utilisation(&self, host: u32, elapsed_ps: TimePs) -> f64 {
        if !self.costed || elapsed_ps == 0 {
            return 0.0;
        }
        (self.state[host as usize].busy_ps as f64 / (elapsed_ps as f64 * self.spec.cores as f64))
            .min(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_cpi_time() {
        let spec = HostSpec {
            clock_hz: 2e9,
            cpi: 1.5,
            ..HostSpec::ideal()
        };
        // 4,000 instructions x 1.5 cycles / 2 GHz = 3 us.
        assert_eq!(spec.ps(4000.0), 3_000_000);
    }

    #[test]
    fn a_core_serves_work_in_order() {
        let spec = HostSpec {
            costs: StackCosts {
                rx_packet: 1000.0,
                ..Default::default()
            },
            clock_hz: 1e9,
            cores: 2,
            ..HostSpec::ideal()
        };
        let mut h = Hosts::new(spec, 1);
        assert!(h.costed);
        // Two 1 us jobs at t=0 on core 0 end at 1 and 2 us; core 1 is independent.
        assert_eq!(h.charge(0, 0, 0, 1_000_000), 1_000_000);
        assert_eq!(h.charge(0, 0, 0, 1_000_000), 2_000_000);
        assert_eq!(h.charge(0, 1, 500_000, 1_000_000), 1_500_000);
        // Work ready after the core went idle starts when it is ready.
        assert_eq!(h.charge(0, 0, 5_000_000, 1_000_000), 6_000_000);
        assert_eq!(h.state[0].busy_ps, 4_000_000);
        assert!((h.utilisation(0, 6_000_000) - 4.0 / 12.0).abs() < 1e-12);
    }

    /// Per-link threads: a thread runs one piece of work at a time; threads share the
    /// cores, each piece going to the core that can start it first.
    #[test]
    fn threads_take_turns_on_any_free_core() {
        let spec = HostSpec {
            costs: StackCosts {
                rx_packet: 1000.0,
                ..Default::default()
            },
            clock_hz: 1e9,
            cores: 2,
            threads: Threads::PerLink,
            ..HostSpec::ideal()
        };
        let mut h = Hosts::new(spec, 1);
        let us = 1_000_000;
        // Three threads' work at t=0 on two cores: two start at once, the third waits.
        assert_eq!(h.charge_thread(0, 0, 0, us), us);
        assert_eq!(h.charge_thread(0, 1, 0, us), us);
        assert_eq!(h.charge_thread(0, 2, 0, us), 2 * us);
        // A thread's next piece waits for its last even when a core is idle.
        assert_eq!(h.charge_thread(0, 2, 0, us), 3 * us);
        // Work ready later starts when it is ready, on the core idle the shortest time.
        assert_eq!(h.charge_thread(0, 0, 5 * us, us), 6 * us);
        assert_eq!(h.state[0].core_free_ps, vec![6 * us, us]);
        // Application work (`charge`) is a thread of its own on the same cores.
        assert_eq!(h.charge(0, 0, 0, us), 2 * us);
        assert_eq!(h.state[0].busy_ps, 6 * us);
    }

    /// Packing's sending work by how a packet leaves: a host's own packet pays its
    /// transmit path, a forwarded one the sending half of forwarding; only a packet that
    /// leaves by a packing link pays its packing, and one behind another in its frame no
    /// fixed path.
    #[test]
    fn only_packed_packets_pay_packing() {
        use crate::net::Departure;
        use crate::packet::framing::{OWN, PACKED, TAIL};
        let spec = HostSpec {
            costs: StackCosts {
                tx_packet: 1000.0,
                rx_packet: 1000.0,
                forward_packet: 3000.0,
                pack_packet: 100.0,
                ..Default::default()
            },
            clock_hz: 1e9,
            cores: 1,
            ..HostSpec::ideal()
        };
        let mut h = Hosts::new(spec, 1);
        h.packing = true;
        let ns = 1000;
        let cost = |h: &mut Hosts, framing: u8| {
            let before = h.state[0].busy_ps;
            let d = Departure {
                host: 0,
                local: 0,
                framing,
                frame_bytes: 1518,
                payload_bytes: 1472,
            };
            h.frames_sent(&mut vec![d], 0);
            h.state[0].busy_ps - before
        };
        assert_eq!(cost(&mut h, OWN), 1000 * ns);
        assert_eq!(cost(&mut h, OWN | PACKED), 1100 * ns);
        assert_eq!(cost(&mut h, OWN | PACKED | TAIL), 100 * ns);
        assert_eq!(cost(&mut h, 0), 1500 * ns);
        assert_eq!(cost(&mut h, PACKED), 1600 * ns);
        assert_eq!(cost(&mut h, PACKED | TAIL), 100 * ns);
        // Receiving: the same rule for the fixed receive path.
        assert_eq!(h.packed_fixed_ps(0, h.rx_packet_ps), 1000 * ns);
        assert_eq!(h.packed_fixed_ps(PACKED, h.rx_packet_ps), 1100 * ns);
        assert_eq!(h.packed_fixed_ps(PACKED | TAIL, h.rx_packet_ps), 100 * ns);
    }
}
