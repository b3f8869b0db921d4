"""What jobs ask a scheduler for (dptradeoff.resources) and which rules stay local."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from conftest import REPO
from dptradeoff import io, resources
from dptradeoff.problems import PROBLEMS, resolve

POINT = {"epochs": 10, "lot_size": 256, "learning_rate": 0.01, "noise": 1.0, "clip": 1.0}


def _minutes(problem, points, repeats=10, n=30_000, attempt=1):
    return resources.evaluation_runtime(PROBLEMS[problem], pd.DataFrame(points), repeats, n, attempt)


def test_runtime_follows_the_training_cost_of_the_job_s_own_points():
    base = _minutes("mnist-mlp1-sgd", [POINT])
    assert _minutes("mnist-mlp1-sgd", [{**POINT, "epochs": 100}]) > 5 * base       # epochs
    assert _minutes("mnist-mlp1-sgd", [{**POINT, "lot_size": 16}]) > 5 * base      # steps of a small lot
    assert _minutes("mnist-mlp1-sgd", [POINT] * 4) > 3 * base                     # points per job
    assert _minutes("mnist-mlp1-sgd", [POINT], repeats=50) > 3 * base             # R
    assert _minutes("mnist-mlp1-sgd", [POINT], attempt=2) == pytest.approx(2 * base, abs=1)  # a retry gets more
    assert _minutes("adult-logreg-sgd", [POINT]) < base                           # Adult's linear models are cheap


def test_runtime_of_the_paper_s_costliest_mnist_point_on_one_core():
    """MNIST at paper scale: 60,000 rows, 400 epochs, lots of 16, R = 10: 497 us per example measured
    at lot 16 on one core here, so 10 x 400 x 60,000 x ~0.5 ms = about 33 hours, x 2 (SAFETY)."""
    problem = PROBLEMS["mnist-mlp1-sgd"]
    worst = resources.costliest_point(problem)
    assert worst["epochs"] == 400 and worst["lot_size"] == 16
    hours = resources.evaluation_runtime(problem, pd.DataFrame([worst]), 10, 60_000) / 60
    assert 50 < hours < 90


def test_a_questions_runtime_covers_its_least_trainings_and_its_retrainings():
    """One rule for every question: a dear training's question gets question_trainings trainings' worth, not the
    10 s asked, and a scheduler must give it that long."""
    problem = PROBLEMS["mnist-mlp1-sgd"].restricted({"epochs": [1, 4]})
    cost = problem.oracle.cost_seconds(problem.check(resources.costliest_point(problem)), 30_000)
    minutes = resources.question_runtime(problem, 10.0, 200, 1, 30_000)
    assert minutes * 60 >= 200 * cost > 10.0
    assert resources.question_runtime(problem, 10.0, 400, 1, 30_000) > 1.5 * minutes
    assert resources.question_runtime(problem, 10.0 * minutes * 60, 200, 1, 30_000) > 5 * minutes   # the seconds asked


def test_an_oracle_without_a_cost_model_gets_the_default_runtime():
    svt = PROBLEMS["svt"]
    assert svt.oracle.cost_seconds({"bound": 3, "b": 1.0}, None) is None
    minutes = resources.evaluation_runtime(svt, pd.DataFrame([{"bound": 3, "b": 1.0}]), 50, None, attempt=3)
    assert minutes == 3 * resources.UNKNOWN_EVALUATION_MINUTES


def test_memory_counts_the_data_it_loads(tmp_path):
    small, large = tmp_path / "small.parquet", tmp_path / "large.parquet"
    io.write_table(io.matrix_table(np.zeros((100, 10)), np.zeros(100)), small, {})
    io.write_table(io.matrix_table(np.zeros((60_000, 784)), np.zeros(60_000)), large, {})   # MNIST's shape
    assert resources.BASE_MEM_MB <= resources.evaluation_mem_mb([str(small)]) <= resources.BASE_MEM_MB + 100
    assert resources.evaluation_mem_mb([str(large)]) >= resources.BASE_MEM_MB + 8 * 179   # 4 copies x SAFETY
    assert 2 * resources.BASE_MEM_MB <= resources.evaluation_mem_mb([str(small)], attempt=2) <= 2 * resources.BASE_MEM_MB + 100
    assert resources.training_rows([str(large)]) == 60_000 and resources.training_rows([]) is None


def test_only_torch_oracles_ask_for_a_gpu():
    assert PROBLEMS["mnist-mlp1-sgd"].oracle.uses_gpu and PROBLEMS["mnist-mlp2-sgd"].oracle.uses_gpu
    assert not PROBLEMS["adult-logreg-sgd"].oracle.uses_gpu and not PROBLEMS["svt"].oracle.uses_gpu


def test_narrowed_ranges_narrow_the_costliest_point():
    problem = resolve("mnist-mlp2-sgd", {"ranges": {"epochs": [1, 4]}})
    assert resources.costliest_point(problem)["epochs"] == 4


def _rules():
    """rule name -> its block of text, from every rule file."""
    blocks = {}
    for path in sorted((REPO / "workflow/rules").glob("*.smk")):
        text = path.read_text()
        starts = [(m.start(), m.group(1)) for m in re.finditer(r"^(?:rule|use rule \w+ as) (\w+)", text, re.MULTILINE)]
        for (start, name), end in zip(starts, [s for s, _ in starts[1:]] + [len(text)]):
            blocks[name] = text[start:end]
    return blocks


def test_every_rule_is_local_or_declares_what_it_needs():
    """A cluster job without runtime and memory gets a site's defaults, which a training outruns."""
    rules = _rules()
    assert len(rules) >= 40
    for name, block in rules.items():
        if block.startswith("use rule"):
            continue   # inherits its parent's
        local = "localrule: True" in block
        declared = "resources:" in block and "runtime=" in block and "mem_mb=" in block
        assert local != declared, f"rule {name}: either localrule: True or resources with runtime and mem_mb"
    for name in ("bo_propose", "bo_gather", "gather_evaluations", "table2", "fig5", "download_raw_file"):
        assert "localrule: True" in rules[name], name
    for name in ("evaluate_batch", "bo_evaluate"):
        assert "gpu=evaluation_gpu" in rules[name] and "runtime=evaluation_runtime(" in rules[name], name
    assert "gpu=evaluation_gpu" in rules["query"] and "runtime=question_runtime" in rules["query"]


def test_a_user_oracle_s_cost_model_and_gpu_flag_reach_the_requests():
    from dptradeoff.problems.user import UserOracle

    class Mine:
        uses_gpu = True

        def epsilon(self, point, *, n, delta):
            return 1.0

        def utility(self, point, data, rng):
            return 0.5

        def cost_seconds(self, point, n):
            return 600.0 * point["epochs"]

    oracle = UserOracle("mine.py:Mine", Mine())
    assert oracle.uses_gpu and oracle.cost_seconds({"epochs": 2}, 100) == 1200.0
    plain = UserOracle("plain.py:Plain", type("Plain", (), {"epsilon": Mine.epsilon, "utility": Mine.utility})())
    assert not plain.uses_gpu and plain.cost_seconds({"epochs": 2}, 100) is None
