//! The clients of the key-value store (workload kind "kv"): servers of the torus that each
//! keep `outstanding` operations in flight (a closed loop: the next leaves when one is
//! answered), `operations` in all, drawn from a mix of insert, lookup, delete and
//! compare-and-swap on keys chosen uniformly from `keys`. Each client has its own random
//! stream. On a torus with load generators (CamCubeOS's image store), the clients are the
//! generators by default: each operation goes to a front end drawn uniformly from the
//! servers, which runs it against the store and answers the generator. A compare-and-swap expects the version the client last saw of that key (0 if
//! none). The operations' records make the `kv_ops` table.

use super::kind::{ServiceWorkload, WorkloadCtx};
use super::Services;
use crate::check::{err, host_list, int_in, one_of, ConfigError};
use crate::engine::{rng, TimePs, NEVER};
use crate::host::disk::DiskParams;
use crate::net::link::LinkTech;
use crate::net::Network;
use crate::topology::Graph;
use crate::units::Bytes;
use rand::Rng;
use std::collections::BTreeMap;

/// `[workload]` parameters of kind "kv" (defaults are filled in by `resolve_kv`, below).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Hosts that issue operations (default: the load generators if the torus has them,
    /// else every server).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clients: Option<Vec<i64>>,
    /// Operations each client keeps in flight (default 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outstanding: Option<i64>,
    /// Operations each client issues (default 100).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operations: Option<i64>,
    /// Relative weights of "insert", "lookup", "delete" and "cas" (default insert 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mix: Option<BTreeMap<String, f64>>,
    /// Distinct keys (default 1,000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keys: Option<i64>,
    /// Bytes of a value written (default 1.47 MB, the paper's mean image).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_size: Option<crate::units::Bytes>,
    /// Servers holding each object (default 3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i64>,
    /// "x25e" (default: the servers' Intel X25-E SSD) or "none" (in memory).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk: Option<String>,
    /// Delay before lost replicas are recreated after a failure (default 180 s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rereplicate_after: Option<crate::units::Duration>,
    /// How long a client waits for an answer before sending again (default 3 s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<crate::units::Duration>,
    /// Off a torus (the same store through a switch): the store's servers are hosts 0 to
    /// x*y*z - 1, whose keys map to them as on a torus of these dimensions; the other
    /// hosts are load generators.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store_dims: Option<Vec<i64>>,
    /// Lookups go through CamCubeOS's cache (default false; a torus only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<bool>,
    /// Keys derived from each key for the cache's hot spots (default 4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hot_spots: Option<i64>,
    /// Every key is stored (version 1, at its replicas) before the run starts (default
    /// false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preload: Option<bool>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    Insert,
    Lookup,
    Delete,
    Cas,
}

impl OpKind {
    pub const ALL: [OpKind; 4] = [OpKind::Insert, OpKind::Lookup, OpKind::Delete, OpKind::Cas];

    pub fn name(self) -> &'static str {
        match self {
            OpKind::Insert => "insert",
            OpKind::Lookup => "lookup",
            OpKind::Delete => "delete",
            OpKind::Cas => "cas",
        }
    }
}

/// How an operation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Ok,
    /// A lookup of a key that has no live object.
    Missing,
    /// A compare-and-swap whose expected version was not the current one.
    Conflict,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Missing => "missing",
            Status::Conflict => "conflict",
        }
    }
}

/// The store's workload, resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct KvSpec {
    pub clients: Vec<u32>,
    /// Servers a client's operation goes through (empty: clients are servers and run their
    /// operations themselves).
    pub front_ends: Vec<u32>,
    pub outstanding: u32,
    pub operations: u32,
    /// Weights of `OpKind::ALL`, normalised to sum to 1.
    pub mix: [f64; 4],
    pub keys: u32,
    pub value_bytes: u64,
    pub replicas: u32,
    /// None: the store is in memory.
    pub disk: Option<DiskParams>,
    pub rereplicate_ps: TimePs,
    pub timeout_ps: TimePs,
    /// The messages' packets: payload bytes, window, initial retransmission timeout.
    pub payload_bytes: u32,
    pub window: u32,
    pub rto_ps: TimePs,
    pub seed: u64,
    /// Off a torus: the store's servers as a torus of these dimensions (None on a torus).
    pub store_dims: Option<[u32; 3]>,
    /// Lookups through the cache with this many derived keys (None: no cache).
    pub cache_hot_spots: Option<u32>,
    pub preload: bool,
}

