//! Checks shared by the sections' resolvers: ranges, names, bounded file reads, and
//! whether a network fits in memory. Each returns one `ConfigError` naming the field.

use super::{err, ConfigError};
use crate::memory::memory_limit;
use crate::topology::size::Size;

/// Most hosts a topology may have (memory grows about linearly: roughly 1 KB per host).
pub const MAX_HOSTS: u64 = 100_000;

pub const DIABLO_PRESETS: &[&str] = &["1g", "10g"];

/// Largest edge-list file read (a 100,000-host topology takes about 3 MB).
pub const MAX_EDGE_LIST_BYTES: u64 = 64 << 20;
/// Largest flow-size CDF file read.
pub const MAX_CDF_BYTES: u64 = 4 << 20;

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

/// Refuses a network that would not fit in this machine's memory, before building it.
pub fn check_fits(size: &Size) -> Result<(), ConfigError> {
    let need = size.network_bytes();
    let Some((have, what)) = memory_limit() else {
        return Ok(());
    };
    let limit = have / 10 * 9;
    if need <= limit {
        return Ok(());
    }
    let gb = |b: u64| format!("{:.1} GB", b as f64 / 1e9);
    Err(err(
        "topology",
        format!(
            "a network of {} hosts, {} switches and {} links, which needs about {} to build",
            size.hosts,
            size.switches,
            size.links,
            gb(need)
        ),
        format!("at most about {} (90% of {what})", gb(limit)),
    ))
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

/// Most memory a tree service (`aggregate`, `multicast`) may keep per packet over all its
/// servers: its state grows with the packets of the file, which a size near 10^18 bytes
/// would make more than any machine holds (and more than a packet number's 32 bits).
pub const MAX_TREE_STATE_BYTES: u64 = 1 << 31;

/// `workload.size` of a tree service sending `payload`-byte packets whose servers keep
/// `state_bits` bits for each packet (over all servers): 1 byte up to what fits in
/// `MAX_TREE_STATE_BYTES` and in 2^32 - 1 packets.
pub fn tree_service_size(size: u64, payload: u32, state_bits: u64) -> Result<(), ConfigError> {
    let max_packets = (MAX_TREE_STATE_BYTES * 8 / state_bits.max(1)).min(u64::from(u32::MAX));
    let max_size = max_packets * u64::from(payload);
    if (1..=max_size).contains(&size) {
        return Ok(());
    }
    Err(err(
        "workload.size",
        size,
        format!(
            "1 to {max_size} bytes: at most {max_packets} packets of workload.packet_size \
             ({payload} bytes), as the servers keep {state_bits} bits for each packet (2 GiB in all)"
        ),
    ))
}
