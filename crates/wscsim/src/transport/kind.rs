//! What a transport is to the rest of the simulator: its protocol number, the packets and
//! timers it handles, and the notes it hands applications. Each transport implements
//! `TransportKind` in its own file; `builtin_transports!` (in `transport/mod.rs`) lists
//! them, and `declare_transports!` generates from that list the run's `Transports`, their
//! events (`TransportEvent`, and the variants of `sim::SimEvent`) and the dispatch by
//! protocol.

use super::{HostPath, Note, TransportSched};
use crate::engine::TimePs;
use crate::net::Network;
use crate::packet::{Packet, PktId, Proto};

/// A transport: one file plus one line in `builtin_transports!`.
pub trait TransportKind: Sized {
    /// Its name, in messages.
    const NAME: &'static str;
    /// The protocol number its packets carry (`Packet::proto`). The list checks when it
    /// compiles that no two transports share one.
    const PROTO: Proto;
    /// Its timers' events, a type of its own (an empty enum if it has none). Each becomes
    /// a variant of the run's events (`sim::SimEvent`), which stay 12 bytes: at most 8
    /// bytes, aligned to 4 at most.
    type Event: Copy + std::fmt::Debug + PartialEq + Eq;
    /// Whether its events act across partitions, so a partitioned run handles them alone
    /// at a barrier (the DMA engines'); otherwise each acts at the host `timer_host` names.
    const GLOBAL_EVENTS: bool = false;

    /// The transport of a new run.
    fn build(b: &TransportBuild) -> Self;
    /// A packet of its protocol reached its destination host, after the host's receive
    /// path. The transport owns it from here (`HostPath::take` reads and frees it).
    fn on_packet(&mut self, path: &mut HostPath<'_, impl TransportSched>, pkt: PktId);
    /// One of its timers is due.
    fn on_timer(&mut self, path: &mut HostPath<'_, impl TransportSched>, e: Self::Event) {
        let _ = (path, e);
    }
    /// The host a timer acts at (a partitioned run runs it in that host's partition). No
    /// default: a wrong host would run the timer against another partition's state.
    fn timer_host(&self, e: Self::Event) -> u32;
    /// Starts loading what timer `e` will touch (the event loop calls it one event ahead).
    #[inline]
    fn prefetch_timer(&self, e: Self::Event) {
        let _ = e;
    }
    /// Starts loading what packet `p`, now reaching its host's receive path, will touch.
    #[inline]
    fn prefetch_packet(&self, p: &Packet) {
        let _ = p;
    }
    /// Whether its state is kept by partition, or it is not used in this run: then each
    /// partition's events touch only their own part of it, and a partitioned run may run
    /// the hosts' partitions on any thread. (None is, by default.)
    fn runs_in_partitions(&self) -> bool {
        false
    }
    /// Whether it has notes for applications (`take_notes`).
    fn has_notes(&self) -> bool;
    /// Appends what it has to tell applications to `into`, oldest first, and forgets it.
    fn take_notes(&mut self, into: &mut Vec<Note>);
    /// Appends its result tables when the run ends (none by default).
    fn tables(&self, out: &mut Vec<crate::table::Table>) {
        let _ = out;
    }
    /// Adds its headline figures (none by default). (Not `metrics::report::Report`: the
    /// metrics layer sits above the transports.)
    fn headline(&self, net: &Network, h: &mut serde_json::Map<String, serde_json::Value>) {
        let _ = (net, h);
    }
}

/// What a transport is built from: the network and the resolved parameters of the
/// transports that take any.
pub struct TransportBuild<'a> {
    pub net: &'a Network,
    /// The run is partitioned (a transport keeps its per-host state by partition).
    pub partitioned: bool,
    /// The run's end (`duration`).
    pub end_ps: TimePs,
    pub tcp: super::TcpParams,
    pub dma: super::dma::DmaParams,
    pub messages: MessageSpecs,
}

/// The resolved sections of the transports that carry messages (`[roce]`, `[ndp]`,
/// `[homa]`, `[eqds]`): the defaults for those a scenario leaves out.
#[derive(Clone, Debug, Default)]
pub struct MessageSpecs {
    pub roce: super::roce::Spec,
    pub ndp: super::ndp::Spec,
    pub homa: super::homa::Spec,
    pub eqds: super::eqds::Spec,
}

impl MessageSpecs {
    /// Checks what each needs of the network.
    pub fn check_network(&self, net: &Network) -> Result<(), crate::check::ConfigError> {
        super::roce::check_network(&self.roce, net)?;
        super::ndp::check_network(&self.ndp, net)?;
        super::homa::check_network(&self.homa, net)?;
        super::eqds::check_network(&self.eqds, net)
    }
}

/// True when no two of `protos` are equal (the list's compile-time check).
pub const fn distinct(protos: &[Proto]) -> bool {
    let mut i = 0;
    while i < protos.len() {
        let mut j = i + 1;
        while j < protos.len() {
            if protos[i].0 == protos[j].0 {
                return false;
            }
            j += 1;
        }
        i += 1;
    }
    true
}

