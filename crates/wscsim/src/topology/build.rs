//! Turns a `Graph` into a `Network`: ports for every link end, queue sets run by the
//! switch's scheme, buffers, and ECMP routing tables computed by breadth-first search.

use super::Graph;
use crate::engine::TimePs;
use crate::net::link::LinkTech;
use crate::net::routing::torus::{self, TorusRouting, NO_PORT};
use crate::net::routing::{Routing, SwitchGraph};
use crate::net::{
    Forwarder, Forwarding, InputBuffers, Network, NetworkParts, Node, NodeKind, Port, PortStats,
    SharedBuffer, Switch, Wire, NONE,
};
use crate::packet::PktQueue;
use crate::scheme::spec::{CustomFactory, PortSite};
use crate::scheme::{Scheme, SchemeSpec};

/// Most virtual output queues per switch port: queues per port times ports stays linear in
/// the radix (a 1,000-port switch would otherwise hold a million queues), and it is also the
/// most queues a scheme may use per port.
pub const MAX_VOQS: u32 = crate::scheme::MAX_QUEUES;

/// Switch parameters applied to every switch.
#[derive(Clone, Debug)]
pub struct SwitchParams {
    pub buffer_per_port_bytes: u64,
    /// Some(total) for one shared buffer per switch with dynamic thresholds.
    pub shared_buffer_bytes: Option<u64>,
    /// Buffers of the packets' inputs instead of the outputs' (`buffer_per_port_bytes` per
    /// input, or per input at each output).
    pub input_buffers: InputBuffers,
    pub dt_alpha: f64,
    pub port_to_port_ps: TimePs,
    pub forwarding: Forwarding,
    /// The scheme of every switch port, unless an override names the switch or its tier.
    pub scheme: SchemeSpec,
    pub overrides: Vec<SwitchOverride>,
    /// The scheme of host NIC queues (unbounded buffers).
    pub nic_scheme: SchemeSpec,
    /// Seeds the schemes' random streams.
    pub seed: u64,
    /// Priority flow control on every switch (None: none).
    pub pfc: Option<crate::net::pfc::Spec>,
}

/// A scheme, a buffer per port, or both, for the switches of some tiers or with some names.
#[derive(Clone, Debug)]
pub struct SwitchOverride {
    pub tiers: Vec<u8>,
    pub switches: Vec<String>,
    pub spec: Option<SchemeSpec>,
    pub buffer_per_port_bytes: Option<u64>,
}

impl SwitchOverride {
    fn names(&self, name: &str, tier: u8) -> bool {
        self.tiers.contains(&tier) || self.switches.iter().any(|s| s == name)
    }
}

impl SwitchParams {
    /// The scheme a switch runs: the last override naming it or its tier with a scheme,
    /// else the default.
    pub fn scheme_for(&self, name: &str, tier: u8) -> &SchemeSpec {
        self.overrides
            .iter()
            .rev()
            .filter(|o| o.names(name, tier))
            .find_map(|o| o.spec.as_ref())
            .unwrap_or(&self.scheme)
    }

    /// A switch's buffer per port: the last override naming it or its tier with a buffer,
    /// else the default.
    pub fn buffer_for(&self, name: &str, tier: u8) -> u64 {
        self.overrides
            .iter()
            .rev()
            .filter(|o| o.names(name, tier))
            .find_map(|o| o.buffer_per_port_bytes)
            .unwrap_or(self.buffer_per_port_bytes)
    }
}

/// Builds the network with built-in schemes only.
pub fn build_network(g: &Graph, sp: &SwitchParams) -> Network {
    build_network_with(g, sp, None).expect("built-in schemes need no factory")
}

/// Where every node's ports are: each node's ports are contiguous, in the order its links
/// appear.
struct Layout {
    /// Node -> host or switch index, in order of appearance.
    index: Vec<u32>,
    nports: Vec<u32>,
    port_base: Vec<u32>,
    /// For each port: (node, peer node, peer's local port, link index).
    port_info: Vec<(u32, u32, u32, usize)>,
    n_hosts: usize,
    n_switches: usize,
}

