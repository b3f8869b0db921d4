"""A dataset from a file of your own, CSV or Parquet (`datasets.<name>: {source: file, path: ...}`).

Its feature columns (every column but the label, or those `features` lists) must be numeric; the label
column may be numeric (kept as it is) or text (each distinct value a class: 0, 1, ... in sorted order,
the names recorded as `label_classes`). Without `label` the files hold the features only, for an oracle
that computes a statistic of them. The rows are split into train and test by the seeded permutation
every dataset without a fixed split uses (`seeded_split`, from (seed, "data", <name>)), and both
Parquet files record the file's path, sha256, size, columns and rows. The file is the build's
Snakemake input, so a changed file rebuilds both.

`FileSource.check` runs when the config is loaded: it reads the file's header and first rows, so a
missing or empty file, an unknown column or a text feature column stops the run before any job. The
build reads every row and checks them again (a text value below the first rows, an empty label cell),
and refuses a file whose sha256 differs from the one `sha256` pins.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .. import UserError
from ..io import sha256_file
from .dataset import DatasetSettings, SplitDataset, seeded_split

FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
DEFAULT_TEST_FRACTION = 0.2
SAMPLE_ROWS = 1000   # rows the config check reads (the build reads them all)


@dataclass(frozen=True)
class FileSource:
    """The config's `datasets.<dataset>` entry of a file of your own."""
    dataset: str
    path: str
    format: str                          # csv or parquet
    label: str | None                    # the label column, or None: features only
    features: tuple[str, ...] | None     # the feature columns, or None: every column but the label
    test_fraction: float
    sha256: str | None                   # the pinned sha256, or None: recorded, not checked

    @classmethod
    def from_settings(cls, dataset: str, settings: DatasetSettings) -> "FileSource":
        where = f"datasets.{dataset}"
        path = settings.path
        if not path:
            raise UserError(f"{where} is a file of your own but has no `path:`; give the path of its CSV or Parquet file.")
        fmt = settings.format or FORMATS.get(Path(path).suffix.lower())
        if fmt is None:
            raise UserError(f"{where}.path is {path}, whose extension names no format the pipeline reads; name a .csv "
                            f"or .parquet file, or set {where}.format to csv or parquet.")
        test_fraction = DEFAULT_TEST_FRACTION if settings.test_fraction is None else settings.test_fraction
        return cls(dataset, path, fmt, settings.label, tuple(settings.features) if settings.features else None,
                   float(test_fraction), settings.sha256.lower() if settings.sha256 else None)

    @property
    def where(self) -> str:
        return f"datasets.{self.dataset}"

    def check(self) -> None:
        """The config-time check: the file exists, has rows, and its columns are what the entry names."""
        self.columns(self.read(rows=SAMPLE_ROWS))

    def read(self, rows: int | None = None) -> pd.DataFrame:
        """The file's first `rows` rows (None: every row) as a data frame."""
        if not os.path.isfile(self.path):
            raise UserError(f"{self.where}.path is {self.path}, which does not exist in {os.getcwd()}; fix the path "
                            f"(relative to the directory Snakemake runs in, or absolute) or put the file there.")
        try:
            if self.format == "csv":
                frame = pd.read_csv(self.path, nrows=rows)
            else:
                frame = _read_parquet(self.path, rows)
        except pd.errors.EmptyDataError:
            frame = pd.DataFrame()
        except (ValueError, OSError, UnicodeDecodeError) as exc:   # pandas' and pyarrow's parse errors are ValueErrors
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise UserError(f"{self.path} ({self.where}) is not a readable {self.format} file ({reason}); fix the "
                            f"file, or set {self.where}.format if it is in the other format.") from None
        if frame.shape[1] == 0 or len(frame) == 0:
            raise UserError(f"{self.path} ({self.where}) is empty: it has {frame.shape[1]} columns and no data rows; "
                            f"give it a header row of column names and one row per example.")
        return frame

    def columns(self, frame: pd.DataFrame) -> list[str]:
        """The feature columns of `frame`, each checked to exist and be numeric, as is the label's existence."""
        present = [str(c) for c in frame.columns]
        frame = frame.set_axis(present, axis=1)
        if self.label is not None and self.label not in present:
            raise UserError(f"{self.where}.label is {self.label!r}, which is not a column of {self.path} (its columns: "
                            f"{', '.join(present)}); name one of them.")
        if self.features is not None:
            missing = [c for c in self.features if c not in present]
            if missing:
                raise UserError(f"{self.where}.features names {missing}, which are not columns of {self.path} (its "
                                f"columns: {', '.join(present)}); fix the names.")
            if self.label in self.features:
                raise UserError(f"{self.where}.features lists the label column {self.label!r}; remove it from the "
                                f"features.")
            features = list(self.features)
        else:
            features = [c for c in present if c != self.label]
        if not features:
            raise UserError(f"{self.path} ({self.where}) has no column besides the label {self.label!r}; add feature "
                            f"columns to the file.")
        for column in features:
            if not pd.api.types.is_numeric_dtype(frame[column]):
                values = frame[column]
                bad = values[values.notna() & pd.to_numeric(values, errors="coerce").isna()]
                example = f" (e.g. {bad.iloc[0]!r} in data row {int(bad.index[0]) + 1})" if len(bad) else ""
                raise UserError(f"The feature column {column!r} of {self.path} ({self.where}) is not numeric{example}; "
                                f"encode it as numbers in the file (e.g. one 0/1 column per category), or leave it out "
                                f"of {self.where}.features.")
        if self.label is not None and (empty := frame[self.label].isna()).any():
            raise UserError(f"The label column {self.label!r} of {self.path} ({self.where}) is empty in {int(empty.sum())} "
                            f"rows (the first is data row {int(np.argmax(empty.to_numpy())) + 1}); fill or drop those "
                            f"rows.")
        return features

    def matrix(self, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray | None, list[str], list[str] | None]:
        """(features as float32, labels or None, feature names, the text labels' classes or None)."""
        features = self.columns(frame)
        frame = frame.set_axis([str(c) for c in frame.columns], axis=1)
        x = frame[features].to_numpy(dtype=np.float64).astype(np.float32)
        if self.label is None:
            return x, None, features, None
        label = frame[self.label]
        if pd.api.types.is_bool_dtype(label):
            return x, label.to_numpy(dtype=np.int64), features, None
        if pd.api.types.is_numeric_dtype(label):
            values = label.to_numpy(dtype=np.float64)
            whole = np.all(values == np.round(values)) and np.all(np.isfinite(values))
            return x, values.astype(np.int64) if whole else values, features, None
        classes = sorted(label.astype(str).unique())
        return x, np.searchsorted(classes, label.astype(str).to_numpy()).astype(np.int64), features, classes


