"""What every dataset of the pipeline declares: its settings (the config's `datasets.<name>`), the
files its build reads, the short label its tables print, and how its source files become tables.

Each dataset module (adult, mnist, gisette, reddit, twitter, kddcup99) defines one `Dataset`
subclass beside its parsers; `catalog.CATALOG` lists them and `build` writes what they return. A file
of your own (`source: file`) is an `own.OwnFile`, one per name of the config's `datasets:`.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Mapping

import numpy as np
import pyarrow as pa

from ..io import matrix_table
from .sources import file_specs

Parts = dict[str, tuple[np.ndarray, np.ndarray | None]]   # split name -> (x, y); y None: features only


@dataclass(frozen=True)
class SyntheticHistogram:
    """The embedded Reddit stand-in: `samples` draws of a power law x^exponent on {1, ..., threads}."""
    samples: int
    threads: int
    exponent: float


@dataclass(frozen=True)
class DatasetSettings:
    """The config's `datasets.<name>` entry; a key the dataset does not take stays None."""
    source: str                                # "real" (downloaded files), "embedded" (wheels, synthetic sets), "file"
    test_fraction: float | None = None         # the seeded split's test share
    synthetic_rows: int | None = None          # rows of an embedded synthetic set (twitter, kddcup99)
    subsample: int | None = None               # twitter: rows drawn before the split
    split: str | None = None                   # adult: uci, a1a or random (None: the source's default)
    synthetic: SyntheticHistogram | None = None  # reddit's embedded histogram
    files: Mapping[str, dict] = field(default_factory=dict)   # per-file overrides of the real sources
    # a file of your own (source "file", `own.FileSource`): its path, format, label and feature columns, pin
    path: str | None = None
    format: str | None = None
    label: str | None = None
    features: tuple[str, ...] | None = None
    sha256: str | None = None

    @classmethod
    def from_config(cls, entry: dict) -> "DatasetSettings":
        synthetic = entry.get("synthetic")
        features = entry.get("features")
        return cls(source=entry["source"], test_fraction=entry.get("test_fraction"),
                   synthetic_rows=entry.get("synthetic_rows"), subsample=entry.get("subsample"),
                   split=entry.get("split"), synthetic=SyntheticHistogram(**synthetic) if synthetic else None,
                   files=entry.get("files") or {}, path=entry.get("path"), format=entry.get("format"),
                   label=entry.get("label"), features=tuple(features) if features is not None else None,
                   sha256=entry.get("sha256"))

    @property
    def real(self) -> bool:
        return self.source == "real"


@dataclass(frozen=True)
class Table:
    """One output file of a build: the table and what its metadata adds to the build's provenance."""
    table: pa.Table
    meta: dict


class Dataset(ABC):
    """A dataset the pipeline builds from real downloads or embedded sources."""
    name: ClassVar[str]
    outputs: ClassVar[tuple[str, ...]] = ("train", "test")   # the Parquet files of results/data/<name>/
    embedded_wheel: ClassVar[str | None] = None   # the wheel the embedded source reads (None: generated)
    embedded_label: ClassVar[str]                 # what the embedded source is, as tables print it

    def raw_inputs(self, settings: DatasetSettings) -> list[str]:
        """Paths (relative to the working directory) the build reads, for Snakemake's input."""
        if settings.real:
            return [f"resources/raw/{self.name}/{n}" for n in file_specs(self.name, settings.files)]
        return [f"resources/embedded/{self.embedded_wheel}"] if self.embedded_wheel else []

    def label(self, settings: DatasetSettings) -> str:
        """The short provenance text every table and figure built on this dataset prints."""
        return f"{self.name}: real data" if settings.real else f"{self.name}: {self.embedded_label}"

    @abstractmethod
    def tables(self, settings: DatasetSettings, files: dict[str, Path], rng: np.random.Generator) -> dict[str, Table]:
        """The output tables by output name, from the input files by file name."""


class SplitDataset(Dataset):
    """A design matrix with train and test splits."""

    @abstractmethod
    def load(self, settings: DatasetSettings, files: dict[str, Path], rng: np.random.Generator
             ) -> tuple[Parts, list[str] | None, str, dict]:
        """({split: (x, y)}, feature names or None, origin text, extra provenance)."""

    def tables(self, settings, files, rng):
        parts, names, origin, extra = self.load(settings, files, rng)
        return {split: Table(matrix_table(x, y, names), {**extra, "split": split, "origin": origin,
                                                          "features": int(x.shape[1])})
                for split, (x, y) in parts.items()}


def seeded_split(x: np.ndarray, y: np.ndarray | None, test_fraction: float, rng: np.random.Generator) -> Parts:
    """A seeded random train/test split: the first round(n * test_fraction) of a permutation are the test rows
    (labels None: features only)."""
    perm = rng.permutation(len(x))
    n_test = int(round(len(x) * test_fraction))
    train, test = np.sort(perm[n_test:]), np.sort(perm[:n_test])
    pick = lambda rows: (x[rows], None if y is None else y[rows])  # noqa: E731
    return {"train": pick(train), "test": pick(test)}
