//! Sections with kinds (`[topology]`, `[workload]`): each kind declares its own parameters
//! as a struct beside its model (`topology::fat_tree::Params`, ...), and a section's keys
//! other than `kind` (and those every kind shares) are parsed into that struct. Adding a
//! kind adds its struct and one line to its section's table; no shared bag of options and
//! no list of which kind takes which key.

use super::{path_text, ConfigError};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

/// One kind of a section: its name, the names of its parameters (from its struct) and
/// what resolves and builds it (`B`, the section's builder type). The section's table of
/// kinds is the only list of them: finding a kind by name finds its builder, so no match
/// on names can miss one or hand it to another kind's code.
pub struct Kind<B = ()> {
    pub name: &'static str,
    pub keys: fn() -> &'static [&'static str],
    pub build: B,
}

/// The names of a section's kinds, in their table's order.
pub fn names<B>(kinds: &[Kind<B>]) -> Vec<&'static str> {
    kinds.iter().map(|k| k.name).collect()
}

/// The kind named `name` in `kinds`, or the error for field `path` that lists them.
pub fn find<'a, B>(
    path: &str,
    kinds: &'a [Kind<B>],
    name: &str,
) -> Result<&'a Kind<B>, ConfigError> {
    kinds.iter().find(|k| k.name == name).ok_or_else(|| {
        super::checks::one_of(path, name, &names(kinds)).expect_err("a name not in the list")
    })
}

/// The field names of the struct `T` deserialises, read from serde's derive.
pub fn fields_of<T: DeserializeOwned>() -> &'static [&'static str] {
    let mut probe = FieldProbe(&[]);
    let _ = T::deserialize(&mut probe);
    probe.0
}

/// A deserializer that only records the field list a struct asks for.
struct FieldProbe(&'static [&'static str]);

impl<'de> serde::Deserializer<'de> for &mut FieldProbe {
    type Error = serde::de::value::Error;

    fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(serde::de::Error::custom("only structs are probed"))
    }

    fn deserialize_struct<V: serde::de::Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0 = fields;
        Err(serde::de::Error::custom("probed"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// "a", "b" or "c", quoted.
fn one_of_names(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|k| format!("{k:?}")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.join(""),
    }
}

/// Parses the parameters of kind `kind` of `section` from `params` (the section's keys
/// other than the shared ones). A key of another kind is refused naming the kinds that take
/// it; a key of none, naming the keys this kind takes; a wrong value, by its path.
pub fn parse<T: DeserializeOwned, B>(
    section: &str,
    kinds: &[Kind<B>],
    kind: &str,
    shared: &[&str],
    params: &Map<String, Value>,
) -> Result<T, ConfigError> {
    let own = fields_of::<T>();
    for (key, given) in params {
        if own.contains(&key.as_str()) || given.is_null() {
            continue;
        }
        let takers: Vec<&str> = kinds
            .iter()
            .filter(|k| (k.keys)().contains(&key.as_str()))
            .map(|k| k.name)
            .collect();
        let allowed = if takers.is_empty() {
            let mut keys: Vec<&str> = shared.to_vec();
            keys.extend_from_slice(own);
            format!("a key of kind {kind:?}: {}", keys.join(", "))
        } else {
            format!(
                "only with kind {} (this one is {kind:?})",
                one_of_names(&takers)
            )
        };
        return Err(ConfigError {
            path: format!("{section}.{key}"),
            message: format!("given {given}; allowed: {allowed}"),
        });
    }
    serde_path_to_error::deserialize(Value::Object(params.clone())).map_err(|e| {
        let path = path_text(e.path());
        ConfigError {
            path: format!("{section}.{path}"),
            message: super::given_allowed(&e.into_inner().to_string()),
        }
    })
}

/// Writes a kind's parameters, defaults filled in, back into its section (so that the
/// resolved scenario shows every value used).
pub fn write_back<T: Serialize>(params: &mut Map<String, Value>, p: &T) {
    if let Value::Object(m) = serde_json::to_value(p).expect("parameters serialise") {
        *params = m;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, serde::Serialize, Default)]
    #[serde(deny_unknown_fields)]
    struct A {
        k: Option<i64>,
    }
    #[derive(serde::Deserialize, serde::Serialize, Default)]
    #[serde(deny_unknown_fields)]
    struct B {
        hosts: Option<i64>,
        rate: Option<String>,
    }

    const KINDS: &[Kind] = &[
        Kind {
            name: "a",
            keys: fields_of::<A>,
            build: (),
        },
        Kind {
            name: "b",
            keys: fields_of::<B>,
            build: (),
        },
    ];

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn fields_come_from_the_struct() {
        assert_eq!(fields_of::<B>(), &["hosts", "rate"]);
    }

    #[test]
    fn keys_of_other_kinds_and_of_none_are_named() {
        let e = parse::<A, ()>(
            "topology",
            KINDS,
            "a",
            &["link"],
            &map(serde_json::json!({"hosts": 4})),
        )
        .err()
        .unwrap();
        assert_eq!(e.path, "topology.hosts");
        assert!(e.message.contains("only with kind \"b\""), "{}", e.message);
        let e = parse::<A, ()>(
            "topology",
            KINDS,
            "a",
            &["link"],
            &map(serde_json::json!({"hostz": 4})),
        )
        .err()
        .unwrap();
        assert_eq!(e.path, "topology.hostz");
        assert!(e.message.contains("link, k"), "{}", e.message);
    }

    #[test]
    fn wrong_values_are_named_by_path() {
        let e = parse::<B, ()>(
            "topology",
            KINDS,
            "b",
            &[],
            &map(serde_json::json!({"hosts": "four"})),
        )
        .err()
        .unwrap();
        assert_eq!(e.path, "topology.hosts");
        let ok: B = parse(
            "topology",
            KINDS,
            "b",
            &[],
            &map(serde_json::json!({"hosts": 4})),
        )
        .unwrap();
        assert_eq!(ok.hosts, Some(4));
    }
}
