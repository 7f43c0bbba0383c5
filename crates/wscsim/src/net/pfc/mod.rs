//! Priority flow control (IEEE 802.1Qbb) over shared-buffer switches: lossless Ethernet.
//!
//! A switch counts the bytes each input port holds per priority (a packet's priority is its
//! DSCP, at most 7), wherever in the switch they wait. The accounting is the one Broadcom's
//! Trident and Tomahawk MMUs use and the HPCC fork of ns-3 models (`SwitchMmu`; written here
//! from that description, not copied): an input's priority first fills a small reserve of
//! its own, then draws on the switch's shared pool up to a dynamic threshold, `alpha` times
//! the pool's free bytes (Choudhury and Hahne's rule applied at ingress), and what arrives
//! beyond that goes to the input's headroom. When the threshold is reached (or the headroom
//! is entered) the switch sends a PAUSE frame for that priority back over the input's link;
//! when the input's shared bytes fall `resume_offset` below the threshold again (and its
//! headroom is empty) it sends a resume (a PAUSE of zero quanta). The headroom absorbs what
//! arrives after the pause is decided: the frame this end is sending when the PAUSE waits
//! for the wire, the PAUSE's own time on the wire and the link's propagation, the frame the
//! upstream port is sending when it arrives, and what was already on the wire (default: that
//! sum at the link's rate, from its delay and the switch's port-to-port latency).
//!
//! A paused port finishes the frame it is sending and then sends nothing of the paused
//! priority: a queue whose head is of a paused priority waits (head-of-line blocking within
//! a queue, as in a switch's FIFO), the port's other queues go on. PAUSE frames travel the
//! link as packets (`Proto::PFC`, 64 bytes, sent before any queued data when the port is
//! next free), so a pause takes effect after the link's delay, and pauses spread upstream
//! hop by hop as paused ports' queues fill their own switches' inputs.
//!
//! Lossless egress: a packet of a lossless priority is never refused by its output's
//! threshold, only by its input's headroom being full (a `headroom_drops` count; none when
//! the headroom is large enough). Simplified: one headroom per input port shared by its
//! priorities and one reserve per input counted once in the pool (as the HPCC fork does);
//! the 802.1Qbb pause timer is not modelled (a PAUSE holds until its resume, as a switch
//! refreshing its PAUSE before the quanta run out would); hosts obey PAUSE frames but send
//! none (a host's receive path drains at its own pace); lossy priorities keep the shared
//! buffer's egress thresholds and share its pool.

use crate::check::{err, ConfigError};
use crate::engine::TimePs;
use crate::units::Bytes;

mod port;
mod report;

/// Priorities of 802.1Qbb (a class-enable vector of eight bits).
pub const PRIORITIES: usize = 8;
/// A PAUSE frame: 64 bytes, the least Ethernet frame.
pub const FRAME_BYTES: u32 = 64;

/// `[switch.pfc]`: priority flow control on every switch (and obeyed by every NIC).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The priorities kept lossless, 0 to 7 (a packet's priority is its DSCP, at most 7;
    /// default all eight).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priorities: Option<Vec<i64>>,
    /// An input's priority pauses its upstream when its bytes beyond its reserve reach
    /// `alpha` times the free bytes of the switch's shared pool (default 0.125, the HPCC
    /// ns-3 fork's 1/8; at most 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
    /// Bytes each input's priority holds before it draws on the shared pool (default
    /// 4KiB, the HPCC fork's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reserve: Option<Bytes>,
    /// A paused input resumes when its shared bytes are this far below the threshold
    /// (default 3KiB, the HPCC fork's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resume_offset: Option<Bytes>,
    /// Headroom of every input port (default: computed per link, what can still arrive
    /// after a pause is decided; see the module's doc).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub headroom: Option<Bytes>,
}

/// `[switch.pfc]` resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    /// Bit p: priority p is lossless.
    pub lossless: u8,
    pub alpha: f64,
    pub reserve_bytes: u64,
    pub resume_offset_bytes: u64,
    /// None: computed per link.
    pub headroom_bytes: Option<u64>,
}

