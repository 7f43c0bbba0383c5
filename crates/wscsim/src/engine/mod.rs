//! The engine: simulated time, the event queue and random streams.
//!
//! It knows nothing about networks. Time is an integer count of picoseconds so that
//! serialisation times are exact and runs are bit-for-bit reproducible.

mod near;
pub mod partitioned;
pub mod queue;
pub mod rng;
pub mod sched;
pub mod slots;

pub use partitioned::{EventQueue, Route};
pub use queue::Event;
pub use rng::{stream, StreamRng};
pub use sched::{Clock, Driver, Scheduler};

/// Simulated time in picoseconds.
pub type TimePs = u64;

pub const PS_PER_NS: u64 = 1_000;
pub const PS_PER_US: u64 = 1_000_000;
pub const PS_PER_MS: u64 = 1_000_000_000;
pub const PS_PER_S: u64 = 1_000_000_000_000;

/// A time that never comes: used for "no deadline".
pub const NEVER: TimePs = u64::MAX;

/// Starts loading the cache lines of `items[i]` (if it exists) so that a miss on it
/// overlaps other work. A hint: it never faults and changes no result.
#[inline]
pub fn prefetch<T>(items: &[T], i: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(x) = items.get(i) {
        let base = x as *const T as *const i8;
        let mut off = 0;
        while off < std::mem::size_of::<T>() {
            // SAFETY: `_mm_prefetch` is a hint that never faults; the address lies within `x`.
            unsafe {
                std::arch::x86_64::_mm_prefetch(base.add(off), std::arch::x86_64::_MM_HINT_T0)
            };
            off += 64;
        }
    }
}

/// Exact time to put `bytes` on a wire of `rate_bps`, rounded up to a whole picosecond.
#[inline]
pub fn serialisation_ps(bytes: u64, rate_bps: u64) -> TimePs {
    // bytes * 8 * 1e12 / rate; u128 keeps it exact for any realistic size and rate.
    let num = bytes as u128 * 8 * PS_PER_S as u128;
    num.div_ceil(rate_bps as u128) as TimePs
}

/// Identifies the partition a component belongs to. Components of different partitions
/// interact only through link arrival events (whose delay is the lookahead), which is what
/// lets partitions run on separate cores (`partitioned`).
pub type PartitionId = u16;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialisation_is_exact() {
        // 1500 bytes at 10 Gbit/s is 1.2 us exactly.
        assert_eq!(serialisation_ps(1500, 10_000_000_000), 1_200_000);
        // 64 bytes at 1 Gbit/s is 512 ns.
        assert_eq!(serialisation_ps(64, 1_000_000_000), 512_000);
        // rounds up: 1 byte at 3 bit/s
        assert_eq!(serialisation_ps(1, 3), 2_666_666_666_667);
    }
}
