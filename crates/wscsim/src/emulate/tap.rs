//! TAP devices inside network namespaces: an emulated host's interface, whose far end is a
//! file descriptor the emulator reads frames from and writes frames to.
//!
//! Why TAP rather than a veth pair read through a packet socket: one file descriptor per
//! host and one system call per frame each way in both designs, but a TAP device needs no
//! interface outside the host's namespace (a veth pair's other end would live in the
//! emulator's namespace), and it disappears with the descriptor, so a crashed emulator
//! leaves no interface behind (only namespaces, which `wscsim emulate --cleanup` removes).
//! benchmarks/RESULTS.md records the measured cost per frame.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// From <linux/if_tun.h>.
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TAP: libc::c_short = 0x0002;
const IFF_NO_PI: libc::c_short = 0x1000;

/// `struct ifreq` as TUNSETIFF reads it: the name, then the flags, padded to 40 bytes.
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

pub struct Tap {
    fd: OwnedFd,
}

/// Runs `f` with the calling thread in network namespace `netns` (a name `ip netns add`
/// gave, under /run/netns), and moves the thread back after.
pub fn in_namespace<T>(netns: &str, f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    let own = File::open("/proc/thread-self/ns/net")?;
    let target = File::open(format!("/run/netns/{netns}"))?;
    // SAFETY: setns on descriptors we hold open; it changes only this thread's namespace.
    if unsafe { libc::setns(target.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let out = f();
    // SAFETY: as above, back to the namespace the thread came from.
    if unsafe { libc::setns(own.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        // A thread left in a host's namespace would open later devices there: stop.
        panic!(
            "could not return from network namespace {netns}: {}",
            io::Error::last_os_error()
        );
    }
    out
}

impl Tap {
    /// Creates TAP device `name` in namespace `netns`, non-blocking, frames without the
    /// packet-information prefix and without offloads (no frame exceeds the MTU).
    pub fn open_in(netns: &str, name: &str) -> io::Result<Tap> {
        in_namespace(netns, || Tap::open(name))
    }

    fn open(name: &str) -> io::Result<Tap> {
        if name.len() >= libc::IFNAMSIZ {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "interface name too long",
            ));
        }
        let path = c"/dev/net/tun";
        // SAFETY: open(2) on a constant NUL-terminated path.
        let raw = unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a descriptor we just opened and own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut req = IfReq {
            name: [0; libc::IFNAMSIZ],
            flags: IFF_TAP | IFF_NO_PI,
            _pad: [0; 22],
        };
        req.name[..name.len()].copy_from_slice(name.as_bytes());
        // SAFETY: TUNSETIFF reads and writes a `struct ifreq`, which `IfReq` lays out.
        if unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF, &mut req) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Tap { fd })
    }

    /// One frame into `buf`, or None when none is waiting.
    pub fn read(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        // SAFETY: read(2) into a buffer we own, at most its length.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Ok(Some(n as usize));
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
            _ => Err(e),
        }
    }

    /// Hands `frame` to the host's kernel; false if its queue was full (the frame is lost,
    /// as on a NIC whose ring is full).
    pub fn write(&self, frame: &[u8]) -> io::Result<bool> {
        // SAFETY: write(2) from a buffer we own, its length.
        let n = unsafe { libc::write(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len()) };
        if n >= 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::WouldBlock => Ok(false),
            _ => Err(e),
        }
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Waits until one of `taps` has a frame or `timeout_ns` has passed.
pub fn wait_readable(taps: &[Tap], fds: &mut Vec<libc::pollfd>, timeout_ns: u64) -> io::Result<()> {
    fds.clear();
    fds.extend(taps.iter().map(|t| libc::pollfd {
        fd: t.raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }));
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: ppoll over descriptors we own, with a timeout we built; no signal mask.
    let r = unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            &ts,
            std::ptr::null(),
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}
