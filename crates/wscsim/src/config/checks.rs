//! Checks shared by the sections' resolvers: ranges, names, bounded file reads, and
//! whether a network fits in memory. Each returns one `ConfigError` naming the field.

pub use crate::check::{
    distinct_hosts, host_list, in_range, int_in, one_of, only_for, read_capped,
};
pub use crate::topology::size::check_fits;
pub use crate::topology::MAX_HOSTS;

pub const DIABLO_PRESETS: &[&str] = &["1g", "10g"];

pub use crate::topology::edge_list::MAX_EDGE_LIST_BYTES;
