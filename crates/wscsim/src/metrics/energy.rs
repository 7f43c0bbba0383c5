//! Energy of a run: each component's power integrated over the run.
//!
//! A component draws `max_w` while busy and `idle_fraction * max_w` while idle, so its
//! energy is `max_w * (idle_fraction * T + (1 - idle_fraction) * busy)` over a run of
//! length T: the exact integral of that two-level power. Busy time is, per component:
//! - CPU: the cores' busy time (network stack work on a costed stack, and applications'
//!   compute phases), at most cores x T;
//! - NIC and switch port: the longer of the time the port spent sending and the time its
//!   peer spent sending to it;
//! - storage: the time the device spent serving requests.
//!
//! Memory and chassis draw their figure throughout.
//!
//! Simplified: two power levels, no transitions' cost or latency, no dependence on clock
//! frequency or on how many bytes move (only on whether a part is busy). With the default
//! `idle_fraction = 1`, the paper's assumption, every part draws its maximum for the whole
//! run and busy time does not matter.

use crate::engine::{TimePs, PS_PER_S};
use crate::host::Hosts;
use crate::metrics::{Column, Table};
use crate::net::{Network, NodeKind};
use serde_json::{Map, Value};

/// `[power]` resolved (config/power.rs fills it in): None where the default depends on
/// the component (a device, a link technology).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PowerSpec {
    pub cpu_core_w: f64,
    pub memory_w: f64,
    pub storage_w: Option<f64>,
    pub nic_w: Option<f64>,
    pub switch_port_w: Option<f64>,
    pub switch_chassis_w: f64,
    pub chassis_w: f64,
    pub idle_fraction: f64,
}

/// The kinds of component, as the energy table names them.
pub const COMPONENTS: &[&str] = &[
    "cpu",
    "memory",
    "storage",
    "nic",
    "chassis",
    "switch_ports",
    "switch_chassis",
];

/// One component of one node.
#[derive(Clone, Debug, PartialEq)]
pub struct EnergyRow {
    /// Index into `COMPONENTS`.
    pub component: u8,
    pub node: u32,
    pub max_w: f64,
    pub joules: f64,
}

/// A run's energy, by component and node, with the link technologies no source gives a
/// power for (their NICs and ports are counted at 0 W).
#[derive(Clone, Debug, Default)]
pub struct Energy {
    pub rows: Vec<EnergyRow>,
    pub unsourced: Vec<&'static str>,
    pub seconds: f64,
}

/// Energy in joules of a component of `max_w` busy for `busy_ps` of `run_ps`.
pub fn joules(max_w: f64, idle_fraction: f64, busy_ps: TimePs, run_ps: TimePs) -> f64 {
    let busy = busy_ps.min(run_ps) as f64 / PS_PER_S as f64;
    let run = run_ps as f64 / PS_PER_S as f64;
    max_w * (idle_fraction * run + (1.0 - idle_fraction) * busy)
}

/// Time a port's link end was busy: the longer of sending and receiving.
fn port_busy_ps(net: &Network, port: u32) -> TimePs {
    let wire_ps = |p: &crate::net::Port| {
        (u128::from(p.stats.tx_wire_bytes) * 8 * u128::from(PS_PER_S) / u128::from(p.rate_bps))
            as TimePs
    };
    let me = &net.ports()[port as usize];
    let node = &net.nodes()[me.peer_node as usize];
    let back = node.port_base + me.peer_in_port;
    wire_ps(me).max(wire_ps(&net.ports()[back as usize]))
}

/// Computes a run's energy at `run_ps`.
pub fn energy(net: &Network, hosts: &Hosts, power: &PowerSpec, run_ps: TimePs) -> Energy {
    let f = power.idle_fraction;
    let mut e = Energy {
        seconds: run_ps as f64 / PS_PER_S as f64,
        ..Default::default()
    };
    let push = |e: &mut Energy, component: u8, node: u32, max_w: f64, busy_ps: TimePs| {
        e.rows.push(EnergyRow {
            component,
            node,
            max_w,
            joules: joules(max_w, f, busy_ps, run_ps),
        })
    };
    for (h, &node) in net.host_nodes().iter().enumerate() {
        let h = h as u32;
        let cores = hosts.spec.cores;
        let cpu_busy = hosts.cpu_busy_ps(h).min(run_ps * TimePs::from(cores));
        // Per core: core_w x (f T + (1 - f) busy_core); summed over cores.
        e.rows.push(EnergyRow {
            component: 0,
            node,
            max_w: power.cpu_core_w * f64::from(cores),
            joules: power.cpu_core_w
                * (f * f64::from(cores) * e.seconds
                    + (1.0 - f) * cpu_busy as f64 / PS_PER_S as f64),
        });
        push(&mut e, 1, node, power.memory_w, run_ps);
        if let Some(dev) = hosts.spec.storage {
            let busy = hosts.disks.get(h as usize).map_or(0, |d| d.busy_ps);
            push(
                &mut e,
                2,
                node,
                power.storage_w.unwrap_or(dev.power_w),
                busy,
            );
        }
        let nic_w = ports_w(net, power, node, &mut e.unsourced);
        push(&mut e, 3, node, nic_w.0, nic_w.1);
        if power.chassis_w > 0.0 {
            push(&mut e, 4, node, power.chassis_w, run_ps);
        }
    }
    for sw in 0..net.nodes().len() as u32 {
        if net.nodes()[sw as usize].kind != NodeKind::Switch {
            continue;
        }
        let (w, busy) = ports_w(net, power, sw, &mut e.unsourced);
        push(&mut e, 5, sw, w, busy);
        if power.switch_chassis_w > 0.0 {
            push(&mut e, 6, sw, power.switch_chassis_w, run_ps);
        }
    }
    e.unsourced.sort_unstable();
    e.unsourced.dedup();
    e
}

