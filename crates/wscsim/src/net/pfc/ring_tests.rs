//! PFC on hand-made networks driven packet by packet: routes that wait on each other
//! around a ring of switches deadlock, and the same ring with the circle broken loses
//! nothing and delivers everything.

use super::Params;
use crate::engine::EventQueue;
use crate::net::{NetEvent, Network, Upcall};
use crate::packet::{five_tuple_hash, Packet, Proto};
use crate::topology::build::{build_network, test_switch_params};
use crate::topology::{edge_list, LinkParams};

/// `n` switches in a ring, each with one host (host i on switch i), 10 Gbit/s links of
/// 500 ns, shared buffers of 60 KiB, with PFC's defaults if `pfc`.
fn ring(n: usize, pfc: bool) -> Network {
    let mut text = String::new();
    for i in 0..n {
        text += &format!("switch s{i}\nhost h{i}\nlink h{i} s{i}\n");
    }
    for i in 0..n {
        text += &format!("link s{i} s{}\n", (i + 1) % n);
    }
    let g = edge_list::parse(&text, LinkParams::ethernet(10_000_000_000, 500_000)).unwrap();
    let mut sp = test_switch_params();
    sp.shared_buffer_bytes = Some(60 << 10);
    let mut net = build_network(&g, &sp);
    if pfc {
        net.enable_pfc(Params::default().resolve("switch.pfc").unwrap())
            .unwrap();
    }
    net
}

/// Host `src` queues `count` full-size frames for host `dst` at time 0.
fn send(net: &mut Network, ev: &mut EventQueue<NetEvent>, src: u32, dst: u32, count: u32) {
    for seq in 0..count {
        let id = net.pool_mut().alloc(Packet {
            src_host: src,
            dst_host: dst,
            frame_bytes: 1518,
            payload_bytes: 1460,
            seq: u64::from(seq),
            hash: five_tuple_hash(src, dst, 1, 1, Proto::UDP),
            proto: Proto::UDP,
            flow_id: src,
            ..Default::default()
        });
        net.host_transmit(ev, src, id);
    }
}

/// Runs until no event is left (or 1 s); returns the packets delivered.
fn run(net: &mut Network, ev: &mut EventQueue<NetEvent>) -> u64 {
    let mut delivered = 0;
    while let Some(e) = ev.pop_until(1_000_000_000_000) {
        if let Some(Upcall::Deliver { pkt, .. }) = net.handle(ev, e.kind) {
            net.delivered(pkt);
            delivered += 1;
        }
    }
    delivered
}

/// Host i sends `count` frames to host i + `hops` for each i in `senders`, on a ring of
/// `n`; returns the network after the run and the frames delivered.
fn ring_run(n: u32, hops: u32, senders: std::ops::Range<u32>, count: u32) -> (Network, u64) {
    let mut net = ring(n as usize, true);
    let mut ev = EventQueue::new();
    for i in senders {
        send(&mut net, &mut ev, i, (i + hops) % n, count);
    }
    let delivered = run(&mut net, &mut ev);
    (net, delivered)
}

#[test]
fn three_hop_routes_around_a_ring_deadlock() {
    // Host i sends to host i + 3 on a ring of seven: every input from the ring holds
    // frames that go on round the ring, each waits on the next switch's input, around
    // the circle; nothing moves once it closes, and nothing is dropped.
    let (net, delivered) = ring_run(7, 3, 0..7, 400);
    assert!(delivered < 100, "{delivered}");
    let dead = net.pfc_deadlocked_ports();
    let ring_ends = dead
        .iter()
        .filter(|&&p| {
            let pt = &net.ports()[p as usize];
            pt.switch != crate::net::NONE && net.host_of_node(pt.peer_node).is_none()
        })
        .count();
    assert_eq!(
        ring_ends, 7,
        "every ring link's sending end, one way round: {dead:?}"
    );
    for &p in &dead {
        assert!(net.ports()[p as usize].pkts_queued > 0);
    }
    assert_eq!(net.counters().dropped, 0, "lossless, if stuck");
    let pfc = net.pfc().unwrap();
    assert_eq!(pfc.headroom_drops.iter().sum::<u64>(), 0);
}

#[test]
fn the_same_ring_with_the_circle_broken_delivers_everything() {
    // Hosts 0 to 3 only: no flow crosses the link from switch 6 to switch 0, so no wait
    // closes a circle, and every pause is lifted in the end.
    let (net, delivered) = ring_run(7, 3, 0..4, 400);
    assert_eq!(delivered, 1600);
    assert_eq!(net.counters().dropped, 0);
    assert!(net.pfc_deadlocked_ports().is_empty());
    assert_eq!(
        net.pfc().unwrap().held_bytes(),
        0,
        "every input's count back to zero"
    );
    assert!(
        net.counters().control_sent > 0,
        "links with two flows paused upstream"
    );
    assert_eq!(net.counters().control_in_flight(), 0);
}

#[test]
fn without_pfc_the_ring_drops_instead() {
    let mut net = ring(7, false);
    let mut ev = EventQueue::new();
    for i in 0..7 {
        send(&mut net, &mut ev, i, (i + 3) % 7, 400);
    }
    let delivered = run(&mut net, &mut ev);
    assert!(net.counters().dropped > 0);
    assert_eq!(delivered + net.counters().dropped, 2800);
}
