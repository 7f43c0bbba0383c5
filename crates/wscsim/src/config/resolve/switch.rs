//! The switch: its model, forwarding, buffers, scheme and per-switch overrides.

use super::*;

/// `[switch]`: buffers, forwarding, latency and schemes (with `host.nic_scheme`).
pub(super) fn resolve_switch(
    sc: &mut Scenario,
    graph: &Graph,
    tcp: &TcpParams,
    tech: &LinkTech,
    preset_latency: crate::engine::TimePs,
) -> Result<SwitchParams, ConfigError> {
    let s = &mut sc.switch;
    one_of(
        "switch.buffer",
        &s.buffer,
        &["per_port", "per_input_port", "per_voq", "shared"],
    )?;
    let names: Vec<&str> = crate::config::switch_model::SWITCH_MODELS
        .iter()
        .map(|m| m.name)
        .collect();
    one_of("switch.model", &s.model, &names)?;
    let model = crate::config::switch_model::by_name(&s.model).expect("checked above");
    let forwarding = s.forwarding.get_or_insert_with(|| {
        if model.cut_through {
            "cut_through"
        } else {
            "store_and_forward"
        }
        .into()
    });
    one_of(
        "switch.forwarding",
        forwarding,
        &["store_and_forward", "cut_through"],
    )?;
    let cut_through = forwarding == "cut_through";
    let scheme = crate::config::scheme::resolve_scheme("switch.scheme", &mut s.scheme)?;
    let nic_scheme =
        crate::config::scheme::resolve_scheme("host.nic_scheme", &mut sc.host.nic_scheme)?;
    if matches!(nic_scheme, crate::scheme::SchemeSpec::Custom { .. }) {
        return Err(err(
            "host.nic_scheme.kind",
            "\"python\"",
            "a built-in scheme (custom schemes run on switches)",
        ));
    }
    let least = FullFrame {
        bytes: tech.frame_bytes(tcp.mss_bytes + TCP_IP_HEADER_BYTES) as u64,
        mss_bytes: tcp.mss_bytes,
    };
    let overrides = scheme_overrides(&mut s.overrides, graph, &s.buffer, least)?;
    let shared = buffers(s, graph, least)?;
    let p2p = s
        .port_to_port_latency
        .get_or_insert(crate::config::Duration(
            model.port_to_port_ps.unwrap_or(preset_latency),
        ))
        .0;
    Ok(SwitchParams {
        buffer_per_port_bytes: s.buffer_per_port.0,
        shared_buffer_bytes: shared,
        input_buffers: match s.buffer.as_str() {
            "per_input_port" => crate::net::InputBuffers::PerInput,
            "per_voq" => crate::net::InputBuffers::PerVoq,
            // "per_port" and "shared": `one_of` above allowed nothing else.
            _ => crate::net::InputBuffers::No,
        },
        dt_alpha: s.dt_alpha,
        port_to_port_ps: p2p,
        forwarding: if cut_through {
            Forwarding::CutThrough
        } else {
            Forwarding::StoreAndForward
        },
        scheme,
        overrides,
        nic_scheme,
        seed: sc.seed,
        pfc: match sc.switch.pfc.as_mut() {
            Some(p) => Some(p.resolve("switch.pfc")?),
            None => None,
        },
    })
}

/// The least buffer a port may have: one full-size frame at the transport's MSS.
#[derive(Clone, Copy)]
pub(super) struct FullFrame {
    pub bytes: u64,
    pub mss_bytes: u32,
}

/// A buffer per port (`path`): at least one full-size frame, at most 1 TiB.
fn per_port_buffer(
    path: &str,
    b: crate::config::Bytes,
    least: FullFrame,
) -> Result<u64, ConfigError> {
    if b.0 < least.bytes || b.0 > MAX_BUFFER_BYTES {
        return Err(err(
            path,
            b,
            format!(
                "at least one full-size frame ({} bytes at transport.mss = {}), at most 1TiB",
                least.bytes, least.mss_bytes
            ),
        ));
    }
    Ok(b.0)
}

