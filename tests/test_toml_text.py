"""wscsim.toml_text writes what tomllib reads back unchanged: every bundled scenario, and
any plain data a scenario can hold."""

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from hypothesis import given, settings
from hypothesis import strategies as st

from wscsim.scenario import bundled, load
from wscsim.toml_text import dumps

KEYS = st.text(st.characters(exclude_categories=("Cs",)), max_size=8)
SCALARS = (st.booleans() | st.integers(min_value=-(2**63), max_value=2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False)
           | st.text(st.characters(exclude_categories=("Cs",)), max_size=12))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4), max_leaves=20)


def test_every_bundled_scenario_reads_back_unchanged():
    for name in bundled():
        sc = load(name)
        assert tomllib.loads(dumps(sc)) == sc, name


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(KEYS, VALUES, max_size=6))
def test_any_plain_data_reads_back_unchanged(data):
    assert tomllib.loads(dumps(data)) == data


def test_tables_are_sections_and_lists_of_tables_are_arrays_of_tables():
    text = dumps({"name": "x", "topology": {"kind": "single_switch", "link": {"rate": "1Gbps"}},
                  "emulation": {"apps": [{"hosts": [0], "command": "a \"b\"\x7f"}, {"hosts": [1], "command": "c"}]},
                  "sweep": {"workload.senders": [1, 2]}})
    assert text == ('name = "x"\n\n[topology]\nkind = "single_switch"\n\n[topology.link]\nrate = "1Gbps"\n\n[[emulation.apps]]\nhosts = [0]\ncommand = "a \\"b\\"\\u007f"\n\n[[emulation.apps]]\nhosts = [1]\ncommand = "c"\n\n'
                    '[sweep]\n"workload.senders" = [1, 2]\n')
