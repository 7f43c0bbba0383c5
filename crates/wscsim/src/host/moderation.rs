//! Adaptive interrupt moderation, as Intel's 10 GbE driver (ixgbe) does it by default.
//!
//! The NIC raises at most one receive interrupt per *throttle interval*. After each
//! interrupt the driver looks at the bytes its rings moved during the last interval, one
//! figure for received bytes and one for sent bytes (transmit completions share the
//! interrupt), and puts each in a class: up to 10 bytes a microsecond "lowest latency",
//! up to 20 "low latency", more "bulk". The busier class sets the target interval: 10 us
//! (100,000 interrupts a second), 50 us (20,000) or 125 us (8,000). The interval moves
//! towards the target smoothly: the new interrupt rate is 0.9 of the old plus 0.1 of the
//! target's. Source: Linux 3.18, `drivers/net/ethernet/intel/ixgbe/ixgbe_main.c`
//! (`ixgbe_update_itr`, `ixgbe_set_itr`); the 8,000 a second bulk rate was raised to
//! 12,000 in Linux 4.3, which `bulk_interval_ps` could follow.
//!
//! Simplified: the driver writes the interval to the EITR register in 2 us steps; here it
//! is kept exact. Sent bytes are counted when the stack hands a packet to the NIC, not
//! when its transmission completes. The driver updates the interval when a NAPI poll ends;
//! here at each interrupt (a poll that never ends takes no interrupt either).

use crate::engine::TimePs;

const US: TimePs = 1_000_000;

/// A ring's class, from its bytes per microsecond of the last interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    #[default]
    Lowest,
    Low,
    Bulk,
}

impl Class {
    /// The driver's rule: a class moves one step at a time, up above 10 (from lowest) or
    /// 20 (from low) bytes a microsecond, down at or below 20 (from bulk) or 10 (from low).
    fn next(self, bytes_per_us: u64) -> Class {
        match self {
            Class::Lowest if bytes_per_us > 10 => Class::Low,
            Class::Low if bytes_per_us > 20 => Class::Bulk,
            Class::Low if bytes_per_us <= 10 => Class::Lowest,
            Class::Bulk if bytes_per_us <= 20 => Class::Low,
            same => same,
        }
    }

    fn interval_ps(self) -> TimePs {
        match self {
            Class::Lowest => 10 * US,
            Class::Low => 50 * US,
            Class::Bulk => 125 * US,
        }
    }
}

/// One NIC's moderation state.
#[derive(Clone, Copy, Debug)]
pub struct Moderation {
    /// The current throttle interval: no two interrupts closer than this.
    pub interval_ps: TimePs,
    rx: Class,
    tx: Class,
    rx_bytes: u64,
    tx_bytes: u64,
    /// When the last interrupt was raised (none yet: far enough back).
    last_irq_ps: Option<TimePs>,
}

impl Default for Moderation {
    /// The driver starts every vector at 20,000 interrupts a second, both rings at "lowest"
    /// (zeroed).
    fn default() -> Self {
        Moderation {
            interval_ps: Class::Low.interval_ps(),
            rx: Class::Lowest,
            tx: Class::Lowest,
            rx_bytes: 0,
            tx_bytes: 0,
            last_irq_ps: None,
        }
    }
}

impl Moderation {
    /// A frame of `bytes` arrived.
    #[inline]
    pub fn received(&mut self, bytes: u32) {
        self.rx_bytes += u64::from(bytes);
    }

    /// A frame of `bytes` was handed to the NIC to send.
    #[inline]
    pub fn sent(&mut self, bytes: u32) {
        self.tx_bytes += u64::from(bytes);
    }

    /// When a packet arriving at `now` may raise the interrupt: now, or once the interval
    /// since the last one has passed.
    #[inline]
    pub fn earliest_irq_ps(&self, now: TimePs) -> TimePs {
        match self.last_irq_ps {
            Some(last) => now.max(last + self.interval_ps),
            None => now,
        }
    }

