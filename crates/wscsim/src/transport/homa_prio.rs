//! Homa's parameters (`[homa]`) and its plan of priorities (`transport::homa`): how many
//! of the switches' priority levels go to unscheduled packets and by which message sizes,
//! which go to scheduled ones, how many messages a receiver grants to at once, and how
//! many bytes are a round trip's worth (`rtt_bytes`).
//!
//! As the paper (section 3.4): the unscheduled packets take a share of the levels in
//! proportion to the share of the workload's bytes that go unscheduled (the first
//! `rtt_bytes` of each message), the highest ones, at least one, leaving at least one to
//! scheduled packets; the cutoffs between unscheduled levels split the unscheduled bytes
//! evenly, the shortest messages at the highest level. The workload's sizes are those
//! the flows workload draws from (`workload.size_cdf` or `size_classes`); other workloads
//! give none, and then every unscheduled packet takes the highest level.

use crate::check::{err, int_in, ConfigError};
use crate::engine::TimePs;
use crate::units::{Bytes, Duration};

/// `[homa]`: Homa's senders and receivers.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Payload bytes per packet (default: the most the hosts' links carry), 256B to 64KB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<Bytes>,
    /// Priority levels the switches serve (default 8, the paper's), 1 to 64; packets
    /// carry their level, 0 the lowest, in their DSCP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priorities: Option<i64>,
    /// Levels for unscheduled packets (default: in proportion to the workload's
    /// unscheduled bytes), 1 to priorities - 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unscheduled_priorities: Option<i64>,
    /// Message sizes between unscheduled levels, ascending: a message of at most the
    /// first takes the highest level (default: even shares of the workload's unscheduled
    /// bytes). One fewer than the unscheduled levels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unscheduled_cutoffs: Option<Vec<Bytes>>,
    /// Bytes sent before the first grant and kept granted ahead of arrivals (default: a
    /// full packet's round trip on the longest path from host 0, at its link's rate),
    /// 1B to 16MB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_bytes: Option<Bytes>,
    /// Messages a receiver grants to at once (default: the scheduled levels), 1 to 64.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overcommitment: Option<i64>,
    /// Silence after which a receiver asks again for missing packets, and a sender sends
    /// its first packet again (default 1ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rto: Option<Duration>,
}

/// `[homa]` resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    /// None: the most the hosts' links carry.
    pub payload_bytes: Option<u32>,
    pub priorities: u32,
    pub unscheduled_priorities: Option<u32>,
    pub unscheduled_cutoffs: Option<Vec<u64>>,
    pub rtt_bytes: Option<u64>,
    pub overcommitment: Option<u32>,
    pub rto_ps: TimePs,
    /// The workload's message sizes at evenly spaced quantiles, ascending (empty: none
    /// known). Set from the workload, not a parameter.
    pub size_quantiles: Vec<u64>,
}

impl Default for Spec {
    fn default() -> Self {
        Params::default().resolve().expect("the defaults are valid")
    }
}

impl Params {
    /// Checks `[homa]` and fills in the defaults that need neither the network nor the
    /// workload.
    pub fn resolve(&mut self) -> Result<Spec, ConfigError> {
        let payload = super::super::resolve_payload("homa.payload", self.payload)?;
        let priorities = int_in("homa.priorities", *self.priorities.get_or_insert(8), 1, 64)?;
        let most_unscheduled = (priorities - 1).max(1);
        let unscheduled = match (self.unscheduled_priorities, &self.unscheduled_cutoffs) {
            (Some(u), _) => Some(int_in(
                "homa.unscheduled_priorities",
                u,
                1,
                i64::from(most_unscheduled),
            )?),
            (None, Some(c)) => Some(c.len() as u32 + 1),
            (None, None) => None,
        };
        let cutoffs = match &self.unscheduled_cutoffs {
            Some(c) => Some(check_cutoffs(c, unscheduled, most_unscheduled)?),
            None => None,
        };
        let rtt_bytes = match self.rtt_bytes {
            Some(b) if !(1..=16 << 20).contains(&b.0) => {
                return Err(err("homa.rtt_bytes", b, "1B to 16MB"))
            }
            b => b.map(|b| b.0),
        };
        let overcommitment = match self.overcommitment {
            Some(k) => Some(int_in("homa.overcommitment", k, 1, 64)?),
            None => None,
        };
        let rto = *self.rto.get_or_insert(Duration(1_000_000_000));
        Ok(Spec {
            payload_bytes: payload,
            priorities,
            unscheduled_priorities: unscheduled,
            unscheduled_cutoffs: cutoffs,
            rtt_bytes,
            overcommitment,
            rto_ps: crate::check::positive_duration("homa.rto", rto)?,
            size_quantiles: Vec::new(),
        })
    }
}

