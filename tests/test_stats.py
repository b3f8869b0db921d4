"""Statistics with known answers."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dptradeoff.stats.hypervolume import curve, hypervolume
from dptradeoff.stats.overhead import batch_rows, equal_count_table
from dptradeoff.stats.front_metrics import MetricSettings
from dptradeoff.stats.ttest import compare, paper_parts_sd, table2


def test_ttest_row_known_answer():
    # differences 0.1 .. 0.5: mean 0.3, sd 0.158114, t = 0.3 / (0.158114 / sqrt 5) = 4.242641,
    # two-sided p (4 df) = 0.013236, 95% CI half-width t_0.975,4 * sem = 2.776445 * 0.070711 = 0.196324
    row = compare(1.0, [0.9, 0.8, 0.7, 0.6, 0.5])
    assert row["mean_difference"] == pytest.approx(0.3)
    assert row["t_statistic"] == pytest.approx(4.242641, rel=1e-6)
    assert row["p_value"] == pytest.approx(0.013236, rel=1e-4)
    assert row["ci_low"] == pytest.approx(0.3 - 0.196324, rel=1e-5)
    assert row["ci_high"] == pytest.approx(0.3 + 0.196324, rel=1e-5)
    assert row["significance"] == "*"


def _evals(points, method="random"):
    eps, err = np.asarray(points, dtype=float).T
    return pd.DataFrame({"index": np.arange(len(eps)), "epsilon": eps, "utility": 1 - err, "error": err, "method": method})


def test_table2_on_synthetic_evaluations_with_known_values_under_every_metric():
    # One point per part. raw: (10 - eps)(1 - err); log-epsilon: ln(10 / eps)(1 - err); floor 0.5.
    dpareto = _evals([[1.0, 0.2]])                                      # raw 7.2
    random = _evals([[2.0, 0.2], [1.0, 0.5], [5.0, 0.0], [9.0, 0.9]])   # raw 6.4, 4.5, 5.0, 0.1
    metrics = MetricSettings(names=("raw", "log-epsilon", "region")).metrics(0.5)
    table = table2({"adult-logreg-sgd": (dpareto, random)}, 1, 4, {"adult-logreg-sgd": metrics},
                   {"adult-logreg-sgd": 0.5})
    assert table["metric"].tolist() == ["raw", "log-epsilon", "region"]
    raw, log_eps, region = (table.iloc[i] for i in range(3))
    d = 7.2 - np.array([6.4, 4.5, 5.0, 0.1])
    assert raw["dpareto_value"] == pytest.approx(7.2)
    assert raw["mean_difference"] == pytest.approx(d.mean())
    assert raw["t_statistic"] == pytest.approx(d.mean() / (d.std(ddof=1) / 2))
    # the split: the parts' points at or above the floor 0.5 ([1, 0.5] and [9, 0.9]) earn 4.5 and 0.1 of raw
    assert raw["difference_from_points_at_or_above_floor"] == pytest.approx(0 - (4.5 + 0.1) / 4)
    assert raw["difference_from_points_better_than_floor"] == pytest.approx(7.2 - (6.4 + 5.0) / 4)
    logs = np.log(10 / np.array([2.0, 1.0, 5.0, 9.0])) * np.array([0.8, 0.5, 1.0, 0.1])
    assert log_eps["mean_difference"] == pytest.approx(np.log(10) * 0.8 - logs.mean())
    # region: ln eps over [0.01, 10], error below the floor 0.5, normalised by ln(1000) * 0.5
    full = np.log(1000) * 0.5
    parts = np.array([np.log(5) * 0.3, 0.0, np.log(2) * 0.5, 0.0]) / full
    assert region["mean_difference"] == pytest.approx(np.log(10) * 0.3 / full - parts.mean())
    assert region["difference_from_points_at_or_above_floor"] == pytest.approx(0.0)
    # the paper's Table 2 beside every metric's, with the spread across its 19 parts its CI implies
    assert (raw["paper_mean_difference"], raw["paper_ci_low"], raw["paper_ci_high"]) == (0.158, 0.053, 0.264)
    assert log_eps["paper_parts_sd"] == pytest.approx(paper_parts_sd(0.053, 0.264)) == pytest.approx(0.2189, abs=1e-4)
    assert raw["parts_sd"] == pytest.approx(np.std([6.4, 4.5, 5.0, 0.1], ddof=1))
    other = table2({"mnist-mlp2-sgd": (dpareto, random)}, 1, 4, {"mnist-mlp2-sgd": metrics}, {"mnist-mlp2-sgd": 0.5})
    assert np.isnan(other["paper_mean_difference"].iloc[0])
    with pytest.raises(ValueError, match="cannot make"):
        table2({"x": (dpareto, random)}, 2, 4, {"x": metrics}, {"x": 0.5})


def test_hypervolume_curve_is_monotone_and_ends_at_the_total():
    rng = np.random.default_rng(0)
    evals = _evals(np.column_stack([rng.uniform(0.01, 12, 40), rng.uniform(0, 1, 40)]))
    c = curve(evals)
    assert np.all(np.diff(c) >= 0) and c[-1] == pytest.approx(hypervolume(evals))


def test_batch_wall_clock_is_proposal_plus_slowest_evaluation_per_round():
    initial = _evals([[5.0, 0.5]]).assign(round=-1)
    evals = _evals([[1.0, 0.4], [2.0, 0.3], [0.5, 0.6], [3.0, 0.1]], "dpareto").assign(
        index=[1, 2, 3, 4], round=[0, 0, 1, 1], job_seconds=[3.0, 5.0, 4.0, 2.0])
    proposals = pd.DataFrame({"round": [0, 1], "job_seconds": [10.0, 11.0]})
    rows = batch_rows(2, initial, proposals, evals)
    assert rows["wall_seconds"].tolist() == [15.0, 30.0]
    assert rows["evaluations"].tolist() == [3, 5]
    both = pd.concat([rows, rows.assign(batch_size=1)])
    assert sorted(equal_count_table(both)["evaluations"].unique()) == [3, 5]


def test_overhead_totals_are_the_papers_quantity():
    """Total BO seconds over the chain (fits + acquisitions of every round), its share of the chain's
    and of the whole study's training time, beside per-iteration means."""
    from dptradeoff.stats.overhead import PAPER_BO_SECONDS, overhead_row

    proposals = pd.DataFrame({"round": [0, 1, 2], "fit_seconds": [2.0, 0.5, 0.5], "acquisition_seconds": [0.25, 0.25, 0.5],
                              "job_seconds": [5.0, 1.0, 1.5]})
    chain = pd.DataFrame({"method": ["random"] * 4 + ["dpareto"] * 3, "wall_seconds": [1.0] * 4 + [2.0, 3.0, 4.0],
                          "job_seconds": [np.nan] * 4 + [3.0, 4.0, 5.0]})
    study = pd.concat([chain, pd.DataFrame({"method": ["comparison"] * 10, "wall_seconds": [5.0] * 10})])
    row = overhead_row("p", proposals, chain, study)
    assert row["initial_points"] == 4 and row["iterations"] == 3
    assert row["bo_seconds_total"] == 4.0 and row["proposal_job_seconds_total"] == 7.5
    assert row["chain_training_seconds"] == 13.0 and row["study_training_seconds"] == 63.0
    assert row["bo_share_of_chain"] == pytest.approx(4 / 17) and row["bo_share_of_study"] == pytest.approx(4 / 67)
    assert row["fit_seconds"] == pytest.approx(1.0) and row["training_seconds"] == 3.0 and row["evaluation_job_seconds"] == 4.0
    assert row["paper_bo_seconds_total"] == PAPER_BO_SECONDS == 45.0


