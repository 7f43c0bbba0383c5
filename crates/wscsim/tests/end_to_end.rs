//! End-to-end checks of whole runs: host costs, rings, piggybacked ACKs, the partition
//! rule, link failures, buffers, cut-through, SACK and determinism.

use wscsim::engine::EventQueue;
use wscsim::net::NetEvent;
use wscsim::sim::SimEvent;
use wscsim::Sim;
fn run(json: &str) -> Sim {
    let mut s = Sim::from_json(json).unwrap_or_else(|e| panic!("{e}"));
    s.run();
    let inv = s.invariants();
    assert!(inv.ok(), "invariants broken: {inv:?}");
    s
}

/// One request-response at a time (incast with one server). Each exchange makes 4
/// system calls (client send, server recv, server send, client recv) and one request's
/// work at the server, so more instructions in either lengthen every exchange by exactly
/// their time at the modelled clock and CPI. (Against ideal hosts the difference is
/// 67.2 ns less: there the response also waits behind the server's pure ACK on the NIC.)
#[test]
fn host_costs_add_up_exactly() {
    let exchange_ps = |syscall: u32, app_request: u32| {
        let s = run(&format!(
            r#"{{"duration":"1s","topology":{{"kind":"single_switch","hosts":2,"link":{{"rate":"10Gbps"}}}},
            "host":{{"stack":"ideal","clock_ghz":2.0,"cpi":1.5,"costs":{{"syscall":{syscall},"app_request":{app_request}}}}},
            "transport":{{"delayed_ack":false}},"workload":{{"kind":"incast","senders":1,"block":"100B","request":"30B","iterations":20}}}}"#
        ));
        assert!(s.hosts.costed);
        assert_eq!(s.metrics.incast.len(), 20);
        s.metrics
            .incast
            .iter()
            .map(|r| r.end_ps - r.start_ps)
            .collect::<Vec<_>>()
    };
    let base = exchange_ps(1000, 3000);
    // 1,000 instructions x 1.5 CPI / 2 GHz = 750 ns per system call, 4 per exchange.
    for (b, s) in base.iter().zip(exchange_ps(2000, 3000)) {
        assert_eq!(s - b, 4 * 750_000);
    }
    // 2,000 more instructions of request work = 1.5 us.
    for (b, a) in base.iter().zip(exchange_ps(1000, 5000)) {
        assert_eq!(a - b, 1_500_000);
    }
}

/// A receiver whose CPU cannot keep up drops at its receive ring and counts it.
#[test]
fn a_saturated_cpu_drops_at_its_receive_ring() {
    let s = run(
        r#"{"duration":"20ms","topology":{"kind":"single_switch","hosts":2,"link":{"rate":"10Gbps"}},
        "host":{"stack":"linux_2_6_39","clock_ghz":1.0,"rx_ring_packets":64,"costs":{"tx_packet":0,"per_byte":0}},"transport":{"kind":"udp"},
        "workload":{"kind":"udp","sources":[1],"destination":0,"rate":"9Gbps"}}"#,
    );
    let h = &s.hosts.state[0];
    // 9 Gbit/s of 1,500-byte packets is 750k packets/s (sending costs nothing here);
    // 5,000 instructions at 1 GHz receive at most 200k/s, so most are dropped at the ring.
    assert!(
        h.rx_ring_drops > h.rx_packets,
        "drops {} received {}",
        h.rx_ring_drops,
        h.rx_packets
    );
    assert!(s.hosts.utilisation(0, s.ev.now()) > 0.95);
    let nic = s.net.nic_port(0) as usize;
    assert_eq!(s.net.ports()[nic].stats.drops, h.rx_ring_drops);
}

/// Adaptive interrupt moderation (Intel's 10 GbE driver): a NIC that receives 9 Gbit/s
/// settles at one interrupt per 125 us, 8,000 a second, where interrupting at each packet
/// that finds the CPU idle takes one per packet or two.
#[test]
fn adaptive_moderation_slows_a_busy_nic_to_8000_interrupts_a_second() {
    let scenario = |moderation: &str| {
        format!(
            r#"{{"duration":"50ms","topology":{{"kind":"single_switch","hosts":2,"link":{{"rate":"10Gbps"}}}},
            "host":{{"stack":"linux_3_5","interrupt_moderation":"{moderation}","noise":{{"enabled":false}}}},"transport":{{"kind":"udp"}},
            "workload":{{"kind":"udp","sources":[1],"destination":0,"rate":"9Gbps"}}}}"#
        )
    };
    let adaptive = run(&scenario("adaptive"));
    let h = &adaptive.hosts.state[0];
    let seconds = 0.05;
    assert!(h.rx_packets as f64 > 0.9 * 9e9 * seconds / (1_500.0 * 8.0));
    assert_eq!(h.rx_ring_drops, 0);
    let per_s = h.interrupts as f64 / seconds;
    assert!(
        (7_000.0..9_000.0).contains(&per_s),
        "{per_s} interrupts a second"
    );
    let at_once = run(&scenario("delay"));
    assert!(at_once.hosts.state[0].interrupts > 20 * h.interrupts);
}

