//! Poisson flow arrivals at a target load, sizes from an empirical CDF, or the flows of a
//! connection matrix (`workload::matrix`, htsim's format) at their own start times. Each
//! flow is a new TCP connection (or RoCEv2 queue pair) from a random source to a random
//! destination (or from the server set to the client set). The flow generator stands for the cluster's scheduler: it is the one
//! application that is not tied to a host.

use super::cdf::{Cdf, BUILTIN_CDFS, MAX_CDF_BYTES};
use super::{Application, AppsBuild, Ctx, WorkloadCtx, WorkloadKind};
use crate::check::{err, host_list, int_in, read_capped, ConfigError};
use crate::engine::rng::{family, stream};
use crate::transport::MessageTransport;
use crate::transport::Note;

/// `[workload]` parameters of kind "flows" (defaults are filled in by `flows_spec`, below).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Offered load as a fraction of the hosts' link capacity (default 0.5).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load: Option<f64>,
    /// A bundled flow-size CDF or a CSV file (default "websearch").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_cdf: Option<String>,
    /// Instead of size_cdf: fixed sizes drawn with weights, each with a DSCP class.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_classes: Option<Vec<SizeClassCfg>>,
    /// Flows to start (default: no limit; the run's duration ends it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flows: Option<i64>,
    /// Hosts that receive flows (default: all); as in a web search, clients fetch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clients: Option<Vec<i64>>,
    /// Hosts that send flows (default: all).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub servers: Option<Vec<i64>>,
    /// Instead of Poisson arrivals: a connection matrix file (htsim's format).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matrix: Option<String>,
    /// Instead of Poisson arrivals: an incast, all its flows starting at time 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incast: Option<IncastCfg>,
}

/// `workload.incast`: `senders` hosts each send one flow of `size` to `receiver`, at time 0
/// or `stagger` apart (senders joining one by one, DCQCN's fairness experiment). The
/// senders are spread evenly over the other hosts, in host order from the receiver's (so
/// over a fat tree's pods, as NDP's incast runs).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IncastCfg {
    /// Hosts that send, 1 to all but the receiver.
    pub senders: i64,
    /// Bytes each sends, 1B to 1TB.
    pub size: crate::units::Bytes,
    /// The host they send to (default 0).
    #[serde(default)]
    pub receiver: i64,
    /// Time between one sender's start and the next's (default 0s: all at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stagger: Option<crate::units::Duration>,
}

impl IncastCfg {
    /// Its flows, checked against a network of `n_hosts` hosts.
    fn flows(&self, n_hosts: u32) -> Result<Vec<super::matrix::MatrixFlow>, ConfigError> {
        let n = i64::from(n_hosts);
        if n < 2 {
            return Err(err(
                "workload.incast",
                "a network of one host",
                "a network of at least 2 hosts",
            ));
        }
        let dst = int_in("workload.incast.receiver", self.receiver, 0, n - 1)?;
        let senders = int_in("workload.incast.senders", self.senders, 1, n - 1)?;
        let size = self.size.0;
        if !(1..=1_000_000_000_000).contains(&size) {
            return Err(err("workload.incast.size", self.size, "1B to 1TB"));
        }
        let others = n_hosts - 1;
        let stagger = self.stagger.map_or(0, |d| d.0);
        Ok((0..senders)
            .map(|i| super::matrix::MatrixFlow {
                src: (dst + 1 + (u64::from(i) * u64::from(others) / u64::from(senders)) as u32)
                    % n_hosts,
                dst,
                size_bytes: size,
                start_ps: u64::from(i).saturating_mul(stagger),
            })
            .collect())
    }
}
use super::{AppEvent, AppSched};
use crate::engine::{StreamRng, PS_PER_S};
use rand::Rng;

