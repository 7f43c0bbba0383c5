//! Partitions of the network: which wires join them, the lookahead, where they meet, and
//! the views through which threads run fabric partitions side by side.

use super::{Network, NodeKind, PktId, Wire};
use crate::engine::{PartitionId, TimePs};
use std::mem::ManuallyDrop;

impl Network {
    /// Prepares a partitioned run: with `split_hosts`, gives hosts partitions of their own
    /// where they can (`split_hosts_from_switches`); marks the wires between partitions `remote` and
    /// returns the lookahead, the least time from the start of a packet's transmission onto
    /// such a wire to its arrival event (the least frame's serialisation, propagation and
    /// the far switch's port-to-port latency: `least_wire_delay_ps`), and the number of
    /// partitions. Err names a wire between partitions with no delay.
    pub fn partition_wires(&mut self, split_hosts: bool) -> Result<(TimePs, usize), String> {
        if split_hosts {
            self.split_hosts_from_switches();
        }
        let least_frame_bytes = self.least_frame_bytes();
        let mut lookahead = TimePs::MAX;
        let mut n = 1;
        for port in 0..self.ports.len() {
            let pt = &self.ports[port];
            let from = self.nodes[pt.node as usize].partition;
            let w = &mut self.wires[port];
            let to = self.nodes[w.to_node as usize].partition;
            n = n.max(usize::from(from.max(to)) + 1);
            if from == to {
                continue;
            }
            let delay = least_wire_delay_ps(pt, least_frame_bytes);
            if delay == 0 {
                return Err(format!(
                    "the link from {} to {} joins two partitions with no delay",
                    self.node_names[pt.node as usize], self.node_names[w.to_node as usize]
                ));
            }
            lookahead = lookahead.min(delay);
            w.remote = true;
            w.to_partition = to;
        }
        Ok((lookahead, n))
    }

    /// The fewest bytes any frame in this network has: the least, over its links'
    /// technologies, of a frame with no payload (`LinkTech::frame_bytes`: header and
    /// trailer, padded to the technology's minimum). Every frame is framed by one of them.
    fn least_frame_bytes(&self) -> u64 {
        let least = self.techs.iter().map(|t| t.frame_bytes(0)).min();
        u64::from(least.unwrap_or(0))
    }

    /// Moves the hosts of each partition that also holds switches into a partition of
    /// their own (numbered after the builder's, in its order): the switches' partitions are
    /// then fabric only, and a thread that runs them never touches a host, its transport or
    /// its applications. Left as built when a link between a host and its switch has no
    /// delay (nothing would separate the two), or when the ids would run out.
    fn split_hosts_from_switches(&mut self) {
        let n = self.nodes.iter().map(|nd| usize::from(nd.partition) + 1);
        let n = n.max().unwrap_or(1);
        if 2 * n > usize::from(PartitionId::MAX) {
            return;
        }
        let mut has_switch = vec![false; n];
        for nd in &self.nodes {
            has_switch[usize::from(nd.partition)] |= nd.kind != NodeKind::Host;
        }
        for (port, pt) in self.ports.iter().enumerate() {
            let (a, b) = (
                &self.nodes[pt.node as usize],
                &self.nodes[self.wires[port].to_node as usize],
            );
            let host_link = (a.kind == NodeKind::Host) != (b.kind == NodeKind::Host);
            if host_link && a.partition == b.partition && pt.prop_ps + pt.peer_delay_ps == 0 {
                return;
            }
        }
        let mut hosts_of: Vec<Option<PartitionId>> = vec![None; n];
        let mut next = n as PartitionId;
        for nd in self.nodes.iter_mut() {
            let p = usize::from(nd.partition);
            if nd.kind == NodeKind::Host && has_switch[p] {
                nd.partition = *hosts_of[p].get_or_insert_with(|| {
                    next += 1;
                    next - 1
                });
            }
        }
    }

    /// Per partition (of `n`): whether it holds no host, so that its events are switches'
    /// alone and may run on any thread.
    pub fn fabric_only(&self, n: usize) -> Vec<bool> {
        let mut fabric = vec![true; n];
        for nd in &self.nodes {
            fabric[usize::from(nd.partition)] &= nd.kind != NodeKind::Host;
        }
        fabric
    }

    /// Per partition (of `n`), the group it runs with on one thread: a hosts' partition
    /// with the partition of the switch its first host's link leads to (a pod's or a
    /// rack's hosts with their switches, so that a packet between a host and its switch
    /// stays in one core's cache), any other partition alone.
    pub fn partition_groups(&self, n: usize) -> Vec<u32> {
        let mut group: Vec<u32> = (0..n as u32).collect();
        let mut seen = vec![false; n];
        for &node in &self.host_nodes {
            let p = usize::from(self.nodes[node as usize].partition);
            if !std::mem::replace(&mut seen[p], true) {
                let port = self.nodes[node as usize].port_base as usize;
                let far = self.wires[port].to_node as usize;
                group[p] = u32::from(self.nodes[far].partition);
            }
        }
        group
    }

