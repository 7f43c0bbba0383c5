"""The 3D torus (CamCube): servers that forward, shortest paths, no switches; the expected
all-to-all rate; 2D tori; link failures. Expected values come from the torus's formulas,
computed here, never from an earlier run."""

import filecmp
import itertools
import math

import pytest

import wscsim
from conftest import run


def coords(dims, h):
    x, y, z = dims
    return h % x, (h // x) % y, h // (x * y)


def ring(k, a, b):
    """Hops between positions a and b on a ring of k."""
    d = (b - a) % k
    return min(d, k - d)


def hops(dims, a, b):
    return sum(ring(k, p, q) for k, p, q in zip(dims, coords(dims, a), coords(dims, b)))


def distances_from_0(dims):
    """Shortest-path hop counts from server 0 to every other (by brute force; a torus looks
    the same from every server)."""
    n = math.prod(dims)
    return [hops(dims, 0, d) for d in range(1, n)]


def links_per_server(dims):
    """Links of one server: two along an axis of 3 or more, one along an axis of 2 (the
    next server is also the previous), none along an axis of 1."""
    return sum(2 if k >= 3 else 1 if k == 2 else 0 for k in dims)


def expected_gbps(dims, link_gbps=1.0):
    """The rate per server at which all-to-all traffic loads every link fully: each server's
    links carry links x rate, shared over the mean path of sum(hops) / (N - 1) links."""
    d = distances_from_0(dims)
    return links_per_server(dims) * link_gbps * len(d) / sum(d)


def udp_torus(dims, load, duration, destination="random", **workload):
    return {
        "name": "torus",
        "duration": duration,
        "topology": {"kind": "torus3d", "dims": list(dims)},
        "transport": {"kind": "udp"},
        "workload": {"kind": "udp", "destination": destination, "load": load, **workload},
        "metrics": {"max_queue_samples": 0},
    }


def test_the_formulas_here_give_the_issues_figures():
    # 6 links x 1 Gbit/s x 511 / 3,072 at 512 servers; 0.500 at 4,096; 2.889 at 27.
    assert sum(distances_from_0([8, 8, 8])) == 3072
    assert expected_gbps([8, 8, 8]) == pytest.approx(6 * 1e9 * 511 / 3072 / 1e9)
    assert expected_gbps([16, 16, 16]) == pytest.approx(0.500, abs=5e-4)
    assert expected_gbps([3, 3, 3]) == pytest.approx(6 * 26 / 54)


def test_packets_take_shortest_paths_at_low_load():
    """packet_hops counts every transmission, and on a torus each is one hop, so the hops of
    all packets sent, over the number sent, is their mean path length; with destinations
    drawn uniformly from the other servers it estimates sum(hops) / (N - 1)."""
    dims = [5, 4, 3]
    # Small datagrams: many packets (about 30,000) for a small sampling error.
    res = run(udp_torus(dims, load=0.2, duration="10ms", packet_size=972))
    inv, s = res.summary["invariants"], res.summary
    assert inv["packets_dropped"] == 0 and res.headline["drops"] == 0
    assert s["switches"] == 0 and s["hosts"] == 60
    d = distances_from_0(dims)
    mean = sum(d) / len(d)
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / len(d))
    sent, in_flight = inv["packets_sent"], inv["packets_in_flight"]
    assert sent > 20_000
    # A packet still in flight at the end has made from 0 to all of its hops, at most the
    # torus's diameter; so the hops of all packets sent, had they all arrived, lie in
    # [packet_hops, packet_hops + in_flight x diameter].
    diameter = sum(k // 2 for k in dims)
    low, high = s["packet_hops"] / sent, (s["packet_hops"] + in_flight * diameter) / sent
    # Every datagram carries payload, so every hop is a data hop.
    assert s["data_packet_hops"] == s["packet_hops"]
    # Each packet's destination is an independent uniform draw: the mean of `sent` path
    # lengths is within 4 standard errors of the torus's mean nearly always (p < 1e-4).
    tol = 4 * sd / math.sqrt(sent)
    assert low - tol <= mean <= high + tol, (low, high, mean, tol)
    # The bracket is tight enough to tell a path from a path plus one hop.
    assert high - low + 2 * tol < 0.1


def test_no_switch_on_any_path_and_every_port_a_server_link():
    dims = [4, 4, 4]
    res = run(udp_torus(dims, load=0.2, duration="2ms"))
    assert res.summary["switches"] == 0
    links = res.links
    assert (links["kind"] == "nic").all()
    names = {f"h{i}" for i in range(64)}
    assert set(links["node_name"]) == names and set(links["peer_name"]) <= names
    # Every port leads to a neighbour one hop away.
    for a, b in zip(links["node_name"], links["peer_name"]):
        assert hops(dims, int(a[1:]), int(b[1:])) == 1, (a, b)
    assert res.summary["invariants"]["ok"]


def test_same_seed_same_tables_other_seed_differs(tmp_path):
    sc = udp_torus([4, 4, 2], load=0.5, duration="3ms")
    a = wscsim.run(dict(sc), out=tmp_path / "a", seed=4, plots=False)
    b = wscsim.run(dict(sc), out=tmp_path / "b", seed=4, plots=False)
    c = wscsim.run(dict(sc), out=tmp_path / "c", seed=5, plots=False)
    tables = sorted(p.name for p in (tmp_path / "a").glob("*.parquet"))
    assert {"flows.parquet", "links.parquet"} <= set(tables)
    for t in tables:
        assert filecmp.cmp(tmp_path / "a" / t, tmp_path / "b" / t, shallow=False), t
    assert a.summary["packet_hops"] == b.summary["packet_hops"] and a.headline == b.headline
    # Another seed draws other destinations: other ports carry the traffic.
    assert not a.links["tx_bytes"].equals(c.links["tx_bytes"])
    assert a.summary["invariants"]["ok"] and c.summary["invariants"]["ok"]


def test_all_to_all_at_512_servers_delivers_the_expected_rate():
    # At load 1.0 every link is loaded fully on average; 40 ms (under a second of wall
    # time) is long enough for the second half of the run to be past the start.
    res = run(udp_torus([8, 8, 8], load=1.0, duration="40ms"))
    h = res.headline
    assert h["expected_gbps_per_server"] == pytest.approx(6 * 1e9 * 511 / 3072 / 1e9, rel=1e-12)
    assert h["expected_gbps_per_server"] == pytest.approx(expected_gbps([8, 8, 8]), rel=1e-12)
    assert 0.95 <= h["delivered_fraction_of_expected"] <= 1.05, h
    assert h["delivered_gbps_per_server"] == pytest.approx(h["delivered_fraction_of_expected"] * h["expected_gbps_per_server"])
    assert h["drops"] == 0
    # The resolved rate is written back: load x expected, in IP bytes (9,000 of each
    # 9,038-byte jumbo frame on the wire).
    rate = res.summary["scenario"]["workload"]["rate"]
    assert rate.endswith("Kbps")
    assert float(rate[:-4]) * 1e3 == pytest.approx(expected_gbps([8, 8, 8]) * 1e9 * 9000 / 9038, rel=1e-6)


def test_a_2d_torus_gives_each_server_four_links():
    dims = [6, 6, 1]
    res = run(udp_torus(dims, load=0.5, duration="3ms"))
    links = res.links
    per_node = links.groupby("node_name").size()
    assert len(per_node) == 36 and (per_node == 4).all()
    # The four are the server's +x, -x, +y and -y neighbours.
    for h in range(36):
        x, y, _ = coords(dims, h)
        want = {f"h{(x + dx) % 6 + 6 * ((y + dy) % 6)}" for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1))}
        assert set(links.loc[links["node_name"] == f"h{h}", "peer_name"]) == want
    assert res.headline["expected_gbps_per_server"] == pytest.approx(expected_gbps(dims))
    assert res.summary["switches"] == 0


