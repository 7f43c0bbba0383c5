//! Workload kind "none": no traffic at all; real programs make it (`wscsim emulate`).

use super::{WorkloadCtx, WorkloadKind};
use crate::check::ConfigError;

/// `[workload]` parameters of kind "none": there are none.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

/// No traffic of its own.
pub struct Idle;

impl WorkloadKind for Idle {
    const NAME: &'static str = "none";
    /// It starts nothing: a program driving a transport itself (tests) may pick RoCE.
    const OVER_MESSAGES: bool = true;
    type Params = NoParams;
    type Spec = ();
    type App = std::convert::Infallible;

    fn resolve(_: &mut NoParams, _: &WorkloadCtx) -> Result<(), ConfigError> {
        Ok(())
    }
}
