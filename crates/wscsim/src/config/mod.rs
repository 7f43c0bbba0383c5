//! Scenarios: one schema, parsed from JSON (the Python front end turns TOML or a dict into
//! JSON), validated once, with every default filled in. Every error names the field path,
//! what was given and what is allowed.

pub mod checks;
pub mod churn;
pub mod emulation;
pub mod failures;
pub mod host;
pub use host::{HostCfg, HostCostsCfg, HostNoiseCfg};
pub mod kinds;
pub mod power;
pub mod scheme;
pub mod switch_model;
pub mod timeslots;
pub mod topology;
pub use crate::units;

pub use crate::check::{err, ConfigError};
pub use crate::transport::tcp::config::TransportCfg;
pub use crate::workload::flows::SizeClassCfg;
pub use crate::workload::{Destination, FlowSize};
use serde::{Deserialize, Serialize};
pub use units::{Bytes, Duration, Rate};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default = "d_name")]
    pub name: String,
    #[serde(default = "d_seed")]
    pub seed: u64,
    /// Longest simulated time; a run also ends when its workload is done.
    #[serde(default = "d_duration")]
    pub duration: Duration,
    pub topology: TopologyCfg,
    #[serde(default)]
    pub switch: SwitchCfg,
    #[serde(default)]
    pub transport: TransportCfg,
    #[serde(default)]
    pub host: HostCfg,
    pub workload: WorkloadCfg,
    #[serde(default)]
    pub metrics: MetricsCfg,
    /// What each component draws, for the run's energy (`power::PowerCfg`).
    #[serde(default)]
    pub power: power::PowerCfg,
    /// RoCEv2's queue pairs (`transport::roce::Params`); the defaults when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roce: Option<crate::transport::roce::Params>,
    /// NDP's senders and receivers (`transport::ndp::Params`); the defaults when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ndp: Option<crate::transport::ndp::Params>,
    /// Homa's senders and receivers (`transport::homa::Params`); the defaults when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub homa: Option<crate::transport::homa::Params>,
    /// EQDS's senders and receivers (`transport::eqds::Params`); the defaults when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eqds: Option<crate::transport::eqds::Params>,
    /// The PCIe fabric's DMA engines and windows (`transport::dma::DmaCfg`).
    #[serde(default)]
    pub dma: crate::transport::dma::DmaCfg,
    /// Links that fail, and perhaps come back, at given times.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<FailureCfg>,
    /// How torus servers learn of failures (`churn::DetectionCfg`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_detection: Option<churn::DetectionCfg>,
    /// Servers failing and rejoining at random (`churn::ChurnCfg`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub churn: Option<churn::ChurnCfg>,
    /// How a torus's servers queue packets (`runtime::RuntimeCfg`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<runtime::RuntimeCfg>,
    /// How `wscsim emulate` runs it in real time (ignored by `run`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emulation: Option<emulation::EmulationCfg>,
    /// How the event engine runs the scenario (`EngineCfg`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<EngineCfg>,
}

/// `[engine]`: a partitioned run orders events per partition (a fat tree's pods, a DIABLO
/// array, a leaf with its hosts, a torus slab), advancing them in windows of the least
/// delay between partitions, so that results cannot depend on how partitions are spread
/// over threads (`engine::partitioned`; docs/parallel.md).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineCfg {
    /// Partitioned run (default false: one event order for the whole network, as before).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partitioned: Option<bool>,
    /// "forward" (default) or "reverse": the order in which a window's partitions run. A
    /// check: results must be the same either way.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lane_order: Option<String>,
    /// Threads a partitioned run uses (default 1; giving it implies `partitioned = true`).
    /// The results are the same for any number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<i64>,
    /// Whether the partitions that hold hosts run on any of the threads too, each with
    /// its switches' (default true; false: on the simulation's own thread, the others
    /// sharing the switches'). Taken only when every layer above the network keeps its
    /// state by partition (TCP, endless long-lived flows, hosts that cost no time:
    /// `Sim::hosts_run_anywhere`). The results are the same either way.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spread_hosts: Option<bool>,
    /// "events" (default: every transmission, arrival and timer at its own time) or
    /// "timeslots": Flexplane's emulator model, the fabric advanced in timeslots of one
    /// full-size frame, for open-loop UDP loads (`sim::slots`; docs/schemes.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Events that may run at one simulated instant before the run is stopped as making
    /// no progress (default 20,000,000; `sim::stall`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_events_per_instant: Option<i64>,
    /// Wall time one call of a Python scheme's or service's method may take before the
    /// watchdog stops it (default 60 s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub python_hook_timeout: Option<Duration>,
}

