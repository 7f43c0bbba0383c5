"""What the command line prints: a run's or sweep's summary as rich tables, and the
catalogue of bundled scenarios and models."""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Callable

import numpy as np

# Headline figures that answer each kind of experiment, in the order a reader wants them;
# any others follow. A sweep's table shows only these (all of them with -v).
FIRST = ("collective_mean_us", "collective_max_us", "collective_slowest_transfer_us", "roce_rtt_p50_us", "roce_rtt_p99_us",
         "roce_rtt_p999_us", "rpc_mean_us", "rpc_min_us", "rpc_max_us", "rpc_mib_per_s", "rpcs_unfinished", "p50_latency_us", "p99_latency_us", "p999_latency_us", "mean_latency_us", "incast_goodput_mbps",
         "incast_mean_iteration_us", "dma_write_gbytes_per_s", "dma_read_gbytes_per_s", "dma_load_mean_us",
         "dma_write_mean_us", "dma_remaps", "dma_packets_dropped", "job_seconds", "kv_write_gbps", "kv_ops_per_s", "kv_median_latency_us", "kv_p95_latency_us",
         "kv_acknowledged_writes_lost", "kv_retries", "median_inbound_gbps_per_server", "min_inbound_gbps_per_server",
         "mean_fct_us", "median_delivered_gbps_per_live_server", "delivered_gbps_per_server", "expected_gbps_per_server",
         "delivered_fraction_of_expected", "median_link_throughput_fraction", "link_throughput_spread",
         "median_cpu_utilisation", "aggregate_goodput_gbps", "key_drop_fraction", "key_packets_misdelivered",
         "key_packets_sent", "key_packets_dropped", "mean_ping_rtt_us", "pings_returned",
         "multicast_min_gbps_per_member", "multicast_median_gbps_per_member", "transfers_completed", "pfc_pause_frames", "roce_cnps", "drops", "link_down_drops",
         "unroutable_drops", "tcp_timeouts")


def fmt_value(v) -> str:
    """One value on its own (a row of a single run's figures): integers with thousands
    separators, floats to four significant figures below 10,000 and to the unit above (never
    an exponent there), lists as words."""
    if isinstance(v, (list, tuple)):
        return ", ".join(fmt_value(x) for x in v)
    if isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)):
        return f"{v:,}"
    if isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_)):
        v = float(v)
        if not math.isfinite(v):
            return "-" if math.isnan(v) else str(v)
        return f"{v:,.0f}" if abs(v) >= 1e4 else f"{v:,.4g}"
    return "-" if v is None else str(v)


MAX_DECIMALS = 6


def column_format(values) -> Callable[[object], str]:
    """One format for a column of values, so that its numbers line up and read alike (not
    `2,229` over `5.476e+05`): integers with separators; other numbers with the same
    decimals, enough for four significant figures of the largest and three of the smallest,
    trailing zeros that every value has dropped; in scientific notation only when that would
    take more than six decimals. Anything else as `fmt_value` shows it."""
    numeric = [float(v) for v in values if _is_number(v)]
    if len(numeric) != len([v for v in values if not _missing(v)]) or not numeric:
        return fmt_value
    finite = [abs(v) for v in numeric if math.isfinite(v)]
    if all(v.is_integer() for v in finite) and max(finite, default=0) < 1e15:
        return lambda v: fmt_value(v) if _missing(v) else f"{float(v):,.0f}"
    nonzero = [v for v in finite if v > 0]
    digits = lambda x: math.floor(math.log10(x)) + 1  # noqa: E731
    decimals = max(4 - digits(max(nonzero)), 3 - digits(min(nonzero)), 0)
    if decimals > MAX_DECIMALS:
        return lambda v: fmt_value(v) if _missing(v) else f"{float(v):.3e}"
    while decimals > 0 and all(round(v, decimals - 1) == round(v, decimals) for v in finite):
        decimals -= 1
    return lambda v: fmt_value(v) if _missing(v) or not math.isfinite(float(v)) else f"{float(v):,.{decimals}f}"


