//! Collective communication of data-parallel training: a group of hosts computes for
//! `compute`, then runs an all-reduce of `size` bytes each (or an all-to-all, as a
//! mixture-of-experts layer exchanges tokens), `iterations` times. The algorithms, as
//! collective libraries run them (Thakur, Rabenseifner and Gropp, "Optimization of
//! collective communication operations in MPICH", IJHPCA 2005; NCCL's ring):
//!
//! - `ring`: 2(N - 1) steps; in each, every host sends a chunk of size / N to the next host
//!   of the ring (reduce-scatter, then all-gather).
//! - `halving_doubling`: a reduce-scatter by recursive halving (log2 N steps, partners at
//!   distance N/2, N/4, ... 1, sending half of what is left each time: size / 2, size / 4,
//!   ...), then an all-gather by recursive doubling (the same steps in reverse); N a power
//!   of two.
//! - `all_to_all`: one step; every host sends size / N to each other host at once.
//!
//! A host starts its next step once it has received all of its current step's data (what
//! it reduces, or passes on) and its own sends of the step have arrived (a host's sends go
//! one step at a time, as a collective library's channel sends them in order), not at a
//! barrier; an iteration ends when every host has finished its last step, and the next
//! one's computation starts then. Each step's send
//! is a transfer of its own over the run's transport (`workload::transfer`: a TCP
//! connection, or a message of RoCEv2 or NDP), in the flows table. Simplified: no
//! pipelining of a step's chunk into smaller pieces, no overlap of computation with
//! communication, and the reduction itself takes no time.

use super::transfer::Transfers;
use super::{AppEvent, AppSched, Application, AppsBuild, Ctx, WorkloadCtx, WorkloadKind};
use crate::check::{err, host_list, int_in, ConfigError};
use crate::engine::{TimePs, NEVER};
use crate::metrics::report::{Headline, Report, ReportCtx};
use crate::table::{Column, Table};
use crate::transport::{MessageTransport, Note};

/// `[workload]` keys of kind "collective".
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// "ring" (default), "halving_doubling" or "all_to_all".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub algorithm: Option<String>,
    /// The group's hosts (default: all), at least 2, distinct.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hosts: Option<Vec<i64>>,
    /// Bytes each host reduces (all-reduce) or sends in all (all-to-all) (default 4MB), at
    /// least one byte per step's chunk, at most 1TB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<crate::units::Bytes>,
    /// Times the group computes and communicates (default 10), 1 to 1,000,000.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iterations: Option<i64>,
    /// Computation before each collective (default 1ms), 0 or more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute: Option<crate::units::Duration>,
}

/// The algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    Ring,
    HalvingDoubling,
    AllToAll,
}

/// `collective` resolved.
#[derive(Clone, Debug)]
pub struct Spec {
    pub algorithm: Algorithm,
    pub hosts: Vec<u32>,
    pub size_bytes: u64,
    pub iterations: u32,
    pub compute_ps: TimePs,
    pub over: Option<MessageTransport>,
}

impl Spec {
    fn n(&self) -> u32 {
        self.hosts.len() as u32
    }

    /// Steps per collective.
    pub fn steps(&self) -> u32 {
        match self.algorithm {
            Algorithm::Ring => 2 * (self.n() - 1),
            Algorithm::HalvingDoubling => 2 * self.n().trailing_zeros(),
            Algorithm::AllToAll => 1,
        }
    }

    /// What the host at position `p` of the group sends in step `s`: (position, bytes)
    /// pairs, into `out`.
    pub fn sends(&self, p: u32, s: u32, out: &mut Vec<(u32, u64)>) {
        let n = self.n();
        out.clear();
        match self.algorithm {
            Algorithm::Ring => out.push(((p + 1) % n, self.size_bytes.div_ceil(u64::from(n)))),
            Algorithm::HalvingDoubling => {
                let l = n.trailing_zeros();
                // Reduce-scatter: distance n/2, n/4, ... 1, halves of what is left; then
                // the all-gather's mirror image.
                let k = if s < l { s } else { 2 * l - 1 - s };
                out.push((p ^ (n >> (k + 1)), self.size_bytes >> (k + 1)));
            }
            Algorithm::AllToAll => {
                let chunk = self.size_bytes.div_ceil(u64::from(n));
                out.extend((0..n).filter(|&q| q != p).map(|q| (q, chunk)));
            }
        }
    }

