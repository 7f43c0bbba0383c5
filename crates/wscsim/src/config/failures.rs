//! `[[failures]]`: links, or whole nodes (every link of a server or switch), that go down
//! at a time within the run and may come back. A failed node's applications are not
//! stopped: everything it sends is lost at its failed links, as is everything sent to it.

use super::churn::NodeWindow;
use super::{err, ConfigError, FailureCfg, Scenario};
use crate::engine::{TimePs, NEVER};
use crate::topology::Graph;

/// A link (by the graph's index) that is down from `down_ps` until `up_ps` (NEVER: for
/// the rest of the run).
#[derive(Clone, Copy, Debug)]
pub struct LinkFailure {
    pub link: u32,
    pub down_ps: TimePs,
    pub up_ps: TimePs,
}

/// The node named `name`, or an error at `path`.
fn node(graph: &Graph, path: &str, name: &str) -> Result<u32, ConfigError> {
    graph
        .nodes
        .iter()
        .position(|n| n.name == name)
        .map(|i| i as u32)
        .ok_or_else(|| {
            err(
                path,
                format!("{name:?}"),
                "a node of the topology (its name, as in the links table's node_name)",
            )
        })
}

/// Every link of node `n`.
fn links_at(graph: &Graph, n: u32) -> impl Iterator<Item = u32> + '_ {
    (0..graph.links.len() as u32)
        .filter(move |&i| graph.links[i as usize].a == n || graph.links[i as usize].b == n)
}

/// `random_nodes`: that fraction of the servers (rounded to the nearest), drawn without
/// replacement from stream `index` of the failure family.
fn random_servers(
    graph: &Graph,
    path: &str,
    fraction: f64,
    seed: u64,
    index: u64,
) -> Result<Vec<u32>, ConfigError> {
    use rand::seq::SliceRandom;
    if !(fraction.is_finite() && (0.0..1.0).contains(&fraction)) {
        return Err(err(
            &format!("{path}.random_nodes"),
            fraction,
            "a fraction of the servers from 0 up to (not including) 1",
        ));
    }
    let mut servers: Vec<u32> = (0..graph.nodes.len() as u32)
        .filter(|&i| graph.nodes[i as usize].kind == crate::net::NodeKind::Host)
        .collect();
    let k = (fraction * servers.len() as f64).round() as usize;
    let mut rng = crate::engine::rng::stream(seed, crate::engine::rng::family::FAILURE, index);
    servers.shuffle(&mut rng);
    servers.truncate(k);
    servers.sort_unstable();
    Ok(servers)
}

/// The nodes a failure takes down whole (none for a link failure).
pub fn failed_nodes(
    graph: &Graph,
    path: &str,
    f: &FailureCfg,
    seed: u64,
    index: u64,
) -> Result<Vec<u32>, ConfigError> {
    match (&f.node, f.random_nodes) {
        (Some(name), None) => Ok(vec![node(graph, &format!("{path}.node"), name)?]),
        (None, Some(x)) => random_servers(graph, path, x, seed, index),
        _ => Ok(vec![]),
    }
}

/// The links a failure takes down: the one between two nodes, or all of some nodes'.
fn links_of(
    graph: &Graph,
    path: &str,
    f: &FailureCfg,
    nodes: &[u32],
) -> Result<Vec<u32>, ConfigError> {
    let given = [f.link.is_some(), f.node.is_some(), f.random_nodes.is_some()];
    if given.iter().filter(|&&g| g).count() != 1 {
        return Err(err(
            path,
            "none or several of link, node and random_nodes",
            "exactly one: link = [\"h0\", \"h1\"] (a link), node = \"h5\" (every link of a node) or random_nodes = 0.1 (a fraction of the servers)",
        ));
    }
    let Some(names) = &f.link else {
        return Ok(nodes.iter().flat_map(|&n| links_at(graph, n)).collect());
    };
    let [a, b] = names.as_slice() else {
        return Err(err(
            &format!("{path}.link"),
            format!("{names:?}"),
            "two node names, such as [\"h0\", \"h1\"]",
        ));
    };
    let a = node(graph, &format!("{path}.link[0]"), a)?;
    let b = node(graph, &format!("{path}.link[1]"), b)?;
    let link = graph
        .links
        .iter()
        .position(|l| (l.a, l.b) == (a, b) || (l.a, l.b) == (b, a))
        .ok_or_else(|| {
            err(
                &format!("{path}.link"),
                format!("{names:?}"),
                "two nodes joined by a link",
            )
        })?;
    Ok(vec![link as u32])
}

/// The failures of a run: links with their windows, the nodes that fail whole with their
/// windows, how servers learn of them, and the nodes of `[[failures]]` (for the headline
/// figures of the survivors; churn's come and go).
#[derive(Clone, Debug)]
pub struct Failures {
    pub links: Vec<LinkFailure>,
    pub windows: Vec<NodeWindow>,
    pub detection: crate::net::kbr::views::Detection,
    pub nodes: Vec<u32>,
}

/// Each failure's links with its window, checked: `at` within the run, `until` after it.
pub fn resolve_failures(sc: &mut Scenario, graph: &Graph) -> Result<Failures, ConfigError> {
    let detection = super::churn::resolve_detection(&mut sc.failure_detection, graph)?;
    let mut out = Failures {
        links: Vec::new(),
        windows: Vec::new(),
        detection,
        nodes: Vec::new(),
    };
    for (i, f) in sc.failures.iter().enumerate() {
        let path = format!("failures[{i}]");
        let nodes = failed_nodes(graph, &path, f, sc.seed, i as u64)?;
        let links = links_of(graph, &path, f, &nodes)?;
        out.nodes.extend(&nodes);
        if f.at.0 >= sc.duration.0 {
            return Err(err(
                &format!("{path}.at"),
                f.at,
                format!("a time before the end of the run ({})", sc.duration),
            ));
        }
        let up_ps = match f.until {
            Some(u) if u.0 <= f.at.0 => {
                return Err(err(
                    &format!("{path}.until"),
                    u,
                    format!("a time after {path}.at ({})", f.at),
                ))
            }
            Some(u) => u.0,
            None => NEVER,
        };
        out.links.extend(links.into_iter().map(|link| LinkFailure {
            link,
            down_ps: f.at.0,
            up_ps,
        }));
        out.windows.extend(nodes.iter().map(|&node| NodeWindow {
            node,
            down_ps: f.at.0,
            up_ps,
        }));
    }
    if let Some(c) = sc.churn.as_mut() {
        for w in super::churn::churn_windows(c, graph, sc.seed, sc.duration.0)? {
            out.links
                .extend(links_at(graph, w.node).map(|link| LinkFailure {
                    link,
                    down_ps: w.down_ps,
                    up_ps: w.up_ps,
                }));
            out.windows.push(w);
        }
    }
    out.nodes.sort_unstable();
    out.nodes.dedup();
    Ok(out)
}
