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


# pandas.read_parquet(path) opens the file and hands pyarrow the Python file object. pyarrow may still be
# closing it on its I/O threads when a short script exits; that thread then takes the GIL of a finalising
# interpreter and the process aborts ("terminate called without an active exception", rc 134:
# apache/arrow#33975, #50482). The project reads Parquet by path (`dptradeoff.io.read_frame`), which does not.
FILE_OBJECT_READS = r"\b(pd|pandas)\.read_parquet\(|\.read_table\(\s*open\(|ParquetFile\(\s*open\("


def test_no_code_of_the_project_reads_parquet_through_a_python_file_object():
    """The pipeline's scripts, the CLI, the benchmarks and the examples: each may exit right after a read
    (a pytest process exits long after its reads, so tests are left out)."""
    import re
    from pathlib import Path

    root = Path(__file__).parent.parent
    files = [p for folder in ("src", "workflow", "benchmarks", "examples") for p in (root / folder).rglob("*")
             if p.suffix in (".py", ".smk") and p.is_file()]
    offenders = [f"{p.relative_to(root)}:{n}" for p in files for n, line in enumerate(p.read_text().splitlines(), 1)
                 if re.search(FILE_OBJECT_READS, line) and not line.lstrip().startswith("#")]
    assert not offenders, f"read these by path with dptradeoff.io.read_frame: {offenders}"


@pytest.mark.slow
def test_a_script_that_reads_an_evaluations_file_and_exits_at_once_exits_cleanly(tmp_path):
    """Ten fresh interpreters each read an evaluations file with `read_frame` and exit at once: none aborts
    (read through a Python file object, about half of them do on a two-core machine)."""
    import subprocess
    import sys

    from dptradeoff.problems import resolve
    from dptradeoff.problems.evaluate import evaluate

    problem = resolve("gaussian-mean", {"oracle": "tests/user_problems/gaussian_mean.py",
                                        "domain": {"sigma": {"low": 0.001, "high": 1.0}, "clip": {"low": 0.1, "high": 1.0}}})
    points = pd.DataFrame({"sigma": np.linspace(0.01, 1, 24), "clip": np.linspace(0.1, 1, 24)})
    rows = evaluate(problem, points, None, 3, config_seed=0, method="random", run=0)
    path = tmp_path / "evaluations.parquet"
    write_frame(rows, str(path), {"problem": "gaussian-mean"})
    code = f"import pandas; from dptradeoff.io import read_frame; print(read_frame({str(path)!r}).shape)"
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True) for _ in range(10)]
    assert [r.returncode for r in runs] == [0] * 10, [r.stderr[-300:] for r in runs if r.returncode]
    assert all(r.stdout.strip() == f"{rows.shape}" for r in runs)
