//! The `switch.scheme` table (and each `switch.overrides` entry's `scheme`): which data-plane
//! scheme a switch runs and its parameters. A bare string names a scheme with its defaults.

use super::{err, Bytes, ConfigError};
use crate::scheme::drr::DrrClassify;
use crate::scheme::red::RedParams;
use crate::scheme::SchemeSpec;
use crate::topology::build::MAX_VOQS;
use serde::{Deserialize, Serialize};

pub const SCHEME_KINDS: &[&str] = &[
    "droptail", "red", "dctcp", "priority", "drr", "hull", "pfabric", "python",
];

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchemeCfg {
    pub kind: String,
    // droptail
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit_packets: Option<i64>,
    // red
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_th_packets: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_th_packets: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_p: Option<f64>,
    /// EWMA weight as a power of two: 5 means 2^-5.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ecn: Option<bool>,
    // dctcp
    #[serde(skip_serializing_if = "Option::is_none")]
    pub k_packets: Option<i64>,
    // priority, drr
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queues: Option<i64>,
    // priority: a full buffer makes room for a higher class by dropping a lower one's tail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub push_out: Option<bool>,
    // drr
    #[serde(skip_serializing_if = "Option::is_none")]
    pub classify: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quantum: Option<Bytes>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quanta: Option<Vec<Bytes>>,
    // hull
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drain_fraction: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mark_threshold: Option<Bytes>,
    // python
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params: Option<serde_json::Value>,
}

/// Keys each kind accepts (besides `kind`).
fn keys_for(kind: &str) -> &'static [&'static str] {
    match kind {
        "droptail" => &["limit_packets"],
        "red" => &["min_th_packets", "max_th_packets", "max_p", "weight", "ecn"],
        "dctcp" => &["k_packets"],
        "priority" => &["queues", "push_out"],
        "drr" => &["queues", "classify", "quantum", "quanta"],
        "hull" => &["drain_fraction", "mark_threshold"],
        "python" => &["class", "params"],
        _ => &[],
    }
}

