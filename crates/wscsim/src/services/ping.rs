//! CamCubeOS's ping service: every server a ping crosses adds one to its hop counter; the
//! destination adds one, swaps source and destination and sends it back; the source adds
//! the last and records the round trip. A run's pings go one at a time from one source to
//! each destination in turn, `count` times each, the next leaving when the last returns
//! (the paper's 10,000 sequential pings) or after `timeout` without a reply (it is lost;
//! a reply that comes later is ignored).
//!
//! Packet fields a ping uses: `seq` its number, `ack` the hop counter, `ts_ps` when it
//! left, `src_port` 0 on the way out and 1 on the way back.

use super::kind::{ServiceWorkload, WorkloadCtx};
use super::ServiceKind;
use super::{OnPath, Services, SvcCtx, SvcSched, PING, SERVICE_HEADER_BYTES};
use crate::check::{err, host_list, int_in, ConfigError};
use crate::engine::{TimePs, NEVER};
use crate::net::Network;
use crate::packet::{Packet, PktId, Proto};

/// `[workload]` parameters of kind "ping" (defaults are filled in by `resolve`, below).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The host that pings (default 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<i64>,
    /// The hosts it pings, in turn (default: every other host).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destinations: Option<Vec<i64>>,
    /// Pings to each destination (default 100).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<i64>,
    /// Payload bytes of a ping (default: what fills the link's MTU).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packet_size: Option<crate::units::Bytes>,
    /// How long a ping waits for its reply before the next leaves (default 1 s, as ping).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<crate::units::Duration>,
    /// Time from one ping's departure to the next's, as ping's `-i`; the next still waits
    /// for the reply (or the timeout) if that comes later (default 0: at the reply).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<crate::units::Duration>,
}

/// The pings of a run, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PingSpec {
    pub source: u32,
    pub destinations: Vec<u32>,
    pub count: u32,
    pub payload_bytes: u32,
    pub timeout_ps: TimePs,
    pub interval_ps: TimePs,
}

/// One ping's outcome (`rtt_ps` NEVER: it did not come back before the run ended).
#[derive(Clone, Copy, Debug)]
pub struct PingRecord {
    pub src: u32,
    pub dst: u32,
    pub payload_bytes: u32,
    pub frame_bytes: u32,
    pub sent_ps: TimePs,
    pub rtt_ps: TimePs,
    /// Links crossed there and back, as counted by the servers on the way.
    pub hops: u32,
}

/// The timer tag that sends the next ping (others are pings' timeouts, by index).
const NEXT_PING: u32 = u32::MAX;

pub struct Ping {
    pub spec: PingSpec,
    pub records: Vec<PingRecord>,
    /// Pings that returned or timed out.
    resolved: usize,
    /// Pings given up on.
    pub lost: u32,
}

impl ServiceWorkload for Ping {
    const NAME: &'static str = "ping";
    type Params = Params;
    type Spec = PingSpec;

    /// Pings from one host to others in turn (CamCubeOS's ping service).
    fn resolve(w: &mut Params, ctx: &WorkloadCtx) -> Result<PingSpec, ConfigError> {
        let (n_hosts, tech) = (ctx.n_hosts, ctx.host_tech);
        if n_hosts < 2 {
            return Err(err("topology", n_hosts, "at least 2 hosts for pings"));
        }
        let source = int_in(
            "workload.source",
            *w.source.get_or_insert(0),
            0,
            n_hosts - 1,
        )?;
        let others: Vec<i64> = (0..n_hosts).filter(|&h| h != i64::from(source)).collect();
        w.destinations.get_or_insert(others);
        let destinations =
            host_list("workload.destinations", &w.destinations, n_hosts)?.expect("filled in");
        if let Some(i) = destinations.iter().position(|&d| d == source) {
            return Err(err(
                &format!("workload.destinations[{i}]"),
                source,
                "a host other than workload.source",
            ));
        }
        let count = int_in("workload.count", *w.count.get_or_insert(100), 1, 10_000_000)?;
        let header = crate::services::SERVICE_HEADER_BYTES;
        let max_payload = u64::from(tech.mtu_bytes - header);
        let size = w
            .packet_size
            .get_or_insert(crate::units::Bytes(max_payload))
            .0;
        let allowed = format!(
            "a ping payload from 1 to {max_payload} bytes (with the {header}-byte CamCubeOS header, at most the {}-byte MTU of {:?})",
            tech.mtu_bytes, tech.name
        );
        crate::check::in_range("workload.packet_size", size, 1, max_payload, allowed)?;
        let timeout = *w
            .timeout
            .get_or_insert(crate::units::Duration(crate::engine::PS_PER_S));
        if timeout.0 == 0 {
            return Err(err(
                "workload.timeout",
                timeout,
                "a positive duration such as \"1s\"",
            ));
        }
        let interval = w.interval.get_or_insert(crate::units::Duration(0)).0;
        Ok(PingSpec {
            source,
            destinations,
            count,
            payload_bytes: size as u32,
            timeout_ps: timeout.0,
            interval_ps: interval,
        })
    }

