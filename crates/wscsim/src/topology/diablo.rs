//! DIABLO's array (ASPLOS 2015, section 4.2, Figure 7): racks of N servers (31 by default)
//! on one top-of-rack switch whose spare port goes to an array switch; array switches of up
//! to 16 racks, each with one uplink to a datacenter switch. With a single array there is
//! no datacenter switch (DIABLO's 496-node setup). All links run at the same rate, so the
//! rack is 31:1 and the array 16:1 oversubscribed.

use super::{Graph, LinkParams};

/// `[topology]` parameters of this kind (defaults are filled in by `TopologyKind::graph`, below).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// "1g" or "10g": link rate and switch latency (default "1g").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Racks (default 16).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub racks: Option<i64>,
    /// Servers per rack (default 31).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub servers_per_rack: Option<i64>,
    /// Racks per array switch (default 16).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub racks_per_array: Option<i64>,
}

pub fn build(racks: u32, servers_per_rack: u32, racks_per_array: u32, link: LinkParams) -> Graph {
    let mut g = Graph::default();
    let arrays = racks.div_ceil(racks_per_array);
    let dc = if arrays > 1 {
        Some(g.add_switch("datacenter".into(), 2))
    } else {
        None
    };
    let mut server = 0;
    for a in 0..arrays {
        // Each array is a partition; the datacenter switch is partition 0.
        let first_node = g.nodes.len() as u32;
        let array = g.add_switch(format!("array{a}"), 1);
        if let Some(dc) = dc {
            g.link(array, dc, link);
        }
        let first = a * racks_per_array;
        for r in first..(first + racks_per_array).min(racks) {
            let tor = g.add_switch(format!("tor{r}"), 0);
            for _ in 0..servers_per_rack {
                let n = g.add_host(format!("h{server}"));
                server += 1;
                g.link(n, tor, link);
            }
            g.link(tor, array, link);
        }
        g.set_partition(first_node, (a + 1) as u16);
    }
    g
}

/// The parts of a DIABLO array, without building it.
pub fn size(racks: u32, servers_per_rack: u32, racks_per_array: u32) -> super::size::Size {
    let (r, spr) = (u64::from(racks), u64::from(servers_per_rack));
    let arrays = r.div_ceil(u64::from(racks_per_array));
    let dc = u64::from(arrays > 1);
    let rack_ports = spr + 1;
    let array_ports = r.min(u64::from(racks_per_array)) + dc;
    super::size::Size {
        hosts: r * spr,
        switches: r + arrays + dc,
        links: r * spr + r + arrays * dc,
        max_switch_ports: rack_ports.max(array_ports).max(arrays * dc),
        edge_switches: r,
    }
}

/// Topology kind "diablo_array".
pub struct DiabloArray;

impl super::TopologyKind for DiabloArray {
    const NAME: &'static str = "diablo_array";
    type Params = Params;

    fn preset(p: &mut Params) -> Option<&mut Option<String>> {
        Some(&mut p.preset)
    }

    /// Checks the parameters, fills in their defaults and builds the graph.
    fn graph(t: &mut Params, link: LinkParams) -> Result<Graph, crate::check::ConfigError> {
        let spr = crate::check::int_in(
            "topology.servers_per_rack",
            *t.servers_per_rack.get_or_insert(31),
            1,
            1000,
        )?;
        let rpa = crate::check::int_in(
            "topology.racks_per_array",
            *t.racks_per_array.get_or_insert(16),
            1,
            1000,
        )?;
        let racks = crate::check::int_in("topology.racks", *t.racks.get_or_insert(16), 1, 100_000)?;
        if racks as u64 * spr as u64 > super::MAX_HOSTS {
            return Err(crate::check::err(
                "topology.racks",
                racks,
                format!(
                    "at most {} servers in all (racks x servers_per_rack)",
                    super::MAX_HOSTS
                ),
            ));
        }
        if racks * spr < 2 {
            return Err(crate::check::err(
                "topology.racks",
                racks,
                "enough racks for at least 2 servers",
            ));
        }
        super::size::check_fits(&size(racks, spr, rpa))?;
        Ok(build(racks, spr, rpa, link))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_scales() {
        let l = LinkParams::ethernet(1_000_000_000, 0);
        for (racks, servers, switches) in [
            (16u32, 496usize, 17usize),
            (32, 992, 32 + 2 + 1),
            (64, 1984, 64 + 4 + 1),
        ] {
            let g = build(racks, 31, 16, l);
            assert_eq!(g.n_hosts(), servers);
            assert_eq!(g.n_switches(), switches);
            g.check().unwrap();
        }
    }
}