/// The power of a node's ports together, and a busy time that gives their energy: each
/// port's power weighted by its own busy time (a host's NICs, a switch's ports).
fn ports_w(
    net: &Network,
    power: &PowerSpec,
    node: u32,
    unsourced: &mut Vec<&'static str>,
) -> (f64, TimePs) {
    let n = &net.nodes()[node as usize];
    let host = n.kind == NodeKind::Host;
    let (mut total_w, mut weighted) = (0.0, 0.0);
    for port in n.port_base..n.port_base + n.nports {
        let p = &net.ports()[port as usize];
        let tech = &net.techs()[net.port_tech()[port as usize] as usize];
        let sourced = tech.power(p.rate_bps);
        if sourced.is_none() {
            unsourced.push(tech.name);
        }
        let w = if host {
            power.nic_w.or(sourced.map(|s| s.nic_w))
        } else {
            power.switch_port_w.or(sourced.map(|s| s.switch_port_w))
        }
        .unwrap_or(0.0);
        total_w += w;
        weighted += w * port_busy_ps(net, port) as f64;
    }
    let busy = if total_w > 0.0 {
        (weighted / total_w).round() as TimePs
    } else {
        0
    };
    (total_w, busy)
}

/// The energy table: a row per component of each node.
pub fn table(e: &Energy, net: &Network) -> Table {
    let r = &e.rows;
    let host_of = |node: u32| {
        let n = &net.nodes()[node as usize];
        if n.kind == NodeKind::Host {
            i64::from(n.index)
        } else {
            -1
        }
    };
    Table {
        name: "energy",
        columns: vec![
            (
                "component",
                Column::Cat {
                    levels: COMPONENTS,
                    codes: r.iter().map(|x| x.component).collect(),
                },
            ),
            (
                "node_name",
                Column::Str(
                    r.iter()
                        .map(|x| net.node_names()[x.node as usize].clone())
                        .collect(),
                ),
            ),
            (
                "host",
                Column::I64(r.iter().map(|x| host_of(x.node)).collect()),
            ),
            ("max_w", Column::F64(r.iter().map(|x| x.max_w).collect())),
            ("joules", Column::F64(r.iter().map(|x| x.joules).collect())),
            (
                "mean_w",
                Column::F64(
                    r.iter()
                        .map(|x| x.joules / e.seconds.max(f64::MIN_POSITIVE))
                        .collect(),
                ),
            ),
        ],
    }
}

/// The headline's energy figures: the total, its split, mean power, network power per
/// server, and energy per payload byte delivered.
pub fn headline(h: &mut Map<String, Value>, e: &Energy, servers: usize, delivered_bytes: u64) {
    // Sums start from 0.0 (an empty f64 sum is -0.0, which would print as "-0").
    let by = |names: &[&str]| -> f64 {
        e.rows
            .iter()
            .filter(|r| names.contains(&COMPONENTS[r.component as usize]))
            .fold(0.0, |a, r| a + r.joules)
    };
    let total: f64 = e.rows.iter().fold(0.0, |a, r| a + r.joules);
    let network = by(&["nic", "switch_ports", "switch_chassis"]);
    h.insert("energy_j".into(), total.into());
    h.insert("energy_cpu_j".into(), by(&["cpu"]).into());
    h.insert("energy_memory_j".into(), by(&["memory"]).into());
    h.insert("energy_storage_j".into(), by(&["storage"]).into());
    h.insert("energy_network_j".into(), network.into());
    if e.seconds > 0.0 {
        h.insert("mean_power_w".into(), (total / e.seconds).into());
        if servers > 0 {
            h.insert(
                "network_power_per_server_w".into(),
                (network / e.seconds / servers as f64).into(),
            );
        }
    }
    if delivered_bytes > 0 {
        h.insert(
            "energy_per_byte_nj".into(),
            (total / delivered_bytes as f64 * 1e9).into(),
        );
    }
    if !e.unsourced.is_empty() {
        h.insert("power_unsourced".into(), e.unsourced.clone().into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn energy_is_the_integral_of_two_level_power() {
        // 10 W for 2 s, busy 0.5 s, idle at 30%: 10 x (0.3 x 2 + 0.7 x 0.5) = 9.5 J.
        let j = joules(10.0, 0.3, PS_PER_S / 2, 2 * PS_PER_S);
        assert!((j - 9.5).abs() < 1e-12, "{j}");
        // Constant maximum: busy time does not matter.
        assert_eq!(joules(10.0, 1.0, 0, 2 * PS_PER_S), 20.0);
        // Busy time past the run is cut off.
        assert_eq!(joules(10.0, 0.0, 5 * PS_PER_S, 2 * PS_PER_S), 20.0);
    }
}