/// memcached over TCP links each client-server pair into one bidirectional connection:
/// a response carries the ACK of its request, so a server sends about one packet per
/// request (two without piggybacking: a pure ACK, then the response).
#[test]
fn responses_carry_the_acks_of_requests() {
    let s = run(
        r#"{"duration":"10s","topology":{"kind":"diablo_array","racks":2,"preset":"10g"},
        "transport":{"kind":"tcp"},"workload":{"kind":"memcached","requests_per_client":50}}"#,
    );
    let reqs = s.memcached_requests();
    assert!(reqs.iter().all(|r| r.end_ps != wscsim::engine::NEVER));
    let servers: std::collections::BTreeSet<u32> = reqs.iter().map(|r| r.server).collect();
    let server_pkts: u64 = servers
        .iter()
        .map(|&h| s.net.ports()[s.net.nic_port(h) as usize].stats.tx_pkts)
        .sum();
    let n = reqs.len() as u64;
    assert!(
        server_pkts >= n && server_pkts < n + n / 5,
        "server packets {server_pkts} for {n} requests"
    );
}

/// Closed-loop memcached clients have one request out at a time: each request starts
/// after its client's last response (by a gap), where open-loop clients at the same load
/// overlap theirs; and their next requests, scheduled where a response completes, keep to
/// the client's partition in a partitioned run, with all hosts in one partition (two
/// racks) or spread over two arrays' (32 racks, TCP kept by part) on two threads.
#[test]
fn closed_loop_clients_wait_for_each_response() {
    let json = |closed: bool, racks: u32, requests: u32, engine: &str| {
        format!(
            r#"{{{engine}"duration":"10s","topology":{{"kind":"diablo_array","racks":{racks},"preset":"1g"}},
            "transport":{{"kind":"tcp"}},"workload":{{"kind":"memcached","requests_per_client":{requests},
            "gap_scale":1,"closed_loop":{closed}}}}}"#
        )
    };
    // Per client, whether any request started before the one before it was answered.
    let overlaps = |s: &Sim, requests: usize| {
        let mut by_client = std::collections::BTreeMap::<u32, Vec<(u64, u64)>>::new();
        for r in s.memcached_requests().iter() {
            assert_ne!(r.end_ps, wscsim::engine::NEVER, "every request answered");
            by_client
                .entry(r.client)
                .or_default()
                .push((r.start_ps, r.end_ps));
        }
        let n = by_client.values().map(Vec::len).sum::<usize>();
        assert_eq!(n, by_client.len() * requests);
        by_client.values_mut().any(|v| {
            v.sort();
            v.windows(2).any(|w| w[1].0 <= w[0].1)
        })
    };
    assert!(
        overlaps(&run(&json(false, 2, 30, "")), 30),
        "open loop overlaps"
    );
    assert!(!overlaps(&run(&json(true, 2, 30, "")), 30));
    for (racks, engine) in [
        (2, r#""engine":{"partitioned":true},"#),
        (32, r#""engine":{"threads":2},"#),
    ] {
        let mut s = Sim::from_json(&json(true, racks, 4, engine)).unwrap();
        s.net.set_check_partitions(true);
        s.run();
        assert!(s.invariants().ok(), "{:?}", s.invariants());
        assert!(!overlaps(&s, 4));
    }
}

/// The tables a consumed simulation gives (the requests table built after the rest of the
/// simulation is released) and a taken one's are the tables it gives when asked in place,
/// in the same order, for memcached over UDP (requests lost) and TCP.
#[test]
fn consumed_and_taken_tables_are_the_tables() {
    for proto in ["udp", "tcp"] {
        let json = format!(
            r#"{{"duration":"10s","topology":{{"kind":"diablo_array","racks":2,"preset":"10g"}},
            "transport":{{"kind":"{proto}"}},"workload":{{"kind":"memcached","requests_per_client":40}}}}"#
        );
        let mut s = run(&json);
        let whole = format!("{:?}", s.tables());
        assert!(whole.contains("\"requests\""), "{proto}");
        assert_eq!(format!("{:?}", run(&json).into_tables()), whole, "{proto}");
        assert_eq!(format!("{:?}", s.take_tables()), whole, "{proto}");
    }
}

/// Scenarios with four or more partitions: TCP permutation traffic, incast with costed
/// hosts, a torus all-to-all.
const PARTITIONED_CASES: [&str; 3] = [
    r#"{"duration":"3ms","topology":{"kind":"fat_tree","k":4},"transport":{"rto_min":"1ms"},"workload":{"kind":"permutation"}}"#,
    r#"{"duration":"1s","topology":{"kind":"fat_tree","k":4},"switch":{"buffer":"shared"},
       "host":{"stack":"linux_2_6_39"},"workload":{"kind":"incast","senders":8,"block":"256KiB","iterations":3}}"#,
    r#"{"duration":"1ms","topology":{"kind":"torus3d","dims":[4,4,4]},"transport":{"kind":"udp"},
       "workload":{"kind":"udp","destination":"random","load":0.5}}"#,
];

