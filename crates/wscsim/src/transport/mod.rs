//! Transports: UDP and TCP (NewReno and CUBIC congestion control).
//!
//! Transport state lives in arenas indexed by connection (or stream) id. The sender half of
//! a TCP connection belongs to the source host and the receiver half to the destination
//! host; they meet only through packets, like real endpoints.

pub mod cc;
pub mod scoreboard;
pub mod stats;
pub mod tcp;
pub mod udp;

pub use tcp::{Tcp, TcpParams};
pub use udp::Udp;

/// Something a transport tells an application.
#[derive(Clone, Copy, Debug)]
pub enum Note {
    /// Connection `conn` delivered bytes in order at its receiver; `total` is the count so far.
    Delivered { app: u32, conn: u32, total: u64 },
    /// A UDP datagram of stream `stream` arrived.
    /// `tag`: what the sender attached (a request id), 0 if nothing.
    Datagram {
        app: u32,
        stream: u32,
        host: u32,
        payload_bytes: u32,
        tag: u64,
    },
}