    /// Transfers the host at any position receives, and sends, in a step.
    fn per_step(&self) -> u32 {
        match self.algorithm {
            Algorithm::AllToAll => self.n() - 1,
            _ => 1,
        }
    }
}

/// One iteration's figures.
#[derive(Clone, Copy, Debug)]
struct Iteration {
    start_ps: TimePs,
    end_ps: TimePs,
    /// The longest transfer's time.
    slowest_ps: TimePs,
    bytes: u64,
}

/// The group's scheduler: one application that starts every host's steps.
pub struct Collective {
    spec: Spec,
    transfers: Transfers,
    /// Each host's step now (`steps()` once done), and by host and step the transfers it
    /// received and those of its own that arrived.
    step: Vec<u32>,
    got: Vec<u32>,
    sent: Vec<u32>,
    /// Positions of each connection's sender and receiver, and its step, by connection id.
    conn_step: Vec<(u32, u32, u32)>,
    hosts_done: u32,
    iterations: Vec<Iteration>,
    sends: Vec<(u32, u64)>,
}

impl Collective {
    /// The host at `p` starts step `s` of the current iteration.
    fn start_step(&mut self, id: u32, p: u32, s: u32, ctx: &mut Ctx<impl AppSched>) {
        let mut sends = std::mem::take(&mut self.sends);
        self.spec.sends(p, s, &mut sends);
        let src = self.spec.hosts[p as usize];
        for &(q, bytes) in &sends {
            let dst = self.spec.hosts[q as usize];
            let conn = self.transfers.start(ctx, id, (src, dst), (bytes, 0));
            if self.conn_step.len() <= conn as usize {
                self.conn_step
                    .resize(conn as usize + 1, (u32::MAX, u32::MAX, 0));
            }
            self.conn_step[conn as usize] = (p, q, s);
            self.iterations.last_mut().expect("started").bytes += bytes;
        }
        self.sends = sends;
    }

    /// Every host starts the collective of a new iteration.
    fn start_iteration(&mut self, id: u32, ctx: &mut Ctx<impl AppSched>) {
        let now = ctx.ev.now();
        self.iterations.push(Iteration {
            start_ps: now,
            end_ps: NEVER,
            slowest_ps: 0,
            bytes: 0,
        });
        self.step.iter_mut().for_each(|s| *s = 0);
        self.got.iter_mut().for_each(|g| *g = 0);
        self.sent.iter_mut().for_each(|g| *g = 0);
        self.hosts_done = 0;
        for p in 0..self.spec.n() {
            self.start_step(id, p, 0, ctx);
        }
    }

    /// A transfer from the host at `from` to the one at `to` for step `s` completed, after
    /// `fct_ps`.
    fn on_arrived(
        &mut self,
        id: u32,
        (from, to, s): (u32, u32, u32),
        fct_ps: TimePs,
        ctx: &mut Ctx<impl AppSched>,
    ) {
        let it = self.iterations.last_mut().expect("started");
        it.slowest_ps = it.slowest_ps.max(fct_ps);
        let steps = self.spec.steps();
        self.got[(to * steps + s) as usize] += 1;
        self.sent[(from * steps + s) as usize] += 1;
        self.advance(id, to, ctx);
        self.advance(id, from, ctx);
        if self.hosts_done < self.spec.n() {
            return;
        }
        let now = ctx.ev.now();
        self.iterations.last_mut().expect("started").end_ps = now;
        let next = now + self.spec.compute_ps;
        if self.iterations.len() < self.spec.iterations as usize && next < ctx.end_ps {
            ctx.ev.schedule(next, AppEvent::Timer { app: id, tag: 0 });
        } else {
            *ctx.active -= 1;
        }
    }

    /// The host at `p` goes on through the steps whose transfers, in and out, are all
    /// done (a later step's data may have come first).
    fn advance(&mut self, id: u32, p: u32, ctx: &mut Ctx<impl AppSched>) {
        let steps = self.spec.steps();
        let (pu, all) = (p as usize, self.spec.per_step());
        while self.step[pu] < steps {
            let at = (p * steps + self.step[pu]) as usize;
            if self.got[at] < all || self.sent[at] < all {
                return;
            }
            self.step[pu] += 1;
            if self.step[pu] < steps {
                self.start_step(id, p, self.step[pu], ctx);
            } else {
                self.hosts_done += 1;
            }
        }
    }
}

