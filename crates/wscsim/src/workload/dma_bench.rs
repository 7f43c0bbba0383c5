//! The PCIe paper's microbenchmarks (section 3): one node's DMA engine writes to, reads
//! from, or loads 4 bytes from its peers' memories, one transfer after another, taking the
//! peers in turn; with more peers than windows, every transfer remaps one.

use super::{AppSched, Ctx};
use crate::transport::dma::Op;

/// `[workload]` parameters of kind "dma" (defaults are filled in by config::resolve).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// "write" (push, default), "read" (pull) or "load" (a CPU's 4-byte load).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op: Option<String>,
    /// Bytes per transfer (default 64 MiB; a load moves 4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<crate::units::Bytes>,
    /// Transfers, one after another (default 10).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<i64>,
    /// The node whose engine does the transfers (default 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initiator: Option<i64>,
    /// The peers, taken in turn (default [1]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peers: Option<Vec<i64>>,
}

#[derive(Clone, Debug)]
pub struct DmaBenchSpec {
    pub op: Op,
    pub size_bytes: u64,
    pub count: u32,
    pub initiator: u32,
    pub peers: Vec<u32>,
}

pub struct DmaBench {
    pub spec: DmaBenchSpec,
    done: u32,
}

impl DmaBench {
    pub fn new(spec: DmaBenchSpec) -> DmaBench {
        DmaBench { spec, done: 0 }
    }

    pub fn start(&mut self, id: u32, ctx: &mut Ctx<impl AppSched>) {
        *ctx.active += 1;
        self.submit(id, ctx);
    }

    fn submit(&mut self, id: u32, ctx: &mut Ctx<impl AppSched>) {
        let s = &self.spec;
        let peer = s.peers[self.done as usize % s.peers.len()];
        let (op, initiator, size) = (s.op, s.initiator, s.size_bytes);
        ctx.dma
            .submit(ctx.net, ctx.ev, op, initiator, peer, size, id, self.done);
    }

    pub fn on_done(&mut self, id: u32, ctx: &mut Ctx<impl AppSched>) {
        self.done += 1;
        if self.done < self.spec.count && ctx.ev.now() < ctx.end_ps {
            self.submit(id, ctx);
        } else {
            *ctx.active -= 1;
        }
    }
}

/// No results of its own (the flows, hosts and links tables show its traffic).
impl crate::metrics::report::Report for DmaBench {}
