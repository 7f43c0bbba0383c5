//! A refused input and the checks that refuse it: one `ConfigError` naming the field, what
//! was given and what is allowed. Every layer's kinds check their own parameters with
//! these (so they sit at the bottom of the layers); `config` resolves the scenario with
//! them.

use std::fmt;

/// A refused scenario: `path: given X; allowed: Y`.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigError {
    pub path: String,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

impl std::error::Error for ConfigError {}

pub fn err(path: &str, given: impl fmt::Display, allowed: impl fmt::Display) -> ConfigError {
    ConfigError {
        path: path.to_string(),
        message: format!(
            "given {}; allowed: {allowed}",
            short_number(given.to_string())
        ),
    }
}

/// A number as a reader takes it in: 1e300 rather than its 301 digits (a float's Display
/// writes every digit).
fn short_number(given: String) -> String {
    match given.parse::<f64>() {
        Ok(x) if given.len() > 16 && x.is_finite() => format!("{x:e}"),
        _ => given,
    }
}

pub fn one_of(path: &str, v: &str, allowed: &[&str]) -> Result<(), ConfigError> {
    if allowed.contains(&v) {
        Ok(())
    } else {
        Err(err(
            path,
            format!("{v:?}"),
            format!(
                "one of {}",
                allowed
                    .iter()
                    .map(|a| format!("{a:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ))
    }
}

/// The one range check: `v` at `path` must lie in `lo..=hi` (a NaN never does); refused
/// with `allowed`, which says the range in the field's own units.
pub fn in_range<T: PartialOrd + std::fmt::Display>(
    path: &str,
    v: T,
    lo: T,
    hi: T,
    allowed: impl std::fmt::Display,
) -> Result<T, ConfigError> {
    if (lo..=hi).contains(&v) {
        Ok(v)
    } else {
        Err(err(path, v, allowed))
    }
}

/// A fraction above 0 and at most 1 at `path` (a NaN never is one).
pub fn fraction(path: &str, v: f64) -> Result<f64, ConfigError> {
    if v > 0.0 && v <= 1.0 {
        Ok(v)
    } else {
        Err(err(path, v, "a number above 0, at most 1"))
    }
}

/// A duration above 0 at `path`, in picoseconds.
pub fn positive_duration(path: &str, d: crate::units::Duration) -> Result<u64, ConfigError> {
    match d.0 {
        0 => Err(err(path, "0s", "a duration above 0")),
        ps => Ok(ps),
    }
}

/// A rate above 0 at `path`, in bits per second.
pub fn positive_rate(path: &str, r: crate::units::Rate) -> Result<f64, ConfigError> {
    match r.0 {
        0 => Err(err(path, "0bps", "a rate above 0")),
        bps => Ok(bps as f64),
    }
}

/// An integer count or index from `lo` to `hi` (`in_range` with the plain wording).
pub fn int_in(path: &str, v: i64, lo: i64, hi: i64) -> Result<u32, ConfigError> {
    in_range(path, v, lo, hi, format!("an integer from {lo} to {hi}")).map(|v| v as u32)
}

/// A key that only some kinds use must not be set for another kind.
pub fn only_for<T: std::fmt::Debug>(
    path: &str,
    v: &Option<T>,
    kinds: &str,
    kind: &str,
) -> Result<(), ConfigError> {
    match v {
        Some(x) => Err(ConfigError {
            path: path.into(),
            message: format!("given {x:?}; allowed: only with kind {kinds} (this one is {kind:?})"),
        }),
        None => Ok(()),
    }
}

/// A list of host indices at `path`: non-empty, each in range. None when not given.
pub fn host_list(
    path: &str,
    v: &Option<Vec<i64>>,
    n_hosts: i64,
) -> Result<Option<Vec<u32>>, ConfigError> {
    let Some(v) = v else { return Ok(None) };
    if v.is_empty() {
        return Err(err(path, "[]", "a non-empty list of host indices"));
    }
    let mut out = Vec::with_capacity(v.len());
    for (i, &h) in v.iter().enumerate() {
        out.push(int_in(&format!("{path}[{i}]"), h, 0, n_hosts - 1)?);
    }
    Ok(Some(out))
}

/// The hosts a job runs on at `path`: each in range and none twice; every host when the
/// list is not given.
pub fn distinct_hosts(
    path: &str,
    v: &Option<Vec<i64>>,
    n_hosts: i64,
) -> Result<Vec<u32>, ConfigError> {
    let Some(list) = host_list(path, v, n_hosts)? else {
        return Ok((0..n_hosts as u32).collect());
    };
    let mut seen = vec![false; n_hosts as usize];
    for (i, &h) in list.iter().enumerate() {
        if std::mem::replace(&mut seen[h as usize], true) {
            return Err(err(&format!("{path}[{i}]"), h, "distinct host indices"));
        }
    }
    Ok(list)
}

/// Reads a regular file of at most `max` bytes; anything else (a device, a pipe, a huge
/// file) is refused before reading, so that a scenario cannot make wscsim read forever.
pub fn read_capped(
    path: &str,
    field: &str,
    allowed: &str,
    max: u64,
) -> Result<String, ConfigError> {
    use std::io::Read;
    let refuse = |why: String| err(field, format!("{path:?}"), format!("{allowed} ({why})"));
    let meta = std::fs::metadata(path).map_err(|e| refuse(e.to_string()))?;
    if !meta.is_file() {
        return Err(refuse("it is not a regular file".into()));
    }
    if meta.len() > max {
        return Err(refuse(format!(
            "it has {} bytes; at most {max} are read",
            meta.len()
        )));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .map_err(|e| refuse(e.to_string()))?
        .take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| refuse(e.to_string()))?;
    if bytes.len() as u64 > max {
        return Err(refuse(format!("it grew past {max} bytes while being read")));
    }
    String::from_utf8(bytes).map_err(|e| {
        refuse(format!(
            "it is not UTF-8 text (byte {})",
            e.utf8_error().valid_up_to()
        ))
    })
}