def _read_parquet(path: str, rows: int | None) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if rows is None:
        return pq.read_table(path).to_pandas()
    reader = pq.ParquetFile(path)
    batch = next(reader.iter_batches(batch_size=rows), None)
    return (pa.Table.from_batches([batch]) if batch is not None else reader.schema_arrow.empty_table()).to_pandas()


class OwnFile(SplitDataset):
    """A dataset of `datasets:` whose `source` is `file`: one CSV or Parquet file of yours."""
    embedded_label = "your own file"

    def __init__(self, name: str):
        self.name = name

    def raw_inputs(self, settings):
        return [FileSource.from_settings(self.name, settings).path]

    def label(self, settings):
        return f"{self.name}: your file {settings.path}"

    def load(self, settings, files, rng):
        source = FileSource.from_settings(self.name, settings)
        digest = sha256_file(source.path)
        if source.sha256 is not None and digest != source.sha256:
            raise UserError(f"{source.path} has sha256 {digest}, not the {source.sha256} that {source.where}.sha256 "
                            f"pins, so nothing was built; restore the pinned file, or set {source.where}.sha256 to the "
                            f"new value if the change is intended.")
        frame = source.read()
        x, y, names, classes = source.matrix(frame)
        n_test = int(round(len(x) * source.test_fraction))
        if not 1 <= n_test <= len(x) - 1:
            raise UserError(f"{source.path} ({source.where}) has {len(x)} rows, and test_fraction {source.test_fraction:g} "
                            f"leaves {n_test} test and {len(x) - n_test} training rows; add rows or change "
                            f"{source.where}.test_fraction.")
        extra = {"file": {"path": source.path, "format": source.format, "sha256": digest,
                          "bytes": os.path.getsize(source.path), "columns": [str(c) for c in frame.columns],
                          "rows": len(frame)},
                 "label_column": source.label, "feature_columns": names, "test_fraction": source.test_fraction,
                 "sha256_pinned": source.sha256 is not None}
        if classes is not None:
            extra["label_classes"] = classes
        origin = f"your file {source.path} ({source.format}, sha256 {digest})"
        return seeded_split(x, y, source.test_fraction, rng), names, origin, extra
