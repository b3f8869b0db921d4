"""A release through the real workflow and the `dptradeoff release` command: the Opacus example (a
problem of your own with `event`, `train` and `score`) at small scale, its tuning front characterised on
a split of its training rows, then released privately, and the command's one-sentence errors."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from dptradeoff.privacy.accountant import Accountant
from dptradeoff.privacy.events import PoissonSampledDpEvent, GaussianDpEvent, SelfComposedDpEvent
from dptradeoff.stats.tables import read

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
OPACUS = yaml.safe_load((REPO / "config/examples/opacus-cnn.yaml").read_text())["problems"]["opacus-cnn"]
CONFIG = {
    "studies": ["release"],
    "dpareto": {"initial_points": 6, "iterations": 2, "candidates": 200, "gp_restarts": 2},
    "problems": {"opacus-cnn": {**OPACUS, "options": {"train_rows": 400, "test_rows": 100}, "queries": {},
                                "domain": {**OPACUS["domain"], "epochs": {"low": 2, "high": 3, "integer": True},
                                           "lot_size": {"low": 32, "high": 64, "integer": True, "log": True},
                                           "learning_rate": {"low": 0.3, "high": 1.0, "log": True},
                                           "noise": {"low": 0.5, "high": 1.5, "log": True}}}},
    "random_sampling": {"points": 6, "points_per_job": 3, "uniform": False},
    "release": {"problem": "opacus-cnn", "tuning": {"split": 0.3}, "validation": 0.25, "epsilon": 4.0,
                "delta": 1e-5, "selection": {"method": "random-stopping", "eta": 1.0, "mean_trials": 2},
                "score_noise": 0.05, "candidates": {"max": 3, "perturbations": 0, "scale": 0.2}},
}


def _release_cli(work: Path, config: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dptradeoff", "release", f"--configfile={config}", *args], cwd=work,
                          capture_output=True, text=True, timeout=900)


def test_the_opacus_example_is_released_from_its_tuning_front(run_snakemake, tmp_path):
    """Runs Snakemake itself: the Opacus example's own tuning study and release, and `dptradeoff release` writing
    beside them."""
    config = tmp_path / "opacus-release.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    work = tmp_path / "work"
    done = run_snakemake(work, "all", "--cores", "2", f"--configfile={config}", timeout=1500)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]

    record = json.loads((work / "results/release/opacus-cnn/release.json").read_text())
    guarantee = record["guarantee"]
    assert guarantee["epsilon"] <= 4.0 and guarantee["delta"] == 1e-5
    assert guarantee["neighbouring"].startswith("add/remove-one (Opacus's relation)")
    assert 0 < record["eps0"] < record["trial_epsilon"] < guarantee["epsilon"]
    assert record["tuning"]["problem"] == "opacus-cnn-tuning" and "given up" in record["tuning"]["how"]
    assert 0 <= record["test_utility"] <= 1 and record["test_rows"] == 100
    released = record["released"]["hyperparameters"]
    assert released["epochs"] in (2, 3) and released["noise"] > 0
    # the released noise is what makes the training eps0-DP on the private training rows (300 of the 400 kept)
    n = 300
    rate, steps = 1 / -(-n // released["lot_size"]), released["epochs"] * -(-n // released["lot_size"])
    event = SelfComposedDpEvent(PoissonSampledDpEvent(rate, GaussianDpEvent(released["noise"])), steps)
    assert Accountant().epsilon(event, 1e-5) == pytest.approx(record["released"]["training_epsilon"], rel=1e-9)
    assert record["released"]["training_epsilon"] <= record["eps0"]
    weights = np.load(work / "results/release/opacus-cnn/model.npz")
    assert {"conv1.weight", "fc2.bias"} <= set(weights.files)
    table = read(str(work / "tables/release-opacus-cnn.csv"))
    assert {"total epsilon", "eps0", "test accuracy", "randomness"} <= set(table["quantity"])
    assert "trials_run" not in json.dumps(record)
    assert json.loads((work / "results/release/opacus-cnn/diagnostics.json").read_text())["trials_run"] >= 1
    assert (work / "figures/release-opacus-cnn.pdf").read_bytes().startswith(b"%PDF")
    # the tuning study saw only the tuning rows
    chain = (work / "results/dpareto/opacus-cnn-tuning/dpareto/0/evaluations.parquet")
    assert chain.exists()

    # the command releases at another total from the same front, and refuses a total too small
    again = _release_cli(work, config, "--epsilon", "6", "--out", "cli")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "released opacus-cnn" in again.stdout and "not covered" in again.stdout
    assert json.loads((work / "cli/release.json").read_text())["guarantee"]["epsilon"] <= 6.0
    small = _release_cli(work, config, "--epsilon", "0.01")
    assert small.returncode == 2 and "too small for even one trial" in small.stderr
    assert len(small.stderr.strip().splitlines()) == 1


def test_a_user_oracle_without_train_stops_the_release_with_one_sentence(tmp_path):
    oracle = tmp_path / "no_train.py"
    oracle.write_text("def epsilon(point, *, n, delta):\n    return 1.0\n\n"
                      "def utility(point, data, rng):\n    return 0.5\n\n"
                      "def event(point, *, n):\n    return None\n")
    config = tmp_path / "mine.yaml"
    entry = {"oracle": str(oracle), "dataset": "adult", "domain": {"noise": {"low": 0.5, "high": 2.0}}}
    config.write_text(yaml.safe_dump({"problems": {"mine": entry}, "release": {**CONFIG["release"], "problem": "mine"}}))
    run = _release_cli(REPO, config)
    assert run.returncode == 2
    assert run.stderr.strip() == ("error: The oracle of mine has no train() method, which a release needs: add "
                                  "train(point, data, rng) returning the trained model (docs/release.md).")
