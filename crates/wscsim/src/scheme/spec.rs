//! A scheme as the scenario chose it, with every parameter resolved: one `SchemeSpec` per
//! switch tier or switch, turned into a `Scheme` value for each of its ports.

use super::drr::DrrClassify;
use super::red::RedParams;
use super::{CustomScheme, DctcpMarking, DropTail, Drr, Hull, Priority, Red, Scheme};
use crate::engine::rng::{family, stream};

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

#[derive(Clone, Debug, PartialEq)]
pub enum SchemeSpec {
    DropTail {
        limit_packets: Option<u32>,
        /// Virtual output queues (one per input, round robin); false: one FIFO.
        voqs: bool,
    },
    Red(RedParams),
    Dctcp {
        k_packets: u32,
    },
    Priority {
        queues: u32,
        push_out: bool,
    },
    Drr {
        classify: DrrClassify,
        quanta: Vec<u32>,
    },
    Hull {
        drain_fraction: f64,
        mark_threshold_bytes: u64,
    },
    PFabric,
    /// A scheme from outside the crate, made by the embedding's factory (the Python bridge
    /// registers "python"; a Rust program may register its own).
    Custom {
        kind: String,
        class: String,
        params: serde_json::Value,
    },
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

impl SchemeSpec {
    /// Queues per port: DropTail keeps one virtual output queue per input (`voqs`); RED,
    /// DCTCP, HULL and pFabric one FIFO; priority queueing and DRR their configured number.
    pub fn queues(&self, voqs: u32) -> u32 {
        match self {
            SchemeSpec::DropTail { voqs: true, .. } => voqs,
            SchemeSpec::Priority { queues, .. } => *queues,
            SchemeSpec::Drr { quanta, .. } => quanta.len() as u32,
            _ => 1,
        }
    }

    /// The scheme for one port; `seed` and `port` name its random stream.
    pub fn build(&self, seed: u64, port: u32) -> Scheme {
        match self {
            SchemeSpec::DropTail { limit_packets, .. } => {
                Scheme::DropTail(DropTail::new(*limit_packets))
            }
            SchemeSpec::Red(p) => Scheme::Red(Box::new(Red::new(
                *p,
                stream(seed, family::SWITCH, port as u64),
            ))),
            SchemeSpec::Dctcp { k_packets } => Scheme::Dctcp(DctcpMarking {
                k_packets: *k_packets,
            }),
            SchemeSpec::Priority { push_out, .. } => Scheme::Priority(Priority {
                push_out: *push_out,
            }),
            SchemeSpec::Drr { classify, quanta } => {
                Scheme::Drr(Box::new(Drr::new(*classify, quanta.clone())))
            }
            SchemeSpec::Hull {
                drain_fraction,
                mark_threshold_bytes,
            } => Scheme::Hull(Box::new(Hull::new(*drain_fraction, *mark_threshold_bytes))),
            SchemeSpec::PFabric => Scheme::PFabric(Box::default()),
            SchemeSpec::Custom { .. } => unreachable!("custom schemes are built by their factory"),
        }
    }
}
