"""The default configuration, run for real by Snakemake in a fresh working directory (offline)."""
from __future__ import annotations

import pytest

from dptradeoff.io import read_matrix, read_provenance

pytestmark = pytest.mark.slow

EXPECTED = {
    "adult/train.parquet": (21707, 123), "adult/test.parquet": (10854, 123),
    "mnist/train.parquet": (4000, 784), "mnist/test.parquet": (1000, 784),
    "gisette/train.parquet": (None, 5000), "gisette/test.parquet": (None, 5000),
    "twitter/train.parquet": (16000, 77), "twitter/test.parquet": (4000, 77),
    "kddcup99/train.parquet": (24000, 118), "kddcup99/test.parquet": (6000, 118),
}


DATA_TARGETS = [f"results/data/{name}" for name in EXPECTED] + ["results/data/reddit/histogram.parquet"]


def test_default_config_builds_every_data_file_offline(run_snakemake, tmp_path):
    """Runs Snakemake itself: the default config's data built twice in fresh folders (the same bytes) and a rerun
    with nothing to do."""
    work = tmp_path / "work"
    done = run_snakemake(work, *DATA_TARGETS, "--cores", "2")
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    data = work / "results" / "data"
    for name, (rows, features) in EXPECTED.items():
        x, y = read_matrix(data / name)
        assert x.shape[1] == features and (rows is None or x.shape[0] == rows), name
        meta = read_provenance(data / name)
        assert meta["source"] == "embedded" and "embedded" in meta["source_label"] and meta["rows"] == len(y)
    assert read_provenance(data / "reddit/histogram.parquet")["total_authors"] == 100_000
    # Same config -> same bytes of data: a second run in another folder gives identical matrices.
    again = run_snakemake(tmp_path / "again", "results/data/adult/train.parquet", "--cores", "1")
    assert again.returncode == 0
    a, _ = read_matrix(data / "adult/train.parquet")
    b, _ = read_matrix(tmp_path / "again/results/data/adult/train.parquet")
    assert (a == b).all()
    # Nothing left to do on a rerun.
    rerun = run_snakemake(work, *DATA_TARGETS, "-n")
    assert "Nothing to be done" in rerun.stdout + rerun.stderr


def test_lint_is_clean(run_snakemake, tmp_path):
    """Runs Snakemake itself: `snakemake --lint`."""
    done = run_snakemake(tmp_path / "work", "--lint")
    out = done.stdout + done.stderr
    assert "Lints for" not in out, out[-3000:]
