"""Every reader of a pipeline file stops on a damaged one with one sentence naming the file and the
fix (the Snakemake runs that meet one are in test_pipeline_dpareto.py)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dptradeoff import UserError, io, resources
from dptradeoff.problems.tables import read_frame, write_frame
from dptradeoff.stats import tables


@pytest.fixture
def damaged(tmp_path):
    """A matrix table and an evaluation table, each cut to 100 bytes as a killed copy would leave them."""
    matrix = tmp_path / "train.parquet"
    io.write_table(io.matrix_table(np.ones((50, 3)), np.zeros(50)), matrix, {"source": "test"})
    frame = tmp_path / "evals.parquet"
    write_frame(pd.DataFrame({"epsilon": np.arange(50.0)}), str(frame), {})
    for path in (matrix, frame):
        path.write_bytes(path.read_bytes()[:100])
    return {"matrix": str(matrix), "frame": str(frame)}


@pytest.mark.parametrize("reader, kind", [
    (read_frame, "frame"), (io.read_provenance, "frame"), (io.read_matrix, "matrix"),
    (io.parquet_metadata, "matrix"), (lambda p: resources.evaluation_mem_mb([p]), "matrix"),
    (lambda p: resources.training_rows([p]), "matrix"),
])
def test_each_parquet_reader_names_the_damaged_file_and_the_fix(damaged, reader, kind):
    with pytest.raises(UserError) as err:
        reader(damaged[kind])
    message = str(err.value)
    assert message.startswith(f"{damaged[kind]} is not a readable Parquet file (")
    assert "magic bytes not found" in message and message.endswith("so delete it and rerun the workflow, which makes it again.")
    assert "\n" not in message


def test_a_missing_file_stays_a_file_not_found_error_with_its_path(tmp_path):
    """Snakemake recognises a resource function's missing input by the error's filename, and waits for it."""
    with pytest.raises(FileNotFoundError) as err:
        io.parquet_metadata(str(tmp_path / "absent.parquet"))
    assert err.value.filename == str(tmp_path / "absent.parquet")


def test_a_damaged_csv_table_is_named_too(tmp_path):
    csv, md = tmp_path / "t.csv", tmp_path / "t.md"
    tables.write(pd.DataFrame({"a": [1, 2], "b": [3, 4]}), str(csv), str(md), "note")
    csv.write_bytes(b"# note\na,b\n1,2,3,4,5\n\"")
    with pytest.raises(UserError, match=r"t\.csv is not a readable table \(.*delete it and rerun"):
        tables.read(str(csv))
