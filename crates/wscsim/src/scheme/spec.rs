//! A built-in scheme is one file: its scenario parameters, their checks and defaults, its
//! resolved spec and its per-port behaviour, joined by `SchemeKind`; and one line in
//! `builtin_schemes!` (scheme/mod.rs), from which every list of schemes is made: the
//! `Scheme` enum a port holds (a `match`, not a virtual call, per packet), the resolved
//! `SchemeSpec`, and the scenario's table of scheme kinds (`config::scheme::SCHEMES`).
//! The compiler checks that a listed kind has all of them; no list of names can miss one.

use super::{CustomScheme, PortCtx, Verdict};
use crate::check::ConfigError;
use crate::packet::PktId;

/// A built-in scheme kind, in its own file.
pub trait SchemeKind: Sized {
    /// Its name in scenarios (`switch.scheme = "..."`).
    const NAME: &'static str;
    /// It sends only the head of a queue it finds in `PortCtx::nonempty` (or of its one
    /// queue): PFC may then hold a paused priority's queues by hiding them (`net::pfc`).
    const SERVES_HEADS: bool = false;
    /// It may cut packets' payloads off (`trims` counts them; the links table shows them).
    const TRIMS: bool = false;
    /// Its scenario parameters, each an `Option` that `resolve` fills with its default.
    type Params: serde::de::DeserializeOwned + serde::Serialize;
    /// Its parameters checked and resolved: what builds a port's scheme.
    type Spec: Clone + std::fmt::Debug + PartialEq;
    /// Checks `params` (at `path` in the scenario), fills in their defaults and resolves them.
    fn resolve(params: &mut Self::Params, path: &str) -> Result<Self::Spec, ConfigError>;
    /// Queues per port; `voqs` is one per input port, up to the limit.
    fn queues(_spec: &Self::Spec, _voqs: u32) -> u32 {
        1
    }
    /// The scheme of one port; `seed` and `port` name its random stream.
    fn build(spec: &Self::Spec, seed: u64, port: u32) -> Self;
    /// Queue index for a packet that came in on `in_port` (one queue: 0).
    #[inline]
    fn classify(&mut self, _ctx: &mut PortCtx, _pkt: PktId, _in_port: u32) -> usize {
        0
    }
    fn enqueue(&mut self, ctx: &mut PortCtx, pkt: PktId, queue: usize) -> Verdict;
    fn schedule(&mut self, ctx: &mut PortCtx) -> Option<PktId>;
    /// Which of the port's `n` queues the next `schedule` takes from, where that is cheap
    /// to know (a hint for prefetching its head packet).
    #[inline]
    fn next_queue_hint(&self, _nonempty: &[u64], _n: usize) -> Option<usize> {
        None
    }
    /// Packets marked CE as they left (marks on arrival are counted by the port).
    fn marks_at_dequeue(&self) -> u64 {
        0
    }
    /// Packets whose payload the scheme cut off, leaving their headers (NDP's trimming).
    fn trims(&self) -> u64 {
        0
    }
}

/// A large scheme is boxed in the enum (one per port, kept small for DropTail's sake).
impl<T: SchemeKind> SchemeKind for Box<T> {
    const NAME: &'static str = T::NAME;
    const SERVES_HEADS: bool = T::SERVES_HEADS;
    const TRIMS: bool = T::TRIMS;
    type Params = T::Params;
    type Spec = T::Spec;
    fn resolve(params: &mut Self::Params, path: &str) -> Result<Self::Spec, ConfigError> {
        T::resolve(params, path)
    }
    fn queues(spec: &Self::Spec, voqs: u32) -> u32 {
        T::queues(spec, voqs)
    }
    fn build(spec: &Self::Spec, seed: u64, port: u32) -> Self {
        Box::new(T::build(spec, seed, port))
    }
    #[inline]
    fn classify(&mut self, ctx: &mut PortCtx, pkt: PktId, in_port: u32) -> usize {
        T::classify(self, ctx, pkt, in_port)
    }
    #[inline]
    fn enqueue(&mut self, ctx: &mut PortCtx, pkt: PktId, queue: usize) -> Verdict {
        T::enqueue(self, ctx, pkt, queue)
    }
    #[inline]
    fn schedule(&mut self, ctx: &mut PortCtx) -> Option<PktId> {
        T::schedule(self, ctx)
    }
    #[inline]
    fn next_queue_hint(&self, nonempty: &[u64], n: usize) -> Option<usize> {
        T::next_queue_hint(self, nonempty, n)
    }
    fn marks_at_dequeue(&self) -> u64 {
        T::marks_at_dequeue(self)
    }
    fn trims(&self) -> u64 {
        T::trims(self)
    }
}

/// Scenario parameters of a user's scheme (`kind = "python"`, or a name given to
/// `wscsim.register_scheme`).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CustomParams {
    /// "module:Class", "path/to/file.py:Class" or a registered name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// A table handed to the class.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params: Option<serde_json::Value>,
}

/// Where a scheme is being placed, for custom factories.
#[derive(Clone, Debug)]
pub struct PortSite<'a> {
    pub switch_name: &'a str,
    pub switch_index: u32,
    pub tier: u8,
    /// The port's index among its switch's ports, and the switch's port count.
    pub local_port: u32,
    pub switch_ports: u32,
    pub rate_bps: u64,
}

/// Makes custom schemes: given the spec's (kind, class, params) and the port, returns the
/// number of queues the scheme wants (1 to 64) and the scheme, or a message saying why not.
pub type CustomFactory<'f> = dyn FnMut(&str, &str, &serde_json::Value, &PortSite) -> Result<(u32, Box<dyn CustomScheme>), String>
    + 'f;