/// The partition rule: with pods as partitions, every event of the network, host and
/// transport layers changes the state of its own partition only (the check panics
/// otherwise), for TCP permutation traffic, incast and a torus all-to-all.
#[test]
fn events_keep_to_their_partitions() {
    for json in PARTITIONED_CASES {
        let mut s = Sim::from_json(json).unwrap_or_else(|e| panic!("{e}"));
        let parts: std::collections::BTreeSet<_> =
            s.net.nodes().iter().map(|n| n.partition).collect();
        assert!(parts.len() >= 4, "{parts:?}");
        s.net.set_check_partitions(true);
        s.run();
        assert!(s.invariants().ok());
        assert!(s.net.counters().packet_hops > 1000);
    }
}

/// A partitioned run takes each event from its own partition's lane (the check panics
/// otherwise), and nothing one partition schedules for another is sooner than the
/// lookahead (an invariant): the cases above, and memcached on two DIABLO arrays of Linux
/// hosts, whose application threads hand deliveries to memcached.
#[test]
fn a_partitioned_run_takes_events_from_their_lanes() {
    let memcached = r#"{"duration":"10s","topology":{"kind":"diablo_array","racks":32,"preset":"1g"},
        "host":{"stack":"linux_2_6_39","io_model":"epoll"},"transport":{"kind":"tcp"},
        "workload":{"kind":"memcached","requests_per_client":5}}"#;
    for json in PARTITIONED_CASES.into_iter().chain([memcached]) {
        let json = json.replacen('{', r#"{"engine":{"partitioned":true},"#, 1);
        let mut s = Sim::from_json(&json).unwrap_or_else(|e| panic!("{e}"));
        assert!(s.ev.is_partitioned());
        s.net.set_check_partitions(true);
        s.run();
        let inv = s.invariants();
        assert!(inv.ok(), "{json}");
        assert_eq!(inv.lookahead_violations, 0);
        assert!(s.net.counters().packet_hops > 1000);
    }
}

/// A partitioned run whose workload finishes stops at the same place whatever slices it is
/// run in (the Python front end sizes its slices by wall time): incast on a fat tree, whose
/// last block completes in a partition's event. (It failed when the run stopped at the
/// slice's end instead of the window's.)
#[test]
fn a_partitioned_run_stops_at_the_same_place_in_any_slices() {
    let json = r#"{"duration":"10s","engine":{"partitioned":true},
        "topology":{"kind":"fat_tree","k":4},"transport":{"kind":"tcp"},
        "workload":{"kind":"incast","senders":8,"block":"64KiB","iterations":2}}"#;
    let outcome = |step_ps: u64| {
        let mut s = Sim::from_json(json).unwrap();
        while !s.run_until(s.now_ps() + step_ps) {}
        (
            s.ev.events_processed(),
            s.now_ps(),
            s.net.counters().packet_hops,
        )
    };
    let whole = outcome(u64::MAX / 2);
    assert!(whole.0 > 1_000);
    // Slices about as long as the lookahead (1 us here) cut windows often.
    for step in [333_333, 1_500_000, 7_777_777] {
        assert!(outcome(step) == whole, "slices of {step} ps");
    }
}

/// Threads change no result: 2 and 3 threads give the same events, packet-hops, headline
/// figures and drop log as one, with helpers checked to touch only their own partitions,
/// run whole and in slices that cut windows (the cases above, memcached on Linux hosts of
/// two DIABLO arrays, incast on one switch), with the hosts' partitions on the run's own
/// thread and spread over all (`engine.spread_hosts`, taken by the permutations above).
#[test]
fn threads_change_no_result() {
    let memcached = r#"{"duration":"10s","topology":{"kind":"diablo_array","racks":32,"preset":"1g"},
        "host":{"stack":"linux_2_6_39","io_model":"epoll"},"transport":{"kind":"tcp"},
        "workload":{"kind":"memcached","requests_per_client":5}}"#;
    let incast = r#"{"duration":"10s","topology":{"kind":"single_switch","hosts":17},
        "transport":{"kind":"tcp"},"workload":{"kind":"incast","senders":16,"block":"256KiB","iterations":2}}"#;
    // Linux hosts whose hosts' partitions may run on any thread: their CPUs' queues and
    // application threads (per connection) go with their partition.
    let linux = r#"{"duration":"2ms","topology":{"kind":"fat_tree","k":4},"host":{"stack":"linux_2_6_39"},
        "transport":{"rto_min":"1ms"},"workload":{"kind":"permutation"}}"#;
    // Clients that open a new connection every two requests, on hosts that cost nothing.
    let reconnecting = r#"{"duration":"10s","topology":{"kind":"fat_tree","k":4},"transport":{"kind":"tcp"},
        "workload":{"kind":"memcached","requests_per_client":6,"requests_per_connection":2,"server_count":4}}"#;
    // No global event at all (no sampler): what the start put on NICs is heard of only
    // where the start does it.
    let quiet = r#"{"duration":"1ms","topology":{"kind":"fat_tree","k":4},"transport":{"rto_min":"1ms"},
        "workload":{"kind":"permutation"},"metrics":{"max_queue_samples":0}}"#;
    for json in PARTITIONED_CASES
        .into_iter()
        .chain([memcached, incast, linux, reconnecting, quiet])
    {
        let outcome = |threads: u32, spread: bool, step_ps: u64| {
            let engine = format!(r#"{{"engine":{{"threads":{threads},"spread_hosts":{spread}}},"#);
            let json = json.replacen('{', &engine, 1);
            let mut s = Sim::from_json(&json).unwrap_or_else(|e| panic!("{e}"));
            s.net.set_check_partitions(true);
            while !s.run_until(s.now_ps() + step_ps) {}
            let sum = s.summary();
            assert!(s.invariants().ok(), "{json}");
            // What left a NIC was heard of (a view that took none would hold TCP back).
            assert!(!s.net.has_nic_departures(), "{json}");
            (
                sum["events"].clone(),
                sum["packet_hops"].clone(),
                sum["headline"].to_string(),
                format!("{:?}", s.net.drop_log()),
                s.now_ps(),
            )
        };
        // One thread through the queue (hosts kept on it), against every other way:
        // with hosts spread, one thread runs its lanes through views as helpers do.
        let one = outcome(1, false, u64::MAX / 2);
        assert!(one.1.as_u64().unwrap() > 1000, "{json}");
        for spread in [false, true] {
            if spread {
                assert!(outcome(1, spread, u64::MAX / 2) == one, "views: {json}");
            }
            assert!(outcome(2, spread, u64::MAX / 2) == one, "2 threads: {json}");
            assert!(
                outcome(3, spread, 7_777_777) == one,
                "3 threads in slices: {json}"
            );
        }
    }
}

