//! Real time: the simulation driven by the wall clock, carrying real frames between real
//! programs in Linux network namespaces (`wscsim emulate`; docs/emulation.md).
//!
//! Each emulated host is a namespace the front end made, with a TAP device (`tap`) as its
//! interface. The emulator reads the frames its hosts send, injects each at its host's NIC
//! at the moment it was read (simulated time is the time since the emulation started),
//! lets the fabric carry it (queues, schemes, link rates and delays, drops, ECN marks),
//! and writes it to its destination's TAP device when it reaches that host, with a CE
//! mark written into its IP header if a scheme marked it. How late each frame is written,
//! against the time it reached its host in the emulation, is the emulation's error: the
//! summary gives its percentiles and whether the run stayed within its bound.
//!
//! Simplified: the hosts' own stacks are the real kernels', so the emulated hosts cost
//! nothing (a host preset's CPU costs are not applied to real frames); a frame's size in
//! the fabric is its length plus the FCS; broadcast and multicast frames are not carried
//! (the front end gives every namespace static neighbour entries and switches IPv6 off);
//! frames go only between the run's own hosts.

pub mod frame;
pub mod tap;

use crate::config::emulation::EmulationSpec;
use crate::engine::TimePs;
use crate::packet::{Packet, PktId, Proto};
use crate::sim::Sim;
use std::io;
use std::time::Instant;

/// Largest frame a TAP device hands over (the 64 KiB an IP packet may be, with headers).
const MAX_FRAME_BYTES: usize = 65_536 + 64;
/// Longest the emulator sleeps before looking at the clock again.
const MAX_SLEEP_NS: u64 = 1_000_000;
/// The most frames one pass takes from a host, and the most bytes from all of them: a host
/// that never stops sending cannot hold the emulator in its read loop.
const MAX_READ_FRAMES_PER_HOST: usize = 64;
const MAX_READ_BYTES: usize = 4 << 20;
/// With more hosts than this, one poll finds the devices with frames waiting, rather than
/// a read of every device (most of which would find nothing).
const POLL_BEFORE_READ_HOSTS: usize = 4;
/// The most a host's capture keeps; frames past it are counted, not kept.
const MAX_CAPTURE_BYTES: usize = 512 << 20;

/// What the emulator counted.
#[derive(Clone, Debug)]
pub struct Stats {
    pub frames_in: u64,
    pub bytes_in: u64,
    pub frames_out: u64,
    pub bytes_out: u64,
    /// Frames not carried: (runt, not to a host, other ethertype).
    pub refused: [u64; 3],
    /// Frames whose destination's kernel queue was full.
    pub host_queue_full: u64,
    /// Frames written with a CE mark a scheme gave them.
    pub ce_marked: u64,
    /// Frames written later than the bound after they reached their host.
    pub late: u64,
    /// Frames a full capture did not keep.
    pub capture_overflow: u64,
    /// Lateness of every written frame, nanoseconds.
    pub lateness_ns: hdrhistogram::Histogram<u64>,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            frames_in: 0,
            bytes_in: 0,
            frames_out: 0,
            bytes_out: 0,
            refused: [0; 3],
            host_queue_full: 0,
            ce_marked: 0,
            late: 0,
            capture_overflow: 0,
            // 1 ns to an hour, three significant digits.
            lateness_ns: hdrhistogram::Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
                .expect("valid bounds"),
        }
    }
}

pub struct Emulator {
    pub sim: Sim,
    pub spec: EmulationSpec,
    pub stats: Stats,
    taps: Vec<tap::Tap>,
    /// A frame's bytes, at its packet's index (a slot is reused with its packet's).
    frames: Vec<Vec<u8>>,
    /// Frames read and not yet injected: (host, start in `buf`, length).
    read: Vec<(u32, usize, usize)>,
    buf: Vec<u8>,
    pollfds: Vec<libc::pollfd>,
    start: Option<Instant>,
    /// Per host: its pcap file so far, if `emulation.capture` names it.
    captures: Vec<Option<Vec<u8>>>,
}

