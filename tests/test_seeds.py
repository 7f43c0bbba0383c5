"""Several seeds per point (`seeds = N`, `--seeds N`, `seeds=`): every point runs with seeds
seed .. seed + N - 1, the tables keep each seed's rows with a `seed` column, and the headline
figures get a mean with a 95% confidence interval (Student's t)."""

import filecmp
import json
import subprocess
import sys

import pandas as pd
import pytest

import wscsim
from wscsim.errors import ScenarioError
from wscsim.seeds import mean_ci95, t975

# Web-search flows: the seed draws arrival times, sizes and endpoints.
FLOWS = {
    "name": "tiny-flows",
    "duration": "5ms",
    "topology": {"kind": "fat_tree", "k": 4},
    "transport": {"rto_min": "1ms"},
    "workload": {"kind": "flows", "load": 0.5, "size_cdf": "websearch", "flows": 30},
    "metrics": {"queue_sample_interval": "50us"},
}


def test_confidence_interval_against_a_hand_computed_example():
    # 1, 2, 3, 4: mean 2.5; s = sqrt(((1.5^2 + 0.5^2) * 2) / 3) = sqrt(5/3) = 1.2910;
    # t(0.975, 3) = 3.1824; half-width 3.1824 * 1.2910 / sqrt(4) = 2.0542.
    mean, half = mean_ci95([1.0, 2.0, 3.0, 4.0])
    assert mean == 2.5 and half == pytest.approx(2.0542, abs=1e-4)
    assert mean_ci95([7.0]) == (7.0, None)
    assert t975(1) == pytest.approx(12.706, abs=1e-3) and t975(30) == pytest.approx(2.042, abs=1e-3)
    # Beyond the table: within 0.001 of t(0.975, 40) = 2.0211 and of the normal's 1.9600.
    assert t975(40) == pytest.approx(2.0211, abs=1e-3) and t975(100000) == pytest.approx(1.9600, abs=1e-3)


def test_three_seeds_give_each_seeds_rows_and_a_mean_with_its_interval(tmp_path):
    res = wscsim.run(dict(FLOWS), seed=5, seeds=3, out=tmp_path / "r", plots=False)
    assert list(res.points["seed"]) == [5, 6, 7]
    flows = res.flows
    assert sorted(set(flows["seed"])) == [5, 6, 7]
    for seed in (5, 6, 7):
        alone = wscsim.run(dict(FLOWS), seed=seed, plots=False).flows
        mine = flows[flows["seed"] == seed].drop(columns=["point", "seed"]).reset_index(drop=True)
        pd.testing.assert_frame_equal(mine, alone, check_dtype=False)
    # The seeds differ: so do their flows.
    assert not flows[flows["seed"] == 5]["start_us"].reset_index(drop=True).equals(flows[flows["seed"] == 6]["start_us"].reset_index(drop=True))
    summary = json.loads((res.path / "summary.json").read_text())
    values = [s["headline"]["mean_fct_us"] for s in summary["point_summaries"]]
    assert len(set(values)) == 3
    mean, half = mean_ci95(values)
    assert summary["headline"]["mean_fct_us"] == pytest.approx(mean) and summary["headline_ci95"]["mean_fct_us"] == pytest.approx(half)
    assert summary["seeds"]["seeds"] == [5, 6, 7]
    assert "\u00b1" in (res.path / "report.html").read_text()


def test_same_seeds_same_table_bytes(tmp_path):
    for name in ("a", "b"):
        wscsim.run(dict(FLOWS), seeds=2, out=tmp_path / name, plots=False)
    tables = sorted(p.name for p in (tmp_path / "a").glob("*.parquet"))
    assert "flows.parquet" in tables
    for name in tables:
        assert filecmp.cmp(tmp_path / "a" / name, tmp_path / "b" / name, shallow=False), name


def test_a_sweep_with_seeds_gives_means_per_combination(tmp_path):
    sc = {**FLOWS, "seeds": 2, "sweep": {"workload.load": [0.3, 0.6]}}
    res = wscsim.run(sc, plots=False)
    assert list(res.points["load"]) == [0.3, 0.3, 0.6, 0.6] and list(res.points["seed"]) == [1, 2, 1, 2]
    means = res.summary["seed_means"]
    assert [(m["load"], m["seeds"]) for m in means] == [(0.3, 2), (0.6, 2)]
    second = [s["headline"]["mean_fct_us"] for s in res.summary["point_summaries"][2:]]
    assert means[1]["mean"]["mean_fct_us"] == pytest.approx(sum(second) / 2)
    assert means[1]["ci95"]["mean_fct_us"] == pytest.approx(mean_ci95(second)[1])
    assert res.summary["headline"] == {}


@pytest.mark.parametrize("bad", [0, 1001, 2.5, "3", True])
def test_seeds_must_be_an_integer_from_1_to_1000(bad):
    with pytest.raises(ScenarioError) as e:
        wscsim.run({**FLOWS, "seeds": bad}, plots=False)
    assert e.value.path == "seeds" and "allowed: an integer from 1 to 1000" in str(e.value)


def test_cli_seeds_check_and_refusal(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('name = "x"\nseeds = 3\nduration = "1ms"\n[topology]\nkind = "single_switch"\nhosts = 3\n[workload]\nkind = "incast"\n')
    p = subprocess.run([sys.executable, "-m", "wscsim.cli", "check", str(path)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "(3 points)" in p.stdout, p.stderr
    p = subprocess.run([sys.executable, "-m", "wscsim.cli", "run", str(path), "--seeds", "0", "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and p.stderr.startswith("error: --seeds: given 0; allowed: ")
    assert not (tmp_path / "o").exists()


def test_goodput_against_senders_is_the_mean_over_seeds_with_its_interval(tmp_path, monkeypatch):
    from wscsim import plots

    drawn = {}
    monkeypatch.setattr(plots.figure, "save", lambda fig, path: drawn.setdefault(path.name, fig) and [path.name])
    # Goodput = 1000 bytes * 8 / duration: seeds of 1 sender give 80 and 40 Mbit/s (mean 60,
    # s = 28.284, half-width 12.7062 * 28.284 / sqrt(2) = 254.12), of 4 senders 20 and 20.
    rows = [{"point": p, "senders": n, "seed": seed, "iteration": 0, "block_bytes": 1000, "duration_us": us}
            for p, (n, seed, us) in enumerate([(1, 1, 100.0), (1, 2, 200.0), (4, 1, 400.0), (4, 2, 400.0)])]
    assert plots.plot_incast_sweep(pd.DataFrame(rows), ["senders", "seed"], tmp_path / "g.png")
    fig = drawn["g.png"]
    bars = fig.axes[0].containers[0]
    assert list(bars.lines[0].get_ydata()) == pytest.approx([60.0, 20.0])
    (low, high), _ = [(seg[0][1], seg[1][1]) for seg in bars.lines[2][0].get_segments()]
    assert high - 60.0 == pytest.approx(254.12, abs=0.01) and low == pytest.approx(60.0 - 254.12, abs=0.01)
    assert "mean of 2 seeds" in fig.get_suptitle()
