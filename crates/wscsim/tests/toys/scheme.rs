//! A toy scheme, the example of docs/extending.md ("Adding a scheme"): one FIFO that holds
//! at most `max_packets` packets, whatever their bytes (and never more than the port's
//! buffer). This file and one line in `builtin_schemes!` are all it takes; it is compiled
//! into the crate for its tests only (`#[cfg(test)]` on that line) so that the walk-through
//! stays true.

use super::{PortCtx, SchemeKind, Verdict};
use crate::packet::PktId;

/// Scenario parameters of scheme kind "toy_cap".
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Most packets the port holds (default 4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_packets: Option<i64>,
}

/// One port's toy scheme.
pub struct ToyCap {
    max_packets: u32,
}

impl SchemeKind for ToyCap {
    const NAME: &'static str = "toy_cap";
    type Params = Params;
    /// The resolved cap.
    type Spec = u32;

    fn resolve(c: &mut Params, path: &str) -> Result<u32, crate::check::ConfigError> {
        let n = *c.max_packets.get_or_insert(4);
        crate::check::int_in(&format!("{path}.max_packets"), n, 1, 1 << 20)
    }

    fn build(max_packets: &u32, _seed: u64, _port: u32) -> Self {
        ToyCap {
            max_packets: *max_packets,
        }
    }

    fn enqueue(&mut self, ctx: &mut PortCtx, pkt: PktId, _queue: usize) -> Verdict {
        if *ctx.pkts_queued >= self.max_packets {
            return Verdict::Dropped;
        }
        ctx.push_if_fits(0, pkt, false)
    }

    fn schedule(&mut self, ctx: &mut PortCtx) -> Option<PktId> {
        ctx.pop(0)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::Fixture;
    use crate::sim::Sim;

    #[test]
    fn the_toy_holds_at_most_its_cap() {
        let spec = crate::config::scheme::resolve_scheme(
            "switch.scheme",
            &mut serde_json::json!({"kind": "toy_cap", "max_packets": 2}),
        )
        .unwrap();
        let mut f = Fixture::new(spec.queues(8) as usize);
        let mut s = spec.build(1, 0);
        let verdicts: Vec<_> = (0..3)
            .map(|i| {
                let id = f.data(0, i);
                s.enqueue(&mut f.ctx(1 << 20), id, 0)
            })
            .collect();
        assert_eq!(
            verdicts,
            [
                super::Verdict::Accepted,
                super::Verdict::Accepted,
                super::Verdict::Dropped
            ]
        );
        assert_eq!(f.drain(&mut s), vec![0, 1]);
    }

    /// The toy is a scheme like the others: named in a scenario, checked, and run.
    fn incast_through(scheme: &str) -> Result<Sim, crate::check::ConfigError> {
        let mut s = Sim::from_json(&format!(
            r#"{{"duration":"200ms","topology":{{"kind":"single_switch","hosts":9,"link":{{"rate":"1Gbps"}}}},
            "switch":{{"scheme":{scheme}}},"transport":{{"rto_min":"1ms"}},
            "workload":{{"kind":"incast","senders":8,"block":"64KB","iterations":2}}}}"#
        ))?;
        s.run();
        Ok(s)
    }

    #[test]
    fn a_scenario_runs_the_toy_and_refuses_its_bad_parameters() {
        let capped = incast_through(r#"{"kind":"toy_cap","max_packets":3}"#).unwrap();
        let wide = incast_through(r#"{"kind":"toy_cap","max_packets":100000}"#).unwrap();
        assert_eq!(capped.metrics.incast.len(), 2, "both iterations finish");
        assert!(
            capped.net.counters().dropped > wide.net.counters().dropped,
            "a cap of 3 packets drops more ({} against {})",
            capped.net.counters().dropped,
            wide.net.counters().dropped
        );
        let e = incast_through(r#"{"kind":"toy_cap","max_packets":0}"#)
            .err()
            .unwrap();
        assert_eq!(e.path, "switch.scheme.max_packets");
    }
}