fn layout(g: &Graph) -> Layout {
    let n = g.nodes.len();
    let mut index = vec![0u32; n];
    let (mut nh, mut ns) = (0u32, 0u32);
    for (i, nd) in g.nodes.iter().enumerate() {
        let counter = match nd.kind {
            NodeKind::Host => &mut nh,
            NodeKind::Switch => &mut ns,
        };
        index[i] = *counter;
        *counter += 1;
    }
    let mut nports = vec![0u32; n];
    for l in &g.links {
        nports[l.a as usize] += 1;
        nports[l.b as usize] += 1;
    }
    let mut port_base = vec![0u32; n];
    let mut acc = 0;
    for i in 0..n {
        port_base[i] = acc;
        acc += nports[i];
    }
    let mut fill = vec![0u32; n];
    let mut port_info = vec![(0u32, 0u32, 0u32, 0usize); acc as usize];
    for (li, l) in g.links.iter().enumerate() {
        let pa = port_base[l.a as usize] + fill[l.a as usize];
        fill[l.a as usize] += 1;
        let pb = port_base[l.b as usize] + fill[l.b as usize];
        fill[l.b as usize] += 1;
        port_info[pa as usize] = (l.a, l.b, pb - port_base[l.b as usize], li);
        port_info[pb as usize] = (l.b, l.a, pa - port_base[l.a as usize], li);
    }
    Layout {
        index,
        nports,
        port_base,
        port_info,
        n_hosts: nh as usize,
        n_switches: ns as usize,
    }
}

/// The nodes, the switches and each host's node.
fn make_nodes(g: &Graph, sp: &SwitchParams, lay: &Layout) -> (Vec<Node>, Vec<Switch>, Vec<u32>) {
    let mut nodes = Vec::with_capacity(g.nodes.len());
    let mut switches = Vec::new();
    let mut host_nodes = Vec::new();
    for (i, nd) in g.nodes.iter().enumerate() {
        nodes.push(Node {
            kind: nd.kind,
            index: lay.index[i],
            port_base: lay.port_base[i],
            nports: lay.nports[i],
            partition: nd.partition,
            forwarder: Forwarder::for_node(nd.kind, nd.forwards)
                .expect("every kind of node has a forwarding function (a unit test checks)"),
        });
        match nd.kind {
            NodeKind::Host => host_nodes.push(i as u32),
            NodeKind::Switch => switches.push(Switch {
                node: i as u32,
                name: nd.name.clone(),
                tier: nd.tier,
                forwarding: sp.forwarding,
                port_to_port_ps: sp.port_to_port_ps,
                shared: sp.shared_buffer_bytes.map(|t| SharedBuffer {
                    total_bytes: t,
                    used_bytes: 0,
                    alpha: sp.dt_alpha,
                }),
                input_buffers: sp.input_buffers,
            }),
        }
    }
    (nodes, switches, host_nodes)
}

/// The scheme of port `port` and how many queues it uses. A DropTail switch port has one
/// virtual output queue per input port, up to MAX_VOQS (inputs beyond share queues by input
/// index modulo MAX_VOQS); other schemes say how many queues they use; a NIC has one queue.
fn port_scheme(
    g: &Graph,
    sp: &SwitchParams,
    lay: &Layout,
    port: u32,
    custom: &mut Option<&mut CustomFactory>,
) -> Result<(u32, Scheme), String> {
    let (node, _, _, li) = lay.port_info[port as usize];
    let nd = &g.nodes[node as usize];
    if nd.kind != NodeKind::Switch {
        return Ok((sp.nic_scheme.queues(1), sp.nic_scheme.build(sp.seed, port)));
    }
    let nports = lay.nports[node as usize];
    match sp.scheme_for(&nd.name, nd.tier) {
        SchemeSpec::Custom {
            kind,
            class,
            params,
        } => {
            let site = PortSite {
                switch_name: &nd.name,
                switch_index: lay.index[node as usize],
                tier: nd.tier,
                local_port: port - lay.port_base[node as usize],
                switch_ports: nports,
                rate_bps: g.links[li].rate_bps,
            };
            let Some(f) = custom.as_mut() else {
                return Err(format!("scheme kind {kind:?} needs its host program (the Python package for \"python\")"));
            };
            let (q, s) = f(kind, class, params, &site)?;
            if !(1..=MAX_VOQS).contains(&q) {
                return Err(format!(
                    "scheme {class} asked for {q} queues per port; allowed: 1 to {MAX_VOQS}"
                ));
            }
            Ok((q, Scheme::Custom(s)))
        }
        spec => Ok((spec.queues(nports.min(MAX_VOQS)), spec.build(sp.seed, port))),
    }
}

