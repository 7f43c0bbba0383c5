//! CamCubeOS's reliable transport service (the paper names it, 569 lines of C#, and does
//! not describe it; this follows the simulator specification's choice): a sliding window
//! of packets, cumulative acknowledgements, and a retransmission timeout that doubles on
//! each expiry (go-back-N from the first unacknowledged packet). A transfer goes to a
//! server, or to a key (point-to-key: delivered at whichever server is the key's root when
//! each packet arrives; a receiver that takes over starts from nothing, so the sender goes
//! back to what it acknowledges). Receivers keep what arrives out of order within the
//! window and acknowledge every packet. The machinery is `streams`, which other services
//! use for their own messages; this service drives a run's transfers, one message each.

use super::kind::{service_payload, ServiceWorkload, WorkloadCtx};
use super::ServiceKind;
use super::{Services, SvcCtx, SvcSched, RELIABLE};
use crate::check::{err, host_list, int_in, ConfigError};
use crate::engine::{TimePs, NEVER};
use crate::net::Network;
use crate::packet::PktId;
use crate::topology::Graph;

/// `[workload]` parameters of kind "reliable" (defaults are filled in by `resolve`, below).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Sending hosts (default: every host but the destination).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sources: Option<Vec<i64>>,
    /// A host index, or "key": each source sends to a key of its own (drawn with the run's
    /// seed), delivered at the key's root (default 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination: Option<serde_json::Value>,
    /// Bytes each source sends (default 1 MB).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<crate::units::Bytes>,
    /// Payload bytes per packet (default: what fills the link's MTU).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packet_size: Option<crate::units::Bytes>,
    /// Packets in flight (default 64).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<i64>,
    /// Initial retransmission timeout (default 10 ms), doubled on each expiry up to 1 s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rto: Option<crate::units::Duration>,
}

pub use super::streams::To;
use super::streams::{Stream, StreamEvent, StreamParams, Streams};

/// The transfers of a run, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReliableSpec {
    pub transfers: Vec<(u32, To)>,
    pub size_bytes: u64,
    pub payload_bytes: u32,
    pub window: u32,
    pub rto_ps: TimePs,
}

/// The transfers of a run: one message each, all opened at the start.
pub struct Reliable {
    pub spec: ReliableSpec,
    streams: Streams,
    done: usize,
}

impl ServiceWorkload for Reliable {
    const NAME: &'static str = "reliable";
    type Params = Params;
    type Spec = ReliableSpec;

    /// Transfers over CamCubeOS's reliable transport service.
    fn resolve(w: &mut Params, ctx: &WorkloadCtx) -> Result<ReliableSpec, ConfigError> {
        let (graph, tech, seed) = (ctx.graph, ctx.host_tech, ctx.seed);
        let n_hosts = graph.n_hosts() as i64;
        let dst = reliable_destination(w, graph)?;
        let everyone: Vec<i64> = (0..n_hosts).filter(|&h| Some(h as u32) != dst).collect();
        w.sources.get_or_insert(everyone);
        let sources = host_list("workload.sources", &w.sources, n_hosts)?.expect("filled in");
        if let (Some(d), Some(i)) = (dst, sources.iter().position(|&s| Some(s) == dst)) {
            return Err(err(
                &format!("workload.sources[{i}]"),
                d,
                "hosts other than the destination",
            ));
        }
        let size = w.size.get_or_insert(crate::units::Bytes(1_000_000)).0;
        if size == 0 {
            return Err(err("workload.size", size, "at least 1 byte"));
        }
        let payload = service_payload(&mut w.packet_size, tech)?;
        let window = int_in("workload.window", *w.window.get_or_insert(64), 1, 1_000_000)?;
        let rto = *w
            .rto
            .get_or_insert(crate::units::Duration(crate::engine::PS_PER_S / 100));
        if rto.0 == 0 {
            return Err(err(
                "workload.rto",
                rto,
                "a positive duration such as \"10ms\"",
            ));
        }
        let mut rng = crate::engine::rng::stream(seed, crate::engine::rng::family::WORKLOAD, 7);
        let transfers = sources
            .iter()
            .map(|&s| {
                let to = match dst {
                    Some(d) => To::Host(d),
                    None => To::Key(rand::Rng::random(&mut rng)),
                };
                (s, to)
            })
            .collect();
        Ok(ReliableSpec {
            transfers,
            size_bytes: size,
            payload_bytes: payload,
            window,
            rto_ps: rto.0,
        })
    }

    fn services(spec: &ReliableSpec, _net: &Network) -> Result<Services, ConfigError> {
        Ok(Services::with(Reliable::new(spec.clone())))
    }
}

