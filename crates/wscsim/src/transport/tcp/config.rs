//! `[transport]`: TCP's parameters, their defaults and checks, and the per-connection rules
//! of the host's kernel. (`kind` is the workloads' choice of TCP or UDP for their flows;
//! it sits in this section because scenarios have always put it there.)

use super::cc::Variant;
use super::{Recovery, TcpParams};
use crate::check::{err, in_range, int_in, one_of, ConfigError};
use crate::net::link::LinkTech;
use crate::packet::TCP_IP_HEADER_BYTES;
use crate::units::{Bytes, Duration};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransportCfg {
    /// "tcp", "udp", "roce" (RoCEv2 queue pairs), "ndp", "homa" or "eqds" (the last four:
    /// the flows and collective workloads).
    #[serde(default = "d_tcp")]
    pub kind: String,
    /// "newreno" or "cubic".
    #[serde(default = "d_variant")]
    pub variant: String,
    #[serde(default = "d_rto_min")]
    pub rto_min: Duration,
    #[serde(default = "d_rto_max")]
    pub rto_max: Duration,
    /// Default: the host link's MTU minus 40 bytes of IPv4 and TCP headers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mss: Option<Bytes>,
    /// Initial congestion window in segments.
    #[serde(default = "d_iw")]
    pub initial_window: i64,
    #[serde(default = "d_rwnd")]
    pub rcv_window: Bytes,
    #[serde(default = "d_true")]
    pub delayed_ack: bool,
    #[serde(default = "d_delack")]
    pub delayed_ack_timeout: Duration,
    #[serde(default)]
    pub ecn: bool,
    /// TCP small queues: bytes of one connection allowed to wait in its host's NIC queue
    /// ("0B" for no limit).
    #[serde(default = "d_tsq")]
    pub tsq_limit: Bytes,
    /// Selective acknowledgements and SACK-based recovery (on in Linux by default).
    #[serde(default = "d_true")]
    pub sack: bool,
    /// Whose loss recovery and timers: "rfc" (RFC 6675 recovery, RFC 6298 timeout, exact
    /// timers), "linux_2_6_39" or "linux_3_5"; default the host stack's kernel, else "rfc".
    /// The five keys below default to the rules' choices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rules: Option<String>,
    /// The window's course in SACK recovery: "rfc6675", "prr" or "rate_halving".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery: Option<String>,
    /// RFC 3042: the first two duplicate ACKs each let one new segment out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limited_transmit: Option<bool>,
    /// "rfc6298" (max(rto_min, srtt + 4 rttvar)) or "linux" (srtt + max(4 rttvar, rto_min)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rto_formula: Option<String>,
    /// The timer clock of retransmission timeouts and RTT samples ("0s": exact; Linux:
    /// one jiffy, 1 / HZ).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rto_granularity: Option<Duration>,
    /// Linux's quick-ack mode (immediate ACKs at a connection's start, after a long gap in
    /// the data and after a duplicate segment); default on for the Linux rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quickack: Option<bool>,
    /// Tail loss probes (Linux 3.10 and later, with SACK); off by default (neither of
    /// DIABLO's kernels had them).
    #[serde(default)]
    pub tlp: bool,
    /// RACK loss detection (Linux 4.4 and later, with SACK); off by default (neither of
    /// DIABLO's kernels had it).
    #[serde(default)]
    pub rack: bool,
    /// The retransmission timeout before any RTT sample (a handshake's SYN): default the
    /// rules' (3 s for linux_2_6_39, 1 s otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_rto: Option<Duration>,
}

fn d_tcp() -> String {
    "tcp".into()
}
fn d_variant() -> String {
    "cubic".into()
}
fn d_rto_min() -> Duration {
    Duration(200 * crate::engine::PS_PER_MS)
}
fn d_rto_max() -> Duration {
    Duration(120 * crate::engine::PS_PER_S)
}

fn d_iw() -> i64 {
    10
}
fn d_rwnd() -> Bytes {
    Bytes(6 * 1024 * 1024)
}
/// Linux's tcp_limit_output_bytes default since 4.x (262,144 bytes).
fn d_tsq() -> Bytes {
    Bytes(256 * 1024)
}
fn d_true() -> bool {
    true
}
fn d_delack() -> Duration {
    Duration(40 * crate::engine::PS_PER_MS)
}

impl Default for TransportCfg {
    fn default() -> Self {
        serde_json::from_str("{}").unwrap()
    }
}

