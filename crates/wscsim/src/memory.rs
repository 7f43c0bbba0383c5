//! How much memory a run may take, and what happens when it takes more.
//!
//! The limit is the smallest of the machine's memory, what the address-space limit
//! (`ulimit -v`, RLIMIT_AS) leaves beside what the process has mapped already, and what
//! its cgroup's limit leaves: a network that needs more is refused at check time
//! (`topology::size::check_fits`). An allocation that fails anyway ends the process with
//! one line (`OneLineOnFailure`) instead of Rust's abort and backtrace.

use std::alloc::{GlobalAlloc, Layout, System};

/// What bounds the memory a run may use: bytes, and which limit that is, in words.
pub fn memory_limit() -> Option<(u64, &'static str)> {
    let limits = [
        (machine_memory_bytes(), "this machine's memory"),
        (
            address_space_left(),
            "what the address-space limit (ulimit -v) leaves",
        ),
        (
            cgroup_memory_left(),
            "what the cgroup's memory limit leaves",
        ),
    ];
    limits
        .into_iter()
        .filter_map(|(b, what)| b.map(|b| (b, what)))
        .min_by_key(|&(b, _)| b)
}

/// Reads at most 64 KiB of a small system file.
fn read_small(path: &str) -> Option<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(64 * 1024)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

/// A `Name:   123 kB` line of a /proc file, in bytes.
fn kib_field(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Physical memory of this machine in bytes (None where it cannot be read).
pub fn machine_memory_bytes() -> Option<u64> {
    kib_field(&read_small("/proc/meminfo")?, "MemTotal:")
}

/// RLIMIT_AS less the address space already mapped (None when unlimited).
fn address_space_left() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given and nothing else.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut lim) } != 0
        || lim.rlim_cur == libc::RLIM_INFINITY
    {
        return None;
    }
    let mapped = kib_field(&read_small("/proc/self/status")?, "VmSize:").unwrap_or(0);
    Some(lim.rlim_cur.saturating_sub(mapped))
}

/// The cgroup's memory limit less its use (cgroup v2, then v1; None when unlimited).
fn cgroup_memory_left() -> Option<u64> {
    let number = |p: &str| read_small(p)?.trim().parse::<u64>().ok();
    let (max, current) = match number("/sys/fs/cgroup/memory.max") {
        Some(m) => (m, number("/sys/fs/cgroup/memory.current").unwrap_or(0)),
        None => (
            number("/sys/fs/cgroup/memory/memory.limit_in_bytes")?,
            number("/sys/fs/cgroup/memory/memory.usage_in_bytes").unwrap_or(0),
        ),
    };
    // v1 writes "no limit" as a number near 2^63.
    (max < 1 << 60).then(|| max.saturating_sub(current))
}

/// The system allocator, ending the process with one line on stderr when an allocation
/// fails (exit status 1) instead of Rust's abort with a backtrace. For the programs and
/// modules that make it their global allocator.
pub struct OneLineOnFailure;

fn out_of_memory(bytes: usize) -> ! {
    // No allocation here: the message is built in a fixed buffer.
    let mut buf = [0u8; 256];
    let mut n = 0;
    let mut put = |s: &[u8]| {
        for &b in s {
            if n < buf.len() {
                buf[n] = b;
                n += 1;
            }
        }
    };
    put(b"error: memory: allocating ");
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut v = bytes;
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    put(&digits[i..]);
    put(b" bytes failed; allowed: a run within this process's memory (the machine, ulimit -v or the cgroup limit); no results were written\n");
    // SAFETY: write and _exit are async-signal-safe and touch only the buffer given.
    unsafe {
        libc::write(2, buf.as_ptr().cast(), n);
        libc::_exit(1)
    }
}

// SAFETY: every call is passed to the system allocator unchanged; only a null result (a
// failed allocation) is handled, by ending the process.
unsafe impl GlobalAlloc for OneLineOnFailure {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if p.is_null() {
            out_of_memory(layout.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if p.is_null() {
            out_of_memory(layout.size());
        }
        p
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if p.is_null() {
            out_of_memory(new_size);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_at_most_the_machines_memory() {
        let (bytes, _) = memory_limit().unwrap();
        assert!(bytes <= machine_memory_bytes().unwrap());
        assert_eq!(kib_field("VmSize:\t  12 kB\n", "VmSize:"), Some(12 * 1024));
    }
}
