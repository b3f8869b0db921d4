"""A dataset from a file of your own (`datasets.<name>: {source: file, ...}`): CSV and Parquet built with
their provenance and the seeded split, a pinned sha256, and every mistake's one sentence, when the config
is loaded or when the dataset builds."""
from __future__ import annotations

import copy
import json

import numpy as np
import pandas as pd
import pytest
import yaml

from dptradeoff import UserError
from dptradeoff.config import load
from dptradeoff.data.build import build, split_datasets
from dptradeoff.data.dataset import DatasetSettings, seeded_split
from dptradeoff.io import read_matrix, read_provenance, sha256_file
from dptradeoff.problems import resolve
from dptradeoff.problems.oracle import Data
from dptradeoff.problems.rows import RowSplit
from dptradeoff.seeds import rng as make_rng

ROWS = 50


def people(rows: int = ROWS) -> pd.DataFrame:
    """A table as a practitioner holds one: numeric columns and a text label."""
    rng = np.random.default_rng(3)
    age = rng.integers(18, 90, rows)
    return pd.DataFrame({"age": age, "hours": rng.integers(1, 99, rows), "score": np.round(rng.random(rows), 3),
                         "income": np.where(age > 45, ">50K", "<=50K")})


def built(tmp_path, entry: dict, seed: int = 11, name: str = "my-people") -> dict[str, str]:
    outputs = {part: str(tmp_path / "out" / name / f"{part}.parquet") for part in ("train", "test")}
    build(name, DatasetSettings.from_config(entry), seed, [entry["path"]], outputs)
    return outputs


def test_a_csv_becomes_train_and_test_by_the_seeded_split_with_its_provenance(tmp_path):
    csv = tmp_path / "people.csv"
    people().to_csv(csv, index=False)
    entry = {"source": "file", "path": str(csv), "label": "income", "features": ["age", "hours"],
             "test_fraction": 0.2}
    out = built(tmp_path, entry)
    (x_train, y_train), (x_test, y_test) = read_matrix(out["train"]), read_matrix(out["test"])
    # the split every dataset without a fixed one uses: a permutation from (seed, "data", name)
    frame = people()
    x, y = frame[["age", "hours"]].to_numpy(np.float32), (frame["income"] == ">50K").to_numpy(np.int64)
    expected = seeded_split(x, y, 0.2, make_rng(11, "data", "my-people"))
    assert np.array_equal(x_train, expected["train"][0]) and np.array_equal(y_train, expected["train"][1])
    assert np.array_equal(x_test, expected["test"][0]) and np.array_equal(y_test, expected["test"][1])
    assert len(y_test) == 10 and len(y_train) == 40
    meta = read_provenance(out["train"])
    assert meta["file"] == {"path": str(csv), "format": "csv", "sha256": sha256_file(csv), "bytes": csv.stat().st_size,
                            "columns": ["age", "hours", "score", "income"], "rows": ROWS}
    assert meta["seed"] == 11 and meta["test_fraction"] == 0.2 and meta["split"] == "train" and meta["rows"] == 40
    assert meta["label_column"] == "income" and meta["label_classes"] == ["<=50K", ">50K"]
    assert meta["feature_columns"] == ["age", "hours"] and meta["sha256_pinned"] is False
    assert meta["source"] == "file" and meta["source_label"] == f"my-people: your file {csv}"
    assert read_provenance(out["test"])["file"] == meta["file"]
    # another seed, another split of the same rows
    other = built(tmp_path / "other", entry, seed=12)
    assert not np.array_equal(read_matrix(other["test"])[0], x_test)


def test_a_parquet_file_builds_the_same_matrix_as_the_csv_of_the_same_rows(tmp_path):
    frame = people()
    frame.to_csv(tmp_path / "people.csv", index=False)
    frame.to_parquet(tmp_path / "people.parquet", index=False)
    from_csv = built(tmp_path / "csv", {"source": "file", "path": str(tmp_path / "people.csv"), "label": "income"})
    from_parquet = built(tmp_path / "pq", {"source": "file", "path": str(tmp_path / "people.parquet"), "label": "income"})
    for part in ("train", "test"):
        (a, ya), (b, yb) = read_matrix(from_csv[part]), read_matrix(from_parquet[part])
        assert np.array_equal(a, b) and np.array_equal(ya, yb) and a.shape[1] == 3   # every column but the label
    assert read_provenance(from_parquet["train"])["file"]["format"] == "parquet"


