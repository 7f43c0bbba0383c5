//! `[topology]`: the keys each kind takes, its defaults, and its graph, refused before it is
//! built when it would not fit in memory.

use super::checks::{
    check_fits, int_in, one_of, read_capped, DIABLO_PRESETS, MAX_EDGE_LIST_BYTES, MAX_HOSTS,
};
use super::kinds::{self, fields_of, Kind};
use super::{err, ConfigError, LinkCfg, TopologyCfg};
use crate::engine::{TimePs, PS_PER_NS, PS_PER_US};
use crate::net::link::{LinkFamily, LinkTech};
use crate::topology::size::Size;
use crate::topology::{
    chassis, diablo, edge_list, fat_tree, leaf_spine, single_switch, torus3d, Graph, LinkParams,
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

/// What builds a topology kind: its graph, links and preset latency from its section
/// (and the kind's name).
pub type TopologyBuild = fn(&mut TopologyCfg, &str) -> Result<Built, ConfigError>;

/// The topology kinds, their parameters and builders. A new kind adds its entry here.
pub const TOPOLOGIES: &[Kind<TopologyBuild>] = &[
    Kind {
        name: "single_switch",
        keys: fields_of::<single_switch::Params>,
        build: |t, k| with_params(t, |p, lc| plain(k, lc, |l| single_switch_graph(p, l))),
    },
    Kind {
        name: "chassis",
        keys: fields_of::<chassis::Params>,
        build: |t, k| with_params(t, |p, lc| plain(k, lc, |l| chassis_graph(p, l))),
    },
    Kind {
        name: "leaf_spine",
        keys: fields_of::<leaf_spine::Params>,
        build: |t, k| with_params(t, |p, lc| plain(k, lc, |l| leaf_spine_graph(p, l))),
    },
    Kind {
        name: "fat_tree",
        keys: fields_of::<fat_tree::Params>,
        build: |t, k| with_params(t, |p, lc| plain(k, lc, |l| fat_tree_graph(p, l))),
    },
    Kind {
        name: "diablo_array",
        keys: fields_of::<diablo::Params>,
        build: |t, k| {
            with_params(t, |p: &mut diablo::Params, lc| {
                let (link, latency) = link_and_preset(lc, k, Some(&mut p.preset))?;
                Ok((diablo_graph(p, link)?, link, latency))
            })
        },
    },
    Kind {
        name: "edge_list",
        keys: fields_of::<edge_list::Params>,
        build: |t, k| with_params(t, |p, lc| plain(k, lc, |l| edge_list_graph(p, l))),
    },
    Kind {
        name: "torus3d",
        keys: fields_of::<torus3d::Params>,
        build: |t, k| with_params(t, |p, lc| plain(k, lc, |l| torus3d_graph(p, l))),
    },
];

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

/// Builds with `f` on links that take the kind's defaults.
fn plain(
    kind: &str,
    lc: &mut LinkCfg,
    f: impl FnOnce(LinkParams) -> Result<Graph, ConfigError>,
) -> Result<Built, ConfigError> {
    let (link, latency) = link_and_preset(lc, kind, None)?;
    Ok((f(link)?, link, latency))
}

pub fn resolve_topology(t: &mut TopologyCfg) -> Result<TopologyOut, ConfigError> {
    let build = kinds::find("topology.kind", TOPOLOGIES, &t.kind)?.build;
    let kind = t.kind.clone();
    let (graph, link, preset_latency_ps) = build(t, &kind)?;
    graph.check().map_err(|m| ConfigError {
        path: if kind == "edge_list" {
            "topology.file".into()
        } else {
            "topology".into()
        },
        message: m,
    })?;
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
    kind: &str,
    preset: Option<&mut Option<String>>,
) -> Result<(LinkParams, TimePs), ConfigError> {
    let default_tech = if kind == "torus3d" {
        "1gbe_jumbo"
    } else {
        "ethernet"
    };
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
    if !tech.any_rate && kind != "diablo_array" && rate_bps != tech.rate_bps {
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

/// A torus of `dims = [x, y, z]` servers (each 1 to 64; at most MAX_HOSTS in all).
fn torus3d_graph(t: &mut torus3d::Params, link: LinkParams) -> Result<Graph, ConfigError> {
    let dims = t.dims.get_or_insert_with(|| vec![3, 3, 3]).clone();
    let bad = |given: String| {
        err(
            "topology.dims",
            given,
            "three sizes [x, y, z], each from 1 to 64, with 2 to 100,000 servers in all (one size of 1 makes a 2D torus)",
        )
    };
    if dims.len() != 3 || dims.iter().any(|&d| !(1..=64).contains(&d)) {
        return Err(bad(format!("{dims:?}")));
    }
    let d = [dims[0] as u32, dims[1] as u32, dims[2] as u32];
    let size = torus3d::size(d);
    if size.hosts < 2 || size.hosts > MAX_HOSTS {
        return Err(bad(format!("{dims:?}")));
    }
    check_fits(&size)?;
    let generators = *t.load_generators.get_or_insert(0);
    let allowed = "0 (no external switch) to 1000 hosts on the external switch";
    crate::check::in_range("topology.load_generators", generators, 0, 1000, allowed)?;
    Ok(torus3d::build_with_generators(d, link, generators as u32))
}

fn single_switch_graph(
    t: &mut single_switch::Params,
    link: LinkParams,
) -> Result<Graph, ConfigError> {
    let h = int_in(
        "topology.hosts",
        *t.hosts.get_or_insert(16),
        2,
        MAX_HOSTS as i64,
    )?;
    let hosts = u64::from(h);
    check_fits(&Size {
        hosts,
        switches: 1,
        links: hosts,
        max_switch_ports: hosts,
        edge_switches: 1,
    })?;
    Ok(single_switch::build(h, link))
}

fn chassis_graph(t: &mut chassis::Params, link: LinkParams) -> Result<Graph, ConfigError> {
    let servers = int_in("topology.servers", *t.servers.get_or_insert(46), 2, 100_000)?;
    let switches = int_in(
        "topology.switches",
        *t.switches.get_or_insert(2),
        1,
        i64::from(crate::topology::MAX_NICS),
    )?;
    let hosts = u64::from(servers);
    check_fits(&Size {
        hosts,
        switches: u64::from(switches),
        links: hosts * u64::from(switches),
        max_switch_ports: hosts,
        edge_switches: u64::from(switches),
    })?;
    Ok(chassis::build(servers, switches, link))
}

fn fat_tree_graph(t: &mut fat_tree::Params, link: LinkParams) -> Result<Graph, ConfigError> {
    let k = *t.k.get_or_insert(4);
    if !(2..=72).contains(&k) || k % 2 != 0 {
        return Err(err(
            "topology.k",
            k,
            "an even integer from 2 to 72 (k^3/4 hosts, at most 100,000)",
        ));
    }
    check_fits(&fat_tree::size(k as u32))?;
    Ok(fat_tree::build(k as u32, link))
}

fn leaf_spine_graph(t: &mut leaf_spine::Params, link: LinkParams) -> Result<Graph, ConfigError> {
    let leaves = int_in("topology.leaves", *t.leaves.get_or_insert(4), 1, 4096)?;
    let spines = int_in("topology.spines", *t.spines.get_or_insert(2), 1, 4096)?;
    let hpl = int_in(
        "topology.hosts_per_leaf",
        *t.hosts_per_leaf.get_or_insert(8),
        1,
        4096,
    )?;
    if leaves as u64 * hpl as u64 > MAX_HOSTS {
        return Err(err(
            "topology.hosts_per_leaf",
            hpl,
            format!(
                "at most {} hosts in all (leaves x hosts_per_leaf)",
                MAX_HOSTS
            ),
        ));
    }
    let os = *t.oversubscription.get_or_insert(1.0);
    // Spine links at 1000 times the need are already more than any network has; far
    // smaller ratios only push their rate towards overflow.
    let allowed = "a ratio from 0.001 to 1000 (1 means none, 3 means 3:1)";
    crate::check::in_range("topology.oversubscription", os, 0.001, 1000.0, allowed)?;
    if leaves * hpl < 2 {
        return Err(err(
            "topology.hosts_per_leaf",
            hpl,
            "enough hosts for at least 2 in all",
        ));
    }
    let up = LinkParams {
        rate_bps: leaf_spine::uplink_rate_bps(hpl, spines, link.rate_bps, os).max(1),
        ..link
    };
    check_fits(&leaf_spine::size(leaves, spines, hpl))?;
    Ok(leaf_spine::build(leaves, spines, hpl, link, up))
}

fn diablo_graph(t: &mut diablo::Params, link: LinkParams) -> Result<Graph, ConfigError> {
    let spr = int_in(
        "topology.servers_per_rack",
        *t.servers_per_rack.get_or_insert(31),
        1,
        1000,
    )?;
    let rpa = int_in(
        "topology.racks_per_array",
        *t.racks_per_array.get_or_insert(16),
        1,
        1000,
    )?;
    let racks = int_in("topology.racks", *t.racks.get_or_insert(16), 1, 100_000)?;
    if racks as u64 * spr as u64 > MAX_HOSTS {
        return Err(err(
            "topology.racks",
            racks,
            format!(
                "at most {} servers in all (racks x servers_per_rack)",
                MAX_HOSTS
            ),
        ));
    }
    if racks * spr < 2 {
        return Err(err(
            "topology.racks",
            racks,
            "enough racks for at least 2 servers",
        ));
    }
    check_fits(&diablo::size(racks, spr, rpa))?;
    Ok(diablo::build(racks, spr, rpa, link))
}

fn edge_list_graph(t: &mut edge_list::Params, link: LinkParams) -> Result<Graph, ConfigError> {
    let Some(path) = t.file.clone() else {
        return Err(err(
            "topology.file",
            "nothing",
            "the path of an edge-list file",
        ));
    };
    let text = read_capped(
        &path,
        "topology.file",
        "a readable edge-list file",
        MAX_EDGE_LIST_BYTES,
    )?;
    let g = edge_list::parse(&text, link).map_err(|m| ConfigError {
        path: "topology.file".into(),
        message: format!("{path}: {m}"),
    })?;
    check_fits(&Size::of_graph(&g))?;
    Ok(g)
}
