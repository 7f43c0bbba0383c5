//! `[[failures]]`: links, or whole nodes (every link of a server or switch), that go down
//! at a time within the run and may come back. A failed node's applications are not
//! stopped: everything it sends is lost at its failed links, as is everything sent to it.

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

/// The links a failure takes down: the one between two nodes, or all of one node's.
fn links_of(graph: &Graph, path: &str, f: &FailureCfg) -> Result<Vec<u32>, ConfigError> {
    match (&f.link, &f.node) {
        (Some(names), None) => {
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
        (None, Some(name)) => {
            let n = node(graph, &format!("{path}.node"), name)?;
            Ok((0..graph.links.len() as u32)
                .filter(|&i| graph.links[i as usize].a == n || graph.links[i as usize].b == n)
                .collect())
        }
        _ => Err(err(
            path,
            "both link and node, or neither",
            "one of link = [\"h0\", \"h1\"] (a link) or node = \"h5\" (every link of a node)",
        )),
    }
}

/// Each failure's links with its window, checked: `at` within the run, `until` after it.
pub fn resolve_failures(sc: &Scenario, graph: &Graph) -> Result<Vec<LinkFailure>, ConfigError> {
    let mut out = Vec::new();
    for (i, f) in sc.failures.iter().enumerate() {
        let path = format!("failures[{i}]");
        let links = links_of(graph, &path, f)?;
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
        out.extend(links.into_iter().map(|link| LinkFailure {
            link,
            down_ps: f.at.0,
            up_ps,
        }));
    }
    Ok(out)
}
