//! The applications of a run: how a workload's specification becomes applications and
//! connections, and how timers and transport notes reach them (through the hosts'
//! application threads when hosts cost time).

use super::{memcached, udp_source, App, AppEvent, AppSched, AppsBuild, Ctx, WorkloadSpec};
use crate::engine::TimePs;
use crate::host::threads::{AppThreads, Delivery};
use crate::host::Hosts;
use crate::metrics::Metrics;
use crate::net::Network;
use crate::transport::{Note, Tcp, Transports, Udp};

/// The layers below the applications, borrowed for one call.
pub struct Stack<'a, S> {
    pub ev: &'a mut S,
    pub net: &'a mut Network,
    pub hosts: &'a mut Hosts,
    /// The run's transports (`transport::builtin_transports!`).
    pub transports: &'a mut Transports,
    pub metrics: &'a mut Metrics,
}

pub struct Apps {
    pub list: Vec<App>,
    /// Driver applications still working; 0 means the workload is done.
    pub active: u32,
    /// Whether the workload ends by itself (incast, finite flows), fixed at build.
    pub has_end: bool,
    pub end_ps: TimePs,
    /// Application threads, for hosts that cost time: one set per part of the hosts (a
    /// partitioned run's, `Network::host_parts`), touched only by its hosts' events (each
    /// on cache lines of its own: parts on different threads write them at once).
    threads: Vec<OwnLines<AppThreads<Note>>>,
    /// Whether they keep their state by host (`run_in_partitions`), fixed at build.
    in_partitions: bool,
    /// The transports' notes being handed out (`dispatch_pending`).
    notes: Vec<Note>,
}

impl Apps {
    /// The applications of `spec`, with the connections they use opened on `tcp`; hosts'
    /// application threads kept by TCP's parts (`Tcp::host_parts`).
    pub fn build(
        spec: WorkloadSpec,
        tcp: &mut Tcp,
        seed: u64,
        n_hosts: u32,
        end_ps: TimePs,
    ) -> Apps {
        let in_partitions = spec.runs_in_partitions();
        let list = spec.applications(&mut AppsBuild { tcp, seed, n_hosts });
        let has_end = list.iter().any(App::ends_by_itself);
        let parts = tcp.parts().len();
        Apps {
            list,
            active: 0,
            has_end,
            end_ps,
            threads: (0..parts as u32)
                .map(|p| OwnLines(AppThreads::for_part(p, parts)))
                .collect(),
            in_partitions,
            notes: Vec::new(),
        }
    }

    /// The application threads that hold the delivery in `slot` (an `AppNote`'s).
    fn threads_of_slot(&self, slot: u32) -> usize {
        AppThreads::<Note>::part_of_slot(slot, self.threads.len())
    }

    /// Whether the applications keep their state by host (`WorkloadKind::runs_in_partitions`).
    pub fn run_in_partitions(&self) -> bool {
        self.in_partitions
    }

    /// A copy of the applications for another thread, which runs the hosts' partitions it
    /// is given: it shares the applications and their hosts' threads, and has its own notes
    /// in hand (`AppsView`).
    ///
    /// # Safety
    ///
    /// Every application runs in partitions (`run_in_partitions`), and until the view is
    /// dropped each host's state is touched by one thread at a time (the one running its
    /// partition), passing between threads only where they meet; `self` is neither
    /// dropped nor moved, and touches no host a view's thread runs meanwhile.
    pub unsafe fn view(&self) -> AppsView {
        let mut v = std::mem::ManuallyDrop::new(std::ptr::read(self));
        // Its own part, written without dropping the copy.
        std::ptr::write(&mut v.notes, Vec::new());
        AppsView {
            apps: v,
            active: self.active,
        }
    }

    /// Whether every driver application has finished.
    pub fn done(&self) -> bool {
        self.active == 0 && self.has_end
    }

    fn ctx<'a, S>(s: &'a mut Stack<S>, active: &'a mut u32, end_ps: TimePs) -> Ctx<'a, S> {
        Ctx {
            ev: &mut *s.ev,
            net: &mut *s.net,
            hosts: &mut *s.hosts,
            transports: &mut *s.transports,
            metrics: &mut *s.metrics,
            active,
            end_ps,
        }
    }

