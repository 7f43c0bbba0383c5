//! RoCEv2's congestion controls (`roce.congestion`), one variant each: none (line rate),
//! DCQCN (`transport::dcqcn`: ECN marks, CNPs), TIMELY (`transport::timely`: RTT
//! gradient), HPCC (`transport::hpcc`: in-band telemetry, a window) and Swift
//! (`transport::swift`: a delay target that scales with hops and window, a window). A control is its
//! own file; this one names them, resolves `roce.<name>` and hands a queue pair's events
//! to the one it runs.

use super::{dcqcn, hpcc, swift, timely};
use crate::check::{err, one_of, ConfigError};
use crate::engine::TimePs;
use crate::packet::Packet;

/// A resolved `roce.congestion` with its parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Congestion {
    None,
    Dcqcn(dcqcn::Spec),
    Timely(timely::Spec),
    Hpcc(hpcc::Spec),
    Swift(swift::Spec),
}

/// The names `roce.congestion` takes.
pub const NAMES: [&str; 5] = ["dcqcn", "timely", "hpcc", "swift", "none"];

impl Congestion {
    /// Resolves `roce.congestion` (`name`) and its section; the others must be absent.
    pub fn resolve(
        name: &str,
        dcqcn: &mut Option<dcqcn::Params>,
        timely: &mut Option<timely::Params>,
        hpcc: &mut Option<hpcc::Params>,
        swift: &mut Option<swift::Params>,
    ) -> Result<Congestion, ConfigError> {
        one_of("roce.congestion", name, &NAMES)?;
        let only_for = |section: &str, given: bool| {
            if given && section != name {
                return Err(err(
                    &format!("roce.{section}"),
                    format!("a roce.{section} table"),
                    format!("one only with roce.congestion = \"{section}\" (it is \"{name}\")"),
                ));
            }
            Ok(())
        };
        only_for("dcqcn", dcqcn.is_some())?;
        only_for("timely", timely.is_some())?;
        only_for("hpcc", hpcc.is_some())?;
        only_for("swift", swift.is_some())?;
        Ok(match name {
            "dcqcn" => Congestion::Dcqcn(
                dcqcn
                    .get_or_insert_with(Default::default)
                    .resolve("roce.dcqcn")?,
            ),
            "timely" => Congestion::Timely(
                timely
                    .get_or_insert_with(Default::default)
                    .resolve("roce.timely")?,
            ),
            "hpcc" => Congestion::Hpcc(
                hpcc.get_or_insert_with(Default::default)
                    .resolve("roce.hpcc")?,
            ),
            "swift" => Congestion::Swift(
                swift
                    .get_or_insert_with(Default::default)
                    .resolve("roce.swift")?,
            ),
            _ => Congestion::None,
        })
    }

    /// Its data packets are ECN-capable (switches mark them for DCQCN).
    pub fn ecn_capable(&self) -> bool {
        matches!(self, Congestion::Dcqcn(_))
    }

    /// Its data packets collect telemetry records (`net::telemetry`).
    pub fn wants_telemetry(&self) -> bool {
        matches!(self, Congestion::Hpcc(_))
    }

    /// It sizes a window from the QP's base round trip.
    pub fn needs_base_rtt(&self) -> bool {
        matches!(self, Congestion::Hpcc(_) | Congestion::Swift(_))
    }

    /// The DCQCN parameters, if it runs DCQCN.
    pub fn dcqcn(&self) -> Option<&dcqcn::Spec> {
        match self {
            Congestion::Dcqcn(s) => Some(s),
            _ => None,
        }
    }
}

/// A queue pair's sender state of its control.
#[derive(Clone, Debug)]
pub enum Control {
    Line,
    Dcqcn(dcqcn::ReactionPoint),
    Timely(timely::Sender),
    Hpcc(hpcc::Sender),
    Swift(swift::Sender),
}

impl Control {
    /// A QP's control at `line_bps`, on a path whose empty round trip is `base_rtt_ps`,
    /// in packets of `payload_bytes`.
    pub fn new(c: &Congestion, line_bps: f64, base_rtt_ps: TimePs, payload_bytes: u32) -> Control {
        match c {
            Congestion::None => Control::Line,
            Congestion::Dcqcn(s) => Control::Dcqcn(dcqcn::ReactionPoint::new(s, line_bps)),
            Congestion::Timely(s) => Control::Timely(timely::Sender::new(s, line_bps)),
            Congestion::Hpcc(s) => Control::Hpcc(hpcc::Sender::new(s, line_bps, base_rtt_ps)),
            Congestion::Swift(_) => {
                Control::Swift(swift::Sender::new(line_bps, base_rtt_ps, payload_bytes))
            }
        }
    }

    /// Its rate now (None: line rate).
    pub fn rate_bps(&self) -> Option<f64> {
        match self {
            Control::Line => None,
            Control::Dcqcn(r) => Some(r.rate_bps),
            Control::Timely(t) => Some(t.rate_bps),
            Control::Hpcc(h) => Some(h.rate_bps),
            Control::Swift(w) => w.rate_bps(),
        }
    }

    /// Bytes it may have in flight (None: no window, rate only).
    pub fn window_bytes(&self) -> Option<u64> {
        match self {
            Control::Hpcc(h) => Some(h.window_bytes()),
            Control::Swift(w) => Some(w.window_bytes()),
            _ => None,
        }
    }

    /// An ACK or NAK for bytes below `ack_seq` arrived at `now` (`ack`: the packet, with
    /// its echoed send time or telemetry); `snd_nxt` is the next byte to send. Whether
    /// the rate changed.
    pub fn on_ack(
        &mut self,
        c: &Congestion,
        now: TimePs,
        ack: &Packet,
        ack_seq: u64,
        snd_nxt: u64,
    ) -> bool {
        match (self, c) {
            (Control::Timely(t), Congestion::Timely(s)) => {
                t.on_ack(s, now.saturating_sub(ack.ts_echo_ps), ack_seq, snd_nxt)
            }
            (Control::Hpcc(h), Congestion::Hpcc(s)) => h.on_ack(s, now, ack, (ack_seq, snd_nxt)),
            (Control::Swift(w), Congestion::Swift(s)) => {
                // The ACK echoes the links its data packet crossed: the switches are one fewer.
                let switches = u32::from(ack.src_port).saturating_sub(1);
                w.on_ack(s, now, now.saturating_sub(ack.ts_echo_ps), switches)
            }
            _ => false,
        }
    }

    /// A NAK (`timeout` false) or the ACK timeout, at `now`.
    pub fn on_loss(&mut self, c: &Congestion, now: TimePs, timeout: bool) {
        if let (Control::Swift(w), Congestion::Swift(s)) = (self, c) {
            w.on_loss(s, now, timeout);
        }
    }
}
