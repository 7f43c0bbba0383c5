//! `[emulation]`: how `wscsim emulate` runs a scenario in real time, and the real programs
//! it starts in the emulated hosts (`emulate`; the front end starts the programs).

use super::checks::{in_range, int_in};
use super::{err, ConfigError};
use crate::engine::{TimePs, PS_PER_MS, PS_PER_US};
use crate::units::Duration;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmulationCfg {
    /// A frame handed to its host later than this after it reached the host in the
    /// emulation counts as late (default 100 us).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lateness_bound: Option<Duration>,
    /// The share of frames that may be late before the run is marked as over its bound
    /// (default 0.01).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_fraction_bound: Option<f64>,
    /// The emulator polls without sleeping when its next event is this close (default
    /// 20 us): lower lateness for a busy core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spin: Option<Duration>,
    /// Never sleep: poll the hosts' devices on a core of its own for the whole run (lowest
    /// lateness, one core busy; default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_poll: Option<bool>,
    /// Programs to run in the hosts' namespaces.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub apps: Vec<AppCfg>,
    /// Kernel settings of some hosts' namespaces, made before any program starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sysctls: Vec<SysctlCfg>,
    /// Hosts whose real frames (sent and received) go to capture/host-N.pcap.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capture: Vec<i64>,
    /// The user the programs run as (checked and used by the front end that starts them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

/// `[[emulation.sysctls]]`: `settings` (name = value, as `sysctl -w` takes them) in the
/// namespaces of `hosts` (default every host).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SysctlCfg {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts: Option<Vec<i64>>,
    pub settings: std::collections::BTreeMap<String, serde_json::Value>,
}

/// `[[emulation.apps]]`: one command, started on each of `hosts` at `start`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppCfg {
    pub hosts: Vec<i64>,
    /// A shell command line (`sh -c`); `{host}` and `{ip}` become the host's index and
    /// address, `{ip:N}` host N's address.
    pub command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<Duration>,
    /// The program runs until the emulation ends and is then stopped (a server), rather
    /// than being expected to exit by itself with status 0 (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon: Option<bool>,
    /// Capabilities the program keeps (checked and used by the front end that starts it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<String>,
}

/// `[emulation]` resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct EmulationSpec {
    pub lateness_bound_ps: TimePs,
    pub late_fraction_bound: f64,
    pub spin_ps: TimePs,
    pub busy_poll: bool,
    pub capture: Vec<u32>,
}

pub fn resolve(
    e: &mut EmulationCfg,
    n_hosts: i64,
    duration_ps: TimePs,
) -> Result<EmulationSpec, ConfigError> {
    let bound = e.lateness_bound.get_or_insert(Duration(100 * PS_PER_US)).0;
    let (lo, hi) = (Duration(1), Duration(PS_PER_MS * 1000));
    in_range(
        "emulation.lateness_bound",
        Duration(bound),
        lo,
        hi,
        "above 0, at most 1s",
    )?;
    let frac = *e.late_fraction_bound.get_or_insert(0.01);
    in_range(
        "emulation.late_fraction_bound",
        frac,
        0.0,
        1.0,
        "a fraction from 0 to 1",
    )?;
    let spin = e.spin.get_or_insert(Duration(20 * PS_PER_US)).0;
    if spin > PS_PER_MS * 10 {
        return Err(err("emulation.spin", Duration(spin), "from 0s to 10ms"));
    }
    for (i, a) in e.apps.iter_mut().enumerate() {
        app(&format!("emulation.apps[{i}]"), a, n_hosts, duration_ps)?;
    }
    for (i, s) in e.sysctls.iter_mut().enumerate() {
        sysctl(&format!("emulation.sysctls[{i}]"), s, n_hosts)?;
    }
    let capture = (0..e.capture.len())
        .map(|k| {
            int_in(
                &format!("emulation.capture[{k}]"),
                e.capture[k],
                0,
                n_hosts - 1,
            )
        })
        .collect::<Result<_, _>>()?;
    Ok(EmulationSpec {
        lateness_bound_ps: bound,
        late_fraction_bound: frac,
        spin_ps: spin,
        busy_poll: *e.busy_poll.get_or_insert(false),
        capture,
    })
}

/// A sysctl's hosts (default every host) and its settings: names of the kernel's form, and
/// values that are strings or numbers (what the kernel accepts is checked when it is set).
fn sysctl(path: &str, s: &mut SysctlCfg, n_hosts: i64) -> Result<(), ConfigError> {
    let hosts = s.hosts.get_or_insert_with(|| (0..n_hosts).collect());
    for (k, &h) in hosts.iter().enumerate() {
        int_in(&format!("{path}.hosts[{k}]"), h, 0, n_hosts - 1)?;
    }
    if s.settings.is_empty() {
        return Err(err(
            &format!("{path}.settings"),
            "{}",
            "a table such as { \"net.ipv4.tcp_ecn\" = 1 }",
        ));
    }
    for (name, value) in &s.settings {
        let ok_name = name.starts_with("net.")
            && name.split('.').all(|part| {
                !part.is_empty()
                    && part
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            });
        if !ok_name {
            return Err(err(
                &format!("{path}.settings"),
                format!("{name:?}"),
                "names of the network's kernel settings, such as \"net.ipv4.tcp_ecn\" (net.*: a namespace has its own)",
            ));
        }
        if !(value.is_string() || value.is_number()) {
            return Err(err(
                &format!("{path}.settings.{name}"),
                value,
                "a string or a number",
            ));
        }
    }
    Ok(())
}

fn app(path: &str, a: &mut AppCfg, n_hosts: i64, duration_ps: TimePs) -> Result<(), ConfigError> {
    if a.hosts.is_empty() {
        return Err(err(
            &format!("{path}.hosts"),
            "[]",
            "a non-empty list of host indices",
        ));
    }
    for (k, &h) in a.hosts.iter().enumerate() {
        int_in(&format!("{path}.hosts[{k}]"), h, 0, n_hosts - 1)?;
    }
    if a.command.trim().is_empty() {
        return Err(err(
            &format!("{path}.command"),
            "\"\"",
            "a shell command line",
        ));
    }
    let start = a.start.get_or_insert(Duration(0)).0;
    if start >= duration_ps {
        return Err(err(
            &format!("{path}.start"),
            Duration(start),
            format!("before the end of the run ({})", Duration(duration_ps)),
        ));
    }
    a.daemon.get_or_insert(false);
    Ok(())
}
