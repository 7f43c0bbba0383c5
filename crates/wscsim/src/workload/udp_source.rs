//! UDP sources sending datagrams of one size at a given rate, with constant or Poisson
//! (exponential) gaps, to one destination or each to a uniformly random other host (an
//! open-loop load that exercises the data plane alone, like Flexplane's stress test).

use super::{sources_and_destination, Application, AppsBuild, Ctx, Destination};
use super::{WorkloadCtx, WorkloadKind};
use crate::check::{err, in_range, int_in, one_of, ConfigError};
use crate::engine::rng::{family, stream};
use crate::net::link::LinkTech;
use crate::packet::UDP_IP_HEADER_BYTES;
use crate::topology::Graph;

/// `[workload]` parameters of kind "udp" (defaults are filled in by `udp_spec`, below).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// IP-level rate per source.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<crate::units::Rate>,
    /// On a torus, instead of rate: a fraction of the expected all-to-all rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load: Option<f64>,
    /// UDP payload bytes (default: the MTU less 28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packet_size: Option<crate::units::Bytes>,
    /// "constant" (default) or "poisson" gaps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arrival: Option<String>,
    /// Sending hosts (default: all but the destination).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sources: Option<Vec<i64>>,
    /// A host index, "random", "round_robin", "random_key", "random_reachable" or
    /// "neighbours" (default 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination: Option<crate::workload::Destination>,
    /// With destination "neighbours": how many of each server's links it sends on (1 to 6,
    /// default every link), in the order +x, -x, +y, -y, +z, -z.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links: Option<i64>,
}
use super::{AppEvent, AppSched};
use crate::engine::{StreamRng, NEVER, PS_PER_S};
use crate::metrics::FlowRecord;
use crate::net::NONE;
use rand::Rng;

/// Where a source's datagrams go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Host(u32),
    /// A host drawn uniformly among all but the source, per datagram.
    Random,
    /// Every other host in turn (source + 1, source + 2, ...): all-to-all with no per-pair
    /// state.
    RoundRobin,
    /// A uniformly random 64-bit key per datagram (a torus: delivered at its root).
    RandomKey,
    /// As `Random`, redrawn while the source's view of the torus cannot reach the server
    /// drawn (at most `REACHABLE_DRAWS` draws; the last is sent, and dropped, if none can).
    RandomReachable,
    /// A torus server's neighbours in turn, over its first `links` directions.
    Neighbours {
        links: u32,
    },
}

/// Draws of a `RandomReachable` destination before the source gives up looking: with a
/// fifth of the servers cut off, 64 draws all miss with probability 0.2^64.
const REACHABLE_DRAWS: u32 = 64;

pub struct UdpSource {
    pub sources: Vec<u32>,
    /// Random and round-robin destinations make the flow record's `dst` -1.
    pub destination: Target,
    pub n_hosts: u32,
    pub rate_bps: u64,
    pub payload_bytes: u32,
    pub poisson: bool,
    pub rngs: Vec<StreamRng>,
    streams: Vec<u32>,
    /// Datagrams each source has sent (round-robin's position).
    sent: Vec<u32>,
    first_rec: u32,
}

impl UdpSource {
    pub fn new(
        sources: Vec<u32>,
        destination: Target,
        n_hosts: u32,
        rate_bps: u64,
        payload_bytes: u32,
        poisson: bool,
        rngs: Vec<StreamRng>,
    ) -> Self {
        UdpSource {
            sources,
            destination,
            n_hosts,
            rate_bps,
            payload_bytes,
            poisson,
            rngs,
            streams: Vec::new(),
            sent: Vec::new(),
            first_rec: 0,
        }
    }

    /// Mean gap between datagrams so that the source's IP-level rate is `rate_bps`.
    fn mean_gap_s(&self) -> f64 {
        let ip_bits = (self.payload_bytes + crate::packet::UDP_IP_HEADER_BYTES) as f64 * 8.0;
        ip_bits / self.rate_bps as f64
    }

