"""A sweep's combined tables kept on disk instead of in memory.

A sweep writes each point's folder as the point finishes, and builds each combined table
from those folders' parquet files one point at a time (pyarrow's ParquetWriter), so that
the parent never holds more than one point's tables: a sweep needs about its workers times
one point's memory, not every point's tables twice over. The combined tables are then read
from the folder when something asks for them (a plot, `Result.tables`), not before.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from pathlib import Path

import pandas as pd


class FolderTables(MutableMapping):
    """Tables by name, read from `folder/<name>.parquet` when asked for; `frames` are held
    in memory (the small `points` table). Read tables are kept once `keep` is set (for the
    Result a caller holds), not while a sweep draws its plots (each plot reads what it
    needs and lets it go)."""

    def __init__(self, folder: Path, names: list[str], frames: dict[str, pd.DataFrame] | None = None):
        self.folder = Path(folder)
        self.names = list(names)
        self.frames = dict(frames or {})
        self.keep = False

    def __getitem__(self, name: str) -> pd.DataFrame:
        if name in self.frames:
            return self.frames[name]
        if name not in self.names:
            raise KeyError(name)
        df = _read(self.folder / f"{name}.parquet")
        if self.keep:
            self.frames[name] = df
        return df

    def load(self, name: str, columns: list[str]) -> pd.DataFrame:
        """Only some columns of a table (a plot of queue samples needs neither the swept
        values nor anything but the port and the size)."""
        if name in self.frames:
            return self.frames[name][columns]
        path = self.folder / f"{name}.parquet"
        numbers = _read_numbers(path, columns)
        return numbers if numbers is not None else _read(path, columns)

    def shape(self, name: str) -> tuple[int, list[str]]:
        """Rows and column names, from the parquet file's footer (nothing read)."""
        if name in self.frames:
            return len(self.frames[name]), list(self.frames[name].columns)
        import pyarrow.parquet as pq

        meta = pq.ParquetFile(self.folder / f"{name}.parquet").metadata
        return meta.num_rows, list(meta.schema.names)

    def __setitem__(self, name: str, df: pd.DataFrame) -> None:
        """A table a caller adds or replaces: in memory (the folder is not changed)."""
        self.frames[name] = df
        if name not in self.names:
            self.names.append(name)

    def __delitem__(self, name: str) -> None:
        self.names.remove(name)
        self.frames.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self.frames or name in self.names  # Mapping's own would read the table

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)


def _read(path: Path, columns: list[str] | None = None) -> pd.DataFrame:
    """A parquet file as pandas reads it, converted column by column with each Arrow column
    freed once converted and Arrow's pool then given back (the table is not held twice:
    a sweep's queue samples are hundreds of megabytes)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=columns)
    df = table.to_pandas(split_blocks=True, self_destruct=True)
    del table
    pa.default_memory_pool().release_unused()
    return df


def _read_numbers(path: Path, columns: list[str]) -> pd.DataFrame | None:
    """Columns of numbers without nulls, read a batch at a time into arrays made once at
    their final size: the table's memory and one batch's, where reading it whole held it
    about three times over (Arrow's copy, its decoding buffers, pandas' copy). None if a
    column is not numbers or has nulls."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    file = pq.ParquetFile(path)
    types = [file.schema_arrow.field(c).type for c in columns]
    if not all(pa.types.is_integer(t) or pa.types.is_floating(t) for t in types):
        return None
    out = {c: np.empty(file.metadata.num_rows, dtype=t.to_pandas_dtype()) for c, t in zip(columns, types)}
    at = 0
    for batch in file.iter_batches(columns=columns, batch_size=1 << 20):
        if any(col.null_count for col in batch.columns):
            return None
        for c, col in zip(columns, batch.columns):
            out[c][at:at + batch.num_rows] = col.to_numpy()
        at += batch.num_rows
    del file
    pa.default_memory_pool().release_unused()
    return pd.DataFrame(out, copy=False)


def table_shape(tables: Mapping, name: str) -> tuple[int, list[str]]:
    """Rows and columns of one table, without reading a table kept on disk."""
    if hasattr(tables, "shape"):  # FolderTables, or a view of them
        return tables.shape(name)
    df = tables[name]
    return len(df), list(df.columns)


def table_rows(tables: Mapping, name: str) -> int:
    """Rows of a table, 0 if there is no such table."""
    return table_shape(tables, name)[0] if name in tables else 0


def columns_of(tables: Mapping, name: str, columns: list[str]) -> pd.DataFrame | None:
    """Some columns of a table (read only those from disk), None if there is no such table."""
    if name not in tables:
        return None
    if hasattr(tables, "load"):
        return tables.load(name, columns)
    return tables[name]


def _arrow_type(value):
    import pyarrow as pa

    if isinstance(value, bool):
        return pa.bool_()
    if isinstance(value, int):
        return pa.int64()
    if isinstance(value, float):
        return pa.float64()
    return pa.large_string()


def write_combined(folder: Path, point_folders: list[Path], constants: list[dict], names: list[str]) -> None:
    """For each table name, `folder/<name>.parquet`: the table of every point folder in
    order, read back one point at a time, with `constants[i]` (point, swept values) as its
    first columns. A column's type is the one every point's can be read as (a column of
    text that was empty in one point is text); a point without the table adds no rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    front = [pa.field(k, _arrow_type(v)) for k, v in constants[0].items()]
    for name in names:
        files = [(i, p / f"{name}.parquet") for i, p in enumerate(point_folders) if (p / f"{name}.parquet").exists()]
        own = pa.unify_schemas([pq.read_schema(f).remove_metadata() for _, f in files], promote_options="permissive")
        schema = pa.schema(front + [f for f in own if f.name not in constants[0]])
        with pq.ParquetWriter(folder / f"{name}.parquet", schema, compression="zstd") as writer:
            for i, f in files:
                t = pq.read_table(f)
                n = t.num_rows
                columns = [pa.repeat(pa.scalar(constants[i][fl.name], fl.type), n) for fl in front]
                columns += [t.column(fl.name).cast(fl.type) if fl.name in t.column_names else pa.nulls(n, fl.type) for fl in list(schema)[len(front):]]
                writer.write_table(pa.Table.from_arrays(columns, schema=schema))
                del t, columns