impl Params {
    /// Checks the parameters (under `path`) and fills in their defaults.
    pub fn resolve(&mut self, path: &str) -> Result<Spec, ConfigError> {
        let p = |k: &str| format!("{path}.{k}");
        let prios = self
            .priorities
            .get_or_insert_with(|| (0..PRIORITIES as i64).collect());
        if prios.is_empty() {
            return Err(err(&p("priorities"), "[]", "at least one priority, 0 to 7"));
        }
        let mut lossless = 0u8;
        for &q in prios.iter() {
            if !(0..PRIORITIES as i64).contains(&q) {
                return Err(err(&p("priorities"), q, "priorities 0 to 7"));
            }
            lossless |= 1 << q;
        }
        let alpha = crate::check::fraction(&p("alpha"), *self.alpha.get_or_insert(0.125))?;
        let reserve = self.reserve.get_or_insert(Bytes(4096)).0;
        let offset = self.resume_offset.get_or_insert(Bytes(3072)).0;
        const MAX: u64 = 1 << 40;
        for (k, v) in [("reserve", reserve), ("resume_offset", offset)] {
            if v > MAX {
                return Err(err(&p(k), Bytes(v), "at most 1TiB"));
            }
        }
        if let Some(h) = self
            .headroom
            .filter(|h| h.0 < u64::from(FRAME_BYTES) || h.0 > MAX)
        {
            return Err(err(
                &p("headroom"),
                h,
                "at least 64B (one frame), at most 1TiB",
            ));
        }
        Ok(Spec {
            lossless,
            alpha,
            reserve_bytes: reserve,
            resume_offset_bytes: offset,
            headroom_bytes: self.headroom.map(|h| h.0),
        })
    }
}

/// What a port saw of PFC, per priority.
#[derive(Clone, Copy, Debug, Default)]
pub struct PrioStats {
    /// PAUSE frames this port's switch sent upstream for this input and priority.
    pub pauses_sent: u64,
    /// Resumes it sent.
    pub resumes_sent: u64,
    /// PAUSE frames this port received (its egress of the priority was stopped).
    pub pauses_received: u64,
    /// Time this port's egress of the priority was paused.
    pub paused_ps: TimePs,
}

/// The PFC state of a network: per switch its pool, per input port and priority its
/// bytes, per port what it has announced and what it obeys. Every entry belongs to one
/// node, so partitions (and threads) touch disjoint entries.
#[derive(Clone, Debug)]
pub struct Pfc {
    pub spec: Spec,
    /// Per switch: bytes of the shared pool lossless inputs may use (its buffer less every
    /// input's headroom and reserve), and bytes they use.
    pool_avail: Vec<u64>,
    pool_used: Vec<u64>,
    /// Per port (as an input): its headroom.
    headroom: Vec<u64>,
    /// Per port and priority (`port * 8 + priority`): bytes held (reserve and shared
    /// parts), and bytes in the headroom.
    ingress: Vec<u64>,
    in_headroom: Vec<u64>,
    /// Per port: the priorities it has paused upstream (its last announcement or the one
    /// waiting), and those whose state it has yet to announce.
    xoff: Vec<u8>,
    announce: Vec<u8>,
    /// Per port: the priorities its egress obeys a pause for.
    paused: Vec<u8>,
    /// Per port and priority: when its pause began.
    paused_since: Vec<TimePs>,
    stats: Vec<PrioStats>,
    /// Per port (as an input) and priority: lossless packets dropped because its
    /// headroom was full.
    pub headroom_drops: Vec<u64>,
}

#[inline]
fn at(port: u32, prio: usize) -> usize {
    port as usize * PRIORITIES + prio
}

/// The priority PFC gives a packet of DSCP `dscp`.
#[inline]
pub fn priority_of(dscp: u8) -> usize {
    usize::from(dscp.min(PRIORITIES as u8 - 1))
}

/// What a port answers to PFC after a change: nothing, or a frame to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Announce {
    Nothing,
    Frame,
}

