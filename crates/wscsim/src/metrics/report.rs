//! What each part of a run reports when it ends, through one trait: its result tables and
//! its headline figures. The simulation asks the services and the applications (and the
//! transports, through `TransportKind`'s own `tables` and `headline`, as they sit below
//! this layer) in turn without naming any of them, so a new application or service reports
//! by implementing `Report` in its own file (its arm of its layer's match).

use crate::engine::TimePs;
use crate::net::Network;
use crate::table::Table;

/// The headline figures of a run, by name.
pub type Headline = serde_json::Map<String, serde_json::Value>;

/// What a reporter may read of the rest of the run.
pub struct ReportCtx<'a> {
    pub net: &'a Network,
    pub metrics: &'a super::Metrics,
    pub now_ps: TimePs,
    /// The run opened TCP connections.
    pub tcp_in_use: bool,
}

/// A part of a run with results of its own.
pub trait Report {
    /// Appends its result tables (none by default).
    fn tables(&self, _ctx: &ReportCtx, _out: &mut Vec<Table>) {}
    /// Adds its headline figures (none by default).
    fn headline(&self, _ctx: &ReportCtx, _h: &mut Headline) {}
}

/// Nothing to report (a workload that starts no application).
impl Report for std::convert::Infallible {}

impl<T: Report + ?Sized> Report for Box<T> {
    fn tables(&self, ctx: &ReportCtx, out: &mut Vec<Table>) {
        (**self).tables(ctx, out)
    }
    fn headline(&self, ctx: &ReportCtx, h: &mut Headline) {
        (**self).headline(ctx, h)
    }
}