    pub fn start(&mut self, s: &mut Stack<impl AppSched>) {
        for id in 0..self.list.len() {
            let mut ctx = Self::ctx(s, &mut self.active, self.end_ps);
            self.list[id].start(id as u32, &mut ctx);
        }
        self.dispatch_notes(s);
    }

    pub fn handle(&mut self, s: &mut Stack<impl AppSched>, e: AppEvent) {
        let (app, tag) = e.app_tag();
        let mut ctx = Self::ctx(s, &mut self.active, self.end_ps);
        self.list[app as usize].on_timer(app, tag, &mut ctx);
        self.dispatch_notes(s);
    }

    /// An application thread got to the delivery held in `slot`.
    pub fn on_thread_ran(&mut self, s: &mut Stack<impl AppSched>, slot: u32) {
        let part = self.threads_of_slot(slot);
        let h = self.threads[part].take(slot);
        let core_free = |s: &Stack<_>| s.hosts.free_ps(h.host, h.core as usize);
        let before = core_free(s);
        self.deliver_note(s, h.item);
        let after = core_free(s);
        self.threads[part].ran(&h, before, after);
        self.dispatch_notes(s);
    }

    /// Hands transport notes to their applications (which may cause more notes).
    #[inline]
    pub fn dispatch_notes(&mut self, s: &mut Stack<impl AppSched>) {
        if !s.transports.has_notes() {
            return;
        }
        self.dispatch_pending(s);
    }

    #[inline(never)]
    fn dispatch_pending(&mut self, s: &mut Stack<impl AppSched>) {
        // The notes' vector is kept between calls (no allocation per event).
        let mut notes = std::mem::take(&mut self.notes);
        while s.transports.has_notes() {
            s.transports.take_notes(&mut notes);
            for n in notes.drain(..) {
                if s.hosts.costed {
                    self.hold_for_thread(s, n);
                } else {
                    self.deliver_note(s, n);
                }
            }
        }
        self.notes = notes;
    }

    fn deliver_note(&mut self, s: &mut Stack<impl AppSched>, n: Note) {
        let app = match n {
            Note::Delivered { app, .. }
            | Note::Closed { app, .. }
            | Note::Datagram { app, .. }
            | Note::Dma { app, .. } => app,
        };
        let mut ctx = Self::ctx(s, &mut self.active, self.end_ps);
        self.list[app as usize].on_note(n, &mut ctx);
    }

    /// On a host that costs time, a delivery reaches the application when its thread has run.
    fn hold_for_thread(&mut self, s: &mut Stack<impl AppSched>, n: Note) {
        let d = match n {
            Note::Delivered {
                conn, total, host, ..
            } => Delivery {
                host,
                flow: conn,
                tcp: true,
                bytes: s.transports.tcp.take_unread(host, conn, total),
                epoch: s.transports.tcp.epoch(host, conn),
            },
            // The end of the stream: a read that returns nothing.
            Note::Closed { conn, host, .. } => Delivery {
                host,
                flow: conn,
                tcp: true,
                bytes: 0,
                epoch: s.transports.tcp.epoch(host, conn),
            },
            Note::Datagram {
                stream,
                host,
                payload_bytes,
                ..
            } => Delivery {
                host,
                flow: stream,
                tcp: false,
                bytes: payload_bytes as u64,
                epoch: 0,
            },
            // A DMA completion needs no thread of the stack to reach the library.
            Note::Dma { .. } => return self.deliver_note(s, n),
        };
        let part = s.transports.tcp.part_of_host(d.host);
        self.threads[part].hold(s.hosts, s.ev, n, d);
    }

    /// The host a host timer (`AppEvent::host_timer`) of application `app` with tag `tag` acts at.
    pub fn timer_host(&self, app: u32, tag: u32) -> u32 {
        self.list[app as usize].timer_host(tag)
    }

    /// The host whose application thread the delivery in `slot` waits for.
    pub fn held_host(&self, slot: u32) -> Option<u32> {
        self.threads[self.threads_of_slot(slot)]
            .peek(slot)
            .map(|h| h.host)
    }

