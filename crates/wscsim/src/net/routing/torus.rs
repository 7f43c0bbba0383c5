//! Shortest-path forwarding on a torus (a k-ary 3-cube, or 2D when one dimension is 1), as
//! CamCube's servers do: along every axis where the destination differs, the direction
//! that is shorter around the ring is on a shortest path (both when the offset is exactly
//! half of an even ring). A packet may take any of these next hops; the network takes the
//! first free one (`Network::torus_port`).
//!
//! Host `h` sits at (x, y, z) with h = x + X (y + Y z). Each server has one port per
//! direction along every axis of size 3 or more (+ and -), one along an axis of size 2
//! (both neighbours are the same server), none along an axis of size 1.

/// The six directions, in the order candidates are tried.
pub const DIRECTIONS: [(usize, bool); 6] = [
    (0, true),
    (0, false),
    (1, true),
    (1, false),
    (2, true),
    (2, false),
];

/// No port in that direction.
pub const NO_PORT: u8 = u8::MAX;

#[derive(Clone, Debug)]
pub struct TorusRouting {
    pub dims: [u32; 3],
    /// Per host, the local port of each direction of `DIRECTIONS` (NO_PORT if none) and its
    /// coordinates (each below 64), in 8 bytes: a lookup reads no divisions.
    pub hosts: Vec<TorusHost>,
}

#[derive(Clone, Copy, Debug)]
pub struct TorusHost {
    pub dir_port: [u8; 6],
    pub coords: [u8; 2],
    pub z: u8,
}

/// Coordinates of host `h` in a torus of `dims`.
#[inline]
pub fn coords(dims: [u32; 3], h: u32) -> [u32; 3] {
    [
        h % dims[0],
        (h / dims[0]) % dims[1],
        h / (dims[0] * dims[1]),
    ]
}

/// The host at coordinates `c`.
#[inline]
pub fn host_at(dims: [u32; 3], c: [u32; 3]) -> u32 {
    c[0] + dims[0] * (c[1] + dims[1] * c[2])
}

/// Hops between positions `a` and `b` on a ring of `k`.
#[inline]
pub fn ring_hops(k: u32, a: u32, b: u32) -> u32 {
    let d = (b + k - a) % k;
    d.min(k - d)
}

/// Hops on a shortest path between hosts `a` and `b`.
pub fn hops(dims: [u32; 3], a: u32, b: u32) -> u32 {
    let (ca, cb) = (coords(dims, a), coords(dims, b));
    (0..3).map(|i| ring_hops(dims[i], ca[i], cb[i])).sum()
}

/// Sum of the shortest-path hop counts from one host to every other (the same for every
/// host: a torus looks alike from everywhere).
pub fn total_hops_from_one(dims: [u32; 3]) -> u64 {
    // Per axis, the sum of ring distances from 0, times the positions of the other axes.
    let ring_sum = |k: u32| -> u64 { (0..k).map(|p| u64::from(ring_hops(k, 0, p))).sum() };
    let n: u64 = dims.iter().map(|&k| u64::from(k)).product();
    (0..3)
        .map(|i| ring_sum(dims[i]) * (n / u64::from(dims[i])))
        .sum()
}

/// The highest rate per server at which every server can send to destinations drawn
/// uniformly from all others, when every link of `link_rate_bps` carries the same load:
/// links x rate x (N - 1) / (sum of hop distances from one server).
pub fn expected_all_to_all_bps(dims: [u32; 3], link_rate_bps: u64) -> f64 {
    let n: u64 = dims.iter().map(|&k| u64::from(k)).product();
    f64::from(links_per_server(dims)) * link_rate_bps as f64 * (n - 1) as f64
        / total_hops_from_one(dims) as f64
}

/// Links of one server: two along an axis of 3 or more, one along an axis of 2 (the next
/// server is also the previous), none along an axis of 1.
pub fn links_per_server(dims: [u32; 3]) -> u32 {
    dims.iter()
        .map(|&k| match k {
            1 => 0,
            2 => 1,
            _ => 2,
        })
        .sum()
}

/// The neighbour of host `h` in direction `dir` (index into `DIRECTIONS`: +x, -x, +y, -y,
/// +z, -z), wrapping round; `h` itself along an axis of one server.
pub fn neighbour(dims: [u32; 3], h: u32, dir: usize) -> u32 {
    let (axis, plus) = DIRECTIONS[dir];
    let mut c = coords(dims, h);
    let k = dims[axis];
    c[axis] = if plus {
        (c[axis] + 1) % k
    } else {
        (c[axis] + k - 1) % k
    };
    host_at(dims, c)
}

impl TorusRouting {
    /// The servers of the torus (hosts numbered from 0; any other host is outside it).
    #[inline]
    pub fn servers(&self) -> u32 {
        self.dims[0] * self.dims[1] * self.dims[2]
    }

    /// The routing of a torus of `dims` whose host `h` has its port towards direction `d`
    /// at `dir_port[h][d]`.
    pub fn new(dims: [u32; 3], dir_port: Vec<[u8; 6]>) -> Self {
        assert!(dims.iter().all(|&k| (1..=64).contains(&k)));
        let hosts = dir_port
            .into_iter()
            .enumerate()
            .map(|(h, dir_port)| {
                let c = coords(dims, h as u32);
                TorusHost {
                    dir_port,
                    coords: [c[0] as u8, c[1] as u8],
                    z: c[2] as u8,
                }
            })
            .collect();
        TorusRouting { dims, hosts }
    }