/// Checks the cutoffs given: ascending, one fewer than the unscheduled levels.
fn check_cutoffs(c: &[Bytes], levels: Option<u32>, most: u32) -> Result<Vec<u64>, ConfigError> {
    let field = "homa.unscheduled_cutoffs";
    let shown = || {
        let v: Vec<String> = c.iter().map(|b| b.to_string()).collect();
        format!("[{}]", v.join(", "))
    };
    if c.windows(2).any(|w| w[0].0 >= w[1].0) {
        return Err(err(field, shown(), "sizes in ascending order"));
    }
    let levels = levels.unwrap_or(c.len() as u32 + 1);
    if c.len() as u32 + 1 != levels || levels > most {
        return Err(err(
            field,
            format!("{} with {levels} unscheduled levels", shown()),
            format!("one fewer cutoff than the unscheduled levels, and at most {most} levels"),
        ));
    }
    Ok(c.iter().map(|b| b.0).collect())
}

/// Homa's priorities and windows for one run's network and workload.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub priorities: u32,
    /// Levels of unscheduled packets (the highest ones) and of scheduled ones (the
    /// lowest; they share level 0 with the unscheduled ones when there is one level).
    pub unscheduled_levels: u32,
    pub scheduled_levels: u32,
    /// Message sizes between unscheduled levels, ascending.
    pub cutoffs: Vec<u64>,
    pub overcommitment: u32,
    pub rtt_bytes: u64,
    /// `rtt_bytes` in full packets, rounded up.
    pub rtt_packets: u32,
}

impl Plan {
    pub fn build(spec: &Spec, net: &crate::net::Network, payload_bytes: u32) -> Self {
        let rtt_bytes = spec.rtt_bytes.unwrap_or_else(|| {
            super::super::round_trip_bytes(net, payload_bytes, super::HEADER_BYTES)
        });
        Plan::new(spec, payload_bytes, rtt_bytes)
    }

    /// The plan for packets of `payload_bytes` and a round trip of `rtt_bytes`.
    pub fn new(spec: &Spec, payload_bytes: u32, rtt_bytes: u64) -> Self {
        let p = spec.priorities;
        let most = (p - 1).max(1);
        let q = &spec.size_quantiles;
        let unscheduled_levels = spec.unscheduled_priorities.unwrap_or_else(|| {
            let total: f64 = q.iter().map(|&s| s as f64).sum();
            let unsched: f64 = q.iter().map(|&s| s.min(rtt_bytes) as f64).sum();
            match total > 0.0 {
                true => ((f64::from(p) * unsched / total).round() as u32).clamp(1, most),
                false => 1,
            }
        });
        let cutoffs = spec
            .unscheduled_cutoffs
            .clone()
            .unwrap_or_else(|| even_cutoffs(q, rtt_bytes, unscheduled_levels));
        let scheduled_levels = (p - unscheduled_levels).max(1);
        Plan {
            priorities: p,
            unscheduled_levels,
            scheduled_levels,
            cutoffs,
            overcommitment: spec.overcommitment.unwrap_or(scheduled_levels),
            rtt_bytes,
            rtt_packets: rtt_bytes.div_ceil(u64::from(payload_bytes)).max(1) as u32,
        }
    }

