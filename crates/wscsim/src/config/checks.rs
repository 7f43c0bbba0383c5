//! Checks shared by the sections' resolvers: ranges, names, bounded file reads, and
//! whether a network fits in memory. Each returns one `ConfigError` naming the field.

use super::{err, ConfigError};
pub use crate::check::{distinct_hosts, host_list, in_range, int_in, one_of, only_for};
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
    let allowed = format!(
        "1 to {max_size} bytes: at most {max_packets} packets of workload.packet_size \
         ({payload} bytes), as the servers keep {state_bits} bits for each packet (2 GiB in all)"
    );
    in_range("workload.size", size, 1, max_size, allowed).map(|_| ())
}
