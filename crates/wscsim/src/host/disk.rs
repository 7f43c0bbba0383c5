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
    /// write latency 85 us (active power 2.4 W).
    pub const X25_E: DiskParams = DEVICES[2].params;
}

/// A storage device a server may have (`[host] storage`), with its speeds and the most
/// power it draws.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StorageDevice {
    pub name: &'static str,
    pub params: DiskParams,
    pub power_w: f64,
}

const MB: u64 = 1_000_000;
const US: TimePs = 1_000_000;

const fn device(
    name: &'static str,
    (read_mb_s, write_mb_s): (u64, u64),
    (read_latency_us, write_latency_us): (u64, u64),
    power_w: f64,
) -> StorageDevice {
    StorageDevice {
        name,
        params: DiskParams {
            read_bytes_per_s: read_mb_s * MB,
            write_bytes_per_s: write_mb_s * MB,
            read_latency_ps: read_latency_us * US,
            write_latency_ps: write_latency_us * US,
        },
        power_w,
    }
}

/// The devices a scenario may name. Bandwidths and power are Table 1 of Byrne et al.
/// (HotPower 2011) where it lists the device; access latencies, which Table 1 does not
/// give, are the makers' figures (a hard drive's average seek plus half a turn at 7,200
/// rpm; Intel's X25-M and X25-E product briefs; Fusion-io's ioDrive data sheet). The RAM
/// file system reads and writes at the DRAM bandwidth of Table 1 (12.8 GB/s) and draws
/// nothing beyond the memory already counted.
pub const DEVICES: &[StorageDevice] = &[
    device("hdd", (125, 125), (12_700, 12_700), 15.0),
    device("x25_m", (250, 100), (85, 115), 2.0),
    device("x25_e", (250, 170), (75, 85), 2.4),
    device("fusion_io", (750, 700), (26, 26), 11.0),
    // The Gordon node's flash (256 GB with its controller, 6 W), the paper's base model.
    device("gordon_flash", (2_200, 1_100), (50, 50), 6.0),
    device("ramfs", (12_800, 12_800), (1, 1), 0.0),
];

impl StorageDevice {
    pub fn by_name(name: &str) -> Option<StorageDevice> {
        DEVICES.iter().find(|d| d.name == name).copied()
    }
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

    #[test]
    fn devices_have_table_1_bandwidths() {
        let fio = StorageDevice::by_name("fusion_io").unwrap();
        assert_eq!(fio.params.read_bytes_per_s, 750_000_000);
        assert_eq!(fio.params.write_bytes_per_s, 700_000_000);
        assert_eq!(
            StorageDevice::by_name("x25_e").unwrap().params,
            DiskParams::X25_E
        );
        assert_eq!(StorageDevice::by_name("hdd").unwrap().power_w, 15.0);
        assert!(StorageDevice::by_name("floppy").is_none());
    }
}
