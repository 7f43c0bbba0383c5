//! `[topology]`: the keys each kind takes, its defaults, and its graph, refused before it is
//! built when it would not fit in memory.

use super::checks::{one_of, DIABLO_PRESETS};
use super::kinds::{self, fields_of, Kind};
use super::{err, ConfigError, LinkCfg, TopologyCfg};
use crate::engine::{TimePs, PS_PER_NS, PS_PER_US};
use crate::net::link::{LinkFamily, LinkTech};
use crate::topology::{
    chassis, diablo, edge_list, fat_tree, leaf_spine, single_switch, torus3d, Graph, LinkParams,
    TopologyKind,
};
use serde::{de::DeserializeOwned, Serialize};

/// A resolved topology: its graph, the host links' rate and technology, what one host can
/// send in all (its links together: six on a torus), and the port-to-port latency its
/// preset implies (DIABLO's arrays have their own).
pub struct TopologyOut {
    pub graph: Graph,
    pub host_rate_bps: u64,
    pub host_out_bps: u64,
    pub host_tech: LinkTech,
    pub preset_latency_ps: TimePs,
}

/// What builds a topology kind: its graph, links and preset latency from its section.
pub type TopologyBuild = fn(&mut TopologyCfg) -> Result<Built, ConfigError>;

/// The topology kinds, their parameters and builders: one line a kind, each in its own
/// file (`topology::TopologyKind`).
pub const TOPOLOGIES: &[Kind<TopologyBuild>] = &[
    kind::<single_switch::SingleSwitch>(),
    kind::<chassis::Chassis>(),
    kind::<leaf_spine::LeafSpine>(),
    kind::<fat_tree::FatTree>(),
    kind::<diablo::DiabloArray>(),
    kind::<edge_list::EdgeList>(),
    kind::<torus3d::Torus3d>(),
    #[cfg(test)]
    kind::<crate::topology::toy::ToyDumbbell>(),
];

/// The table entry of topology kind `T`.
const fn kind<T: TopologyKind>() -> Kind<TopologyBuild> {
    Kind {
        name: T::NAME,
        keys: fields_of::<T::Params>,
        build: build::<T>,
    }
}

/// Builds kind `T` from its section: its parameters, links and graph (checked).
fn build<T: TopologyKind>(t: &mut TopologyCfg) -> Result<Built, ConfigError> {
    with_params(t, |p: &mut T::Params, lc| {
        let (link, latency) = link_and_preset(lc, T::DEFAULT_TECHNOLOGY, T::preset(p))?;
        let graph = T::graph(p, link)?;
        graph.check().map_err(|m| ConfigError {
            path: T::GRAPH_FIELD.into(),
            message: m,
        })?;
        Ok((graph, link, latency))
    })
}

/// Keys every topology kind takes.
const SHARED: &[&str] = &["kind", "link"];

/// A graph, its links' parameters and the switch latency its preset implies.
pub type Built = (Graph, LinkParams, TimePs);

/// Parses kind `P`'s parameters, builds with `f`, and writes the parameters back with their
/// defaults.
fn with_params<P: DeserializeOwned + Serialize>(
    t: &mut TopologyCfg,
    f: impl FnOnce(&mut P, &mut LinkCfg) -> Result<Built, ConfigError>,
) -> Result<Built, ConfigError> {
    let mut p: P = kinds::parse("topology", TOPOLOGIES, &t.kind, SHARED, &t.params)?;
    let built = f(&mut p, &mut t.link)?;
    kinds::write_back(&mut t.params, &p);
    Ok(built)
}

pub fn resolve_topology(t: &mut TopologyCfg) -> Result<TopologyOut, ConfigError> {
    let build = kinds::find("topology.kind", TOPOLOGIES, &t.kind)?.build;
    let (graph, link, preset_latency_ps) = build(t)?;
    // Host 0's links: every host of the bundled topologies is alike.
    let h0 = graph
        .nodes
        .iter()
        .position(|n| n.kind == crate::net::NodeKind::Host)
        .unwrap_or(0) as u32;
    let host_out_bps = graph
        .links
        .iter()
        .filter(|l| l.a == h0 || l.b == h0)
        .map(|l| l.rate_bps)
        .sum::<u64>()
        .max(1);
    Ok(TopologyOut {
        graph,
        host_rate_bps: link.rate_bps,
        host_out_bps,
        host_tech: link.tech,
        preset_latency_ps,
    })
}