def test_the_minimum_epsilon_corner_is_dp_sgds_fewest_epochs_smallest_lot_most_noise():
    from dptradeoff.privacy import dpsgd
    from dptradeoff.problems import PROBLEMS
    from dptradeoff.stats.front_quality import minimum_epsilon

    problem = PROBLEMS["adult-logreg-sgd"].restricted({"epochs": [1, 16]})
    expected = dpsgd.epsilon(1000, 8, 1, 16.0, 1e-5, "pld")   # epochs 1, lot 8, noise 16 (the tight accountant)
    assert minimum_epsilon(problem, 1000) == pytest.approx(expected, rel=1e-12)
    svt = PROBLEMS["svt"]   # eps = (1 + (2C)^(1/3))(1 + (2C)^(2/3)) / b: C = 1, b = 100
    assert minimum_epsilon(svt, None) == pytest.approx((1 + 2 ** (1 / 3)) * (1 + 2 ** (2 / 3)) / 100)


def test_where_proposals_go_counts_the_corner_and_the_floor():
    from dptradeoff.stats.front_quality import where_proposals_go

    points = pd.DataFrame({"epsilon": [0.02, 0.0201, 0.03, 1.0], "error": [0.24, 0.235, 0.2, 0.15]})
    out = where_proposals_go(points, corner_epsilon=0.02, floor=0.24)
    assert out == {"at_min_epsilon_corner": 0.5, "at_utility_floor": 0.5}   # 0.0201 is within 1 %; 0.235 within 0.01


def test_the_error_floor_is_the_majority_class_error_unless_the_config_states_one():
    from dptradeoff.problems import PROBLEMS
    from dptradeoff.problems.oracle import Data

    y_train = np.array([0, 0, 0, 1]) * 1.0
    data = Data(np.zeros((4, 1)), y_train, np.zeros((5, 1)), np.array([0, 1, 1, 0, 0.0]), "embedded", "x")
    problem = PROBLEMS["adult-logreg-sgd"]
    assert problem.error_floor(problem.oracle.prepare(data)) == pytest.approx(0.4)   # predicts 0: 3 of 5 right
    assert problem.error_floor(data, utility_floor=0.9) == pytest.approx(0.1)
    assert PROBLEMS["svt"].error_floor(None) == 1.0   # F1 of answering nothing: 0