/// Where flow sizes come from: an empirical CDF (DSCP 0), or a few fixed sizes drawn with
/// weights, each with its own DSCP class (Flexplane's 80% 1.5 KB high-priority and 20%
/// 10 MB low-priority requests).
#[derive(Clone, Debug)]
pub enum FlowSizes {
    Cdf(Cdf),
    Classes(Vec<SizeClass>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct SizeClass {
    pub size_bytes: u64,
    /// Probability of this class (the weights sum to 1).
    pub probability: f64,
    pub dscp: u8,
}

impl FlowSizes {
    /// Sizes at `n` evenly spaced quantiles (the middles of `n` equal slices of
    /// probability), ascending: what a receiver measuring the workload would see.
    pub fn quantiles(&self, n: u32) -> Vec<u64> {
        let mid = |i: u32| (f64::from(i) + 0.5) / f64::from(n);
        match self {
            FlowSizes::Cdf(c) => (0..n).map(|i| c.quantile(mid(i))).collect(),
            FlowSizes::Classes(cl) => {
                let mut by_size: Vec<&SizeClass> = cl.iter().collect();
                by_size.sort_by_key(|c| c.size_bytes);
                let mut q = Vec::with_capacity(n as usize);
                let mut upto = 0.0;
                for c in by_size {
                    upto += c.probability;
                    while q.len() < n as usize && mid(q.len() as u32) < upto {
                        q.push(c.size_bytes);
                    }
                }
                let last = q.last().copied().unwrap_or(1);
                q.resize(n as usize, last);
                q
            }
        }
    }

    pub fn sample<R: Rng>(&self, rng: &mut R) -> (u64, u8) {
        match self {
            FlowSizes::Cdf(c) => (c.sample(rng), 0),
            FlowSizes::Classes(cl) => {
                let mut u: f64 = rng.random();
                for c in cl {
                    if u < c.probability {
                        return (c.size_bytes, c.dscp);
                    }
                    u -= c.probability;
                }
                let last = cl.last().expect("at least one class");
                (last.size_bytes, last.dscp)
            }
        }
    }

    pub fn mean(&self) -> f64 {
        match self {
            FlowSizes::Cdf(c) => c.mean(),
            FlowSizes::Classes(cl) => cl.iter().map(|c| c.probability * c.size_bytes as f64).sum(),
        }
    }
}

pub struct FlowGen {
    pub sizes: FlowSizes,
    /// Flow arrivals per second over the whole network.
    pub rate_per_s: f64,
    pub senders: Vec<u32>,
    pub receivers: Vec<u32>,
    pub max_flows: u64,
    pub rng: StreamRng,
    started: u64,
    finished: u64,
    stopped: bool,
    /// Its flows, over the run's transport.
    pub transfers: super::transfer::Transfers,
    /// A connection matrix's flows in order of start (empty: Poisson arrivals), and the
    /// next to start.
    pub matrix: Vec<super::matrix::MatrixFlow>,
    next_in_matrix: usize,
}

impl FlowGen {
    pub fn new(
        sizes: FlowSizes,
        rate_per_s: f64,
        senders: Vec<u32>,
        receivers: Vec<u32>,
        max_flows: u64,
        rng: StreamRng,
    ) -> Self {
        FlowGen {
            sizes,
            rate_per_s,
            senders,
            receivers,
            max_flows,
            rng,
            started: 0,
            finished: 0,
            stopped: false,
            transfers: Default::default(),
            matrix: Vec::new(),
            next_in_matrix: 0,
        }
    }

    fn schedule_next(&mut self, id: u32, ctx: &mut Ctx<impl AppSched>) {
        if !self.matrix.is_empty() {
            return self.schedule_from_matrix(id, ctx);
        }
        let u: f64 = self.rng.random();
        let gap_s = -(1.0 - u).ln() / self.rate_per_s;
        let t = ctx
            .ev
            .now()
            .saturating_add((gap_s * PS_PER_S as f64) as u64);
        if t >= ctx.end_ps || self.started >= self.max_flows {
            self.stopped = true;
            self.maybe_done(ctx);
            return;
        }
        ctx.ev.schedule(t, AppEvent::Timer { app: id, tag: 0 });
    }

    /// The next timer at the next matrix flow's start, if it starts within the run.
    fn schedule_from_matrix(&mut self, id: u32, ctx: &mut Ctx<impl AppSched>) {
        match self.matrix.get(self.next_in_matrix) {
            Some(f) if f.start_ps < ctx.end_ps => {
                let at = f.start_ps.max(ctx.ev.now());
                ctx.ev.schedule(at, AppEvent::Timer { app: id, tag: 0 });
            }
            _ => {
                self.stopped = true;
                self.maybe_done(ctx);
            }
        }
    }

    pub fn on_timer(&mut self, id: u32, ctx: &mut Ctx<impl AppSched>) {
        if !self.matrix.is_empty() {
            let now = ctx.ev.now();
            while let Some(&f) = self.matrix.get(self.next_in_matrix) {
                if f.start_ps > now {
                    break;
                }
                self.next_in_matrix += 1;
                self.start_flow(id, (f.src, f.dst), (f.size_bytes, 0), ctx);
            }
            return self.schedule_next(id, ctx);
        }
        // A uniform pair with src != dst, by rejection over pairs: this ends whenever any
        // valid pair exists, which validation guarantees.
        let (src, dst) = loop {
            let s = self.senders[self.rng.random_range(0..self.senders.len())];
            let d = self.receivers[self.rng.random_range(0..self.receivers.len())];
            if s != d {
                break (s, d);
            }
        };
        let (size, dscp) = self.sizes.sample(&mut self.rng);
        self.start_flow(id, (src, dst), (size, dscp), ctx);
        self.schedule_next(id, ctx);
    }

    /// Sends `size` bytes from `src` to `dst` now, over the run's transport.
    fn start_flow(
        &mut self,
        id: u32,
        (src, dst): (u32, u32),
        (size, dscp): (u64, u8),
        ctx: &mut Ctx<impl AppSched>,
    ) {
        self.transfers.start(ctx, id, (src, dst), (size, dscp));
        self.started += 1;
    }

    pub fn on_delivered(&mut self, conn: u32, total: u64, ctx: &mut Ctx<impl AppSched>) {
        if self.transfers.on_delivered(conn, total, ctx).is_some() {
            self.finished += 1;
            self.maybe_done(ctx);
        }
    }

    fn maybe_done(&mut self, ctx: &mut Ctx<impl AppSched>) {
        if self.stopped && self.finished == self.started {
            self.stopped = false; // report once
            self.started = u64::MAX;
            *ctx.active -= 1;
        }
    }
}

/// One size class of `size_classes`: a flow size drawn with a weight, with its DSCP.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SizeClassCfg {
    pub size: crate::units::Bytes,
    pub weight: f64,
    #[serde(default)]
    pub dscp: i64,
}

/// No results of its own (the flows, hosts and links tables show its traffic).
impl crate::metrics::report::Report for FlowGen {}

/// A `flows` workload resolved.
#[derive(Clone, Debug)]
pub struct FlowsSpec {
    pub sizes: FlowSizes,
    pub rate_per_s: f64,
    pub senders: Vec<u32>,
    pub receivers: Vec<u32>,
    pub max_flows: u64,
    /// Over a transport that carries messages (`transport.kind = "roce"`, `"ndp"` or `"homa"`).
    pub messages: Option<MessageTransport>,
    /// A connection matrix's flows (empty: Poisson arrivals from `sizes` and `rate_per_s`).
    pub matrix: Vec<super::matrix::MatrixFlow>,
}

impl WorkloadKind for FlowGen {
    const NAME: &'static str = "flows";
    const OVER_MESSAGES: bool = true;
    type Params = Params;
    type Spec = FlowsSpec;
    type App = FlowGen;

