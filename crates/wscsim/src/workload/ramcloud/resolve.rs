//! `workload.kind = "ramcloud"`: RAMCloud's ClusterPerf benchmark (`workload::ramcloud`).

use crate::check::{err, ConfigError};
use crate::check::{in_range, int_in};
use crate::workload::ramcloud::{Params, Ramcloud, RamcloudSpec};

/// Fitted on the Atom of `ramcloud_rpc` (CPI 2.39 at 2.4 GHz: about 1 ns an instruction;
/// docs/ramcloud.md shows the arithmetic), store-and-forward, user-space driver: the RPC
/// layer to the slides' 100-byte read (13.8 us), a write's fixed cost to the 100-byte write
/// (18.2 us), its cost per byte to the 1 MB write less the 1 MB read (4.7 - 3.9 ms).
pub const RPC_INSTRUCTIONS: f64 = 2_100.0;
pub const WRITE_INSTRUCTIONS: f64 = 4_400.0;
pub const WRITE_INSTRUCTIONS_PER_BYTE: f64 = 0.8;

impl crate::workload::WorkloadKind for Ramcloud {
    const NAME: &'static str = "ramcloud";
    type Params = Params;
    type Spec = RamcloudSpec;
    type App = Box<Ramcloud>;

    fn resolve(
        p: &mut Params,
        ctx: &crate::workload::WorkloadCtx,
    ) -> Result<RamcloudSpec, ConfigError> {
        resolve_ramcloud(p, ctx.n_hosts)
    }

    fn applications(spec: RamcloudSpec, _: &mut crate::workload::AppsBuild) -> Vec<Box<Ramcloud>> {
        vec![Box::new(Ramcloud::new(spec))]
    }
}

fn resolve_ramcloud(p: &mut Params, n_hosts: i64) -> Result<RamcloudSpec, ConfigError> {
    let (write, tcp) = operation_and_transport(p)?;
    let size = p.size.get_or_insert(crate::units::Bytes(100)).0;
    in_range("workload.size", size, 1, 1 << 30, "1 byte to 1 GiB")?;
    let key = p.key.get_or_insert(crate::units::Bytes(30)).0;
    let key_allowed = "1 to 65,535 bytes (RAMCloud's key length)";
    in_range("workload.key", key, 1, 65_535, key_allowed)?;
    let count = *p.count.get_or_insert(1000);
    let count = int_in("workload.count", count, 1, 100_000_000)?;
    let (window, ack_after) = window_and_acks(p)?;
    let (client, master, backups) = hosts(p, n_hosts, tcp)?;
    let instructions = |path: &str, v: &mut Option<f64>, default: f64, most: f64| {
        let x = *v.get_or_insert(default);
        in_range(path, x, 0.0, most, format!("0 to {most} instructions"))
    };
    Ok(RamcloudSpec {
        write,
        size_bytes: size,
        count,
        client,
        master,
        backups,
        tcp,
        key_bytes: key,
        window,
        ack_after,
        rpc_instructions: instructions(
            "workload.rpc_instructions",
            &mut p.rpc_instructions,
            RPC_INSTRUCTIONS,
            1e9,
        )?,
        write_instructions: instructions(
            "workload.write_instructions",
            &mut p.write_instructions,
            WRITE_INSTRUCTIONS,
            1e9,
        )?,
        write_instructions_per_byte: instructions(
            "workload.write_instructions_per_byte",
            &mut p.write_instructions_per_byte,
            WRITE_INSTRUCTIONS_PER_BYTE,
            1e6,
        )?,
    })
}

/// `op` and `transport`: whether the benchmark writes, and whether over TCP.
fn operation_and_transport(p: &mut Params) -> Result<(bool, bool), ConfigError> {
    let write = match p.op.get_or_insert_with(|| "read".into()).as_str() {
        "read" => false,
        "write" => true,
        other => {
            return Err(err(
                "workload.op",
                format!("{other:?}"),
                "\"read\" or \"write\"",
            ))
        }
    };
    let tcp = match p.transport.get_or_insert_with(|| "fast".into()).as_str() {
        "fast" => false,
        "tcp" => true,
        other => {
            return Err(err(
                "workload.transport",
                format!("{other:?}"),
                "\"fast\" (RAMCloud's own transport) or \"tcp\"",
            ))
        }
    };
    Ok((write, tcp))
}

/// The fast transport's window and how many packets it acknowledges at once.
fn window_and_acks(p: &mut Params) -> Result<(u32, u32), ConfigError> {
    let window = int_in("workload.window", *p.window.get_or_insert(10), 1, 65_535)?;
    let ack_after = *p.ack_after.get_or_insert(5);
    let ack_after = int_in("workload.ack_after", ack_after, 1, 65_535)?;
    if ack_after > window {
        return Err(err(
            "workload.ack_after",
            ack_after,
            format!("at most the window ({window}), or the sender would wait forever"),
        ));
    }
    Ok((window, ack_after))
}

/// The client, the master and the master's backups (the hosts after the master, skipping
/// the client, one per replica).
fn hosts(p: &mut Params, n_hosts: i64, tcp: bool) -> Result<(u32, u32, Vec<u32>), ConfigError> {
    let last = n_hosts - 1;
    let client = int_in("workload.client", *p.client.get_or_insert(0), 0, last)?;
    let master = int_in("workload.master", *p.master.get_or_insert(1), 0, last)?;
    if master == client {
        return Err(err(
            "workload.master",
            master,
            "a host other than the client",
        ));
    }
    let replicas = *p.replicas.get_or_insert(0);
    let replicas = int_in("workload.replicas", replicas, 0, (n_hosts - 2).max(0))?;
    if replicas > 0 && tcp {
        return Err(err(
            "workload.replicas",
            replicas,
            "0 with transport \"tcp\" (replication runs over RAMCloud's own transport)",
        ));
    }
    let backups = (1..n_hosts as u32)
        .map(|d| (master + d) % n_hosts as u32)
        .filter(|&h| h != client)
        .take(replicas as usize)
        .collect();
    Ok((client, master, backups))
}
