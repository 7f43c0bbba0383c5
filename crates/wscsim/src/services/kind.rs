//! What a workload kind reads of the scenario when it is resolved (`WorkloadCtx`), and the
//! workloads the CamCubeOS services drive themselves (`ServiceWorkload`): ping, reliable,
//! multicast, aggregate, kv and the runtime's own services. Each such kind lives in its
//! service's file; the workload layer lists it (`workload::builtin_workloads!`) through
//! `workload::Driven`, as it lists its applications.

use super::Services;
use crate::check::{err, in_range, ConfigError};
use crate::net::link::{LinkFamily, LinkTech};
use crate::net::Network;
use crate::topology::Graph;
use crate::units::Bytes;

/// What a workload kind's resolver reads of the scenario resolved before it.
pub struct WorkloadCtx<'a> {
    pub n_hosts: i64,
    pub graph: &'a Graph,
    pub host: &'a crate::host::HostSpec,
    /// The technology of the hosts' links.
    pub host_tech: &'a LinkTech,
    /// The hosts' link rate, and what a host can send out in all (a torus server: its six links).
    pub host_rate_bps: u64,
    pub host_out_bps: u64,
    pub duration: crate::units::Duration,
    pub seed: u64,
    /// `transport.kind = "udp"`.
    pub udp_transport: bool,
    /// `transport.kind = "roce"`, `"ndp"` or `"homa"`: flows are messages.
    pub messages: Option<crate::transport::MessageTransport>,
    /// Torus servers pack packets into shared frames (`runtime.pack`).
    pub packed: bool,
}

impl WorkloadCtx<'_> {
    /// The hosts' links are PCIe (the PCIe paper's fabric).
    pub fn pcie(&self) -> bool {
        self.host_tech.family == LinkFamily::Pcie
    }
}

/// A workload that a CamCubeOS service runs: its `[workload]` parameters, how they are
/// checked, and the services it installs. It starts no application of the workload layer.
pub trait ServiceWorkload {
    /// `workload.kind`.
    const NAME: &'static str;
    /// Whether its clients may be a torus's load generators (`topology.load_generators`).
    const USES_LOAD_GENERATORS: bool = false;
    /// The `[workload]` keys but `kind`, each an `Option` whose doc comment states its default.
    type Params: serde::de::DeserializeOwned + serde::Serialize;
    /// The parameters resolved.
    type Spec: Clone + std::fmt::Debug;
    /// Checks each parameter (naming `workload.<key>`) and fills in the defaults.
    fn resolve(p: &mut Self::Params, ctx: &WorkloadCtx) -> Result<Self::Spec, ConfigError>;
    /// The services a run of `spec` installs on `net`.
    fn services(spec: &Self::Spec, net: &Network) -> Result<Services, ConfigError>;
}

/// A service over six disjoint trees (`kind`) needs a torus of at least 3 along each axis.
pub fn check_six_trees(graph: &Graph, kind: &str) -> Result<(), ConfigError> {
    if graph.torus.is_none_or(|d| d.iter().any(|&k| k < 3)) {
        return Err(err(
            "workload.kind",
            format!("\"{kind}\""),
            "another kind, unless topology.kind = \"torus3d\" with at least 3 servers along each axis (six disjoint trees need six distinct neighbours)",
        ));
    }
    Ok(())
}

/// A service packet's payload: at most the MTU less CamCubeOS's header (the default).
pub fn service_payload(
    packet_size: &mut Option<Bytes>,
    tech: &LinkTech,
) -> Result<u32, ConfigError> {
    let max_payload = u64::from(tech.mtu_bytes - super::SERVICE_HEADER_BYTES);
    let payload = packet_size.get_or_insert(Bytes(max_payload)).0;
    let allowed = format!("1 to {max_payload} bytes (the MTU less CamCubeOS's 32-byte header)");
    in_range("workload.packet_size", payload, 1, max_payload, allowed)?;
    Ok(payload as u32)
}

/// `workload.rate_fraction` of a tree service (default 0.98), in millionths: a smaller
/// fraction would be 0, a tree that never sends.
pub fn tree_rate_fraction_ppm(v: &mut Option<f64>) -> Result<u32, ConfigError> {
    let f = *v.get_or_insert(0.98);
    in_range("workload.rate_fraction", f, 1e-6, 1.0, "from 0.000001 to 1")?;
    Ok((f * 1e6).round() as u32)
}

/// Most memory a tree service (`aggregate`, `multicast`) may keep per packet over all its
/// servers: its state grows with the packets of the file, which a size near 10^18 bytes
/// would make more than any machine holds (and more than a packet number's 32 bits).
pub const MAX_TREE_STATE_BYTES: u64 = 1 << 31;

/// `workload.size` of a tree service sending `payload`-byte packets whose servers keep
/// `state_bits` bits for each packet (over all servers): 1 byte up to what fits in
/// `MAX_TREE_STATE_BYTES` and in 2^32 - 1 packets.
pub fn tree_service_size(size: u64, payload: u32, state_bits: u64) -> Result<(), ConfigError> {
    let max_packets = (MAX_TREE_STATE_BYTES * 8 / state_bits.max(1)).min(u64::from(u32::MAX));
    let max_size = max_packets * u64::from(payload);
    let allowed = format!(
        "1 to {max_size} bytes: at most {max_packets} packets of workload.packet_size \
         ({payload} bytes), as the servers keep {state_bits} bits for each packet (2 GiB in all)"
    );
    in_range("workload.size", size, 1, max_size, allowed).map(|_| ())
}
