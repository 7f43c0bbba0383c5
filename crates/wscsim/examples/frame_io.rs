//! What a frame costs the emulator's core: a TAP device in the host's namespace against a
//! veth pair whose far end the emulator reads and writes through a packet socket (the two
//! designs issue 16 weighed). Needs root; makes two network namespaces named as
//! `wscsim emulate` names its own (so `wscsim emulate --cleanup` removes them after a
//! crash) and deletes them at the end.
//!
//!     cargo build --release -p wscsim --example frame_io
//!     target/release/examples/frame_io [frames] [payload_bytes]     # as root
//!
//! For each design, `frames` times: a UDP socket in the host's namespace sends a datagram
//! out of its interface; the emulator reads the frame; the emulator writes a frame addressed
//! to a second UDP socket in the host's namespace; that socket receives it. The emulator's
//! read and write calls are timed one by one (that time includes the kernel work they do on
//! the emulator's core: a TAP or packet-socket write runs the host's receive path), and the
//! whole loop once. Prints a JSON object per design. A developer's tool, not a test.

use std::io;
use std::net::UdpSocket;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Command;
use std::time::Instant;
use wscsim::emulate::tap::{in_namespace, Tap};
use wscsim::metrics::pcap::ipv4_checksum;

const HOST_MAC: [u8; 6] = [0x02, 0x57, 0x53, 0x00, 0x00, 0x01];
const PEER_MAC: [u8; 6] = [0x02, 0x57, 0x53, 0x00, 0x00, 0x02];
const HOST_IP: [u8; 4] = [10, 9, 0, 1];
const PEER_IP: [u8; 4] = [10, 9, 0, 2];
const SEND_PORT: u16 = 9000;
const RECV_PORT: u16 = 9001;
/// From <linux/if_packet.h>.
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;

fn ip(args: &[&str]) -> io::Result<()> {
    let out = Command::new("ip").args(args).output()?;
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        return Err(io::Error::other(format!(
            "ip {}: {}",
            args.join(" "),
            why.trim()
        )));
    }
    Ok(())
}

/// The namespaces, deleted when dropped (however the measurement ends).
struct Namespaces(Vec<String>);

impl Namespaces {
    fn new() -> io::Result<Namespaces> {
        let pid = std::process::id();
        let mut made = Namespaces(vec![]);
        for h in 0..2 {
            let name = format!("wscsim-{pid}-h{h}");
            ip(&["netns", "add", &name])?;
            made.0.push(name);
        }
        Ok(made)
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for name in &self.0 {
            let _ = ip(&["netns", "del", name]);
        }
    }
}

/// The host's side of an interface: address, MAC, up, and the peer's MAC (no ARP).
fn configure_host(netns: &str, dev: &str) -> io::Result<()> {
    let mac = mac_text(&HOST_MAC);
    ip(&[
        "-n", netns, "link", "set", dev, "address", &mac, "mtu", "1500", "up",
    ])?;
    ip(&["-n", netns, "link", "set", "lo", "up"])?;
    ip(&["-n", netns, "addr", "add", "10.9.0.1/24", "dev", dev])?;
    let peer = mac_text(&PEER_MAC);
    ip(&[
        "-n",
        netns,
        "neigh",
        "replace",
        "10.9.0.2",
        "lladdr",
        &peer,
        "dev",
        dev,
        "nud",
        "permanent",
    ])
}