impl Application for Collective {
    fn ends_by_itself(&self) -> bool {
        true
    }

    fn start<S: AppSched>(&mut self, id: u32, ctx: &mut Ctx<S>) {
        *ctx.active += 1;
        let at = ctx.ev.now() + self.spec.compute_ps;
        ctx.ev.schedule(at, AppEvent::Timer { app: id, tag: 0 });
    }

    fn on_timer<S: AppSched>(&mut self, id: u32, _tag: u32, ctx: &mut Ctx<S>) {
        self.start_iteration(id, ctx);
    }

    fn on_note<S: AppSched>(&mut self, note: Note, ctx: &mut Ctx<S>) {
        let Note::Delivered {
            app, conn, total, ..
        } = note
        else {
            return;
        };
        if let Some(rec) = self.transfers.on_delivered(conn, total, ctx) {
            let f = &ctx.metrics.flows[rec];
            let fct = f.end_ps - f.start_ps;
            let at = self.conn_step[conn as usize];
            self.on_arrived(app, at, fct, ctx);
        }
    }
}

impl Report for Collective {
    /// The `collective` table: one row per iteration started.
    fn tables(&self, _ctx: &ReportCtx, out: &mut Vec<Table>) {
        let it = &self.iterations;
        let us = |f: &dyn Fn(&Iteration) -> f64| Column::F64(it.iter().map(f).collect());
        let done = |i: &Iteration| i.end_ps != NEVER;
        out.push(Table {
            name: "collective",
            columns: vec![
                ("iteration", Column::I64((0..it.len() as i64).collect())),
                ("start_us", us(&|i| i.start_ps as f64 / 1e6)),
                (
                    "time_us",
                    us(&|i| {
                        if done(i) {
                            (i.end_ps - i.start_ps) as f64 / 1e6
                        } else {
                            f64::NAN
                        }
                    }),
                ),
                ("slowest_transfer_us", us(&|i| i.slowest_ps as f64 / 1e6)),
                (
                    "bytes",
                    Column::I64(it.iter().map(|i| i.bytes as i64).collect()),
                ),
            ],
        });
    }

    fn headline(&self, _ctx: &ReportCtx, h: &mut Headline) {
        let done: Vec<&Iteration> = self
            .iterations
            .iter()
            .filter(|i| i.end_ps != NEVER)
            .collect();
        h.insert("collective_iterations".into(), (done.len() as u64).into());
        if done.is_empty() {
            return;
        }
        let times: Vec<f64> = done
            .iter()
            .map(|i| (i.end_ps - i.start_ps) as f64 / 1e6)
            .collect();
        let mean = times.iter().sum::<f64>() / times.len() as f64;
        let slowest = done.iter().map(|i| i.slowest_ps).max().unwrap_or(0) as f64 / 1e6;
        h.insert("collective_mean_us".into(), mean.into());
        h.insert(
            "collective_max_us".into(),
            times.iter().copied().fold(0.0, f64::max).into(),
        );
        h.insert("collective_slowest_transfer_us".into(), slowest.into());
    }
}

impl WorkloadKind for Collective {
    const NAME: &'static str = "collective";
    const OVER_MESSAGES: bool = true;
    type Params = Params;
    type Spec = Spec;
    type App = Collective;

