//! A partitioned run's packet slots stay bounded when partitions send more packets than
//! they receive (each arena gets back only the packets that end in its partition): free
//! slots move between arenas where windows close (`PacketPool::rebalance`). Before that,
//! both runs below made a new slot for nearly every packet sent.

use wscsim::Sim;

/// Packet slots ever made by a partitioned run of `json` lasting `duration`.
fn slots_made(json: &str, duration: &str) -> usize {
    let json = json.replace("DURATION", duration);
    let mut sim = Sim::from_json(&json).expect("a valid scenario");
    sim.run();
    assert!(sim.summary()["invariants"]["ok"].as_bool().unwrap());
    sim.net.pool().capacity_used()
}

/// Twice the simulated time makes at most one more chunk of slots (4,096).
fn assert_bounded(json: &str, short: &str, long: &str) {
    let (a, b) = (slots_made(json, short), slots_made(json, long));
    assert!(b <= a + 4096, "{a} slots after {short}, {b} after {long}");
}

#[test]
fn one_way_flows_between_partitions_reuse_their_slots() {
    // Four 10 Gbit/s flows from pod 0 to pod 1 of a k=4 fat tree: the senders' partition
    // gets back only the ACKs (about half as many packets as it sends).
    let cm = std::env::temp_dir().join(format!("wscsim_one_way_{}.cm", std::process::id()));
    let flows: Vec<String> = (0..4)
        .map(|i| format!("{i}->{} id {} start 0 size 2000000000", i + 4, i + 1))
        .collect();
    std::fs::write(
        &cm,
        format!("Nodes 16\nConnections 4\n{}\n", flows.join("\n")),
    )
    .unwrap();
    let json = r#"{"name": "one-way", "seed": 1, "duration": "DURATION",
        "topology": {"kind": "fat_tree", "k": 4, "link": {"rate": "10Gbps", "delay": "500ns"}},
        "transport": {"kind": "tcp"}, "workload": {"kind": "flows", "matrix": "MATRIX"},
        "metrics": {"max_queue_samples": 0}, "engine": {"partitioned": true}}"#
        .replace("MATRIX", cm.to_str().unwrap());
    let result = std::panic::catch_unwind(|| assert_bounded(&json, "20ms", "40ms"));
    std::fs::remove_file(&cm).ok();
    result.unwrap();
}

#[test]
fn packets_sent_by_global_events_reuse_their_slots() {
    // UDP sources are global events: every packet comes from the global events' arena and
    // is freed in the partition (a torus slab) where it arrives.
    let json = r#"{"name": "torus-udp", "seed": 1, "duration": "DURATION",
        "topology": {"kind": "torus3d", "dims": [4, 4, 4]}, "transport": {"kind": "udp"},
        "workload": {"kind": "udp", "destination": "random_key", "rate": "100Mbps",
                     "packet_size": "1000B"},
        "metrics": {"max_queue_samples": 0}, "engine": {"partitioned": true}}"#;
    assert_bounded(json, "50ms", "100ms");
}
