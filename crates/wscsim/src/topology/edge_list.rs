//! A generic topology from a text file, one statement per line:
//!
//! ```text
//! # comment
//! switch s0
//! host h0
//! link h0 s0 10Gbps 1us     # rate and delay are optional; topology.link gives defaults
//! ```
//!
//! Errors name the line and what was expected, never the line's text: the file may be one
//! that should not be echoed (a scenario can name any path).

/// Largest edge-list file read (a 100,000-host topology takes about 3 MB).
pub const MAX_EDGE_LIST_BYTES: u64 = 64 << 20;

use super::{Graph, LinkParams};
use crate::net::NodeKind;
use crate::units::{Duration, Rate};
use std::collections::HashMap;

/// `[topology]` parameters of this kind.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The edge-list file (relative paths from the scenario's folder).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

pub fn parse(text: &str, default: LinkParams) -> Result<Graph, String> {
    let mut g = Graph::default();
    let mut ids: HashMap<String, u32> = HashMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.split('#').next().unwrap().trim();
        if line.is_empty() {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        match words[0] {
            "host" | "switch" => {
                if words.len() != 2 {
                    return Err(format!("line {line_no}: given {} words; allowed: \"{} NAME\"", words.len(), words[0]));
                }
                check_name(words[1], line_no)?;
                if ids.contains_key(words[1]) {
                    return Err(format!("line {line_no}: the node it declares was declared before; allowed: each name once"));
                }
                let id = if words[0] == "host" { g.add_host(words[1].to_string()) } else { g.add_switch(words[1].to_string(), 0) };
                ids.insert(words[1].to_string(), id);
            }
            "link" => {
                if !(3..=5).contains(&words.len()) {
                    return Err(format!("line {line_no}: given {} words; allowed: \"link A B [RATE] [DELAY]\"", words.len()));
                }
                let node = |w: &str, which: &str| ids.get(w).copied().ok_or_else(|| format!("line {line_no}: the {which} node of the link is not declared; allowed: nodes declared on an earlier line with \"host NAME\" or \"switch NAME\""));
                let (a, b) = (node(words[1], "first")?, node(words[2], "second")?);
                let mut l = default;
                if let Some(w) = words.get(3) {
                    l.rate_bps = Rate::parse(w).ok_or_else(|| format!("line {line_no}: the rate (fourth word) is not one; allowed: {}", crate::units::RATE_ALLOWED))?.0;
                }
                if let Some(w) = words.get(4) {
                    l.delay_ps = Duration::parse(w).ok_or_else(|| format!("line {line_no}: the delay (fifth word) is not one; allowed: {}", crate::units::DURATION_ALLOWED))?.0;
                }
                g.link(a, b, l);
            }
            _ => return Err(format!("line {line_no}: not a statement; allowed: a line starting with \"host\", \"switch\" or \"link\" (or a # comment)")),
        }
    }
    assign_tiers(&mut g);
    Ok(g)
}

/// Longest node name accepted.
const MAX_NAME_CHARS: usize = 64;

/// A node name becomes part of file names (a capture's pcap is named after its switch) and
/// of tables, so it is a plain word: letters, digits, `_`, `-` and `.`, not starting with
/// `.` (no `..`, no `/`, no control characters, no absolute path).
fn check_name(name: &str, line_no: usize) -> Result<(), String> {
    let plain = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if plain && !name.starts_with('.') && name.len() <= MAX_NAME_CHARS {
        return Ok(());
    }
    Err(format!(
        "line {line_no}: the node name is not a plain word; allowed: up to {MAX_NAME_CHARS} letters, digits, '_', '-' and '.', not starting with '.'"
    ))
}

