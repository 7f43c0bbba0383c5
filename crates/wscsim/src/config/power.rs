//! `[power]`: the most power each component draws, and how much of it an idle component
//! still draws. Every run integrates these into energy (`metrics::energy`).
//!
//! Defaults come from Table 1 of Byrne et al. (HotPower 2011) and the Gordon node it
//! builds on: a core of the Xeon X5670 (95 W for 6 cores), 4 GB of DDR3 (6 W), the storage
//! device's own figure (`host::disk::DEVICES`), and per link technology a NIC and a switch
//! port (`net::link::LinkTech::power`). The sources give maxima only, and the paper charges
//! them for the whole run; so does the default `idle_fraction = 1`.

use super::ConfigError;
use serde::{Deserialize, Serialize};

/// The scenario's `[power]` table; what is left out takes its default, and the resolved
/// scenario shows every figure used.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PowerCfg {
    /// Watts per CPU core at full load (default 95 / 6: the Xeon X5670 of Table 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_core_w: Option<f64>,
    /// Watts of a server's memory (default 6: 4 GB of DDR3, Table 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_w: Option<f64>,
    /// Watts of a server's storage device (default the device's; 0 without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_w: Option<f64>,
    /// Watts of a server's NIC or PCIe adapter (default by link technology, Table 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nic_w: Option<f64>,
    /// Watts of one switch port (default by link technology, Table 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub switch_port_w: Option<f64>,
    /// Watts of a switch's chassis beyond its ports (default 0: Table 1 counts ports only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub switch_chassis_w: Option<f64>,
    /// Watts of a server's chassis: fans, power supply losses, board ("system overhead
    /// power", which the paper never quantifies; default 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chassis_w: Option<f64>,
    /// Fraction of its maximum an idle CPU core, NIC, switch port or storage device draws
    /// (default 1: no proportionality, as the paper assumes). Memory and chassis draw
    /// their figure throughout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_fraction: Option<f64>,
}

// `[power]` resolved is metrics::energy::PowerSpec: the energy model reads it, config fills it.
pub use crate::metrics::energy::PowerSpec;

impl Default for PowerSpec {
    fn default() -> Self {
        resolve_power(&mut PowerCfg::default()).expect("defaults are valid")
    }
}

/// The most any one component may be given: a generous bound that still catches a power
/// given in milliwatts or a typo of several digits.
const MAX_W: f64 = 100_000.0;

/// A power figure in range: watts from 0 to `MAX_W`.
fn watts(path: &str, w: f64) -> Result<f64, ConfigError> {
    crate::check::in_range(path, w, 0.0, MAX_W, format!("watts from 0 to {MAX_W}"))
}

/// A figure whose default depends on the component: checked only when given.
fn watts_if_given(path: &str, given: Option<f64>) -> Result<Option<f64>, ConfigError> {
    given.map(|w| watts(path, w)).transpose()
}

pub fn resolve_power(p: &mut PowerCfg) -> Result<PowerSpec, ConfigError> {
    let cpu_core_w = watts("power.cpu_core_w", *p.cpu_core_w.get_or_insert(95.0 / 6.0))?;
    let memory_w = watts("power.memory_w", *p.memory_w.get_or_insert(6.0))?;
    let switch_chassis_w = watts(
        "power.switch_chassis_w",
        *p.switch_chassis_w.get_or_insert(0.0),
    )?;
    let chassis_w = watts("power.chassis_w", *p.chassis_w.get_or_insert(0.0))?;
    let idle_fraction = *p.idle_fraction.get_or_insert(1.0);
    let allowed = "a fraction from 0 (an idle component draws nothing) to 1 (it draws its maximum)";
    crate::check::in_range("power.idle_fraction", idle_fraction, 0.0, 1.0, allowed)?;
    Ok(PowerSpec {
        cpu_core_w,
        memory_w,
        storage_w: watts_if_given("power.storage_w", p.storage_w)?,
        nic_w: watts_if_given("power.nic_w", p.nic_w)?,
        switch_port_w: watts_if_given("power.switch_port_w", p.switch_port_w)?,
        switch_chassis_w,
        chassis_w,
        idle_fraction,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_table_1() {
        let s = PowerSpec::default();
        assert!((s.cpu_core_w * 6.0 - 95.0).abs() < 1e-9);
        assert_eq!(s.memory_w, 6.0);
        assert_eq!((s.nic_w, s.storage_w), (None, None));
        assert_eq!(s.idle_fraction, 1.0);
    }

    #[test]
    fn bad_figures_name_their_field() {
        let mut p = PowerCfg {
            nic_w: Some(-1.0),
            ..Default::default()
        };
        assert_eq!(resolve_power(&mut p).unwrap_err().path, "power.nic_w");
        let mut p = PowerCfg {
            idle_fraction: Some(1.5),
            ..Default::default()
        };
        assert_eq!(
            resolve_power(&mut p).unwrap_err().path,
            "power.idle_fraction"
        );
        let mut p = PowerCfg {
            memory_w: Some(f64::NAN),
            ..Default::default()
        };
        assert_eq!(resolve_power(&mut p).unwrap_err().path, "power.memory_w");
    }
}