impl Pfc {
    /// PFC on a network of `ports` ports and switches whose shared buffers are
    /// `buffer_bytes`, each port with its headroom (`headroom[port]`, 0 for a host's)
    /// and each switch with its input ports (`inputs[switch]`). Fails naming the switch
    /// whose buffer cannot hold its inputs' headroom and reserve.
    pub fn new(
        spec: Spec,
        buffer_bytes: &[u64],
        inputs: &[Vec<u32>],
        headroom: Vec<u64>,
    ) -> Result<Pfc, (usize, u64)> {
        let n = headroom.len();
        let mut pool_avail = Vec::with_capacity(buffer_bytes.len());
        for (s, (&total, ins)) in buffer_bytes.iter().zip(inputs).enumerate() {
            let kept: u64 = ins
                .iter()
                .map(|&p| headroom[p as usize] + spec.reserve_bytes)
                .sum();
            if kept >= total {
                return Err((s, kept));
            }
            pool_avail.push(total - kept);
        }
        Ok(Pfc {
            spec,
            pool_used: vec![0; pool_avail.len()],
            pool_avail,
            headroom,
            ingress: vec![0; n * PRIORITIES],
            in_headroom: vec![0; n * PRIORITIES],
            xoff: vec![0; n],
            announce: vec![0; n],
            paused: vec![0; n],
            paused_since: vec![0; n * PRIORITIES],
            stats: vec![PrioStats::default(); n * PRIORITIES],
            headroom_drops: vec![0; n * PRIORITIES],
        })
    }

    #[inline]
    pub fn lossless(&self, prio: usize) -> bool {
        self.spec.lossless & (1 << prio) != 0
    }

    /// The priorities port `port`'s egress is paused for.
    #[inline]
    pub fn paused(&self, port: u32) -> u8 {
        self.paused[port as usize]
    }

    /// Whether port `port` has an announcement to send.
    #[inline]
    pub fn announcing(&self, port: u32) -> bool {
        self.announce[port as usize] != 0
    }

    /// The bytes an input may hold of the shared pool of switch `sw` now.
    #[inline]
    fn threshold(&self, sw: u32) -> u64 {
        let free = self.pool_avail[sw as usize].saturating_sub(self.pool_used[sw as usize]);
        (free as f64 * self.spec.alpha) as u64
    }

    #[inline]
    fn shared_of(&self, i: usize) -> u64 {
        self.ingress[i].saturating_sub(self.spec.reserve_bytes)
    }

    /// Whether switch `sw` takes `bytes` of priority `prio` arriving on its input `input`:
    /// not when the input's headroom is full and it is over its threshold.
    #[inline]
    pub fn admits(&self, sw: u32, input: u32, prio: usize, bytes: u64) -> bool {
        let i = at(input, prio);
        self.in_headroom[i] + bytes <= self.headroom[input as usize]
            || self.shared_of(i) + bytes <= self.threshold(sw)
    }

    /// Books `bytes` of priority `prio` that entered switch `sw` by `input`; says whether
    /// the input now has a PAUSE to send.
    #[inline]
    pub fn arrive(&mut self, sw: u32, input: u32, prio: usize, bytes: u64) -> Announce {
        let i = at(input, prio);
        let held = self.ingress[i] + bytes;
        let reserve = self.spec.reserve_bytes;
        if held <= reserve {
            self.ingress[i] = held;
        } else if held - reserve > self.threshold(sw) {
            self.in_headroom[i] += bytes;
        } else {
            self.ingress[i] = held;
            self.pool_used[sw as usize] += bytes.min(held - reserve);
        }
        let bit = 1u8 << prio;
        let over = self.in_headroom[i] > 0 || self.shared_of(i) >= self.threshold(sw);
        if self.xoff[input as usize] & bit == 0 && over {
            self.xoff[input as usize] |= bit;
            self.announce[input as usize] |= bit;
            self.stats[i].pauses_sent += 1;
            return Announce::Frame;
        }
        Announce::Nothing
    }

    /// Books `bytes` of priority `prio` that left switch `sw` and had entered by `input`;
    /// says whether the input now has a resume to send.
    #[inline]
    pub fn leave(&mut self, sw: u32, input: u32, prio: usize, bytes: u64) -> Announce {
        let i = at(input, prio);
        let from_headroom = self.in_headroom[i].min(bytes);
        let from_shared = (bytes - from_headroom).min(self.shared_of(i));
        self.in_headroom[i] -= from_headroom;
        self.ingress[i] -= bytes - from_headroom;
        self.pool_used[sw as usize] -= from_shared;
        let bit = 1u8 << prio;
        if self.xoff[input as usize] & bit == 0 || self.in_headroom[i] > 0 {
            return Announce::Nothing;
        }
        let shared = self.shared_of(i);
        if shared == 0 || shared + self.spec.resume_offset_bytes <= self.threshold(sw) {
            self.xoff[input as usize] &= !bit;
            self.announce[input as usize] |= bit;
            self.stats[i].resumes_sent += 1;
            return Announce::Frame;
        }
        Announce::Nothing
    }

