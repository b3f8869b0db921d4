"""A problem of your own on a CSV of your own, through the real workflow to its release: the walk-through of
docs/your-algorithm.md ("Your own data, from CSV to release") at small scale. The CSV is written by
examples/adult_income_csv.py; the config is config/examples/adult-income-csv.yaml with smaller budgets."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from dptradeoff.io import read_matrix, read_provenance, sha256_file
from dptradeoff.stats.tables import read

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = yaml.safe_load((REPO / "config/examples/adult-income-csv.yaml").read_text())
PROBLEM = EXAMPLE["problems"]["income-logreg"]
CONFIG = {
    **EXAMPLE,
    "dpareto": {**EXAMPLE["dpareto"], "initial_points": 4, "iterations": 2, "candidates": 200, "gp_restarts": 1},
    "random_sampling": {"points": 4, "points_per_job": 4, "uniform": False},
    "statistics": {"comparison_parts": 2},
    "problems": {"income-logreg": {**PROBLEM, "repeats": 1, "queries": {},
                                   "domain": {**PROBLEM["domain"], "epochs": {"low": 1, "high": 3, "integer": True},
                                              "lot_size": {"low": 16, "high": 64, "integer": True}}}},
    "release": {**EXAMPLE["release"], "epsilon": 4.0, "score_noise": 0.05,
                "selection": {"method": "random-stopping", "eta": 1.0, "mean_trials": 2},
                "candidates": {"max": 3, "perturbations": 0, "scale": 0.2}},
    "audit": {**EXAMPLE["audit"], "front_points": 1, "runs": 10},
}
ROWS = 600


def test_a_problem_on_your_own_csv_runs_to_its_release_and_rebuilds_when_the_csv_changes(run_snakemake, tmp_path):
    """Runs Snakemake itself: the own file is a Snakemake input (its build, and a rebuild when it changes),
    and the problem on it runs every study a built-in dataset's problem does, to the release and its audit."""
    work = tmp_path / "work"
    csv = work / EXAMPLE["datasets"]["adult-income"]["path"]
    written = subprocess.run([sys.executable, str(REPO / "examples/adult_income_csv.py"), str(csv), "--rows", str(ROWS)],
                             capture_output=True, text=True, timeout=300)
    assert written.returncode == 0, written.stderr[-2000:]
    assert f"wrote {csv}: {ROWS} rows" in written.stdout
    config = tmp_path / "adult-income.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    done = run_snakemake(work, "all", "--cores", "2", f"--configfile={config}", timeout=1200)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]

    # the split, with the file's provenance in both files
    train, test = (work / f"results/data/adult-income/{part}.parquet" for part in ("train", "test"))
    (x_train, y_train), (x_test, y_test) = read_matrix(train), read_matrix(test)
    assert len(y_test) == ROWS // 5 and len(y_train) == ROWS - ROWS // 5 and x_train.shape[1] == 7
    meta = read_provenance(train)
    assert meta["file"]["sha256"] == sha256_file(csv) and meta["file"]["rows"] == ROWS
    assert meta["label_classes"] == ["<=50K", ">50K"] and set(np.unique(y_train)) == {0, 1}
    # every evaluation trained on it, each epoch a traced row
    chain = pd.read_parquet(work / "results/dpareto/income-logreg-tuning/dpareto/0/evaluations.parquet")
    assert chain["failure"].isna().all() and (~chain["trace_final"]).any()
    assert chain["source_label"].str.contains("adult-income: your file data/adult-income.csv").all()
    # the release, its private rows those of the file outside the tuning split
    record = json.loads((work / "results/release/income-logreg/release.json").read_text())
    assert record["guarantee"]["epsilon"] <= 4.0 and record["test_rows"] == ROWS // 5
    assert "your file data/adult-income.csv" in record["private_rows"] and 0 <= record["test_utility"] <= 1
    assert np.load(work / "results/release/income-logreg/model.npz")["weights_bias_last"].shape == (8,)
    assert {"total epsilon", "test accuracy"} <= set(read(str(work / "tables/release-income-logreg.csv"))["quantity"])
    assert (work / "tables/audit-income-logreg.csv").exists() and (work / "figures/front-income-logreg.pdf").exists()

    # a changed CSV rebuilds the split, and everything after it
    original = csv.read_text()
    pinned = sha256_file(csv)
    csv.write_text(original.replace("\n0.39,", "\n0.4,", 1))
    plan = run_snakemake(work, "all", "-n", f"--configfile={config}")
    assert plan.returncode == 0 and "Updated input files: data/adult-income.csv" in plan.stdout

    # with the original's sha256 pinned, the changed file is refused in one sentence and nothing is written
    pin = tmp_path / "pin.yaml"
    pin.write_text(yaml.safe_dump({"datasets": {"adult-income": {"sha256": pinned}}}))
    refused = run_snakemake(work, "results/data/adult-income/train.parquet", "--cores", "1", "--configfile",
                            str(config), str(pin))
    assert refused.returncode != 0
    assert (f"data/adult-income.csv has sha256 {sha256_file(csv)}, not the {pinned} that "
            f"datasets.adult-income.sha256 pins, so nothing was built;") in refused.stderr
    assert not train.exists()