/// `[transport]`: its variant and timers, checked.
pub(crate) fn resolve_transport(
    tr: &mut TransportCfg,
    tech: &LinkTech,
) -> Result<TcpParams, ConfigError> {
    check_transport(tr)?;
    let max_mss = u64::from(tech.mtu_bytes - TCP_IP_HEADER_BYTES);
    let mss = *tr.mss.get_or_insert(Bytes(max_mss));
    let mtu_note = format!(
        "from 64 to {max_mss} bytes (the {}-byte MTU of topology.link.technology = {:?}, less 40 bytes of IPv4 and TCP headers)",
        tech.mtu_bytes, tech.name
    );
    in_range("transport.mss", mss, Bytes(64), Bytes(max_mss), mtu_note)?;
    let iw = int_in("transport.initial_window", tr.initial_window, 1, 10_000)?;
    let window_note = format!(
        "from one segment (transport.mss = {}) to 1GiB (TCP's largest scaled window)",
        mss.0
    );
    in_range(
        "transport.rcv_window",
        tr.rcv_window,
        mss,
        Bytes(1 << 30),
        window_note,
    )?;
    if tr.delayed_ack && tr.delayed_ack_timeout.0 == 0 {
        return Err(err(
            "transport.delayed_ack_timeout",
            tr.delayed_ack_timeout,
            "a positive duration (or transport.delayed_ack = false)",
        ));
    }
    Ok(TcpParams {
        variant: match tr.variant.as_str() {
            "cubic" => Variant::Cubic,
            "dctcp" => Variant::Dctcp,
            "pfabric" => Variant::PFabric,
            _ => Variant::NewReno,
        },
        mss_bytes: mss.0 as u32,
        initial_window_segments: iw,
        rto_min_ps: tr.rto_min.0,
        rto_max_ps: tr.rto_max.0,
        rcv_window_bytes: tr.rcv_window.0,
        delayed_ack: tr.delayed_ack,
        delayed_ack_ps: tr.delayed_ack_timeout.0,
        ecn: tr.ecn,
        tsq_limit_bytes: tr.tsq_limit.0,
        sack: tr.sack,
        recovery: Recovery::Rfc6675,
        limited_transmit: false,
        linux_rto: false,
        rto_granularity_ps: 0,
        seed: 0,
        quickack: false,
        tlp: tr.tlp,
        initial_rto_ps: 0,
        rack: tr.rack,
    })
}

/// `[transport]`'s choices and timers that depend on nothing else.
fn check_transport(tr: &mut TransportCfg) -> Result<(), ConfigError> {
    one_of(
        "transport.kind",
        &tr.kind,
        &["tcp", "udp", "roce", "ndp", "homa", "eqds"],
    )?;
    one_of(
        "transport.variant",
        &tr.variant,
        &["newreno", "cubic", "dctcp", "pfabric"],
    )?;
    if tr.variant == "dctcp" {
        // DCTCP needs ECN-capable packets; say so in the resolved scenario.
        tr.ecn = true;
    }
    if tr.rto_min.0 == 0 {
        return Err(err(
            "transport.rto_min",
            tr.rto_min,
            "a positive duration such as \"200ms\" or \"1ms\"",
        ));
    }
    // Both find losses through SACK's scoreboard; without it they would do nothing.
    for (path, on) in [("transport.tlp", tr.tlp), ("transport.rack", tr.rack)] {
        if on && !tr.sack {
            return Err(err(
                path,
                on,
                "false unless transport.sack = true (it needs SACK)",
            ));
        }
    }
    if tr.rto_max.0 < tr.rto_min.0 {
        return Err(err(
            "transport.rto_max",
            tr.rto_max,
            format!("at least transport.rto_min ({})", tr.rto_min),
        ));
    }
    Ok(())
}