    /// A lossless packet that input `input` let in was dropped: counted.
    pub fn count_headroom_drop(&mut self, input: u32, prio: usize) {
        self.headroom_drops[at(input, prio)] += 1;
    }

    /// The announcement port `port` sends now: (priorities it changes, those paused).
    #[inline]
    pub fn take_announcement(&mut self, port: u32) -> (u8, u8) {
        let changed = std::mem::take(&mut self.announce[port as usize]);
        (changed, self.xoff[port as usize])
    }

    /// Port `port` received a PAUSE frame changing `changed` to `paused` at `now`; returns
    /// whether a priority resumed (the port may send again).
    pub fn obey(&mut self, port: u32, changed: u8, paused: u8, now: TimePs) -> bool {
        let before = self.paused[port as usize];
        let after = (before & !changed) | (paused & changed);
        for prio in 0..PRIORITIES {
            let (was, is) = (before >> prio & 1 == 1, after >> prio & 1 == 1);
            let i = at(port, prio);
            if !was && is {
                self.paused_since[i] = now;
                self.stats[i].pauses_received += 1;
            } else if was && !is {
                self.stats[i].paused_ps += now - self.paused_since[i];
            }
        }
        self.paused[port as usize] = after;
        before & !after != 0
    }

    /// A port's link failed: the peer's pauses no longer hold it (they count until `now`).
    pub fn release(&mut self, port: u32, now: TimePs) -> bool {
        let all = self.paused[port as usize];
        self.obey(port, all, 0, now)
    }

    /// Port `port`'s link failed: what it paused upstream, or was to announce, is void.
    pub fn forget_announcements(&mut self, port: u32) {
        self.xoff[port as usize] = 0;
        self.announce[port as usize] = 0;
    }

    /// Time port `port`'s egress of `prio` has been paused by `now`.
    pub fn paused_ps(&self, port: u32, prio: usize, now: TimePs) -> TimePs {
        let i = at(port, prio);
        let open = if self.paused[port as usize] >> prio & 1 == 1 {
            now - self.paused_since[i]
        } else {
            0
        };
        self.stats[i].paused_ps + open
    }

    /// Per port and priority, the stats (index `port * 8 + priority`).
    pub fn prio_stats(&self, port: u32, prio: usize) -> PrioStats {
        self.stats[at(port, prio)]
    }

    /// Bytes switch inputs hold (for tests: zero once every queue has drained).
    pub fn held_bytes(&self) -> u64 {
        self.ingress.iter().sum::<u64>() + self.in_headroom.iter().sum::<u64>()
    }
}

