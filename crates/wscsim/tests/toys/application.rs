//! A toy application, the example of docs/extending.md ("Adding an application"): echo
//! over TCP. A client sends a message of `message` bytes to a server, the server sends it
//! back, and the client, once the echo is whole, sends the next, `rounds` times; the
//! run's `toy_echo` table holds each round trip. This file and one line in
//! `workload::builtin_workloads!` are all it takes; it is compiled into the crate for its
//! tests only (`#[cfg(test)]` on that line) so that the walk-through stays true.

use super::{AppSched, Application, AppsBuild, Ctx, WorkloadCtx, WorkloadKind};
use crate::check::{err, int_in, ConfigError};
use crate::engine::TimePs;
use crate::metrics::report::{Report, ReportCtx};
use crate::table::{floats, ints, Table};
use crate::transport::{HostPath, Note};
use crate::units::Bytes;

/// `[workload]` parameters of kind "toy_echo" (defaults are filled in by `resolve`).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The host that sends (default 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<i64>,
    /// The host that echoes (default 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<i64>,
    /// Bytes of each message (default 1 KiB).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<Bytes>,
    /// Messages, one after another (default 10).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rounds: Option<i64>,
}

/// The echo resolved.
#[derive(Clone, Debug)]
pub struct Spec {
    pub client: u32,
    pub server: u32,
    pub message_bytes: u64,
    pub rounds: u32,
}

/// Both ends of the echo: one application, as it holds the two connections' state.
pub struct ToyEcho {
    spec: Spec,
    /// Client to server, and back.
    out: u32,
    back: u32,
    /// When the message in flight left.
    sent_ps: TimePs,
    /// Round trips so far.
    rtts_ps: Vec<TimePs>,
    /// Messages the server has echoed.
    echoed: u64,
}

impl WorkloadKind for ToyEcho {
    const NAME: &'static str = "toy_echo";
    type Params = Params;
    type Spec = Spec;
    type App = ToyEcho;

    fn resolve(p: &mut Params, ctx: &WorkloadCtx) -> Result<Spec, ConfigError> {
        let last = ctx.n_hosts - 1;
        let client = int_in("workload.client", *p.client.get_or_insert(0), 0, last)?;
        let server = int_in("workload.server", *p.server.get_or_insert(1), 0, last)?;
        if server == client {
            return Err(err(
                "workload.server",
                server,
                "a host other than the client",
            ));
        }
        let message_bytes = p.message.get_or_insert(Bytes(1024)).0;
        crate::check::in_range(
            "workload.message",
            message_bytes,
            1,
            1 << 30,
            "1 byte to 1 GiB",
        )?;
        let rounds = int_in("workload.rounds", *p.rounds.get_or_insert(10), 1, 1_000_000)?;
        Ok(Spec {
            client,
            server,
            message_bytes,
            rounds,
        })
    }

    /// One application (id 0) at both ends of two connections.
    fn applications(spec: Spec, b: &mut AppsBuild) -> Vec<ToyEcho> {
        let out = b.tcp.open(spec.client, spec.server, 0, 0);
        let back = b.tcp.open(spec.server, spec.client, 0, 0);
        vec![ToyEcho {
            spec,
            out,
            back,
            sent_ps: 0,
            rtts_ps: Vec::new(),
            echoed: 0,
        }]
    }
}

impl ToyEcho {
    fn send(&mut self, conn: u32, ctx: &mut Ctx<impl AppSched>) {
        let path = &mut HostPath::new(ctx.net, ctx.hosts, ctx.ev);
        ctx.transports
            .tcp
            .write(path, conn, self.spec.message_bytes);
    }
}

impl Application for ToyEcho {
    fn ends_by_itself(&self) -> bool {
        true
    }

    fn start<S: AppSched>(&mut self, _id: u32, ctx: &mut Ctx<S>) {
        *ctx.active += 1;
        self.sent_ps = ctx.ev.now();
        self.send(self.out, ctx);
    }

    /// `total` counts the bytes a connection delivered so far.
    fn on_note<S: AppSched>(&mut self, note: Note, ctx: &mut Ctx<S>) {
        let Note::Delivered { conn, total, .. } = note else {
            return;
        };
        let m = self.spec.message_bytes;
        if conn == self.out && total >= (self.echoed + 1) * m {
            self.echoed += 1;
            self.send(self.back, ctx);
        } else if conn == self.back && total >= (self.rtts_ps.len() as u64 + 1) * m {
            self.rtts_ps.push(ctx.ev.now() - self.sent_ps);
            if self.rtts_ps.len() < self.spec.rounds as usize && ctx.ev.now() < ctx.end_ps {
                self.sent_ps = ctx.ev.now();
                self.send(self.out, ctx);
            } else {
                *ctx.active -= 1;
            }
        }
    }
}

/// Table `toy_echo`: each round trip, in microseconds.
impl Report for ToyEcho {
    fn tables(&self, _ctx: &ReportCtx, out: &mut Vec<Table>) {
        let rounds: Vec<usize> = (0..self.rtts_ps.len()).collect();
        out.push(Table {
            name: "toy_echo",
            columns: vec![
                ("round", ints(&rounds, |&i| i as i64)),
                ("rtt_us", floats(&self.rtts_ps, |&t| crate::table::us(t))),
            ],
        });
    }
}

#[cfg(test)]
mod tests {
    use crate::sim::Sim;
    use crate::table::Column;

    fn echo(workload: &str, transport: &str) -> Result<Vec<f64>, crate::check::ConfigError> {
        let mut s = Sim::from_json(&format!(
            r#"{{"duration":"1s","topology":{{"kind":"single_switch","hosts":4}},
            "transport":{transport},"workload":{{"kind":"toy_echo",{workload}}}}}"#
        ))?;
        s.run();
        let tables = s.tables();
        let t = tables
            .iter()
            .find(|t| t.name == "toy_echo")
            .expect("its table");
        match &t.columns[1].1 {
            Column::F64(v) => Ok(v.clone()),
            c => panic!("rtt_us is {c:?}"),
        }
    }

    /// Every round trip is recorded and a bigger message takes longer on the same links;
    /// bad parameters are refused at their paths, and UDP is not its transport.
    #[test]
    fn a_scenario_runs_the_toy_and_refuses_its_bad_parameters() {
        let small = echo(r#""rounds":5,"message":"1KiB""#, "{}").unwrap();
        let big = echo(r#""rounds":5,"message":"1MiB""#, "{}").unwrap();
        assert_eq!((small.len(), big.len()), (5, 5));
        assert!(small.iter().all(|&r| r > 0.0), "{small:?}");
        assert!(big[4] > 10.0 * small[4], "{big:?} against {small:?}");
        let e = echo(r#""rounds":0"#, "{}").err().unwrap();
        assert_eq!(e.path, "workload.rounds");
        let e = echo(r#""server":0"#, "{}").err().unwrap();
        assert_eq!(e.path, "workload.server");
        let e = echo(r#""rounds":1"#, r#"{"kind":"udp"}"#).err().unwrap();
        assert_eq!(e.path, "transport.kind");
    }
}