    /// Local ports of `src` on a shortest path to `dst`, in direction order, and how many
    /// there are (none when `src == dst`).
    #[inline]
    pub fn next_ports(&self, src: u32, dst: u32) -> ([u8; 6], usize) {
        let (s, d) = (&self.hosts[src as usize], &self.hosts[dst as usize]);
        let cs = [s.coords[0], s.coords[1], s.z];
        let cd = [d.coords[0], d.coords[1], d.z];
        let mut out = [NO_PORT; 6];
        let mut n = 0;
        for axis in 0..3 {
            let k = self.dims[axis] as i32;
            let mut fwd = i32::from(cd[axis]) - i32::from(cs[axis]);
            if fwd == 0 {
                continue;
            }
            if fwd < 0 {
                fwd += k;
            }
            let back = k - fwd;
            let (plus, minus) = (s.dir_port[2 * axis], s.dir_port[2 * axis + 1]);
            if fwd <= back && plus != NO_PORT {
                out[n] = plus;
                n += 1;
            }
            if back <= fwd && minus != NO_PORT {
                out[n] = minus;
                n += 1;
            }
        }
        (out, n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_distances() {
        assert_eq!(ring_hops(8, 0, 3), 3);
        assert_eq!(ring_hops(8, 0, 5), 3);
        assert_eq!(ring_hops(8, 0, 4), 4);
        assert_eq!(ring_hops(3, 2, 0), 1);
    }

    /// The sum of distances has a closed form per ring: k^2/4 for even k, (k^2 - 1)/4 for
    /// odd k; the mean hop count of a k-ary 3-cube is 3 x that / k (over all positions,
    /// self included).
    #[test]
    fn total_hops_follow_the_closed_form() {
        for k in [3u32, 4, 8, 16] {
            let ring = if k % 2 == 0 {
                k * k / 4
            } else {
                (k * k - 1) / 4
            };
            let n = u64::from(k * k * k);
            assert_eq!(
                total_hops_from_one([k, k, k]),
                3 * u64::from(ring) * n / u64::from(k)
            );
            // Brute force over every destination.
            let brute: u64 = (0..k * k * k)
                .map(|d| u64::from(hops([k, k, k], 0, d)))
                .sum();
            assert_eq!(brute, total_hops_from_one([k, k, k]));
        }
    }

    /// The figures: 0.998 Gbit/s per server at 512 and 0.500 at 4,096 with
    /// 1 Gbit/s links.
    #[test]
    fn expected_rates() {
        let g = 1_000_000_000;
        let r512 = expected_all_to_all_bps([8, 8, 8], g) / 1e9;
        let r4096 = expected_all_to_all_bps([16, 16, 16], g) / 1e9;
        assert!((r512 - 0.998).abs() < 0.0005, "{r512}");
        assert!((r4096 - 0.500).abs() < 0.0005, "{r4096}");
        // 27 servers: 6 x 26 / (27 x 2 x ... ) = 6 x 26 / 54.
        assert!((expected_all_to_all_bps([3, 3, 3], g) / 1e9 - 6.0 * 26.0 / 54.0).abs() < 1e-9);
    }

    fn full_ports(n: u32) -> Vec<[u8; 6]> {
        vec![[0, 1, 2, 3, 4, 5]; n as usize]
    }

    /// The number of shortest next hops is the number of axes where the destination
    /// differs, plus one for each axis where it is exactly half way round an even ring.
    #[test]
    fn next_hop_counts() {
        let dims = [4, 4, 4];
        let r = TorusRouting::new(dims, full_ports(64));
        for dst in 0..64 {
            let (_, n) = r.next_ports(0, dst);
            let c = coords(dims, dst);
            let expect: usize = c
                .iter()
                .map(|&x| match x {
                    0 => 0,
                    2 => 2,
                    _ => 1,
                })
                .sum();
            assert_eq!(n, expect, "dst {c:?}");
        }
        // (1, 3, 0) from the origin: +x, and -y (3 is one step back).
        let (p, n) = r.next_ports(0, host_at(dims, [1, 3, 0]));
        assert_eq!(&p[..n], &[0, 3]);
    }

    #[test]
    fn every_next_hop_is_one_step_closer() {
        let dims = [5, 4, 3];
        let n = 60;
        let r = TorusRouting::new(dims, full_ports(n));
        for src in 0..n {
            for dst in 0..n {
                let (p, cnt) = r.next_ports(src, dst);
                for &local in &p[..cnt] {
                    let (axis, plus) = DIRECTIONS[local as usize];
                    let mut c = coords(dims, src);
                    let k = dims[axis];
                    c[axis] = if plus {
                        (c[axis] + 1) % k
                    } else {
                        (c[axis] + k - 1) % k
                    };
                    assert_eq!(hops(dims, host_at(dims, c), dst) + 1, hops(dims, src, dst));
                }
                assert_eq!(cnt == 0, src == dst);
            }
        }
    }
}