/// Which runs may spread hosts' partitions over threads: TCP permutations may, on hosts
/// that cost no time or Linux hosts (whose CPUs' queues and application threads are kept
/// by host and part), and memcached over TCP (kept by part); finite flows (a shared
/// count) and UDP (streams numbered run-wide) may not.
#[test]
fn only_runs_whose_layers_keep_state_by_partition_spread_hosts() {
    let may = |json: &str| {
        let json = json.replacen('{', r#"{"engine":{"threads":2},"#, 1);
        Sim::from_json(&json)
            .unwrap_or_else(|e| panic!("{e}"))
            .hosts_run_anywhere()
    };
    let fat = r#""topology":{"kind":"fat_tree","k":4},"transport":{"kind":"tcp"}"#;
    assert!(may(&format!(
        r#"{{{fat},"workload":{{"kind":"permutation"}}}}"#
    )));
    let linux = r#""host":{"stack":"linux_2_6_39"},"workload":{"kind":"permutation"}"#;
    assert!(may(&format!(r#"{{{fat},{linux}}}"#)));
    assert!(!may(&format!(
        r#"{{{fat},"workload":{{"kind":"permutation","size":"1MB"}}}}"#
    )));
    assert!(may(&format!(
        r#"{{{fat},"workload":{{"kind":"memcached"}}}}"#
    )));
    assert!(!may(
        r#"{"topology":{"kind":"fat_tree","k":4},"transport":{"kind":"udp"},"workload":{"kind":"memcached"}}"#
    ));
    let udp = r#""topology":{"kind":"fat_tree","k":4},"transport":{"kind":"udp"},"workload":{"kind":"udp","destination":"random","rate":"1Gbps"}"#;
    let udp_sim = format!("{{{udp}}}");
    let mut s = Sim::from_json(&udp_sim.replacen('{', r#"{"engine":{"threads":2},"#, 1)).unwrap();
    s.run_until(1);
    assert!(
        !s.hosts_run_anywhere(),
        "UDP's streams are numbered run-wide"
    );
}

#[test]
#[should_panic(expected = "touched node")]
fn touching_another_partition_is_caught() {
    let mut s = Sim::from_json(
        r#"{"duration":"1ms","topology":{"kind":"fat_tree","k":4},"workload":{"kind":"permutation"}}"#,
    )
    .unwrap();
    // Host 0 is in pod 0 (partition 1); act as partition 2 and send from it.
    let pkt = s.net.pool_mut().alloc(wscsim::packet::Packet {
        dst_host: 15,
        frame_bytes: 64,
        ..Default::default()
    });
    s.net.enter_partition(Some(2));
    let mut q: EventQueue<NetEvent> = EventQueue::new();
    s.net.host_transmit(&mut q, 0, pkt);
}

/// A link that fails loses exactly what is on its wire and in its queues when it fails,
/// and what is sent to it while it is down; then traffic flows again.
#[test]
fn a_failed_link_loses_exactly_its_packets() {
    // Host 1 sends 1,472-byte datagrams at 5 Gbit/s (a 1,500-byte IP packet every
    // 2.4 us, the first at 2.4 us) over 10 Gbit/s links with 500 ns of propagation.
    let s = run(
        r#"{"duration":"3ms","topology":{"kind":"single_switch","hosts":2,"link":{"rate":"10Gbps","delay":"500ns"}},
        "transport":{"kind":"udp"},"workload":{"kind":"udp","sources":[1],"destination":0,"rate":"5Gbps"},
        "failures":[{"link":["h1","switch"],"at":"1ms","until":"2ms"}]}"#,
    );
    let (gap, at, until) = (2_400_000u64, 1_000_000_000u64, 2_000_000_000u64);
    // 1,538 bytes on the wire at 10 Gbit/s, then the propagation delay.
    let flight = 1538 * 800 + 500_000;
    let sends = |t0: u64, t1: u64| (t0.div_ceil(gap).max(1)..t1.div_ceil(gap)).count() as u64;
    // The NIC is idle between datagrams (2.4 us apart, 1.23 us each): nothing queued.
    let on_wire = (1..at.div_ceil(gap))
        .filter(|k| k * gap + flight > at)
        .count() as u64;
    let expected = on_wire + sends(at, until);
    assert_eq!(s.net.counters().link_down_drops, expected);
    assert_eq!(s.net.counters().dropped, expected, "no other losses");
    let st = &s.transports.udp.streams[0];
    assert!(st.recv_pkts > 0 && st.sent_pkts - st.recv_pkts >= expected);
    // Delivery resumed after the link came back.
    let after = sends(until, s.ev.now() - 2 * flight);
    assert!(st.recv_pkts >= sends(0, at) - on_wire + after);
}

/// Events are small values: the queue moves them on every sift, so the per-layer enums
/// must pack into the 12 bytes one flat enum took.
#[test]
fn an_event_is_twelve_bytes() {
    assert!(std::mem::size_of::<SimEvent>() <= 12);
}

#[test]
fn incast_completes_and_conserves_packets() {
    let s = run(
        r#"{"duration":"5s","topology":{"kind":"single_switch","hosts":5,"link":{"rate":"1Gbps"}},
        "switch":{"buffer_per_port":"4KiB"},"transport":{"rto_min":"1ms"},
        "workload":{"kind":"incast","senders":4,"block":"64KiB","iterations":5}}"#,
    );
    assert_eq!(s.metrics.incast.len(), 5);
    assert!(
        s.net.counters().dropped > 0,
        "4 KB per port must drop under incast"
    );
}

#[test]
fn switches_wider_than_the_voq_limit_share_queues() {
    let s = run(
        r#"{"duration":"2s","topology":{"kind":"single_switch","hosts":150},
        "switch":{"buffer":"per_input_port","buffer_per_port":"16KiB"},"transport":{"rto_min":"1ms"},
        "workload":{"kind":"incast","senders":149,"block":"1MiB","iterations":3}}"#,
    );
    assert_eq!(s.metrics.incast.len(), 3);
    assert!(s
        .net
        .ports()
        .iter()
        .all(|p| p.q_count <= wscsim::topology::build::MAX_VOQS));
}

/// Under incast each sender's input holds packets for one output only, so a buffer per
/// virtual output queue holds what a buffer per input does: the same run, event for event
/// (the client's ACKs, the one input with packets for several outputs, never fill 4 KB).
#[test]
fn incast_is_the_same_with_buffers_per_input_or_per_voq() {
    let runs: Vec<_> = ["per_input_port", "per_voq"]
        .iter()
        .map(|b| {
            run(&format!(
                r#"{{"duration":"2s","topology":{{"kind":"single_switch","hosts":9}},
                "switch":{{"buffer":"{b}","buffer_per_port":"4KiB"}},
                "workload":{{"kind":"incast","senders":8,"block":"256KiB","iterations":5}}}}"#
            ))
        })
        .collect();
    let (a, b) = (&runs[0], &runs[1]);
    assert!(
        a.net.counters().dropped > 0,
        "4 KB per input must drop under incast"
    );
    assert_eq!(a.net.counters().dropped, b.net.counters().dropped);
    assert_eq!(a.net.counters().packet_hops, b.net.counters().packet_hops);
    assert_eq!(a.metrics.incast.len(), b.metrics.incast.len());
}

#[test]
fn every_buffer_mode_keeps_its_limits() {
    for buffer in ["per_port", "per_input_port", "per_voq", "shared"] {
        let s = run(&format!(
            r#"{{"duration":"3ms","topology":{{"kind":"fat_tree","k":4}},"switch":{{"buffer":"{buffer}","buffer_per_port":"16KiB"}},
            "transport":{{"rto_min":"1ms"}},"workload":{{"kind":"all_to_all"}}}}"#
        ));
        assert!(s.net.counters().packet_hops > 1000);
    }
}

