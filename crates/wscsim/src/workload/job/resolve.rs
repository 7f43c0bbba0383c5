//! `workload.kind = "job"`: the nodes and the phases they run (`workload::job`). Every
//! phase is checked here, so a bad one is refused naming `workload.phases[i].field`.

use crate::check::distinct_hosts;
use crate::check::{err, ConfigError};
use crate::workload::job::{Job, JobSpec, Params, Phase, PhaseCfg};

/// The most cycles per byte a compute phase may ask: far beyond any real kernel
/// (a complex regular expression is a few hundred), still catching a slipped exponent.
const MAX_CYCLES_PER_BYTE: f64 = 1e6;

impl crate::workload::WorkloadKind for Job {
    const NAME: &'static str = "job";
    type Params = Params;
    type Spec = JobSpec;
    type App = Box<Job>;

    fn resolve(p: &mut Params, ctx: &crate::workload::WorkloadCtx) -> Result<JobSpec, ConfigError> {
        resolve_job(p, ctx.n_hosts, ctx.host.storage.is_some(), ctx.pcie())
    }

    fn applications(spec: JobSpec, _: &mut crate::workload::AppsBuild) -> Vec<Box<Job>> {
        vec![Box::new(Job::new(spec))]
    }
}

/// `pcie`: the hosts' links are PCIe (a shuffle `via = "auto"` then uses DMA).
fn resolve_job(
    p: &mut Params,
    n_hosts: i64,
    storage: bool,
    pcie: bool,
) -> Result<JobSpec, ConfigError> {
    let nodes = distinct_hosts("workload.nodes", &p.nodes, n_hosts)?;
    p.nodes = Some(nodes.iter().map(|&h| i64::from(h)).collect());
    let Some(cfgs) = p.phases.as_mut().filter(|v| !v.is_empty()) else {
        return Err(err(
            "workload.phases",
            "nothing",
            "a list of phases such as [{ kind = \"read\", bytes = \"1GB\" }, { kind = \"shuffle\", bytes = \"1GB\" }]",
        ));
    };
    let phases: Vec<Phase> = cfgs
        .iter_mut()
        .enumerate()
        .map(|(i, c)| {
            phase(
                &format!("workload.phases[{i}]"),
                c,
                (nodes.len(), storage, pcie),
            )
        })
        .collect::<Result<_, _>>()?;
    let overlap: Vec<bool> = cfgs.iter().map(|c| c.overlap == Some(true)).collect();
    check_groups(&phases, &overlap)?;
    Ok(JobSpec {
        nodes,
        phases,
        overlap,
    })
}

/// The first phase starts with nothing before it; a group of overlapping phases has at
/// most one shuffle (its data would otherwise be told apart by nothing).
fn check_groups(phases: &[Phase], overlap: &[bool]) -> Result<(), ConfigError> {
    if overlap[0] {
        return Err(err(
            "workload.phases[0].overlap",
            true,
            "false for the first phase (there is no phase before it to overlap)",
        ));
    }
    let mut shuffle_in_group = false;
    for (k, p) in phases.iter().enumerate() {
        if !overlap[k] {
            shuffle_in_group = false;
        }
        if matches!(p, Phase::Shuffle { .. }) {
            if shuffle_in_group {
                return Err(err(
                    &format!("workload.phases[{k}].overlap"),
                    true,
                    "at most one shuffle in a group of overlapping phases",
                ));
            }
            shuffle_in_group = true;
        }
    }
    Ok(())
}