    fn services(spec: &PingSpec, _net: &Network) -> Result<Services, ConfigError> {
        Ok(Services::with(Ping::new(spec.clone())))
    }
}

impl Ping {
    pub fn new(spec: PingSpec) -> Ping {
        Ping {
            records: Vec::with_capacity((spec.count as usize) * spec.destinations.len()),
            spec,
            resolved: 0,
            lost: 0,
        }
    }

    fn total(&self) -> usize {
        self.spec.count as usize * self.spec.destinations.len()
    }

    /// The ping sent at `sent_ps` is resolved: the next leaves now, or `interval` after it.
    fn next_after(&mut self, ctx: &mut SvcCtx<impl SvcSched>, sent_ps: TimePs) {
        if self.records.len() == self.total() {
            return;
        }
        let at = sent_ps + self.spec.interval_ps;
        if at <= ctx.ev.now() {
            self.send_next(ctx);
        } else {
            let timer = super::SvcEvent::Timer {
                service: PING,
                tag: NEXT_PING,
            };
            ctx.ev.schedule(at, timer);
        }
    }

    /// Sends ping number `records.len()`.
    fn send_next(&mut self, ctx: &mut SvcCtx<impl SvcSched>) {
        let i = self.records.len();
        let dst = self.spec.destinations[i / self.spec.count as usize];
        let src = self.spec.source;
        let now = ctx.ev.now();
        let payload = self.spec.payload_bytes;
        let frame = ctx.net.frame_bytes(src, payload + SERVICE_HEADER_BYTES);
        self.records.push(PingRecord {
            src,
            dst,
            payload_bytes: payload,
            frame_bytes: frame,
            sent_ps: now,
            rtt_ps: NEVER,
            hops: 0,
        });
        let pkt = ctx.net.pool_mut().alloc(Packet {
            proto: Proto::SERVICE,
            dst_port: PING,
            src_host: src,
            dst_host: dst,
            seq: i as u64,
            ts_ps: now,
            payload_bytes: payload,
            frame_bytes: frame,
            hash: crate::engine::rng::mix64(i as u64) as u32,
            ..Default::default()
        });
        ctx.hosts.send(ctx.net, ctx.ev, src, pkt);
        ctx.ev.schedule(
            now + self.spec.timeout_ps,
            super::SvcEvent::Timer {
                service: PING,
                tag: i as u32,
            },
        );
    }
}