/// Declares `Scheme` (a port's scheme: the built-ins listed, then `Custom`), `SchemeSpec`
/// (one as the scenario chose it, every parameter resolved) and their dispatch, from the
/// list in `builtin_schemes!`.
macro_rules! declare_schemes {
    ($($(#[$attr:meta])* $variant:ident($ty:ty)),* $(,)?) => {
        /// A port's scheme. Per-port state lives inside the variant.
        pub enum Scheme {
            $($(#[$attr])* $variant($ty),)*
            Custom(Box<dyn CustomScheme>),
        }

        /// A scheme as the scenario chose it, every parameter resolved: one per switch
        /// tier or switch, built into a `Scheme` for each of its ports.
        #[derive(Clone, Debug, PartialEq)]
        pub enum SchemeSpec {
            $($(#[$attr])* $variant(<$ty as SchemeKind>::Spec),)*
            /// A scheme from outside the crate, made by the embedding's factory (the Python
            /// bridge registers "python"; a Rust program may register its own).
            Custom {
                kind: String,
                class: String,
                params: serde_json::Value,
            },
        }

        impl Scheme {
            pub fn name(&self) -> &'static str {
                match self {
                    $($(#[$attr])* Scheme::$variant(_) => <$ty as SchemeKind>::NAME,)*
                    Scheme::Custom(_) => "custom",
                }
            }

            /// Queue index for a packet that came in on `in_port`.
            #[inline]
            pub fn classify(&mut self, ctx: &mut PortCtx, pkt: PktId, in_port: u32) -> usize {
                match self {
                    $($(#[$attr])* Scheme::$variant(s) => <$ty as SchemeKind>::classify(s, ctx, pkt, in_port),)*
                    Scheme::Custom(s) => s.classify(ctx, pkt, in_port).min(ctx.queues.len() - 1),
                }
            }

            #[inline]
            pub fn enqueue(&mut self, ctx: &mut PortCtx, pkt: PktId, queue: usize) -> Verdict {
                match self {
                    $($(#[$attr])* Scheme::$variant(s) => <$ty as SchemeKind>::enqueue(s, ctx, pkt, queue),)*
                    Scheme::Custom(s) => s.enqueue(ctx, pkt, queue),
                }
            }

            #[inline]
            pub fn schedule(&mut self, ctx: &mut PortCtx) -> Option<PktId> {
                match self {
                    $($(#[$attr])* Scheme::$variant(s) => <$ty as SchemeKind>::schedule(s, ctx),)*
                    Scheme::Custom(s) => s.schedule(ctx),
                }
            }

            /// Which of the port's `n` queues the next `schedule` will take from, where that
            /// is cheap to know (a hint for prefetching its head packet; None: not known).
            #[inline]
            pub fn next_queue_hint(&self, nonempty: &[u64], n: usize) -> Option<usize> {
                match self {
                    $($(#[$attr])* Scheme::$variant(s) => <$ty as SchemeKind>::next_queue_hint(s, nonempty, n),)*
                    Scheme::Custom(_) => None,
                }
            }

            /// `SchemeKind::SERVES_HEADS` of its kind (false for a custom scheme).
            pub fn serves_heads(&self) -> bool {
                match self {
                    $($(#[$attr])* Scheme::$variant(_) => <$ty as SchemeKind>::SERVES_HEADS,)*
                    Scheme::Custom(_) => false,
                }
            }

            /// The names of the built-in kinds that serve their queues' heads (PFC's schemes).
            pub fn kinds_serving_heads() -> Vec<&'static str> {
                let mut v = Vec::new();
                $($(#[$attr])* if <$ty as SchemeKind>::SERVES_HEADS { v.push(<$ty as SchemeKind>::NAME); })*
                v
            }

            /// Packets the scheme marked CE as they left (HULL); marks on arrival are
            /// counted by the port.
            pub fn marks_at_dequeue(&self) -> u64 {
                match self {
                    $($(#[$attr])* Scheme::$variant(s) => <$ty as SchemeKind>::marks_at_dequeue(s),)*
                    Scheme::Custom(_) => 0,
                }
            }

            /// `SchemeKind::TRIMS` of its kind (false for a custom scheme).
            pub fn can_trim(&self) -> bool {
                match self {
                    $($(#[$attr])* Scheme::$variant(_) => <$ty as SchemeKind>::TRIMS,)*
                    Scheme::Custom(_) => false,
                }
            }

            /// Packets whose payload the scheme cut off (`SchemeKind::trims`).
            pub fn trims(&self) -> u64 {
                match self {
                    $($(#[$attr])* Scheme::$variant(s) => <$ty as SchemeKind>::trims(s),)*
                    Scheme::Custom(_) => 0,
                }
            }
        }

        impl SchemeSpec {
            /// Queues per port (a custom scheme says its own when it is made).
            pub fn queues(&self, voqs: u32) -> u32 {
                match self {
                    $($(#[$attr])* SchemeSpec::$variant(s) => <$ty as SchemeKind>::queues(s, voqs),)*
                    SchemeSpec::Custom { .. } => 1,
                }
            }

            /// The scheme for one port; `seed` and `port` name its random stream.
            pub fn build(&self, seed: u64, port: u32) -> Scheme {
                match self {
                    $($(#[$attr])* SchemeSpec::$variant(s) => Scheme::$variant(<$ty as SchemeKind>::build(s, seed, port)),)*
                    SchemeSpec::Custom { .. } => unreachable!("custom schemes are built by their factory"),
                }
            }
        }
    };
}
pub(crate) use declare_schemes;
