//! The Facebook memcached ETC workload model (Atikoglu et al., SIGMETRICS 2012, section 6),
//! read from `memcached_etc.json` (shipped with the Python package, embedded here): key
//! sizes from a generalized extreme value distribution, value sizes from a discrete part
//! (0-14 bytes) and a generalized Pareto tail, inter-arrival gaps from a generalized Pareto
//! distribution, and the GET/SET/DELETE mix. Sampling is by inverse transform.

use rand::Rng;
use serde::Deserialize;

pub const ETC_JSON: &str = include_str!("../../../../python/wscsim/data/memcached_etc.json");

#[derive(Clone, Copy, Debug, Deserialize)]
pub struct Gev {
    pub location: f64,
    pub scale: f64,
    pub shape: f64,
}

impl Gev {
    /// CDF exp(-(1 + k (x - mu) / sigma)^(-1/k)).
    pub fn cdf(&self, x: f64) -> f64 {
        let t = 1.0 + self.shape * (x - self.location) / self.scale;
        if t <= 0.0 {
            return if self.shape > 0.0 { 0.0 } else { 1.0 };
        }
        (-t.powf(-1.0 / self.shape)).exp()
    }
    pub fn quantile(&self, u: f64) -> f64 {
        self.location + self.scale * ((-u.ln()).powf(-self.shape) - 1.0) / self.shape
    }
}

#[derive(Clone, Copy, Debug, Deserialize)]
pub struct Gpd {
    pub location: f64,
    pub scale: f64,
    pub shape: f64,
}

impl Gpd {
    /// CDF 1 - (1 + k (x - theta) / sigma)^(-1/k).
    pub fn cdf(&self, x: f64) -> f64 {
        if x <= self.location {
            return 0.0;
        }
        1.0 - (1.0 + self.shape * (x - self.location) / self.scale).powf(-1.0 / self.shape)
    }
    pub fn quantile(&self, u: f64) -> f64 {
        self.location + self.scale * ((1.0 - u).powf(-self.shape) - 1.0) / self.shape
    }
    /// Mean, finite for shape < 1.
    pub fn mean(&self) -> f64 {
        self.location + self.scale / (1.0 - self.shape)
    }
}

#[derive(Deserialize)]
struct KeySizeJson {
    location: f64,
    scale: f64,
    shape: f64,
    min: u32,
    max: u32,
}

#[derive(Deserialize)]
struct DiscreteJson {
    sizes: Vec<u32>,
    probabilities: Vec<f64>,
}

#[derive(Deserialize)]
struct TailJson {
    location: f64,
    scale: f64,
    shape: f64,
    offset: u32,
    max: u32,
}

#[derive(Deserialize)]
struct ValueSizeJson {
    discrete_small_values: DiscreteJson,
    tail: TailJson,
}

#[derive(Deserialize)]
struct MixJson {
    get: f64,
    set: f64,
    delete: f64,
}

#[derive(Deserialize)]
struct EtcJson {
    key_size_bytes: KeySizeJson,
    value_size_bytes: ValueSizeJson,
    inter_arrival_us: Gpd,
    operation_mix: MixJson,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Get,
    Set,
    Delete,
}

/// The ETC model, ready to sample.
#[derive(Clone, Debug)]
pub struct Etc {
    pub key: Gev,
    pub key_min: u32,
    pub key_max: u32,
    /// (size, cumulative probability) of the discrete small values.
    small_values: Vec<(u32, f64)>,
    pub value_tail: Gpd,
    pub value_offset: u32,
    pub value_max: u32,
    pub gap_us: Gpd,
    /// Cumulative probabilities of GET and GET+SET.
    mix: (f64, f64),
}

impl Etc {
    pub fn builtin() -> Etc {
        Etc::from_json(ETC_JSON).expect("the bundled ETC model parses")
    }

    pub fn from_json(text: &str) -> Result<Etc, String> {
        let j: EtcJson = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let d = &j.value_size_bytes.discrete_small_values;
        let mut acc = 0.0;
        let small_values = d.sizes.iter().zip(&d.probabilities).map(|(&s, &p)| {
            acc += p;
            (s, acc)
        });
        let small_values: Vec<_> = small_values.collect();
        let m = &j.operation_mix;
        let total = m.get + m.set + m.delete;
        let k = &j.key_size_bytes;
        let t = &j.value_size_bytes.tail;
        Ok(Etc {
            key: Gev {
                location: k.location,
                scale: k.scale,
                shape: k.shape,
            },
            key_min: k.min,
            key_max: k.max,
            small_values,
            value_tail: Gpd {
                location: t.location,
                scale: t.scale,
                shape: t.shape,
            },
            value_offset: t.offset,
            value_max: t.max,
            gap_us: j.inter_arrival_us,
            mix: (m.get / total, (m.get + m.set) / total),
        })
    }

