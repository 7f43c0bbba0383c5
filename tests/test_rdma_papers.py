"""RoCEv2's congestion controls against their papers' headline claims, as trends over
seeds on the bundled `hpcc_fct` scenario (docs/transports.md): HPCC (Li et al., SIGCOMM
2019) gives short flows the lowest tail slowdown, below TIMELY's and DCQCN's, and leaves
PFC far less to pause than DCQCN."""

import numpy as np
import pytest

import wscsim
from wscsim.scenario import load


def _short_flows_p99_and_pauses(cc, seed, tmp_path):
    sc = load("hpcc_fct")
    sc.pop("sweep")
    over = {"duration": "10ms", "seed": seed, "workload.load": 0.5, "workload.size_cdf": "hadoop",
            "roce.congestion": cc}
    r = wscsim.run(sc, out=tmp_path / f"{cc}-{seed}", overrides=over, plots=False)
    h = r.summary["headline"]
    assert r.summary["invariants"]["ok"] and h["drops"] == 0
    f = r.tables["flows"]
    small = f[np.isfinite(f.slowdown) & (f.size_bytes < 100_000)].slowdown
    assert len(small) > 1000
    return small.quantile(0.99), h["pfc_pause_frames"]


@pytest.mark.parametrize("seed", [1, 2])
def test_hpcc_gives_short_flows_the_lowest_tail_and_pfc_the_least_to_do(seed, tmp_path):
    dcqcn, timely, hpcc = (_short_flows_p99_and_pauses(cc, seed, tmp_path) for cc in ("dcqcn", "timely", "hpcc"))
    assert hpcc[0] < timely[0] < dcqcn[0], (hpcc, timely, dcqcn)
    assert hpcc[1] * 3 < dcqcn[1], (hpcc, dcqcn)



def _phase_rates(rates, end_ms, window_ms=4.0):
    """Each queue pair's mean rate over the `window_ms` before `end_ms` (a join, or the end)."""
    end = end_ms * 1e3
    w = rates[(rates.time_us > end - window_ms * 1e3) & (rates.time_us < end)]
    return w.groupby("qp").rate_gbps.mean()


@pytest.mark.parametrize("seed", [1, 2])
def test_dcqcn_senders_joining_one_by_one_converge_to_equal_shares(seed, tmp_path):
    """DCQCN's fairness experiment (Zhu et al. 2015, bundled `dcqcn_fairness`) with the
    paper's parameters: as two, three and four senders share a 40 Gbit/s link, each phase
    ends with every sender near an equal share (Jain's index above 0.9), nothing dropped."""
    sc = load("dcqcn_fairness")
    sc.pop("sweep")
    over = {"roce.dcqcn.preset": "paper", "seed": seed}
    r = wscsim.run(sc, out=tmp_path / "paper", overrides=over, plots=False)
    assert r.summary["invariants"]["ok"] and r.summary["headline"]["drops"] == 0
    rates = r.tables["roce_rates"]
    for k, end_ms in ((2, 20), (3, 30), (4, 60)):
        share = _phase_rates(rates, end_ms)
        assert len(share) == k, share
        jain = share.sum() ** 2 / (k * (share ** 2).sum())
        assert jain > 0.9, (k, share.tolist())


def _rtt_p99(cc, offered, seed, tmp_path):
    sc = load("swift_latency")
    sc.pop("sweep")
    over = {"seed": seed, "workload.load": offered, "roce.congestion": cc, "duration": "3ms"}
    r = wscsim.run(sc, out=tmp_path / f"{cc}-{offered}-{seed}", overrides=over, plots=False)
    h = r.summary["headline"]
    assert r.summary["invariants"]["ok"] and h["drops"] == 0
    return h["roce_rtt_p99_us"]


@pytest.mark.parametrize("seed", [1, 2])
def test_swift_keeps_round_trips_short_at_high_load(seed, tmp_path):
    """Swift (Kumar et al., SIGCOMM 2020; bundled `swift_latency`): at 90% load its 99th
    percentile NIC-to-NIC round trip stays well below DCQCN's and TIMELY's, and grows
    little from 50% load."""
    swift = _rtt_p99("swift", 0.9, seed, tmp_path)
    assert swift * 3 < _rtt_p99("dcqcn", 0.9, seed, tmp_path), swift
    assert swift * 3 < _rtt_p99("timely", 0.9, seed, tmp_path), swift
    assert swift < 1.5 * _rtt_p99("swift", 0.5, seed, tmp_path)