/// `engine.python_hook_timeout` when not given: 60 s.
pub const DEFAULT_PYTHON_HOOK_TIMEOUT_PS: u64 = 60 * crate::engine::PS_PER_S;

impl EngineCfg {
    /// Whether the scenario asks for the timeslot engine.
    pub fn timeslots(e: Option<&EngineCfg>) -> bool {
        e.and_then(|e| e.mode.as_deref()) == Some("timeslots")
    }
}

/// `[[failures]]`: the link between two named nodes, or every link of one named server or
/// switch, goes down at `at` and, if `until` is given, comes back then. What is queued at
/// either end or on a wire is lost (counted).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailureCfg {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// A fraction of the servers, drawn at random with the run's seed: all their links fail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub random_nodes: Option<f64>,
    pub at: Duration,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<Duration>,
}

fn d_name() -> String {
    "unnamed".into()
}
fn d_seed() -> u64 {
    1
}
fn d_duration() -> Duration {
    Duration(crate::engine::PS_PER_S)
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkCfg {
    /// A preset of `net::link::PRESETS` ("ethernet", "10gbe", "ib_qdr_4x", ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub technology: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay: Option<Duration>,
    /// PCIe only: lanes per link (1, 2, 4, 8, 12, 16 or 32), which picks the width of
    /// technology "pcie_gen2" (x4 when left out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lanes: Option<i64>,
}

/// `[topology]`: its kind, the links every kind has, and the kind's own parameters
/// (declared by each kind beside its builder, e.g. `topology::fat_tree::Params`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TopologyCfg {
    pub kind: String,
    #[serde(default)]
    pub link: LinkCfg,
    #[serde(flatten)]
    pub params: serde_json::Map<String, serde_json::Value>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchCfg {
    /// "per_port" (output buffers), "per_input_port" (ingress VOQ memory), "per_voq" (a
    /// buffer per virtual output queue) or "shared".
    #[serde(default = "d_buffer")]
    pub buffer: String,
    #[serde(default = "d_buffer_per_port")]
    pub buffer_per_port: Bytes,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_buffer: Option<Bytes>,
    #[serde(default = "d_alpha")]
    pub dt_alpha: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port_to_port_latency: Option<Duration>,
    /// "store_and_forward" or "cut_through" (default: the model's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forwarding: Option<String>,
    /// A named switch whose figures are the defaults of the keys above (`config::switch_model`).
    #[serde(default = "d_model")]
    pub model: String,
    /// The data-plane scheme of every switch port: a name or a table (`config::scheme`).
    #[serde(default = "d_scheme")]
    pub scheme: serde_json::Value,
    /// Other schemes for some tiers or switches; a later entry wins over an earlier one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<OverrideCfg>,
    /// Priority flow control (lossless Ethernet; `net::pfc`). Off when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pfc: Option<crate::net::pfc::Params>,
}

/// `[[switch.overrides]]`: a scheme, a buffer per port, or both, for the switches of some
/// tiers (0 is next to the hosts) or with some names.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverrideCfg {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiers: Option<Vec<i64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switches: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<serde_json::Value>,
    /// These switches' buffer per port (per-port or per-input-port buffers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_per_port: Option<Bytes>,
}

fn d_buffer() -> String {
    "per_port".into()
}
/// 100 full-size Ethernet frames, ns-3's default queue of 100 packets.
fn d_buffer_per_port() -> Bytes {
    Bytes(100 * 1518)
}
fn d_alpha() -> f64 {
    1.0
}
fn d_model() -> String {
    "generic".into()
}
pub(crate) fn d_scheme() -> serde_json::Value {
    serde_json::Value::String("droptail".into())
}

impl Default for SwitchCfg {
    fn default() -> Self {
        serde_json::from_str("{}").unwrap()
    }
}

/// `[workload]`: its kind and the kind's own parameters (declared by each kind beside its
/// model, e.g. `workload::incast::Params`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkloadCfg {
    pub kind: String,
    #[serde(flatten)]
    pub params: serde_json::Map<String, serde_json::Value>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsCfg {
    #[serde(default = "d_sample")]
    pub queue_sample_interval: Duration,
    #[serde(default = "d_max_samples")]
    pub max_queue_samples: i64,
    /// Packet capture to pcap files (none by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture: Option<CaptureCfg>,
    /// Traces of chosen connections' windows and ports' queues (none by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceCfg>,
}

/// `[metrics.trace]`: TCP connections (`flows`, by flow_id) whose window, threshold,
/// smoothed RTT and bytes in flight are recorded after every ACK and timeout, and switch
/// ports ("tor0:3") whose queue is recorded at every change; at most `max_records` each.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceCfg {
    #[serde(default)]
    pub flows: Vec<i64>,
    #[serde(default)]
    pub ports: Vec<String>,
    #[serde(default = "d_trace_max")]
    pub max_records: i64,
}