/// The links' technology, rate and delay. The rate defaults to the technology's (for
/// generic "ethernet", 10 Gbit/s; DIABLO's arrays by preset: 1 Gbit/s with 1 us port-to-port
/// latency, or 10 Gbit/s with 100 ns); a torus defaults to 1 Gbit/s Ethernet with jumbo
/// frames. The delay defaults to the technology's latency.
fn link_and_preset(
    lc: &mut LinkCfg,
    default_tech: &str,
    preset: Option<&mut Option<String>>,
) -> Result<(LinkParams, TimePs), ConfigError> {
    let preset_sets_rate = preset.is_some();
    let name = lc
        .technology
        .get_or_insert_with(|| default_tech.into())
        .clone();
    let name = pcie_width(lc, name)?;
    let Some(tech) = LinkTech::by_name(&name) else {
        let names: Vec<String> = LinkTech::names().iter().map(|n| format!("{n:?}")).collect();
        return Err(err(
            "topology.link.technology",
            format!("{name:?}"),
            format!("one of {}", names.join(", ")),
        ));
    };
    let (preset_rate, preset_latency) = if let Some(preset) = preset {
        let p = preset.get_or_insert_with(|| "1g".into()).clone();
        one_of("topology.preset", &p, DIABLO_PRESETS)?;
        if p == "1g" {
            (1_000_000_000, PS_PER_US)
        } else {
            (10_000_000_000, 100 * PS_PER_NS)
        }
    } else {
        (tech.rate_bps, PS_PER_US)
    };
    let rate_bps = lc.rate.get_or_insert(super::Rate(preset_rate)).0;
    if !tech.any_rate && !preset_sets_rate && rate_bps != tech.rate_bps {
        // The generic Ethernet with the same frames takes any rate.
        let any_rate = if tech.mtu_bytes > 1500 && tech.family == LinkFamily::Ethernet {
            "ethernet_jumbo"
        } else {
            "ethernet"
        };
        return Err(err(
            "topology.link.rate",
            super::Rate(rate_bps),
            format!(
                "{} for technology {name:?} (leave the rate out, or use technology {any_rate:?} for any rate)",
                super::Rate(tech.rate_bps)
            ),
        ));
    }
    let delay_ps = lc.delay.get_or_insert(super::Duration(tech.latency_ps)).0;
    let link = LinkParams {
        rate_bps,
        delay_ps,
        tech,
    };
    Ok((link, preset_latency))
}

/// The technology a PCIe link's `lanes` picks: "pcie_gen2" (or a width of it) with
/// `lanes = n` is "pcie_gen2_x{n}"; "pcie_gen2" alone is x4. Lanes are refused elsewhere.
fn pcie_width(lc: &mut LinkCfg, name: String) -> Result<String, ConfigError> {
    use crate::net::link::PCIE_LANES;
    let pcie = name == "pcie_gen2" || name.starts_with("pcie_gen2_x");
    let Some(lanes) = lc.lanes else {
        if name == "pcie_gen2" {
            lc.technology = Some("pcie_gen2_x4".into());
            return Ok("pcie_gen2_x4".into());
        }
        return Ok(name);
    };
    if !pcie {
        return Err(err(
            "topology.link.lanes",
            lanes,
            format!("no lane count for technology {name:?} (lanes are for \"pcie_gen2\")"),
        ));
    }
    if !PCIE_LANES.iter().any(|&l| i64::from(l) == lanes) {
        return Err(err(
            "topology.link.lanes",
            lanes,
            "a PCIe link width: 1, 2, 4, 8, 12, 16 or 32 lanes",
        ));
    }
    let chosen = format!("pcie_gen2_x{lanes}");
    if name != "pcie_gen2" && name != chosen {
        return Err(err(
            "topology.link.lanes",
            lanes,
            format!("the width of technology {name:?}, or technology \"pcie_gen2\" with any width"),
        ));
    }
    lc.technology = Some(chosen.clone());
    Ok(chosen)
}