/// One phase; `(nodes, storage, pcie)` say what the job runs on.
fn phase(path: &str, c: &mut PhaseCfg, on: (usize, bool, bool)) -> Result<Phase, ConfigError> {
    let (n, storage, pcie) = on;
    let Some(bytes) = c.bytes.map(|b| b.0) else {
        return Err(err(
            &format!("{path}.bytes"),
            "nothing",
            "a size such as \"1GB\"",
        ));
    };
    let refuse = |key: &str, given: bool| -> Result<(), ConfigError> {
        if given {
            return Err(err(
                &format!("{path}.{key}"),
                format!("a {key} for a {:?} phase", c.kind),
                match key {
                    "cycles_per_byte" | "parallel_fraction" => "it only in a \"compute\" phase",
                    _ => "it only in a \"shuffle\" phase",
                },
            ));
        }
        Ok(())
    };
    let kind = c.kind.as_str();
    if kind != "compute" {
        refuse("cycles_per_byte", c.cycles_per_byte.is_some())?;
        refuse("parallel_fraction", c.parallel_fraction.is_some())?;
    }
    if kind != "shuffle" {
        refuse("pattern", c.pattern.is_some())?;
        refuse("root", c.root.is_some())?;
        refuse("via", c.via.is_some())?;
    }
    match kind {
        "read" | "write" => {
            if !storage {
                return Err(err(
                    &format!("{path}.kind"),
                    format!("{kind:?} without a storage device"),
                    "a storage phase only with host.storage set",
                ));
            }
            Ok(if kind == "read" {
                Phase::Read { bytes }
            } else {
                Phase::Write { bytes }
            })
        }
        "compute" => compute(path, c, bytes),
        "shuffle" => shuffle(path, c, bytes, n, pcie),
        _ => Err(err(
            &format!("{path}.kind"),
            format!("{kind:?}"),
            "\"read\", \"write\", \"compute\" or \"shuffle\"",
        )),
    }
}

fn compute(path: &str, c: &mut PhaseCfg, bytes: u64) -> Result<Phase, ConfigError> {
    let cpb = c.cycles_per_byte.unwrap_or(f64::NAN);
    if !(cpb.is_finite() && cpb > 0.0 && cpb <= MAX_CYCLES_PER_BYTE) {
        return Err(err(
            &format!("{path}.cycles_per_byte"),
            c.cycles_per_byte
                .map_or("nothing".into(), |v| v.to_string()),
            format!("CPU cycles per byte, above 0 and at most {MAX_CYCLES_PER_BYTE}"),
        ));
    }
    let pf = *c.parallel_fraction.get_or_insert(1.0);
    let allowed = "a fraction from 0 (one core does it all) to 1 (it spreads over every core)";
    crate::check::in_range(&format!("{path}.parallel_fraction"), pf, 0.0, 1.0, allowed)?;
    Ok(Phase::Compute {
        cycles: bytes as f64 * cpb,
        parallel_fraction: pf,
    })
}

fn shuffle(
    path: &str,
    c: &mut PhaseCfg,
    bytes: u64,
    n: usize,
    pcie: bool,
) -> Result<Phase, ConfigError> {
    let pattern = c.pattern.get_or_insert_with(|| "all_to_all".into()).clone();
    let to_one = match pattern.as_str() {
        "all_to_all" => {
            if let Some(r) = c.root {
                return Err(err(
                    &format!("{path}.root"),
                    r,
                    "a root only with pattern \"to_one\"",
                ));
            }
            None
        }
        "to_one" => {
            let r = *c.root.get_or_insert(0);
            if !(0..n as i64).contains(&r) {
                return Err(err(
                    &format!("{path}.root"),
                    r,
                    format!("an index into workload.nodes, 0 to {}", n - 1),
                ));
            }
            Some(r as u32)
        }
        other => {
            return Err(err(
                &format!("{path}.pattern"),
                format!("{other:?}"),
                "\"all_to_all\" or \"to_one\"",
            ))
        }
    };
    let dma = transfer_via(&format!("{path}.via"), &mut c.via, "tcp", pcie)?;
    if n < 2 {
        return Err(err(
            &format!("{path}.kind"),
            "a shuffle on one node",
            "a shuffle with 2 or more nodes",
        ));
    }
    Ok(Phase::Shuffle { bytes, to_one, dma })
}

/// How a job's data crosses the network: `true` for the PCIe data-transfer library's DMA,
/// `false` for sockets. `pcie`: the hosts' links are PCIe.
pub fn transfer_via(
    path: &str,
    via: &mut Option<String>,
    default: &str,
    pcie: bool,
) -> Result<bool, ConfigError> {
    match via.get_or_insert_with(|| default.into()).as_str() {
        "tcp" => Ok(false),
        "dma" if pcie => Ok(true),
        "dma" => Err(err(
            path,
            "\"dma\" on links that are not PCIe",
            "\"dma\" only with topology.link.technology = \"pcie_gen2\" (or \"auto\")",
        )),
        // The data-transfer library where the fabric is PCIe, sockets elsewhere (as the
        // paper ported its applications).
        "auto" => Ok(pcie),
        other => Err(err(
            path,
            format!("{other:?}"),
            "\"tcp\" (sockets), \"dma\" (the PCIe DMA library) or \"auto\" (DMA on PCIe links, TCP elsewhere)",
        )),
    }
}
