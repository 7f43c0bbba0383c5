#!/usr/bin/env bash
# Runs the whole test suite, Rust and Python, on a fresh checkout: creates .venv, installs
# wscsim with its test dependencies (compiling the Rust core), then runs cargo test and pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
.venv/bin/pip install --quiet --upgrade pip
# WSCSIM_TEST_EXTRAS adds optional extras (CI: "test,ray", for the Ray sweep test).
.venv/bin/pip install --quiet ".[${WSCSIM_TEST_EXTRAS:-test}]"
# The test profile (opt-level 2, debug assertions and overflow checks on): about a minute
# less to build than --release, and it checks more.
cargo test -p wscsim
# Tests run in parallel, one worker per core (pytest-xdist; about 8 minutes on 2 cores against
# 14 one after another); none depends on timing or on another. The emulation tests make
# the machine's network namespaces and check that none is left, so they run afterwards,
# one after another. WSCSIM_TEST_WORKERS=0 runs every test in this process. Exit status 5
# (no test selected, e.g. -k that matches only the other set) is not a failure.
selected() { "$@" || [ $? -eq 5 ]; }
selected .venv/bin/python -m pytest -q -n "${WSCSIM_TEST_WORKERS:-auto}" -m "not emulation" tests "$@"
selected .venv/bin/python -m pytest -q -m emulation tests "$@"
