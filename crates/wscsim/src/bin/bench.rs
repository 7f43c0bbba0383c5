//! Runs one scenario file (JSON) natively and prints speed figures as JSON:
//! `wscsim-bench scenario.json`. Used by benchmarks/ to measure without Python in the loop.

use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).unwrap_or_else(|| {
        eprintln!("usage: wscsim-bench SCENARIO.json");
        std::process::exit(2)
    });
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(2)
    });
    let t0 = Instant::now();
    let mut sim = match wscsim::Sim::from_json(&text) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2)
        }
    };
    let build_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let mut max_q = 0;
    let step = sim.end_ps() / 50;
    while !sim.run_until(sim.now_ps() + step) {
        max_q = max_q.max(sim.ev.len());
    }
    let run_s = t1.elapsed().as_secs_f64();
    let s = sim.summary();
    let events = s["events"].as_u64().unwrap_or(0);
    let hops = s["packet_hops"].as_u64().unwrap_or(0);
    let sim_s = s["simulated_seconds"].as_f64().unwrap_or(0.0);
    // Bits sent by switch ports: what Flexplane counts as router throughput.
    let switch_bits: u64 = sim
        .net
        .ports()
        .iter()
        .filter(|p| p.switch != wscsim::net::NONE)
        .map(|p| p.stats.tx_wire_bytes * 8)
        .sum();
    let out = serde_json::json!({
        "scenario": sim.scenario.name,
        "hosts": s["hosts"],
        "build_seconds": build_s,
        "wall_seconds": run_s,
        "simulated_seconds": sim_s,
        "events": events,
        "packet_hops": hops,
        "events_per_second": events as f64 / run_s,
        "packet_hops_per_second": hops as f64 / run_s,
        "data_packet_hops": s["data_packet_hops"],
        "data_packet_hops_per_second": s["data_packet_hops"].as_u64().unwrap_or(0) as f64 / run_s,
        "simulated_to_wall": sim_s / run_s,
        "switch_gbit_per_wall_second": switch_bits as f64 / 1e9 / run_s,
        "peak_rss_mib": peak_rss_mib(),
        "event_queue_len_max_sampled": max_q,
        "invariants_ok": s["invariants"]["ok"],
        "packets_in_flight_at_end": s["invariants"]["packets_in_flight"],
        "packet_pool_slots": sim.net.pool().capacity_used(),
        "headline": s["headline"],
    });
    println!("{}", serde_json::to_string_pretty(&out).unwrap());
}

/// Peak resident set size of this process, from /proc (Linux), in MiB.
fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(f64::NAN)
}
