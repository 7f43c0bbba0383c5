//! Random streams derived from (seed, component kind, component index), so adding a
//! component never changes the draws of another one.

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

pub type StreamRng = Xoshiro256PlusPlus;

/// SplitMix64 finaliser: a strong 64-bit mixer used to derive independent stream seeds.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Names of the component families that own random streams. A new family gets a new
/// constant; existing ones keep theirs so old results stay reproducible.
pub mod family {
    pub const WORKLOAD: u64 = 1;
    pub const TOPOLOGY: u64 = 2;
    pub const SWITCH: u64 = 3;
    pub const HOST: u64 = 4;
    /// Failures drawn at random (`[[failures]] random_nodes`), one stream per entry.
    pub const FAILURE: u64 = 5;
    /// Servers failing and rejoining at random (`[churn]`).
    pub const CHURN: u64 = 6;
    /// The key-value store's clients (workload kind "kv"), one stream per client.
    pub const KV: u64 = 7;
    /// Operating-system noise on hosts (`host.noise`), one stream per host.
    pub const HOST_NOISE: u64 = 8;
}

/// The random stream of component `index` of family `family` under `seed`.
pub fn stream(seed: u64, family: u64, index: u64) -> StreamRng {
    let s = mix64(mix64(mix64(seed) ^ family.wrapping_mul(0xA24B_AED4_963E_E407)) ^ index);
    StreamRng::seed_from_u64(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn streams_are_independent_of_each_other() {
        let mut a1 = stream(7, family::WORKLOAD, 3);
        let mut a2 = stream(7, family::WORKLOAD, 3);
        let mut b = stream(7, family::WORKLOAD, 4);
        let x: u64 = a1.random();
        assert_eq!(x, a2.random::<u64>());
        assert_ne!(x, b.random::<u64>());
        let mut c = stream(8, family::WORKLOAD, 3);
        assert_ne!(x, c.random::<u64>());
    }
}