    /// Ports per partition (of `n`): a first guess of the work each brings.
    pub fn ports_per_partition(&self, n: usize) -> Vec<u64> {
        let mut ports = vec![0; n];
        for pt in &self.ports {
            ports[usize::from(self.nodes[pt.node as usize].partition)] += 1;
        }
        ports
    }

    /// Whether packets sent on wires between partitions wait for the partitions to meet.
    #[inline]
    pub fn has_remote_out(&self) -> bool {
        !self.remote_out.is_empty()
    }

    /// Where partitions meet: the packets this network sent on wires between partitions
    /// since the last meeting go on their wires (a view's go in `absorb`).
    pub fn put_remote_on_wires(&mut self) {
        put_on_wires(&mut self.wires, &mut self.remote_out);
    }

    /// A view of this network for a thread that runs fabric partitions: it shares the
    /// nodes, ports, queues, schemes and wires, and has its own counters, drop log, free
    /// list of packets and packets for other partitions, which `absorb` takes back.
    ///
    /// # Safety
    ///
    /// While the view is in use, it and this network (and any other view) touch disjoint
    /// parts of the shared state: each only the nodes, ports, queues and wires of the
    /// partitions it runs, and the packets those hold (`PacketPool::view`), with state
    /// passing between them only where they meet; the shared vectors do not grow. The view
    /// must be dropped before this network is. (The shared vectors are bitwise copies of
    /// this network's: the view never frees or grows them, and its own parts are replaced.)
    pub unsafe fn view(&self) -> NetView {
        let mut v = ManuallyDrop::new(std::ptr::read(self));
        // The fields below must not be shared: written without dropping the copies.
        std::ptr::write(&mut v.pool, self.pool.view());
        std::ptr::write(&mut v.drop_log, Vec::new());
        std::ptr::write(&mut v.nic_departures, Vec::new());
        std::ptr::write(&mut v.captures, Default::default());
        std::ptr::write(&mut v.queue_trace, Default::default());
        std::ptr::write(&mut v.frames_out, Vec::new());
        std::ptr::write(&mut v.pack_tails, Vec::new());
        std::ptr::write(&mut v.remote_out, Vec::new());
        std::ptr::write(&mut v.late_port_drops, Vec::new());
        std::ptr::write(&mut v.pfc_kick, Vec::new());
        std::ptr::write(&mut v.acting, Default::default());
        v.counters = Default::default();
        NetView(v)
    }

    /// Where the threads meet: what a view counted, dropped, freed and sent to other
    /// partitions since the last meeting comes back to this network.
    pub fn absorb(&mut self, view: &mut NetView) {
        let v = &mut *view.0;
        // Taken by the view's own events (after each): a view dropped with some would lose them.
        assert!(v.nic_departures.is_empty() && v.frames_out.is_empty());
        self.counters.absorb(&mut v.counters);
        self.drop_log.append(&mut v.drop_log);
        put_on_wires(&mut self.wires, &mut v.remote_out);
        self.late_port_drops.append(&mut v.late_port_drops);
    }

    /// The link out of `port`, a wire between partitions, fails (`link_down` has dropped
    /// what was queued at the port). What the wire held is lost, as in an ordinary run, but
    /// two partitions hold it: this one what it sent across since the partitions last met
    /// (still in `remote_out`), the far one what went on the wire before, which its
    /// receiver pops. The far end's own failure, at the same time (both ports of a failed
    /// link fail together), drops the latter, and this one drops what was on the wire
    /// towards this partition: each side touches only what it owns in a window. Those
    /// drops are logged as the sending port's, at the failure's time, as an ordinary run
    /// logs them; the sending port's statistics take them where the partitions meet.
    pub(super) fn link_down_between_partitions(&mut self, now: TimePs, port: u32) {
        let mut sent = Vec::new();
        self.remote_out.retain(|&(p, pkt, _)| {
            if p == port {
                sent.push(pkt);
            }
            p != port
        });
        for pkt in sent {
            self.drop_on_down_link(now, port, pkt);
        }
        let pt = &self.ports[port as usize];
        let towards_me = self.nodes[pt.peer_node as usize].port_base + pt.peer_in_port;
        let w = &mut self.wires[towards_me as usize];
        debug_assert!(w.remote, "a link's two wires join the same two partitions");
        let lost: Vec<PktId> = w.in_flight.drain(..).map(|(p, _)| p).collect();
        for pkt in lost {
            if self.lose_if_control_frame(pkt) {
                continue;
            }
            // Counted at the far port when the partitions meet: the far partition may be
            // changing that port's statistics now.
            self.late_port_drops
                .push((towards_me, self.pool.get(pkt).frame_bytes));
            self.counters.link_down_drops += 1;
            self.log_drop(now, towards_me, pkt);
        }
    }

    /// Where partitions meet: the drops other partitions counted for this network's ports
    /// (`link_down_between_partitions`) go into the ports' statistics.
    pub fn settle_late_drops(&mut self) {
        for (port, bytes) in std::mem::take(&mut self.late_port_drops) {
            self.count_drop_at(port, bytes);
        }
    }
}

