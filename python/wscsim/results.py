"""Turning the native core's columns into pandas tables, and writing a results folder
that only looks complete once it is: everything goes to a folder beside it first, which is
renamed into place at the end (`folders` says how an earlier folder is kept safe)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .folder_tables import FolderTables
from .folders import Destination, ResultFolder

TABLES = ("flows", "incast", "queues", "links", "drops", "hosts", "requests")


def frames_from_native(native_tables: dict) -> dict[str, pd.DataFrame]:
    """DataFrames from the native tables. Consumes them: each column's buffer is released
    once copied, so a table of tens of millions of rows is not held twice."""
    frames = {}
    for name, cols in native_tables.items():
        data = {}
        for i in range(len(cols)):
            col, kind, payload = cols[i]
            cols[i] = None
            if kind == "str":
                data[col] = pd.Series(payload, dtype="object")
            elif kind == "cat":
                levels, codes = payload
                data[col] = pd.Categorical.from_codes(np.frombuffer(codes, dtype=np.uint8).astype(np.int8), categories=list(levels))
            else:
                # An array over the bytearray, not a copy: copying held one column twice,
                # which was the peak of a full-length memcached run (a column of 55.7
                # million floats is 445 MB).
                data[col] = np.frombuffer(payload, dtype="<" + kind)
        # copy=False: the columns become the frame's as they are, not copied into blocks
        # by type (a full-length memcached run's requests table is gigabytes).
        frames[name] = pd.DataFrame(data, copy=False)
    return frames


@dataclass
class Result:
    """One run: where it was written, its summary, and its tables as DataFrames."""

    path: Path | None
    summary: dict
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    #: pcap files of the capture points ([metrics.capture]), by name.
    captures: dict[str, bytes] = field(default_factory=dict)

    def __getattr__(self, name):
        tables = self.__dict__.get("tables", {})
        if name in tables:
            return tables[name]
        raise AttributeError(name)

    @property
    def headline(self) -> dict:
        return self.summary.get("headline", {})

    def __repr__(self) -> str:
        s = self.summary
        name = s.get("scenario", {}).get("name", "run")
        what = f"{s['points']} points" if isinstance(s.get("points"), int) else f"{s.get('simulated_seconds', 0):.4g} s simulated"
        tables = ", ".join(f"{k}[{len(v)}]" for k, v in self.tables.items() if len(v))
        where = f", path={str(self.path)!r}" if self.path else ""
        return f"<Result {name}: {what}; tables {tables or 'none'}{where}>"

    def _repr_html_(self) -> str:
        from .report import summary_html

        tables = ", ".join(f"<code>{k}</code> ({len(v):,} rows)" for k, v in self.tables.items() if len(v))
        where = f"<p>Folder: <code>{self.path}</code></p>" if self.path else ""
        return summary_html(self.summary) + f"<p>Tables: {tables or 'none'}</p>" + where


def write(dest: Destination | None, summary: dict, tables: dict[str, pd.DataFrame], fill=None, captures: dict[str, bytes] | None = None,
          points_width: int = 3, plots=None, folder: ResultFolder | None = None) -> Result:
    """Writes a results folder and moves it into place only when all of it is there (see
    `folders`): the tables, what `fill(tables, summary, folder)` adds (a sweep's point
    folders, an emulation's program logs), the plots `plots(tables, summary, folder)` draws,
    report.html, then summary.json marked complete.

    The plots come last because they only show what the tables hold: a Ctrl-C or SIGTERM
    while they are drawn keeps the finished run. The folder is completed with the plots
    drawn so far (summary.json's "plots_status" says "incomplete (interrupted)"), moved into
    place, and `PlotsInterrupted` (a KeyboardInterrupt) raised, naming it."""
    from .provenance import record

    summary.setdefault("provenance", record())
    if dest is None:
        return Result(None, summary, tables, captures or {})
    # A sweep makes its folder first, and writes its tables into it as its points finish.
    folder = folder or ResultFolder(dest.path, overwrite=dest.overwrite, unique=dest.unique)
    try:
        for name, df in ({} if isinstance(tables, FolderTables) else tables).items():
            df.to_parquet(folder.tmp / f"{name}.parquet", index=False, compression="zstd")
        _release_arrow_memory()
        write_captures(folder.tmp, captures)
        if fill is not None:
            fill(tables, summary, folder.tmp)
        drawn = _draw(plots, tables, summary, folder.tmp)
        from .report import write_html

        write_html(folder.tmp, summary, tables, points_width=points_width)
        summary["complete"] = True
        (folder.tmp / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
        path = folder.commit()
    except BaseException:
        if folder.committed is None:  # an interrupt that came after the commit leaves it
            folder.abort()
        raise
    if not drawn:
        raise PlotsInterrupted(path)
    return Result(path, summary, tables, captures or {})


class PlotsInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM came while plots were drawn: `path` holds the complete results
    with the plots drawn until then."""

    def __init__(self, path: Path):
        super().__init__(f"interrupted while drawing plots; {path} holds the complete results and the plots drawn until then")
        self.path = path


PLOTS_INTERRUPTED = "incomplete (interrupted)"


def _draw(plots, tables: dict, summary: dict, folder: Path) -> bool:
    """Draws the plots, noting in summary["plots_status"] whether they all were; False if
    an interrupt stopped them (the plots finished by then are kept, a half-written one is
    removed)."""
    if plots is None:
        summary["plots_status"] = "none (not asked for)"
        return True
    try:
        plots(tables, summary, folder)
    except KeyboardInterrupt:
        summary["plots"] = _whole_plots(folder)
        summary["plots_status"] = PLOTS_INTERRUPTED
        return False
    summary["plots_status"] = "complete"
    return True


def _whole_plots(folder: Path) -> list[str]:
    """The plots in `folder` written whole (a PNG ends with its IEND chunk, an SVG with its
    closing tag), in every format being written (with SVGs, a plot whose SVG is missing or
    cut short is dropped), in the order they were drawn; the rest are removed."""
    images = [p for p in folder.iterdir() if p.suffix in (".png", ".svg") and p.is_file()]
    whole = {p for p in images if _is_whole_image(p)}
    svg = any(p.suffix == ".svg" for p in images)
    kept = []
    for p in images:
        twin = p.with_suffix(".svg" if p.suffix == ".png" else ".png")
        if p in whole and (twin in whole or not svg):
            kept.append(p)
        else:
            p.unlink()
    return [p.name for p in sorted(kept, key=lambda p: (p.stat().st_mtime_ns, p.suffix != ".png", p.name))]


def _is_whole_image(path: Path) -> bool:
    with open(path, "rb") as f:
        f.seek(0, 2)
        f.seek(max(0, f.tell() - 16))
        tail = f.read()
    if path.suffix == ".png":
        return tail.endswith(b"IEND\xaeB`\x82")
    return tail.rstrip().endswith(b"</svg>")


def _release_arrow_memory() -> None:
    """Gives the memory Arrow's pool kept from writing the tables back to the system (it
    keeps it for reuse: about 130 MB after a 19-million-row requests table, which the plots
    drawn next would otherwise add to)."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


def write_captures(folder: Path, captures: dict[str, bytes] | None) -> None:
    """pcap files of a run's capture points, in `capture/` (names are the simulator's own:
    host-N, SWITCH-portN)."""
    if not captures:
        return
    (folder / "capture").mkdir()
    for name, data in captures.items():
        (folder / "capture" / f"{capture_file_stem(name)}.pcap").write_bytes(data)


def capture_file_stem(name: str) -> str:
    """A capture point's name as a file name that stays inside `capture/` whatever the name
    (the core refuses node names that are not plain words; this is the second guard):
    characters other than letters, digits, `_`, `-` and `.` become `_`, and no leading dot."""
    stem = "".join(c if c.isascii() and (c.isalnum() or c in "_-.") else "_" for c in name)
    return ("_" + stem[1:] if stem.startswith(".") else stem) or "_"


def read(path: str | Path) -> Result:
    """Loads a results folder written by `wscsim run`."""
    path = Path(path)
    summary = json.loads((path / "summary.json").read_text())
    tables = {p.stem: pd.read_parquet(p) for p in sorted(path.glob("*.parquet"))}
    return Result(path, summary, tables)
