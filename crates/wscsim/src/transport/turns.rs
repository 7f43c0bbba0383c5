//! Flows taking turns at their host's NIC, one packet each (a NIC's round robin over its
//! queue pairs), for the receiver-driven transports (NDP, EQDS): a flow with credit to
//! spare cannot hold the link against a new one. A host hands its NIC a packet while the
//! NIC holds less than two full frames, and else waits for its timer.

use super::{HostPath, TransportSched};
use crate::engine::{TimePs, NEVER};
use std::collections::VecDeque;

/// Each host's flows with something to send, in turn, and its timer for when its NIC has
/// room (NEVER: none set); which flows wait.
#[derive(Clone, Debug)]
pub struct Turns {
    waiting: Vec<VecDeque<u32>>,
    pub send_at: Vec<TimePs>,
    queued: Vec<bool>,
}

impl Turns {
    pub fn new(hosts: u32) -> Self {
        Turns {
            waiting: vec![VecDeque::new(); hosts as usize],
            send_at: vec![NEVER; hosts as usize],
            queued: Vec::new(),
        }
    }
}

/// A transport whose flows take turns.
pub(super) trait TakesTurns {
    fn turns(&mut self) -> &mut Turns;
    /// Whether flow `id` may send a packet now.
    fn can_send(&self, id: u32) -> bool;
    /// Flow `id` sends its next packet.
    fn send_next<S: TransportSched>(&mut self, path: &mut HostPath<'_, S>, id: u32);
    /// Flow `id`'s sending host.
    fn host_of(&self, id: u32) -> u32;
    /// The frame a full data packet makes on `host`'s link.
    fn frame<S: TransportSched>(&self, path: &HostPath<'_, S>, host: u32) -> u32;
    /// Sets `host`'s send timer for `at`.
    fn arm_send<S: TransportSched>(&mut self, path: &mut HostPath<'_, S>, host: u32, at: TimePs);
}

/// Flow `id` may have something to send: it joins its host's queue (unless it waits there
/// already), which the host serves now unless it waits for its NIC.
pub(super) fn pump<T: TakesTurns, S: TransportSched>(
    t: &mut T,
    path: &mut HostPath<'_, S>,
    id: u32,
) {
    if !t.can_send(id) {
        return;
    }
    let host = t.host_of(id);
    let turns = t.turns();
    if turns.queued.len() <= id as usize {
        turns.queued.resize(id as usize + 1, false);
    }
    if turns.queued[id as usize] {
        return;
    }
    turns.queued[id as usize] = true;
    turns.waiting[host as usize].push_back(id);
    if turns.send_at[host as usize] == NEVER {
        drain(t, path, host);
    }
}

/// Host `host` sends a packet of each flow in its queue in turn while its NIC has room;
/// else it tries again when the NIC will.
pub(super) fn drain<T: TakesTurns, S: TransportSched>(
    t: &mut T,
    path: &mut HostPath<'_, S>,
    host: u32,
) {
    let frame = t.frame(path, host);
    while !t.turns().waiting[host as usize].is_empty() {
        if let Some(at) = path.nic_full_until(host, frame, 2) {
            return t.arm_send(path, host, at);
        }
        let turns = t.turns();
        let id = turns.waiting[host as usize].pop_front().expect("not empty");
        turns.queued[id as usize] = false;
        if !t.can_send(id) {
            continue;
        }
        t.send_next(path, id);
        if t.can_send(id) {
            let turns = t.turns();
            turns.queued[id as usize] = true;
            turns.waiting[host as usize].push_back(id);
        }
    }
}
