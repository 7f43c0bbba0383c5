//! The `switch.scheme` table (and each `switch.overrides` entry's `scheme`): which data-plane
//! scheme a switch runs and its parameters. A bare string names a scheme with its defaults.

use super::kinds::{self, fields_of, Kind};
use super::{err, ConfigError};
use crate::scheme::{self, SchemeKind, SchemeSpec};
use serde::{de::DeserializeOwned, Serialize};

/// What resolves a scheme kind: its table at a path (`kind` in it) to a spec.
pub type SchemeBuild = fn(&mut serde_json::Value, &str) -> Result<SchemeSpec, ConfigError>;

/// Declares `SCHEMES` from the built-in schemes' list (`scheme::builtin_schemes!`).
macro_rules! scheme_kinds {
    ($($(#[$attr:meta])* $variant:ident($ty:ty)),* $(,)?) => {
        /// The scheme kinds, their parameters and resolvers: the built-ins (each from its
        /// own file, through `SchemeKind`), then "python".
        pub const SCHEMES: &[Kind<SchemeBuild>] = &[
            $($(#[$attr])* Kind {
                name: <$ty as SchemeKind>::NAME,
                keys: fields_of::<<$ty as SchemeKind>::Params>,
                build: |v, path| {
                    with_params(path, v, |c| {
                        <$ty as SchemeKind>::resolve(c, path).map(SchemeSpec::$variant)
                    })
                },
            },)*
            Kind {
                name: "python",
                keys: fields_of::<scheme::spec::CustomParams>,
                build: |v, path| with_params(path, v, |c| python_spec(c, path, "python".into())),
            },
        ];
    };
}
scheme::builtin_schemes!(scheme_kinds);

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
            SchemeSpec::Red(scheme::red::RedParams {
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
            SchemeSpec::Drr(scheme::drr::Spec {
                classify: scheme::drr::DrrClassify::Flow,
                quanta: vec![1500, 3000]
            })
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
