//! A server's storage device, as a queue: each request takes the device's access latency
//! plus its bytes at the device's bandwidth for its direction, one request at a time in
//! the order they come.
//!
//! Simplified: no distinction between sequential and random access beyond the latency, no
//! internal parallelism (an SSD serves several requests at once; for the large sequential
//! writes of the key-value store, bandwidth is what binds), no write cache, no wear.

use crate::engine::TimePs;

/// A device's speeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiskParams {
    pub read_bytes_per_s: u64,
    pub write_bytes_per_s: u64,
    pub read_latency_ps: TimePs,
    pub write_latency_ps: TimePs,
}

impl DiskParams {
    /// Intel X25-E (32 GB, SATA SLC), the CamCubeOS servers' SSD. Intel's product brief:
    /// sequential reads up to 250 MB/s and writes up to 170 MB/s, read latency 75 us and
    /// write latency 85 us.
    pub const X25_E: DiskParams = DiskParams {
        read_bytes_per_s: 250_000_000,
        write_bytes_per_s: 170_000_000,
        read_latency_ps: 75_000_000,
        write_latency_ps: 85_000_000,
    };
}

/// One device's queue.
#[derive(Clone, Copy, Debug)]
pub struct Disk {
    pub params: DiskParams,
    /// When the device finishes what it has been given.
    busy_until_ps: TimePs,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Time the device spent serving requests.
    pub busy_ps: TimePs,
}

impl Disk {
    pub fn new(params: DiskParams) -> Disk {
        Disk {
            params,
            busy_until_ps: 0,
            bytes_read: 0,
            bytes_written: 0,
            busy_ps: 0,
        }
    }

    /// A request for `bytes` given at `now`: when it completes.
    pub fn request(&mut self, now: TimePs, bytes: u64, write: bool) -> TimePs {
        let p = &self.params;
        let (latency, rate) = if write {
            self.bytes_written += bytes;
            (p.write_latency_ps, p.write_bytes_per_s)
        } else {
            self.bytes_read += bytes;
            (p.read_latency_ps, p.read_bytes_per_s)
        };
        let service = latency + (u128::from(bytes) * 1_000_000_000_000 / u128::from(rate)) as u64;
        self.busy_until_ps = self.busy_until_ps.max(now) + service;
        self.busy_ps += service;
        self.busy_until_ps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_queue_and_take_latency_plus_bytes_at_the_rate() {
        let mut d = Disk::new(DiskParams::X25_E);
        // 1.7 MB written: 85 us + 10 ms.
        assert_eq!(d.request(0, 1_700_000, true), 10_085_000_000);
        // A read given meanwhile waits: 75 us + 1 MB at 250 MB/s = 4 ms after.
        assert_eq!(d.request(1_000, 1_000_000, false), 14_160_000_000);
        // An idle device starts at once.
        assert_eq!(d.request(20_000_000_000, 0, false), 20_075_000_000);
        assert_eq!((d.bytes_written, d.bytes_read), (1_700_000, 1_000_000));
    }
}
