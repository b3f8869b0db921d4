"""Reading and writing tables of points and evaluations (Parquet, provenance in the metadata)."""
from __future__ import annotations

import pandas as pd
import pyarrow as pa

from ..io import read_parquet, read_provenance, write_table


def write_frame(frame: pd.DataFrame, path: str, provenance: dict) -> None:
    write_table(pa.Table.from_pandas(frame, preserve_index=False), path, provenance)


def read_frame(path: str) -> pd.DataFrame:
    return read_parquet(path).to_pandas()


def concat(paths: list[str], out: str, provenance: dict | None = None) -> pd.DataFrame:
    """Concatenate evaluation tables (in the given order) into `out`, keeping the first file's provenance."""
    frame = pd.concat([read_frame(p) for p in paths], ignore_index=True)
    meta = {**read_provenance(paths[0]), **(provenance or {})} if paths else dict(provenance or {})
    write_frame(frame, out, meta)
    return frame


def succeeded(evals: pd.DataFrame) -> pd.DataFrame:
    """The rows whose oracles did not fail (all rows of tables written before `failure` existed)."""
    return evals[evals["failure"].isna()] if "failure" in evals.columns else evals
