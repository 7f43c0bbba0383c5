//! Deficit round robin (Shreedhar and Varghese, 1996) over up to 64 queues per port.
//! Packets go to a queue by flow (a hash of the 5-tuple, as Flexplane's DRR does) or by
//! DSCP. Each visit to a backlogged queue adds its quantum to its deficit; the queue sends
//! while its head fits in the deficit; an emptied queue's deficit returns to zero. When the
//! buffer is full, the head of the longest queue is dropped to admit a packet of a shorter
//! one (the paper's buffer-stealing rule), so one flow cannot hold the whole buffer.
//!
//! Simplified: the round visits backlogged queues in index order rather than in order of
//! activation (the same shares over a round, a different order within one).

use super::{PortCtx, Verdict};
use crate::packet::PktId;

/// Scenario parameters of scheme kind "drr" (defaults are filled in by `SchemeKind::resolve`, below).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Queues (default 8, or one per quantum).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queues: Option<i64>,
    /// "flow" (5-tuple hash, default) or "dscp".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub classify: Option<String>,
    /// Every queue's quantum (default 1518 bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quantum: Option<crate::units::Bytes>,
    /// One quantum per queue, instead of quantum.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quanta: Option<Vec<crate::units::Bytes>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DrrClassify {
    Flow,
    Dscp,
}

#[derive(Clone, Debug)]
pub struct Drr {
    pub classify_by: DrrClassify,
    /// Bytes added per visit, per queue.
    pub quanta: Vec<u32>,
    deficit: Vec<u32>,
    /// Queue in the middle of its visit (its quantum already added).
    current: Option<usize>,
    /// Where the round looks for the next backlogged queue.
    cursor: usize,
}

impl Drr {
    pub fn new(classify_by: DrrClassify, quanta: Vec<u32>) -> Self {
        let n = quanta.len();
        Drr {
            classify_by,
            quanta,
            deficit: vec![0; n],
            current: None,
            cursor: 0,
        }
    }
}

/// Kind "drr" resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    pub classify: DrrClassify,
    pub quanta: Vec<u32>,
}

impl super::SchemeKind for Drr {
    const NAME: &'static str = "drr";
    type Params = Params;
    type Spec = Spec;

    /// Checks the scenario's parameters and fills in their defaults.
    fn resolve(c: &mut Params, path: &str) -> Result<Spec, crate::check::ConfigError> {
        let p = |k: &str| format!("{path}.{k}");

        let by = c.classify.get_or_insert("flow".into()).clone();
        let classify = match by.as_str() {
            "flow" => DrrClassify::Flow,
            "dscp" => DrrClassify::Dscp,
            _ => {
                return Err(crate::check::err(
                    &p("classify"),
                    format!("{by:?}"),
                    "\"flow\" (5-tuple hash) or \"dscp\"",
                ))
            }
        };
        let quanta: Vec<u64> = match (&c.quanta, c.quantum) {
            (Some(_), Some(_)) => {
                return Err(crate::check::err(
                    &p("quantum"),
                    "both quantum and quanta",
                    "one of them: quantum (every queue) or quanta (one per queue)",
                ))
            }
            (Some(list), None) => {
                let n = *c.queues.get_or_insert(list.len() as i64);
                if n != list.len() as i64 {
                    return Err(crate::check::err(
                        &p("quanta"),
                        format!("{} quanta", list.len()),
                        format!("one per queue ({n})"),
                    ));
                }
                list.iter().map(|b| b.0).collect()
            }
            (None, q) => {
                let q = q.unwrap_or(crate::units::Bytes(1518));
                c.quantum = Some(q);
                let n = *c.queues.get_or_insert(8);
                vec![q.0; n.clamp(0, 1 << 20) as usize]
            }
        };
        super::queue_count(&p("queues"), c.queues.unwrap())?;
        for (i, &q) in quanta.iter().enumerate() {
            let at = if c.quanta.is_some() {
                format!("{path}.quanta[{i}]")
            } else {
                p("quantum")
            };
            let allowed = "from 64B to 1GiB (one full-size frame, 1518B, is usual)";
            crate::check::in_range(
                &at,
                crate::units::Bytes(q),
                crate::units::Bytes(64),
                crate::units::Bytes(1 << 30),
                allowed,
            )?;
        }
        Ok(Spec {
            classify,
            quanta: quanta.into_iter().map(|q| q as u32).collect(),
        })
    }