/// Tier of a switch = its distance in switch hops from the nearest host-facing switch.
fn assign_tiers(g: &mut Graph) {
    let n = g.nodes.len();
    let mut dist = vec![u32::MAX; n];
    let mut frontier = vec![];
    for l in &g.links {
        for (x, y) in [(l.a, l.b), (l.b, l.a)] {
            if g.nodes[x as usize].kind == NodeKind::Host
                && g.nodes[y as usize].kind == NodeKind::Switch
                && dist[y as usize] == u32::MAX
            {
                dist[y as usize] = 0;
                frontier.push(y);
            }
        }
    }
    while !frontier.is_empty() {
        let mut next = vec![];
        for &u in &frontier {
            for l in &g.links {
                let v = if l.a == u {
                    l.b
                } else if l.b == u {
                    l.a
                } else {
                    continue;
                };
                if g.nodes[v as usize].kind == NodeKind::Switch && dist[v as usize] == u32::MAX {
                    dist[v as usize] = dist[u as usize] + 1;
                    next.push(v);
                }
            }
        }
        frontier = next;
    }
    for (i, nd) in g.nodes.iter_mut().enumerate() {
        if nd.kind == NodeKind::Switch && dist[i] != u32::MAX {
            nd.tier = dist[i].min(255) as u8;
        }
    }
}

/// Topology kind "edge_list".
pub struct EdgeList;

impl super::TopologyKind for EdgeList {
    const NAME: &'static str = "edge_list";
    type Params = Params;
    const GRAPH_FIELD: &'static str = "topology.file";

    /// Checks the parameters, fills in their defaults and builds the graph.
    fn graph(t: &mut Params, link: LinkParams) -> Result<Graph, crate::check::ConfigError> {
        let Some(path) = t.file.clone() else {
            return Err(crate::check::err(
                "topology.file",
                "nothing",
                "the path of an edge-list file",
            ));
        };
        let text = crate::check::read_capped(
            &path,
            "topology.file",
            "a readable edge-list file",
            MAX_EDGE_LIST_BYTES,
        )?;
        let g = parse(&text, link).map_err(|m| crate::check::ConfigError {
            path: "topology.file".into(),
            message: format!("{path}: {m}"),
        })?;
        super::size::check_fits(&super::size::Size::of_graph(&g))?;
        Ok(g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const L: LinkParams = LinkParams::ethernet(10_000_000_000, 1000);

    #[test]
    fn parses_a_small_file() {
        let g = parse(
            "switch s\nhost a\nhost b # two hosts\nlink a s\nlink b s 1Gbps 2us\n",
            L,
        )
        .unwrap();
        assert_eq!(g.n_hosts(), 2);
        assert_eq!(g.links[1].rate_bps, 1_000_000_000);
        assert_eq!(g.links[1].delay_ps, 2_000_000);
        g.check().unwrap();
    }

    #[test]
    fn refuses_names_that_could_be_paths() {
        for bad in [
            "../../ESCAPED",
            "/abs",
            "a/b",
            "..",
            ".hidden",
            "x\u{1}y",
            "s:0",
        ] {
            let e = parse(&format!("switch {bad}\n"), L).unwrap_err();
            assert!(e.starts_with("line 1: the node name"), "{bad}: {e}");
        }
        parse("switch tor-0.a_b\nhost h\nlink h tor-0.a_b\n", L).unwrap();
    }

    #[test]
    fn names_the_bad_line() {
        let e = parse("switch s\nlink a s\n", L).unwrap_err();
        assert!(e.starts_with("line 2:"), "{e}");
        let e = parse(
            "host a\nhost b\nswitch s\nswitch t\nlink a s\nlink b t\n",
            L,
        )
        .unwrap();
        assert!(e.check().unwrap_err().contains("disconnected"));
    }

    #[test]
    fn never_echoes_the_file() {
        for text in [
            "root:x:0:0:root:/root:/bin/bash\n",
            "host secret extra\n",
            "switch s\nhost a\nlink a secret\n",
            "switch s\nhost a\nlink a s secret\n",
        ] {
            let e = parse(text, L).unwrap_err();
            assert!(
                e.starts_with("line ") && !e.contains("root") && !e.contains("secret"),
                "{e}"
            );
        }
    }
}