/// One operation and its outcome (`end_ps` NEVER: not answered by the end of the run).
#[derive(Clone, Copy, Debug)]
pub struct Op {
    pub client: u32,
    /// The server that runs it against the store (the client itself without front ends).
    pub fe: u32,
    pub kind: OpKind,
    pub key: u32,
    /// What a compare-and-swap expects.
    pub expect_version: u32,
    pub start_ps: TimePs,
    pub end_ps: TimePs,
    /// Times sent (1 + retries).
    pub attempts: u16,
    /// When the current attempt left.
    pub sent_ps: TimePs,
    pub status: Status,
    /// The version the answer named.
    pub version: u32,
    /// The latest acknowledged version of its key when the operation was issued: a
    /// lookup answered with an older one read a stale copy.
    pub floor_version: u32,
}

pub struct Clients {
    spec_clients: Vec<u32>,
    front_ends: Vec<u32>,
    operations: u32,
    keys: u32,
    /// Cumulative weights of the mix.
    cumulative: [f64; 4],
    rngs: Vec<rng::StreamRng>,
    issued: Vec<u32>,
    /// Per client: the last version it saw of each key.
    seen: Vec<BTreeMap<u32, u32>>,
    pub ops: Vec<Op>,
    answered: usize,
    /// The latest acknowledged version of each key written (insert, CAS, delete).
    pub acknowledged: BTreeMap<u32, u32>,
    /// Lookups answered with a version older than one acknowledged before they were issued.
    pub stale_reads: u64,
}

impl Clients {
    pub fn new(spec: &KvSpec) -> Clients {
        let mut cumulative = [0.0; 4];
        let mut sum = 0.0;
        for (c, w) in cumulative.iter_mut().zip(spec.mix) {
            sum += w;
            *c = sum;
        }
        let n = spec.clients.len();
        Clients {
            spec_clients: spec.clients.clone(),
            front_ends: spec.front_ends.clone(),
            operations: spec.operations,
            keys: spec.keys,
            cumulative,
            rngs: (0..n)
                .map(|c| rng::stream(spec.seed, rng::family::KV, c as u64))
                .collect(),
            issued: vec![0; n],
            seen: vec![BTreeMap::new(); n],
            ops: Vec::with_capacity(n * spec.operations as usize),
            answered: 0,
            acknowledged: BTreeMap::new(),
            stale_reads: 0,
        }
    }

    /// Every operation answered.
    pub fn done(&self) -> bool {
        self.answered == self.spec_clients.len() * self.operations as usize
    }

    /// A front end for client `c`: drawn uniformly from those `up` accepts (a generator
    /// learns at once that a server it cannot connect to is gone), or from all if none is.
    fn draw_front_end(&mut self, c: usize, up: &impl Fn(u32) -> bool) -> u32 {
        let n = self.front_ends.len();
        for _ in 0..64 {
            let fe = self.front_ends[self.rngs[c].random_range(0..n)];
            if up(fe) {
                return fe;
            }
        }
        let live: Vec<u32> = self.front_ends.iter().copied().filter(|&f| up(f)).collect();
        match live.len() {
            0 => self.front_ends[0],
            k => live[self.rngs[c].random_range(0..k)],
        }
    }

