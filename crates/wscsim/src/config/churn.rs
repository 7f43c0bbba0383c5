//! `[failure_detection]` (how the servers of a torus learn of failures) and `[churn]`
//! (servers failing and rejoining at random, CamCubeOS's Figure 5c), both for tori only.

use super::{err, ConfigError, Duration};
use crate::engine::{TimePs, PS_PER_S};
use crate::net::kbr::views::Detection;
use crate::topology::Graph;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// `[failure_detection]`: keepalives every `keepalive`, a link declared down after
/// `misses` are missed, then flooding at `flood_hop` per hop (or `mode = "instant"`: every
/// server knows every change at once, an oracle for comparison).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DetectionCfg {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keepalive: Option<Duration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub misses: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flood_hop: Option<Duration>,
    /// How long a rejoining server waits before it is a root again (default: the time a
    /// failure takes to detect, keepalive x misses).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub join_hold: Option<Duration>,
}

/// `[churn]`: `rate` failures plus rejoins per second (the paper's churn), failures at
/// exponential gaps (rate / 2 per second) on a random live server, each down long enough
/// that `down_fraction` of the servers are down on average.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChurnCfg {
    pub rate: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub down_fraction: Option<f64>,
}

/// A node down from `down_ps` until `up_ps` (NEVER: the rest of the run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeWindow {
    pub node: u32,
    pub down_ps: TimePs,
    pub up_ps: TimePs,
}

const MS: u64 = PS_PER_S / 1000;

fn torus_only(graph: &Graph, path: &str) -> Result<(), ConfigError> {
    if graph.torus.is_none() {
        return Err(err(
            path,
            "a table for a topology without forwarding servers",
            "only with topology.kind = \"torus3d\" (switches route on fixed tables)",
        ));
    }
    Ok(())
}

/// The detection of a scenario, defaults written back: keepalives every 10 ms, 3 missed,
/// 62 us per flooded hop (the software cost of a hop calibrated from the paper's ping),
/// rejoining servers held for keepalive x misses.
pub fn resolve_detection(
    cfg: &mut Option<DetectionCfg>,
    graph: &Graph,
) -> Result<Detection, ConfigError> {
    if cfg.is_some() {
        torus_only(graph, "failure_detection")?;
    } else if graph.torus.is_none() {
        return Ok(Detection {
            keepalive_ps: 0,
            misses: 0,
            flood_hop_ps: 0,
            join_hold_ps: 0,
        });
    }
    let c = cfg.get_or_insert_with(Default::default);
    let mode = c.mode.get_or_insert_with(|| "keepalive".into()).clone();
    super::checks::one_of("failure_detection.mode", &mode, &["keepalive", "instant"])?;
    let keepalive = *c.keepalive.get_or_insert(Duration(10 * MS));
    let misses = *c.misses.get_or_insert(3);
    let flood_hop = *c.flood_hop.get_or_insert(Duration(62 * MS / 1000));
    if keepalive.0 == 0 {
        return Err(err(
            "failure_detection.keepalive",
            keepalive,
            "a positive period such as \"10ms\" (mode = \"instant\" for detection at once)",
        ));
    }
    crate::check::in_range("failure_detection.misses", misses, 1, 1000, "1 to 1000")?;
    let hold = *c
        .join_hold
        .get_or_insert(Duration(keepalive.0 * misses as u64));
    let instant = mode == "instant";
    Ok(Detection {
        keepalive_ps: if instant { 0 } else { keepalive.0 },
        misses: misses as u32,
        flood_hop_ps: if instant { 0 } else { flood_hop.0 },
        join_hold_ps: if instant { 0 } else { hold.0 },
    })
}

/// The failure windows of a churn process over a run of `end_ps`, starting in its steady
/// state: `down_fraction` of the servers are down at time 0 (known to all, as failures
/// before the run), each for a uniform part of the down time.
pub fn churn_windows(
    cfg: &mut ChurnCfg,
    graph: &Graph,
    seed: u64,
    end_ps: TimePs,
) -> Result<Vec<NodeWindow>, ConfigError> {
    torus_only(graph, "churn")?;
    // Every failure is drawn (with its links') before the run and kept for all of it.
    let seconds = end_ps as f64 / PS_PER_S as f64;
    let most = (2.0 * MAX_CHURN_FAILURES / seconds).min(1e6);
    if !(cfg.rate.is_finite() && cfg.rate > 0.0 && cfg.rate <= most) {
        return Err(err(
            "churn.rate",
            cfg.rate,
            format!(
                "failures plus rejoins per second, above 0 and at most {:.0} here (1e6, \
                 and at most {MAX_CHURN_FAILURES:.0} failures over the run: duration = {})",
                most.floor(),
                Duration(end_ps)
            ),
        ));
    }
    let frac = *cfg.down_fraction.get_or_insert(0.1);
    if !(frac.is_finite() && frac > 0.0 && frac < 1.0) {
        return Err(err(
            "churn.down_fraction",
            frac,
            "a fraction above 0 and below 1",
        ));
    }
    let n = graph.n_hosts() as u32;
    let fail_per_s = cfg.rate / 2.0;
    // Little's law: down servers = failure rate x down time.
    let down_ps = (frac * f64::from(n) / fail_per_s * PS_PER_S as f64) as u64;
    let mut rng = crate::engine::rng::stream(seed, crate::engine::rng::family::CHURN, 0);
    let mut up_at = vec![0u64; n as usize];
    let mut out = Vec::new();
    let first = (frac * f64::from(n)).round() as usize;
    for _ in 0..first {
        let Some(s) = pick_up(&mut rng, &up_at, 0) else {
            break;
        };
        let up = (rng.random::<f64>() * down_ps as f64) as u64 + 1;
        up_at[s as usize] = up;
        out.push(NodeWindow {
            node: s,
            down_ps: 0,
            up_ps: up,
        });
    }
    let mut t = 0f64;
    loop {
        let u: f64 = rng.random();
        t += -(1.0 - u).ln() / fail_per_s;
        let at = (t * PS_PER_S as f64) as u64;
        if at >= end_ps {
            break;
        }
        let Some(s) = pick_up(&mut rng, &up_at, at) else {
            continue; // every server is down: this failure finds none to take
        };
        up_at[s as usize] = at + down_ps;
        out.push(NodeWindow {
            node: s,
            down_ps: at,
            up_ps: at + down_ps,
        });
    }
    Ok(out)
}

