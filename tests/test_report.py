"""The HTML report of a run and of a sweep: every link resolves inside the folder, nothing
is fetched from elsewhere, and a Result shows itself briefly."""

import re
from pathlib import Path

import wscsim

SMALL = {"name": "rep", "duration": "5ms", "topology": {"kind": "single_switch", "hosts": 4},
         "workload": {"kind": "incast", "senders": 3, "iterations": 3},
         "metrics": {"capture": {"hosts": [0]}}}


def links(page: Path) -> list[str]:
    return re.findall(r"(?:href|src)='([^']+)'", page.read_text())


def check_offline(folder: Path) -> list[str]:
    page = folder / "report.html"
    found = links(page)
    assert found
    for target in found:
        assert not re.match(r"[a-z]+:", target), target  # no http:, file: or data from elsewhere
        assert (folder / target).exists(), target
    return found


def test_a_run_report_links_its_plots_tables_and_captures(tmp_path):
    wscsim.run(SMALL, out=tmp_path / "r")
    found = check_offline(tmp_path / "r")
    for p in (tmp_path / "r").glob("*.png"):
        assert p.name in found
    for p in (tmp_path / "r").glob("*.parquet"):
        assert p.name in found
    assert "capture/host-0.pcap" in found and "summary.json" in found
    text = (tmp_path / "r" / "report.html").read_text()
    assert "incast_goodput_mbps" in text and "all hold" in text
    assert "<script" not in text


def test_a_sweep_report_has_a_row_per_point_linking_its_page(tmp_path):
    sc = dict(SMALL, sweep={"workload.senders": [1, 2, 3]})
    wscsim.run(sc, out=tmp_path / "s", plots=False)
    found = check_offline(tmp_path / "s")
    pages = [t for t in found if t.startswith("points/")]
    assert pages == [f"points/{i:03d}/report.html" for i in range(3)]
    for p in pages:
        check_offline((tmp_path / "s" / p).parent)


def test_result_repr_is_short():
    res = wscsim.run(dict(SMALL, metrics={}))
    text = repr(res)
    assert text.startswith("<Result rep: ") and "incast[" in text and len(text) < 300
    assert "Headline" in res._repr_html_()