    /// Opens one stream per source, each with its flow record (application `id`'s).
    pub fn open(&mut self, id: u32, udp: &mut crate::transport::Udp, flows: &mut Vec<FlowRecord>) {
        self.first_rec = flows.len() as u32;
        for i in 0..self.sources.len() {
            let s = self.sources[i];
            let dst = match self.destination {
                Target::Host(h) => h,
                _ => NONE,
            };
            let st = udp.open(s, dst, id);
            self.streams.push(st);
            self.sent.push(0);
            flows.push(FlowRecord {
                flow_id: st,
                src: s,
                dst,
                size_bytes: 0,
                start_ps: 0,
                end_ps: NEVER,
                bytes_received: 0,
                ideal_ps: 0,
                dscp: 0,
                tcp: false,
            });
        }
    }

    /// The time from source `i`'s previous datagram (or the start) to its next: the mean
    /// gap, or an exponential draw from the source's own generator.
    pub fn gap_ps(&mut self, i: usize) -> u64 {
        let mean = self.mean_gap_s();
        let s = if self.poisson {
            let u: f64 = self.rngs[i].random();
            -(1.0 - u).ln() * mean
        } else {
            mean
        };
        ((s * PS_PER_S as f64) as u64).max(1)
    }

    /// Source `i`'s next datagram, made at `now` without sending it (the timeslot engine
    /// queues it): to the fixed destination, or the next one drawn. Only for targets that
    /// are hosts.
    pub fn next_datagram(
        &mut self,
        i: usize,
        net: &mut crate::net::Network,
        udp: &mut crate::transport::Udp,
        now: crate::engine::TimePs,
    ) -> crate::packet::PktId {
        let src = self.sources[i];
        let dst = self.next_destination(net, i, src);
        udp.datagram_to(net, self.streams[i], dst, self.payload_bytes, now)
    }

    /// The host source `i` (host `src`) sends its next datagram to, for the targets that
    /// pick one per datagram: neighbours in turn, a random host, every other host in turn,
    /// or a random host its view can reach.
    fn next_destination(&mut self, net: &mut crate::net::Network, i: usize, src: u32) -> u32 {
        match self.destination {
            Target::Neighbours { links } => {
                let dims = net.torus().expect("checked: a torus").dims;
                let dir = (self.sent[i] % links) as usize;
                self.sent[i] = self.sent[i].wrapping_add(1);
                crate::net::routing::torus::neighbour(dims, src, dir)
            }
            Target::RandomReachable => self.reachable_destination(net, i, src),
            Target::Random => {
                self.sent[i] = self.sent[i].wrapping_add(1);
                self.random_other(i, src)
            }
            Target::RoundRobin => {
                let d = self.sent[i] % (self.n_hosts - 1);
                self.sent[i] = self.sent[i].wrapping_add(1);
                // Round robin starts after the source.
                (src + 1 + d) % self.n_hosts
            }
            Target::Host(h) => h,
            Target::RandomKey => unreachable!("keys are not hosts"),
        }
    }

    /// A destination for source `i` (host `src`) drawn uniformly among the other hosts,
    /// again while `src`'s view of the torus cannot reach it.
    fn reachable_destination(&mut self, net: &mut crate::net::Network, i: usize, src: u32) -> u32 {
        let mut dst = src;
        for _ in 0..REACHABLE_DRAWS {
            dst = self.random_other(i, src);
            if net.reachable_in_view(src, dst) {
                break;
            }
        }
        dst
    }

    /// A host drawn uniformly, with source `i`'s generator, among all but its host `src`.
    fn random_other(&mut self, i: usize, src: u32) -> u32 {
        // d counts the hosts other than the source.
        let d = self.rngs[i].random_range(0..self.n_hosts - 1);
        if d >= src {
            d + 1
        } else {
            d
        }
    }