    /// The interrupt is raised at `now`: classify the last interval's bytes and move the
    /// interval towards the busier class's. A ring that moved nothing keeps its class, as
    /// the driver returns early for it.
    pub fn on_irq(&mut self, now: TimePs) {
        self.last_irq_ps = Some(now);
        // The driver divides by the current interval, not by the time that really passed.
        let us = (self.interval_ps / US).max(1);
        if self.rx_bytes > 0 {
            self.rx = self.rx.next(self.rx_bytes / us);
        }
        if self.tx_bytes > 0 {
            self.tx = self.tx.next(self.tx_bytes / us);
        }
        self.rx_bytes = 0;
        self.tx_bytes = 0;
        let target = self.rx.max(self.tx).interval_ps();
        if target != self.interval_ps {
            // 1/new = 0.9/old + 0.1/target: rates average, as the driver's integer form
            // new = 10 * target * old / (9 * target + old) does.
            let (t, o) = (u128::from(target), u128::from(self.interval_ps));
            self.interval_ps = (10 * t * o / (9 * t + o)) as TimePs;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_move_one_step_at_a_time_with_hysteresis() {
        assert_eq!(Class::Lowest.next(1_000), Class::Low);
        assert_eq!(Class::Low.next(1_000), Class::Bulk);
        assert_eq!(Class::Bulk.next(15), Class::Low);
        assert_eq!(Class::Low.next(15), Class::Low);
        assert_eq!(Class::Low.next(10), Class::Lowest);
        assert_eq!(Class::Bulk.next(21), Class::Bulk);
    }

    #[test]
    fn bulk_traffic_slows_interrupts_towards_8000_a_second() {
        let mut m = Moderation::default();
        let mut now = 0;
        let mut intervals = vec![];
        for _ in 0..60 {
            // 10 Gbit/s is 1,250 bytes a microsecond.
            m.received((1_250 * m.interval_ps / US) as u32);
            now = m.earliest_irq_ps(now);
            m.on_irq(now);
            intervals.push(m.interval_ps);
        }
        assert!(intervals.windows(2).all(|w| w[1] >= w[0]));
        // Lowest turns low at the first interrupt (the interval stays 50 us), bulk at the
        // second; the smoothing then closes in on 125 us.
        assert_eq!(intervals[0], 50 * US);
        assert!(intervals[1] > 50 * US && intervals[1] < 60 * US);
        let last = *intervals.last().unwrap();
        assert!(last > 120 * US && last <= 125 * US, "{last}");
    }

    #[test]
    fn an_idle_nic_interrupts_at_once_and_a_busy_one_waits_its_interval() {
        let mut m = Moderation::default();
        assert_eq!(m.earliest_irq_ps(7), 7);
        m.on_irq(7);
        // Nothing moved: the rings stay "lowest" and the interval shrinks towards 10 us.
        assert!(m.interval_ps < 50 * US);
        let wait = m.earliest_irq_ps(8);
        assert_eq!(wait, 7 + m.interval_ps);
        assert_eq!(
            m.earliest_irq_ps(7 + 10 * m.interval_ps),
            7 + 10 * m.interval_ps
        );
    }

    #[test]
    fn sent_bytes_alone_make_the_vector_bulk() {
        let mut m = Moderation::default();
        for _ in 0..3 {
            m.sent(100_000);
            m.received(64);
            let now = m.earliest_irq_ps(0);
            m.on_irq(now);
        }
        assert_eq!(m.tx, Class::Bulk);
        assert_eq!(m.rx, Class::Lowest);
        assert!(m.interval_ps > 50 * US);
    }

    #[test]
    fn a_ring_that_moved_nothing_keeps_its_class() {
        let mut m = Moderation::default();
        for _ in 0..2 {
            m.sent(100_000);
            let now = m.earliest_irq_ps(0);
            m.on_irq(now);
        }
        assert_eq!(m.tx, Class::Bulk);
        let before = m.interval_ps;
        let now = m.earliest_irq_ps(0);
        m.on_irq(now);
        assert_eq!(m.tx, Class::Bulk);
        assert!(m.interval_ps >= before);
    }
}