    /// Probability that a value is one of the small discrete sizes.
    pub fn small_value_probability(&self) -> f64 {
        self.small_values.last().map_or(0.0, |v| v.1)
    }

    pub fn key_bytes<R: Rng>(&self, rng: &mut R) -> u32 {
        let u: f64 = rng.random_range(f64::MIN_POSITIVE..1.0);
        (self.key.quantile(u).round() as i64).clamp(self.key_min as i64, self.key_max as i64) as u32
    }

    pub fn value_bytes<R: Rng>(&self, rng: &mut R) -> u32 {
        let u: f64 = rng.random();
        if let Some(&(s, _)) = self.small_values.iter().find(|&&(_, c)| u < c) {
            return s;
        }
        let v: f64 = rng.random();
        let tail = self.value_tail.quantile(v).round();
        (self.value_offset as f64 + tail).min(self.value_max as f64) as u32
    }

    /// Gap to the next request, in microseconds, before any scaling.
    pub fn gap_us<R: Rng>(&self, rng: &mut R) -> f64 {
        let u: f64 = rng.random();
        self.gap_us.quantile(u)
    }

    pub fn op<R: Rng>(&self, rng: &mut R) -> Op {
        let u: f64 = rng.random();
        if u < self.mix.0 {
            Op::Get
        } else if u < self.mix.1 {
            Op::Set
        } else {
            Op::Delete
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// Kolmogorov-Smirnov distance between samples and a CDF.
    fn ks(mut xs: Vec<f64>, cdf: impl Fn(f64) -> f64) -> f64 {
        xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let n = xs.len() as f64;
        xs.iter()
            .enumerate()
            .map(|(i, &x)| {
                let f = cdf(x);
                (f - i as f64 / n).abs().max(((i + 1) as f64 / n - f).abs())
            })
            .fold(0.0, f64::max)
    }

    /// Critical KS distance at significance 0.001 for n samples (asymptotic: 1.949 / sqrt n).
    fn critical(n: usize) -> f64 {
        1.949 / (n as f64).sqrt()
    }

    #[test]
    fn continuous_samplers_pass_kolmogorov_smirnov() {
        let etc = Etc::builtin();
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(11);
        let n = 20_000;
        let keys: Vec<f64> = (0..n)
            .map(|_| etc.key.quantile(rng.random_range(f64::MIN_POSITIVE..1.0)))
            .collect();
        assert!(ks(keys, |x| etc.key.cdf(x)) < critical(n));
        let gaps: Vec<f64> = (0..n).map(|_| etc.gap_us(&mut rng)).collect();
        assert!(ks(gaps, |x| etc.gap_us.cdf(x)) < critical(n));
        let tails: Vec<f64> = (0..n)
            .map(|_| etc.value_tail.quantile(rng.random()))
            .collect();
        assert!(ks(tails, |x| etc.value_tail.cdf(x)) < critical(n));
        // And a wrong model is rejected: the gaps against a GPD with twice the scale.
        let gaps: Vec<f64> = (0..n).map(|_| etc.gap_us(&mut rng)).collect();
        let wrong = Gpd {
            scale: 2.0 * etc.gap_us.scale,
            ..etc.gap_us
        };
        assert!(ks(gaps, |x| wrong.cdf(x)) > critical(n));
    }

    #[test]
    fn value_sizes_mix_the_discrete_part_and_the_tail() {
        let etc = Etc::builtin();
        assert!((etc.small_value_probability() - 0.44155).abs() < 1e-9);
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(5);
        let n = 200_000;
        let v: Vec<u32> = (0..n).map(|_| etc.value_bytes(&mut rng)).collect();
        let small = v.iter().filter(|&&x| x < 15).count() as f64 / n as f64;
        // Binomial standard error at n = 200,000 is about 0.0011; allow 4 of them.
        assert!((small - 0.44155).abs() < 0.0045, "small fraction {small}");
        let twos = v.iter().filter(|&&x| x == 2).count() as f64 / n as f64;
        assert!((twos - 0.1782).abs() < 0.004, "P(2 bytes) {twos}");
        assert!(v.iter().all(|&x| x <= etc.value_max));
        let keys: Vec<u32> = (0..n).map(|_| etc.key_bytes(&mut rng)).collect();
        assert!(keys.iter().all(|&k| (1..=250).contains(&k)));
        let gets = (0..n).filter(|_| etc.op(&mut rng) == Op::Get).count() as f64 / n as f64;
        assert!((gets - 0.9677).abs() < 0.003, "GET share {gets}");
    }
}
