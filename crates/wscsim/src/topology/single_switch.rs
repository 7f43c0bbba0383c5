//! One switch with every host attached (a star).

use super::{Graph, LinkParams};

pub fn build(hosts: u32, link: LinkParams) -> Graph {
    let mut g = Graph::default();
    let sw = g.add_switch("switch".into(), 0);
    for h in 0..hosts {
        let n = g.add_host(format!("h{h}"));
        g.link(n, sw, link);
    }
    g
}
