"""Plots fitted to what a run or sweep recorded, one module per family of figures:
`slowdown` (FCT slowdown by flow size), `queues` (queue occupancy CCDF per switch port),
`incast` (goodput and iteration times), `flexplane` (Flexplane Figures 4, 6 and 7),
`torus` and `kv` (CamCubeOS), `memcached` (DIABLO's latency tail and PMF), `pcie`
(energy by component, job efficiency, DMA), `completion` (collectives' iterations, an
incast's last flow) and `rates` (RoCE queue pairs' rates over time), all on `figure`, what every figure shares.
No family imports another's figures; none imports upwards (drawing.py chooses the
figures of a run and draws them).

Every figure is titled with the scenario's name and written as PNG (and as SVG too when
asked for), byte for byte the same from run to run. A figure is made only when there is
something to show. In a sweep, points are never pooled: each point gets a panel of its own
(small multiples), or, when there are many, a curve of its own in the panel of its case.

The names below are the package's API, re-exported from their modules."""

from .completion import last_completions, plot_collective, plot_collective_sweep, plot_incast_completion
from .figure import FORMATS, MAX_PANELS, facets, scenario_name, sweep_points
from .flexplane import plot_fct_by_load, plot_priority_tradeoff
from .incast import incast_goodput, iteration_times, over_seeds, plot_incast_iterations, plot_incast_sweep, plot_incast_times
from .kv import kv_inserts, kv_timeline, plot_kv_inserts, plot_kv_latency, plot_kv_timeline
from .memcached import plot_pmf, plot_tail
from .pcie import by_component, plot_dma, plot_energy, plot_job_efficiency
from .queues import plot_queue_ccdf
from .rates import plot_roce_rates
from .slowdown import plot_slowdown, plot_slowdown_sweep, slowdown_by_bucket
from .torus import (ping_rtt, plot_ping_rtt, plot_tcp_inbound, plot_torus_churn, plot_torus_failures, plot_torus_links,
                    plot_torus_throughput, tcp_inbound_per_server, torus_churn, torus_failures, torus_links, torus_throughput)

__all__ = [
    "last_completions", "plot_collective", "plot_collective_sweep", "plot_incast_completion", "FORMATS", "MAX_PANELS", "facets", "scenario_name", "sweep_points", "plot_fct_by_load", "plot_priority_tradeoff",
    "incast_goodput", "iteration_times", "over_seeds", "plot_incast_iterations", "plot_incast_sweep", "plot_incast_times",
    "kv_inserts", "kv_timeline", "plot_kv_inserts", "plot_kv_latency", "plot_kv_timeline", "plot_pmf", "plot_tail",
    "by_component", "plot_dma", "plot_energy", "plot_job_efficiency", "plot_queue_ccdf", "plot_roce_rates", "plot_slowdown",
    "plot_slowdown_sweep", "slowdown_by_bucket", "ping_rtt", "plot_ping_rtt", "plot_tcp_inbound", "plot_torus_churn",
    "plot_torus_failures", "plot_torus_links", "plot_torus_throughput", "tcp_inbound_per_server", "torus_churn",
    "torus_failures", "torus_links", "torus_throughput",
]
