//! What a finished (or paused) simulation hands back: its tables, captures, energy,
//! invariants and summary.

use super::*;
use crate::metrics::report::{Report, ReportCtx};

/// Returns the allocator's free memory to the system. glibc keeps what the simulation's
/// many small and middle-sized allocations freed for reuse, and the tables built next
/// are few large allocations that would not reuse it (measured on the 2,000-node
/// memcached run at 10,000 requests per client: 50 MB less resident after the tables).
pub(super) fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; no allocation is live across it
    // in an inconsistent state (it takes the allocator's locks).
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Where the requests table goes among the result tables (after hosts).
pub(super) const REQUESTS_AT: usize = 6;

/// Invariants checked at the end of every run.
#[derive(Clone, Copy, Debug)]
pub struct Invariants {
    pub packets_sent: u64,
    pub packets_delivered: u64,
    pub packets_dropped: u64,
    pub packets_in_flight: u64,
    pub buffer_violations: u64,
    pub time_reversals: u64,
    /// In a partitioned run, events one partition scheduled for another (or a global one)
    /// sooner than the lookahead allows: the run's order is then not exact.
    pub lookahead_violations: u64,
}

impl Invariants {
    pub fn ok(&self) -> bool {
        self.packets_sent == self.packets_delivered + self.packets_dropped + self.packets_in_flight
            && self.buffer_violations == 0
            && self.time_reversals == 0
            && self.lookahead_violations == 0
    }
}

/// A UDP workload's destinations as the headline sees them.
pub(super) fn udp_pattern(t: crate::workload::udp_source::Target) -> metrics::headline::UdpPattern {
    use crate::workload::udp_source::Target;
    use metrics::headline::UdpPattern;
    match t {
        Target::Random => UdpPattern::Random,
        Target::Neighbours { .. } => UdpPattern::Neighbours,
        _ => UdpPattern::Other,
    }
}

