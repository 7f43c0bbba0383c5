"""What the command line prints: a run's or sweep's summary as rich tables, and the
catalogue of bundled scenarios and models."""

from __future__ import annotations

import re

# Headline figures that answer each kind of experiment, in the order a reader wants them;
# any others follow. A sweep's table shows only these (all of them with -v).
FIRST = ("rpc_mean_us", "rpc_min_us", "rpc_max_us", "rpc_mib_per_s", "rpcs_unfinished", "p50_latency_us", "p99_latency_us", "p999_latency_us", "mean_latency_us", "incast_goodput_mbps",
         "incast_mean_iteration_us", "dma_write_gbytes_per_s", "dma_read_gbytes_per_s", "dma_load_mean_us",
         "dma_write_mean_us", "dma_remaps", "dma_packets_dropped", "job_seconds", "kv_write_gbps", "kv_ops_per_s", "kv_median_latency_us", "kv_p95_latency_us",
         "kv_acknowledged_writes_lost", "kv_retries", "median_inbound_gbps_per_server", "min_inbound_gbps_per_server",
         "mean_fct_us", "median_delivered_gbps_per_live_server", "delivered_gbps_per_server", "expected_gbps_per_server",
         "delivered_fraction_of_expected", "median_link_throughput_fraction", "link_throughput_spread",
         "median_cpu_utilisation", "aggregate_goodput_gbps", "key_drop_fraction", "key_packets_misdelivered",
         "key_packets_sent", "key_packets_dropped", "mean_ping_rtt_us", "pings_returned",
         "multicast_min_gbps_per_member", "multicast_median_gbps_per_member", "transfers_completed", "drops", "link_down_drops",
         "unroutable_drops", "tcp_timeouts")


def fmt_value(v) -> str:
    """A table cell: thousands separators, four significant figures below a million."""
    if isinstance(v, float):
        return f"{v:,.4g}" if abs(v) < 1e6 else f"{v:,.0f}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v)


# A job does the same work at every point, so its energy is its efficiency: shown too.
JOB_ENERGY = ("energy_j", "mean_power_w", "network_power_per_server_w")


def first_keys(keys: list[str]) -> tuple[str, ...]:
    """The figures shown first (in a sweep's table, the only ones without -v)."""
    return FIRST + (JOB_ENERGY if "job_seconds" in keys else ())


def headline_keys(keys) -> list[str]:
    keys = list(keys)
    first = first_keys(keys)
    return [k for k in first if k in keys] + sorted(k for k in keys if k not in first)


def points_columns(pts) -> tuple[list[str], list[str]]:
    """A sweep's points table: its swept columns, and its headline figures in reading order
    (names without the `headline_` prefix)."""
    swept = [c for c in pts.columns if not c.startswith("headline_") and c not in ("point", "invariants_ok")]
    heads = headline_keys(c.removeprefix("headline_") for c in pts.columns if c.startswith("headline_"))
    return swept, heads


def print_summary(res, verbose: bool = False, console=None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    s = res.summary
    name = s["scenario"].get("name", "run")
    if isinstance(s.get("points"), int):
        pts = res.tables.get("points")
        console.print(f"[bold]{name}[/]: {s['points']} points in {s['wall_seconds']:.1f} s wall")
        if pts is not None and len(pts):
            table = Table(show_edge=False, header_style="bold")
            swept, heads = points_columns(pts)
            if not verbose:
                first = first_keys(heads)
                heads = [h for h in heads if h in first]
            for c in swept + heads:
                table.add_column(c, justify="right" if c in heads else "left", overflow="fold")
            for _, row in pts.iterrows():
                table.add_row(*[fmt_value(row[c]) for c in swept] + [fmt_value(row[f"headline_{h}"]) for h in heads])
            console.print(table)
    else:
        console.print(f"[bold]{name}[/]: {s['simulated_seconds']:.4g} s simulated in {s['wall_seconds']:.2f} s wall, "
                      f"{_work(s)}, {s['packet_hops']:,} packet-hops")
        head = s.get("headline", {})
        table = Table(show_header=False, show_edge=False, box=None, padding=(0, 2))
        for k in headline_keys(head):
            table.add_row(k, fmt_value(head[k]))
        console.print(table)
    inv = s.get("invariants", {})
    if not inv.get("ok", True):
        console.print("[red]invariant check failed; see summary.json[/]")
    elif verbose:
        console.print("invariants: " + ", ".join(f"{k}={fmt_value(v)}" for k, v in inv.items()))
    if res.path is not None:
        if verbose:
            for p in sorted(res.path.iterdir()):
                if not p.name.startswith("."):
                    console.print(f"  {p.name}{'/' if p.is_dir() else ''}")
        console.print(f"results: {res.path}", soft_wrap=True)


def first_sentence(path) -> str:
    """A bundled scenario's description: the first sentence of its leading comment, without
    references to files that only the source tree has."""
    lines = []
    for ln in path.read_text().splitlines():
        if not ln.startswith("#"):
            break
        lines.append(ln.lstrip("#").strip())
    text = re.sub(r"\s*\([^)]*(\.\./|\.md\b|seeds/)[^)]*\)", "", " ".join(lines))
    m = re.search(r"^(.*?[.!?])(\s|$)", text)
    return m.group(1) if m else text


def print_catalogue(console=None) -> None:
    from rich.console import Console
    from rich.table import Table

    from . import _native
    from .scenario import bundled

    console = console or Console()
    cat = _native.catalogue()
    table = Table(title="bundled scenarios (wscsim run NAME)", show_edge=False, header_style="bold", title_justify="left")
    table.add_column("name", no_wrap=True)
    table.add_column("what it runs", overflow="fold")
    for name, path in bundled().items():
        table.add_row(name, first_sentence(path))
    console.print(table)
    rows = [
        ("topologies", ", ".join(cat["topologies"])),
        ("link technologies", ", ".join(cat["link_technologies"])),
        ("diablo_array presets", "1g (1 Gbit/s, 1 us port-to-port), 10g (10 Gbit/s, 100 ns)"),
        ("workloads", ", ".join(cat["workloads"])),
        ("flow-size distributions", ", ".join(cat["size_cdfs"])),
        ("switch schemes", ", ".join(cat["schemes"])),
        ("switch buffers", "per_port, per_input_port, shared"),
        ("host stacks", ", ".join(cat["host_stacks"])),
        ("host io models", "pthread, epoll"),
    ]
    models = Table(show_header=False, show_edge=False, box=None, padding=(0, 2))
    models.add_column(no_wrap=True)
    models.add_column(overflow="fold")
    for k, v in rows:
        models.add_row(k, v)
    console.print(models)


def _work(s: dict) -> str:
    """What the engine did: its events, or the timeslot engine's slots (it has no events)."""
    slots = s.get("timeslots")
    if slots:
        return f"{slots['slots']:,} timeslots of {slots['slot_ns']:g} ns"
    return f"{s['events']:,} events"