    fn resolve(p: &mut Params, ctx: &WorkloadCtx) -> Result<Spec, ConfigError> {
        let name = p.algorithm.get_or_insert_with(|| "ring".into());
        crate::check::one_of(
            "workload.algorithm",
            name,
            &["ring", "halving_doubling", "all_to_all"],
        )?;
        let algorithm = match name.as_str() {
            "ring" => Algorithm::Ring,
            "halving_doubling" => Algorithm::HalvingDoubling,
            _ => Algorithm::AllToAll,
        };
        let hosts = host_list("workload.hosts", &p.hosts, ctx.n_hosts)?
            .unwrap_or_else(|| (0..ctx.n_hosts as u32).collect());
        let mut seen = hosts.clone();
        seen.sort_unstable();
        seen.dedup();
        if hosts.len() < 2 || seen.len() != hosts.len() {
            return Err(err(
                "workload.hosts",
                format!("{hosts:?}"),
                "at least 2 distinct hosts",
            ));
        }
        let n = hosts.len() as u64;
        if algorithm == Algorithm::HalvingDoubling && !n.is_power_of_two() {
            return Err(err(
                "workload.hosts",
                format!("{n} hosts with algorithm \"halving_doubling\""),
                "a power of two of hosts (2, 4, 8, ...) for halving_doubling; \"ring\" takes any number",
            ));
        }
        let size = p.size.get_or_insert(crate::units::Bytes(4_000_000)).0;
        let least = if algorithm == Algorithm::HalvingDoubling {
            n
        } else {
            n - 1
        };
        if !(least..=1_000_000_000_000).contains(&size) {
            let allowed = format!("{least}B (a byte per step's chunk for {n} hosts) to 1TB");
            return Err(err("workload.size", crate::units::Bytes(size), allowed));
        }
        let iterations = int_in(
            "workload.iterations",
            *p.iterations.get_or_insert(10),
            1,
            1_000_000,
        )?;
        let compute_ps = p
            .compute
            .get_or_insert(crate::units::Duration(1_000_000_000))
            .0;
        Ok(Spec {
            algorithm,
            hosts,
            size_bytes: size,
            iterations,
            compute_ps,
            over: ctx.messages,
        })
    }

    fn applications(spec: Spec, _b: &mut AppsBuild) -> Vec<Collective> {
        let (n, steps) = (spec.n() as usize, spec.steps() as usize);
        vec![Collective {
            transfers: Transfers::new(spec.over),
            step: vec![0; n],
            got: vec![0; n * steps],
            sent: vec![0; n * steps],
            conn_step: Vec::new(),
            hosts_done: 0,
            iterations: Vec::new(),
            sends: Vec::new(),
            spec,
        }]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(algorithm: Algorithm, n: u32) -> Spec {
        Spec {
            algorithm,
            hosts: (0..n).collect(),
            size_bytes: 1 << 20,
            iterations: 1,
            compute_ps: 0,
            over: None,
        }
    }

    /// Every (sender, receiver, bytes) of a collective, step by step.
    fn plan(s: &Spec) -> Vec<Vec<(u32, u32, u64)>> {
        let mut out = vec![];
        (0..s.steps())
            .map(|step| {
                (0..s.n())
                    .flat_map(|p| {
                        s.sends(p, step, &mut out);
                        out.iter().map(move |&(q, b)| (p, q, b)).collect::<Vec<_>>()
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn a_ring_sends_each_host_a_chunk_from_its_predecessor_2n_minus_2_times() {
        let s = spec(Algorithm::Ring, 4);
        let p = plan(&s);
        assert_eq!(p.len(), 6);
        for step in &p {
            assert_eq!(
                step,
                &vec![
                    (0, 1, 1 << 18),
                    (1, 2, 1 << 18),
                    (2, 3, 1 << 18),
                    (3, 0, 1 << 18)
                ]
            );
        }
        // Each host sends 2 (N - 1) / N of the buffer: the ring's optimal volume.
        let sent: u64 = p.iter().flatten().filter(|t| t.0 == 0).map(|t| t.2).sum();
        assert_eq!(sent, 2 * 3 * (1 << 20) / 4);
    }

    #[test]
    fn halving_doubling_pairs_hosts_at_halving_then_doubling_distances() {
        let s = spec(Algorithm::HalvingDoubling, 8);
        let p = plan(&s);
        let of_host0: Vec<(u32, u64)> = p.iter().map(|st| (st[0].1, st[0].2)).collect();
        let m = 1u64 << 20;
        assert_eq!(
            of_host0,
            vec![
                (4, m / 2),
                (2, m / 4),
                (1, m / 8),
                (1, m / 8),
                (2, m / 4),
                (4, m / 2)
            ]
        );
        // Partners are mutual in every step, so each host receives exactly one transfer.
        for st in &p {
            for &(a, b, _) in st {
                assert!(st.iter().any(|&(x, y, _)| x == b && y == a));
            }
        }
    }

    #[test]
    fn all_to_all_sends_every_other_host_a_share_at_once() {
        let s = spec(Algorithm::AllToAll, 4);
        let p = plan(&s);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].len(), 12);
        assert_eq!(s.per_step(), 3);
    }
}
