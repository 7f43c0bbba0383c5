//! `switch.model`: the defaults a named switch gives `[switch]` (forwarding and
//! port-to-port latency); keys the scenario gives win. Sources in docs/model-reference.md.

use crate::engine::{TimePs, PS_PER_NS};

/// A switch product's figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwitchModel {
    pub name: &'static str,
    pub cut_through: bool,
    /// None: the topology's default (1 us; 100 ns in DIABLO's 10 Gbit/s array).
    pub port_to_port_ps: Option<TimePs>,
}

pub const SWITCH_MODELS: &[SwitchModel] = &[
    // No product: store-and-forward at the topology's latency (DIABLO's switches).
    SwitchModel {
        name: "generic",
        cut_through: false,
        port_to_port_ps: None,
    },
    // Mellanox InfiniScale IV IS5024, the PCIe paper's InfiniBand QDR switch (Table 1,
    // source f): InfiniBand switches forward cut-through; Mellanox quotes 100 ns port to
    // port for its IS5000 line.
    SwitchModel {
        name: "is5024",
        cut_through: true,
        port_to_port_ps: Some(100 * PS_PER_NS),
    },
    // PLX PEX 8696, the PCIe paper's Gen2 switch (source g): PLX's Gen2 switches forward
    // cut-through, "down to 140 ns".
    SwitchModel {
        name: "pex8696",
        cut_through: true,
        port_to_port_ps: Some(140 * PS_PER_NS),
    },
];

pub fn by_name(name: &str) -> Option<SwitchModel> {
    SWITCH_MODELS.iter().find(|m| m.name == name).copied()
}