/// `switch.buffer_per_port` and `shared_buffer`: in range and at least one full frame;
/// returns the shared buffer's size when the buffer is shared.
pub(super) fn buffers(
    s: &mut crate::config::SwitchCfg,
    graph: &Graph,
    least: FullFrame,
) -> Result<Option<u64>, ConfigError> {
    per_port_buffer("switch.buffer_per_port", s.buffer_per_port, least)?;
    if let Some(b) = s.shared_buffer.filter(|b| b.0 > MAX_BUFFER_BYTES) {
        return Err(err("switch.shared_buffer", b, "at most 1TiB"));
    }
    let shared = if s.buffer == "shared" {
        let max_ports = graph_max_switch_ports(graph);
        let total = *s.shared_buffer.get_or_insert(crate::config::Bytes(
            s.buffer_per_port.0.saturating_mul(max_ports),
        ));
        if total.0 < least.bytes {
            return Err(err(
                "switch.shared_buffer",
                total,
                format!("at least one full-size frame ({} bytes)", least.bytes),
            ));
        }
        if !(s.dt_alpha.is_finite() && s.dt_alpha > 0.0 && s.dt_alpha <= 1000.0) {
            return Err(err(
                "switch.dt_alpha",
                s.dt_alpha,
                "a number greater than 0, at most 1000 (1 is the usual dynamic threshold)",
            ));
        }
        Some(total.0)
    } else {
        only_for(
            "switch.shared_buffer",
            &s.shared_buffer,
            "switch.buffer = \"shared\" (it is",
            &s.buffer,
        )?;
        None
    };
    Ok(shared)
}

/// `switch.overrides`: each names the tiers or switches its scheme or buffer per port is
/// for (`buffer` the switches' buffer architecture; `least` the least buffer).
pub(super) fn scheme_overrides(
    list: &mut [crate::config::OverrideCfg],
    graph: &Graph,
    buffer: &str,
    least: FullFrame,
) -> Result<Vec<crate::topology::build::SwitchOverride>, ConfigError> {
    let mut overrides = Vec::new();
    for (i, o) in list.iter_mut().enumerate() {
        let at = format!("switch.overrides[{i}]");
        let spec = match &mut o.scheme {
            Some(v) => Some(crate::config::scheme::resolve_scheme(
                &format!("{at}.scheme"),
                v,
            )?),
            None => None,
        };
        let buffer_per_port_bytes = override_buffer(&at, o.buffer_per_port, buffer, least)?;
        if spec.is_none() && buffer_per_port_bytes.is_none() {
            return Err(err(
                &at,
                "neither scheme nor buffer_per_port",
                "scheme = .. and/or buffer_per_port = .. for the switches it names",
            ));
        }
        let tiers = match &o.tiers {
            Some(t) => t
                .iter()
                .map(|&v| int_in(&format!("{at}.tiers"), v, 0, 255).map(|v| v as u8))
                .collect::<Result<Vec<_>, _>>()?,
            None => vec![],
        };
        let names = o.switches.clone().unwrap_or_default();
        for n in &names {
            if !graph
                .nodes
                .iter()
                .any(|nd| nd.kind == crate::net::NodeKind::Switch && &nd.name == n)
            {
                return Err(err(&format!("{at}.switches"), format!("{n:?}"), "names of switches in the topology (see summary.json's switches, e.g. \"tor0\")"));
            }
        }
        if tiers.is_empty() && names.is_empty() {
            return Err(err(
                &at,
                "neither tiers nor switches",
                "tiers = [..] or switches = [..] saying which switches the scheme is for",
            ));
        }
        overrides.push(crate::topology::build::SwitchOverride {
            tiers,
            switches: names,
            spec,
            buffer_per_port_bytes,
        });
    }
    Ok(overrides)
}

/// An override's `buffer_per_port`: as `switch.buffer_per_port`, and only where each port
/// (or input port) has its own buffer.
fn override_buffer(
    at: &str,
    b: Option<crate::config::Bytes>,
    buffer: &str,
    least: FullFrame,
) -> Result<Option<u64>, ConfigError> {
    let Some(b) = b else { return Ok(None) };
    let path = format!("{at}.buffer_per_port");
    if buffer == "shared" {
        return Err(err(
            &path,
            b,
            "no value with switch.buffer = \"shared\" (one buffer per switch: set switch.shared_buffer)",
        ));
    }
    per_port_buffer(&path, b, least).map(Some)
}

pub(super) fn graph_max_switch_ports(g: &Graph) -> u64 {
    let mut deg = vec![0u64; g.nodes.len()];
    for l in &g.links {
        deg[l.a as usize] += 1;
        deg[l.b as usize] += 1;
    }
    g.nodes
        .iter()
        .zip(deg)
        .filter(|(n, _)| n.kind == crate::net::NodeKind::Switch)
        .map(|(_, d)| d)
        .max()
        .unwrap_or(1)
}
