//! In-band network telemetry (INT) as HPCC reads it (Li et al., "HPCC: High Precision
//! Congestion Control", SIGCOMM'19, section 4): a packet that asks for it
//! (`packet::framing::INT`) collects one 8-byte record from every node that forwards it,
//! written as it starts to leave the node's output port: the time, the bytes the port has
//! sent so far, the bytes still queued behind it and the port's line rate. The sender
//! learns each hop's transmit rate from two records of the same port and its queue from
//! the smaller of two queue lengths.
//!
//! The record has the paper's widths (its 42-byte INT overhead for 5 hops): 24 bits of
//! nanoseconds, 20 bits of transmitted bytes in units of 128 bytes and 17 bits of queue
//! in units of 80 bytes, both units scaled by the port's rate over 25 Gbit/s (at least
//! 1, as the HPCC ns-3 fork's `INT_MULTI` does: fast ports count in coarser units so
//! that the counters wrap no sooner), and 3 bits naming the rate among eight
//! (`RATES_BPS`). Time and bytes wrap; a sender's two records of a port must be less
//! than 16.7 ms apart (as in the paper's hardware). Simplified: the host NICs' own ports
//! add no record (HPCC's switches write them), and a packet keeps the first
//! `MAX_HOPS` records only (the count goes on, so that the receiver can tell).

use crate::engine::TimePs;

/// Records a packet carries (the paper's five: the hops of a three-tier fat tree).
pub const MAX_HOPS: usize = crate::packet::INT_RECORDS;

/// The line rates a record can name (3 bits).
pub const RATES_BPS: [u64; 8] = [
    1_000_000_000,
    10_000_000_000,
    25_000_000_000,
    40_000_000_000,
    50_000_000_000,
    100_000_000_000,
    200_000_000_000,
    400_000_000_000,
];

const TIME_BITS: u32 = 24;
const BYTES_BITS: u32 = 20;
const QLEN_BITS: u32 = 17;
const BYTES_UNIT: u64 = 128;
const QLEN_UNIT: u64 = 80;

/// The code of a line rate a record can carry; None if it cannot.
pub fn rate_code(rate_bps: u64) -> Option<u64> {
    RATES_BPS
        .iter()
        .position(|&r| r == rate_bps)
        .map(|i| i as u64)
}

/// The units' scale at a port of `rate_bps`: the rate over 25 Gbit/s, at least 1.
fn multi(rate_bps: u64) -> u64 {
    (rate_bps / 25_000_000_000).max(1)
}

fn mask(bits: u32) -> u64 {
    (1 << bits) - 1
}

/// One port's record, written at `now_ps` by a port of `rate_bps` (one of `RATES_BPS`:
/// the build checks) that has sent `tx_bytes` on the wire so far and holds `qlen_bytes`.
#[inline]
pub fn encode(now_ps: TimePs, tx_bytes: u64, qlen_bytes: u64, rate_bps: u64) -> u64 {
    let m = multi(rate_bps);
    let code = rate_code(rate_bps).unwrap_or(0);
    let time = (now_ps / 1000) & mask(TIME_BITS);
    let bytes = (tx_bytes / (BYTES_UNIT * m)) & mask(BYTES_BITS);
    let qlen = (qlen_bytes / (QLEN_UNIT * m)).min(mask(QLEN_BITS));
    code << 61 | time << (BYTES_BITS + QLEN_BITS) | bytes << QLEN_BITS | qlen
}

/// A record read back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hop(pub u64);

impl Hop {
    pub fn rate_bps(self) -> u64 {
        RATES_BPS[(self.0 >> 61) as usize]
    }

    fn time(self) -> u64 {
        (self.0 >> (BYTES_BITS + QLEN_BITS)) & mask(TIME_BITS)
    }

    fn bytes(self) -> u64 {
        (self.0 >> QLEN_BITS) & mask(BYTES_BITS)
    }

    /// The bytes queued at the port when it wrote the record (to the record's unit).
    pub fn qlen_bytes(self) -> u64 {
        (self.0 & mask(QLEN_BITS)) * QLEN_UNIT * multi(self.rate_bps())
    }

    /// Nanoseconds from `earlier` (the same port's older record) to this one.
    pub fn ns_since(self, earlier: Hop) -> u64 {
        self.time().wrapping_sub(earlier.time()) & mask(TIME_BITS)
    }

    /// Bytes the port sent from `earlier` to this record.
    pub fn bytes_since(self, earlier: Hop) -> u64 {
        let units = self.bytes().wrapping_sub(earlier.bytes()) & mask(BYTES_BITS);
        units * BYTES_UNIT * multi(self.rate_bps())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_to_its_units() {
        let r = 100_000_000_000;
        let h = Hop(encode(7_000_123_456, 1_000_000, 64_000, r));
        assert_eq!(h.rate_bps(), r);
        // 80-byte units scaled by 4 at 100 Gbit/s: 64,000 bytes is 200 units of 320.
        assert_eq!(h.qlen_bytes(), 64_000);
        let later = Hop(encode(
            7_000_123_456 + 10_000_000,
            1_000_000 + 125_000,
            0,
            r,
        ));
        assert_eq!(later.ns_since(h), 10_000);
        // 125,000 bytes in 512-byte units: 244 whole units (the rest is the unit's error).
        let sent = later.bytes_since(h);
        assert!(sent.abs_diff(125_000) <= 512, "{sent}");
    }

    #[test]
    fn time_and_bytes_wrap_between_two_records() {
        let r = 10_000_000_000;
        // Just before the 24-bit nanosecond counter and the 20-bit byte counter wrap.
        let t0 = ((1u64 << 24) - 5) * 1000;
        let b0 = ((1u64 << 20) - 2) * 128;
        let a = Hop(encode(t0, b0, 0, r));
        let b = Hop(encode(t0 + 10_000, b0 + 1280, 0, r));
        assert_eq!(b.ns_since(a), 10);
        assert_eq!(b.bytes_since(a), 1280);
    }

    #[test]
    fn a_long_queue_saturates_and_unknown_rates_have_no_code() {
        let h = Hop(encode(0, 0, u64::MAX / 2, 25_000_000_000));
        assert_eq!(h.qlen_bytes(), mask(QLEN_BITS) * QLEN_UNIT);
        assert_eq!(rate_code(100_000_000_000), Some(5));
        assert_eq!(rate_code(2_500_000_000), None);
    }
}
