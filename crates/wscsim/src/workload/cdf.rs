//! Empirical size distributions: points (size_bytes, cdf) sampled by inverse transform with
//! linear interpolation between points, the convention of the papers that publish them.

use rand::Rng;

/// Built-in flow-size distributions, shipped with the Python package and embedded here.
pub const BUILTIN_CDFS: &[(&str, &str)] = &[
    (
        "websearch",
        include_str!("../../../../python/wscsim/data/websearch_flow_sizes.csv"),
    ),
    (
        "datamining",
        include_str!("../../../../python/wscsim/data/datamining_flow_sizes.csv"),
    ),
    (
        "hadoop",
        include_str!("../../../../python/wscsim/data/hadoop_flow_sizes.csv"),
    ),
];

/// Largest flow-size CDF file read.
pub const MAX_CDF_BYTES: u64 = 4 << 20;

#[derive(Clone, Debug)]
pub struct Cdf {
    pub points: Vec<(f64, f64)>,
}

impl Cdf {
    /// Parses `size_bytes,cdf` lines (a header line is allowed). Checks that sizes and
    /// probabilities never decrease, that the first cdf is >= 0 and the last is 1.
    pub fn parse(text: &str) -> Result<Cdf, String> {
        let mut points = vec![];
        let mut header_allowed = true;
        for (i, line) in text.lines().enumerate() {
            let line_no = i + 1;
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            // Messages name the line and what was expected, never the line's text.
            let parts: Vec<&str> = line
                .split([',', ' ', '\t'])
                .filter(|s| !s.is_empty())
                .collect();
            if parts.len() != 2 {
                return Err(format!(
                    "line {line_no}: given {} fields; allowed: two numbers \"size_bytes,cdf\"",
                    parts.len()
                ));
            }
            let (Ok(size), Ok(p)) = (parts[0].parse::<f64>(), parts[1].parse::<f64>()) else {
                if header_allowed {
                    header_allowed = false;
                    continue; // a header: the first line that is not blank or a comment
                }
                return Err(format!(
                    "line {line_no}: not two numbers; allowed: two numbers \"size_bytes,cdf\""
                ));
            };
            header_allowed = false;
            if !(size.is_finite() && size >= 0.0 && (0.0..=1.0).contains(&p)) {
                return Err(format!("line {line_no}: given size {size} and cdf {p}; allowed: size >= 0 and 0 <= cdf <= 1"));
            }
            if let Some(&(ls, lp)) = points.last() {
                if size < ls || p < lp {
                    return Err(format!("line {line_no}: given ({size}, {p}) after ({ls}, {lp}); allowed: sizes and cdf values that never decrease"));
                }
            }
            points.push((size, p));
        }
        if points.len() < 2 {
            return Err(format!(
                "given {} points; allowed: at least 2",
                points.len()
            ));
        }
        let last = points.last().unwrap().1;
        if (last - 1.0).abs() > 1e-9 {
            return Err(format!("last cdf given {last}; allowed: 1"));
        }
        Ok(Cdf { points })
    }

    /// Inverse transform with linear interpolation; never returns less than 1 byte.
    pub fn sample<R: Rng>(&self, rng: &mut R) -> u64 {
        let u: f64 = rng.random();
        self.quantile(u)
    }

    pub fn quantile(&self, u: f64) -> u64 {
        let pts = &self.points;
        let i = pts.partition_point(|&(_, p)| p < u);
        let v = if i == 0 {
            pts[0].0
        } else if i >= pts.len() {
            pts[pts.len() - 1].0
        } else {
            let (s0, p0) = pts[i - 1];
            let (s1, p1) = pts[i];
            if p1 > p0 {
                s0 + (s1 - s0) * (u - p0) / (p1 - p0)
            } else {
                s1
            }
        };
        v.round().max(1.0) as u64
    }

    /// Mean of the interpolated distribution.
    pub fn mean(&self) -> f64 {
        let pts = &self.points;
        let mut m = pts[0].0 * pts[0].1;
        for w in pts.windows(2) {
            m += (w[1].1 - w[0].1) * (w[0].0 + w[1].0) / 2.0;
        }
        m.max(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::{family, stream};

    #[test]
    fn sample_mean_matches_mean() {
        let c = Cdf::parse("size_bytes,cdf\n0,0\n1000,0.5\n11000,1\n").unwrap();
        assert!((c.mean() - 3250.0).abs() < 1e-9);
        let mut r = stream(1, family::WORKLOAD, 0);
        let n = 200_000;
        let m: f64 = (0..n).map(|_| c.sample(&mut r) as f64).sum::<f64>() / n as f64;
        assert!((m - 3250.0).abs() / 3250.0 < 0.02, "{m}");
    }

    #[test]
    fn rejects_bad_cdfs() {
        assert!(Cdf::parse("0,0\n100,0.6\n50,0.7\n200,1\n")
            .unwrap_err()
            .contains("never decrease"));
        assert!(Cdf::parse("0,0\n100,0.6\n200,0.9\n")
            .unwrap_err()
            .contains("allowed: 1"));
        assert!(Cdf::parse("0,0\n100,x\n").is_err());
        // A second header-like line is an error, naming the line but not echoing it.
        let e = Cdf::parse("size,cdf\nsecret,words\n0,0\n10,1\n").unwrap_err();
        assert!(e.starts_with("line 2:") && !e.contains("secret"), "{e}");
    }

    #[test]
    fn a_header_may_follow_comments_and_blank_lines() {
        let c = Cdf::parse("# from the paper\n\nsize_bytes,cdf\n0,0\n1000,1\n").unwrap();
        assert!((c.mean() - 500.0).abs() < 1e-9);
    }
}
