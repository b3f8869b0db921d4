"""Atomic file writes and Parquet tables that carry their provenance in the file metadata: design
matrices (`matrix_table`, `read_matrix`) and data frames (`write_frame`, `read_frame`, `concat`)."""
from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from . import UserError, __version__

PROVENANCE_KEY = b"dptradeoff"
# Where an evaluation file keeps the states of its resumable trainings ({index: state bytes}, as an npz):
# a later job continues a training from them (problems.evaluate, docs/traces.md).
STATES_KEY = b"dptradeoff.training_states"


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside `path`; rename it onto `path` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the file the permissions open() would
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def write_table(table: pa.Table, path: str | os.PathLike, provenance: dict,
                states: dict[int, bytes] | None = None) -> None:
    """Write `table` atomically to Parquet with `provenance` (JSON) in the schema metadata, and the
    training states `states` ({training index: bytes}) where given.

    The row count (of this table) and the package version are added, so every file says how it was made.
    """
    meta = dict(provenance)
    meta["rows"] = table.num_rows  # always this file's own count, even when provenance is copied from an input
    meta.setdefault("package_version", __version__)
    existing = {k: v for k, v in (table.schema.metadata or {}).items() if k != STATES_KEY}
    extra = {}
    if states:
        buffer = io.BytesIO()
        np.savez(buffer, **{str(int(k)): np.frombuffer(v, np.uint8) for k, v in states.items()})
        extra[STATES_KEY] = buffer.getvalue()
    table = table.replace_schema_metadata({**existing, PROVENANCE_KEY: json.dumps(meta, sort_keys=True), **extra})
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)


@contextlib.contextmanager
def readable(path: str | os.PathLike) -> Iterator[None]:
    """Turn pyarrow's error on a damaged pipeline file (cut short by a killed job or a full disk,
    or not Parquet at all) into one sentence that names the file and the fix."""
    try:
        yield
    except FileNotFoundError:
        # With the path (pyarrow leaves it out): Snakemake defers a resource that reads a missing
        # input until the input exists, recognising the error by its filename.
        raise FileNotFoundError(errno.ENOENT, "No such file", str(path)) from None
    except (pa.ArrowException, OSError) as exc:
        # pyarrow nests its causes ("Error creating dataset...: Could not open...: <cause>. Either..."): keep the cause
        reason = str(exc).splitlines()[0].split(": ")[-1].split(". ")[0].rstrip(".") if str(exc) else type(exc).__name__
        raise UserError(f"{path} is not a readable Parquet file ({reason}); it is damaged or cut short, so delete it "
                        "and rerun the workflow, which makes it again.") from None


def read_parquet(path: str | os.PathLike, columns: list[str] | None = None) -> pa.Table:
    """Every reader of a pipeline Parquet file goes through here (or `parquet_schema`/`parquet_metadata`)."""
    with readable(path):
        return pq.read_table(path, columns=columns)


def parquet_schema(path: str | os.PathLike) -> pa.Schema:
    with readable(path):
        return pq.read_schema(path)


def parquet_metadata(path: str | os.PathLike) -> pq.FileMetaData:
    with readable(path):
        return pq.read_metadata(path)


def read_provenance(path: str | os.PathLike) -> dict:
    meta = parquet_schema(path).metadata or {}
    if PROVENANCE_KEY not in meta:
        return {}
    return json.loads(meta[PROVENANCE_KEY])


def matrix_table(x: np.ndarray, y: np.ndarray | None, feature_names: list[str] | None = None) -> pa.Table:
    """A design matrix as a Parquet-ready table: `x` as one fixed-size list column, `y` the label/target
    (None: no `y` column, a dataset of features only).

    One list column instead of thousands of scalar columns keeps Gisette's 5,000 features
    fast to write and read; the feature names travel in the metadata.
    """
    x = np.ascontiguousarray(x, dtype=np.float32)
    n, d = x.shape
    xs = pa.FixedSizeListArray.from_arrays(pa.array(x.reshape(-1)), d)
    table = pa.table({"x": xs} if y is None else {"x": xs, "y": pa.array(y)})
    if feature_names is not None:
        if len(feature_names) != d:
            raise ValueError(f"{len(feature_names)} feature names for {d} features")
        table = table.replace_schema_metadata({b"feature_names": json.dumps(feature_names)})
    return table


def matrix_arrays(table: pa.Table) -> tuple[np.ndarray, np.ndarray | None]:
    """A `matrix_table` as (x float32 [n, d], y; None where the table has no labels)."""
    col = table.column("x").combine_chunks()
    d = col.type.list_size
    x = col.flatten().to_numpy(zero_copy_only=False).reshape(-1, d)
    return x, table.column("y").to_numpy() if "y" in table.column_names else None


def read_matrix(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray | None]:
    """Read a table written by `matrix_table`: returns (x float32 [n, d], y). A file with a NaN or
    infinite feature (one built before the build refused them, or put there by hand) stops here."""
    x, y = matrix_arrays(read_parquet(path))
    if where := nonfinite(x):
        raise UserError(f"{path} has non-finite features (NaN or inf) in {where}, which training turns into NaN "
                        f"weights; delete it and rebuild it from finite source data (the build stops on such values).")
    return x, y


@dataclass(frozen=True)
class NonFinite:
    """Where a feature matrix holds NaN or infinite values: how many rows and columns, and the first."""
    rows: int
    columns: int
    row: int
    column: int

    def __str__(self) -> str:
        return (f"{self.rows} row{'s' * (self.rows != 1)} and {self.columns} column{'s' * (self.columns != 1)}, "
                f"the first at row index {self.row}, column index {self.column}")


def nonfinite(x) -> NonFinite | None:
    """Where the features `x` (rows x columns) are NaN or infinite, or None where every one is finite
    (or `x` is no float array: an oracle's `prepare` may return tensors or tokens)."""
    if not isinstance(x, np.ndarray) or x.dtype.kind != "f" or x.size == 0 or np.isfinite(x.min()) and np.isfinite(x.max()):
        return None   # min and max are NaN where any value is, and one of them infinite where any value is
    bad = ~np.isfinite(x.reshape(x.shape[0] if x.ndim else 1, -1))
    row, column = np.argwhere(bad)[0]
    return NonFinite(int(bad.any(axis=1).sum()), int(bad.any(axis=0).sum()), int(row), int(column))


def write_frame(frame: pd.DataFrame, path: str | os.PathLike, provenance: dict) -> None:
    """`frame` as `write_table` writes it, with the training states `problems.evaluate` left in its
    `attrs["training_states"]`."""
    write_table(pa.Table.from_pandas(frame, preserve_index=False), path, provenance,
                frame.attrs.get("training_states"))


def read_training_states(path: str | os.PathLike) -> dict[int, bytes]:
    """The training states an evaluation file keeps ({training index: bytes}; empty: none)."""
    data = (parquet_schema(path).metadata or {}).get(STATES_KEY)
    if not data:
        return {}
    with np.load(io.BytesIO(data)) as f:
        return {int(k): f[k].tobytes() for k in f.files}


def read_frame(path: str | os.PathLike) -> pd.DataFrame:
    return read_parquet(path).to_pandas()


def concat(paths: list[str], out: str, provenance: dict | None = None) -> pd.DataFrame:
    """Concatenate tables (in the given order) into `out`, keeping the first file's provenance."""
    frame = pd.concat([read_frame(p) for p in paths], ignore_index=True)
    meta = {**read_provenance(paths[0]), **(provenance or {})} if paths else dict(provenance or {})
    write_frame(frame, out, meta)
    return frame
