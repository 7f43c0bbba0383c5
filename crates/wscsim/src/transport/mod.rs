//! Transports: TCP (NewReno, CUBIC, DCTCP, pFabric), UDP and the PCIe fabric's DMA, and
//! what they are to the rest of the simulator (`kind`).
//!
//! Transport state lives in arenas indexed by connection (or stream) id. The sender half of
//! a TCP connection belongs to the source host and the receiver half to the destination
//! host; they meet only through packets, like real endpoints.

pub mod dcqcn;
pub mod dma;
pub mod eqds;
pub mod homa;
pub mod hpcc;
pub mod kind;
pub mod ndp;
pub mod roce;
pub mod roce_cc;
pub mod stats;
pub mod swift;
pub mod tcp;
pub mod timely;
/// docs/extending.md's example transport, compiled for the tests.
#[cfg(test)]
#[path = "../../tests/toys/transport.rs"]
pub mod toy;
pub mod turns;
pub mod udp;
pub mod wire;

pub use dma::Dma;
pub use kind::{MessageSpecs, TransportBuild, TransportKind};
pub use tcp::cc::Variant;
pub use tcp::{Tcp, TcpEvent, TcpParams};
pub use udp::Udp;
pub use wire::{HostPath, Wire};

/// The transports, one line each: a variant name (of `TransportEvent` and
/// `sim::SimEvent`), the field of `Transports` and the kind's type. `Transports`, their
/// events, their dispatch by protocol and the check that their protocol numbers differ
/// are generated from it (`kind::declare_transports!`).
macro_rules! builtin_transports {
    ($m:ident) => {
        $m! {
            Tcp(tcp: $crate::transport::Tcp),
            Udp(udp: $crate::transport::Udp),
            Dma(dma: $crate::transport::Dma),
            Roce(roce: $crate::transport::roce::Roce),
            Ndp(ndp: $crate::transport::ndp::Ndp),
            Homa(homa: $crate::transport::homa::Homa),
            Eqds(eqds: $crate::transport::eqds::Eqds),
            #[cfg(test)]
            Toy(toy: $crate::transport::toy::StopAndWait),
        }
    };
}
pub(crate) use builtin_transports;
use kind::declare_transports;
builtin_transports!(declare_transports);

use crate::engine::Scheduler;
use crate::host::HostSched;

/// What the transports schedule through: the host's and network's events that sending
/// starts, and their timers.
pub trait TransportSched: HostSched + Scheduler<TransportEvent> {}
impl<T: HostSched + Scheduler<TransportEvent>> TransportSched for T {}

/// A transport that carries each of the flows workload's flows as one message, where TCP
/// carries it over a connection (`transport.kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageTransport {
    /// RoCEv2 queue pairs (`transport::roce`).
    Roce,
    /// NDP (`transport::ndp`).
    Ndp,
    /// Homa (`transport::homa`).
    Homa,
    /// EQDS (`transport::eqds`).
    Eqds,
}

impl MessageTransport {
    /// The one `transport.kind` names, if it names one.
    pub fn of_kind(kind: &str) -> Option<Self> {
        match kind {
            "roce" => Some(MessageTransport::Roce),
            "ndp" => Some(MessageTransport::Ndp),
            "homa" => Some(MessageTransport::Homa),
            "eqds" => Some(MessageTransport::Eqds),
            _ => None,
        }
    }

    /// Its `transport.kind`.
    pub fn kind(self) -> &'static str {
        match self {
            MessageTransport::Roce => "roce",
            MessageTransport::Ndp => "ndp",
            MessageTransport::Homa => "homa",
            MessageTransport::Eqds => "eqds",
        }
    }
}

/// Something a transport tells an application.
#[derive(Clone, Copy, Debug)]
pub enum Note {
    /// Connection `conn` delivered bytes in order at its receiver, host `host`; `total` is
    /// the count so far.
    Delivered {
        app: u32,
        host: u32,
        conn: u32,
        total: u64,
    },
    /// Connection `conn`'s peer closed it (its FIN arrived after all its data) while the
    /// receiving side's own direction is still open: the application reads the end of
    /// the stream.
    Closed { app: u32, host: u32, conn: u32 },
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

/// Checks that a data packet of `payload` bytes and `header` bytes of headers fits every
/// host's link whole (`field` names the payload's parameter in the message).
pub fn check_packet_fits(
    field: &str,
    payload: u32,
    header: u32,
    net: &crate::net::Network,
) -> Result<(), crate::check::ConfigError> {
    match (0..net.n_hosts() as u32)
        .map(|h| net.host_link(h))
        .find(|t| t.mtu_bytes < payload + header)
    {
        Some(tech) => Err(crate::check::err(
            field,
            crate::units::Bytes(u64::from(payload)),
            format!(
                "a payload whose packet ({header} bytes of headers more) fits the hosts' links: {} carries at most {} bytes (a jumbo-frame technology carries more)",
                tech.name, tech.mtu_bytes
            ),
        )),
        None => Ok(()),
    }
}

/// Bytes host 0's link sends in the round trip of a full packet (`payload_bytes` and
/// `header` bytes) to the host farthest from it and a header back, without queueing: a
/// message transport's window of a round trip.
pub fn round_trip_bytes(net: &crate::net::Network, payload_bytes: u32, header: u32) -> u64 {
    let rtt_ps = (1..net.n_hosts() as u32)
        .map(|h| {
            net.ideal_transfer_ps((0, h), u64::from(payload_bytes), payload_bytes, header)
                + net.ideal_transfer_ps((h, 0), 0, payload_bytes, header)
        })
        .max()
        .unwrap_or(0);
    let rate = net.ports()[net.nic_port(0) as usize].rate_bps;
    (u128::from(rtt_ps) * u128::from(rate) / 8_000_000_000_000) as u64
}

/// A message transport's `payload` (`field`), checked: 256B to 64KB (None: the most the
/// hosts' links carry, `largest_payload`).
pub fn resolve_payload(
    field: &str,
    given: Option<crate::units::Bytes>,
) -> Result<Option<u32>, crate::check::ConfigError> {
    match given {
        Some(b) if !(256..=65_536).contains(&b.0) => {
            Err(crate::check::err(field, b, "256B to 64KB"))
        }
        b => Ok(b.map(|b| b.0 as u32)),
    }
}

/// The largest payload that, with `header` bytes of headers, every host's link carries in
/// one packet.
pub fn largest_payload(net: &crate::net::Network, header: u32) -> u32 {
    (0..net.n_hosts() as u32)
        .map(|h| net.host_link(h).mtu_bytes)
        .min()
        .unwrap_or(1500)
        .saturating_sub(header)
}

/// Payload bytes of packet `n` (from 0) of a message of `size` bytes cut into packets of
/// `payload_bytes`: full ones, the last what is left (0 past the end).
#[inline]
pub fn packet_payload(size: u64, payload_bytes: u32, n: u32) -> u32 {
    let from = u64::from(n) * u64::from(payload_bytes);
    (size - from.min(size)).min(u64::from(payload_bytes)) as u32
}