    fn resolve(p: &mut Params, ctx: &WorkloadCtx) -> Result<FlowsSpec, ConfigError> {
        if p.matrix.is_some() || p.incast.is_some() {
            return matrix_spec(p, ctx);
        }
        let spec = flows_spec(p, ctx.n_hosts, ctx.host_rate_bps, ctx.duration)?;
        Ok(FlowsSpec {
            messages: ctx.messages,
            ..spec
        })
    }

    /// The generator, drawing from the workload's random stream 1.
    fn applications(spec: FlowsSpec, b: &mut AppsBuild) -> Vec<FlowGen> {
        let messages = spec.messages;
        let mut gen = vec![FlowGen::new(
            spec.sizes,
            spec.rate_per_s,
            spec.senders,
            spec.receivers,
            spec.max_flows,
            stream(b.seed, family::WORKLOAD, 1),
        )];
        gen[0].transfers = super::transfer::Transfers::new(messages);
        gen[0].matrix = spec.matrix;
        gen
    }
}

impl Application for FlowGen {
    fn ends_by_itself(&self) -> bool {
        true
    }

    fn start<S: AppSched>(&mut self, id: u32, ctx: &mut Ctx<S>) {
        *ctx.active += 1;
        self.schedule_next(id, ctx);
    }

    fn on_timer<S: AppSched>(&mut self, id: u32, _tag: u32, ctx: &mut Ctx<S>) {
        self.on_timer(id, ctx)
    }

