//! Headline figures of a run: the few numbers summary.json leads with, per workload.

use crate::engine::{TimePs, NEVER};
use crate::host::Hosts;
use crate::metrics::Metrics;
use crate::net::Network;
use crate::packet::UDP_IP_HEADER_BYTES;
pub use crate::table::lower_median;
use crate::transport::Udp;

/// What the headline needs to know of where UDP sources send (the application layer
/// says, sim.rs passes it down): all-to-all figures are for random destinations, one-hop
/// figures for neighbours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UdpPattern {
    Random,
    Neighbours,
    Other,
}
use serde_json::{Map, Value};

/// What the headline figures are computed from.
pub struct RunView<'a> {
    pub metrics: &'a Metrics,
    pub net: &'a Network,
    pub hosts: &'a Hosts,
    pub udp: &'a Udp,
    /// Hosts that failed whole during the run (sorted).
    pub failed_hosts: &'a [u32],
    /// Where the UDP sources send (None: no UDP source).
    pub udp_target: Option<UdpPattern>,
    pub now_ps: TimePs,
}

pub fn headline(v: &RunView) -> Map<String, Value> {
    let mut h = Map::new();
    incast(&mut h, v.metrics);
    flows(&mut h, v.metrics, v.now_ps);
    torus_all_to_all(&mut h, v);
    torus_link_throughput(&mut h, v);
    key_routing(&mut h, v.net);
    h.insert("drops".into(), v.net.counters().dropped.into());
    if v.net.counters().link_down_drops > 0 {
        h.insert(
            "link_down_drops".into(),
            v.net.counters().link_down_drops.into(),
        );
    }
    if v.net.counters().unroutable_drops > 0 {
        h.insert(
            "unroutable_drops".into(),
            v.net.counters().unroutable_drops.into(),
        );
    }
    if v.hosts.costed {
        let st = &v.hosts.state;
        h.insert(
            "host_rx_ring_drops".into(),
            st.iter().map(|s| s.rx_ring_drops).sum::<u64>().into(),
        );
        let busiest = (0..st.len() as u32)
            .map(|i| v.hosts.utilisation(i, v.now_ps))
            .fold(0.0, f64::max);
        h.insert("max_cpu_utilisation".into(), busiest.into());
        let mut cpu: Vec<f64> = (0..st.len() as u32)
            .map(|i| v.hosts.utilisation(i, v.now_ps))
            .collect();
        cpu.sort_by(f64::total_cmp);
        if !cpu.is_empty() {
            h.insert(
                "median_cpu_utilisation".into(),
                cpu[(cpu.len() - 1) / 2].into(),
            );
        }
    }
    h
}

/// Packets addressed to keys on a torus: where they went, checked by the oracle, and the
/// control plane's work (notices learnt, shortest-path searches).
fn key_routing(h: &mut Map<String, Value>, net: &Network) {
    let Some(k) = net.kbr() else { return };
    let c = &k.counters;
    if c.notices > 0 || k.views.searches > 0 {
        h.insert("failure_notices".into(), c.notices.into());
        h.insert("route_searches".into(), k.views.searches.into());
    }
    if c.key_sent == 0 {
        return;
    }
    h.insert("key_packets_sent".into(), c.key_sent.into());
    h.insert("key_packets_delivered".into(), c.key_delivered.into());
    h.insert("key_packets_misdelivered".into(), c.key_misdelivered.into());
    h.insert("key_packets_dropped".into(), c.key_dropped.into());
    h.insert(
        "key_drop_fraction".into(),
        (c.key_dropped as f64 / c.key_sent as f64).into(),
    );
    if c.hop_limit_drops > 0 {
        h.insert("hop_limit_drops".into(), c.hop_limit_drops.into());
    }
}

fn incast(h: &mut Map<String, Value>, m: &Metrics) {
    if m.incast.is_empty() {
        return;
    }
    let bytes: u64 = m.incast.iter().map(|r| r.bytes).sum();
    let span: u64 = m.incast.iter().map(|r| r.end_ps - r.start_ps).sum();
    h.insert("incast_iterations".into(), m.incast.len().into());
    // One iteration is one request-response exchange for a single server (the RAMCloud
    // read): its mean time is that experiment's latency.
    h.insert(
        "incast_mean_iteration_us".into(),
        (span as f64 / m.incast.len() as f64 / 1e6).into(),
    );
    h.insert(
        "incast_goodput_mbps".into(),
        (bytes as f64 * 8.0 / (span as f64 / 1e12) / 1e6).into(),
    );
}