fn d_trace_max() -> i64 {
    1_000_000
}

/// `[metrics.capture]`: where to capture packets. `hosts` taps host NICs (sent and
/// received packets), `ports` taps switch ports ("tor0:3", packets leaving port 3 of
/// tor0); at most `max_packets` are kept per capture point.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaptureCfg {
    #[serde(default)]
    pub hosts: Vec<i64>,
    #[serde(default)]
    pub ports: Vec<String>,
    #[serde(default = "d_capture_max")]
    pub max_packets: i64,
    /// The wall-clock time simulated time 0 stands for in the pcap files: a UTC date
    /// ("2026-11-27" or "2026-11-27T12:00:00Z") or Unix seconds (default 0, 1970-01-01).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch: Option<serde_json::Value>,
}

fn d_capture_max() -> i64 {
    100_000
}

fn d_sample() -> Duration {
    Duration(100 * crate::engine::PS_PER_US)
}
fn d_max_samples() -> i64 {
    2_000_000
}

impl Default for MetricsCfg {
    fn default() -> Self {
        serde_json::from_str("{}").unwrap()
    }
}

/// Parses a scenario from JSON text, naming the field of the first error.
pub fn parse_json(text: &str) -> Result<Scenario, ConfigError> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| ConfigError {
        path: "scenario".into(),
        message: format!("given text that is not JSON ({e})"),
    })?;
    tables_are_tables(&value)?;
    let sc: Scenario = serde_path_to_error::deserialize(value).map_err(|e| {
        let path = path_text(e.path());
        let inner = e.into_inner().to_string();
        let path = if path == "." || path.is_empty() {
            "scenario".to_string()
        } else {
            path
        };
        let message = match missing_kind_of(&path, &inner) {
            Some(kinds) => format!("given no kind; allowed: one of {kinds}"),
            None => given_allowed(&inner),
        };
        ConfigError { path, message }
    })?;
    Ok(sc)
}

/// The kinds a section could have been given, when serde's error is that its `kind` is
/// missing (serde alone would only say that the key has no default).
fn missing_kind_of(section: &str, serde_message: &str) -> Option<String> {
    if !serde_message.starts_with("missing field `kind`") {
        return None;
    }
    let kinds = match section {
        "topology" => kinds::names(topology::TOPOLOGIES),
        "workload" => kinds::names(resolve::WORKLOADS),
        _ => return None,
    };
    let quoted: Vec<String> = kinds.iter().map(|k| format!("{k:?}")).collect();
    Some(quoted.join(", "))
}

/// A field path as the front end writes it: `switch.scheme`, `switch.overrides[0]`, and
/// a key that is not a plain word quoted (`switch.":"`), so the field is never ambiguous.
fn path_text(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for seg in path.iter() {
        match seg {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                if !key.is_empty()
                    && key
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                {
                    out.push_str(key);
                } else {
                    out.push_str(&serde_json::Value::String(key.clone()).to_string());
                }
            }
            Segment::Enum { variant } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(variant);
            }
            Segment::Unknown => out.push('?'),
        }
    }
    out
}

/// serde reads a struct from a list too (`switch = []` would be a switch with every
/// default); a scenario's tables must be tables.
fn tables_are_tables(v: &serde_json::Value) -> Result<(), ConfigError> {
    const TABLES: &[&str] = &[
        "topology",
        "topology.link",
        "switch",
        "transport",
        "host",
        "host.costs",
        "workload",
        "metrics",
    ];
    const LISTS_OF_TABLES: &[&str] = &["switch.overrides", "workload.size_classes"];
    let at = |path: &str| path.split('.').try_fold(v, |node, key| node.get(key));
    for path in TABLES {
        match at(path) {
            Some(x) if !x.is_object() => return Err(err(path, json_kind(x), "a table")),
            _ => {}
        }
    }
    for path in LISTS_OF_TABLES {
        if let Some(serde_json::Value::Array(items)) = at(path) {
            if let Some((i, x)) = items.iter().enumerate().find(|(_, x)| !x.is_object()) {
                return Err(err(&format!("{path}[{i}]"), json_kind(x), "a table"));
            }
        }
    }
    Ok(())
}

fn json_kind(x: &serde_json::Value) -> &'static str {
    match x {
        serde_json::Value::Null => "nothing",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "a table",
    }
}