/// Open-loop UDP with a random destination per datagram: every host receives about its
/// share, nothing is lost at 50% load with deep buffers, and every datagram crossed the
/// switch (two hops each).
#[test]
fn udp_to_random_destinations_spreads_evenly() {
    let s = run(
        r#"{"duration":"20ms","topology":{"kind":"single_switch","hosts":8,"link":{"rate":"10Gbps"}},
        "transport":{"kind":"udp"},"workload":{"kind":"udp","destination":"random","rate":"5Gbps","arrival":"poisson"}}"#,
    );
    assert_eq!(s.metrics.flows.len(), 8);
    assert!(s.metrics.flows.iter().all(|f| f.dst == wscsim::net::NONE));
    let sent: u64 = s.transports.udp.streams.iter().map(|st| st.sent_pkts).sum();
    let got: u64 = s.transports.udp.streams.iter().map(|st| st.recv_pkts).sum();
    assert!(
        sent > 50_000 && sent - got < 100,
        "sent {sent} received {got}"
    );
    // What the switch sent towards each host, against the mean.
    let mean = got as f64 / 8.0;
    for h in 0..8u32 {
        let node = s.net.host_nodes()[h as usize];
        let rx: u64 = s
            .net
            .ports()
            .iter()
            .filter(|p| p.switch != wscsim::net::NONE && p.peer_node == node)
            .map(|p| p.stats.tx_pkts)
            .sum();
        assert!(
            (rx as f64 - mean).abs() < 0.05 * mean,
            "host {h} received {rx}, mean {mean}"
        );
    }
    // Each delivered datagram made two hops; the few still on the way made one or two.
    let hops = s.net.counters().packet_hops;
    assert!(
        hops >= 2 * got && hops <= 2 * sent,
        "hops {hops} sent {sent} received {got}"
    );
}