    /// Client `c`'s next operation, recorded (None when it has issued them all); `up`
    /// says which servers are up.
    pub fn next_op(&mut self, c: usize, now: TimePs, up: impl Fn(u32) -> bool) -> Option<u32> {
        if self.issued[c] >= self.operations {
            return None;
        }
        self.issued[c] += 1;
        let r = &mut self.rngs[c];
        let u: f64 = r.random::<f64>() * self.cumulative[3];
        let kind = OpKind::ALL[self.cumulative.iter().position(|&x| u < x).unwrap_or(3)];
        let key = r.random_range(0..self.keys);
        let expect_version = self.seen[c].get(&key).copied().unwrap_or(0);
        let client = self.spec_clients[c];
        let fe = match self.front_ends.is_empty() {
            true => client,
            false => self.draw_front_end(c, &up),
        };
        let floor_version = self.acknowledged.get(&key).copied().unwrap_or(0);
        self.ops.push(Op {
            client,
            fe,
            kind,
            key,
            expect_version,
            start_ps: now,
            end_ps: NEVER,
            attempts: 1,
            sent_ps: now,
            status: Status::Ok,
            version: 0,
            floor_version,
        });
        Some(self.ops.len() as u32 - 1)
    }

    /// The answer to attempt `attempt` of `op` came: the client's index if the operation
    /// is now done (the first answer counts; later ones are ignored).
    pub fn on_reply(
        &mut self,
        op: u32,
        attempt: u16,
        status: Status,
        version: u32,
        now: TimePs,
    ) -> Option<usize> {
        let _ = attempt;
        let o = &mut self.ops[op as usize];
        if o.end_ps != NEVER {
            return None;
        }
        o.end_ps = now;
        o.status = status;
        o.version = version;
        let o = *o;
        self.answered += 1;
        let c = self.index_of(o.client);
        if status != Status::Missing {
            self.seen[c].insert(o.key, version);
        }
        if o.kind == OpKind::Lookup && status == Status::Ok && version < o.floor_version {
            self.stale_reads += 1;
        }
        if status == Status::Ok && o.kind != OpKind::Lookup {
            let a = self.acknowledged.entry(o.key).or_insert(0);
            *a = (*a).max(version);
        }
        Some(c)
    }

    /// Whether `op` has gone unanswered for `timeout_ps` since its last attempt (then it
    /// counts one more attempt, sent now, through a front end drawn afresh: the last may
    /// have failed).
    pub fn timed_out(
        &mut self,
        op: u32,
        now: TimePs,
        timeout_ps: TimePs,
        up: impl Fn(u32) -> bool,
    ) -> bool {
        let o = &mut self.ops[op as usize];
        if o.end_ps != NEVER || now < o.sent_ps + timeout_ps {
            return false;
        }
        o.attempts = o.attempts.saturating_add(1);
        o.sent_ps = now;
        let client = o.client;
        if !self.front_ends.is_empty() {
            let c = self.index_of(client);
            let fe = self.draw_front_end(c, &up);
            self.ops[op as usize].fe = fe;
        }
        true
    }

    fn index_of(&self, client: u32) -> usize {
        self.spec_clients
            .iter()
            .position(|&x| x == client)
            .expect("a client")
    }
}

/// One row per operation.
pub fn table(c: &Clients) -> crate::table::Table {
    use crate::table::{floats, ints, us, Column};
    let ops = &c.ops;
    let latency = |o: &Op| {
        if o.end_ps == NEVER {
            f64::NAN
        } else {
            us(o.end_ps - o.start_ps)
        }
    };
    crate::table::Table {
        name: "kv_ops",
        columns: vec![
            ("client", ints(ops, |o| i64::from(o.client))),
            ("front_end", ints(ops, |o| i64::from(o.fe))),
            (
                "op",
                Column::Cat {
                    levels: &["insert", "lookup", "delete", "cas"],
                    codes: ops.iter().map(|o| o.kind as u8).collect(),
                },
            ),
            ("key", ints(ops, |o| i64::from(o.key))),
            ("start_us", floats(ops, |o| us(o.start_ps))),
            ("latency_us", floats(ops, latency)),
            (
                "status",
                Column::Cat {
                    levels: &["ok", "missing", "conflict"],
                    codes: ops.iter().map(|o| o.status as u8).collect(),
                },
            ),
            ("version", ints(ops, |o| i64::from(o.version))),
            ("attempts", ints(ops, |o| i64::from(o.attempts))),
        ],
    }
}

