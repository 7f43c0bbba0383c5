//! Unit-bearing values in scenarios: rates ("10Gbps"), durations ("200ms") and sizes
//! ("4KiB"). Each parses from a string with its unit and prints back to one that parses.

use crate::engine::{PS_PER_MS, PS_PER_NS, PS_PER_S, PS_PER_US};
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

/// Splits "12.5Gbps" into (12.5, "Gbps"). The number must be finite and not negative.
fn split_number(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    let v: f64 = num.parse().ok()?;
    if !v.is_finite() {
        return None;
    }
    Some((v, unit.trim()))
}

/// A link rate in bit/s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rate(pub u64);

/// A span of simulated time in picoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Duration(pub u64);

/// A size in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bytes(pub u64);

pub const RATE_ALLOWED: &str = "a positive rate with a unit, such as \"10Gbps\", \"2.5Gbps\" or \"100Mbps\" (bps, Kbps, Mbps, Gbps, Tbps)";
pub const DURATION_ALLOWED: &str =
    "a duration with a unit, such as \"200ms\", \"1us\" or \"500ns\" (s, ms, us, ns, ps), at most 1000000s";
/// Longest duration a scenario may give (10^6 s, in ps): any time of a run plus any
/// duration stays far below the 2^64 ps where simulated time would overflow.
pub const MAX_DURATION_PS: u64 = 1_000_000_000_000_000_000;
pub const BYTES_ALLOWED: &str = "a size in bytes as an integer, or with a unit such as \"4KiB\", \"256KB\" or \"1500B\" (B, KB, KiB, MB, MiB, GB, GiB, TB, TiB)";

impl Rate {
    pub fn parse(s: &str) -> Option<Rate> {
        let (v, unit) = split_number(s)?;
        let mult = match unit {
            "bps" => 1.0,
            "Kbps" | "kbps" => 1e3,
            "Mbps" => 1e6,
            "Gbps" => 1e9,
            "Tbps" => 1e12,
            _ => return None,
        };
        let bps = (v * mult).round();
        if !(1.0..=1e15).contains(&bps) {
            return None;
        }
        Some(Rate(bps as u64))
    }
}

impl Duration {
    pub fn parse(s: &str) -> Option<Duration> {
        let (v, unit) = split_number(s)?;
        let mult = match unit {
            "s" => PS_PER_S as f64,
            "ms" => PS_PER_MS as f64,
            "us" | "µs" => PS_PER_US as f64,
            "ns" => PS_PER_NS as f64,
            "ps" => 1.0,
            _ => return None,
        };
        let ps = (v * mult).round();
        if !(0.0..=MAX_DURATION_PS as f64).contains(&ps) {
            return None;
        }
        Some(Duration(ps as u64))
    }
    pub fn ps(self) -> u64 {
        self.0
    }
}

impl Bytes {
    pub fn parse(s: &str) -> Option<Bytes> {
        let (v, unit) = split_number(s)?;
        let mult = match unit {
            "" | "B" => 1.0,
            "KB" | "kB" => 1e3,
            "KiB" => 1024.0,
            "MB" => 1e6,
            "MiB" => 1048576.0,
            "GB" => 1e9,
            "GiB" => 1073741824.0,
            "TB" => 1e12,
            "TiB" => 1099511627776.0,
            _ => return None,
        };
        let b = (v * mult).round();
        if !(0.0..=1e18).contains(&b) {
            return None;
        }
        Some(Bytes(b as u64))
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let v = self.0;
        for (m, u) in [
            (1_000_000_000_000u64, "Tbps"),
            (1_000_000_000, "Gbps"),
            (1_000_000, "Mbps"),
            (1_000, "Kbps"),
        ] {
            if v >= m && v.is_multiple_of(m / 1000) {
                return write!(f, "{}{}", fmt_3dp(v as f64 / m as f64), u);
            }
        }
        write!(f, "{v}bps")
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let v = self.0;
        if v == 0 {
            return write!(f, "0s");
        }
        for (m, u) in [
            (PS_PER_S, "s"),
            (PS_PER_MS, "ms"),
            (PS_PER_US, "us"),
            (PS_PER_NS, "ns"),
        ] {
            if v >= m && v.is_multiple_of((m / 1000).max(1)) {
                return write!(f, "{}{}", fmt_3dp(v as f64 / m as f64), u);
            }
        }
        write!(f, "{v}ps")
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let v = self.0;
        for (m, u) in [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")] {
            if v >= m && v.is_multiple_of(m) {
                return write!(f, "{}{}", v / m, u);
            }
        }
        write!(f, "{v}B")
    }
}

fn fmt_3dp(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

macro_rules! unit_serde {
    ($ty:ident, $allowed:expr, $accept_int:expr) => {
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.to_string())
            }
        }
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        f.write_str($allowed)
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$ty, E> {
                        $ty::parse(v).ok_or_else(|| {
                            E::custom(format!("given {:?}; allowed: {}", v, $allowed))
                        })
                    }
                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<$ty, E> {
                        if $accept_int && v <= 1_000_000_000_000_000_000 {
                            Ok($ty(v))
                        } else {
                            Err(E::custom(format!("given {}; allowed: {}", v, $allowed)))
                        }
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<$ty, E> {
                        if $accept_int && (0..=1_000_000_000_000_000_000).contains(&v) {
                            Ok($ty(v as u64))
                        } else {
                            Err(E::custom(format!("given {}; allowed: {}", v, $allowed)))
                        }
                    }
                    fn visit_f64<E: de::Error>(self, v: f64) -> Result<$ty, E> {
                        Err(E::custom(format!("given {}; allowed: {}", v, $allowed)))
                    }
                    fn visit_bool<E: de::Error>(self, v: bool) -> Result<$ty, E> {
                        Err(E::custom(format!("given {}; allowed: {}", v, $allowed)))
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}

unit_serde!(Rate, RATE_ALLOWED, false);
unit_serde!(Duration, DURATION_ALLOWED, false);
unit_serde!(Bytes, BYTES_ALLOWED, true);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_round_trip() {
        assert_eq!(Rate::parse("10Gbps"), Some(Rate(10_000_000_000)));
        assert_eq!(Rate::parse("2.5Gbps"), Some(Rate(2_500_000_000)));
        assert_eq!(Rate::parse("-1Gbps"), None);
        assert_eq!(Rate::parse("10Gbs"), None);
        assert_eq!(Duration::parse("200ms"), Some(Duration(200 * PS_PER_MS)));
        assert_eq!(Duration::parse("1.5us"), Some(Duration(1_500_000)));
        assert_eq!(Bytes::parse("4KiB"), Some(Bytes(4096)));
        assert_eq!(Bytes::parse("256KB"), Some(Bytes(256_000)));
        for r in ["10Gbps", "2.5Gbps", "1Mbps", "7bps"] {
            assert_eq!(Rate::parse(r).unwrap().to_string(), r);
        }
        for d in ["200ms", "1us", "100ns", "1.5us", "3ps", "2s"] {
            assert_eq!(Duration::parse(d).unwrap().to_string(), d);
        }
        for b in ["4KiB", "256KiB", "1500B"] {
            assert_eq!(Bytes::parse(b).unwrap().to_string(), b);
        }
    }
}
