"""Turn a dataset's source files (real downloads or embedded wheels) into its Parquet files.

Every Parquet file records in its metadata: dataset, split, source ("real" or "embedded"),
origin (URLs, or the wheel and member, or the synthetic generator and its parameters), the
sha256 of every input file, and row/feature counts. `source_label` is the short text that
tables and figures print. What each dataset reads and makes is its `Dataset` object (`catalog`, and
`own.OwnFile` for a file of your own).
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

from .. import UserError
from ..io import matrix_arrays, nonfinite, sha256_file, write_table
from ..seeds import rng as make_rng
from .catalog import CATALOG
from .dataset import Dataset, DatasetSettings
from .own import OwnFile

log = logging.getLogger(__name__)

SPLIT_OUTPUTS = {name for name, d in CATALOG.items() if d.outputs == ("train", "test")}
OWN_SOURCE = "file"   # datasets.<name>.source of a file of your own


def catalog(entries: dict) -> dict[str, Dataset]:
    """Every dataset the config's `datasets:` names: the built-ins, and each file of your own."""
    return {**CATALOG, **{name: OwnFile(name) for name, entry in entries.items()
                          if isinstance(entry, dict) and entry.get("source") == OWN_SOURCE}}


def split_datasets(entries: dict) -> list[str]:
    """The names of `catalog(entries)` with train and test files (what a problem's `dataset` may name)."""
    return sorted(name for name, d in catalog(entries).items() if d.outputs == ("train", "test"))


def dataset(name: str, settings: DatasetSettings | None = None) -> Dataset:
    """The dataset `name`: a file of your own where `settings` (its config entry) says so, else a built-in."""
    if settings is not None and settings.source == OWN_SOURCE:
        return OwnFile(name)
    if name not in CATALOG:
        raise UserError(f"Unknown dataset {name!r}; the datasets are {', '.join(CATALOG)}, or one of your own under "
                        f"datasets: with source: file.")
    return CATALOG[name]


def raw_inputs(name: str, source: str, entry: dict) -> list[str]:
    """Paths (relative to the working directory) a dataset's build reads, for Snakemake's input;
    `entry` is the config's `datasets.<name>` (whose `source` is `source`)."""
    settings = DatasetSettings.from_config({**entry, "source": source})
    return dataset(name, settings).raw_inputs(settings)


def build(name: str, settings: DatasetSettings, seed: int, inputs: list[str], outputs: dict[str, str]) -> None:
    """Build the Parquet file(s) of dataset `name` from `inputs`; `outputs` maps output name to path."""
    source = dataset(name, settings)
    paths = [Path(p) for p in inputs]
    rng = make_rng(seed, "data", name)
    base = {"dataset": name, "source": settings.source, "input_sha256": {p.name: sha256_file(p) for p in paths},
            "seed": seed}
    tables = source.tables(settings, {p.name: p for p in paths}, rng)
    for output, made in tables.items():   # every table checked before any is written: nothing half-built
        _check_finite(name, output, made.table, [p.name for p in paths])
    for output, made in tables.items():
        write_table(made.table, outputs[output], {**base, **made.meta, "source_label": source.label(settings)})
        log.info("%s %s: %d rows -> %s", name, output, made.table.num_rows, outputs[output])


def _check_finite(name: str, output: str, table, inputs: list[str]) -> None:
    """A NaN or infinite feature would make every weight trained on it NaN (0 * inf in DP-SGD's clipped
    sum), silently: the build stops instead, naming where."""
    if "x" not in table.column_names:
        return
    if where := nonfinite(matrix_arrays(table)[0]):
        names = json.loads((table.schema.metadata or {}).get(b"feature_names", b"null"))
        feature = f" ({names[where.column]})" if names else ""
        raise UserError(f"The {output} rows of {name} read from {', '.join(inputs) or 'its generator'} have non-finite "
                        f"features (NaN or inf) in {where}{feature}, so nothing was written; fix or drop those values "
                        f"in the source and rebuild.")
