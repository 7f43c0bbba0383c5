"""Queue occupancy per switch port, from a run's queue samples: each port's sample count,
mean and peak, and the complementary CDF of its occupancy. No matplotlib here: a sweep's
workers make each point's curves as the point finishes, and the figure draws them."""

from __future__ import annotations

import numpy as np
import pandas as pd

# The queue figure draws at most this many ports of a point (the busiest): a 2,000-node
# array has hundreds of ports with a queue, and a reader wants the worst ones.
DRAWN_PORTS = 40


def port_queues(queues: pd.DataFrame, links: pd.DataFrame | None) -> pd.DataFrame:
    """One row per sampled switch port (per sweep point): point, node, port, samples, mean
    and peak queue (bytes), and a name ("tor3 port 31 -> array0") from the links table.
    A run's tables get point 0."""
    keys = ["point", "node", "port"]
    ports = _port_stats(queues)
    ports["name"] = "node " + ports["node"].astype(str) + " port " + ports["port"].astype(str)
    if links is not None and not links.empty:
        lk = links if "point" in links.columns else links.assign(point=0)
        lk = lk[lk["kind"] == "switch"][keys + ["node_name", "peer_name"]]
        ports = ports.merge(lk, on=keys, how="left")
        named = ports["node_name"].notna()
        ports.loc[named, "name"] = ports["node_name"][named].astype(str) + " port " + ports["port"][named].astype(str) + " \u2192 " + ports["peer_name"][named].astype(str)
        ports = ports.drop(columns=["node_name", "peer_name"])
    # Busiest first: highest mean queue, then highest peak; the name breaks ties stably.
    return ports.sort_values(["point", "mean", "peak", "name"], ascending=[True, False, False, True], ignore_index=True)


def _port_keys(queues: pd.DataFrame) -> np.ndarray:
    """One int64 per sample naming its (point, node, port), ordered as the triples are."""
    point = queues["point"].to_numpy(np.int64) if "point" in queues.columns else np.zeros(len(queues), np.int64)
    node, port = queues["node"].to_numpy(np.int64), queues["port"].to_numpy(np.int64)
    nodes, ports = int(node.max(initial=0)) + 1, int(port.max(initial=0)) + 1
    return (point * nodes + node) * ports + port


def _port_stats(queues: pd.DataFrame) -> pd.DataFrame:
    """point, node, port, samples, mean and peak queue of every sampled port. With numpy
    over one integer key per sample: a sweep's queues table has millions of rows, and a
    three-column groupby over them took seconds."""
    codes, keys = pd.factorize(_port_keys(queues), sort=True)
    size = queues["queue_bytes"].to_numpy()
    samples = np.bincount(codes, minlength=len(keys))
    busy = size > 0  # most samples are empty queues, which cannot raise a peak
    peak = np.zeros(len(keys), dtype=size.dtype)
    np.maximum.at(peak, codes[busy], size[busy])
    first = np.zeros(len(keys), dtype=np.int64)
    first[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)  # each port's first row
    rows = queues.iloc[first]
    return pd.DataFrame({"point": rows["point"].to_numpy() if "point" in rows.columns else 0,
                         "node": rows["node"].to_numpy(), "port": rows["port"].to_numpy(), "samples": samples,
                         "mean": np.bincount(codes, weights=size, minlength=len(keys)) / samples, "peak": peak})


def queue_ccdf(positive: np.ndarray, samples: int, steps: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """The fraction of a port's `samples` with a queue of at least x bytes, at up to `steps`
    occupancies x > 0 taken from its non-zero samples (zeros only count in `samples`, since
    a log axis has no zero: the curve starts at the fraction of time the port was busy)."""
    v = np.sort(np.asarray(positive, dtype=float))
    xs = np.unique(np.quantile(v, np.linspace(0, 1, steps), method="inverted_cdf"))
    return xs, (len(v) - np.searchsorted(v, xs, side="left")) / samples


def _positive_samples(queues: pd.DataFrame, wanted: pd.DataFrame) -> dict:
    """(point, node, port) -> that port's non-zero queue samples, for the `wanted` ports."""
    q = queues if "point" in queues.columns else queues.assign(point=0)
    q = q[q["queue_bytes"] > 0]
    keys = ["point", "node", "port"]
    q = q.merge(wanted[keys], on=keys, how="inner")
    return {k: g["queue_bytes"].to_numpy() for k, g in q.groupby(keys, sort=True)}


def _wanted_ports(ports: pd.DataFrame, per_point: int) -> pd.DataFrame:
    """The busiest `per_point` ports of each point that ever held a queue."""
    return ports[ports["peak"] > 0].groupby("point", sort=True).head(per_point)


def queue_curves(queues: pd.DataFrame, links: pd.DataFrame | None, per_point: int = DRAWN_PORTS) -> tuple[pd.DataFrame, dict]:
    """What the queue figure draws: every sampled port (port_queues), and the CCDF (xs, ys)
    of the busiest `per_point` ports of each point that ever held a queue, by (point, node,
    port). A sweep makes them point by point as its points finish (`point` renumbers a
    single point's tables), so that its figure needs no queue samples at all."""
    ports = port_queues(queues, links)
    wanted = _wanted_ports(ports, per_point)
    samples = _positive_samples(queues, wanted)
    curves = {(r.point, r.node, r.port): queue_ccdf(samples[(r.point, r.node, r.port)], r.samples) for r in wanted.itertuples()}
    return ports, curves


def renumbered(prepared: tuple[pd.DataFrame, dict], point: int) -> tuple[pd.DataFrame, dict]:
    """queue_curves of a single point's tables as those of sweep point `point`."""
    ports, curves = prepared
    return ports.assign(point=point), {(point, node, port): c for (_, node, port), c in curves.items()}


def joined(parts: list[tuple[pd.DataFrame, dict]]) -> tuple[pd.DataFrame, dict]:
    """queue_curves of the points one after another, as queue_curves of their tables gives."""
    curves = {}
    for _, c in parts:
        curves.update(c)
    return pd.concat([p for p, _ in parts], ignore_index=True), curves
