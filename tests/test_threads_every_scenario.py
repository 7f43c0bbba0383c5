"""Threads change no result, on every bundled scenario: the first point of each, shortened
as scripts/fingerprint.py shortens it, runs partitioned on one thread and on two, and
every result table must hash the same, with the same events and packet-hops. Scenarios
with failures and churn included (a partitioned run takes them since 2026-11-28)."""

import importlib.util
from pathlib import Path

import pytest

from wscsim.scenario import apply_overrides, bundled, expand, load, split_sweep

_spec = importlib.util.spec_from_file_location(
    "fingerprint", Path(__file__).resolve().parent.parent / "scripts" / "fingerprint.py"
)
fingerprint = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fingerprint)

def _first_point(name, threads):
    over = {**fingerprint.SHORTER.get(name, {}), "engine.threads": threads}
    base, axes = split_sweep(apply_overrides(load(name), over))
    sc = next(iter(expand(base, axes)))[0] if axes else base
    return fingerprint.fingerprint_point(sc)


@pytest.mark.parametrize("name", sorted(bundled()))
def test_two_threads_give_the_tables_of_one(name):
    one = _first_point(name, 1)
    two = _first_point(name, 2)
    assert "refused" not in one, one.get("refused")
    assert one["events"] > 0
    assert (two["events"], two["packet_hops"]) == (one["events"], one["packet_hops"])
    assert two["tables"] == one["tables"]
