//! The `switch.scheme` table (and each `switch.overrides` entry's `scheme`): which data-plane
//! scheme a switch runs and its parameters. A bare string names a scheme with its defaults.

use super::kinds::{self, fields_of, Kind};
use super::{err, Bytes, ConfigError};
use crate::scheme::drr::DrrClassify;
use crate::scheme::red::RedParams;
use crate::scheme::{self, SchemeSpec};
use crate::topology::build::MAX_VOQS;
use serde::{de::DeserializeOwned, Serialize};

/// What resolves a scheme kind: its table at a path (`kind` in it) to a spec.
pub type SchemeBuild = fn(&mut serde_json::Value, &str) -> Result<SchemeSpec, ConfigError>;

/// The scheme kinds, their parameters and resolvers. A new scheme adds its entry here.
pub const SCHEMES: &[Kind<SchemeBuild>] = &[
    Kind {
        name: "droptail",
        keys: fields_of::<scheme::droptail::Params>,
        build: |v, path| with_params(path, v, |c| droptail_spec(c, path)),
    },
    Kind {
        name: "red",
        keys: fields_of::<scheme::red::Params>,
        build: |v, path| with_params(path, v, |c| red_spec(c, path)),
    },
    Kind {
        name: "dctcp",
        keys: fields_of::<scheme::dctcp::Params>,
        build: |v, path| with_params(path, v, |c| dctcp_spec(c, path)),
    },
    Kind {
        name: "priority",
        keys: fields_of::<scheme::priority::Params>,
        build: |v, path| with_params(path, v, |c| priority_spec(c, path)),
    },
    Kind {
        name: "drr",
        keys: fields_of::<scheme::drr::Params>,
        build: |v, path| with_params(path, v, |c| drr_spec(c, path)),
    },
    Kind {
        name: "hull",
        keys: fields_of::<scheme::hull::Params>,
        build: |v, path| with_params(path, v, |c| hull_spec(c, path)),
    },
    Kind {
        name: "pfabric",
        keys: fields_of::<scheme::pfabric::Params>,
        build: |v, path| {
            with_params(path, v, |_: &mut scheme::pfabric::Params| {
                Ok(SchemeSpec::PFabric)
            })
        },
    },
    Kind {
        name: "python",
        keys: fields_of::<scheme::spec::CustomParams>,
        build: |v, path| with_params(path, v, |c| python_spec(c, path, "python".into())),
    },
];

/// Parses kind `P`'s parameters from `value` (less its `kind`), resolves them with `f` and
/// writes them back, defaults filled in.
fn with_params<P: DeserializeOwned + Serialize>(
    path: &str,
    value: &mut serde_json::Value,
    f: impl FnOnce(&mut P) -> Result<SchemeSpec, ConfigError>,
) -> Result<SchemeSpec, ConfigError> {
    let obj = value.as_object_mut().expect("checked to be a table");
    let kind = obj.remove("kind").expect("checked to have a kind");
    let mut p: P = kinds::parse(path, SCHEMES, kind.as_str().unwrap_or(""), &["kind"], obj)?;
    let spec = f(&mut p)?;
    kinds::write_back(obj, &p);
    let mut out = serde_json::Map::new();
    out.insert("kind".into(), kind);
    out.append(obj);
    *value = serde_json::Value::Object(out);
    Ok(spec)
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
                kinds::names(SCHEMES).join(", ")
            ),
        ));
    }
    let kind_path = format!("{path}.kind");
    let kind = match value.get("kind") {
        Some(serde_json::Value::String(k)) => k.clone(),
        // Not a name at all: refused with the same list a wrong name gets.
        other => {
            let given = other.map_or_else(|| "no kind".into(), |v| v.to_string());
            let quoted: Vec<String> = kinds::names(SCHEMES)
                .iter()
                .map(|k| format!("{k:?}"))
                .collect();
            return Err(err(
                &kind_path,
                given,
                format!("one of {}", quoted.join(", ")),
            ));
        }
    };
    let build = kinds::find(&kind_path, SCHEMES, &kind)?.build;
    build(value, path)
}