/// Workload kind "kv": clients of the key-value store.
pub struct KvWorkload;

impl ServiceWorkload for KvWorkload {
    const NAME: &'static str = "kv";
    const USES_LOAD_GENERATORS: bool = true;
    type Params = Params;
    type Spec = KvSpec;

    fn resolve(w: &mut Params, ctx: &WorkloadCtx) -> Result<KvSpec, ConfigError> {
        resolve_kv(w, ctx.graph, ctx.host_tech, ctx.seed)
    }

    fn services(spec: &KvSpec, net: &Network) -> Result<Services, ConfigError> {
        Ok(Services::with(Box::new(super::kvstore::KvStore::new(
            spec.clone(),
            net.n_hosts(),
        ))))
    }
}

/// Resolves the store's workload, writing the defaults back.
fn resolve_kv(
    w: &mut Params,
    graph: &Graph,
    tech: &LinkTech,
    seed: u64,
) -> Result<KvSpec, ConfigError> {
    let n_hosts = graph.n_hosts() as i64;
    let store_dims = resolve_store_dims(w, graph, n_hosts)?;
    let dims = graph.torus.or(store_dims).expect("one or the other");
    let servers = i64::from(dims[0] * dims[1] * dims[2]);
    let (clients, front_ends) = resolve_clients(w, n_hosts, servers)?;
    let outstanding = int_in(
        "workload.outstanding",
        *w.outstanding.get_or_insert(1),
        1,
        10_000,
    )?;
    let operations = int_in(
        "workload.operations",
        *w.operations.get_or_insert(100),
        1,
        10_000_000,
    )?;
    let keys = int_in("workload.keys", *w.keys.get_or_insert(1000), 1, 100_000_000)?;
    let value = w.value_size.get_or_insert(Bytes(1_470_000)).0;
    crate::check::in_range("workload.value_size", value, 1, 1 << 32, "1 byte to 4 GiB")?;
    let replicas = int_in(
        "workload.replicas",
        *w.replicas.get_or_insert(3),
        1,
        servers.min(64),
    )?;
    let disk = w.disk.get_or_insert_with(|| "x25e".into()).clone();
    one_of("workload.disk", &disk, &["x25e", "none"])?;
    let rereplicate = w
        .rereplicate_after
        .get_or_insert(crate::units::Duration(180 * crate::engine::PS_PER_S))
        .0;
    let timeout = w
        .timeout
        .get_or_insert(crate::units::Duration(3 * crate::engine::PS_PER_S))
        .0;
    // A retry timer far below a round trip sends operations again faster than they can
    // be answered (at 1us a run of 1 s on 27 servers did not end in a minute).
    if timeout < 100 * crate::engine::PS_PER_US {
        return Err(err(
            "workload.timeout",
            crate::units::Duration(timeout),
            "from 100us to 1000000s, such as \"1s\"",
        ));
    }
    Ok(KvSpec {
        clients,
        front_ends,
        outstanding,
        operations,
        mix: resolve_mix(w)?,
        keys,
        value_bytes: value,
        replicas,
        disk: (disk == "x25e").then_some(DiskParams::X25_E),
        rereplicate_ps: rereplicate,
        timeout_ps: timeout,
        payload_bytes: tech.mtu_bytes - crate::services::SERVICE_HEADER_BYTES,
        window: 64,
        rto_ps: 10 * crate::engine::PS_PER_MS,
        seed,
        store_dims,
        cache_hot_spots: resolve_cache(w, graph)?,
        preload: *w.preload.get_or_insert(false),
    })
}