impl Emulator {
    /// Opens a TAP device named `ifname` in each host's namespace (`netns[h]` for host h).
    pub fn new(mut sim: Sim, netns: &[String], ifname: &str) -> io::Result<Emulator> {
        let mut cfg = sim.scenario.emulation.clone().unwrap_or_default();
        let hosts = sim.net.n_hosts();
        let spec = crate::config::emulation::resolve(&mut cfg, hosts as i64, sim.end_ps())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        if netns.len() != hosts {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} namespaces for {hosts} hosts", netns.len()),
            ));
        }
        let taps = netns
            .iter()
            .map(|ns| tap::Tap::open_in(ns, ifname))
            .collect::<io::Result<Vec<_>>>()?;
        sim.open_ended = true;
        let mut captures = vec![None; hosts];
        for &h in &spec.capture {
            captures[h as usize] = Some(crate::metrics::pcap::file_header());
        }
        Ok(Emulator {
            captures,
            sim,
            spec,
            stats: Stats::default(),
            taps,
            frames: Vec::new(),
            read: Vec::new(),
            buf: vec![0; MAX_FRAME_BYTES],
            pollfds: Vec::new(),
            start: None,
        })
    }

    /// Simulated time now: the wall-clock time since the emulation started.
    fn now_ps(start: Instant) -> TimePs {
        start.elapsed().as_nanos() as TimePs * 1000
    }

    /// Runs in real time until `wall_ps` more has passed or the scenario's end; returns
    /// whether the end was reached.
    pub fn run_for(&mut self, wall_ps: TimePs) -> io::Result<bool> {
        // Sleeps end within a microsecond of when asked, not the 50 us a thread's default
        // timer slack allows: the frames' lateness is this wake-up's.
        // SAFETY: prctl with an integer argument, on this thread only.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1_000 as libc::c_ulong) };
        let start = *self.start.get_or_insert_with(Instant::now);
        let until = (Self::now_ps(start) + wall_ps).min(self.sim.end_ps());
        loop {
            let now = Self::now_ps(start).min(until);
            self.sim.run_until(now);
            self.write_frames(start)?;
            if self.read_frames()? > 0 {
                // Stamped once all of them are read: a frame may enter the fabric a little
                // after its host sent it, never before.
                let read_ps = Self::now_ps(start).max(now);
                self.sim.run_until(read_ps);
                self.inject_read(read_ps);
                self.sim.run_until(read_ps);
                self.write_frames(start)?;
            }
            if now >= until || self.sim.finished() {
                return Ok(now >= self.sim.end_ps() || self.sim.finished());
            }
            self.wait(start, until)?;
        }
    }

    /// Sleeps until a frame comes in or the next event is close (spinning within
    /// `spin`, or always with `busy_poll`), never past `until`.
    fn wait(&mut self, start: Instant, until: TimePs) -> io::Result<()> {
        let now = Self::now_ps(start);
        let next = self.sim.ev.next_time_ps().unwrap_or(until).min(until);
        let gap = next.saturating_sub(now);
        if gap <= self.spec.spin_ps || self.spec.busy_poll {
            return Ok(());
        }
        let sleep_ns = ((gap - self.spec.spin_ps) / 1000).min(MAX_SLEEP_NS);
        tap::wait_readable(&self.taps, &mut self.pollfds, sleep_ns)
    }

    /// Reads the frames the hosts have sent (up to a batch) into the buffer; returns how
    /// many.
    fn read_frames(&mut self) -> io::Result<usize> {
        self.read.clear();
        let mut used = 0;
        let polled = self.taps.len() > POLL_BEFORE_READ_HOSTS;
        if polled {
            tap::wait_readable(&self.taps, &mut self.pollfds, 0)?;
        }
        for host in 0..self.taps.len() {
            if polled && self.pollfds[host].revents & libc::POLLIN == 0 {
                continue;
            }
            for _ in 0..MAX_READ_FRAMES_PER_HOST {
                if used >= MAX_READ_BYTES {
                    break;
                }
                if self.buf.len() < used + MAX_FRAME_BYTES {
                    self.buf.resize(used + MAX_FRAME_BYTES, 0);
                }
                let Some(n) = self.taps[host].read(&mut self.buf[used..])? else {
                    break;
                };
                self.stats.frames_in += 1;
                self.stats.bytes_in += n as u64;
                self.read.push((host as u32, used, n));
                used += n;
            }
        }
        Ok(self.read.len())
    }

    /// Puts the frames just read on their hosts' NICs at `now_ps` (and in the captures of
    /// the hosts that sent them).
    fn inject_read(&mut self, now_ps: TimePs) {
        for k in 0..self.read.len() {
            let (host, at, len) = self.read[k];
            let file = &mut self.captures[host as usize];
            capture(file, &mut self.stats, now_ps, &self.buf[at..at + len]);
            self.inject(host, at, len);
        }
    }

    /// The pcap files of the captured hosts, named as the simulator names its own
    /// captures ("host-N").
    pub fn captures(&self) -> Vec<(String, Vec<u8>)> {
        (0..self.captures.len())
            .filter_map(|h| Some((format!("host-{h}"), self.captures[h].clone()?)))
            .collect()
    }

    /// Frame `buf[at..at + len]` from `host` into the fabric.
    fn inject(&mut self, host: u32, at: usize, len: usize) {
        let bytes = &self.buf[at..at + len];
        let info = match frame::parse(host, bytes) {
            Ok(i) if i.dst_host != host && (i.dst_host as usize) < self.taps.len() => i,
            Ok(_) => return self.stats.refused[1] += 1,
            Err(r) => return self.stats.refused[r as usize] += 1,
        };
        let net = &mut self.sim.net;
        let hash = crate::packet::five_tuple_hash(
            host,
            info.dst_host,
            info.src_port,
            info.dst_port,
            info.proto,
        );
        let p = Packet {
            src_host: host,
            dst_host: info.dst_host,
            src_port: info.src_port,
            dst_port: info.dst_port,
            proto: Proto::FRAME,
            dscp: info.dscp,
            ecn: info.ecn,
            flow_id: hash,
            hash,
            frame_bytes: net.frame_bytes(host, info.ip_bytes),
            payload_bytes: info.payload_bytes,
            ..Default::default()
        };
        net.count_sent();
        let id = net.pool_mut().alloc(p);
        let slot = id as usize;
        if self.frames.len() <= slot {
            self.frames.resize_with(slot + 1, Vec::new);
        }
        self.frames[slot].clear();
        self.frames[slot].extend_from_slice(&self.buf[at..at + len]);
        self.sim.inject(host, id);
    }

    /// Writes every frame that reached its host to the host's TAP device.
    fn write_frames(&mut self, start: Instant) -> io::Result<()> {
        let out = std::mem::take(&mut self.sim.frames_out);
        for &(pkt, at_ps) in &out {
            self.write_frame(pkt, at_ps, Self::now_ps(start))?;
        }
        self.sim.frames_out = out;
        self.sim.frames_out.clear();
        Ok(())
    }

    fn write_frame(&mut self, pkt: PktId, at_ps: TimePs, now_ps: TimePs) -> io::Result<()> {
        let p = *self.sim.net.pool().get(pkt);
        let bytes = &mut self.frames[pkt as usize];
        if p.ecn == crate::packet::ecn::CE && frame::mark_ce(bytes) {
            self.stats.ce_marked += 1;
        }
        let dst = p.dst_host as usize;
        capture(&mut self.captures[dst], &mut self.stats, at_ps, bytes);
        if self.taps[dst].write(bytes)? {
            self.stats.frames_out += 1;
            self.stats.bytes_out += bytes.len() as u64;
        } else {
            self.stats.host_queue_full += 1;
        }
        let late_ps = now_ps.saturating_sub(at_ps);
        if late_ps > self.spec.lateness_bound_ps {
            self.stats.late += 1;
        }
        self.stats
            .lateness_ns
            .saturating_record((late_ps / 1000).max(1));
        self.sim.net.delivered(pkt);
        Ok(())
    }

    /// The emulation's figures for summary.json.
    pub fn summary(&self) -> serde_json::Value {
        let s = &self.stats;
        let h = &s.lateness_ns;
        let us = |q: f64| h.value_at_quantile(q) as f64 / 1e3;
        let written = s.frames_out + s.host_queue_full;
        let late_fraction = if written > 0 {
            s.late as f64 / written as f64
        } else {
            0.0
        };
        serde_json::json!({
            "frames_in": s.frames_in,
            "bytes_in": s.bytes_in,
            "frames_out": s.frames_out,
            "bytes_out": s.bytes_out,
            "frames_refused_runt": s.refused[0],
            "frames_refused_not_to_a_host": s.refused[1],
            "frames_refused_other_ethertype": s.refused[2],
            "frames_host_queue_full": s.host_queue_full,
            "frames_ce_marked": s.ce_marked,
            "frames_not_captured": s.capture_overflow,
            "lateness_bound_us": self.spec.lateness_bound_ps as f64 / 1e6,
            "lateness_p50_us": us(0.5),
            "lateness_p90_us": us(0.9),
            "lateness_p99_us": us(0.99),
            "lateness_p999_us": us(0.999),
            "lateness_max_us": h.max() as f64 / 1e3,
            "frames_late": s.late,
            "late_fraction": late_fraction,
            "within_bound": late_fraction <= self.spec.late_fraction_bound,
            "simulated_seconds": self.sim.now_ps() as f64 / 1e12,
        })
    }
}

/// Adds `frame` at `time_ps` to a host's capture, if it has one and it is not full.
fn capture(file: &mut Option<Vec<u8>>, stats: &mut Stats, time_ps: TimePs, frame: &[u8]) {
    let Some(file) = file.as_mut() else {
        return;
    };
    if file.len() + frame.len() + 16 > MAX_CAPTURE_BYTES {
        stats.capture_overflow += 1;
        return;
    }
    crate::metrics::pcap::append_record(file, time_ps, frame, frame.len() as u32);
}