    /// The level of a message of `bytes`' unscheduled packets.
    pub fn unscheduled_prio(&self, bytes: u64) -> u8 {
        let below = self.cutoffs.partition_point(|&c| c < bytes) as u32;
        (self.priorities - 1 - below.min(self.unscheduled_levels - 1)) as u8
    }

    /// The scheduled level of the message ranked `rank` (0: fewest bytes left) of
    /// `granted` messages a receiver grants to: the highest levels go to the shortest,
    /// and fewer messages take the lowest levels (so a shorter one arriving can take a
    /// higher level at once).
    pub fn scheduled_prio(&self, rank: u32, granted: u32) -> u8 {
        let used = granted.clamp(1, self.scheduled_levels);
        (used - 1 - rank.min(used - 1)) as u8
    }
}

/// Cutoffs that split the unscheduled bytes of messages of sizes `q` (evenly spaced
/// quantiles) evenly over `levels` levels.
fn even_cutoffs(q: &[u64], rtt_bytes: u64, levels: u32) -> Vec<u64> {
    let total: u64 = q.iter().map(|&s| s.min(rtt_bytes)).sum();
    if total == 0 || levels < 2 {
        return Vec::new();
    }
    let mut cutoffs = Vec::new();
    let mut sum = 0u64;
    for &s in q {
        sum += s.min(rtt_bytes);
        let next = cutoffs.len() as u64 + 1;
        if next < u64::from(levels) && sum * u64::from(levels) >= next * total {
            cutoffs.push(s);
        }
    }
    cutoffs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(q: Vec<u64>, rtt_bytes: u64) -> Plan {
        let mut spec = Params::default().resolve().unwrap();
        spec.size_quantiles = q;
        Plan::new(&spec, 1000, rtt_bytes)
    }

    #[test]
    fn unscheduled_levels_follow_the_unscheduled_share_of_bytes() {
        // Every message fits in rtt_bytes: all bytes unscheduled, so 7 of 8 levels.
        let p = plan((1..=100).map(|i| i * 10).collect(), 10_000);
        assert_eq!((p.unscheduled_levels, p.scheduled_levels), (7, 1));
        assert_eq!(p.cutoffs.len(), 6);
        // The cutoffs split the bytes evenly: the first near the size below which a
        // seventh of them lie (sizes 10..=1,000: about 380).
        assert!((350..=400).contains(&p.cutoffs[0]), "{:?}", p.cutoffs);
        assert_eq!(p.unscheduled_prio(10), 7);
        assert_eq!(p.unscheduled_prio(1000), 1);
        // A tenth of the bytes unscheduled (sizes of 100 KB, rtt 10 KB): one level.
        let p = plan(vec![100_000; 50], 10_000);
        assert_eq!((p.unscheduled_levels, p.scheduled_levels), (1, 7));
        assert!(p.cutoffs.is_empty());
        assert_eq!(p.unscheduled_prio(100_000), 7);
    }

    #[test]
    fn scheduled_levels_rank_shortest_highest_and_few_take_the_lowest() {
        let p = plan(vec![100_000; 50], 10_000);
        assert_eq!(p.scheduled_prio(0, 1), 0);
        assert_eq!((p.scheduled_prio(0, 3), p.scheduled_prio(2, 3)), (2, 0));
        assert_eq!((p.scheduled_prio(0, 9), p.scheduled_prio(8, 9)), (6, 0));
        assert_eq!(p.overcommitment, 7);
    }

    #[test]
    fn bad_cutoffs_name_the_field() {
        let e = Params {
            unscheduled_cutoffs: Some(vec![Bytes(1000), Bytes(500)]),
            ..Default::default()
        }
        .resolve()
        .unwrap_err();
        assert!(e.to_string().contains("homa.unscheduled_cutoffs"), "{e}");
        let e = Params {
            unscheduled_priorities: Some(3),
            unscheduled_cutoffs: Some(vec![Bytes(1000)]),
            ..Default::default()
        }
        .resolve()
        .unwrap_err();
        assert!(e.to_string().contains("one fewer cutoff"), "{e}");
    }
}