fn flows(h: &mut Map<String, Value>, m: &Metrics, now_ps: TimePs) {
    if m.flows.is_empty() {
        return;
    }
    let done: Vec<_> = m.flows.iter().filter(|f| f.end_ps != NEVER).collect();
    h.insert("flows".into(), m.flows.len().into());
    h.insert("flows_completed".into(), done.len().into());
    if !done.is_empty() {
        let mean_fct = done
            .iter()
            .map(|f| (f.end_ps - f.start_ps) as f64)
            .sum::<f64>()
            / done.len() as f64
            / 1e6;
        h.insert("mean_fct_us".into(), mean_fct.into());
    }
    let rx: u64 = m.flows.iter().map(|f| f.bytes_received).sum();
    let sim_s = now_ps as f64 / 1e12;
    if sim_s > 0.0 {
        h.insert(
            "aggregate_goodput_gbps".into(),
            (rx as f64 * 8.0 / sim_s / 1e9).into(),
        );
    }
}

/// Each receiving host's TCP goodput over the time it was receiving: the bytes its flows
/// delivered, over the span from the first flow's start to the last byte (`now_ps` when a
/// flow did not finish), in Gbit/s. CamCubeOS's TCP service experiment reports the median.
pub fn inbound_gbps_per_host(m: &Metrics, now_ps: TimePs) -> Vec<f64> {
    let mut span: std::collections::BTreeMap<u32, (u64, TimePs, TimePs)> = Default::default();
    for f in m.flows.iter().filter(|f| f.tcp) {
        let end = if f.end_ps == NEVER { now_ps } else { f.end_ps };
        let e = span.entry(f.dst).or_insert((0, f.start_ps, end));
        e.0 += f.bytes_received;
        e.1 = e.1.min(f.start_ps);
        e.2 = e.2.max(end);
    }
    span.values()
        .filter(|&&(_, a, b)| b > a)
        .map(|&(bytes, a, b)| bytes as f64 * 8.0 / ((b - a) as f64 / 1e12) / 1e9)
        .collect()
}

/// All-to-all UDP (sources sending to random destinations, or a torus's traffic): what each
/// host receives as the destination (traffic a torus server forwards not counted), on the
/// wire and as payload, over the second half of the run once paths have filled (whole-run
/// figures beside them). On a torus, also against the expected all-to-all rate (its links'
/// capacity shared over the mean path length); elsewhere the switched network's own
/// figures stand beside a torus's (CamCubeOS Figure 5a's comparison).
fn torus_all_to_all(h: &mut Map<String, Value>, v: &RunView) {
    if v.udp.streams.is_empty() {
        return;
    }
    let all_to_all = match v.net.torus() {
        // Traffic to keys (churn), or to neighbours: the all-to-all figures would mean
        // nothing.
        Some(_) => v.net.kbr().is_none_or(|k| k.counters.key_sent == 0) && !one_hop(v),
        None => v.udp_target == Some(UdpPattern::Random),
    };
    let secs = v.now_ps as f64 / 1e12;
    let steady_secs = v.now_ps.saturating_sub(v.udp.steady_from_ps) as f64 / 1e12;
    if !all_to_all || steady_secs <= 0.0 {
        return;
    }
    let n = v.net.n_hosts();
    let overhead = v.net.ports().first().map_or(0, |p| p.wire_overhead_bytes) as u64;
    let gbps = |counts: &[(u64, u64)], secs: f64| -> Vec<f64> {
        (0..n)
            .map(|i| {
                let (pkts, frame) = counts.get(i).copied().unwrap_or((0, 0));
                (frame + pkts * overhead) as f64 * 8.0 / secs / 1e9
            })
            .collect()
    };
    let steady = gbps(&v.udp.received_steady, steady_secs);
    let whole = gbps(&v.udp.received_by_host, secs);
    let mean = |x: &[f64]| x.iter().sum::<f64>() / n as f64;
    if let Some(t) = v.net.torus() {
        let link_bps = v.net.ports().first().map_or(0, |p| p.rate_bps);
        let expected = crate::net::routing::torus::expected_all_to_all_bps(t.dims, link_bps) / 1e9;
        h.insert("expected_gbps_per_server".into(), expected.into());
        h.insert(
            "delivered_fraction_of_expected".into(),
            (mean(&steady) / expected).into(),
        );
    }
    h.insert("delivered_gbps_per_server".into(), mean(&steady).into());
    h.insert(
        "min_delivered_gbps_per_server".into(),
        steady.iter().copied().fold(f64::INFINITY, f64::min).into(),
    );
    // CamCubeOS Figure 5b: the median over the servers that never failed (all of them
    // when none did).
    let mut live: Vec<f64> = (0..n as u32)
        .filter(|h| v.failed_hosts.binary_search(h).is_err())
        .map(|h| steady[h as usize])
        .collect();
    if let Some(m) = lower_median(&mut live) {
        h.insert("median_delivered_gbps_per_live_server".into(), m.into());
    }
    h.insert("failed_servers".into(), v.failed_hosts.len().into());
    h.insert(
        "delivered_gbps_per_server_whole_run".into(),
        mean(&whole).into(),
    );
    let payload: u64 = v.udp.streams.iter().map(|s| s.recv_bytes).sum();
    h.insert(
        "goodput_gbps_per_server_whole_run".into(),
        (payload as f64 * 8.0 / secs / 1e9 / n as f64).into(),
    );
}