/// The bits of a port's nonempty queues whose head packet is of a paused priority (they
/// must not send), given each head's priority; `None` if every nonempty queue is held.
#[inline]
pub fn held_queues(
    nonempty: u64,
    paused: u8,
    head_priority: impl Fn(usize) -> usize,
) -> Option<u64> {
    let mut held = 0u64;
    let mut bits = nonempty;
    while bits != 0 {
        let q = bits.trailing_zeros() as usize;
        bits &= bits - 1;
        if paused >> head_priority(q) & 1 == 1 {
            held |= 1 << q;
        }
    }
    (held != nonempty).then_some(held)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pfc(buffer: u64, headroom: u64) -> Pfc {
        let spec = Params::default().resolve("switch.pfc").unwrap();
        // One switch with inputs 0 and 1 (ports 2 and 3 are the hosts').
        Pfc::new(
            spec,
            &[buffer],
            &[vec![0, 1]],
            vec![headroom, headroom, 0, 0],
        )
        .unwrap()
    }

    #[test]
    fn an_input_pauses_at_its_threshold_and_resumes_below_it() {
        // Pool for the inputs: 100,000 - 2 * (10,000 + 4,096) = 71,808 bytes.
        let mut p = pfc(100_000, 10_000);
        assert_eq!(p.threshold(0), 8_976);
        let mut sent = 0;
        let mut frames = vec![];
        while frames.is_empty() {
            if p.arrive(0, 0, 3, 1000) == Announce::Frame {
                frames.push(sent);
            }
            sent += 1000;
        }
        // Paused once the shared part (beyond 4,096) reached 1/8 of what is free.
        let shared = sent - 4096;
        let free = 71_808 - shared;
        assert!(shared as f64 >= free as f64 / 8.0, "{shared} {free}");
        assert!(((shared - 1000) as f64) < (free + 1000) as f64 / 8.0);
        assert_eq!(p.take_announcement(0), (1 << 3, 1 << 3));
        assert_eq!(p.take_announcement(0), (0, 1 << 3), "nothing new");
        // More arrives (what was in flight): it goes to the headroom, not the pool.
        let (used, headroom) = (p.pool_used[0], p.in_headroom[at(0, 3)]);
        assert_eq!(p.arrive(0, 0, 3, 1000), Announce::Nothing, "already paused");
        assert_eq!(p.pool_used[0], used);
        assert_eq!(p.in_headroom[at(0, 3)], headroom + 1000);
        // Draining: no resume while the headroom holds bytes or the offset is not met.
        while p.in_headroom[at(0, 3)] > 0 {
            assert_eq!(p.leave(0, 0, 3, 1000), Announce::Nothing);
        }
        let mut resumed_at = None;
        while resumed_at.is_none() {
            if p.leave(0, 0, 3, 1000) == Announce::Frame {
                resumed_at = Some(p.ingress[at(0, 3)]);
            }
        }
        let shared = resumed_at.unwrap().saturating_sub(4096);
        assert!(shared == 0 || shared + 3072 <= p.threshold(0));
        assert_eq!(p.take_announcement(0), (1 << 3, 0));
        // Another priority and the other input were never touched.
        assert_eq!(p.xoff[1], 0);
        assert_eq!(p.stats[at(0, 3)].pauses_sent, 1);
        assert_eq!(p.stats[at(0, 3)].resumes_sent, 1);
    }

    #[test]
    fn headroom_full_and_over_threshold_refuses() {
        let mut p = pfc(100_000, 2_000);
        while p.arrive(0, 1, 0, 1000) == Announce::Nothing {}
        assert!(p.admits(0, 1, 0, 1000));
        p.arrive(0, 1, 0, 1000);
        p.arrive(0, 1, 0, 1000);
        assert!(!p.admits(0, 1, 0, 1000), "headroom of 2,000 bytes is full");
        assert!(p.admits(0, 0, 0, 1000), "the other input has its own");
    }

    #[test]
    fn a_pause_holds_its_priorities_until_resumed_and_counts_the_time() {
        let mut p = pfc(100_000, 10_000);
        assert!(!p.obey(2, 0b1000, 0b1000, 1_000));
        assert_eq!(p.paused(2), 0b1000);
        assert!(
            !p.obey(2, 0b0001, 0b0001, 2_000),
            "another priority paused too"
        );
        assert_eq!(p.paused_ps(2, 3, 5_000), 4_000, "still paused");
        assert!(p.obey(2, 0b1000, 0, 6_000), "priority 3 resumed");
        assert_eq!(p.paused(2), 0b0001);
        assert_eq!(p.paused_ps(2, 3, 9_000), 5_000);
        assert!(p.release(2, 7_000));
        assert_eq!(p.paused_ps(2, 0, 9_000), 5_000);
        assert_eq!(p.prio_stats(2, 3).pauses_received, 1);
    }

    #[test]
    fn held_queues_are_those_whose_head_is_paused() {
        // Queues 0, 2 and 5 hold packets; heads of priorities 1, 3, 3.
        let head = |q: usize| [1, 0, 3, 0, 0, 3][q];
        assert_eq!(held_queues(0b100101, 0b1000, head), Some(0b100100));
        assert_eq!(held_queues(0b100101, 0b1010, head), None, "all held");
        assert_eq!(held_queues(0b100101, 0, head), Some(0));
    }

    #[test]
    fn a_buffer_that_cannot_hold_the_headroom_is_refused_and_bad_keys_named() {
        let spec = Params::default().resolve("switch.pfc").unwrap();
        assert_eq!(
            Pfc::new(spec, &[10_000], &[vec![0, 1]], vec![4_000, 4_000]).unwrap_err(),
            (0, 16_192)
        );
        let bad = |p: Params| p.clone().resolve("switch.pfc").unwrap_err().to_string();
        let e = bad(Params {
            priorities: Some(vec![8]),
            ..Default::default()
        });
        assert!(
            e.contains("switch.pfc.priorities") && e.contains('8'),
            "{e}"
        );
        let e = bad(Params {
            alpha: Some(0.0),
            ..Default::default()
        });
        assert!(e.contains("switch.pfc.alpha"), "{e}");
    }
}

#[cfg(test)]
mod ring_tests;