/// `transport.rules` and the keys it sets (`recovery`, `limited_transmit`, `rto_formula`,
/// `rto_granularity`, `quickack`), each written back. The host stack's kernel's rules
/// (`kernel_rules`, `host::presets::StackPreset::tcp_rules`) are the default:
/// 2.6.39 recovers by rate halving, 3.5 (from 3.2) by proportional rate reduction; both
/// have limited transmit, quick-ack mode, Linux's timeout formula and timers on the jiffy
/// clock (the host noise's tick, else HZ 250).
pub(crate) fn resolve_tcp_rules(
    tr: &mut TransportCfg,
    kernel_rules: &str,
    host: &crate::host::HostSpec,
    tcp: &mut TcpParams,
) -> Result<(), ConfigError> {
    let rules = tr.rules.get_or_insert_with(|| kernel_rules.into());
    one_of(
        "transport.rules",
        rules,
        &["rfc", "linux_2_6_39", "linux_3_5"],
    )?;
    let linux = rules != "rfc";
    let recovery = tr.recovery.get_or_insert_with(|| {
        match rules.as_str() {
            "linux_2_6_39" => "rate_halving",
            "linux_3_5" => "prr",
            _ => "rfc6675",
        }
        .into()
    });
    one_of(
        "transport.recovery",
        recovery,
        &["rfc6675", "prr", "rate_halving"],
    )?;
    tcp.recovery = match recovery.as_str() {
        "prr" => Recovery::Prr,
        "rate_halving" => Recovery::RateHalving,
        _ => Recovery::Rfc6675,
    };
    tcp.limited_transmit = *tr.limited_transmit.get_or_insert(linux);
    tcp.quickack = *tr.quickack.get_or_insert(linux);
    let formula = tr
        .rto_formula
        .get_or_insert_with(|| if linux { "linux" } else { "rfc6298" }.into());
    one_of("transport.rto_formula", formula, &["rfc6298", "linux"])?;
    tcp.linux_rto = formula == "linux";
    let initial_s = if rules == "linux_2_6_39" { 3 } else { 1 };
    resolve_timer_rules(tr, linux, initial_s, host, tcp)
}

/// The timer rules: the timer clock (Linux's jiffy: the host noise's tick, else HZ 250)
/// and the RTO before any RTT sample (`initial_s` seconds unless given).
fn resolve_timer_rules(
    tr: &mut TransportCfg,
    linux: bool,
    initial_s: u64,
    host: &crate::host::HostSpec,
    tcp: &mut TcpParams,
) -> Result<(), ConfigError> {
    let hz = if host.noise.tick_hz > 0.0 {
        host.noise.tick_hz
    } else {
        250.0
    };
    let jiffy = Duration((crate::engine::PS_PER_S as f64 / hz).round() as u64);
    let g = tr
        .rto_granularity
        .get_or_insert(if linux { jiffy } else { Duration(0) })
        .0;
    if g > 0 && g > tcp.rto_min_ps.max(crate::engine::PS_PER_MS) * 1000 {
        return Err(err(
            "transport.rto_granularity",
            Duration(g),
            "0s (exact timers) or a timer tick at most 1000 times transport.rto_min",
        ));
    }
    tcp.rto_granularity_ps = g;
    let initial = tr
        .initial_rto
        .get_or_insert(Duration(initial_s * crate::engine::PS_PER_S))
        .0;
    let (lo, hi) = (Duration(tcp.rto_min_ps), Duration(tcp.rto_max_ps));
    let allowed = "a duration from transport.rto_min to transport.rto_max";
    in_range("transport.initial_rto", Duration(initial), lo, hi, allowed)?;
    tcp.initial_rto_ps = initial;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::PS_PER_MS;

    /// A Linux host stack brings its kernel's rules; they are written back; a bad value is
    /// refused with the field's name.
    #[test]
    fn rules_follow_the_host_kernel() {
        let resolve = |host: &str, transport: &str| {
            let json = format!(
                r#"{{"topology":{{"kind":"single_switch","hosts":2}},"host":{{"stack":"{host}"}},
                "transport":{{"kind":"tcp"{transport}}},"workload":{{"kind":"none"}}}}"#
            );
            crate::config::resolve(crate::config::parse_json(&json)?)
                .map(|r| (r.tcp, r.scenario.transport))
        };
        let (p, t) = resolve("linux_2_6_39", "").unwrap();
        assert_eq!(p.recovery, Recovery::RateHalving);
        assert!(p.limited_transmit && p.linux_rto && p.quickack);
        assert_eq!(p.rto_granularity_ps, 4 * PS_PER_MS);
        assert_eq!(t.rules.as_deref(), Some("linux_2_6_39"));
        let (p, _) = resolve("linux_3_5", "").unwrap();
        assert_eq!(p.recovery, Recovery::Prr);
        let (p, t) = resolve("ideal", "").unwrap();
        assert_eq!(
            (p.recovery, p.limited_transmit, p.linux_rto),
            (Recovery::Rfc6675, false, false)
        );
        assert_eq!((t.rules.as_deref(), p.rto_granularity_ps), (Some("rfc"), 0));
        let (p, _) = resolve(
            "linux_3_5",
            r#","recovery":"rfc6675","rto_granularity":"0s""#,
        )
        .unwrap();
        assert_eq!((p.recovery, p.rto_granularity_ps), (Recovery::Rfc6675, 0));
        let e = resolve("ideal", r#","recovery":"fast""#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("transport.recovery"), "{e}");
    }
}
