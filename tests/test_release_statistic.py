"""A release of a statistic, not of a model: a dataset of features only (no label column) and the clamped
Laplace mean of examples/laplace_mean.py, released from its front; the release's record, table and figure
name the utility as the problem describes it, never "accuracy"."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from conftest import REPO
from dptradeoff import paths
from dptradeoff.io import matrix_table, write_table
from dptradeoff.plots.release import release_table
from dptradeoff.privacy.accountant import Accountant
from dptradeoff.problems import definition, resolve
from dptradeoff.release import run
from dptradeoff.release.settings import ReleaseSettings, derived_problem_entries

ENTRY = {"oracle": f"{REPO}/examples/laplace_mean.py:ClampedLaplaceMean", "dataset": "adult",
         "domain": {"scale": {"low": 1e-3, "high": 10.0, "log": True}, "lower": {"low": 0.0, "high": 35.0},
                    "upper": {"low": 40.0, "high": 120.0}}}


def test_a_dataset_without_labels_releases_a_mean_named_by_its_utility(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    for part, n in (("train", 3000), ("test", 500)):     # ages only: no y column at all
        write_table(matrix_table(rng.integers(17, 90, (n, 1)).astype(float), None), paths.data("adult", part),
                    {"source": "test", "source_label": "ages"})
    config = {"seed": 3, "problems": {"ages": ENTRY},
              "release": {"problem": "ages", "tuning": {"split": 0.2}, "validation": 0.2, "epsilon": 2.0,
                          "delta": 1e-5, "selection": {"method": "random-stopping", "eta": 1.0, "mean_trials": 2},
                          "score_noise": 0.05, "candidates": {"max": 3, "perturbations": 0, "scale": 0.2}}}
    config["problems"].update(derived_problem_entries(config))
    settings = ReleaseSettings.from_config(config)
    problem = resolve("ages", definition(config, "ages"), "dp_accounting")
    tuning = resolve(settings.tuning_problem, definition(config, settings.tuning_problem), "dp_accounting")
    front = pd.DataFrame({"scale": [0.5, 0.1, 0.02], "lower": 17.0, "upper": 90.0, "epsilon": [0.3, 1.0, 4.0],
                          "utility": [0.99, 0.995, 0.999], "error": [0.01, 0.005, 0.001], "failure": None})
    record = run.release(problem, tuning, front, settings, Accountant(), utility_floor=0.0)
    assert record["utility"] == "1 - |error|/100" and 0.9 < record["test_utility"] <= 1 and record["test_rows"] == 500
    assert record["guarantee"]["epsilon"] <= 2.0 and "accuracy" not in json.dumps(record, default=str)
    table, note = release_table(record, "test config")
    assert "test 1 - |error|/100" in set(table["quantity"]) and "accuracy" not in table.to_csv() + note