def test_without_a_label_the_files_hold_the_features_and_the_rows_split_still(tmp_path):
    csv = tmp_path / "ages.csv"
    people()[["age"]].to_csv(csv, index=False)
    out = built(tmp_path, {"source": "file", "path": str(csv)})
    x, y = read_matrix(out["train"])
    assert y is None and x.shape == (40, 1) and read_provenance(out["train"])["label_column"] is None
    data = Data(x, y, *read_matrix(out["test"]), "file", "ages")
    assert data.n_train == 40
    tuning = RowSplit(0.25, 1, "tuning").select(data)
    assert tuning.y_train is None and tuning.y_test is None and len(tuning.x_train) + len(tuning.x_test) == 10


def test_a_pinned_sha256_builds_the_file_it_pins_and_refuses_a_changed_one(tmp_path):
    csv = tmp_path / "people.csv"
    people().to_csv(csv, index=False)
    entry = {"source": "file", "path": str(csv), "label": "income", "sha256": sha256_file(csv).upper()}
    out = built(tmp_path, entry)
    assert read_provenance(out["train"])["sha256_pinned"] is True
    people().assign(age=lambda f: f["age"] + 1).to_csv(csv, index=False)
    with pytest.raises(UserError) as caught:
        built(tmp_path / "changed", entry)
    assert str(caught.value) == (f"{csv} has sha256 {sha256_file(csv)}, not the {entry['sha256'].lower()} that "
                                 f"datasets.my-people.sha256 pins, so nothing was built; restore the pinned file, or set "
                                 f"datasets.my-people.sha256 to the new value if the change is intended.")
    assert not (tmp_path / "changed" / "out").exists()


@pytest.mark.parametrize("frame, entry, message", [
    # a text value below the rows the config check reads
    (people(1200).assign(hours=lambda f: f["hours"].astype(object).where(f.index < 1100, "unknown")), {},
     r"^The feature column 'hours' of .* is not numeric \(e\.g\. 'unknown' in data row 1101\); encode it as numbers"),
    (people().assign(income=lambda f: f["income"].where(f.index != 7)), {},
     r"^The label column 'income' of .* is empty in 1 rows \(the first is data row 8\); fill or drop those rows\.$"),
    (people(3), {"test_fraction": 0.1},
     r"has 3 rows, and test_fraction 0\.1 leaves 0 test and 3 training rows; add rows or change "
     r"datasets\.my-people\.test_fraction\.$"),
])
def test_what_only_every_row_shows_stops_the_build_with_one_sentence(tmp_path, frame, entry, message):
    csv = tmp_path / "people.csv"
    frame.to_csv(csv, index=False)
    with pytest.raises(UserError, match=message) as caught:
        built(tmp_path, {"source": "file", "path": str(csv), "label": "income", **entry})
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "out").exists()


# The config's own-data entries, loaded as `dptradeoff` commands load them (config/config.yaml under them).
def _config(tmp_path, dataset: dict, problem: dict | None = None, release: dict | None = None) -> str:
    config = {"datasets": {"my-people": {"source": "file", "label": "income", **dataset}},
              "problems": {"mine": {"oracle": "dptradeoff.problems.builtin:LinearDPSGD",
                                    "options": {"optimizer": "sgd", "loss": "logistic"}, "dataset": "my-people",
                                    "domain": {"epochs": {"low": 1, "high": 4, "integer": True},
                                               "lot_size": {"low": 4, "high": 16, "integer": True},
                                               "learning_rate": {"low": 0.01, "high": 0.5, "log": True},
                                               "noise": {"low": 0.5, "high": 4, "log": True},
                                               "clip": {"low": 0.5, "high": 2, "log": True}}, **(problem or {})}},
              "release": {"problem": "mine", **(release or {})}}
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_a_problem_of_your_own_trains_on_your_file_and_is_releasable(tmp_path):
    csv = tmp_path / "people.csv"
    people().to_csv(csv, index=False)
    config = load([_config(tmp_path, {"path": str(csv)})])
    assert "my-people" in split_datasets(config["datasets"])
    tuning = config["problems"]["mine-tuning"]   # the release's tuning split of the file's training rows
    assert tuning["dataset"] == "my-people" and tuning["rows"]["fraction"] == 0.2
    assert resolve("mine-tuning", {k: v for k, v in tuning.items() if k != "queries"}).dataset == "my-people"