/// serde names types as Rust does (`f64`, `struct HostNoiseCfg`, `a sequence`); a user
/// reads "a number", "a table", "a list".
fn rust_type_in_words(expected: &str) -> String {
    match expected {
        "f32" | "f64" => "a number".into(),
        "i8" | "i16" | "i32" | "i64" | "isize" => "an integer".into(),
        "u8" | "u16" | "u32" | "u64" | "usize" => "an integer, 0 or more".into(),
        "bool" | "a boolean" => "true or false".into(),
        "a sequence" => "a list".into(),
        "a map" => "a table".into(),
        other if other.starts_with("struct ") || other.starts_with("a map ") => "a table".into(),
        other if other.starts_with("tuple ") || other.starts_with("a sequence ") => "a list".into(),
        other => other.into(),
    }
}

/// What serde says was given, as a scenario's reader names it: a table, not a "map".
fn serde_given_in_words(given: &str) -> String {
    match given {
        "map" => "a table".into(),
        "sequence" => "a list".into(),
        "unit value" => "nothing".into(),
        other => other.into(),
    }
}

/// serde's messages in the scenario's own form, "given X; allowed: Y":
/// "invalid type: integer `2024`, expected a string" -> "given integer 2024; allowed: a string".
pub(crate) fn given_allowed(serde_message: &str) -> String {
    // serde_json appends " at line L column C"; the field path says more to a user.
    let msg = serde_message
        .split(" at line ")
        .next()
        .unwrap_or(serde_message);
    let plain = |s: &str| s.replace('`', "");
    for prefix in ["invalid type: ", "invalid value: ", "invalid length "] {
        if let Some(rest) = msg.strip_prefix(prefix) {
            if let Some((given, expected)) = rest.split_once(", expected ") {
                let given = if prefix == "invalid length " {
                    format!("{given} items")
                } else {
                    serde_given_in_words(&plain(given))
                };
                return format!(
                    "given {given}; allowed: {}",
                    rust_type_in_words(&plain(expected))
                );
            }
        }
    }
    for (prefix, what) in [("unknown field ", "key"), ("unknown variant ", "value")] {
        if let Some(rest) = msg.strip_prefix(prefix) {
            return match rest.split_once(", expected ") {
                Some((name, expected)) => format!(
                    "given unknown {what} {}; allowed: {}",
                    plain(name),
                    plain(expected)
                ),
                None => match rest.split_once(", there are no ") {
                    Some((name, _)) => {
                        format!("given unknown {what} {}; allowed: none here", plain(name))
                    }
                    None => format!("given unknown {what} {}", plain(rest)),
                },
            };
        }
    }
    if let Some(name) = msg.strip_prefix("missing field ") {
        return format!(
            "given no {}; allowed: a value for it (it has no default)",
            plain(name)
        );
    }
    msg.to_string()
}

pub mod resolve;
pub mod runtime;

pub use resolve::{resolve, Resolved, WorkloadSpec};

#[cfg(test)]
mod tests {
    use super::*;

    fn message(json: &str) -> ConfigError {
        parse_json(json).unwrap_err()
    }

    #[test]
    fn serde_errors_read_given_and_allowed() {
        let base = r#""topology": {"kind": "single_switch"}, "workload": {"kind": "incast"}"#;
        let e = message(&format!(r#"{{"name": 2024, {base}}}"#));
        assert_eq!(
            (e.path.as_str(), e.message.as_str()),
            ("name", "given integer 2024; allowed: a string")
        );
        let e = message(&format!(r#"{{"colour": 3, {base}}}"#));
        assert!(
            e.message
                .starts_with("given unknown key colour; allowed: one of name, seed"),
            "{e}"
        );
        let e = message(r#"{"workload": {"kind": "incast"}}"#);
        assert_eq!(
            (e.path.as_str(), e.message.as_str()),
            (
                "scenario",
                "given no topology; allowed: a value for it (it has no default)"
            )
        );
        let e = message(r#"{"topology": {"hosts": 4}, "workload": {"kind": "incast"}}"#);
        assert_eq!(e.path, "topology");
        assert!(
            e.message
                .starts_with("given no kind; allowed: one of \"single_switch\", "),
            "{e}"
        );
        let e = message(&format!(r#"{{"host": {{"noise": 3}}, {base}}}"#));
        assert_eq!(e.message, "given integer 3; allowed: a table", "{e}");
        let e = message(&format!(r#"{{"failures": {{}}, {base}}}"#));
        assert_eq!(e.message, "given a table; allowed: a list", "{e}");
        let e = message(&format!(r#"{{"switch": [], {base}}}"#));
        assert_eq!(
            (e.path.as_str(), e.message.as_str()),
            ("switch", "given a list; allowed: a table")
        );
        let e = message(
            r#"{"workload": {"kind": "flows", "size_classes": [[1, 2]]}, "topology": {"kind": "single_switch"}}"#,
        );
        assert_eq!(e.path, "workload.size_classes[0]", "{e}");
    }
}
