"""The Python API as a notebook user meets it."""

import subprocess
import sys

import wscsim

SMALL = {"name": "api", "duration": "5ms", "topology": {"kind": "single_switch", "hosts": 4},
         "workload": {"kind": "incast", "senders": 2, "iterations": 2}}


def test_sweep_is_the_function_even_after_a_run():
    wscsim.run(SMALL)
    r = wscsim.sweep(SMALL, vary={"workload.senders": [1, 3]})
    assert list(r.points["senders"]) == [1, 3]
    assert callable(wscsim.sweep) and callable(wscsim.run)


def test_importing_wscsim_loads_neither_pandas_nor_matplotlib():
    code = "import sys, wscsim; print(sorted(m for m in ('pandas', 'matplotlib') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout.strip()
    assert out == "[]"


def test_public_functions_are_typed():
    import inspect

    from wscsim import api

    for fn in (api.run, api.sweep):
        sig = inspect.signature(fn)
        assert sig.return_annotation != inspect.Signature.empty
        assert all(p.annotation != inspect.Parameter.empty for p in sig.parameters.values() if p.kind != p.VAR_KEYWORD)


def test_a_native_simulation_whose_tables_were_taken_says_so():
    import json

    import pytest

    from wscsim import _native

    sim = _native.Simulation(json.dumps(SMALL))
    sim.run_until(sim.end_ps)
    assert "flows" in sim.tables()
    for use in (lambda: sim.now_ps, lambda: sim.summary_json(), lambda: sim.tables(), lambda: sim.run_until(1)):
        with pytest.raises(RuntimeError, match="tables were taken"):
            use()
