"""`dpareto.traces` end to end: a small adult study whose random run, Table 2 sample and chains (DPareto
and a peer) record every epoch of their trainings; Table 2 and the front-quality table compare at equal
training cost, the cost figure is drawn, a user's traced oracle runs, and `dptradeoff front` answers."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import yaml

from conftest import REPO
from dptradeoff.privacy import dpsgd
from dptradeoff.problems.tables import read_frame
from dptradeoff.stats.cost import spent
from dptradeoff.stats.tables import read

pytestmark = pytest.mark.slow

CONFIG = {
    "studies": ["dpareto"],
    "dpareto": {"problems": ["adult-logreg-sgd", "noisy-steps"], "methods": ["dpareto", "optuna-tpe"], "runs": 1,
                "initial_points": 4, "iterations": 3, "batch_size": 1, "candidates": 200, "gp_restarts": 1,
                "traces": True},
    "problems": {
        "adult-logreg-sgd": {"repeats": 1, "grids": [2], "ranges": {"epochs": [1, 3], "lot_size": [256, 512]}},
        "noisy-steps": {"oracle": str(REPO / "tests/user_problems/noisy_mean_steps.py") + ":NoisyMeanSteps",
                        "domain": {"steps": {"low": 1, "high": 6, "integer": True}, "rate": {"low": 0.1, "high": 1.0},
                                   "sigma": {"low": 0.001, "high": 0.1, "log": True}},
                        "repeats": 2, "queries": {"epsilon": [1.0]}},
    },
    "random_sampling": {"points": 8, "points_per_job": 4},
    "statistics": {"comparison_parts": 2, "batch_comparison": {"problem": "adult-logreg-sgd", "batch_size": 2}},
}


def test_a_traced_study_runs_end_to_end_at_equal_training_cost(run_snakemake, tmp_path):
    """Runs Snakemake itself: epochs ranges of several epochs and a user's traced oracle, where the tiny all
    trains one epoch."""
    config = tmp_path / "traced.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    work = tmp_path / "work"
    done = run_snakemake(work, "all", "--cores", "2", f"--configfile={config}", timeout=1500)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]

    n = len(read_frame(str(work / "results/data/adult/train.parquet")))
    for chain in ("dpareto", "optuna-tpe", "random"):
        rows = read_frame(str(work / f"results/dpareto/adult-logreg-sgd/{chain}/0/evaluations.parquet"))
        assert not rows["trace_final"].all(), chain                            # trace rows besides the points
        for _, training in rows.groupby("index"):
            training = training.sort_values("epochs")   # a continued training's stretches (dpareto.resume)
            assert training["epochs"].tolist() == list(range(1, int(training["epochs"].max()) + 1))
            stretches = training["segment_start"].nunique()
            assert training["trace_final"].iloc[-1] and training["trace_final"].sum() == stretches
            assert training["cost_epochs"].sum() == training["epochs"].max()
            assert training["seed"].nunique() == 1
            for _, row in training.iterrows():   # each row's epsilon is the accountant's at its own epochs
                assert row["epsilon"] == dpsgd.epsilon(n, int(row["lot_size"]), int(row["epochs"]), row["noise"],
                                                       row["delta"], "pld")
    user = read_frame(str(work / "results/dpareto/noisy-steps/dpareto/0/evaluations.parquet"))
    # every epoch costs one, except where a stretch replayed the user's (not resumable) training from its seed
    assert not user["trace_final"].all() and (user.loc[~user["replayed"], "cost_epochs"] == 1).all()

    table2 = read(str(work / "tables/table2.csv"))
    assert (table2["part_cost"] <= table2["dpareto_cost"]).all() and (table2["parts"] == 2).all()
    chain = read_frame(str(work / "results/dpareto/adult-logreg-sgd/dpareto/0/evaluations.parquet"))
    continued = int((chain["trace_final"] & (chain["segment_start"] > 0)).sum())   # a continued training counts once
    assert (table2["dpareto_trainings"] == 4 + 3 - continued).all() and (table2["dpareto_points"] > 7).all()
    quality = read(str(work / "tables/front_quality.csv"))
    adult = quality[quality["problem"] == "adult-logreg-sgd"].set_index("method")
    chains = [read_frame(str(work / f"results/dpareto/adult-logreg-sgd/{c}/0/evaluations.parquet")) for c in ("dpareto", "optuna-tpe")]
    budget = min(spent(c) for c in chains)   # every method, chains too, cut at the cheapest chain's cost
    assert (adult["training_cost"] <= budget).all() and adult["training_cost"].max() == budget
    assert (work / "figures/front_cost.pdf").read_bytes().startswith(b"%PDF")
    answer = read_frame(str(work / "results/dpareto/noisy-steps/query/eps1.parquet")).iloc[0]
    assert answer["epsilon"] <= 1.0 and len(answer["utility_runs"]) == 2

    asked = subprocess.run([sys.executable, "-m", "dptradeoff", "front", "--problem", "adult-logreg-sgd",
                            f"--configfile={config}", "--epsilon", "1"], cwd=work, capture_output=True, text=True)
    assert asked.returncode == 0, asked.stderr
    assert "suggested:" in asked.stdout and "epochs=" in asked.stdout
    assert np.isfinite(adult.loc["dpareto", "region"])