def test_a_failed_link_drops_what_it_carries_and_conserves_packets():
    sc = udp_torus([3, 3, 3], load=0.5, duration="10ms")
    sc["failures"] = [{"link": ["h0", "h1"], "at": "2ms", "until": "6ms"}]
    res = run(sc)
    h = res.headline
    assert h["link_down_drops"] > 0
    assert h["drops"] >= h["link_down_drops"]
    assert res.summary["invariants"]["ok"]
    # Without the failure nothing is lost.
    clean = run(udp_torus([3, 3, 3], load=0.5, duration="10ms"))
    assert clean.headline["drops"] == 0 and "link_down_drops" not in clean.headline


def test_reachable_destinations_skip_the_servers_a_sender_knows_have_failed():
    """With a fifth of the servers failed from the start (known to every view), "random"
    still draws failed servers, whose datagrams are dropped at the sender; "random_reachable"
    draws only live ones, so at a load the survivors carry, nothing is lost and more arrives."""
    failures = [{"random_nodes": 0.2, "at": "0ms"}]
    res = {}
    for dest in ("random", "random_reachable"):
        sc = udp_torus([4, 4, 4], load=0.3, duration="10ms", destination=dest)
        sc["failures"] = failures
        res[dest] = run(sc)
        assert res[dest].summary["invariants"]["ok"]
    assert res["random"].headline["unroutable_drops"] > 0
    assert res["random_reachable"].headline["drops"] == 0
    assert "unroutable_drops" not in res["random_reachable"].headline
    got = {d: r.headline["delivered_gbps_per_server_whole_run"] for d, r in res.items()}
    assert got["random_reachable"] > got["random"], got


