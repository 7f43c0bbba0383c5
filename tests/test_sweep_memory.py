"""A sweep holds about one point's tables per worker: each point's folder is written as the
point finishes and its tables let go, the combined tables are built from those folders one
point at a time and read back only when asked for; they equal the tables a sweep without a
folder combines in memory."""

import pandas as pd

import wscsim
from wscsim.folder_tables import FolderTables
from wscsim.runner import Outcome
from wscsim.sweeps import _Points

INCAST = {
    "name": "tiny-incast",
    "duration": "50ms",
    "topology": {"kind": "single_switch", "hosts": 5, "link": {"rate": "1Gbps", "delay": "500ns"}},
    "switch": {"buffer": "per_input_port", "buffer_per_port": "4KiB"},
    "workload": {"kind": "incast", "senders": 4, "block": "32KiB", "iterations": 3},
    "metrics": {"queue_sample_interval": "20us"},
    "sweep": {"transport.rto_min": ["200ms", "1ms"], "workload.senders": [1, 4]},
}


def test_a_point_is_written_and_let_go_as_it_finishes(tmp_path):
    kept = _Points(3, tmp_path, 3)
    frames = {"incast": pd.DataFrame({"iteration": [0, 1], "goodput_mbps": [1.5, 2.5]})}
    summary = {"headline": {}, "invariants": {"ok": True}, "version": "x"}
    kept.take(1, Outcome(summary, frames, {}))
    assert pd.read_parquet(tmp_path / "points" / "001" / "incast.parquet").equals(frames["incast"])
    assert (tmp_path / "points" / "001" / "summary.json").exists()
    assert kept.outcomes == [None, None, None] and kept.summaries[1] is summary


def test_combined_tables_stay_on_disk_until_asked_for_and_equal_the_in_memory_ones(tmp_path):
    on_disk = wscsim.run(dict(INCAST), out=tmp_path / "s", plots=False)
    in_memory = wscsim.run(dict(INCAST), plots=False)
    assert isinstance(on_disk.tables, FolderTables) and set(on_disk.tables.frames) == {"points"}
    assert list(on_disk.tables) == list(in_memory.tables)
    for name in in_memory.tables:
        pd.testing.assert_frame_equal(on_disk.tables[name], in_memory.tables[name], check_dtype=False, check_categorical=False)
        assert on_disk.tables[name]["point"].dtype.kind == "i"
    assert on_disk.queues["senders"].dtype.kind == "i" and set(on_disk.queues["rto_min"]) == {"200ms", "1ms"}
    # Read once asked for, then kept for the caller.
    assert "queues" in on_disk.tables.frames
    assert "queues" in repr(on_disk)
