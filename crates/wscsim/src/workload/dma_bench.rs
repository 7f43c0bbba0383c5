//! The PCIe paper's microbenchmarks (section 3): one node's DMA engine writes to, reads
//! from, or loads 4 bytes from its peers' memories, one transfer after another, taking the
//! peers in turn; with more peers than windows, every transfer remaps one.

use super::{AppSched, Application, AppsBuild, Ctx, WorkloadCtx, WorkloadKind};
use crate::check::{err, ConfigError};
use crate::net::link::{LinkFamily, LinkTech};
use crate::transport::dma::Op;
use crate::transport::Note;

/// `[workload]` parameters of kind "dma" (defaults are filled in by `dma_bench_spec`, below).
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

    fn submit(&mut self, id: u32, ctx: &mut Ctx<impl AppSched>) {
        let s = &self.spec;
        let peer = s.peers[self.done as usize % s.peers.len()];
        let (op, initiator, size) = (s.op, s.initiator, s.size_bytes);
        ctx.transports
            .dma
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

impl WorkloadKind for DmaBench {
    const NAME: &'static str = "dma";
    type Params = Params;
    type Spec = DmaBenchSpec;
    type App = DmaBench;

    fn resolve(p: &mut Params, ctx: &WorkloadCtx) -> Result<DmaBenchSpec, ConfigError> {
        dma_bench_spec(p, ctx.n_hosts, ctx.host_tech)
    }

    fn applications(spec: DmaBenchSpec, _: &mut AppsBuild) -> Vec<DmaBench> {
        vec![DmaBench::new(spec)]
    }
}

impl Application for DmaBench {
    fn ends_by_itself(&self) -> bool {
        true
    }

    fn start<S: AppSched>(&mut self, id: u32, ctx: &mut Ctx<S>) {
        *ctx.active += 1;
        self.submit(id, ctx);
    }

    fn on_note<S: AppSched>(&mut self, note: Note, ctx: &mut Ctx<S>) {
        if let Note::Dma { app, .. } = note {
            self.on_done(app, ctx)
        }
    }
}

/// Kind "dma": the PCIe paper's DMA microbenchmarks.
fn dma_bench_spec(
    p: &mut Params,
    n_hosts: i64,
    tech: &LinkTech,
) -> Result<DmaBenchSpec, ConfigError> {
    if tech.family != LinkFamily::Pcie {
        return Err(err(
            "workload.kind",
            format!("\"dma\" on {:?} links", tech.name),
            "\"dma\" only with topology.link.technology = \"pcie_gen2\"",
        ));
    }
    let op = match p.op.get_or_insert_with(|| "write".into()).as_str() {
        "write" => Op::Write,
        "read" => Op::Read,
        "load" => Op::Load,
        other => {
            return Err(err(
                "workload.op",
                format!("{other:?}"),
                "\"write\", \"read\" or \"load\"",
            ))
        }
    };
    let size = p.size.get_or_insert(crate::units::Bytes(64 << 20)).0;
    if size == 0 {
        return Err(err("workload.size", 0, "1 byte or more"));
    }
    let count = crate::check::int_in("workload.count", *p.count.get_or_insert(10), 1, 10_000_000)?;
    let initiator = crate::check::int_in(
        "workload.initiator",
        *p.initiator.get_or_insert(0),
        0,
        n_hosts - 1,
    )?;
    let peers = crate::check::host_list("workload.peers", &p.peers, n_hosts)?
        .unwrap_or_else(|| vec![u32::from(initiator == 0)]);
    if let Some(i) = peers.iter().position(|&q| q == initiator) {
        return Err(err(
            &format!("workload.peers[{i}]"),
            initiator,
            "a host other than the initiator",
        ));
    }
    p.peers = Some(peers.iter().map(|&q| i64::from(q)).collect());
    Ok(DmaBenchSpec {
        op,
        size_bytes: size,
        count,
        initiator,
        peers,
    })
}