fn mac_text(m: &[u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// The host's two UDP sockets: one sending to the peer, one receiving what the emulator writes.
fn host_sockets(netns: &str) -> io::Result<(UdpSocket, UdpSocket)> {
    in_namespace(netns, || {
        let tx = UdpSocket::bind(("10.9.0.1", SEND_PORT))?;
        tx.connect(("10.9.0.2", 7))?;
        let rx = UdpSocket::bind(("10.9.0.1", RECV_PORT))?;
        rx.set_nonblocking(true)?;
        Ok((tx, rx))
    })
}

/// A frame from the peer to the host's receiving socket, with a valid IP header checksum
/// (UDP checksum 0: none, as IPv4 allows).
fn frame_to_host(payload_bytes: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(42 + payload_bytes);
    f.extend_from_slice(&HOST_MAC);
    f.extend_from_slice(&PEER_MAC);
    f.extend_from_slice(&[0x08, 0x00]);
    let total = (20 + 8 + payload_bytes) as u16;
    let mut iph = [0u8; 20];
    iph[0] = 0x45;
    iph[2..4].copy_from_slice(&total.to_be_bytes());
    iph[8] = 64;
    iph[9] = 17;
    iph[12..16].copy_from_slice(&PEER_IP);
    iph[16..20].copy_from_slice(&HOST_IP);
    let check = ipv4_checksum(&iph);
    iph[10..12].copy_from_slice(&check.to_be_bytes());
    f.extend_from_slice(&iph);
    f.extend_from_slice(&SEND_PORT.to_be_bytes());
    f.extend_from_slice(&RECV_PORT.to_be_bytes());
    f.extend_from_slice(&((8 + payload_bytes) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.resize(42 + payload_bytes, 0x5a);
    f
}

/// The emulator's end of a host's interface.
trait FrameEnd {
    fn read(&self, buf: &mut [u8]) -> io::Result<Option<usize>>;
    fn write(&self, frame: &[u8]) -> io::Result<bool>;
}

impl FrameEnd for Tap {
    fn read(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        Tap::read(self, buf)
    }
    fn write(&self, frame: &[u8]) -> io::Result<bool> {
        Tap::write(self, frame)
    }
}

/// A packet socket bound to one interface, non-blocking, not seeing its own frames.
struct PacketSocket(OwnedFd);

impl PacketSocket {
    fn open_in(netns: &str, dev: &str) -> io::Result<PacketSocket> {
        in_namespace(netns, || {
            let proto = (libc::ETH_P_ALL as u16).to_be();
            // SAFETY: socket(2) with constant arguments.
            let raw = unsafe {
                libc::socket(
                    libc::AF_PACKET,
                    libc::SOCK_RAW | libc::SOCK_NONBLOCK,
                    proto as i32,
                )
            };
            if raw < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: a descriptor we just made and own.
            let fd = unsafe { OwnedFd::from_raw_fd(raw) };
            let name = std::ffi::CString::new(dev).map_err(io::Error::other)?;
            // SAFETY: a NUL-terminated name.
            let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
            // SAFETY: zeroed sockaddr_ll is valid; we fill the fields bind reads.
            let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_protocol = proto;
            sll.sll_ifindex = index as i32;
            let len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            // SAFETY: bind with the sockaddr_ll we built and its size.
            if unsafe {
                libc::bind(
                    fd.as_raw_fd(),
                    (&sll as *const libc::sockaddr_ll).cast(),
                    len,
                )
            } != 0
            {
                return Err(io::Error::last_os_error());
            }
            let one: libc::c_int = 1;
            let size = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
            // SAFETY: an int option, its size.
            let r = unsafe {
                libc::setsockopt(
                    fd.as_raw_fd(),
                    libc::SOL_PACKET,
                    PACKET_IGNORE_OUTGOING,
                    (&one as *const libc::c_int).cast(),
                    size,
                )
            };
            if r != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(PacketSocket(fd))
        })
    }
}

impl FrameEnd for PacketSocket {
    fn read(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        // SAFETY: recv(2) into a buffer we own, at most its length.
        let n = unsafe { libc::recv(self.0.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n >= 0 {
            return Ok(Some(n as usize));
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::WouldBlock => Ok(None),
            _ => Err(e),
        }
    }
    fn write(&self, frame: &[u8]) -> io::Result<bool> {
        // SAFETY: send(2) from a buffer we own, its length.
        let n = unsafe { libc::send(self.0.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
        Ok(n >= 0)
    }
}

/// Nanoseconds per frame: the emulator's read, its write, and the whole loop.
fn measure(
    end: &dyn FrameEnd,
    tx: &UdpSocket,
    rx: &UdpSocket,
    frames: usize,
    payload_bytes: usize,
) -> io::Result<[f64; 5]> {
    let payload = vec![0xa5u8; payload_bytes];
    let frame = frame_to_host(payload_bytes);
    let mut buf = vec![0u8; 2048];
    let (mut read_ns, mut write_ns, mut empty_reads, mut empty_recvs) = (0u128, 0u128, 0u64, 0u64);
    let start = Instant::now();
    for _ in 0..frames {
        tx.send(&payload)?;
        loop {
            let t = Instant::now();
            let got = end.read(&mut buf)?;
            read_ns += t.elapsed().as_nanos();
            match got {
                Some(n) if n >= 42 && buf[12..14] == [0x08, 0x00] => break,
                Some(_) => {}
                None => empty_reads += 1,
            }
        }
        let t = Instant::now();
        if !end.write(&frame)? {
            return Err(io::Error::other("the interface refused a frame"));
        }
        write_ns += t.elapsed().as_nanos();
        while rx.recv(&mut buf).is_err() {
            empty_recvs += 1;
        }
    }
    let total = start.elapsed().as_nanos() as f64 / frames as f64;
    let n = frames as f64;
    Ok([
        read_ns as f64 / n,
        write_ns as f64 / n,
        total,
        empty_reads as f64 / n,
        empty_recvs as f64 / n,
    ])
}

fn report(design: &str, r: [f64; 5], frames: usize, payload_bytes: usize) {
    println!(
        "{{\"design\": \"{design}\", \"frames\": {frames}, \"payload_bytes\": {payload_bytes}, \"read_ns\": {:.0}, \"write_ns\": {:.0}, \
         \"loop_ns\": {:.0}, \"empty_reads_per_frame\": {:.3}, \"empty_recvs_per_frame\": {:.3}}}",
        r[0], r[1], r[2], r[3], r[4]
    );
}

fn main() -> io::Result<()> {
    let mut args = std::env::args().skip(1);
    let frames: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(200_000);
    let payload_bytes: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1472)
        .clamp(18, 1472);
    let ns = Namespaces::new()?;
    let (host_tap, emu_side) = (&ns.0[0], &ns.0[1]);
    let tap = Tap::open_in(host_tap, "eth0")?;
    configure_host(host_tap, "eth0")?;
    let (tx, rx) = host_sockets(host_tap)?;
    measure(&tap, &tx, &rx, frames / 10, payload_bytes)?; // warm up
    report(
        "tap",
        measure(&tap, &tx, &rx, frames, payload_bytes)?,
        frames,
        payload_bytes,
    );
    drop((tap, tx, rx));
    ip(&["-n", host_tap, "link", "del", "eth0"]).ok();
    // The veth pair: eth1 in the host's namespace, its peer in the emulator's.
    ip(&[
        "link", "add", "eth1", "netns", host_tap, "type", "veth", "peer", "name", "emu0", "netns",
        emu_side,
    ])?;
    configure_host(host_tap, "eth1")?;
    ip(&["-n", emu_side, "link", "set", "emu0", "up"])?;
    let sock = PacketSocket::open_in(emu_side, "emu0")?;
    let (tx, rx) = host_sockets(host_tap)?;
    measure(&sock, &tx, &rx, frames / 10, payload_bytes)?;
    report(
        "veth+packet socket",
        measure(&sock, &tx, &rx, frames, payload_bytes)?,
        frames,
        payload_bytes,
    );
    Ok(())
}
