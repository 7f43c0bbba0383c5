//! The timeslot engine (`engine.mode = "timeslots"`, Flexplane's emulator model): its
//! slot accounting checked against what it must give exactly, and against the event
//! engine on the same packets.

use wscsim::metrics::{Column, Table};
use wscsim::Sim;

fn run(json: &str) -> Sim {
    let mut s = Sim::from_json(json).unwrap_or_else(|e| panic!("{e}"));
    s.run();
    let inv = s.invariants();
    assert!(inv.ok(), "invariants broken: {inv:?}");
    s
}

/// A 10 Gbit/s switch with `hosts` hosts, UDP sources of 1,472-byte datagrams.
fn star(hosts: u32, workload: &str, mode: &str, duration: &str) -> String {
    format!(
        r#"{{"duration":"{duration}","seed":3,
        "topology":{{"kind":"single_switch","hosts":{hosts},"link":{{"rate":"10Gbps","delay":"1us"}}}},
        "switch":{{"buffer_per_port":"200KB"}},"transport":{{"kind":"udp"}},
        "workload":{{"kind":"udp","packet_size":1472,{workload}}},
        "engine":{{"mode":"{mode}"}}}}"#
    )
}

fn slot_ps(s: &Sim) -> u64 {
    (s.summary()["timeslots"]["slot_ns"].as_f64().unwrap() * 1e3).round() as u64
}

/// One 1,518-byte frame with Ethernet's 20 bytes of preamble and gap at 10 Gbit/s.
const SLOT_PS: u64 = 1538 * 8 * 100;

/// Alone on its path, a datagram never waits: each port sends it in the slot it arrives
/// in, so no port records waiting time and each holds at most one frame.
#[test]
fn a_lone_flow_never_waits() {
    let s = run(&star(
        2,
        r#""sources":[1],"destination":0,"rate":"2Gbps""#,
        "timeslots",
        "2ms",
    ));
    assert_eq!(slot_ps(&s), SLOT_PS);
    let busy: Vec<_> = s
        .net
        .ports()
        .iter()
        .filter(|p| p.stats.tx_pkts > 0)
        .collect();
    assert_eq!(
        busy.len(),
        2,
        "the source's NIC and the switch port to host 0"
    );
    for p in busy {
        assert_eq!(p.stats.wait_ps_sum, 0);
        assert_eq!(p.stats.max_queue_bytes, 1518);
    }
    let c = s.net.counters();
    // What is still on its way at the end: at most the two hops of one datagram.
    assert!(c.sent - c.delivered <= 2, "{c:?}");
    assert_eq!(c.dropped, 0);
}

/// Two sources at 9 Gbit/s each into one host: from the slot the first datagram reaches
/// the switch (it is made at 1.33 us, enters its NIC in slot 2, crosses in slot 2 and
/// lands in slot 3) the port to the destination sends exactly one frame in every slot,
/// and everything beyond that is dropped at its buffer.
#[test]
fn an_overloaded_port_sends_one_frame_per_slot() {
    let s = run(&star(
        3,
        r#""sources":[1,2],"destination":0,"rate":"9Gbps""#,
        "timeslots",
        "3ms",
    ));
    let slots = s.summary()["timeslots"]["slots"].as_u64().unwrap();
    let to_h0 = s
        .net
        .ports()
        .iter()
        .find(|p| p.switch != wscsim::net::NONE && p.peer_node == s.net.host_nodes()[0])
        .unwrap();
    assert_eq!(to_h0.stats.tx_pkts, slots - 3);
    assert_eq!(to_h0.stats.tx_wire_bytes, (slots - 3) * 1538);
    assert!(to_h0.stats.drops > 0);
    let c = s.net.counters();
    assert_eq!(c.dropped, to_h0.stats.drops);
    // A full buffer holds 131 frames of 1,518 bytes.
    assert_eq!(to_h0.stats.max_queue_bytes, 200_000 / 1518 * 1518);
}

fn column<'a>(tables: &'a [Table], table: &str, col: &str) -> &'a Column {
    let t = tables.iter().find(|t| t.name == table).unwrap();
    &t.columns.iter().find(|(n, _)| *n == col).unwrap().1
}

fn ints(c: &Column) -> Vec<i64> {
    match c {
        Column::I64(v) => v.clone(),
        _ => panic!("not integers"),
    }
}

fn floats(c: &Column) -> Vec<f64> {
    match c {
        Column::F64(v) => v.clone(),
        _ => panic!("not floats"),
    }
}

