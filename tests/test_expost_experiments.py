"""Paper 004's experiment protocols: what each method pays, that no run overspends its budget,
the Table 3 building blocks, and the tables' shape."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dptradeoff.expost import baselines, experiments, ml, threads
from dptradeoff.privacy import dpsgd


def test_acceptance_check_is_the_papers():
    sigma = 2.0
    assert threads.accepted(21 * sigma, sigma)          # (22/20) = 1.1: on the boundary
    assert not threads.accepted(20 * sigma, sigma)      # 21/19 > 1.1
    assert not threads.accepted(0.5 * sigma, sigma)     # |y| < sigma


def test_doubling_pays_the_sum_of_the_budgets_it_used():
    grid = baselines.geometric_grid(0.001, math.sqrt(2), 10.0)
    assert grid[0] == 0.001 and grid[-1] <= 10 and grid[-1] * math.sqrt(2) > 10
    rng = np.random.default_rng(0)
    release = baselines.doubling_laplace(1000.0, grid, 10.0, lambda y, s: s < 0.5, rng)
    last = int(np.argmax(math.sqrt(2) / grid < 0.5))
    assert release.last == last and release.cost == pytest.approx(grid[: last + 1].sum())
    starved = baselines.doubling_laplace(1000.0, grid, 0.01, lambda y, s: False, rng)
    assert starved.estimate is None and starved.cost <= 0.01


def test_noise_reduction_pays_only_the_accepted_budget():
    grid = np.array([0.01, 0.02, 0.04, 0.08])
    release = baselines.noise_reduction_laplace(100.0, grid, lambda y, s: s < 40, np.random.default_rng(0))
    assert release.last == 2 and release.cost == 0.04


@pytest.mark.parametrize("method", threads.PURE_METHODS)
def test_pure_runs_never_overspend(method):
    rng = np.random.default_rng(1)
    counts = np.array([600, 350, 200, 120, 80, 40, 10, 3, 1])
    for trial in range(5):
        out = threads.run_pure(counts, method, 3.0, 0.001, math.sqrt(2), 0.001, 1.0, rng)
        assert out.spent <= 3.0 * (1 + 1e-12)
        assert 0 <= out.correct <= out.answers <= len(counts)


@pytest.mark.parametrize("method", threads.APPROX_METHODS)
def test_approximate_runs_never_overspend(method):
    rng = np.random.default_rng(2)
    counts = np.array([6000, 3500, 2000, 1200, 800, 400, 100, 30, 10])
    for trial in range(3):
        out = threads.run_approx(counts, method, 5.0, 1e-6, 0.001, math.sqrt(2), 0.01, 0.3, 32.0, 2, rng)
        budget = {"doubling": float(baselines.zcdp_rho(5.0, 1e-6)), "brownian": 5.0,
                  "alg3": 5.0 - math.log(1e6) / 31}[method]
        assert out.spent <= budget * (1 + 1e-12)
        assert 0 <= out.correct <= out.answers <= len(counts)


def test_more_users_mean_more_answers():
    rng = np.random.default_rng(3)
    small = np.array([60, 40, 30, 20, 10])
    large = small * 20
    for method in threads.PURE_METHODS:
        a = np.mean([threads.run_pure(small, method, 10.0, 0.001, math.sqrt(2), 0.001, 1.0, rng).answers for _ in range(5)])
        b = np.mean([threads.run_pure(large, method, 10.0, 0.001, math.sqrt(2), 0.001, 1.0, rng).answers for _ in range(5)])
        assert b >= a


def test_thread_table_carries_the_papers_values():
    frame = pd.DataFrame({"method": ["doubling"] * 2 + ["noise_reduction"] * 2 + ["alg3"] * 2, "trial": [0, 1] * 3,
                          "answers": [10, 12, 2, 4, 20, 22], "correct": [9, 11, 2, 4, 18, 20],
                          "precision": [0.9, 11 / 12, 1, 1, 0.9, 20 / 22], "spent": [10.0] * 6})
    table = experiments.thread_table({"S8000": frame}, "table1")
    row = table.iloc[0]
    assert row["doubling_answers"] == 11 and row["doubling_answers_sd"] == 1
    assert row["paper_alg3_answers"] == 20.37 and row["paper_noise_reduction_precision"] == 0.999


def test_invocation_curves_span_the_figure():
    curves = experiments.invocation_curves(0.1, 0.01, 120.0, points=20)
    for method, g in curves.groupby("method"):
        assert g["mean"].max() <= 121 and g["mean"].max() >= 100
        assert np.all(np.diff(g.sort_values("mean")["std"].to_numpy()) > 0)


def test_noise_calibration_meets_its_target():
    z = ml.calibrate_noise(5000, 250, 3, 0.5, 1e-6)
    eps = dpsgd.epsilon(5000, 250, 3, z, 1e-6)
    assert eps <= 0.5 and eps >= 0.49


def test_brownian_times_hit_the_requested_epsilons():
    grid = np.arange(1, 11) / 10
    times, (a, b) = ml.brownian_times(grid, 1e-6)
    assert math.exp(-2 * a * b) == pytest.approx(1e-6)
    np.testing.assert_allclose(baselines.brownian_epsilon(times, a, b), grid)
    assert np.all(np.diff(times) > 0) and times[0] > 0


def test_above_threshold_stops_at_a_clear_crossing():
    rng = np.random.default_rng(0)
    values = np.array([0.1, 0.2, 0.9, 0.95])
    stops = [ml.above_threshold_stop(values, 0.5, 1e-4, 1.0, rng) for _ in range(50)]
    assert stops == [2] * 50
    assert ml.above_threshold_stop(np.array([0.1, 0.2]), 0.5, 1e-4, 1.0, rng) is None


def test_ml_table_counts_trials_that_stopped():
    frame = pd.DataFrame({"method": ["alg3"] * 3, "trial": [0, 1, 2], "epsilon": [0.3, 0.5, math.inf],
                          "met": [True, True, False], "runs": [3, 4, 50]})
    row = experiments.ml_table({"gisette": frame}).iloc[0]
    assert row["alg3_epsilon"] == pytest.approx(0.4) and row["alg3_stopped"] == "2/3" and row["alg3_met"] == "2/3"
    assert row["paper_alg3_epsilon"] == 0.23