def _bad_files(tmp_path):
    people().to_csv(tmp_path / "people.csv", index=False)
    people().assign(job="clerk").to_csv(tmp_path / "jobs.csv", index=False)
    (tmp_path / "header.csv").write_text("age,hours,income\n")
    (tmp_path / "nothing.csv").write_text("")
    people()[["age", "hours"]].to_csv(tmp_path / "unlabelled.csv", index=False)


@pytest.mark.parametrize("dataset, problem, message", [
    ({"path": "{tmp}/missing.csv"}, {},
     r"^datasets\.my-people\.path is .*/missing\.csv, which does not exist in .*; fix the path \(relative to the "
     r"directory Snakemake runs in, or absolute\) or put the file there\.$"),
    ({"path": "{tmp}/people.csv", "label": "incme"}, {},
     r"^datasets\.my-people\.label is 'incme', which is not a column of .*people\.csv \(its columns: age, hours, score, "
     r"income\); name one of them\.$"),
    ({"path": "{tmp}/people.csv", "features": ["age", "height"]}, {},
     r"^datasets\.my-people\.features names \['height'\], which are not columns of .*; fix the names\.$"),
    ({"path": "{tmp}/jobs.csv"}, {},
     r"^The feature column 'job' of .*jobs\.csv \(datasets\.my-people\) is not numeric \(e\.g\. 'clerk' in data row 1\); "
     r"encode it as numbers in the file \(e\.g\. one 0/1 column per category\), or leave it out of "
     r"datasets\.my-people\.features\.$"),
    ({"path": "{tmp}/header.csv"}, {}, r"header\.csv \(datasets\.my-people\) is empty: it has 3 columns and no data rows"),
    ({"path": "{tmp}/nothing.csv"}, {}, r"nothing\.csv \(datasets\.my-people\) is empty: it has 0 columns"),
    ({"path": "{tmp}/people.tsv"}, {}, r"whose extension names no format the pipeline reads; name a \.csv or \.parquet "
                                       r"file, or set datasets\.my-people\.format to csv or parquet\.$"),
    ({"path": "{tmp}/people.csv", "format": "parquet"}, {},
     r"people\.csv \(datasets\.my-people\) is not a readable parquet file \(.*\); fix the file, or set "
     r"datasets\.my-people\.format if it is in the other format\.$"),
    ({"path": "{tmp}/people.csv"}, {"dataset": "my-peple"},
     r"^problems\.mine\.dataset is 'my-peple', which is not a dataset with train and test rows; use one of adult, "
     r"gisette, kddcup99, mnist, my-people, twitter \(your own under datasets: with source: file\), or omit it"),
    ({"path": "{tmp}/unlabelled.csv", "label": None}, {},
     r"^release\.problem is mine, whose dataset my-people has no label column, and its trainer learns and scores "
     r"labels; give datasets\.my-people a `label:`\.$"),
    ({"path": "{tmp}/people.csv"}, {"dataset": None},
     r"^release\.problem is mine, which has no dataset of the pipeline, so there are no private rows to release a "
     r"model from; give problems\.mine a `dataset:`"),
])
def test_a_bad_own_dataset_stops_with_one_sentence_when_the_config_is_loaded(tmp_path, dataset, problem, message):
    _bad_files(tmp_path)
    dataset = {k: v.replace("{tmp}", str(tmp_path)) if isinstance(v, str) else v for k, v in dataset.items()}
    path = _config(tmp_path, dataset, problem)
    config = yaml.safe_load(open(path))
    for key in ("label", "dataset"):   # None: the key left out
        for section in (config["datasets"]["my-people"], config["problems"]["mine"]):
            if key in section and section[key] is None:
                del section[key]
    open(path, "w").write(yaml.safe_dump(config))
    with pytest.raises(UserError, match=message) as caught:
        load([path])
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("datasets, message", [
    ({"adult": {"source": "file", "path": "people.csv"}},
     r"^datasets\.adult is a file of your own under the name of the built-in dataset adult; give it a name of its own "
     r"\(e\.g\. my-adult\) and use that name in problems\.<name>\.dataset\.$"),
    ({"mine": {"source": "embedded"}},
     r"^datasets\.mine is not a built-in dataset \(adult, mnist, gisette, reddit, twitter, kddcup99\); a dataset of your "
     r"own needs source: file and a path: to its CSV or Parquet file \(config/README\.md\)\.$"),
])
def test_a_dataset_name_that_clashes_or_has_no_file_stops_with_one_sentence(tmp_path, datasets, message):
    path = tmp_path / "names.yaml"
    path.write_text(yaml.safe_dump({"datasets": datasets}))
    with pytest.raises(UserError, match=message):
        load([str(path)])
