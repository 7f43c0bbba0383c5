//! Connection matrices: a list of flows, each with its source, destination, size and
//! start time, in the text format htsim reads (`datacenter/connection_matrix.cpp`; its
//! `gen_permutation.py` writes them), so that the same traffic runs in both simulators:
//!
//! ```text
//! Nodes 16
//! Connections 2
//! 4->0 id 1 start 0 size 2000000
//! 5->0 id 2 start 100000000 size 2000000
//! ```
//!
//! `start` is in picoseconds and `size` in bytes (htsim's units); `id` is kept for
//! reference. htsim's triggers (`trigger`, `send_done_trigger`, `recv_done_trigger`) and
//! flow priorities are not modelled and are refused.

use crate::check::{err, ConfigError};
use crate::engine::TimePs;

/// One flow of a matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatrixFlow {
    pub src: u32,
    pub dst: u32,
    pub size_bytes: u64,
    pub start_ps: TimePs,
}

/// Parses a matrix for a network of `n_hosts` hosts; the flows in order of start (ties
/// in the file's order). Errors name `field` and the line.
pub fn parse(text: &str, n_hosts: u32, field: &str) -> Result<Vec<MatrixFlow>, ConfigError> {
    let mut flows = Vec::new();
    let mut declared: Option<u64> = None;
    for (n, line) in text.lines().enumerate() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let bad = |what: String| err(field, format!("line {}: {line:?}", n + 1), what);
        match words.first() {
            None => continue,
            Some(&"Nodes") => {
                let nodes: u64 = words.get(1).and_then(|w| w.parse().ok()).unwrap_or(0);
                if nodes == 0 || nodes > u64::from(n_hosts) {
                    return Err(bad(format!(
                        "\"Nodes N\" with N from 1 to the topology's {n_hosts} hosts"
                    )));
                }
            }
            Some(&"Connections") => declared = words.get(1).and_then(|w| w.parse().ok()),
            Some(_) => flows.push(flow_line(&words, n_hosts).map_err(bad)?),
        }
    }
    if let Some(d) = declared.filter(|&d| d != flows.len() as u64) {
        return Err(err(
            field,
            format!("\"Connections {d}\" over {} flow lines", flows.len()),
            "as many flow lines as Connections declares",
        ));
    }
    if flows.is_empty() {
        return Err(err(field, "no flows", "at least one flow line"));
    }
    flows.sort_by_key(|f| f.start_ps); // stable: ties keep the file's order
    Ok(flows)
}

/// One line `SRC->DST id ID start PS size BYTES` (keys in any order, `id` optional).
fn flow_line(words: &[&str], n_hosts: u32) -> Result<MatrixFlow, String> {
    let allowed = "SRC->DST id ID start PICOSECONDS size BYTES";
    let (src, dst) = words[0]
        .split_once("->")
        .and_then(|(s, d)| Some((s.parse::<u32>().ok()?, d.parse::<u32>().ok()?)))
        .ok_or(format!("a flow line: {allowed}"))?;
    if src >= n_hosts || dst >= n_hosts || src == dst {
        return Err(format!(
            "a source and a destination that differ, each below the topology's {n_hosts} hosts"
        ));
    }
    let (mut size, mut start) = (None, None);
    for pair in words[1..].chunks(2) {
        let value = pair.get(1).and_then(|v| v.parse::<u64>().ok());
        match (pair[0], value) {
            ("id", Some(_)) => {}
            ("start", Some(v)) => start = Some(v),
            // At most 1 TB, as the other workloads' flows (an NDP flow numbers its
            // packets in 32 bits).
            ("size", Some(v)) if v > 0 && v <= 1_000_000_000_000 => size = Some(v),
            (key, _) => {
                return Err(format!(
                    "{allowed} (\"{key}\" with a positive integer, a size at most 1 TB; htsim's triggers and priorities are not modelled)"
                ))
            }
        }
    }
    Ok(MatrixFlow {
        src,
        dst,
        size_bytes: size.ok_or(format!("a size: {allowed}"))?,
        start_ps: start.unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_htsims_format_in_order_of_start() {
        let text = "Nodes 16\nConnections 3\n\n4->0 id 1 start 500 size 2000\n5->0 id 2 start 0 size 10\n6->1 start 500 id 3 size 7\n";
        let f = parse(text, 16, "workload.matrix").unwrap();
        let pairs: Vec<(u32, u32, u64, u64)> = f
            .iter()
            .map(|x| (x.src, x.dst, x.size_bytes, x.start_ps))
            .collect();
        assert_eq!(
            pairs,
            vec![(5, 0, 10, 0), (4, 0, 2000, 500), (6, 1, 7, 500)]
        );
    }

    #[test]
    fn refuses_what_it_cannot_run_naming_the_line() {
        let refused = |text: &str| parse(text, 16, "workload.matrix").unwrap_err().to_string();
        assert!(refused("Nodes 32\n0->1 size 5\n").contains("line 1"));
        assert!(refused("0->16 size 5\n").contains("below the topology's 16 hosts"));
        assert!(refused("3->3 size 5\n").contains("differ"));
        assert!(refused("0->1 start 0\n").contains("a size"));
        assert!(refused("0->1 size 5 trigger 2\n").contains("triggers"));
        assert!(refused("Connections 2\n0->1 size 5\n").contains("Connections 2"));
        assert!(refused("Nodes 16\n").contains("at least one flow"));
    }
}