/// Generates, from `builtin_transports!`'s list, the run's transports and their dispatch:
/// `Transports` (one field per transport), `TransportEvent` (one variant per transport)
/// with its conversions from each transport's event, and the check that their
/// protocol numbers differ from each other and from those of the layers that are not
/// transports (services, real frames).
macro_rules! declare_transports {
    ($($(#[$attr:meta])* $variant:ident($field:ident: $ty:ty)),* $(,)?) => {
        /// The run's transports, one field per kind.
        pub struct Transports {
            $($(#[$attr])* pub $field: $ty,)*
        }

        /// A transport's timer, as its layer sees it (`sim::SimEvent` stores the variants
        /// flat, to stay 12 bytes).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum TransportEvent {
            $($(#[$attr])* $variant(<$ty as $crate::transport::TransportKind>::Event),)*
        }

        $(
            $(#[$attr])*
            impl From<<$ty as $crate::transport::TransportKind>::Event> for TransportEvent {
                #[inline]
                fn from(e: <$ty as $crate::transport::TransportKind>::Event) -> Self {
                    TransportEvent::$variant(e)
                }
            }
        )*

        const _: () = assert!(
            $crate::transport::kind::distinct(&[
                $crate::packet::Proto::SERVICE,
                $crate::packet::Proto::FRAME,
                $($(#[$attr])* <$ty as $crate::transport::TransportKind>::PROTO,)*
            ]),
            "two transports (or a transport and the services or real frames) share a protocol number"
        );

        impl Transports {
            /// The run's transports.
            pub fn build(b: &$crate::transport::TransportBuild) -> Self {
                Transports {
                    $($(#[$attr])* $field: <$ty as $crate::transport::TransportKind>::build(b),)*
                }
            }

            /// Whether a transport takes packets of `proto`.
            #[inline]
            pub fn takes(proto: $crate::packet::Proto) -> bool {
                $(
                    $(#[$attr])*
                    if proto == <$ty as $crate::transport::TransportKind>::PROTO {
                        return true;
                    }
                )*
                false
            }

            /// The transport of `pkt`'s protocol takes it (`takes` said one does).
            #[inline]
            pub fn on_packet(&mut self, path: &mut HostPath<'_, impl TransportSched>, pkt: $crate::packet::PktId) {
                let proto = path.net.pool().get(pkt).proto;
                $(
                    $(#[$attr])*
                    if proto == <$ty as $crate::transport::TransportKind>::PROTO {
                        return $crate::transport::TransportKind::on_packet(&mut self.$field, path, pkt);
                    }
                )*
            }

            /// Starts loading what `p`, reaching its host, will touch at its transport.
            #[inline]
            pub fn prefetch_packet(&self, p: &$crate::packet::Packet) {
                $(
                    $(#[$attr])*
                    if p.proto == <$ty as $crate::transport::TransportKind>::PROTO {
                        return $crate::transport::TransportKind::prefetch_packet(&self.$field, p);
                    }
                )*
            }

            /// A transport's timer is due.
            #[inline]
            pub fn on_timer(&mut self, path: &mut HostPath<'_, impl TransportSched>, e: TransportEvent) {
                match e {
                    $($(#[$attr])* TransportEvent::$variant(e) => $crate::transport::TransportKind::on_timer(&mut self.$field, path, e),)*
                }
            }

            /// The host a timer acts at, or None for a transport whose events are global.
            pub fn timer_host(&self, e: TransportEvent) -> Option<u32> {
                match e {
                    $($(#[$attr])* TransportEvent::$variant(e) => {
                        if <$ty as $crate::transport::TransportKind>::GLOBAL_EVENTS {
                            None
                        } else {
                            Some($crate::transport::TransportKind::timer_host(&self.$field, e))
                        }
                    })*
                }
            }

            #[inline]
            pub fn prefetch_timer(&self, e: TransportEvent) {
                match e {
                    $($(#[$attr])* TransportEvent::$variant(e) => $crate::transport::TransportKind::prefetch_timer(&self.$field, e),)*
                }
            }

            /// Whether any transport has notes for applications.
            #[inline]
            pub fn has_notes(&self) -> bool {
                $(
                    $(#[$attr])*
                    if $crate::transport::TransportKind::has_notes(&self.$field) {
                        return true;
                    }
                )*
                false
            }

            /// Whether every transport runs in partitions (`TransportKind::runs_in_partitions`).
            pub fn run_in_partitions(&self) -> bool {
                let mut all = true;
                $($(#[$attr])* { all &= $crate::transport::TransportKind::runs_in_partitions(&self.$field); })*
                all
            }

            /// Every transport's result tables, in the list's order.
            pub fn tables(&self, out: &mut Vec<$crate::table::Table>) {
                $($(#[$attr])* $crate::transport::TransportKind::tables(&self.$field, out);)*
            }

            /// Every transport's headline figures, in the list's order.
            pub fn headline(&self, net: &$crate::net::Network, h: &mut serde_json::Map<String, serde_json::Value>) {
                $($(#[$attr])* $crate::transport::TransportKind::headline(&self.$field, net, h);)*
            }

            /// Every transport's notes, in the list's order, appended to `into`.
            #[inline]
            pub fn take_notes(&mut self, into: &mut Vec<Note>) {
                $($(#[$attr])* $crate::transport::TransportKind::take_notes(&mut self.$field, into);)*
            }
        }

        impl TransportEvent {
            /// Whether the event acts across partitions (`TransportKind::GLOBAL_EVENTS`).
            pub fn is_global(self) -> bool {
                match self {
                    $($(#[$attr])* TransportEvent::$variant(_) => <$ty as $crate::transport::TransportKind>::GLOBAL_EVENTS,)*
                }
            }

            /// The name of the transport whose timer it is.
            pub fn transport_name(self) -> &'static str {
                match self {
                    $($(#[$attr])* TransportEvent::$variant(_) => <$ty as $crate::transport::TransportKind>::NAME,)*
                }
            }
        }
    };
}
pub(crate) use declare_transports;