    /// Copies the streams' counters into their flow records (at the end of a run).
    pub fn finish(&self, ctx_udp: &crate::transport::Udp, flows: &mut [FlowRecord]) {
        for (i, &st) in self.streams.iter().enumerate() {
            let s = &ctx_udp.streams[st as usize];
            let f = &mut flows[self.first_rec as usize + i];
            f.size_bytes = s.sent_bytes;
            f.bytes_received = s.recv_bytes;
        }
    }
}

/// No results of its own (the flows, hosts and links tables show its traffic).
impl crate::metrics::report::Report for UdpSource {}

/// UDP sources resolved.
#[derive(Clone, Debug)]
pub struct UdpSpec {
    pub sources: Vec<u32>,
    pub destination: Target,
    pub rate_bps: u64,
    pub payload_bytes: u32,
    pub poisson: bool,
}

impl WorkloadKind for UdpSource {
    const NAME: &'static str = "udp";
    const OVER_UDP: bool = true;
    type Params = Params;
    type Spec = UdpSpec;
    type App = UdpSource;

    fn resolve(p: &mut Params, ctx: &WorkloadCtx) -> Result<UdpSpec, ConfigError> {
        udp_spec(p, ctx.graph, ctx.host_out_bps, ctx.host_tech, ctx.packed)
    }

    /// One application for all sources, each source host drawing from its own random stream.
    fn applications(spec: UdpSpec, b: &mut AppsBuild) -> Vec<UdpSource> {
        let rngs = spec
            .sources
            .iter()
            .map(|&s| stream(b.seed, family::HOST, s as u64))
            .collect();
        vec![UdpSource::new(
            spec.sources,
            spec.destination,
            b.n_hosts,
            spec.rate_bps,
            spec.payload_bytes,
            spec.poisson,
            rngs,
        )]
    }
}

impl Application for UdpSource {
    fn start<S: AppSched>(&mut self, id: u32, ctx: &mut Ctx<S>) {
        self.open(id, &mut ctx.transports.udp, &mut ctx.metrics.flows);
        for i in 0..self.sources.len() {
            let first = self.gap_ps(i);
            ctx.ev.schedule(
                first,
                AppEvent::Timer {
                    app: id,
                    tag: i as u32,
                },
            );
        }
    }

    #[inline]
    fn on_timer<S: AppSched>(&mut self, id: u32, tag: u32, ctx: &mut Ctx<S>) {
        let i = tag as usize;
        let src = self.sources[i];
        // A failed server's applications do not run.
        let up = ctx.net.host_up(src);
        match self.destination {
            _ if !up => {}
            Target::RandomKey => {
                let key: u64 = self.rngs[i].random();
                ctx.transports.udp.send_to_key(
                    ctx.net,
                    ctx.hosts,
                    ctx.ev,
                    self.streams[i],
                    key,
                    self.payload_bytes,
                );
            }
            Target::Host(_) => ctx.transports.udp.send(
                ctx.net,
                ctx.hosts,
                ctx.ev,
                self.streams[i],
                self.payload_bytes,
            ),
            _ => {
                let dst = self.next_destination(ctx.net, i, src);
                ctx.transports.udp.send_to(
                    ctx.net,
                    ctx.hosts,
                    ctx.ev,
                    self.streams[i],
                    dst,
                    self.payload_bytes,
                );
            }
        }
        let next = ctx.ev.now() + self.gap_ps(i);
        if next < ctx.end_ps {
            ctx.ev.schedule(next, AppEvent::Timer { app: id, tag });
        }
    }

    fn finish(&mut self, udp: &crate::transport::Udp, metrics: &mut crate::metrics::Metrics) {
        UdpSource::finish(self, udp, &mut metrics.flows)
    }
}

