//! `[workload]`: the table of workload kinds, generated from the kinds' list
//! (`workload::builtin_workloads!`), and the checks every kind shares.

use super::*;
use crate::workload::{WorkloadCtx, WorkloadKind};

/// Resolves `[workload]` with its kind's resolver.
pub(super) fn resolve_workload(
    w: &mut crate::config::WorkloadCfg,
    ctx: &WorkloadCtx,
) -> Result<WorkloadSpec, ConfigError> {
    let build = crate::config::kinds::find("workload.kind", WORKLOADS, &w.kind)?.build;
    build(w, ctx)
}

/// What resolves a workload kind: its section, read with the rest of the scenario.
pub type WorkloadBuild =
    fn(&mut crate::config::WorkloadCfg, &WorkloadCtx) -> Result<WorkloadSpec, ConfigError>;

/// Declares `WORKLOADS` from the workload kinds' list.
macro_rules! workload_kinds {
    ($($(#[$attr:meta])* $variant:ident($ty:ty)),* $(,)?) => {
        /// The workload kinds, their parameters and resolvers, each from its own file
        /// (through `WorkloadKind`).
        pub const WORKLOADS: &[Kind<WorkloadBuild>] = &[
            $($(#[$attr])* Kind {
                name: <$ty as WorkloadKind>::NAME,
                keys: fields_of::<<$ty as WorkloadKind>::Params>,
                build: |w, c| build::<$ty>(w, c, WorkloadSpec::$variant),
            },)*
        ];
    };
}
crate::workload::builtin_workloads!(workload_kinds);

/// Resolves kind `T` after the checks every kind shares, its parameters parsed from the
/// section and written back with their defaults.
fn build<T: WorkloadKind>(
    w: &mut crate::config::WorkloadCfg,
    ctx: &WorkloadCtx,
    spec: fn(T::Spec) -> WorkloadSpec,
) -> Result<WorkloadSpec, ConfigError> {
    udp_transport_fits::<T>(ctx.udp_transport)?;
    if let Some(m) = ctx.messages.filter(|_| !T::OVER_MESSAGES) {
        return Err(err(
            "transport.kind",
            format!("{:?}", m.kind()),
            format!(
                "\"tcp\" for workload.kind = {:?} ({:?} carries workload.kind = \"flows\")",
                T::NAME,
                m.kind()
            ),
        ));
    }
    load_generators_fit::<T>(ctx.graph)?;
    let mut p: T::Params =
        crate::config::kinds::parse("workload", WORKLOADS, &w.kind, &["kind"], &w.params)?;
    let resolved = T::resolve(&mut p, ctx)?;
    crate::config::kinds::write_back(&mut w.params, &p);
    Ok(spec(resolved))
}

/// UDP transport is for UDP workloads.
fn udp_transport_fits<T: WorkloadKind>(udp_transport: bool) -> Result<(), ConfigError> {
    if udp_transport && !T::OVER_UDP {
        let wk = T::NAME;
        return Err(err(
            "transport.kind",
            "\"udp\"",
            format!("\"tcp\" for workload.kind = {wk:?} (UDP traffic is workload.kind = \"udp\")"),
        ));
    }
    Ok(())
}

/// A torus's load generators (hosts outside it) only serve the key-value store's clients.
fn load_generators_fit<T: WorkloadKind>(graph: &Graph) -> Result<(), ConfigError> {
    if let Some(d) = graph.torus {
        let outside = graph.n_hosts() as u32 - d[0] * d[1] * d[2];
        if outside > 0 && !T::USES_LOAD_GENERATORS {
            return Err(err(
                "topology.load_generators",
                outside,
                "0 unless workload.kind = \"kv\" (only the key-value store's clients use them)",
            ));
        }
    }
    Ok(())
}