/// `kind = "droptail"`: its parameters, checked, with defaults filled in.
fn droptail_spec(c: &mut scheme::droptail::Params, path: &str) -> Result<SchemeSpec, ConfigError> {
    let p = |k: &str| format!("{path}.{k}");

    let limit = match c.limit_packets {
        Some(v) => {
            let allowed = "an integer from 1 to 1073741824 (or leave it out: bytes only)";
            Some(crate::check::in_range(&p("limit_packets"), v, 1, 1 << 30, allowed)? as u32)
        }
        None => None,
    };
    Ok(SchemeSpec::DropTail {
        limit_packets: limit,
        voqs: *c.voqs.get_or_insert(true),
    })
}

/// `kind = "red"`: its parameters, checked, with defaults filled in.
fn red_spec(c: &mut scheme::red::Params, path: &str) -> Result<SchemeSpec, ConfigError> {
    let p = |k: &str| format!("{path}.{k}");

    let min = *c.min_th_packets.get_or_insert(150.0);
    let max = *c.max_th_packets.get_or_insert(300.0);
    let max_p = *c.max_p.get_or_insert(0.1);
    let weight = *c.weight.get_or_insert(5);
    let ecn = *c.ecn.get_or_insert(false);
    // As many packets as a droptail limit may be: a queue never holds more.
    const MOST: f64 = (1u64 << 30) as f64;
    if !(min.is_finite() && (0.0..MOST).contains(&min)) {
        return Err(err(
            &p("min_th_packets"),
            min,
            "a number of packets from 0 to below 1073741824",
        ));
    }
    if !(max.is_finite() && max > min && max <= MOST) {
        return Err(err(
            &p("max_th_packets"),
            max,
            format!("a number of packets above min_th_packets ({min}), at most 1073741824"),
        ));
    }
    if !(max_p > 0.0 && max_p <= 1.0) {
        return Err(err(&p("max_p"), max_p, "a probability in (0, 1]"));
    }
    let allowed = "an integer from 0 to 30 (the EWMA weight is 2^-weight)";
    crate::check::in_range(&p("weight"), weight, 0, 30, allowed)?;
    Ok(SchemeSpec::Red(RedParams {
        min_th_packets: min,
        max_th_packets: max,
        max_p,
        weight_log2: weight as u32,
        ecn,
    }))
}

/// `kind = "dctcp"`: its parameters, checked, with defaults filled in.
fn dctcp_spec(c: &mut scheme::dctcp::Params, path: &str) -> Result<SchemeSpec, ConfigError> {
    let p = |k: &str| format!("{path}.{k}");

    let k = *c.k_packets.get_or_insert(65);
    let allowed = "a marking threshold from 1 to 1073741824 packets (65 at 10 Gbit/s)";
    crate::check::in_range(&p("k_packets"), k, 1, 1 << 30, allowed)?;
    Ok(SchemeSpec::Dctcp {
        k_packets: k as u32,
    })
}

/// `kind = "priority"`: its parameters, checked, with defaults filled in.
fn priority_spec(c: &mut scheme::priority::Params, path: &str) -> Result<SchemeSpec, ConfigError> {
    let p = |k: &str| format!("{path}.{k}");

    let q = *c.queues.get_or_insert(8);
    let push_out = *c.push_out.get_or_insert(true);
    Ok(SchemeSpec::Priority {
        queues: queue_count(&p("queues"), q)?,
        push_out,
    })
}

/// `kind = "drr"`: its parameters, checked, with defaults filled in.
fn drr_spec(c: &mut scheme::drr::Params, path: &str) -> Result<SchemeSpec, ConfigError> {
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
        let at = if c.quanta.is_some() {
            format!("{path}.quanta[{i}]")
        } else {
            p("quantum")
        };
        let allowed = "from 64B to 1GiB (one full-size frame, 1518B, is usual)";
        crate::check::in_range(&at, Bytes(q), Bytes(64), Bytes(1 << 30), allowed)?;
    }
    Ok(SchemeSpec::Drr {
        classify,
        quanta: quanta.into_iter().map(|q| q as u32).collect(),
    })
}

/// `kind = "hull"`: its parameters, checked, with defaults filled in.
fn hull_spec(c: &mut scheme::hull::Params, path: &str) -> Result<SchemeSpec, ConfigError> {
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
fn python_spec(
    c: &mut scheme::spec::CustomParams,
    path: &str,
    kind: String,
) -> Result<SchemeSpec, ConfigError> {
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
    crate::check::int_in(path, q, 1, MAX_VOQS as i64)
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