impl Sim {
    /// The memcached requests of this run (empty for other workloads).
    pub fn memcached_requests(&self) -> std::borrow::Cow<'_, [memcached::RequestRecord]> {
        self.apps.memcached_requests()
    }

    pub fn invariants(&self) -> Invariants {
        let c = self.net.counters();
        Invariants {
            packets_sent: c.sent,
            packets_delivered: c.delivered,
            packets_dropped: c.dropped,
            packets_in_flight: self.net.pool().live() - c.control_in_flight(),
            buffer_violations: c.buffer_violations,
            time_reversals: self.ev.past_schedules(),
            lookahead_violations: self.ev.early_mail(),
        }
    }

    /// The result tables, releasing the per-request records once their table is built: a
    /// full-length memcached run holds tens of millions of them, and the front end needs
    /// the memory for the conversion. Later calls see no requests; take the summary first.
    pub fn take_tables(&mut self) -> Vec<Table> {
        let (mut tables, records, pairs) = self.tables_but_requests();
        tables.insert(REQUESTS_AT, memcached::take_requests_table(records, &pairs));
        tables
    }

    /// The result tables, consuming the simulation: everything else it holds (packets,
    /// queues, connections) is released before the requests table is built, which in a
    /// full-length memcached run is the largest thing the run makes.
    pub fn into_tables(mut self) -> Vec<Table> {
        let (mut tables, records, pairs) = self.tables_but_requests();
        drop(self);
        give_back_freed_memory();
        tables.insert(REQUESTS_AT, memcached::take_requests_table(records, &pairs));
        tables
    }

    /// Every table but `requests`, with the records that table is made of (taken) and
    /// what it needs of the network.
    pub(super) fn tables_but_requests(
        &mut self,
    ) -> (
        Vec<Table>,
        Vec<memcached::RequestRecord>,
        memcached::PairSwitches,
    ) {
        let records = self.apps.take_requests();
        let pairs = memcached::PairSwitches::of(&records, &self.net);
        (self.tables_without_requests(), records, pairs)
    }

    /// pcap files of the capture points, by name ("host-3", "tor0-port1"), with how many
    /// packets each holds and saw (more than it holds when `max_packets` capped it).
    pub fn captures(&self) -> Vec<(String, Vec<u8>, u64, u64)> {
        let c = self.net.captures();
        let epoch_s = self
            .scenario
            .metrics
            .capture
            .as_ref()
            .map_or(Ok(0), config::resolve::capture_epoch_s)
            .unwrap_or(0);
        let style = metrics::pcap::PcapStyle {
            epoch_s,
            rcv_window_bytes: self.transports.tcp.params().rcv_window_bytes,
        };
        c.by_point()
            .into_iter()
            .enumerate()
            .map(|(i, (name, records))| {
                (
                    name.to_string(),
                    metrics::pcap::write(&records, &style),
                    c.recorded[i],
                    c.seen[i],
                )
            })
            .collect()
    }

    pub fn tables(&self) -> Vec<Table> {
        let mut tables = self.tables_without_requests();
        let requests = memcached::requests_table(&self.memcached_requests(), &self.net);
        tables.insert(REQUESTS_AT, requests);
        tables
    }

    /// The result tables but `requests` (memcached's), which goes at `REQUESTS_AT`.
    pub(super) fn tables_without_requests(&self) -> Vec<Table> {
        let end = self.ev.now();
        let mut tables = vec![
            metrics::flows_table(
                &self.metrics,
                end,
                &metrics::flow_diagnostics(&self.metrics, &self.transports.tcp, &self.net),
            ),
            metrics::slowdown::slowdown_table(&self.metrics),
            metrics::incast_table(&self.metrics),
            metrics::queue_table(&self.metrics, &self.net),
            metrics::links_table(&self.net, end),
            metrics::drops_table(&self.net),
            metrics::hosts_table(&self.net, &self.hosts, end),
        ];
        let ctx = self.report_ctx();
        self.services.tables(&ctx, &mut tables);
        self.apps.tables(&ctx, &mut tables);
        self.transports.tables(&mut tables);
        tables.extend(self.net.pfc_table(end));
        tables.push(metrics::energy::table(&self.energy(), &self.net));
        if self.scenario.metrics.trace.is_some() {
            tables.push(metrics::cwnd_trace_table(&self.transports.tcp.trace()));
            tables.push(metrics::queue_trace_table(
                self.net.queue_trace(),
                &self.net,
            ));
        }
        tables
    }

    /// The run's energy so far, by component and node.
    pub fn energy(&self) -> metrics::energy::Energy {
        metrics::energy::energy(&self.net, &self.hosts, &self.power, self.ev.now())
    }

    /// Headline figures and run statistics, as JSON (the front end adds wall time and version).
    pub fn summary(&self) -> serde_json::Value {
        let inv = self.invariants();
        let sim_s = self.ev.now() as f64 / 1e12;
        let mut headline = metrics::headline::headline(&metrics::headline::RunView {
            metrics: &self.metrics,
            net: &self.net,
            hosts: &self.hosts,
            udp: &self.transports.udp,
            failed_hosts: &self.failed_hosts,
            udp_target: self.apps.udp_target().map(udp_pattern),
            now_ps: self.ev.now(),
        });
        let ctx = self.report_ctx();
        self.services.headline(&ctx, &mut headline);
        self.apps.headline(&ctx, &mut headline);
        self.transports.headline(&self.net, &mut headline);
        for (k, v) in self.net.pfc_headline(self.ev.now()) {
            headline.insert(k.into(), v);
        }
        metrics::energy::headline(
            &mut headline,
            &self.energy(),
            self.net.n_hosts(),
            self.net.counters().delivered_bytes,
        );
        serde_json::json!({
            "scenario": self.scenario,
            "seed": self.scenario.seed,
            "simulated_seconds": sim_s,
            "events": self.ev.events_processed(),
            "packet_hops": self.net.counters().packet_hops,
            "data_packet_hops": self.net.counters().data_packet_hops,
            "hosts": self.net.n_hosts(),
            "switches": self.net.switches().len(),
            "headline": headline,
            "invariants": {
                "packets_sent": inv.packets_sent,
                "packets_delivered": inv.packets_delivered,
                "packets_dropped": inv.packets_dropped,
                "packets_in_flight": inv.packets_in_flight,
                "buffer_violations": inv.buffer_violations,
                "time_reversals": inv.time_reversals,
                "lookahead_violations": inv.lookahead_violations,
                "ok": inv.ok(),
            },
            "queue_samples_truncated": self.metrics.queue_samples_truncated,
            "timeslots": self.slots.as_ref().map(|s| serde_json::json!({
                "slots": s.done,
                "slot_ns": s.slot_ps as f64 / 1e3,
            })),
            "services": self.services.user_results(),
        })
    }

    /// What the reporters (services, applications, transports) read of the run.
    fn report_ctx(&self) -> ReportCtx<'_> {
        ReportCtx {
            net: &self.net,
            metrics: &self.metrics,
            now_ps: self.ev.now(),
            tcp_in_use: self.transports.tcp.in_use(),
        }
    }
}
