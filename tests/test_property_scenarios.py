"""Generated malformed scenarios: whatever is wrong, `wscsim check` answers with exit 2 and
one line naming a field (or accepts it, exit 0), never a traceback, within bounded memory
and time.

Hypothesis mutates valid scenarios (a key set to an arbitrary value, a key removed, an
unknown key added, a table replaced) and writes them as TOML. The examples run in one
child process, under a memory limit and a timeout for the whole batch, so that no example
can exhaust the machine or hang the suite.
"""

import os
import resource
import subprocess
import sys
import textwrap

EXAMPLES = int(os.environ.get("WSCSIM_PROPERTY_EXAMPLES", "400"))

DRIVER = textwrap.dedent(
    r'''
    import contextlib, copy, io, json, re, sys, tempfile, pathlib
    import tomli_w
    from hypothesis import HealthCheck, given, settings, strategies as st
    from wscsim import cli

    VALID = [
        {"name": "incast", "duration": "10ms", "topology": {"kind": "single_switch", "hosts": 4, "link": {"rate": "1Gbps"}},
         "switch": {"buffer_per_port": "4KB"}, "transport": {"rto_min": "1ms"}, "workload": {"kind": "incast", "senders": 2}},
        {"name": "flows", "topology": {"kind": "fat_tree", "k": 4}, "workload": {"kind": "flows", "load": 0.3, "size_cdf": "websearch"},
         "switch": {"scheme": {"kind": "red", "min_th_packets": 20, "max_th_packets": 60}}},
        {"name": "mc", "topology": {"kind": "diablo_array", "racks": 2, "servers_per_rack": 4},
         "host": {"stack": "linux_2_6_39", "costs": {"rx_packet": 100}}, "workload": {"kind": "memcached", "server_count": 2}},
        {"name": "ls", "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2}, "transport": {"variant": "dctcp"},
         "workload": {"kind": "permutation"}, "sweep": {"workload.size": ["10KB", "20KB"]}},
    ]

    def paths(d, prefix=""):
        for k, v in d.items():
            p = f"{prefix}.{k}" if prefix else k
            yield p
            if isinstance(v, dict):
                yield from paths(v, p)

    scalars = st.one_of(
        st.integers(min_value=-(2**63), max_value=2**63 - 1), st.floats(allow_nan=True, allow_infinity=True),
        st.booleans(), st.text(max_size=30), st.dates(), st.datetimes(),
        st.sampled_from(["0", "-1Gbps", "1e400", "10 minutes", "nan", "1KB", "0s", "websearch", "python", "tcp", "", "..", "/dev/zero"]),
    )
    values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(min_size=1, max_size=8), inner, max_size=3)), max_leaves=8)

    @st.composite
    def mutated(draw):
        sc = copy.deepcopy(draw(st.sampled_from(VALID)))
        path = draw(st.sampled_from(sorted(paths(sc))))
        keys = path.split(".")
        if keys[0] == "sweep":
            keys = ["sweep", ".".join(keys[1:])] if len(keys) > 1 else keys
        parent = sc
        for k in keys[:-1]:
            parent = parent[k]
        action = draw(st.sampled_from(["set", "set", "set", "remove", "add"]))
        if action == "remove":
            del parent[keys[-1]]
        elif action == "add":
            parent[draw(st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=10))] = draw(values)
        else:
            parent[keys[-1]] = draw(values)
        return sc, path

    @settings(max_examples=int(sys.argv[1]), deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(mutated())
    def check_one(case):
        sc, path = case
        with tempfile.TemporaryDirectory() as d:
            f = pathlib.Path(d) / "s.toml"
            f.write_text(tomli_w.dumps(sc))
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = cli.main(["check", str(f)])
        lines = err.getvalue().strip().splitlines()
        if code == 0:
            assert not lines, (sc, err.getvalue())
            return
        assert code == 2, (sc, code, err.getvalue())
        assert len(lines) == 1, (sc, err.getvalue())
        m = re.match(r'error: ((?:[^:"]|"(?:[^"\\]|\\.)*")+): (.+)$', lines[0])
        assert m, (sc, lines[0])
        named = m.group(1)
        # The field named is a scenario path (or the scenario or sweep as a whole), or a
        # path the sweep sets.
        swept = {k.split(".")[0] for k in sc["sweep"]} if isinstance(sc.get("sweep"), dict) else set()
        esc = lambda text: "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)  # as the CLI prints
        roots = {esc(r) for r in set(sc) | swept} | {"scenario", "sweep", "topology", "workload"}
        first = re.match(r'"(?:[^"\\]|\\.)*"|[^.\[]+', named).group(0)
        if first.startswith('"'):
            first = esc(json.loads(first))
        assert first in roots, (sc, lines[0])

    check_one()
    print("ok")
    '''
)


def _limits():
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def test_malformed_scenarios_get_one_line_naming_a_field(tmp_path):
    p = subprocess.run([sys.executable, "-c", DRIVER, str(EXAMPLES)], capture_output=True, text=True, timeout=600,
                       cwd=tmp_path, preexec_fn=_limits)
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stdout[-3000:] + p.stderr[-5000:]
