//! `[runtime]`: how CamCubeOS's runtime on the servers of a torus queues packets. By
//! default each service has its own queue at each server and links are chosen late
//! (`net::service_queues`); `queues = "per_link"` sends each packet straight to the queue
//! of its first free candidate link instead (the choice made early, as a plain forwarder).

use super::{err, ConfigError};
use crate::net::service_queues::QueueSpec;
use crate::services::tunnel::TunnelSpec;
use crate::topology::Graph;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The services of the runtime, by id (`services::TRANSPORT`, `services::PING`), from the
/// services' list. Service 0 carries the hosts' TCP and UDP.
pub const SERVICES: &[&str] = crate::services::NAMES;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeCfg {
    /// "per_service" (default) or "per_link".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queues: Option<String>,
    /// Packets each service's queue holds at one server (default 1,000; 0: no limit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_packets: Option<i64>,
    /// What a full queue drops: "newest" (the arriving packet, default) or "oldest".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drop: Option<String>,
    /// Turns in a row each service gets at a link (default 1 each: fair queueing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weights: Option<BTreeMap<String, i64>>,
    /// Segments of a TCP flow the tunnel holds at its destination behind a hole (default
    /// 64, the simulator specification's choice; 0: no reorder buffers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reorder_packets: Option<i64>,
    /// How long a hole may hold a flow's later segments back (default 10 ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reorder_hold: Option<crate::units::Duration>,
    /// Pack packets waiting for a link into one frame up to the link's MTU (default
    /// false; needs per-service queues).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pack: Option<bool>,
    /// Services written in Python, each `{ class = "file.py:Class", params = {...} }`;
    /// they take the ids after the built-in services', in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub services: Vec<PythonServiceCfg>,
}

/// One `[[runtime.services]]` entry.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PythonServiceCfg {
    pub class: String,
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub params: serde_json::Map<String, serde_json::Value>,
}

/// A Python service of the runtime, resolved: its id, class string and parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PythonService {
    pub id: u16,
    pub class: String,
    pub params: serde_json::Map<String, serde_json::Value>,
}

/// What `[runtime]` resolves to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuntimeSpec {
    /// Per-service queues (None: per-link queues).
    pub queues: Option<Vec<QueueSpec>>,
    /// The tunnel's reorder buffers (None: off).
    pub tunnel: Option<TunnelSpec>,
    /// Packets waiting for a link leave packed into one frame.
    pub pack: bool,
    pub python_services: Vec<PythonService>,
}

/// The runtime of a torus run (nothing for other topologies), with the defaults written
/// back.
pub fn resolve_runtime(
    cfg: &mut Option<RuntimeCfg>,
    graph: &Graph,
) -> Result<RuntimeSpec, ConfigError> {
    if graph.torus.is_none() {
        if cfg.is_some() {
            return Err(err(
                "runtime",
                "a table for a topology without forwarding servers",
                "only with topology.kind = \"torus3d\"",
            ));
        }
        return Ok(RuntimeSpec::default());
    }
    let c = cfg.get_or_insert_with(Default::default);
    let tunnel = resolve_tunnel(c)?;
    let queues = c.queues.get_or_insert_with(|| "per_service".into()).clone();
    super::checks::one_of("runtime.queues", &queues, &["per_service", "per_link"])?;
    let limit = *c.queue_packets.get_or_insert(1000);
    crate::check::in_range(
        "runtime.queue_packets",
        limit,
        0,
        u32::MAX as i64,
        "0 (no limit) or a number of packets up to 4294967295",
    )?;
    let drop = c.drop.get_or_insert_with(|| "newest".into()).clone();
    super::checks::one_of("runtime.drop", &drop, &["newest", "oldest"])?;
    let weights = c
        .weights
        .get_or_insert_with(|| SERVICES.iter().map(|s| (s.to_string(), 1)).collect());
    for (name, &w) in weights.iter() {
        super::checks::one_of("runtime.weights", name, SERVICES)?;
        crate::check::in_range(
            &format!("runtime.weights.{name}"),
            w,
            1,
            1_000_000,
            "1 to 1000000",
        )?;
    }
    let pack = *c.pack.get_or_insert(false);
    let python_services = resolve_python_services(&c.services)?;
    if queues == "per_link" {
        if pack {
            return Err(err(
                "runtime.pack",
                true,
                "false with runtime.queues = \"per_link\" (packing takes waiting packets from the per-service queues)",
            ));
        }
        return Ok(RuntimeSpec {
            queues: None,
            tunnel,
            pack,
            python_services,
        });
    }
    let specs = SERVICES
        .iter()
        .map(|s| QueueSpec {
            limit_pkts: limit as u32,
            drop_oldest: drop == "oldest",
            weight: weights.get(*s).copied().unwrap_or(1) as u32,
        })
        .collect();
    Ok(RuntimeSpec {
        queues: Some(specs),
        tunnel,
        pack,
        python_services,
    })
}