    fn queues(spec: &Spec, _voqs: u32) -> u32 {
        spec.quanta.len() as u32
    }

    fn build(spec: &Spec, _seed: u64, _port: u32) -> Self {
        Drr::new(spec.classify, spec.quanta.clone())
    }

    #[inline]
    fn classify(&mut self, ctx: &mut PortCtx, pkt: PktId, _in_port: u32) -> usize {
        let p = ctx.packet(pkt);
        let n = ctx.queues.len() as u64;
        let key = match self.classify_by {
            DrrClassify::Flow => crate::engine::rng::mix64(p.hash as u64),
            DrrClassify::Dscp => p.dscp as u64,
        };
        // The same remainder without a division when the count is a power of two.
        if n.is_power_of_two() {
            (key & (n - 1)) as usize
        } else {
            (key % n) as usize
        }
    }

    #[inline]
    fn enqueue(&mut self, ctx: &mut PortCtx, pkt: PktId, queue: usize) -> Verdict {
        let bytes = ctx.packet(pkt).frame_bytes as u64;
        if ctx.fits(bytes) {
            ctx.push(queue, pkt);
            return Verdict::Accepted;
        }
        // Full: steal from the longest queue if that is another, longer one and its head
        // makes room.
        let longest = (0..ctx.queues.len())
            .max_by_key(|&q| (ctx.queues[q].bytes, std::cmp::Reverse(q)))
            .unwrap_or(queue);
        if longest == queue || ctx.queues[longest].bytes <= ctx.queues[queue].bytes + bytes {
            return Verdict::Dropped;
        }
        let head = ctx.queues[longest].head;
        if *ctx.bytes_queued - ctx.packet(head).frame_bytes as u64 + bytes > ctx.limit_bytes {
            return Verdict::Dropped;
        }
        ctx.pop(longest);
        if ctx.queues[longest].is_empty() {
            self.deficit[longest] = 0;
            if self.current == Some(longest) {
                self.current = None;
            }
        }
        ctx.push(queue, pkt);
        Verdict::DroppedOther(head)
    }