#[test]
fn cut_through_is_faster_than_store_and_forward_on_an_idle_path() {
    let fct = |fwd: &str| {
        let s = run(&format!(
            r#"{{"duration":"10ms","topology":{{"kind":"fat_tree","k":4,"link":{{"rate":"10Gbps","delay":"100ns"}}}},
            "switch":{{"forwarding":"{fwd}","port_to_port_latency":"100ns"}},
            "workload":{{"kind":"many_to_one","sources":[15],"destination":0,"size":"1400B"}}}}"#
        ));
        let f = s.metrics.flows[0];
        f.end_ps - f.start_ps
    };
    let (saf, ct) = (fct("store_and_forward"), fct("cut_through"));
    // 5 switches on the path: cut-through saves most of a 1.2 us serialisation at each.
    assert!(saf > ct + 4 * 1_000_000, "saf {saf} ct {ct}");
}

#[test]
fn flows_to_one_client_that_also_serves_terminate() {
    // clients = [0] while servers default to every host, host 0 included.
    let s = run(
        r#"{"duration":"50ms","topology":{"kind":"single_switch","hosts":4},
        "workload":{"kind":"flows","clients":[0],"flows":30,"size_cdf":"hadoop","load":0.3}}"#,
    );
    assert_eq!(s.metrics.flows.len(), 30);
    assert!(s.metrics.flows.iter().all(|f| f.dst == 0 && f.src != 0));
}

#[test]
fn sack_repairs_bursts_of_losses_with_fewer_timeouts() {
    let sc = |sack: bool| {
        format!(
            r#"{{"duration":"2s","topology":{{"kind":"single_switch","hosts":9}},"switch":{{"buffer_per_port":"30KiB"}},
            "transport":{{"sack":{sack},"rto_min":"10ms"}},"workload":{{"kind":"many_to_one","destination":0,"size":"2MiB"}}}}"#
        )
    };
    let (with, without) = (run(&sc(true)), run(&sc(false)));
    for s in [&with, &without] {
        assert!(s
            .metrics
            .flows
            .iter()
            .all(|f| f.end_ps != wscsim::engine::NEVER));
        assert!(s.net.counters().dropped > 50);
    }
    let last = |s: &Sim| s.metrics.flows.iter().map(|f| f.end_ps).max().unwrap();
    assert!(
        with.transports.tcp.total_timeouts() < without.transports.tcp.total_timeouts(),
        "{} vs {}",
        with.transports.tcp.total_timeouts(),
        without.transports.tcp.total_timeouts()
    );
    assert!(last(&with) < last(&without));
}

#[test]
fn same_seed_same_result_other_seed_differs() {
    let sc = |seed: u64| {
        format!(
            r#"{{"seed":{seed},"duration":"20ms","topology":{{"kind":"fat_tree","k":4}},"workload":{{"kind":"flows","load":0.4,"size_cdf":"hadoop"}}}}"#
        )
    };
    let key = |s: &Sim| {
        s.metrics
            .flows
            .iter()
            .map(|f| (f.src, f.dst, f.size_bytes, f.end_ps))
            .collect::<Vec<_>>()
    };
    let (a, b, c) = (run(&sc(1)), run(&sc(1)), run(&sc(2)));
    assert_eq!(key(&a), key(&b));
    assert_ne!(key(&a), key(&c));
}