/// The workload of its kind, checked, with defaults filled in (`packed`: see `udp_packet`).
fn udp_spec(
    w: &mut Params,
    graph: &Graph,
    host_out_bps: u64,
    tech: &LinkTech,
    packed: bool,
) -> Result<UdpSpec, ConfigError> {
    let n_hosts = graph.n_hosts() as i64;
    let (size, ip, wire) = udp_packet(w, tech, packed)?;
    // Checked before the rate, which depends on the links used.
    let neighbours = match w.destination {
        Some(Destination::Neighbours) => Some(neighbours_target(w, graph)?),
        _ => None,
    };
    let r = udp_rate(w, graph, ip, wire)?;
    let max_ip_rate = (host_out_bps as f64 * ip as f64 / wire).floor() as u64;
    if r > max_ip_rate {
        return Err(err("workload.rate", crate::units::Rate(r), format!("at most {} of IP traffic, what the host's links ({}) carry at this packet size with {:?} framing", crate::units::Rate(max_ip_rate), crate::units::Rate(host_out_bps), tech.name)));
    }
    if let (Some(l), false) = (w.links, w.destination == Some(Destination::Neighbours)) {
        return Err(err(
            "workload.links",
            l,
            "nothing unless workload.destination = \"neighbours\"",
        ));
    }
    let (sources, dst) =
        sources_and_destination(&mut w.destination, &mut w.sources, n_hosts, true)?;
    let arrival = w.arrival.get_or_insert_with(|| "constant".into()).clone();
    one_of("workload.arrival", &arrival, &["constant", "poisson"])?;
    let destination = udp_target(dst, w.destination, graph, neighbours)?;
    Ok(UdpSpec {
        sources,
        destination,
        rate_bps: r,
        payload_bytes: size as u32,
        poisson: arrival == "poisson",
    })
}

/// The datagrams' payload (checked against the MTU), their IP bytes and what each takes
/// on the wire with its share of framing. `packed`: torus servers pack packets into
/// shared frames (`runtime.pack`), so the links carry more of them.
fn udp_packet(
    w: &mut Params,
    tech: &LinkTech,
    packed: bool,
) -> Result<(u64, u64, f64), ConfigError> {
    let max_payload = u64::from(tech.mtu_bytes - UDP_IP_HEADER_BYTES);
    let size = w
        .packet_size
        .get_or_insert(crate::units::Bytes(max_payload))
        .0;
    let allowed = format!(
        "a UDP payload from 1 to {max_payload} bytes (an IP packet of at most the {}-byte MTU of {:?})",
        tech.mtu_bytes, tech.name
    );
    in_range("workload.packet_size", size, 1, max_payload, allowed)?;
    // The rate is counted in IP bytes; on the wire each datagram also carries the link's
    // framing, and the host's links must keep up with both.
    let ip = size + u64::from(UDP_IP_HEADER_BYTES);
    let mut wire = f64::from(tech.wire_bytes(tech.frame_bytes(ip as u32)));
    if packed {
        // Packed as many to a frame as its MTU takes, each packet carries its share of one
        // frame's header and wire overhead.
        let per_frame = (u64::from(tech.mtu_bytes) / ip).max(1) as f64;
        wire = ip as f64 + f64::from(tech.header_bytes + tech.wire_overhead_bytes) / per_frame;
    }
    Ok((size, ip, wire))
}

/// Where the datagrams go: a host, in turn, a neighbour, a key's server, or at random.
fn udp_target(
    dst: Option<u32>,
    given: Option<Destination>,
    graph: &Graph,
    neighbours: Option<Target>,
) -> Result<Target, ConfigError> {
    Ok(match (dst, given) {
        (Some(h), _) => Target::Host(h),
        (None, Some(Destination::RoundRobin)) => Target::RoundRobin,
        (None, Some(Destination::Neighbours)) => neighbours.expect("checked above"),
        (None, Some(Destination::RandomKey)) => {
            if graph.torus.is_none() {
                return Err(err(
                    "workload.destination",
                    "\"random_key\"",
                    "a host index, \"random\" or \"round_robin\" (keys need a topology.kind = \"torus3d\")",
                ));
            }
            Target::RandomKey
        }
        (None, Some(Destination::RandomReachable)) => {
            if graph.torus.is_none() {
                return Err(err(
                    "workload.destination",
                    "\"random_reachable\"",
                    "a host index, \"random\" or \"round_robin\" (reachability is a torus server's view: topology.kind = \"torus3d\")",
                ));
            }
            Target::RandomReachable
        }
        (None, _) => Target::Random,
    })
}