    /// Starts loading the connection state the delivery in `slot` will touch.
    pub fn prefetch_held(&self, slot: u32) {
        if let Some(h) = self.threads[self.threads_of_slot(slot)].peek(slot) {
            if let Note::Delivered { app, conn, .. }
            | Note::Datagram {
                app, stream: conn, ..
            } = h.item
            {
                if let Some(a) = self.list.get(app as usize) {
                    a.prefetch_conn(h.host, conn);
                }
            }
        }
    }

    /// Closes the applications' records at the end of the run.
    pub fn finish(&mut self, udp: &Udp, metrics: &mut Metrics) {
        for a in &mut self.list {
            a.finish(udp, metrics);
        }
    }

    /// The run's UDP source with its application id (the timeslot engine drives it).
    pub fn udp_source_mut(&mut self) -> Option<(u32, &mut udp_source::UdpSource)> {
        self.list
            .iter_mut()
            .enumerate()
            .find_map(|(id, a)| match a {
                App::Udp(s) => Some((id as u32, s)),
                _ => None,
            })
    }

    /// Where the run's UDP sources send (None: no UDP source).
    pub fn udp_target(&self) -> Option<udp_source::Target> {
        self.list.iter().find_map(|a| match a {
            App::Udp(s) => Some(s.destination),
            _ => None,
        })
    }

    /// The memcached requests of this run (empty for other workloads).
    pub fn memcached_requests(&self) -> std::borrow::Cow<'_, [memcached::RequestRecord]> {
        self.list
            .iter()
            .find_map(|a| match a {
                App::Memcached(m) => Some(m.requests()),
                _ => None,
            })
            .unwrap_or_default()
    }

    /// Whether an application's parts hand each other mail where windows close
    /// (`Application::meets_at_windows`).
    pub fn meet_at_windows(&self) -> bool {
        self.list.iter().any(App::meets_at_windows)
    }

    /// Where a partitioned run's windows close: applications hand their parts' mail over,
    /// and those that finished are counted (`Application::after_window`).
    pub fn after_window(&mut self) {
        for a in &mut self.list {
            if a.after_window() {
                self.active -= 1;
            }
        }
    }

    /// Takes the per-request records out (to build their table from them); none remain.
    pub fn take_requests(&mut self) -> Vec<memcached::RequestRecord> {
        self.list
            .iter_mut()
            .find_map(|a| match a {
                App::Memcached(m) => Some(m.take_requests()),
                _ => None,
            })
            .unwrap_or_default()
    }
}

impl crate::metrics::report::Report for Apps {
    fn tables(&self, ctx: &crate::metrics::report::ReportCtx, out: &mut Vec<crate::table::Table>) {
        self.list.iter().for_each(|a| a.report().tables(ctx, out));
    }

    fn headline(
        &self,
        ctx: &crate::metrics::report::ReportCtx,
        h: &mut crate::metrics::report::Headline,
    ) {
        self.list.iter().for_each(|a| a.report().headline(ctx, h));
    }
}

/// A value on cache lines of its own (128 bytes: two lines, as adjacent-line prefetchers
/// fetch them in pairs).
#[repr(align(128))]
struct OwnLines<T>(T);

impl<T> std::ops::Deref for OwnLines<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> std::ops::DerefMut for OwnLines<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

/// Another thread's copy of the applications (`Apps::view`), with the count of active
/// applications it was made with.
pub struct AppsView {
    apps: std::mem::ManuallyDrop<Apps>,
    active: u32,
}

// SAFETY: see `Apps::view`: the view and the applications touch disjoint state until
// they meet, which is what sending it to another thread needs.
unsafe impl Send for AppsView {}

impl AppsView {
    pub fn apps(&mut self) -> &mut Apps {
        &mut self.apps
    }

    pub fn apps_ref(&self) -> &Apps {
        &self.apps
    }

    /// Where the threads meet: the view's applications changed nothing that is not theirs.
    /// (The count of active applications is the simulation's thread's: applications kept
    /// in parts count themselves done where the partitions meet, `Apps::after_window`.)
    pub fn check(&self) {
        assert_eq!(
            self.active, self.apps.active,
            "an application running in partitions changed the count of active applications"
        );
    }
}

impl Drop for AppsView {
    fn drop(&mut self) {
        let v = &mut *self.apps;
        // SAFETY: this field was written by `view` and is the view's alone; the rest is
        // the applications' and is not dropped here.
        unsafe {
            drop(std::ptr::read(&v.notes));
        }
    }
}
