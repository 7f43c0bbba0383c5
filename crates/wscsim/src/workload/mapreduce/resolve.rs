//! `workload.kind = "mapreduce"`: a Hadoop-style sort (`workload::mapreduce`).

use crate::check::{distinct_hosts, in_range, int_in};
use crate::check::{err, ConfigError};
use crate::engine::PS_PER_S;
use crate::units::{Bytes, Duration};
use crate::workload::job::resolve::transfer_via;
use crate::workload::mapreduce::{MapReduce, MapReduceSpec, Params};

/// Fitted with the task start-up below to the PCIe paper's Table 4 (Hadoop/sort at four
/// 2.9 GHz cores with Fusion-io) by scripts/fit_pcie_jobs.py; docs/energy.md shows how.
pub const MAP_CYCLES_PER_BYTE: f64 = 27.0;
pub const REDUCE_CYCLES_PER_BYTE: f64 = 20.0;
pub const TASK_STARTUP_PS: u64 = 4 * PS_PER_S;

/// The most tasks of one kind a node may run in a job, and the most segments a shuffle may
/// cut: far beyond any Hadoop job on a few nodes, well short of exhausting memory.
const MAX_MAPS_PER_NODE: u64 = 100_000;
const MAX_SEGMENTS: u64 = 100_000_000;
const TB: u64 = 1_000_000_000_000;

/// The input's size, its files', blocks' and splits' (each in bytes, up to a TB), and the
/// maps each node runs (one per split of each file).
fn sizes(p: &mut Params) -> Result<(u64, u64, u64, u64, u64), ConfigError> {
    let size = |path: &str, v: &mut Option<Bytes>, default: u64, lo: u64, hi: u64| {
        let b = v.get_or_insert(Bytes(default)).0;
        in_range(path, b, lo, hi, format!("bytes, from {lo} to {hi}"))
    };
    let data_bytes = size("workload.data", &mut p.data, 10_000_000_000, 1, TB)?;
    let file_bytes = size("workload.file", &mut p.file, 1_000_000_000, 1, TB)?;
    let block_bytes = size("workload.block", &mut p.block, 64 << 20, 1 << 10, TB)?;
    let split_bytes = size("workload.split", &mut p.split, block_bytes, 1 << 10, TB)?;
    let maps_per_node = data_bytes.div_ceil(file_bytes) * file_bytes.div_ceil(split_bytes);
    if maps_per_node > MAX_MAPS_PER_NODE {
        return Err(err(
            "workload.split",
            split_bytes,
            format!("a split size that gives at most {MAX_MAPS_PER_NODE} maps a node (this gives about {maps_per_node})"),
        ));
    }
    Ok((
        data_bytes,
        file_bytes,
        block_bytes,
        split_bytes,
        maps_per_node,
    ))
}

impl crate::workload::WorkloadKind for MapReduce {
    const NAME: &'static str = "mapreduce";
    type Params = Params;
    type Spec = MapReduceSpec;
    type App = Box<MapReduce>;

    fn resolve(
        p: &mut Params,
        ctx: &crate::workload::WorkloadCtx,
    ) -> Result<MapReduceSpec, ConfigError> {
        resolve_mapreduce(
            p,
            ctx.n_hosts,
            ctx.host.storage.is_some(),
            ctx.host.cores,
            ctx.pcie(),
        )
    }

    fn applications(
        spec: MapReduceSpec,
        _: &mut crate::workload::AppsBuild,
    ) -> Vec<Box<MapReduce>> {
        vec![Box::new(MapReduce::new(spec))]
    }
}

/// `storage`: the hosts have a storage device; `cores`: each host's cores; `pcie`: the
/// hosts' links are PCIe.
fn resolve_mapreduce(
    p: &mut Params,
    n_hosts: i64,
    storage: bool,
    cores: u32,
    pcie: bool,
) -> Result<MapReduceSpec, ConfigError> {
    if !storage {
        return Err(err(
            "workload.kind",
            "\"mapreduce\" without a storage device",
            "a MapReduce job only with host.storage set (its maps read and write it)",
        ));
    }
    let nodes = distinct_hosts("workload.nodes", &p.nodes, n_hosts)?;
    p.nodes = Some(nodes.iter().map(|&h| i64::from(h)).collect());
    let (data_bytes, file_bytes, block_bytes, split_bytes, maps_per_node) = sizes(p)?;
    let map_slots = int_in(
        "workload.map_slots",
        *p.map_slots.get_or_insert(cores.into()),
        1,
        1024,
    )?;
    let reduces_per_node = int_in(
        "workload.reduces",
        *p.reduces.get_or_insert(cores.into()),
        1,
        1024,
    )?;
    let n = nodes.len() as u64;
    let segments = maps_per_node * n * u64::from(reduces_per_node) * n;
    if segments > MAX_SEGMENTS {
        let most = MAX_SEGMENTS / (maps_per_node * n * n);
        return Err(err(
            "workload.reduces",
            reduces_per_node,
            format!("at most {most} reduces a node with these splits (every map cuts a segment for every reduce: {segments} segments, at most {MAX_SEGMENTS})"),
        ));
    }
    let startup = *p.task_startup.get_or_insert(Duration(TASK_STARTUP_PS));
    let most = Duration(3600 * PS_PER_S);
    let startup = in_range(
        "workload.task_startup",
        startup,
        Duration(0),
        most,
        "from 0s to 3600s",
    )?
    .0;
    let cycles = |path: &str, v: &mut Option<f64>, default: f64| {
        let c = *v.get_or_insert(default);
        in_range(path, c, 0.0, 1e6, "CPU cycles per byte, from 0 to 1e6")
    };
    Ok(MapReduceSpec {
        map_cycles_per_byte: cycles(
            "workload.map_cycles_per_byte",
            &mut p.map_cycles_per_byte,
            MAP_CYCLES_PER_BYTE,
        )?,
        reduce_cycles_per_byte: cycles(
            "workload.reduce_cycles_per_byte",
            &mut p.reduce_cycles_per_byte,
            REDUCE_CYCLES_PER_BYTE,
        )?,
        dma: transfer_via("workload.via", &mut p.via, "auto", pcie)?,
        nodes,
        data_bytes,
        file_bytes,
        block_bytes,
        split_bytes,
        map_slots,
        reduces_per_node,
        task_startup_ps: startup,
    })
}