/// A packet sent on a wire between partitions: (sending port, packet, arrival time).
pub type RemoteSend = (u32, PktId, TimePs);

impl Network {
    /// The partition at the receiving end of each port's wire.
    pub fn wire_receivers(&self) -> Vec<PartitionId> {
        self.wires.iter().map(|w| w.to_partition).collect()
    }

    /// Takes the packets this network (or view) sent on wires between partitions since
    /// the last call, leaving `into` (empty) in their place.
    pub fn swap_remote_out(&mut self, into: &mut Vec<RemoteSend>) {
        debug_assert!(into.is_empty());
        std::mem::swap(&mut self.remote_out, into);
    }

    /// Puts the packets of `sent` whose wire leads to a partition `mine` accepts on their
    /// wires, in order (`receivers`: `wire_receivers`). Each wire has one sender, so the
    /// packets of one wire are all in one list, in the order they were sent.
    pub fn land(
        &mut self,
        sent: &[RemoteSend],
        receivers: &[PartitionId],
        mine: impl Fn(PartitionId) -> bool,
    ) {
        for &(port, pkt, at_ps) in sent {
            if mine(receivers[port as usize]) {
                self.wires[port as usize].in_flight.push_back((pkt, at_ps));
            }
        }
    }
}

/// The least time from the start of a transmission out of `pt` to the arrival event at the
/// far end (`Network::transmit`): the far switch acts on a frame's header under
/// cut-through, on its last bit otherwise, so the least frame's serialisation (at least
/// `least_frame_bytes` and the wire's own overhead) counts as well as propagation and the
/// far switch's latency. On a 1 Gbit/s Ethernet link a minimum frame adds 672 ns.
fn least_wire_delay_ps(pt: &super::Port, least_frame_bytes: u64) -> TimePs {
    let ser_ps = if pt.peer_cut_through {
        pt.cut_through_head_ps()
    } else {
        pt.wire_time_ps(least_frame_bytes + u64::from(pt.wire_overhead_bytes))
    };
    pt.prop_ps + pt.peer_delay_ps + ser_ps
}

/// Packets sent on wires between partitions (`Network::remote_out`) go on their wires, in
/// the order each wire's sender sent them; their arrivals are due after the meeting.
fn put_on_wires(wires: &mut [Wire], from: &mut Vec<(u32, PktId, TimePs)>) {
    for (port, pkt, at_ps) in from.drain(..) {
        wires[port as usize].in_flight.push_back((pkt, at_ps));
    }
}

/// A thread's view of a network (`Network::view`).
pub struct NetView(ManuallyDrop<Network>);

// SAFETY: see `Network::view`: the view and its network touch disjoint state until they
// meet, which is what sending it to another thread needs.
unsafe impl Send for NetView {}

impl NetView {
    pub fn net(&mut self) -> &mut Network {
        &mut self.0
    }
}

impl Drop for NetView {
    fn drop(&mut self) {
        let v = &mut *self.0;
        // SAFETY: these fields were written by `view` and belong to the view alone; the
        // rest is the network's and is not dropped here.
        unsafe {
            drop(std::ptr::read(&v.pool));
            drop(std::ptr::read(&v.drop_log));
            drop(std::ptr::read(&v.nic_departures));
            drop(std::ptr::read(&v.captures));
            drop(std::ptr::read(&v.queue_trace));
            drop(std::ptr::read(&v.frames_out));
            drop(std::ptr::read(&v.pack_tails));
            drop(std::ptr::read(&v.remote_out));
            drop(std::ptr::read(&v.late_port_drops));
            drop(std::ptr::read(&v.pfc_kick));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::net::Forwarding;
    use crate::topology::build::{build_network, test_switch_params};
    use crate::topology::{fat_tree, LinkParams};

    /// A k=4 fat tree at 1 Gbit/s with 500 ns links and 200 ns switches, partitioned by
    /// pod; returns its lookahead.
    fn lookahead_ps(forwarding: Forwarding) -> u64 {
        let g = fat_tree::build(4, LinkParams::ethernet(1_000_000_000, 500_000));
        let mut sp = test_switch_params();
        sp.port_to_port_ps = 200_000;
        sp.forwarding = forwarding;
        let mut net = build_network(&g, &sp);
        let (lookahead, n) = net.partition_wires(false).unwrap();
        assert_eq!(n, 5, "four pods and the cores");
        lookahead
    }

    #[test]
    fn lookahead_counts_the_least_frame_on_the_wire() {
        // A 64-byte frame and 20 bytes of preamble and gap take 672 ns at 1 Gbit/s; the far
        // switch acts once the last bit is in.
        assert_eq!(
            lookahead_ps(Forwarding::StoreAndForward),
            500_000 + 200_000 + 672_000
        );
        // Under cut-through it acts on the first 72 bytes (576 ns).
        assert_eq!(
            lookahead_ps(Forwarding::CutThrough),
            500_000 + 200_000 + 576_000
        );
    }
}