/// Every port with its link's rate, delay and technology, its queues and its scheme.
struct Ports {
    ports: Vec<Port>,
    queues: Vec<PktQueue>,
    masks: Vec<u64>,
    schemes: Vec<Scheme>,
}

fn make_ports(
    g: &Graph,
    sp: &SwitchParams,
    lay: &Layout,
    mut custom: Option<&mut CustomFactory>,
) -> Result<Ports, String> {
    let total = lay.port_info.len();
    let mut out = Ports {
        ports: Vec::with_capacity(total),
        queues: Vec::new(),
        masks: Vec::new(),
        schemes: Vec::with_capacity(total),
    };
    for (p, &(node, peer, peer_local, li)) in lay.port_info.iter().enumerate() {
        let l = &g.links[li];
        let is_switch = g.nodes[node as usize].kind == NodeKind::Switch;
        let peer_switch = g.nodes[peer as usize].kind == NodeKind::Switch;
        let (q_count, scheme) = port_scheme(g, sp, lay, p as u32, &mut custom)?;
        let q_base = out.queues.len() as u32;
        out.queues
            .extend(std::iter::repeat_n(PktQueue::default(), q_count as usize));
        let mask_base = out.masks.len() as u32;
        out.masks
            .extend(std::iter::repeat_n(0u64, (q_count as usize).div_ceil(64)));
        out.schemes.push(scheme);
        out.ports.push(Port {
            node,
            switch: if is_switch {
                lay.index[node as usize]
            } else {
                NONE
            },
            peer_node: peer,
            peer_in_port: peer_local,
            rate_bps: l.rate_bps,
            wire_overhead_bytes: l.tech.wire_overhead_bytes,
            up: true,
            ps_per_byte: exact_ps_per_byte(l.rate_bps),
            prop_ps: l.delay_ps,
            peer_delay_ps: if peer_switch { sp.port_to_port_ps } else { 0 },
            peer_cut_through: peer_switch && sp.forwarding == Forwarding::CutThrough,
            q_base,
            q_count,
            mask_base,
            bytes_queued: 0,
            pkts_queued: 0,
            buffer_bytes: if is_switch {
                let nd = &g.nodes[node as usize];
                sp.buffer_for(&nd.name, nd.tier)
            } else {
                u64::MAX
            },
            busy_until_ps: 0,
            wake_at_ps: crate::engine::NEVER,
            stats: PortStats::default(),
            taps: 0,
        });
    }
    Ok(out)
}

/// Builds the network; `custom` makes the ports of switches whose scheme is a custom one.
/// Fails (with the factory's message) if a custom scheme cannot be made.
pub fn build_network_with(
    g: &Graph,
    sp: &SwitchParams,
    custom: Option<&mut CustomFactory>,
) -> Result<Network, String> {
    let lay = layout(g);
    let (nodes, switches, host_nodes) = make_nodes(g, sp, &lay);
    let Ports {
        ports,
        queues,
        masks,
        schemes,
    } = make_ports(g, sp, &lay, custom)?;
    let routing = Routing::shortest_paths(&switch_graph(g, &lay));
    // A switch whose (custom) scheme routes: its first port's scheme is asked.
    let route_hooks = switches
        .iter()
        .map(|sw| {
            let p = nodes[sw.node as usize].port_base;
            if nodes[sw.node as usize].nports > 0 && schemes[p as usize].routes() {
                p
            } else {
                NONE
            }
        })
        .collect();
    let wires = lay
        .port_info
        .iter()
        .map(|&(_, peer, peer_local, _)| Wire {
            in_flight: Default::default(),
            to_node: peer,
            to_port: peer_local,
            remote: false,
            to_partition: 0,
        })
        .collect();
    let (techs, host_tech, port_tech) = host_technologies(g, &host_nodes, &lay);
    let torus = g.torus.map(|dims| torus_routing(g, dims, &lay));
    Ok(Network::new(NetworkParts {
        nodes,
        node_names: g.nodes.iter().map(|n| n.name.clone()).collect(),
        ports,
        wires,
        host_tech,
        port_tech,
        techs,
        torus,
        queues,
        masks,
        schemes,
        switches,
        host_nodes,
        routing,
        route_hooks,
    }))
}

