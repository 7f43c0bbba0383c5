//! CamCubeOS's key-value store end to end: operations against a model of what a single
//! sequential client must see, and acknowledged writes kept through server failures.

use std::collections::BTreeMap;
use wscsim::services::kv_clients::{OpKind, Status};
use wscsim::Sim;

fn run(json: &str) -> Sim {
    let mut s = Sim::from_json(json).unwrap_or_else(|e| panic!("{e}"));
    s.run();
    let inv = s.invariants();
    assert!(inv.ok(), "invariants broken: {inv:?}");
    s
}

/// One client, one operation at a time: every answer is what a map with versions would
/// give (a lookup sees the last write, a compare-and-swap succeeds exactly when it expects
/// the current version, a delete leaves the key missing and bumps its version).
#[test]
fn a_sequential_client_sees_a_versioned_map() {
    let s = run(
        r#"{"duration":"60s","seed":5,"topology":{"kind":"torus3d","dims":[3,3,3]},
        "workload":{"kind":"kv","clients":[13],"operations":400,"keys":8,"value_size":"20KB",
        "mix":{"insert":1,"lookup":1,"delete":0.3,"cas":1}}}"#,
    );
    let k = s.services.kv().unwrap();
    assert!(k.done() && s.finished());
    let mut model: BTreeMap<u32, (u32, bool)> = BTreeMap::new();
    let mut seen = [0usize; 3];
    for o in &k.clients.ops {
        let (version, live) = model.get(&o.key).copied().unwrap_or((0, false));
        let expect = match o.kind {
            OpKind::Lookup if live => (Status::Ok, version),
            OpKind::Lookup => (Status::Missing, 0),
            OpKind::Cas
                if !live && o.expect_version != 0 || live && o.expect_version != version =>
            {
                (Status::Conflict, version)
            }
            _ => (Status::Ok, version + 1),
        };
        assert_eq!((o.status, o.version), expect, "{o:?} against {model:?}");
        if o.status == Status::Ok && o.kind != OpKind::Lookup {
            model.insert(o.key, (o.version, o.kind != OpKind::Delete));
        }
        seen[o.status as usize] += 1;
    }
    assert!(
        seen.iter().all(|&n| n > 10),
        "every outcome occurs: {seen:?}"
    );
}

/// Inserts from eight servers while two neighbouring servers fail for good: with three
/// replicas every acknowledged write is still held by a live server (the oracle), clients
/// whose operation was cut off sent it again, and after `rereplicate_after` the primaries
/// copied objects to the servers that took the failed ones' places. With one replica the
/// same failures lose writes, so the oracle can tell.
#[test]
fn acknowledged_writes_survive_fewer_than_r_failures() {
    let sc = |replicas: u32| {
        format!(
            r#"{{"duration":"60s","seed":2,"topology":{{"kind":"torus3d","dims":[3,3,3]}},
            "workload":{{"kind":"kv","clients":[0,1,2,3,5,6,7,8],"outstanding":2,"operations":400,
            "keys":5000,"value_size":"100KB","disk":"none","replicas":{replicas},"rereplicate_after":"50ms"}},
            "failures":[{{"node":"h4","at":"100ms"}},{{"node":"h13","at":"150ms"}}]}}"#
        )
    };
    let three = run(&sc(3));
    let k = three.services.kv().unwrap();
    assert!(k.done(), "every operation answered");
    let h = three.summary()["headline"].clone();
    assert_eq!(h["kv_acknowledged_writes_lost"], 0, "{h}");
    assert!(k.counters.retries > 0, "{:?}", k.counters);
    assert!(k.counters.repairs > 0, "{:?}", k.counters);
    let one = run(&sc(1));
    let lost = one.summary()["headline"]["kv_acknowledged_writes_lost"]
        .as_u64()
        .unwrap();
    assert!(lost > 0);
}
