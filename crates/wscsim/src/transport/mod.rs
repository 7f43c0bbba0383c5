//! Transports: UDP and TCP (NewReno and CUBIC congestion control).
//!
//! Transport state lives in arenas indexed by connection (or stream) id. The sender half of
//! a TCP connection belongs to the source host and the receiver half to the destination
//! host; they meet only through packets, like real endpoints.

pub mod dma;
pub mod stats;
pub mod tcp;
pub mod udp;
pub mod wire;

pub use dma::Dma;
pub use tcp::cc::Variant;
pub use tcp::{Tcp, TcpParams};
pub use udp::Udp;
pub use wire::{HostPath, Wire};

use crate::engine::Scheduler;
use crate::host::HostSched;

/// The transport layer's events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpEvent {
    /// A timer of connection `conn` (lazy: the handler checks the real deadline). `which`:
    /// 0 the sender's retransmission timer, 1 the receiver's delayed ACK.
    /// `part`: the part of the run's TCP that holds the half (`tcp::Tcp`).
    Timer { conn: u32, which: u8, part: u16 },
}

/// What the transport schedules through: its own timers and the host's and network's
/// events that sending starts.
pub trait TransportSched: HostSched + Scheduler<TcpEvent> {}
impl<T: HostSched + Scheduler<TcpEvent>> TransportSched for T {}

/// Something a transport tells an application.
#[derive(Clone, Copy, Debug)]
pub enum Note {
    /// Connection `conn` delivered bytes in order at its receiver; `total` is the count so far.
    Delivered { app: u32, conn: u32, total: u64 },
    /// Connection `conn`'s peer closed it (its FIN arrived after all its data) while the
    /// receiving side's own direction is still open: the application reads the end of
    /// the stream.
    Closed { app: u32, conn: u32 },
    /// A UDP datagram of stream `stream` arrived.
    /// `tag`: what the sender attached (a request id), 0 if nothing.
    Datagram {
        app: u32,
        stream: u32,
        host: u32,
        payload_bytes: u32,
        tag: u64,
    },
    /// DMA transfer `xfer` is complete (its last byte arrived; for a load, reached the core).
    Dma { app: u32, xfer: u32, tag: u32 },
}

/// A packet reached its destination host's transport (after the host's receive path).
#[inline]
pub fn receive(
    net: &mut crate::net::Network,
    hosts: &mut crate::host::Hosts,
    ev: &mut impl TransportSched,
    tcp: &mut Tcp,
    udp: &mut Udp,
    pkt: crate::packet::PktId,
) {
    let p = *net.pool().get(pkt);
    net.delivered(pkt);
    match p.proto {
        crate::packet::Proto::Tcp => tcp.on_packet(&mut HostPath::new(net, hosts, ev), &p),
        crate::packet::Proto::Udp => udp.on_packet(&p),
        // Services', DMA and real frames go to their own layers (the caller routes them).
        crate::packet::Proto::Service | crate::packet::Proto::Dma | crate::packet::Proto::Frame => {
        }
    }
}