def _is_number(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_)) and not _missing(v)


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


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
    from rich.table import Table

    console = console or stdout_console()
    s = res.summary
    name = s["scenario"].get("name", "run")
    if isinstance(s.get("points"), int):
        pts = res.tables.get("points")
        console.print(f"[bold]{name}[/]: {s['points']} points in {s['wall_seconds']:.1f} s wall")
        if pts is not None and len(pts):
            print_points(pts, verbose, console)
    else:
        console.print(f"[bold]{name}[/]: {s['simulated_seconds']:.4g} s simulated in {s['wall_seconds']:.2f} s wall, "
                      f"{_work(s)}, {s['packet_hops']:,} packet-hops")
        head = s.get("headline", {})
        table = Table(show_header=False, show_edge=False, box=None, padding=(0, 2))
        table.add_column()
        table.add_column(justify="right")  # figures' digits line up
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


def print_points(pts, verbose: bool, console) -> None:
    """A sweep's points: a table with a column per swept parameter and headline figure
    (the first figures only, without `verbose`) when it fits the terminal's width, else a
    block of `name: value` lines per point. Each column has one number format; headers break
    between the words of a name (after its underscores), never inside one."""
    swept, heads = points_columns(pts)
    if not verbose:
        first = first_keys(heads)
        heads = [h for h in heads if h in first]
    columns = {c: list(pts[c]) for c in swept} | {h: list(pts[f"headline_{h}"]) for h in heads}
    cells = {}
    for name, values in columns.items():
        fmt = column_format(values)
        cells[name] = [fmt(v) for v in values]
    widths = {name: max([len(x) for x in col] + [max(map(len, _words(name)))]) for name, col in cells.items()}
    slack = console.width - sum(w + 2 for w in widths.values()) - (len(widths) - 1)
    if slack < 0:
        _print_records(cells, swept, console)
        return
    _widen_headers(widths, slack)
    _print_table(cells, widths, set(heads), console)


def _words(name: str) -> list[str]:
    """A column name's words, each keeping the underscore after it."""
    return [w for w in re.split(r"(?<=_)", name) if w]


def _header_lines(name: str, width: int) -> list[str]:
    lines = [""]
    for word in _words(name):
        if lines[-1] and len(lines[-1]) + len(word) > width:
            lines.append("")
        lines[-1] += word
    return lines


def _widen_headers(widths: dict[str, int], slack: int) -> None:
    """Spends the terminal's spare columns on the headers broken into most lines, each
    widened as little as takes one line off it."""
    while slack > 0:
        name = max(widths, key=lambda n: (len(_header_lines(n, widths[n])), n))
        lines = len(_header_lines(name, widths[name]))
        wider = next((w for w in range(widths[name] + 1, len(name) + 1) if len(_header_lines(name, w)) < lines), None)
        if lines == 1 or wider is None or wider - widths[name] > slack:
            return
        slack -= wider - widths[name]
        widths[name] = wider


def _print_table(cells: dict[str, list[str]], widths: dict[str, int], right: set[str], console) -> None:
    from rich.table import Table
    from rich.text import Text

    table = Table(show_edge=False, header_style="bold")
    for name, width in widths.items():
        table.add_column(Text("\n".join(_header_lines(name, width))), justify="right" if name in right else "left",
                         width=width, no_wrap=True)
    for row in zip(*cells.values()):
        table.add_row(*(Text(x) for x in row))
    console.print(table)


def _print_records(cells: dict[str, list[str]], swept: list[str], console) -> None:
    """A block per point when the table would not fit: its swept values on its first line,
    then one `name: value` line per figure, values aligned."""
    figures = [n for n in cells if n not in swept]
    label = max((len(n) + 1 for n in figures), default=0)
    value = max((len(x) for n in figures for x in cells[n]), default=0)
    for i in range(len(next(iter(cells.values())))):
        console.print(f"point {i}: " + ", ".join(f"{n}={cells[n][i]}" for n in swept), markup=False, highlight=False,
                      soft_wrap=True)
        for n in figures:
            console.print(f"  {n + ':':<{label}} {cells[n][i]:>{value}}", markup=False, soft_wrap=True)


def stdout_console():
    """A rich Console on stdout that leaves a closed pipe (`| head`) to the command, which
    knows whether its work was done (rich's own answer is to exit with status 1)."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError("stdout closed")

    return _Console()


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
    from rich.table import Table

    from . import _native
    from .scenario import bundled

    console = console or stdout_console()
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