/// A server that forwards pays `host.costs.forward_packet` on its CPU for every packet it
/// forwards: on a ring of 5, a segment from h0 to h2 is forwarded once (at h1), so its
/// delivery takes exactly one forwarding time longer (4,000 instructions at 4 GHz: 1 us).
#[test]
fn forwarding_costs_the_forwarding_server() {
    let fct = |forward: u32| {
        let s = run(&format!(
            r#"{{"duration":"10ms","topology":{{"kind":"torus3d","dims":[5,1,1]}},
            "host":{{"stack":"ideal","clock_ghz":4.0,"cpi":1.0,"costs":{{"forward_packet":{forward}}}}},
            "workload":{{"kind":"many_to_one","sources":[0],"destination":2,"size":"1000B"}}}}"#
        ));
        let f = s.metrics.flows[0];
        assert_ne!(f.end_ps, wscsim::engine::NEVER);
        let forwarded: Vec<u64> = (0..5)
            .map(|h| s.hosts.state.get(h).map_or(0, |st| st.forwarded))
            .collect();
        (f.end_ps - f.start_ps, forwarded)
    };
    let (free, none) = fct(0);
    let (costly, forwarded) = fct(4000);
    assert_eq!(costly - free, 1_000_000);
    assert!(none.iter().all(|&n| n == 0));
    // Only h1 forwards (the data one way, its ACK the other).
    assert!(forwarded[1] >= 1, "{forwarded:?}");
    assert_eq!(forwarded[0] + forwarded[2] + forwarded[3] + forwarded[4], 0);
}

/// A failed node takes all its links down: with failures known at once (an oracle's
/// detection), every packet lost is lost while it is down, either at one of its links or
/// because it is cut off (what is sent to it); the rest go around it.
#[test]
fn a_failed_node_loses_only_what_it_held_and_what_was_for_it() {
    let s = run(
        r#"{"duration":"4ms","topology":{"kind":"torus3d","dims":[4,4,4]},"transport":{"kind":"udp"},
        "workload":{"kind":"udp","destination":"random","load":0.3,"packet_size":"972B"},
        "failure_detection":{"mode":"instant"},
        "failures":[{"node":"h5","at":"1ms","until":"3ms"}]}"#,
    );
    let c = s.net.counters();
    assert!(c.link_down_drops > 0 && c.unroutable_drops > 0);
    assert_eq!(c.dropped, c.link_down_drops + c.unroutable_drops);
    for d in s.net.drop_log() {
        assert!((1_000_000_000..3_000_000_000).contains(&d.time_ps));
    }
    // Unroutable: what others send to h5 (about 1/63 of their datagrams) for 2 ms of the
    // 4; h5's own application does not run while it is down.
    let sent: u64 = s.transports.udp.streams.iter().map(|st| st.sent_pkts).sum();
    let expected = sent as f64 * (1.0 / 63.0) / 2.0;
    let got = c.unroutable_drops as f64;
    assert!(
        got > 0.8 * expected && got < 1.2 * expected,
        "{got} vs {expected}"
    );
}

/// Around a failed link, packets take the shortest working path: on a ring of 6 with h0-h1
/// cut, h1 reaches h0 the other way round, 5 hops, and nothing is lost.
#[test]
fn packets_go_around_a_failed_link() {
    let s = run(
        r#"{"duration":"2ms","topology":{"kind":"torus3d","dims":[6,1,1]},"transport":{"kind":"udp"},
        "workload":{"kind":"udp","sources":[1],"destination":0,"rate":"100Mbps","packet_size":"972B"},
        "failures":[{"link":["h0","h1"],"at":"0ms"}]}"#,
    );
    let st = &s.transports.udp.streams[0];
    assert_eq!(s.net.counters().dropped, 0);
    assert!(st.recv_pkts > 10);
    // Every delivered datagram made 5 hops; the few on their way made fewer.
    let hops = s.net.counters().packet_hops;
    assert!(hops >= 5 * st.recv_pkts && hops <= 5 * st.sent_pkts);
}

/// CamCubeOS Figure 5b's trend at a reduced size: the more servers fail (at random), the
/// less each surviving server receives; the failed servers are drawn from the run's seed.
#[test]
fn throughput_falls_with_the_fraction_of_servers_failed() {
    let median = |fraction: f64| {
        let s = run(&format!(
            r#"{{"duration":"10ms","topology":{{"kind":"torus3d","dims":[5,5,5]}},"transport":{{"kind":"udp"}},
            "workload":{{"kind":"udp","destination":"random","load":1.0}},
            "failures":[{{"random_nodes":{fraction},"at":"0ms"}}]}}"#
        ));
        assert_eq!(
            s.failed_hosts.len(),
            (fraction * 125.0_f64).round() as usize
        );
        s.summary()["headline"]["median_delivered_gbps_per_live_server"]
            .as_f64()
            .unwrap()
    };
    let m: Vec<f64> = [0.0, 0.1, 0.2].into_iter().map(median).collect();
    assert!(m[0] > m[1] && m[1] > m[2], "{m:?}");
}