/// Destination "neighbours": a torus, and `workload.links` from 1 to the links a server has.
fn neighbours_target(w: &mut Params, graph: &Graph) -> Result<Target, ConfigError> {
    if graph.torus.is_none_or(|d| d.iter().any(|&k| k < 3)) {
        return Err(err(
            "workload.destination",
            "\"neighbours\"",
            "a host index, \"random\" or \"round_robin\" (neighbours need a topology.kind = \"torus3d\" of at least 3 servers along each axis: six distinct neighbours)",
        ));
    }
    let links = int_in("workload.links", *w.links.get_or_insert(6), 1, 6)?;
    Ok(Target::Neighbours { links })
}

/// The UDP rate per source (IP bits per second): `rate`, or `load` times the expected
/// all-to-all rate of a torus (a link-level figure, converted to IP bits). The resolved
/// scenario shows the rate either way, beside the load it came from; a rate given with a
/// load is taken when it is the one the load gives (so that a resolved scenario, checked
/// again, resolves the same), and refused otherwise.
fn udp_rate(w: &mut Params, graph: &Graph, ip: u64, wire: f64) -> Result<u64, ConfigError> {
    match (w.rate, w.load, graph.torus) {
        (Some(r), None, _) => Ok(r.0),
        (given, Some(l), Some(dims)) => {
            let r = rate_from_load(w, graph, ip, wire, l, dims)?;
            if given.is_some_and(|g| g.0 != r) {
                return Err(err(
                    "workload.load",
                    l,
                    format!("nothing when workload.rate is given (give one of the two; this load gives {})", crate::units::Rate(r)),
                ));
            }
            w.rate = Some(crate::units::Rate(r));
            Ok(r)
        }
        (Some(_), Some(l), None) => Err(err(
            "workload.load",
            l,
            "nothing when workload.rate is given (give one of the two)",
        )),
        (None, Some(l), None) => Err(err(
            "workload.load",
            l,
            "only on a topology.kind = \"torus3d\" (where the expected all-to-all rate is known); give workload.rate instead",
        )),
        (None, None, _) => Err(err(
            "workload.rate",
            "nothing",
            "a rate per source such as \"1Gbps\" (or workload.load on a torus)",
        )),
    }
}

/// `load` (a fraction of the expected all-to-all, or one-hop, rate of a torus of `dims`)
/// as IP bits per second per source.
fn rate_from_load(
    w: &Params,
    graph: &Graph,
    ip: u64,
    wire: f64,
    l: f64,
    dims: [u32; 3],
) -> Result<u64, ConfigError> {
    if !(l.is_finite() && l > 0.0 && l <= 10.0) {
        return Err(err(
            "workload.load",
            l,
            "a fraction of the expected all-to-all rate above 0 and at most 10",
        ));
    }
    if !matches!(
        w.destination,
        Some(
            Destination::Random
                | Destination::RoundRobin
                | Destination::RandomKey
                | Destination::RandomReachable
                | Destination::Neighbours
        )
    ) {
        return Err(err(
            "workload.destination",
            match &w.destination {
                Some(d) => serde_json::to_string(d).expect("a destination serialises"),
                None => "nothing (a single destination, host 0)".into(),
            },
            "\"random\", \"round_robin\", \"random_key\", \"random_reachable\" or \"neighbours\" with workload.load (the expected rate is for all-to-all or one-hop traffic)",
        ));
    }
    let link_bps = graph.links[0].rate_bps;
    // Neighbours: one hop over `links` links, each at its line rate.
    let expected = match w.destination {
        Some(Destination::Neighbours) => w.links.unwrap_or(6).clamp(1, 6) as f64 * link_bps as f64,
        _ => crate::net::routing::torus::expected_all_to_all_bps(dims, link_bps),
    };
    Ok((l * expected * ip as f64 / wire).floor() as u64)
}
