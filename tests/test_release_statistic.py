"""A release of a statistic, not of a model: a dataset of features only (no label column) and the clamped
Laplace mean of examples/laplace_mean.py, released from its front; the release's record, table and figure
name the utility as the problem describes it, never "accuracy"."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import REPO
from dptradeoff import exact_noise, paths
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
    # the released mean and its noisy score are on their exact grids (exact_noise): gamma times an integer
    point, n_val = record["released"]["hyperparameters"], record["score"]["validation_rows"]
    mean_grid = exact_noise.laplace(point["scale"], (point["upper"] - point["lower"]) / (3000 - n_val), 1,
                                    max(abs(point["lower"]), abs(point["upper"])))
    score_grid = exact_noise.gaussian(0.05, 1 / (n_val - 1), 1, 1.0)
    for value, grid in ((record["model"], mean_grid), (record["released"]["noisy_validation_score"], score_grid)):
        assert np.rint(value / grid.spacing) * grid.spacing == value, (value, grid)
    table, note = release_table(record, "test config")
    assert "test 1 - |error|/100" in set(table["quantity"]) and "accuracy" not in table.to_csv() + note


@pytest.mark.slow
def test_a_statistic_releases_through_snakemake_from_a_label_less_file(run_snakemake, tmp_path):
    """config/examples/laplace-mean.yaml and laplace-mean-release.yaml as shipped, a short tuning chain: the
    label-less ages file passes the config's checks and the release rule releases the mean under
    `randomness: os`, its noise and its score's on the exact grid; the figure's labels fit."""
    work = tmp_path / "work"
    (work / "data").mkdir(parents=True)
    ages = np.random.default_rng(4).integers(17, 91, 32_561)      # as many as Adult's people
    pd.DataFrame({"age": ages}).to_csv(work / "data" / "ages.csv", index=False)
    smaller = tmp_path / "smaller.yaml"
    smaller.write_text(yaml.safe_dump({"dpareto": {"initial_points": 4, "iterations": 2, "candidates": 300,
                                                   "gp_restarts": 1}, "random_sampling": {"points": 4, "points_per_job": 4}}))
    examples = REPO / "config" / "examples"
    done = run_snakemake(work, "results/release/laplace-mean/release.json", "tables/release-laplace-mean.csv",
                         "figures/release-laplace-mean.pdf", "--cores", "2", "--configfile",
                         str(examples / "laplace-mean.yaml"), str(examples / "laplace-mean-release.yaml"), str(smaller),
                         timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    folder = work / "results" / "release" / "laplace-mean"
    record = json.loads((folder / "release.json").read_text())
    assert record["utility"] == "1 - |error|/100" and record["guarantee"]["epsilon"] <= 0.5
    assert "exactly on a grid" in record["guarantee"]["randomness"] and not (folder / "diagnostics.json").exists()
    with np.load(folder / "model.npz") as model:
        assert list(model) == ["mean"] and 17 <= float(model["mean"][0]) <= 90


def test_the_release_figures_label_fits_beside_its_axes(monkeypatch, tmp_path):
    # a utility with a long name: the y label wraps to the axes' height instead of running into the footer
    from dptradeoff.plots import release as release_plots

    seen = {}

    def keep(fig, out, caption, sources, config):
        fig.tight_layout(rect=(0, 0.03, 1, 0.95))
        fig.canvas.draw()
        ax = fig.axes[0]
        seen["label"], seen["axes"] = ax.yaxis.label.get_window_extent(), ax.get_window_extent()

    monkeypatch.setattr(release_plots, "save", keep)
    record = {"front": {"epsilon": [0.1, 1.0], "utility": [0.8, 0.9], "best_utility_at_total": 0.9},
              "tuning": {"problem": "p-tuning", "rows": "rows"}, "guarantee": {"epsilon": 1.0, "delta": 1e-5},
              "eps0": 0.3, "test_utility": 0.85, "utility": "one minus the absolute error of the mean over 100",
              "problem": "p", "private_rows": "rows"}
    release_plots.release_figure(record, str(tmp_path / "f.pdf"), "config")
    label, axes = seen["label"], seen["axes"]
    assert axes.y0 - 1 <= label.y0 and label.y1 <= axes.y1 + 1, (label, axes)