/// The cache's hot spots: Some(k) when lookups go through the cache (a torus only).
fn resolve_cache(w: &mut Params, graph: &Graph) -> Result<Option<u32>, ConfigError> {
    let k = int_in("workload.hot_spots", *w.hot_spots.get_or_insert(4), 0, 64)?;
    match (*w.cache.get_or_insert(false), graph.torus) {
        (false, _) => Ok(None),
        (true, Some(_)) => Ok(Some(k)),
        (true, None) => Err(err(
            "workload.cache",
            "true",
            "false off a torus (readers pick the closest copy by torus hops)",
        )),
    }
}

/// The store's servers off a torus (the switched baseline): `store_dims`, required there
/// and refused on a torus.
fn resolve_store_dims(
    w: &Params,
    graph: &Graph,
    n_hosts: i64,
) -> Result<Option<[u32; 3]>, ConfigError> {
    match (&w.store_dims, graph.torus) {
        (None, Some(_)) => Ok(None),
        (Some(d), Some(_)) => Err(err(
            "workload.store_dims",
            format!("{d:?}"),
            "nothing on a torus (its servers hold the store)",
        )),
        (None, None) => Err(err(
            "workload.kind",
            "\"kv\"",
            "on topology.kind = \"torus3d\", or elsewhere with workload.store_dims = [x, y, z] (hosts 0 to x*y*z - 1 hold the store)",
        )),
        (Some(d), None) => {
            let ok = d.len() == 3
                && d.iter().all(|&k| (1..=64).contains(&k))
                && d.iter().product::<i64>() < n_hosts;
            if !ok {
                return Err(err(
                    "workload.store_dims",
                    format!("{d:?}"),
                    format!("three sizes from 1 to 64 whose product is below the {n_hosts} hosts (the rest are load generators)"),
                ));
            }
            Ok(Some([d[0] as u32, d[1] as u32, d[2] as u32]))
        }
    }
}

/// The operation mix: weights by name, normalised.
fn resolve_mix(w: &mut Params) -> Result<[f64; 4], ConfigError> {
    let mix = w
        .mix
        .get_or_insert_with(|| [("insert".to_string(), 1.0)].into());
    let names: Vec<&str> = OpKind::ALL.iter().map(|k| k.name()).collect();
    let mut weights = [0.0; 4];
    for (name, &x) in mix.iter() {
        one_of("workload.mix", name, &names)?;
        if !(x.is_finite() && x >= 0.0) {
            return Err(err(
                &format!("workload.mix.{name}"),
                x,
                "a weight of 0 or more",
            ));
        }
        weights[names.iter().position(|n| n == name).expect("checked")] = x;
    }
    let sum: f64 = weights.iter().sum();
    if sum <= 0.0 {
        return Err(err(
            "workload.mix",
            "weights summing to 0",
            "at least one weight above 0",
        ));
    }
    Ok(weights.map(|x| x / sum))
}

/// Who issues operations (default: the load generators if there are any, else every
/// server), and the front ends their operations go through (none for servers).
fn resolve_clients(
    w: &mut Params,
    n_hosts: i64,
    servers: i64,
) -> Result<(Vec<u32>, Vec<u32>), ConfigError> {
    w.clients.get_or_insert_with(|| match n_hosts > servers {
        true => (servers..n_hosts).collect(),
        false => (0..n_hosts).collect(),
    });
    let clients = host_list("workload.clients", &w.clients, n_hosts)?.expect("filled in");
    if clients.is_empty() {
        return Err(err("workload.clients", "[]", "at least one server"));
    }
    // A load generator's operations go through the servers; a server runs its own.
    let front_ends = match clients.iter().any(|&c| i64::from(c) >= servers) {
        true if clients.iter().any(|&c| i64::from(c) < servers) => {
            return Err(err(
                "workload.clients",
                format!("{clients:?}"),
                "servers only or load generators only",
            ))
        }
        true => (0..servers as u32).collect(),
        false => Vec::new(),
    };
    Ok((clients, front_ends))
}