/// Parses and checks a scheme value at `path`, fills in its defaults (written back so the
/// resolved scenario shows them) and returns the resolved spec.
pub fn resolve_scheme(
    path: &str,
    value: &mut serde_json::Value,
) -> Result<SchemeSpec, ConfigError> {
    if let Some(s) = value.as_str() {
        *value = serde_json::json!({ "kind": s });
    }
    if !value.is_object() {
        return Err(err(
            path,
            value.to_string(),
            format!(
                "a scheme name ({}) or a table with `kind`",
                SCHEME_KINDS.join(", ")
            ),
        ));
    }
    let mut c: SchemeCfg = {
        let v = value.clone();
        serde_path_to_error::deserialize(v).map_err(|e| {
            let inner = e.path().to_string();
            let p = if inner == "." || inner.is_empty() {
                path.to_string()
            } else {
                format!("{path}.{inner}")
            };
            ConfigError {
                path: p,
                message: super::given_allowed(&e.into_inner().to_string()),
            }
        })?
    };
    let kind = c.kind.clone();
    if !SCHEME_KINDS.contains(&kind.as_str()) {
        return Err(err(
            &format!("{path}.kind"),
            format!("{kind:?}"),
            format!(
                "one of {}",
                SCHEME_KINDS
                    .iter()
                    .map(|k| format!("{k:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    // Keys another kind uses must not be set for this one.
    let set = serde_json::to_value(&c).unwrap();
    for key in set.as_object().unwrap().keys() {
        if key != "kind" && !keys_for(&kind).contains(&key.as_str()) {
            return Err(ConfigError {
                path: format!("{path}.{key}"),
                message: format!(
                    "given {}; allowed: not with kind {kind:?} (its keys: {})",
                    set[key],
                    keys_for(&kind).join(", ")
                ),
            });
        }
    }
    let spec = match kind.as_str() {
        "droptail" => droptail_spec(&mut c, path)?,
        "red" => red_spec(&mut c, path)?,
        "dctcp" => dctcp_spec(&mut c, path)?,
        "priority" => priority_spec(&mut c, path)?,
        "drr" => drr_spec(&mut c, path)?,
        "hull" => hull_spec(&mut c, path)?,
        "pfabric" => SchemeSpec::PFabric,
        "python" => python_spec(&mut c, path, kind.clone())?,
        _ => unreachable!(),
    };
    *value = serde_json::to_value(&c).unwrap();
    Ok(spec)
}

/// `kind = "droptail"`: its parameters, checked, with defaults filled in.
fn droptail_spec(c: &mut SchemeCfg, path: &str) -> Result<SchemeSpec, ConfigError> {
    let p = |k: &str| format!("{path}.{k}");

    let limit = match c.limit_packets {
        Some(v) if !(1..=1 << 30).contains(&v) => {
            return Err(err(
                &p("limit_packets"),
                v,
                "an integer from 1 to 1073741824 (or leave it out: bytes only)",
            ))
        }
        v => v.map(|v| v as u32),
    };
    Ok(SchemeSpec::DropTail {
        limit_packets: limit,
    })
}

/// `kind = "red"`: its parameters, checked, with defaults filled in.
fn red_spec(c: &mut SchemeCfg, path: &str) -> Result<SchemeSpec, ConfigError> {
    let p = |k: &str| format!("{path}.{k}");

    let min = *c.min_th_packets.get_or_insert(150.0);
    let max = *c.max_th_packets.get_or_insert(300.0);
    let max_p = *c.max_p.get_or_insert(0.1);
    let weight = *c.weight.get_or_insert(5);
    let ecn = *c.ecn.get_or_insert(false);
    if !(min.is_finite() && min >= 0.0) {
        return Err(err(
            &p("min_th_packets"),
            min,
            "a number of packets, 0 or more",
        ));
    }
    if !(max.is_finite() && max > min) {
        return Err(err(
            &p("max_th_packets"),
            max,
            format!("a number of packets above min_th_packets ({min})"),
        ));
    }
    if !(max_p > 0.0 && max_p <= 1.0) {
        return Err(err(&p("max_p"), max_p, "a probability in (0, 1]"));
    }
    if !(0..=30).contains(&weight) {
        return Err(err(
            &p("weight"),
            weight,
            "an integer from 0 to 30 (the EWMA weight is 2^-weight)",
        ));
    }
    Ok(SchemeSpec::Red(RedParams {
        min_th_packets: min,
        max_th_packets: max,
        max_p,
        weight_log2: weight as u32,
        ecn,
    }))
}

/// `kind = "dctcp"`: its parameters, checked, with defaults filled in.
fn dctcp_spec(c: &mut SchemeCfg, path: &str) -> Result<SchemeSpec, ConfigError> {
    let p = |k: &str| format!("{path}.{k}");

    let k = *c.k_packets.get_or_insert(65);
    if !(1..=1 << 30).contains(&k) {
        return Err(err(
            &p("k_packets"),
            k,
            "a marking threshold of 1 packet or more (65 at 10 Gbit/s)",
        ));
    }
    Ok(SchemeSpec::Dctcp {
        k_packets: k as u32,
    })
}

/// `kind = "priority"`: its parameters, checked, with defaults filled in.
fn priority_spec(c: &mut SchemeCfg, path: &str) -> Result<SchemeSpec, ConfigError> {
    let p = |k: &str| format!("{path}.{k}");

    let q = *c.queues.get_or_insert(8);
    let push_out = *c.push_out.get_or_insert(true);
    Ok(SchemeSpec::Priority {
        queues: queue_count(&p("queues"), q)?,
        push_out,
    })
}

/// `kind = "drr"`: its parameters, checked, with defaults filled in.
fn drr_spec(c: &mut SchemeCfg, path: &str) -> Result<SchemeSpec, ConfigError> {
    let p = |k: &str| format!("{path}.{k}");

    let by = c.classify.get_or_insert("flow".into()).clone();
    let classify = match by.as_str() {
        "flow" => DrrClassify::Flow,
        "dscp" => DrrClassify::Dscp,
        _ => {
            return Err(err(
                &p("classify"),
                format!("{by:?}"),
                "\"flow\" (5-tuple hash) or \"dscp\"",
            ))
        }
    };
    let quanta: Vec<u64> = match (&c.quanta, c.quantum) {
        (Some(_), Some(_)) => {
            return Err(err(
                &p("quantum"),
                "both quantum and quanta",
                "one of them: quantum (every queue) or quanta (one per queue)",
            ))
        }
        (Some(list), None) => {
            let n = *c.queues.get_or_insert(list.len() as i64);
            if n != list.len() as i64 {
                return Err(err(
                    &p("quanta"),
                    format!("{} quanta", list.len()),
                    format!("one per queue ({n})"),
                ));
            }
            list.iter().map(|b| b.0).collect()
        }
        (None, q) => {
            let q = q.unwrap_or(Bytes(1518));
            c.quantum = Some(q);
            let n = *c.queues.get_or_insert(8);
            vec![q.0; n.clamp(0, 1 << 20) as usize]
        }
    };
    queue_count(&p("queues"), c.queues.unwrap())?;
    for (i, &q) in quanta.iter().enumerate() {
        if !(64..=1 << 30).contains(&q) {
            let at = if c.quanta.is_some() {
                format!("{path}.quanta[{i}]")
            } else {
                p("quantum")
            };
            return Err(err(
                &at,
                Bytes(q),
                "from 64B to 1GiB (one full-size frame, 1518B, is usual)",
            ));
        }
    }
    Ok(SchemeSpec::Drr {
        classify,
        quanta: quanta.into_iter().map(|q| q as u32).collect(),
    })
}

/// `kind = "hull"`: its parameters, checked, with defaults filled in.
fn hull_spec(c: &mut SchemeCfg, path: &str) -> Result<SchemeSpec, ConfigError> {
    let p = |k: &str| format!("{path}.{k}");

    let f = *c.drain_fraction.get_or_insert(0.95);
    let t = *c.mark_threshold.get_or_insert(Bytes(15_000));
    if !(f > 0.0 && f <= 1.0) {
        return Err(err(
            &p("drain_fraction"),
            f,
            "a fraction of line rate in (0, 1] (0.95 in HULL and Flexplane)",
        ));
    }
    if t.0 > 1 << 40 {
        return Err(err(&p("mark_threshold"), t, "at most 1TiB"));
    }
    Ok(SchemeSpec::Hull {
        drain_fraction: f,
        mark_threshold_bytes: t.0,
    })
}

/// `kind = "python"`: its parameters, checked, with defaults filled in.
fn python_spec(c: &mut SchemeCfg, path: &str, kind: String) -> Result<SchemeSpec, ConfigError> {
    let p = |k: &str| format!("{path}.{k}");

    let class = match &c.class {
        Some(s) if !s.trim().is_empty() && !s.starts_with(':') && !s.ends_with(':') => s.clone(),
        Some(s) => return Err(err(
            &p("class"),
            format!("{s:?}"),
            "\"module:Class\", \"path/to/file.py:Class\" or a name given to wscsim.register_scheme",
        )),
        None => return Err(err(
            &p("class"),
            "nothing",
            "\"module:Class\", \"path/to/file.py:Class\" or a name given to wscsim.register_scheme",
        )),
    };
    let params = c.params.get_or_insert(serde_json::json!({})).clone();
    if !params.is_object() {
        return Err(err(
            &p("params"),
            params.to_string(),
            "a table of parameters for the class",
        ));
    }
    Ok(SchemeSpec::Custom {
        kind,
        class,
        params,
    })
}

fn queue_count(path: &str, q: i64) -> Result<u32, ConfigError> {
    if !(1..=MAX_VOQS as i64).contains(&q) {
        return Err(err(path, q, format!("an integer from 1 to {MAX_VOQS}")));
    }
    Ok(q as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bad(v: serde_json::Value) -> ConfigError {
        let mut v = v;
        resolve_scheme("switch.scheme", &mut v).unwrap_err()
    }

    #[test]
    fn names_and_tables_resolve_with_defaults() {
        let mut v = json!("red");
        let spec = resolve_scheme("switch.scheme", &mut v).unwrap();
        assert_eq!(
            spec,
            SchemeSpec::Red(RedParams {
                min_th_packets: 150.0,
                max_th_packets: 300.0,
                max_p: 0.1,
                weight_log2: 5,
                ecn: false
            })
        );
        assert_eq!(v["weight"], 5);
        let mut v = json!({"kind": "drr", "quanta": ["1500B", "3000B"]});
        assert_eq!(
            resolve_scheme("s", &mut v).unwrap(),
            SchemeSpec::Drr {
                classify: DrrClassify::Flow,
                quanta: vec![1500, 3000]
            }
        );
        assert_eq!(v["queues"], 2);
    }

    #[test]
    fn bad_parameters_name_the_field() {
        assert_eq!(
            bad(json!({"kind": "dctcp", "k_packets": -3})).path,
            "switch.scheme.k_packets"
        );
        assert_eq!(
            bad(json!({"kind": "red", "min_th_packets": 300, "max_th_packets": 150})).path,
            "switch.scheme.max_th_packets"
        );
        assert_eq!(
            bad(json!({"kind": "priority", "queues": 65})).path,
            "switch.scheme.queues"
        );
        assert_eq!(bad(json!({"kind": "codel"})).path, "switch.scheme.kind");
        assert_eq!(
            bad(json!({"kind": "dctcp", "queues": 4})).path,
            "switch.scheme.queues"
        );
        assert_eq!(
            bad(json!({"kind": "red", "bogus": 1})).path,
            "switch.scheme.bogus"
        );
        assert_eq!(
            bad(json!({"kind": "drr", "quanta": ["1500B", "10B"]})).path,
            "switch.scheme.quanta[1]"
        );
        assert_eq!(
            bad(json!({"kind": "python", "class": "Mod:"})).path,
            "switch.scheme.class"
        );
        assert_eq!(bad(json!(7)).path, "switch.scheme");
    }
}
