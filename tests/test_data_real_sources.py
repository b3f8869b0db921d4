"""The real-data path end to end: local HTTP server -> download -> verify -> extract -> Parquet, via Snakemake."""
from __future__ import annotations

import hashlib

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

from dptradeoff.io import read_matrix, read_provenance
from upstream.files import all_files

pytestmark = pytest.mark.slow


@pytest.fixture
def real_config(http_server, tmp_path):
    """Serve every dataset's files in upstream format and write a config pointing all URLs at them."""
    root, base = http_server
    datasets = {}
    for dataset, files in all_files().items():
        (root / dataset).mkdir()
        overrides = {}
        for name, data in files.items():
            (root / dataset / name).write_bytes(data)
            # The first URL is a dead mirror (404): the download must fall through to the next one.
            spec = {"urls": [f"{base}/missing/{name}", f"{base}/{dataset}/{name}"]}
            if dataset == "mnist":
                spec["md5"] = hashlib.md5(data).hexdigest()
            elif dataset != "twitter":  # Twitter upstream publishes no checksum: none pinned
                spec["sha256"] = hashlib.sha256(data).hexdigest()
            overrides[name] = spec
        datasets[dataset] = {"source": "real", "files": overrides}
    path = tmp_path / "real.yaml"
    path.write_text(yaml.safe_dump({"datasets": datasets}))
    return path


def test_all_datasets_from_local_http_server(real_config, run_snakemake, tmp_path):
    """Runs Snakemake itself: its config downloads every dataset from a local server, data no shared pipeline
    builds."""
    work = tmp_path / "work"
    targets = [f"results/data/{d}/{s}.parquet" for d in ("adult", "mnist", "gisette", "twitter", "kddcup99")
               for s in ("train", "test")] + ["results/data/reddit/histogram.parquet"]
    done = run_snakemake(work, *targets, "--cores", "2", "--configfile", str(real_config))
    assert done.returncode == 0, done.stderr[-3000:]
    data = work / "results" / "data"
    upstream = all_files()

    x, y = read_matrix(data / "adult" / "train.parquet")
    assert x.shape == (4, 123) and y.tolist() == [0, 0, 1, 1]
    assert x.sum(axis=1).tolist() == [14, 14, 11, 14]  # row 3 has three '?' fields: their blocks stay empty
    x, y = read_matrix(data / "adult" / "test.parquet")
    assert x.shape == (3, 123) and y.tolist() == [0, 0, 1]  # header line skipped, trailing dots stripped
    meta = read_provenance(data / "adult" / "test.parquet")
    assert meta["source"] == "real" and meta["rows"] == 3
    assert meta["input_sha256"]["adult.test"] == hashlib.sha256(upstream["adult"]["adult.test"]).hexdigest()

    x, y = read_matrix(data / "mnist" / "train.parquet")
    assert x.shape == (6, 784) and 0 <= x.min() and x.max() <= 1 and set(y) <= set(range(10))
    assert read_matrix(data / "mnist" / "test.parquet")[0].shape == (3, 784)

    x, y = read_matrix(data / "gisette" / "train.parquet")
    assert x.shape == (4, 5000) and set(y) <= {0, 1}
    assert read_matrix(data / "gisette" / "test.parquet")[0].shape == (2, 5000)

    hist = pq.read_table(data / "reddit" / "histogram.parquet").to_pandas().set_index("subreddit")["authors"]
    assert hist.to_dict() == {"AskReddit": 1, "python": 2, "rust": 2}

    xs = [read_matrix(data / "twitter" / f"{s}.parquet") for s in ("train", "test")]
    assert sum(len(y) for _, y in xs) == 10 and all(x.shape[1] == 77 for x, _ in xs)
    meta = read_provenance(data / "twitter" / "train.parquet")
    # No checksum is published for regression.tar.gz: the sha256 of what was downloaded is recorded.
    assert meta["input_sha256"]["Twitter.data"]
    assert (work / "resources/raw/twitter/regression.tar.gz").exists()

    xs = [read_matrix(data / "kddcup99" / f"{s}.parquet") for s in ("train", "test")]
    assert sum(len(y) for _, y in xs) == 5
    assert xs[0][0].shape[1] == 38 + 3 + 4 + 2  # 38 numeric, one-hot protocol (3), service (4), flag (2)
    assert sorted(np.concatenate([y for _, y in xs]).tolist()) == [0, 0, 0, 1, 1]


@pytest.mark.xdist_group("paper-dry-run")
def test_paper_config_lists_the_real_downloads(paper_dry_run):
    done = paper_dry_run
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout + done.stderr
    for name in ("adult.data", "adult.test", "train-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz",
                 "gisette_valid.labels", "corpus-webis-tldr-17.zip", "regression.tar.gz", "kddcup.data_10_percent.gz"):
        assert "resources/raw/" in out and name in out
    assert "embedded_wheel" not in out
