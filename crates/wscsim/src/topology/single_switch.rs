//! One switch with every host attached (a star).

use super::{Graph, LinkParams};

/// `[topology]` parameters of this kind (defaults are filled in by config::topology).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Hosts on the switch (default 16).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hosts: Option<i64>,
}

pub fn build(hosts: u32, link: LinkParams) -> Graph {
    let mut g = Graph::default();
    let sw = g.add_switch("switch".into(), 0);
    for h in 0..hosts {
        let n = g.add_host(format!("h{h}"));
        g.link(n, sw, link);
    }
    g
}
