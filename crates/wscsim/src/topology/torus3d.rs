//! A 3D torus (k-ary 3-cube) of servers that forward, as in CamCube: no switches; each
//! server links to its neighbours along each axis, wrapping round. One dimension of 1
//! makes a 2D torus. Servers are numbered by coordinates, h = x + X (y + Y z), and named
//! `h{index}`; each z-slab (all servers with the same z) is a partition.
//!
//! With `load_generators`, the torus also has CamCubeOS's external switch (`ext`, a
//! 1 Gbit/s store-and-forward switch in the paper) with one more port on every server and
//! the load generators (`g0`, `g1`, ..., hosts numbered after the servers) on it: traffic
//! into and out of the cube crosses it; traffic between servers never does.

use super::{Graph, LinkParams};

/// `[topology]` parameters of this kind (defaults are filled in by `TopologyKind::graph`, below).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// [x, y, z] servers per axis (default [3, 3, 3]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dims: Option<Vec<i64>>,
    /// Hosts on an external switch that every server is also linked to (default 0: no
    /// switch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_generators: Option<i64>,
}

pub fn build(dims: [u32; 3], link: LinkParams) -> Graph {
    build_with_generators(dims, link, 0)
}

/// A torus with `generators` hosts on an external switch joined to every server (none:
/// no switch). The external links are of the same kind as the torus's.
pub fn build_with_generators(dims: [u32; 3], link: LinkParams, generators: u32) -> Graph {
    let mut g = torus_only(dims, link);
    if generators > 0 {
        let n = dims[0] * dims[1] * dims[2];
        let ext = g.add_switch("ext".into(), 0);
        for h in 0..n {
            g.link(h, ext, link);
        }
        for i in 0..generators {
            let gen = g.add_host(format!("g{i}"));
            g.link(gen, ext, link);
        }
    }
    g
}

fn torus_only(dims: [u32; 3], link: LinkParams) -> Graph {
    let mut g = Graph::default();
    let n = dims[0] * dims[1] * dims[2];
    for h in 0..n {
        g.add_host(format!("h{h}"));
        let z = h / (dims[0] * dims[1]);
        let last = g.nodes.len() - 1;
        g.nodes[last].forwards = true;
        g.nodes[last].partition = z.min(u32::from(u16::MAX)) as u16;
    }
    for h in 0..n {
        let c = crate::net::routing::torus::coords(dims, h);
        for axis in 0..3 {
            // One link to the next server along each axis of 2 or more (size 2: the next
            // is also the previous, and one link joins them).
            let k = dims[axis];
            if k < 2 || (k == 2 && c[axis] == 1) {
                continue;
            }
            let mut next = c;
            next[axis] = (c[axis] + 1) % k;
            g.link(h, crate::net::routing::torus::host_at(dims, next), link);
        }
    }
    g.torus = Some(dims);
    g
}

/// The parts of a torus, without building it.
pub fn size(dims: [u32; 3]) -> super::size::Size {
    let n: u64 = dims.iter().map(|&k| u64::from(k)).product();
    let per_server = u64::from(crate::net::routing::torus::links_per_server(dims));
    super::size::Size {
        hosts: n,
        switches: 0,
        links: n * per_server / 2,
        max_switch_ports: 0,
        edge_switches: 0,
    }
}

/// Topology kind "torus3d".
pub struct Torus3d;

impl super::TopologyKind for Torus3d {
    const NAME: &'static str = "torus3d";
    type Params = Params;
    const DEFAULT_TECHNOLOGY: &'static str = "1gbe_jumbo";

    /// A torus of `dims = [x, y, z]` servers (each 1 to 64; at most MAX_HOSTS in all).
    fn graph(t: &mut Params, link: LinkParams) -> Result<Graph, crate::check::ConfigError> {
        let dims = t.dims.get_or_insert_with(|| vec![3, 3, 3]).clone();
        let bad = |given: String| {
            crate::check::err(
                "topology.dims",
                given,
                "three sizes [x, y, z], each from 1 to 64, with 2 to 100,000 servers in all (one size of 1 makes a 2D torus)",
            )
        };
        if dims.len() != 3 || dims.iter().any(|&d| !(1..=64).contains(&d)) {
            return Err(bad(format!("{dims:?}")));
        }
        let d = [dims[0] as u32, dims[1] as u32, dims[2] as u32];
        let size = size(d);
        if size.hosts < 2 || size.hosts > super::MAX_HOSTS {
            return Err(bad(format!("{dims:?}")));
        }
        super::size::check_fits(&size)?;
        let generators = *t.load_generators.get_or_insert(0);
        let allowed = "0 (no external switch) to 1000 hosts on the external switch";
        crate::check::in_range("topology.load_generators", generators, 0, 1000, allowed)?;
        Ok(build_with_generators(d, link, generators as u32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::NodeKind;

    #[test]
    fn load_generators_hang_off_a_switch_joined_to_every_server() {
        let g = build_with_generators([3, 3, 3], LinkParams::ethernet(1_000_000_000, 0), 4);
        g.check().unwrap();
        assert_eq!((g.n_hosts(), g.n_switches()), (31, 1));
        let ext = 27;
        assert_eq!(g.nodes[ext].name, "ext");
        assert_eq!(g.nodes[28].name, "g0");
        // 81 torus links, then one per server and one per generator to the switch.
        assert_eq!(g.links.len(), 81 + 27 + 4);
        assert!(g.links[81..]
            .iter()
            .all(|l| l.b == ext as u32 || l.a == ext as u32));
        assert!(g.nodes[28..].iter().all(|x| !x.forwards));
    }

    #[test]
    fn every_server_has_six_links_and_no_switch() {
        for dims in [[3, 3, 3], [4, 5, 6], [8, 8, 8], [4, 4, 1], [2, 3, 4]] {
            let g = build(dims, LinkParams::ethernet(1_000_000_000, 0));
            g.check().unwrap();
            let n = (dims[0] * dims[1] * dims[2]) as usize;
            assert_eq!(g.nodes.len(), n);
            assert!(g
                .nodes
                .iter()
                .all(|x| x.kind == NodeKind::Host && x.forwards));
            let mut degree = vec![0u32; n];
            for l in &g.links {
                degree[l.a as usize] += 1;
                degree[l.b as usize] += 1;
            }
            let expect = size(dims);
            assert_eq!(g.links.len() as u64, expect.links);
            let per: u32 = dims.iter().map(|&k| [0, 0, 1, 2][k.min(3) as usize]).sum();
            assert!(degree.iter().all(|&d| d == per), "{dims:?} {degree:?}");
        }
    }
}
