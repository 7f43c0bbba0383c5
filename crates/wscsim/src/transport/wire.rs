//! What a transport endpoint sees of the world below it: a clock, its timers, the size a
//! packet takes on its host's link, and a way to hand a packet to its host.
//!
//! In a simulation that is `HostPath`: the host's send path (system-call cost, NIC queue)
//! over the network, and the event queue. Unit tests put a recorder in its place and
//! drive one connection with hand-made segments, with no network, hosts or event loop.

use super::TcpEvent;
use crate::engine::TimePs;
use crate::host::Hosts;
use crate::net::Network;
use crate::packet::Packet;

/// The world below a transport endpoint.
pub trait Wire {
    /// The time now.
    fn now(&self) -> TimePs;
    /// The frame a packet of `ip_bytes` (IP header and up) makes on `host`'s link.
    fn frame_bytes(&self, host: u32, ip_bytes: u32) -> u32;
    /// `host` sends `pkt` (its transmit path takes it from here).
    fn transmit(&mut self, host: u32, pkt: Packet);
    /// The application on `host` made a system call on the connection whose flow hash is
    /// `hash` (charged to that hash's core on hosts that cost time, else free).
    fn syscall(&mut self, host: u32, hash: u32);
    /// An event for the transport's timer at `at`.
    fn arm_timer(&mut self, at: TimePs, timer: TcpEvent);
    /// Connection segments that left their host's NIC since the last look, as (connection,
    /// frame bytes), for TCP small queues; the transport empties it.
    fn nic_departures(&mut self) -> &mut Vec<(u32, u32)>;
}

/// The simulation's wire: hosts' send paths over the network, timers on the event queue.
pub struct HostPath<'a, S> {
    pub net: &'a mut Network,
    pub hosts: &'a mut Hosts,
    pub ev: &'a mut S,
}

impl<'a, S: super::TransportSched> HostPath<'a, S> {
    #[inline]
    pub fn new(net: &'a mut Network, hosts: &'a mut Hosts, ev: &'a mut S) -> Self {
        HostPath { net, hosts, ev }
    }

    /// None if `host`'s NIC has room for another frame of `frame_bytes`: if it holds less
    /// than `waiting` such frames besides the one on its wire (an RDMA NIC's scheduler
    /// takes work when it has room), or, for `waiting` 0, if it is idle (a sender that
    /// picks each packet when the link frees). Else when to try again: when the frame
    /// on the wire ends and the NIC takes the next from its queue (a NIC held back: a
    /// frame's time from now).
    #[inline]
    pub fn nic_full_until(&self, host: u32, frame_bytes: u32, waiting: u64) -> Option<TimePs> {
        let nic = &self.net.ports()[self.net.nic_port(host) as usize];
        let frame = u64::from(frame_bytes);
        let now = self.ev.now();
        let room = match waiting {
            0 => nic.bytes_queued == 0 && nic.busy_until_ps <= now,
            n => nic.bytes_queued < n * frame,
        };
        if room {
            return None;
        }
        Some(if nic.busy_until_ps > now {
            nic.busy_until_ps
        } else if waiting == 0 {
            // The NIC takes what it queued (a receiver's grants) at this instant: the
            // time they take, not a whole data frame's.
            now + nic.wire_time_ps(nic.bytes_queued.max(1))
        } else {
            now + nic.wire_time_ps(frame)
        })
    }

    /// The packet `pkt` that reached its transport, which frees it.
    #[inline]
    pub fn take(&mut self, pkt: crate::packet::PktId) -> Packet {
        let p = *self.net.pool().get(pkt);
        self.net.delivered(pkt);
        p
    }
}

impl<S: super::TransportSched> Wire for HostPath<'_, S> {
    #[inline]
    fn now(&self) -> TimePs {
        self.ev.now()
    }

    #[inline]
    fn frame_bytes(&self, host: u32, ip_bytes: u32) -> u32 {
        self.net.frame_bytes(host, ip_bytes)
    }

    #[inline]
    fn transmit(&mut self, host: u32, pkt: Packet) {
        let id = self.net.pool_mut().alloc(pkt);
        self.hosts.send(self.net, self.ev, host, id);
    }

    #[inline]
    fn syscall(&mut self, host: u32, hash: u32) {
        if self.hosts.costed {
            let core = self.hosts.core_of(hash);
            let now = self.now();
            self.hosts.syscall(host, core, now, 0);
        }
    }

    #[inline]
    fn arm_timer(&mut self, at: TimePs, timer: TcpEvent) {
        self.ev.schedule(at, super::TransportEvent::from(timer));
    }

    #[inline]
    fn nic_departures(&mut self) -> &mut Vec<(u32, u32)> {
        self.net.nic_departures()
    }
}