@pytest.mark.parametrize("dims", [[2, 3, 4], [3, 3, 2]])
def test_an_axis_of_two_has_one_link(dims):
    res = run(udp_torus(dims, load=0.5, duration="2ms"))
    per_node = res.links.groupby("node_name").size()
    assert (per_node == links_per_server(dims)).all()
    assert res.headline["expected_gbps_per_server"] == pytest.approx(expected_gbps(dims))


def test_every_ordered_pair_counts_once_in_the_formula():
    # sum(hops) over all ordered pairs is N x the sum from one server (the torus is
    # vertex-transitive); checked by brute force on a small one.
    dims = [3, 4, 2]
    n = math.prod(dims)
    total = sum(hops(dims, a, b) for a, b in itertools.product(range(n), repeat=2))
    assert total == n * sum(distances_from_0(dims))


def leaf_spine_all_to_all(oversubscription):
    return {
        "name": "switched",
        "duration": "10ms",
        "topology": {"kind": "leaf_spine", "leaves": 8, "spines": 4, "hosts_per_leaf": 8,
                     "oversubscription": oversubscription, "link": {"technology": "1gbe_jumbo"}},
        "transport": {"kind": "udp"},
        "workload": {"kind": "udp", "destination": "random", "rate": "995Mbps"},
        "metrics": {"max_queue_samples": 0},
    }


def test_a_switched_all_to_all_delivers_what_its_uplinks_allow(tmp_path):
    """CamCubeOS Figure 5a's comparison: all-to-all at line rate through a leaf-spine. At
    1:1 the servers' own links bound it; at 1:2 a leaf's links from the spines (half its
    servers' capacity) bound what comes from other leaves, and with no flow control the
    servers of its own leaf still send their share at line rate, so each server gets at
    most that share plus the spines' links over the servers of a leaf. A plot of switched
    runs alone is no torus plot."""
    hosts, per_leaf = 64, 8
    wire_gbps = 1.0
    full = run(leaf_spine_all_to_all(1))
    half = run(leaf_spine_all_to_all(2))
    same_leaf = (per_leaf - 1) / (hosts - 1) * wire_gbps
    bound_half = same_leaf + (per_leaf * wire_gbps / 2) / per_leaf
    assert 0.85 * wire_gbps <= full.headline["delivered_gbps_per_server"] <= wire_gbps
    assert 0.85 * bound_half <= half.headline["delivered_gbps_per_server"] <= 1.01 * bound_half
    assert "expected_gbps_per_server" not in full.headline
    from wscsim import plots
    t = plots.torus_throughput([full.headline, half.headline], [full.summary, half.summary], ["1:1", "1:2"])
    assert list(t["switched"]) == [1.0, 2.0]
    assert not plots.plot_torus_throughput(t, tmp_path / "t.png")


def test_one_hop_traffic_gets_the_link_figures_not_the_all_to_all_ones():
    """CamCubeOS Figure 4a's measure: with destination "neighbours" every packet takes one
    link, and a saturated link carries IP bytes at most 9,000 of every 9,038 on the wire
    (jumbo frames and their framing); the all-to-all figures, meaningless here, are absent.
    Round-robin destinations through a switch are not the random all-to-all either."""
    res = run(udp_torus([3, 3, 3], load=1.0, duration="5ms", destination="neighbours", links=2))
    h = res.headline
    assert 0.97 <= h["median_link_throughput_fraction"] <= 9000 / 9038 + 1e-9
    assert "expected_gbps_per_server" not in h and "delivered_gbps_per_server" not in h
    sc = leaf_spine_all_to_all(1)
    sc["workload"]["destination"] = "round_robin"
    assert "delivered_gbps_per_server" not in run(sc).headline