/// CamCubeOS Figure 4a: on a torus carrying UDP, each server's own traffic (the IP bytes it
/// sent that arrived, plus those it received) over the capacity of the links it sent on,
/// both ways (2 x rate x links); the median and the spread over servers. With
/// `destination = "neighbours"` every packet takes one link, so this is how full the
/// saturated links ran: 1,500/1,538 at most at 1,500 bytes with Ethernet's framing.
fn torus_link_throughput(h: &mut Map<String, Value>, v: &RunView) {
    if v.net.torus().is_none() || v.udp.streams.is_empty() || !one_hop(v) {
        return;
    }
    let secs = v.now_ps as f64 / 1e12;
    let n = v.net.n_hosts();
    let eth = u64::from(v.net.frame_bytes(0, 1000) - 1000);
    let mut own = vec![0u64; n];
    for s in &v.udp.streams {
        own[s.src as usize] += s.recv_bytes + s.recv_pkts * u64::from(UDP_IP_HEADER_BYTES);
    }
    for (i, &(pkts, frame)) in v.udp.received_by_host.iter().enumerate().take(n) {
        // Tiny payloads on a link with less framing than Ethernet's: never below 0.
        own[i] += frame.saturating_sub(pkts * eth);
    }
    let mut fractions: Vec<f64> = (0..n)
        .filter_map(|i| {
            let nd = &v.net.nodes()[v.net.host_nodes()[i] as usize];
            let base = nd.port_base;
            // The torus links (a 7th port goes to the external switch).
            let ports = (base..base + nd.nports.min(6))
                .filter(|&p| v.net.ports()[p as usize].stats.tx_pkts > 0);
            let links = ports.count();
            let cap = 2.0 * links as f64 * v.net.ports()[base as usize].rate_bps as f64 * secs;
            (links > 0 && v.failed_hosts.binary_search(&(i as u32)).is_err())
                .then(|| own[i] as f64 * 8.0 / cap)
        })
        .collect();
    if fractions.is_empty() {
        return;
    }
    fractions.sort_by(f64::total_cmp);
    let median = fractions[(fractions.len() - 1) / 2];
    h.insert("median_link_throughput_fraction".into(), median.into());
    if median > 0.0 {
        h.insert(
            "link_throughput_spread".into(),
            ((fractions[fractions.len() - 1] - fractions[0]) / median).into(),
        );
    }
}

/// Whether the UDP traffic went to torus neighbours only (one link per packet).
fn one_hop(v: &RunView) -> bool {
    v.net.torus().is_some() && v.udp_target == Some(UdpPattern::Neighbours)
}