/// The two ports (one per end) of link `link` of `g`, in the network built from it: each
/// node's ports follow the order in which its links appear.
pub fn ports_of_link(net: &Network, g: &Graph, link: u32) -> [u32; 2] {
    let l = &g.links[link as usize];
    let port = |node: u32| {
        let before = g.links[..link as usize]
            .iter()
            .filter(|x| x.a == node || x.b == node)
            .count() as u32;
        net.nodes()[node as usize].port_base + before
    };
    [port(l.a), port(l.b)]
}

/// The distinct technologies of the links; for each host the one of its first link (which
/// frames what it sends); and for each port its link's.
fn host_technologies(
    g: &Graph,
    host_nodes: &[u32],
    lay: &Layout,
) -> (Vec<LinkTech>, Vec<u8>, Vec<u8>) {
    let mut techs: Vec<LinkTech> = Vec::new();
    let mut id_of = |t: LinkTech| match techs.iter().position(|x| *x == t) {
        Some(i) => i as u8,
        None => {
            techs.push(t);
            (techs.len() - 1) as u8
        }
    };
    let host_tech = host_nodes
        .iter()
        .map(|&n| {
            let li = lay.port_info[lay.port_base[n as usize] as usize].3;
            id_of(g.links[li].tech)
        })
        .collect();
    let port_tech = lay
        .port_info
        .iter()
        .map(|&(_, _, _, li)| id_of(g.links[li].tech))
        .collect();
    if techs.is_empty() {
        techs.push(crate::net::link::ETHERNET);
    }
    (techs, host_tech, port_tech)
}

/// Which local port of each torus server leads in each direction.
fn torus_routing(g: &Graph, dims: [u32; 3], lay: &Layout) -> TorusRouting {
    let n = g.nodes.len();
    let servers = dims[0] * dims[1] * dims[2];
    let mut dir_port = vec![[NO_PORT; 6]; n];
    for (p, &(node, peer, _, _)) in lay.port_info.iter().enumerate() {
        if node >= servers || peer >= servers {
            // The external switch and its load generators are not in the torus.
            continue;
        }
        let local = (p as u32 - lay.port_base[node as usize]) as u8;
        let (a, b) = (torus::coords(dims, node), torus::coords(dims, peer));
        let axis = (0..3)
            .find(|&i| a[i] != b[i])
            .expect("torus neighbours differ");
        let k = dims[axis];
        let plus = (a[axis] + 1) % k == b[axis];
        let dir = 2 * axis + usize::from(!plus);
        dir_port[node as usize][dir] = local;
    }
    TorusRouting::new(dims, dir_port)
}

/// 8e12 / rate when that is a whole number of picoseconds per byte.
fn exact_ps_per_byte(rate_bps: u64) -> u64 {
    let bits_ps = 8 * crate::engine::PS_PER_S;
    if bits_ps.is_multiple_of(rate_bps) {
        bits_ps / rate_bps
    } else {
        0
    }
}

/// The switches' links and the hosts they attach, in switch indices: what the ECMP tables
/// are computed from (`Routing::shortest_paths`).
fn switch_graph(g: &Graph, lay: &Layout) -> SwitchGraph {
    let is_switch = |i: u32| g.nodes[i as usize].kind == NodeKind::Switch;
    let mut links = vec![Vec::new(); lay.n_switches];
    let mut attached = Vec::new();
    // Ports are grouped by node in node order, so `attached` comes out sorted by switch.
    for (p, &(node, peer, _, _)) in lay.port_info.iter().enumerate() {
        let local = p as u32 - lay.port_base[node as usize];
        let (s, other) = (lay.index[node as usize], lay.index[peer as usize]);
        if is_switch(node) && is_switch(peer) {
            links[s as usize].push((other, local));
        } else if is_switch(node) {
            attached.push((s, other, local));
        }
    }
    SwitchGraph {
        links,
        attached,
        n_hosts: lay.n_hosts,
    }
}