/// Flexplane's stress load (Poisson datagrams, each to a random other host) on a rack of
/// 16 under both engines. Both draw the same datagrams (same generators, same order), so
/// every host sends the same bytes (up to the datagrams made in the last slot). A packet's
/// arrival at a switch port and its departure from it both move to a slot boundary, later
/// by less than one slot each, so (order within a slot aside) its wait there, and every
/// switch port's mean wait, differs by less than one slot between the engines.
#[test]
fn the_same_load_as_the_event_engine() {
    let w = r#""destination":"random","rate":"8Gbps","arrival":"poisson""#;
    let mut ev = Sim::from_json(&star(16, w, "events", "5ms")).unwrap();
    ev.run();
    let mut ts = Sim::from_json(&star(16, w, "timeslots", "5ms")).unwrap();
    ts.run();
    let (te, tt) = (ev.tables(), ts.tables());
    let sent_e = ints(column(&te, "flows", "size_bytes"));
    let sent_t = ints(column(&tt, "flows", "size_bytes"));
    for (a, b) in sent_e.iter().zip(&sent_t) {
        // A datagram made in the last slot is not made by the timeslot engine.
        assert!((a - b).abs() <= 1472, "{a} against {b}");
    }
    let kinds = column(&te, "links", "kind");
    let Column::Str(kinds) = kinds else {
        panic!("kind is text")
    };
    let wait_e = floats(column(&te, "links", "mean_wait_us"));
    let wait_t = floats(column(&tt, "links", "mean_wait_us"));
    let slot_us = SLOT_PS as f64 / 1e6;
    let mut compared = 0;
    for i in 0..kinds.len() {
        if kinds[i] == "switch" {
            assert!(
                (wait_e[i] - wait_t[i]).abs() < slot_us,
                "port {i}: {} against {} us",
                wait_e[i],
                wait_t[i]
            );
            compared += 1;
        }
    }
    assert_eq!(compared, 16);
    assert_eq!(ts.net.counters().dropped, ev.net.counters().dropped);
}

/// A faster link sends as many frames per slot as its rate is a multiple of the slowest;
/// rates that are not whole multiples are refused, naming the engine's mode.
#[test]
fn faster_links_send_several_frames_per_slot() {
    let leaf_spine = |hosts_per_leaf: u32, spines: u32| {
        format!(
            r#"{{"duration":"1ms","topology":{{"kind":"leaf_spine","leaves":2,"spines":{spines},"hosts_per_leaf":{hosts_per_leaf},"link":{{"rate":"10Gbps"}}}},
            "transport":{{"kind":"udp"}},"workload":{{"kind":"udp","destination":"random","rate":"9Gbps"}},
            "engine":{{"mode":"timeslots"}}}}"#
        )
    };
    // 8 hosts of 10 Gbit/s over 2 spines: 40 Gbit/s uplinks, 4 frames per slot.
    let s = run(&leaf_spine(8, 2));
    let most = s
        .net
        .ports()
        .iter()
        .map(|p| (p.rate_bps, p.stats.tx_pkts))
        .collect::<Vec<_>>();
    assert!(most.iter().any(|&(r, n)| r == 40_000_000_000 && n > 0));
    // 6 hosts over 4 spines: 15 Gbit/s uplinks.
    let e = Sim::from_json(&leaf_spine(6, 4)).err().expect("refused");
    assert_eq!(e.path, "engine.mode");
    assert!(e.message.contains("whole multiples"), "{}", e.message);
}

/// Same seed, same tables.
#[test]
fn timeslot_runs_are_deterministic() {
    let w = r#""destination":"random","rate":"9Gbps","arrival":"poisson""#;
    let tables = || {
        let mut s = Sim::from_json(&star(8, w, "timeslots", "2ms")).unwrap();
        s.run();
        format!("{:?}", s.tables())
    };
    assert_eq!(tables(), tables());
}

/// A run in slices (as the front end runs it, for its progress bar) gives the same tables
/// as one in one go.
#[test]
fn slices_change_nothing() {
    let w = r#""destination":"random","rate":"9Gbps","arrival":"poisson""#;
    let json = star(8, w, "timeslots", "2ms");
    let mut whole = Sim::from_json(&json).unwrap();
    whole.run();
    let mut sliced = Sim::from_json(&json).unwrap();
    let mut t = 0;
    while !sliced.run_until(t) {
        t += 333_333_333; // about 333 us, not a whole number of slots: slices end inside them
    }
    assert_eq!(
        format!("{:?}", whole.tables()),
        format!("{:?}", sliced.tables())
    );
    assert_eq!(whole.summary()["timeslots"], sliced.summary()["timeslots"]);
}

/// What needs events at their own times is refused with the field that asked for it.
#[test]
fn what_timeslots_do_not_model_is_refused() {
    let refused = |json: &str, path: &str| {
        let e = Sim::from_json(json).err().expect("refused");
        assert_eq!(e.path, path, "{}", e.message);
        assert!(e.message.contains("timeslots"), "{}", e.message);
    };
    let tcp = r#"{"topology":{"kind":"single_switch","hosts":4},"workload":{"kind":"permutation"},"engine":{"mode":"timeslots"}}"#;
    refused(tcp, "workload.kind");
    let torus = r#"{"topology":{"kind":"torus3d","dims":[3,3,3]},"transport":{"kind":"udp"},"workload":{"kind":"udp","destination":"random","load":0.5},"engine":{"mode":"timeslots"}}"#;
    refused(torus, "topology.kind");
    let host = r#"{"topology":{"kind":"single_switch","hosts":4},"host":{"stack":"linux_2_6_39"},"transport":{"kind":"udp"},"workload":{"kind":"udp","destination":"random","rate":"1Gbps"},"engine":{"mode":"timeslots"}}"#;
    refused(host, "host");
    let threads = r#"{"topology":{"kind":"fat_tree","k":4},"transport":{"kind":"udp"},"workload":{"kind":"udp","destination":"random","rate":"1Gbps"},"engine":{"mode":"timeslots","threads":2}}"#;
    refused(threads, "engine.partitioned");
}
