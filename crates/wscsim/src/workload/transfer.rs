//! One transfer of a workload's over the run's transport: a TCP connection of its own, or
//! a message of RoCEv2, NDP, EQDS or Homa (`transport.kind`), recorded in the flows table (with its
//! ideal time, for the slowdown table) and followed to its last byte. The flows and
//! collective workloads start theirs here.

use super::{AppSched, Ctx};
use crate::engine::{TimePs, NEVER};
use crate::metrics::FlowRecord;
use crate::transport::{HostPath, MessageTransport};

/// An application's transfers: the flow record of each, by connection (or message) id.
#[derive(Clone, Debug, Default)]
pub struct Transfers {
    /// Flows are messages of this transport, not TCP connections.
    pub over: Option<MessageTransport>,
    /// Flow record of each connection this application opened, by connection id (ids are
    /// dense over a run, but not in opening order when TCP is kept by part, and TCP's are
    /// used again once closed).
    records: Vec<u32>,
}

impl Transfers {
    pub fn new(over: Option<MessageTransport>) -> Self {
        Transfers {
            over,
            records: Vec::new(),
        }
    }

    /// Sends `size` bytes from `src` to `dst` now for application `app` (which hears of
    /// them as `Note::Delivered` on the returned connection); `dscp` is a TCP connection's
    /// class (a message takes its transport's).
    pub fn start(
        &mut self,
        ctx: &mut Ctx<impl AppSched>,
        app: u32,
        (src, dst): (u32, u32),
        (size, dscp): (u64, u8),
    ) -> u32 {
        let t = &mut *ctx.transports;
        let mut path = HostPath::new(ctx.net, ctx.hosts, ctx.ev);
        let (conn, payload, header, dscp) = match self.over {
            None => {
                let conn = t.tcp.open(src, dst, app, app);
                t.tcp.set_dscp(conn, dscp);
                let mss = t.tcp.params().mss_bytes;
                (conn, mss, crate::packet::TCP_IP_HEADER_BYTES, dscp)
            }
            Some(MessageTransport::Roce) => (
                t.roce.send(&mut path, src, dst, Some(app), size),
                t.roce.spec.payload_bytes,
                crate::transport::roce::DATA_HEADER_BYTES,
                t.roce.spec.dscp,
            ),
            Some(MessageTransport::Ndp) => (
                t.ndp.send(&mut path, (src, dst), Some(app), size),
                t.ndp.payload_bytes,
                crate::transport::ndp::HEADER_BYTES,
                0,
            ),
            Some(MessageTransport::Eqds) => (
                t.eqds.send(&mut path, (src, dst), Some(app), size),
                t.eqds.payload_bytes,
                crate::transport::eqds::HEADER_BYTES,
                0,
            ),
            Some(MessageTransport::Homa) => (
                t.homa.send(&mut path, (src, dst), Some(app), size),
                t.homa.payload_bytes,
                crate::transport::homa::HEADER_BYTES,
                0,
            ),
        };
        let ideal_ps = ctx.net.ideal_transfer_ps((src, dst), size, payload, header);
        self.record(ctx, (conn, src, dst), (size, dscp), ideal_ps);
        if self.over.is_none() {
            let path = &mut HostPath::new(ctx.net, ctx.hosts, ctx.ev);
            ctx.transports.tcp.write(path, conn, size);
        }
        conn
    }

    /// Records connection `conn` from `src` to `dst`, starting now.
    fn record(
        &mut self,
        ctx: &mut Ctx<impl AppSched>,
        (conn, src, dst): (u32, u32, u32),
        (size, dscp): (u64, u8),
        ideal_ps: TimePs,
    ) {
        let idx = conn as usize;
        if self.records.len() <= idx {
            self.records.resize(idx + 1, u32::MAX);
        }
        self.records[idx] = ctx.metrics.flows.len() as u32;
        ctx.metrics.flows.push(FlowRecord {
            flow_id: conn,
            src,
            dst,
            size_bytes: size,
            start_ps: ctx.ev.now(),
            end_ps: NEVER,
            bytes_received: 0,
            ideal_ps,
            dscp,
            tcp: self.over.is_none(),
        });
    }

    /// Connection `conn` delivered `total` bytes so far: its flow record's index if that
    /// completes it now.
    pub fn on_delivered(
        &mut self,
        conn: u32,
        total: u64,
        ctx: &mut Ctx<impl AppSched>,
    ) -> Option<usize> {
        let &rec = self
            .records
            .get(conn as usize)
            .filter(|&&r| r != u32::MAX)?;
        let f = &mut ctx.metrics.flows[rec as usize];
        f.bytes_received = total;
        if total >= f.size_bytes && f.end_ps == NEVER {
            f.end_ps = ctx.ev.now();
            return Some(rec as usize);
        }
        None
    }
}
