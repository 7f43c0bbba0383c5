import copy

import pytest

import wscsim


def run(sc: dict, **kw) -> wscsim.Result:
    """Runs a scenario dict without writing anything and checks the invariants that must
    hold in every run: packets conserved, no queue above its buffer, time monotone."""
    res = wscsim.run(copy.deepcopy(sc), **kw)
    summaries = res.summary.get("point_summaries", [res.summary])
    for s in summaries:
        inv = s["invariants"]
        assert inv["packets_sent"] == inv["packets_delivered"] + inv["packets_dropped"] + inv["packets_in_flight"], inv
        assert inv["buffer_violations"] == 0, inv
        assert inv["time_reversals"] == 0, inv
        assert inv["ok"], inv
    return res


@pytest.fixture
def simulate():
    return run