/// `runtime.services`: ids after the built-in services', at most 64 services in all.
fn resolve_python_services(list: &[PythonServiceCfg]) -> Result<Vec<PythonService>, ConfigError> {
    let room = 64 - SERVICES.len();
    if list.len() > room {
        return Err(err(
            "runtime.services",
            format!("{} services", list.len()),
            format!(
                "at most {room} (64 services in all, {} built in)",
                SERVICES.len()
            ),
        ));
    }
    list.iter()
        .enumerate()
        .map(|(i, s)| {
            if s.class.trim().is_empty() {
                return Err(err(
                    &format!("runtime.services[{i}].class"),
                    "\"\"",
                    "\"path/to/file.py:Class\", \"module:Class\" or a name given to wscsim.register_service",
                ));
            }
            Ok(PythonService {
                id: (SERVICES.len() + i) as u16,
                class: s.class.clone(),
                params: s.params.clone(),
            })
        })
        .collect()
}

fn resolve_tunnel(c: &mut RuntimeCfg) -> Result<Option<TunnelSpec>, ConfigError> {
    let limit = *c.reorder_packets.get_or_insert(64);
    crate::check::in_range(
        "runtime.reorder_packets",
        limit,
        0,
        1_000_000,
        "0 (no reorder buffers) to 1000000 segments",
    )?;
    let hold = *c
        .reorder_hold
        .get_or_insert(crate::units::Duration(10_000_000_000));
    if hold.0 == 0 {
        return Err(err(
            "runtime.reorder_hold",
            hold,
            "a positive duration such as \"1ms\"",
        ));
    }
    Ok((limit > 0).then_some(TunnelSpec {
        limit: limit as u32,
        hold_ps: hold.0,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::LinkParams;

    #[test]
    fn defaults_and_bad_input() {
        let torus =
            crate::topology::torus3d::build([3, 3, 3], LinkParams::ethernet(1_000_000_000, 0));
        let mut cfg = None;
        let spec = resolve_runtime(&mut cfg, &torus).unwrap();
        assert_eq!(spec.queues, Some(vec![QueueSpec::default(); 6]));
        assert_eq!(
            spec.tunnel,
            Some(TunnelSpec {
                limit: 64,
                hold_ps: 10_000_000_000
            })
        );
        assert_eq!(SERVICES[crate::services::MULTICAST as usize], "multicast");
        assert_eq!(SERVICES[crate::services::RELIABLE as usize], "reliable");
        assert_eq!(SERVICES[crate::services::TRANSPORT as usize], "transport");
        assert_eq!(SERVICES[crate::services::PING as usize], "ping");
        assert_eq!(SERVICES[crate::services::KVSTORE as usize], "kvstore");
        assert_eq!(SERVICES[crate::services::AGGREGATE as usize], "aggregate");
        assert_eq!(cfg.unwrap().queue_packets, Some(1000));
        let bad = |c: RuntimeCfg| resolve_runtime(&mut Some(c), &torus).unwrap_err().path;
        let q = |s: &str| RuntimeCfg {
            queues: Some(s.into()),
            ..Default::default()
        };
        assert_eq!(bad(q("per_flow")), "runtime.queues");
        assert_eq!(
            bad(RuntimeCfg {
                queue_packets: Some(-1),
                ..Default::default()
            }),
            "runtime.queue_packets"
        );
        assert_eq!(
            bad(RuntimeCfg {
                weights: Some([("pong".to_string(), 1)].into()),
                ..Default::default()
            }),
            "runtime.weights"
        );
        assert_eq!(
            bad(RuntimeCfg {
                weights: Some([("transport".to_string(), 0)].into()),
                ..Default::default()
            }),
            "runtime.weights.transport"
        );
        let star = crate::topology::single_switch::build(4, LinkParams::ethernet(1_000_000_000, 0));
        assert_eq!(
            resolve_runtime(&mut None, &star),
            Ok(RuntimeSpec::default())
        );
        assert_eq!(
            resolve_runtime(&mut Some(RuntimeCfg::default()), &star)
                .unwrap_err()
                .path,
            "runtime"
        );
        let per_link = resolve_runtime(&mut Some(q("per_link")), &torus).unwrap();
        assert_eq!(per_link.queues, None);
        assert!(per_link.tunnel.is_some());
    }

    #[test]
    fn tunnel_defaults_and_bad_input() {
        let torus =
            crate::topology::torus3d::build([3, 3, 3], LinkParams::ethernet(1_000_000_000, 0));
        let bad = |c: RuntimeCfg| resolve_runtime(&mut Some(c), &torus).unwrap_err().path;
        let off = RuntimeCfg {
            reorder_packets: Some(0),
            ..Default::default()
        };
        assert_eq!(
            resolve_runtime(&mut Some(off), &torus).unwrap().tunnel,
            None
        );
        assert_eq!(
            bad(RuntimeCfg {
                reorder_packets: Some(-3),
                ..Default::default()
            }),
            "runtime.reorder_packets"
        );
        assert_eq!(
            bad(RuntimeCfg {
                reorder_hold: Some(crate::units::Duration(0)),
                ..Default::default()
            }),
            "runtime.reorder_hold"
        );
    }
}