/// The pings of a run, one row each: source, destination, sizes, when it left, its round
/// trip (NaN if it did not return), the links it crossed there and back, and the hop
/// count of a shortest path between the two (`path_hops`, one way).
pub fn table(records: &[PingRecord], net: &crate::net::Network) -> crate::table::Table {
    use crate::table::{floats, ints, us};
    let rtt = |r: &PingRecord| {
        if r.rtt_ps == NEVER {
            f64::NAN
        } else {
            us(r.rtt_ps)
        }
    };
    crate::table::Table {
        name: "pings",
        columns: vec![
            ("src", ints(records, |r| i64::from(r.src))),
            ("dst", ints(records, |r| i64::from(r.dst))),
            (
                "payload_bytes",
                ints(records, |r| i64::from(r.payload_bytes)),
            ),
            ("frame_bytes", ints(records, |r| i64::from(r.frame_bytes))),
            ("sent_us", floats(records, |r| us(r.sent_ps))),
            ("rtt_us", floats(records, rtt)),
            ("hops_counted", ints(records, |r| i64::from(r.hops))),
            (
                "path_hops",
                ints(records, |r| {
                    i64::from(net.switches_on_path(r.src, r.dst)) + 1
                }),
            ),
        ],
    }
}

/// Headline figures of a ping run: pings sent and returned, mean round trip.
pub fn headline(h: &mut serde_json::Map<String, serde_json::Value>, records: &[PingRecord]) {
    let back: Vec<f64> = records
        .iter()
        .filter(|r| r.rtt_ps != NEVER)
        .map(|r| r.rtt_ps as f64 / 1e6)
        .collect();
    h.insert("pings".into(), records.len().into());
    h.insert("pings_returned".into(), back.len().into());
    h.insert("pings_lost".into(), (records.len() - back.len()).into());
    if !back.is_empty() {
        h.insert(
            "mean_ping_rtt_us".into(),
            (back.iter().sum::<f64>() / back.len() as f64).into(),
        );
    }
}

impl ServiceKind for Ping {
    const ID: u16 = super::PING;
    const NAME: &'static str = "ping";
    fn start<S: SvcSched>(&mut self, ctx: &mut SvcCtx<S>) {
        if self.total() > 0 {
            self.send_next(ctx);
        }
    }
    #[inline]
    fn on_path<S: SvcSched>(&mut self, ctx: &mut SvcCtx<S>, _host: u32, pkt: PktId) -> OnPath {
        ctx.net.pool_mut().get_mut(pkt).ack += 1;
        OnPath::Forward
    }
    fn deliver<S: SvcSched>(&mut self, ctx: &mut SvcCtx<S>, host: u32, pkt: PktId) {
        let p = ctx.net.pool_mut().get_mut(pkt);
        p.ack += 1;
        if p.src_port == 0 {
            // At the destination: back the way it came, as a new send from here.
            p.src_port = 1;
            std::mem::swap(&mut p.src_host, &mut p.dst_host);
            p.hops = 0;
            ctx.net.count_delivered();
            ctx.hosts.send(ctx.net, ctx.ev, host, pkt);
            return;
        }
        let (i, hops, sent) = (p.seq as usize, p.ack as u32, p.ts_ps);
        ctx.net.delivered(pkt);
        if i + 1 != self.records.len() || self.resolved > i {
            // Back after its timeout: the sequence has moved on.
            return;
        }
        self.resolved += 1;
        let now = ctx.ev.now();
        let r = &mut self.records[i];
        r.rtt_ps = now - sent;
        r.hops = hops;
        self.next_after(ctx, sent);
    }
    /// Ping `tag`'s wait is over: if it has not returned, it is lost and the next leaves.
    fn on_timer<S: SvcSched>(&mut self, ctx: &mut SvcCtx<S>, tag: u32) {
        if tag == NEXT_PING {
            self.send_next(ctx);
            return;
        }
        let i = tag as usize;
        if i + 1 != self.records.len() || self.resolved > i {
            return;
        }
        self.resolved += 1;
        self.lost += 1;
        let sent = self.records[i].sent_ps;
        self.next_after(ctx, sent);
    }
    fn done(&self) -> bool {
        self.resolved == self.total()
    }
}

impl crate::metrics::report::Report for Ping {
    fn tables(&self, ctx: &crate::metrics::report::ReportCtx, out: &mut Vec<crate::table::Table>) {
        out.push(table(&self.records, ctx.net));
    }

    fn headline(
        &self,
        _: &crate::metrics::report::ReportCtx,
        h: &mut crate::metrics::report::Headline,
    ) {
        headline(h, &self.records);
    }
}