/// A reliable transfer's destination: a host, or None for "key" (a torus only).
fn reliable_destination(w: &mut Params, graph: &Graph) -> Result<Option<u32>, ConfigError> {
    let n_hosts = graph.n_hosts() as i64;
    let dest = w.destination.get_or_insert(serde_json::json!(0)).clone();
    let to_key = dest.as_str() == Some("key");
    if to_key && graph.torus.is_none() {
        return Err(err(
            "workload.destination",
            "\"key\"",
            "a host index (keys need a topology.kind = \"torus3d\")",
        ));
    }
    let dst = match (dest.as_i64(), to_key) {
        (Some(h), _) => Some(int_in("workload.destination", h, 0, n_hosts - 1)?),
        (None, true) => None,
        _ => {
            return Err(err(
                "workload.destination",
                &dest,
                "a host index or \"key\"",
            ))
        }
    };
    Ok(dst)
}

impl Reliable {
    pub fn new(spec: ReliableSpec) -> Reliable {
        let streams = Streams::new(StreamParams {
            service: RELIABLE,
            payload_bytes: spec.payload_bytes,
            window: spec.window,
            rto_ps: spec.rto_ps,
        });
        Reliable {
            spec,
            streams,
            done: 0,
        }
    }

    /// Every transfer, in the order of the spec (empty before the run starts).
    pub fn transfers(&self) -> &[Stream] {
        &self.streams.list
    }

    fn count_done(&mut self) {
        for e in self.streams.events.drain(..) {
            if let StreamEvent::Acked { .. } = e {
                self.done += 1;
            }
        }
    }
}

/// The transfers of a run, one row each.
pub fn table(r: &Reliable) -> crate::table::Table {
    use crate::table::{floats, ints, us};
    let t = r.transfers();
    crate::table::Table {
        name: "transfers",
        columns: vec![
            ("src", ints(t, |x| i64::from(x.src))),
            (
                "dst",
                ints(t, |x| match x.to {
                    To::Host(h) => i64::from(h),
                    To::Key(_) => -1,
                }),
            ),
            ("size_bytes", ints(t, |x| x.size_bytes as i64)),
            (
                "end_us",
                floats(t, |x| {
                    if x.end_ps == NEVER {
                        f64::NAN
                    } else {
                        us(x.end_ps)
                    }
                }),
            ),
            ("retransmits", ints(t, |x| i64::from(x.retransmits))),
            ("timeouts", ints(t, |x| i64::from(x.timeouts))),
        ],
    }
}

/// Headline figures: transfers done, the last one's end, retransmissions and timeouts.
pub fn headline(h: &mut serde_json::Map<String, serde_json::Value>, r: &Reliable) {
    let t = r.transfers();
    let done: Vec<&Stream> = t.iter().filter(|x| x.end_ps != NEVER).collect();
    h.insert("transfers".into(), t.len().into());
    h.insert("transfers_completed".into(), done.len().into());
    if let Some(last) = done.iter().map(|x| x.end_ps).max() {
        h.insert("last_transfer_end_us".into(), (last as f64 / 1e6).into());
    }
    h.insert(
        "transfer_retransmits".into(),
        t.iter()
            .map(|x| u64::from(x.retransmits))
            .sum::<u64>()
            .into(),
    );
    h.insert(
        "transfer_timeouts".into(),
        t.iter().map(|x| u64::from(x.timeouts)).sum::<u64>().into(),
    );
}

impl ServiceKind for Reliable {
    const ID: u16 = super::RELIABLE;
    const NAME: &'static str = "reliable";
    fn message_ranks(&self) -> Option<Vec<u32>> {
        Some(self.streams.ranks())
    }
    fn start<S: SvcSched>(&mut self, ctx: &mut SvcCtx<S>) {
        for &(src, to) in &self.spec.transfers {
            self.streams.open(ctx, src, to, self.spec.size_bytes);
        }
        self.count_done();
    }
    fn deliver<S: SvcSched>(&mut self, ctx: &mut SvcCtx<S>, host: u32, pkt: PktId) {
        self.streams.deliver(ctx, host, pkt);
        self.count_done();
    }
    fn on_timer<S: SvcSched>(&mut self, ctx: &mut SvcCtx<S>, tag: u32) {
        self.streams.on_timer(ctx, tag);
        self.count_done();
    }
    fn done(&self) -> bool {
        self.done == self.spec.transfers.len()
    }
}

impl crate::metrics::report::Report for Reliable {
    fn tables(&self, _: &crate::metrics::report::ReportCtx, out: &mut Vec<crate::table::Table>) {
        out.push(table(self));
    }

    fn headline(
        &self,
        _ctx: &crate::metrics::report::ReportCtx,
        h: &mut crate::metrics::report::Headline,
    ) {
        headline(h, self);
    }
}