    #[inline]
    fn on_note<S: AppSched>(&mut self, note: Note, ctx: &mut Ctx<S>) {
        if let Note::Delivered { conn, total, .. } = note {
            self.on_delivered(conn, total, ctx)
        }
    }
}

/// Most flows a `flows` workload may start in a run: some 10 us of wall time and a
/// kilobyte of memory each.
const MAX_FLOWS: f64 = 1e7;

/// The workload of its kind, checked, with defaults filled in.
fn flows_spec(
    w: &mut Params,
    n_hosts: i64,
    rate: u64,
    duration: crate::units::Duration,
) -> Result<FlowsSpec, ConfigError> {
    let load = *w.load.get_or_insert(0.5);
    if !(load.is_finite() && load > 0.0 && load <= 1.0) {
        return Err(err(
            "workload.load",
            load,
            "a fraction of edge-link capacity greater than 0 and at most 1",
        ));
    }
    let sizes = flow_sizes(w)?;
    let all: Vec<u32> = (0..n_hosts as u32).collect();
    let receivers =
        host_list("workload.clients", &w.clients, n_hosts)?.unwrap_or_else(|| all.clone());
    let senders = host_list("workload.servers", &w.servers, n_hosts)?.unwrap_or(all);
    if !senders.iter().any(|s| receivers.iter().any(|r| r != s)) {
        return Err(err(
            "workload.servers",
            format!("{senders:?}"),
            "at least one host that differs from a host of workload.clients",
        ));
    }
    let max_flows = match w.flows {
        Some(f) => int_in("workload.flows", f, 1, i32::MAX as i64)? as u64,
        None => u64::MAX,
    };
    // Arrival rate so that the busier side's edge links carry `load` on average.
    let ends = senders.len().min(receivers.len()) as f64;
    let rate_per_s = load * rate as f64 * ends / (sizes.mean() * 8.0);
    let expected = rate_per_s * duration.0 as f64 / crate::engine::PS_PER_S as f64;
    if expected.min(max_flows as f64) > MAX_FLOWS {
        let (path, given) = match w.flows {
            Some(f) if (f as f64) < expected => ("workload.flows", f.to_string()),
            _ => ("workload.load", load.to_string()),
        };
        return Err(err(
            path,
            given,
            format!("at most {MAX_FLOWS:.0} flows started in a run (each is a connection and a row of the flows table); here {expected:.3e} would start over duration = {duration} at a mean flow of {:.0} bytes: lower the load or the duration, give workload.flows, or larger flows", sizes.mean()),
        ));
    }
    Ok(FlowsSpec {
        sizes,
        rate_per_s,
        senders,
        receivers,
        max_flows,
        messages: None,
        matrix: Vec::new(),
    })
}

/// Where a Poisson `flows` workload draws its sizes: `size_classes` or `size_cdf`.
fn flow_sizes(w: &mut Params) -> Result<FlowSizes, ConfigError> {
    Ok(match &w.size_classes {
        Some(classes) => {
            if w.size_cdf.is_some() {
                return Err(err(
                    "workload.size_classes",
                    "both size_classes and size_cdf",
                    "one of them",
                ));
            }
            size_classes(classes)?
        }
        None => {
            let name = w.size_cdf.get_or_insert_with(|| "websearch".into()).clone();
            let text = match BUILTIN_CDFS.iter().find(|(n, _)| *n == name) {
                Some((_, t)) => t.to_string(),
                None => read_capped(
                    &name,
                    "workload.size_cdf",
                    "\"websearch\", \"datamining\", \"hadoop\" or a readable CSV file of size_bytes,cdf",
                    MAX_CDF_BYTES,
                )?,
            };
            FlowSizes::Cdf(Cdf::parse(&text).map_err(|m| ConfigError {
                path: "workload.size_cdf".into(),
                message: format!("{name}: {m}"),
            })?)
        }
    })
}

/// Largest connection matrix read (some 40 bytes a flow: a million flows).
const MAX_MATRIX_BYTES: u64 = 64 << 20;

/// A `flows` workload that replays `matrix` or starts `incast`: none of the Poisson keys
/// may be given.
fn matrix_spec(p: &mut Params, ctx: &WorkloadCtx) -> Result<FlowsSpec, ConfigError> {
    let which = if p.matrix.is_some() {
        "matrix"
    } else {
        "incast"
    };
    let poisson = [
        ("load", p.load.is_some()),
        ("size_cdf", p.size_cdf.is_some()),
        ("size_classes", p.size_classes.is_some()),
        ("flows", p.flows.is_some()),
        ("clients", p.clients.is_some()),
        ("servers", p.servers.is_some()),
        ("incast", p.matrix.is_some() && p.incast.is_some()),
    ];
    if let Some((key, _)) = poisson.iter().find(|(_, given)| *given) {
        return Err(err(
            &format!("workload.{key}"),
            format!("{key} with workload.{which}"),
            "one of a connection matrix, an incast or Poisson arrivals (load, size_cdf, size_classes, flows, clients, servers)",
        ));
    }
    let flows = match (&p.matrix, &p.incast) {
        (Some(file), _) => {
            let allowed = "a readable connection matrix file (htsim's format: \"SRC->DST id ID start PS size BYTES\" lines)";
            let text = read_capped(file, "workload.matrix", allowed, MAX_MATRIX_BYTES)?;
            super::matrix::parse(&text, ctx.n_hosts as u32, "workload.matrix")?
        }
        (None, Some(incast)) => incast.flows(ctx.n_hosts as u32)?,
        (None, None) => unreachable!("called with a matrix or an incast"),
    };
    Ok(FlowsSpec {
        sizes: FlowSizes::Classes(Vec::new()), // not drawn from: the matrix gives the sizes
        rate_per_s: 0.0,
        senders: Vec::new(),
        receivers: Vec::new(),
        max_flows: flows.len() as u64,
        messages: ctx.messages,
        matrix: flows,
    })
}

/// `workload.size_classes`: positive sizes, weights that are positive (normalised to
/// probabilities) and DSCP values from 0 to 63.
fn size_classes(classes: &[SizeClassCfg]) -> Result<FlowSizes, ConfigError> {
    if classes.is_empty() {
        return Err(err(
            "workload.size_classes",
            "[]",
            "at least one {size, weight, dscp} class",
        ));
    }
    // Scaled by the largest weight first, so that huge weights (1e308) cannot overflow the
    // sum to infinity and leave every probability at zero.
    let largest = classes.iter().map(|c| c.weight).fold(0.0, f64::max);
    let total: f64 = classes.iter().map(|c| c.weight / largest).sum();
    let mut out = vec![];
    for (i, c) in classes.iter().enumerate() {
        let at = format!("workload.size_classes[{i}]");
        if c.size.0 == 0 {
            return Err(err(
                &format!("{at}.size"),
                c.size,
                "a positive size such as \"1500B\"",
            ));
        }
        if !(c.weight.is_finite() && c.weight > 0.0) {
            return Err(err(
                &format!("{at}.weight"),
                c.weight,
                "a positive weight (weights are normalised to sum to 1)",
            ));
        }
        let dscp = int_in(&format!("{at}.dscp"), c.dscp, 0, 63)? as u8;
        out.push(SizeClass {
            size_bytes: c.size.0,
            probability: c.weight / largest / total,
            dscp,
        });
    }
    Ok(FlowSizes::Classes(out))
}
