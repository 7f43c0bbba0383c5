//! `[dma]`: the PCIe fabric's DMA engines and windows (`transport::dma`). Defaults are the
//! PCIe paper's testbed where it gives them (two windows) and the parts' data sheets
//! otherwise; every one is written back, so the resolved scenario shows what was used.

use super::checks::int_in;
use super::{err, ConfigError};
use crate::engine::TimePs;
use crate::transport::dma::DmaParams;
use crate::units::{Bytes, Duration};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DmaCfg {
    /// Mapping windows per node (default 2: the paper's testbed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub windows: Option<i64>,
    /// Time to remap a window to another peer (default 5 us: the paper never measures it;
    /// about two register round trips through the switch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remap: Option<Duration>,
    /// DMA channels per adapter (default 4: the PEX 8609's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channels: Option<i64>,
    /// Bytes per read request (default 512: PCIe's default maximum read request size).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_request: Option<Bytes>,
    /// Read requests a channel keeps outstanding (default 4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_tags: Option<i64>,
    /// One traversal of a node's PCIe adapter, a PEX 8609 (default 140 ns: its data sheet's
    /// cut-through latency).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adapter_latency: Option<Duration>,
    /// From a read request reaching a host's root port to its completion leaving it: root
    /// complex and memory (default 1 us).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_read: Option<Duration>,
    /// A CPU load's trip from the core to the root port, one way (default 100 ns).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_to_port: Option<Duration>,
}

const NS: TimePs = 1_000;
const MAX_LATENCY_PS: TimePs = 1_000_000_000; // 1 ms: far beyond any PCIe part

fn latency(
    path: &str,
    v: &mut Option<Duration>,
    default_ps: TimePs,
) -> Result<TimePs, ConfigError> {
    let d = v.get_or_insert(Duration(default_ps)).0;
    if d > MAX_LATENCY_PS {
        return Err(err(path, Duration(d), "a duration from 0 to 1ms"));
    }
    Ok(d)
}

pub fn resolve_dma(c: &mut DmaCfg) -> Result<DmaParams, ConfigError> {
    let windows = int_in("dma.windows", *c.windows.get_or_insert(2), 1, 64)?;
    let channels = int_in("dma.channels", *c.channels.get_or_insert(4), 1, 64)?;
    let read_tags = int_in("dma.read_tags", *c.read_tags.get_or_insert(4), 1, 256)?;
    let read_request = c.read_request.get_or_insert(Bytes(512)).0;
    if !(read_request.is_power_of_two() && (128..=4096).contains(&read_request)) {
        return Err(err(
            "dma.read_request",
            read_request,
            "a PCIe maximum read request size: 128, 256, 512, 1024, 2048 or 4096 bytes",
        ));
    }
    Ok(DmaParams {
        windows,
        remap_ps: latency("dma.remap", &mut c.remap, 5_000 * NS)?,
        channels,
        read_request_bytes: read_request as u32,
        read_tags,
        adapter_ps: latency("dma.adapter_latency", &mut c.adapter_latency, 140 * NS)?,
        host_read_ps: latency("dma.host_read", &mut c.host_read, 1_000 * NS)?,
        cpu_to_port_ps: latency("dma.cpu_to_port", &mut c.cpu_to_port, 100 * NS)?,
    })
}