/// Switches for tests: 1 MiB a port, store-and-forward, no latency, drop-tail.
#[cfg(test)]
pub(crate) fn test_switch_params() -> SwitchParams {
    SwitchParams {
        buffer_per_port_bytes: 1 << 20,
        shared_buffer_bytes: None,
        input_buffers: InputBuffers::No,
        dt_alpha: 1.0,
        port_to_port_ps: 0,
        forwarding: Forwarding::StoreAndForward,
        scheme: SchemeSpec::DropTail(crate::scheme::droptail::Spec {
            limit_packets: None,
            voqs: true,
        }),
        overrides: vec![],
        nic_scheme: SchemeSpec::DropTail(crate::scheme::droptail::Spec {
            limit_packets: None,
            voqs: true,
        }),
        seed: 1,
        pfc: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{fat_tree, LinkParams};

    /// Walks every ECMP choice from a host to another and returns the set of path lengths
    /// (in links) and the number of distinct paths.
    fn paths(net: &Network, src: u32, dst: u32) -> (Vec<u32>, usize) {
        let mut lens = vec![];
        let mut stack = vec![(
            net.nodes()[net.host_nodes()[src as usize] as usize].port_base,
            1u32,
        )];
        while let Some((port, len)) = stack.pop() {
            let peer = net.ports()[port as usize].peer_node;
            let nd = &net.nodes()[peer as usize];
            if nd.kind == NodeKind::Host {
                assert_eq!(nd.index, dst);
                lens.push(len);
                continue;
            }
            for &p in net.routing().ports(nd.index, dst) {
                stack.push((nd.port_base + p, len + 1));
            }
        }
        let n = lens.len();
        lens.sort_unstable();
        lens.dedup();
        (lens, n)
    }

    #[test]
    fn exact_rates_multiply() {
        assert_eq!(exact_ps_per_byte(10_000_000_000), 800);
        assert_eq!(exact_ps_per_byte(1_000_000_000), 8000);
        assert_eq!(exact_ps_per_byte(3), 0);
        for rate in [
            1_000_000_000u64,
            2_500_000_000,
            10_000_000_000,
            40_000_000_000,
            100_000_000_000,
        ] {
            assert_eq!(
                1538 * exact_ps_per_byte(rate),
                crate::engine::serialisation_ps(1538, rate)
            );
        }
    }

    #[test]
    fn fat_tree_paths_have_the_right_lengths_and_multiplicity() {
        let k = 4;
        let g = fat_tree::build(k, LinkParams::ethernet(1, 0));
        let net = build_network(&g, &test_switch_params());
        // Same edge switch: 2 links, 1 path. Same pod: 4 links, k/2 paths. Other pod: 6 links, (k/2)^2 paths.
        assert_eq!(paths(&net, 0, 1), (vec![2], 1));
        assert_eq!(paths(&net, 0, 2), (vec![4], 2));
        assert_eq!(paths(&net, 0, 15), (vec![6], 4));
        let k8 = build_network(
            &fat_tree::build(8, LinkParams::ethernet(1, 0)),
            &test_switch_params(),
        );
        assert_eq!(paths(&k8, 0, 127), (vec![6], 16));
    }

    /// An override's buffer per port reaches the ports of the switches of its tiers and
    /// names, the last naming a switch winning; an override with a scheme only leaves the
    /// buffer alone; hosts' ports keep unbounded buffers.
    #[test]
    fn overrides_set_the_buffers_of_the_switches_they_name() {
        let g = fat_tree::build(4, LinkParams::ethernet(1, 0));
        let mut sp = test_switch_params();
        let cover = |tiers: Vec<u8>, switches: Vec<&str>, bytes: Option<u64>| SwitchOverride {
            tiers,
            switches: switches.into_iter().map(String::from).collect(),
            spec: None,
            buffer_per_port_bytes: bytes,
        };
        let core = g.nodes.iter().find(|n| n.tier == 2).unwrap().name.clone();
        sp.overrides = vec![
            cover(vec![1, 2], vec![], Some(5000)),
            cover(vec![], vec![&core], Some(7000)),
            SwitchOverride {
                spec: Some(sp.scheme.clone()),
                ..cover(vec![2], vec![], None)
            },
        ];
        let net = build_network(&g, &sp);
        let mut seen = std::collections::BTreeSet::new();
        for p in net.ports() {
            let nd = &g.nodes[p.node as usize];
            let name = &nd.name;
            let want = match (nd.kind, nd.tier) {
                (NodeKind::Host, _) => u64::MAX,
                (_, 0) => 1 << 20,
                _ if *name == core => 7000,
                _ => 5000,
            };
            assert_eq!(p.buffer_bytes, want, "{name}");
            seen.insert(want);
        }
        assert_eq!(seen.len(), 4, "every case met: {seen:?}");
    }
}