/// CamCubeOS Figure 4b's arithmetic: servers sending at line rate to their neighbours over
/// L links each send and receive L x (rate / wire bits per frame) packets a second, each
/// costing the camcube preset's send and receive paths; with a receive and a transmit
/// thread per link on any free CPU, the CPU busy is exactly that work, nothing is lost at
/// the rings and the links run full. Pinning each flow's work to one core instead
/// overloads the cores that get two links' work.
#[test]
fn per_link_threads_carry_saturated_links_at_their_cpu_cost() {
    let run_links = |links: u32, threads: &str| -> Sim {
        run(&format!(
            r#"{{"duration":"20ms","topology":{{"kind":"torus3d","dims":[3,3,3]}},
            "host":{{"stack":"camcube","clock_ghz":2.27,"cores":8,"threads":"{threads}"}},
            "workload":{{"kind":"udp","destination":"neighbours","links":{links},"load":1.0,"packet_size":"1472B"}}}}"#
        ))
    };
    // A 1,500-byte IP packet is a 1,518-byte frame and 1,538 bytes on the wire.
    let pps = 1e9 / (1538.0 * 8.0);
    let c = wscsim::host::presets::stack("camcube").unwrap().costs;
    let per_pkt_s = (c.tx_packet + c.rx_packet + 1518.0 * c.packet_per_byte) / 2.27e9;
    for links in [1, 3, 6] {
        let s = run_links(links, "per_link");
        let expected = f64::from(links) * pps * per_pkt_s / 8.0;
        for h in 0..27 {
            let cpu = s.hosts.utilisation(h, s.ev.now());
            assert!(
                (cpu - expected).abs() < 0.01 * expected,
                "{links} links: host {h} {cpu} vs {expected}"
            );
            assert_eq!(s.hosts.state[h as usize].rx_ring_drops, 0);
        }
    }
    // Pinned by the hash of (source, destination), a server's twelve flows (six out, six
    // in) land on its 8 cores unevenly; a core with two of them has 1.2 cores' work, and
    // the links carry less than they could.
    let received = |s: &Sim| -> u64 { s.transports.udp.received_by_host.iter().map(|r| r.0).sum() };
    let per_link = received(&run_links(6, "per_link"));
    let pinned = received(&run_links(6, "per_flow"));
    assert!(
        (pinned as f64) < 0.9 * per_link as f64,
        "pinned {pinned} vs per-link {per_link}"
    );
}

/// Packing: a backlogged torus link sends frames that carry several packets back to back,
/// none beyond the link's MTU. From a port's counters, n packets of 1,500 IP bytes in f
/// frames take 1,500 n + 38 f bytes on the wire (one Ethernet header and wire overhead
/// per frame): at most 6 fit in a 9,000-byte frame, so n / 6 <= f; packing must also pack
/// (f well under n). Without packing f = n.
#[test]
fn packing_fills_frames_up_to_the_mtu() {
    let frames = |pack: bool| -> (u64, u64) {
        let s = run(&format!(
            r#"{{"duration":"20ms","topology":{{"kind":"torus3d","dims":[3,3,3]}},
            "runtime":{{"pack":{pack}}},
            "workload":{{"kind":"udp","destination":"neighbours","links":6,"load":1.0,"packet_size":"1472B"}}}}"#
        ));
        let base = s.net.nodes()[s.net.host_nodes()[0] as usize].port_base as usize;
        let (mut n, mut wire) = (0, 0);
        for pt in &s.net.ports()[base..base + 6] {
            n += pt.stats.tx_pkts;
            wire += pt.stats.tx_wire_bytes;
        }
        assert_eq!((wire - 1500 * n) % 38, 0);
        (n, (wire - 1500 * n) / 38)
    };
    let (n, f) = frames(false);
    assert_eq!(f, n);
    let (n, f) = frames(true);
    assert!(n.div_ceil(6) <= f && f < n / 3, "{n} packets in {f} frames");
}

/// Packing's CPU accounting: each frame pays the fixed sending and receiving paths once,
/// each packet its packing, its unpacking and its bytes. Summed over the cube, the CPU
/// busy is that work for the packets and frames the links carried (less what was still
/// on the wires at the end).
#[test]
fn packed_frames_pay_their_fixed_work_once() {
    let s = run(
        r#"{"duration":"20ms","topology":{"kind":"torus3d","dims":[3,3,3]},
        "host":{"stack":"camcube","clock_ghz":2.27,"cores":8},"runtime":{"pack":true},
        "workload":{"kind":"udp","destination":"neighbours","links":6,"load":1.0,"packet_size":"1472B"}}"#,
    );
    let (mut n, mut wire) = (0u64, 0u64);
    for pt in s.net.ports() {
        n += pt.stats.tx_pkts;
        wire += pt.stats.tx_wire_bytes;
    }
    let f = (wire - 1500 * n) / 38;
    let c = wscsim::host::presets::stack("camcube").unwrap().costs;
    let ps = |instructions: f64| instructions / 2.27e9 * 1e12;
    let per_frame = ps(c.tx_packet + c.rx_packet);
    let per_packet = ps(2.0 * c.pack_packet + 1518.0 * c.packet_per_byte);
    let expected = f as f64 * per_frame + n as f64 * per_packet;
    let busy: u64 = s.hosts.state.iter().map(|h| h.busy_ps).sum();
    assert!(
        (busy as f64 - expected).abs() < 0.01 * expected,
        "busy {busy} ps, expected {expected}"
    );
}
