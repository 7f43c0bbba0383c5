//! Checks shared by the sections' resolvers: ranges, names, bounded file reads, and
//! whether a network fits in memory. Each returns one `ConfigError` naming the field.

use super::ConfigError;
pub use crate::check::{
    distinct_hosts, host_list, in_range, int_in, one_of, only_for, read_capped,
};
pub use crate::topology::size::check_fits;
pub use crate::topology::MAX_HOSTS;

pub const DIABLO_PRESETS: &[&str] = &["1g", "10g"];

pub use crate::topology::edge_list::MAX_EDGE_LIST_BYTES;
/// Largest flow-size CDF file read.
pub const MAX_CDF_BYTES: u64 = 4 << 20;

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