/// Most failures a churn process may draw over a run: each is kept, with its six links'
/// windows, for the whole run (some 200 MB at this many).
const MAX_CHURN_FAILURES: f64 = 1e6;

/// A server drawn uniformly among those up at `t`: by rejection while up ones are easy to
/// find, else among a list of them; None when every server is down (a Poisson process of
/// failures can outrun the rejoins, the more so with a high down_fraction).
fn pick_up(rng: &mut impl Rng, up_at: &[u64], t: TimePs) -> Option<u32> {
    for _ in 0..4096 {
        let s = rng.random_range(0..up_at.len() as u32);
        if up_at[s as usize] <= t {
            return Some(s);
        }
    }
    let up: Vec<u32> = (0..up_at.len() as u32)
        .filter(|&s| up_at[s as usize] <= t)
        .collect();
    (!up.is_empty()).then(|| up[rng.random_range(0..up.len())])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn torus(k: u32) -> Graph {
        crate::topology::torus3d::build(
            [k, k, k],
            crate::topology::LinkParams::ethernet(1_000_000_000, 0),
        )
    }

    #[test]
    fn failures_that_find_every_server_down_take_none() {
        // 27 servers, 99% down on average: Poisson failures soon find all of them down.
        let mut cfg = ChurnCfg {
            rate: 10_000.0,
            down_fraction: Some(0.99),
        };
        let w = churn_windows(&mut cfg, &torus(3), 1, PS_PER_S / 10).unwrap();
        for a in &w {
            for b in &w {
                if a != b && a.node == b.node {
                    assert!(a.up_ps <= b.down_ps || b.up_ps <= a.down_ps, "{a:?} {b:?}");
                }
            }
        }
    }

    #[test]
    fn the_failures_of_a_run_are_bounded() {
        let mut cfg = ChurnCfg {
            rate: 1e6,
            down_fraction: None,
        };
        let e = churn_windows(&mut cfg, &torus(3), 1, 100 * PS_PER_S).unwrap_err();
        assert_eq!(e.path, "churn.rate");
        assert!(e.message.contains("at most 20000 "), "{e}");
    }

    #[test]
    fn churn_keeps_the_down_fraction_and_the_rate() {
        let g = torus(8);
        let mut cfg = ChurnCfg {
            rate: 8.0,
            down_fraction: None,
        };
        let end = 200 * PS_PER_S;
        let w = churn_windows(&mut cfg, &g, 7, end).unwrap();
        let failures = w.iter().filter(|x| x.down_ps > 0).count() as f64;
        // 4 failures per second for 200 s: 800, within 4 standard deviations.
        assert!((failures - 800.0).abs() < 4.0 * 800f64.sqrt(), "{failures}");
        // Sampled at whole seconds, the down fraction averages 10% (51 of 512).
        let mut total = 0usize;
        for s in 0..200u64 {
            let t = s * PS_PER_S;
            total += w.iter().filter(|x| x.down_ps <= t && t < x.up_ps).count();
        }
        let mean = total as f64 / 200.0;
        assert!((mean - 51.2).abs() < 5.0, "{mean}");
        // No server fails while it is down.
        for a in &w {
            for b in &w {
                if a != b && a.node == b.node {
                    assert!(a.up_ps <= b.down_ps || b.up_ps <= a.down_ps, "{a:?} {b:?}");
                }
            }
        }
    }

    #[test]
    fn bad_churn_and_detection_name_their_field() {
        let g = torus(3);
        for (rate, frac, field) in [
            (0.0, None, "churn.rate"),
            (f64::NAN, None, "churn.rate"),
            (1.0, Some(1.0), "churn.down_fraction"),
        ] {
            let mut c = ChurnCfg {
                rate,
                down_fraction: frac,
            };
            assert_eq!(
                churn_windows(&mut c, &g, 1, PS_PER_S).unwrap_err().path,
                field
            );
        }
        let star = crate::topology::single_switch::build(
            4,
            crate::topology::LinkParams::ethernet(1_000_000_000, 0),
        );
        let mut c = ChurnCfg {
            rate: 1.0,
            down_fraction: None,
        };
        assert_eq!(
            churn_windows(&mut c, &star, 1, PS_PER_S).unwrap_err().path,
            "churn"
        );
        let mut d = Some(DetectionCfg {
            misses: Some(0),
            ..Default::default()
        });
        assert_eq!(
            resolve_detection(&mut d, &g).unwrap_err().path,
            "failure_detection.misses"
        );
        let mut d = Some(DetectionCfg::default());
        assert_eq!(
            resolve_detection(&mut d, &star).unwrap_err().path,
            "failure_detection"
        );
    }
}