    #[inline]
    fn schedule(&mut self, ctx: &mut PortCtx) -> Option<PktId> {
        if *ctx.pkts_queued == 0 {
            return None;
        }
        loop {
            let q = match self.current {
                Some(q) if !ctx.queues[q].is_empty() => q,
                _ => {
                    let q = ctx.next_nonempty_from(self.cursor)?;
                    self.deficit[q] += self.quanta[q];
                    self.current = Some(q);
                    self.cursor = if q + 1 == ctx.queues.len() { 0 } else { q + 1 };
                    q
                }
            };
            let size = ctx.packet(ctx.queues[q].head).frame_bytes;
            if size <= self.deficit[q] {
                self.deficit[q] -= size;
                let id = ctx.pop(q);
                if ctx.queues[q].is_empty() {
                    self.deficit[q] = 0;
                    self.current = None;
                } else if self.deficit[q] == 0 {
                    // No packet fits in nothing: the visit ends now, as the next call would
                    // end it (without looking at the next head).
                    self.current = None;
                }
                return id;
            }
            // Out of deficit: the visit ends and the queue keeps what is left for next round.
            self.current = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::Fixture;
    use super::super::Scheme;
    use super::*;
    use crate::packet::Packet;
    use crate::scheme::SchemeKind;

    /// Keeps every queue backlogged with packets of assorted sizes and counts bytes sent.
    #[test]
    fn byte_shares_follow_quanta_within_one_quantum() {
        let quanta = vec![1500u32, 3000, 4500, 600];
        let n = quanta.len();
        let mut f = Fixture::new(n);
        let mut s = Scheme::Drr(Box::new(Drr::new(DrrClassify::Dscp, quanta.clone())));
        let sizes = [64u32, 1518, 700, 1518, 300, 1200];
        let mut k = 0;
        let mut refill = |f: &mut Fixture, s: &mut Scheme| {
            for q in 0..n {
                while f.queues[q].len < 4 {
                    k += 1;
                    let id = f.pkt(Packet {
                        frame_bytes: sizes[k % sizes.len()],
                        dscp: q as u8,
                        ..Default::default()
                    });
                    let c = s.classify(&mut f.ctx(u64::MAX), id, 0);
                    s.enqueue(&mut f.ctx(u64::MAX), id, c);
                }
            }
        };
        let mut sent = vec![0u64; n];
        let total_quanta: u64 = quanta.iter().map(|&q| q as u64).sum();
        let rounds = 2000;
        for _ in 0..rounds * total_quanta / 900 {
            refill(&mut f, &mut s);
            let id = s.schedule(&mut f.ctx(u64::MAX)).unwrap();
            let p = f.pool.get(id);
            sent[p.dscp as usize] += p.frame_bytes as u64;
            f.pool.free(id);
        }
        // Over R rounds queue i sends R * quantum_i bytes, give or take one maximum packet
        // plus one quantum (the round in progress).
        let r = sent[0] as f64 / quanta[0] as f64;
        for q in 0..n {
            let expect = r * quanta[q] as f64;
            assert!(
                (sent[q] as f64 - expect).abs() <= 2.0 * (1518.0 + quanta[q] as f64),
                "queue {q}: {sent:?}"
            );
        }
        assert!(r > 100.0, "enough rounds ran: {r}");
    }

    #[test]
    fn full_buffer_steals_from_the_longest_queue() {
        let mut f = Fixture::new(2);
        let mut s = Drr::new(DrrClassify::Dscp, vec![1500, 1500]);
        for i in 0..3 {
            let id = f.pkt(Packet {
                frame_bytes: 1000,
                seq: i,
                dscp: 0,
                ..Default::default()
            });
            assert_eq!(s.enqueue(&mut f.ctx(3000), id, 0), Verdict::Accepted);
        }
        let id = f.pkt(Packet {
            frame_bytes: 1000,
            seq: 9,
            dscp: 1,
            ..Default::default()
        });
        match s.enqueue(&mut f.ctx(3000), id, 1) {
            Verdict::DroppedOther(o) => assert_eq!(f.pool.get(o).seq, 0, "head of the long queue"),
            v => panic!("{v:?}"),
        }
        let id = f.pkt(Packet {
            frame_bytes: 1000,
            seq: 10,
            dscp: 0,
            ..Default::default()
        });
        assert_eq!(
            s.enqueue(&mut f.ctx(3000), id, 0),
            Verdict::Dropped,
            "the longest queue's own arrival"
        );
        assert_eq!(f.bytes, 3000);
    }

    #[test]
    fn flows_hash_across_queues() {
        let mut f = Fixture::new(8);
        let mut s = Drr::new(DrrClassify::Flow, vec![1500; 8]);
        let mut used = [0u32; 8];
        for flow in 0..800u32 {
            let h = crate::packet::five_tuple_hash(flow, 1, 1000, 5001, crate::packet::Proto::TCP);
            let id = f.pkt(Packet {
                hash: h,
                ..Default::default()
            });
            used[s.classify(&mut f.ctx(u64::MAX), id, 0)] += 1;
        }
        assert!(used.iter().all(|&u| (60..140).contains(&u)), "{used:?}");
    }
}
