"""Problem registry, random sampling distributions and the evaluation rows."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dptradeoff import UserError
from dptradeoff.baselines.random_search import sample
from dptradeoff.privacy import dpsgd, gaussian, svt
from dptradeoff.problems import PROBLEMS, get_problem
from dptradeoff.problems.evaluate import Data, epsilon, evaluate

REQUIRED = ["adult-logreg-sgd", "adult-logreg-adam", "adult-svm-sgd", "mnist-mlp1-sgd", "mnist-mlp2-sgd",
            "adult-logreg-outpert", "svt"]


def test_registry_has_every_required_problem_with_table_1_domains():
    assert set(REQUIRED) <= set(PROBLEMS)
    adult = PROBLEMS["adult-logreg-sgd"]
    assert [(p.name, p.low, p.high) for p in adult.domain] == [
        ("epochs", 1, 64), ("lot_size", 8, 512), ("learning_rate", 5e-4, 5e-2), ("noise", 0.1, 16), ("clip", 0.1, 4)]
    mnist = PROBLEMS["mnist-mlp2-sgd"]
    assert [(p.low, p.high) for p in mnist.domain] == [(1, 400), (16, 4000), (1e-3, 5e-1), (0.1, 16), (0.1, 12)]


def test_point_outside_the_domain_or_non_integer_epochs_is_a_clear_error():
    p = PROBLEMS["adult-logreg-sgd"]
    good = {"epochs": 3, "lot_size": 64, "learning_rate": 0.01, "noise": 1.0, "clip": 1.0}
    assert p.check(good)["epochs"] == 3
    with pytest.raises(UserError, match="epochs must be an integer, got 2.5"):
        p.check({**good, "epochs": 2.5})
    with pytest.raises(UserError, match=r"noise = 20.0 is outside its range \[0.1, 16\]"):
        p.check({**good, "noise": 20.0})
    with pytest.raises(UserError, match="lacks"):
        p.check({"epochs": 3})
    with pytest.raises(UserError, match="Unknown problem"):
        get_problem("adult-rnn")


@pytest.mark.parametrize("name", ["adult-logreg-sgd", "mnist-mlp1-sgd"])
def test_random_samples_follow_tables_3_and_4(name):
    problem = PROBLEMS[name]
    points = sample(problem, 4000, np.random.default_rng(0))
    for pname, s in problem.samplers.items():
        col = points[pname]
        assert col.min() >= s.low and col.max() <= s.high
    assert (points["epochs"] == points["epochs"].round()).all() and (points["lot_size"] == points["lot_size"].round()).all()
    assert points["epochs"].mean() == pytest.approx((problem.samplers["epochs"].a + problem.samplers["epochs"].b) / 2, rel=0.05)
    # learning rate: 1e-3 + Exp(rate 10) truncated to its accept range -> mean below 1e-3 + 0.1
    lr = points["learning_rate"]
    s = problem.samplers["learning_rate"]
    lam, lo, hi = s.rate, s.low - s.shift, s.high - s.shift
    trunc_mean = s.shift + 1 / lam - (hi * math.exp(-lam * hi) - lo * math.exp(-lam * lo)) / (math.exp(-lam * lo) - math.exp(-lam * hi))
    assert lr.mean() == pytest.approx(trunc_mean, rel=0.05)
    for pname in problem.names:  # every sample is a valid point
        problem.check(points.iloc[0].to_dict())


def test_restricted_ranges_narrow_domain_and_sampling():
    p = get_problem("mnist-mlp2-sgd", {"epochs": [1, 4]})
    assert p.bounds("epochs") == (1, 4)
    assert sample(p, 200, np.random.default_rng(1))["epochs"].max() <= 4
    with pytest.raises(UserError, match="no parameter"):
        get_problem("svt", {"epochs": [1, 2]})


def test_privacy_oracles_of_the_problems():
    p = PROBLEMS["adult-logreg-adam"]
    pt = {"epochs": 5, "lot_size": 100, "learning_rate": 0.01, "noise": 2.0, "clip": 1.0}
    assert epsilon(p, pt, 30000) == dpsgd.epsilon(30000, 100, 5, 2.0, 1e-5, "pld")   # the tight accountant by default
    classic = epsilon(p.with_conversion("classic"), pt, 30000)   # privacy.conversion: the DPareto paper's conversion, larger
    assert classic == dpsgd.epsilon(30000, 100, 5, 2.0, 1e-5, "classic") > 1.05 * epsilon(p, pt, 30000)
    out = PROBLEMS["adult-logreg-outpert"]
    assert epsilon(out, {"gamma": 0.01, "sigma": 1.0}, 1000) == gaussian.epsilon(1.0, 4 / (0.01 * 1000), 1e-6)
    assert epsilon(PROBLEMS["svt"], {"bound": 5, "b": 2.0}, None) == svt.epsilon(5, 2.0)


def _tiny_data():
    rng = np.random.default_rng(0)
    x = (rng.random((300, 8)) < 0.5).astype(np.float32)
    y = np.where(x[:, 0] > 0, 1.0, -1.0)
    return Data(x, y, x, y, "embedded", "tiny: test data")


def test_evaluation_rows_have_every_field_and_are_deterministic():
    p = PROBLEMS["adult-logreg-sgd"]
    points = pd.DataFrame([{"epochs": 2, "lot_size": 30, "learning_rate": 0.05, "noise": 1.0, "clip": 1.0},
                           {"epochs": 1, "lot_size": 60, "learning_rate": 0.01, "noise": 4.0, "clip": 0.5}])
    rows = evaluate(p, points, _tiny_data(), repeats=3, config_seed=7, method="random", run=0, first_index=10)
    again = evaluate(p, points, _tiny_data(), repeats=3, config_seed=7, method="random", run=0, first_index=10)
    for col in ["problem", "method", "run", "index", "epochs", "lot_size", "learning_rate", "noise", "clip", "epsilon",
                "delta", "utility", "error", "utility_min", "utility_max", "utility_runs", "seed", "wall_seconds",
                "data_source", "source_label", "package_version", "conversion"]:
        assert col in rows.columns
    assert rows["index"].tolist() == [10, 11]
    assert all(len(r) == 3 for r in rows["utility_runs"])
    assert np.allclose(rows["utility"], [np.mean(r) for r in rows["utility_runs"]])
    assert (rows["utility_min"] <= rows["utility"]).all() and (rows["utility"] <= rows["utility_max"]).all()
    assert rows.drop(columns="wall_seconds").equals(again.drop(columns="wall_seconds"))
    assert rows["epsilon"].tolist() == [dpsgd.epsilon(300, 30, 2, 1.0, 1e-5, "pld"), dpsgd.epsilon(300, 60, 1, 4.0, 1e-5, "pld")]
    classic = evaluate(p.with_conversion("classic"), points, _tiny_data(), repeats=3, config_seed=7, method="random",
                       run=0, first_index=10)
    assert (rows["conversion"] == "pld").all() and (classic["conversion"] == "classic").all()
    assert classic["epsilon"].tolist() == [dpsgd.epsilon(300, 30, 2, 1.0, 1e-5, "classic"),
                                           dpsgd.epsilon(300, 60, 1, 4.0, 1e-5, "classic")]
    other = evaluate(p, points, _tiny_data(), repeats=3, config_seed=8, method="random", run=0, first_index=10)
    assert not np.allclose(other["utility_runs"].tolist(), rows["utility_runs"].tolist())


def test_linear_grids_are_the_originals_linspace_and_search_scale_grids_are_log_spaced():
    from dptradeoff.baselines.grid import axis, grid

    p = PROBLEMS["adult-logreg-sgd"]
    assert np.allclose(axis(p, "noise", 3, "linear"), [0.1, 8.05, 16.0])          # the example
    assert np.allclose(axis(p, "noise", 3), [0.1, np.sqrt(0.1 * 16), 16.0])        # geometric mean in the middle
    assert axis(p, "epochs", 3, "linear").tolist() == [1, 32, 64]                  # np.round(32.5) = 32
    for spacing in ("linear", "search-scale"):
        frame = grid(p, 3, spacing)
        assert len(frame) == 243 and len(grid(p, 4, spacing)) == 1024
        assert frame["learning_rate"].min() == 1e-3 and frame["learning_rate"].max() == 0.1   # Table 4's accept range
    with pytest.raises(ValueError, match="spacing"):
        grid(p, 3, "log")


def _fine_grid_as_illustration_points_built_it(problem, k):
    """The grid workflow/scripts/illustration_points.py built itself before it called baselines.grid."""
    axes = []
    for param in problem.domain:
        if param.integer:
            axes.append(np.arange(param.low, param.high + 1))
        elif param.log:
            axes.append(np.geomspace(param.low, param.high, k))
        else:
            axes.append(np.linspace(param.low, param.high, k))
    mesh = np.meshgrid(*axes, indexing="ij")
    points = pd.DataFrame({n: m.ravel() for n, m in zip(problem.names, mesh)})
    for param in problem.domain:
        if param.integer:
            points[param.name] = points[param.name].astype(int)
    return points


@pytest.mark.parametrize("name", ["adult-logreg-outpert", "svt"])
@pytest.mark.parametrize("k", [15, 4])   # 15: the default config's illustrations.grid
def test_the_illustrations_fine_grid_is_the_grid_with_every_integer(name, k):
    from dptradeoff.baselines.grid import grid

    problem = get_problem(name)
    pd.testing.assert_frame_equal(grid(problem, k, every_integer=True),
                                  _fine_grid_as_illustration_points_built_it(problem, k), check_exact=True)


def test_uniform_sampling_is_uniform_over_the_accept_ranges():
    from scipy import stats

    from dptradeoff.baselines.random_search import sample_uniform

    p = PROBLEMS["adult-logreg-sgd"]
    points = sample_uniform(p, 4000, np.random.default_rng(3))
    assert list(points.columns) == p.names
    for name, (low, high) in {"epochs": (1, 64), "lot_size": (8, 512), "learning_rate": (1e-3, 1e-1),
                              "noise": (0.1, 16), "clip": (0.1, 4)}.items():
        values = points[name].to_numpy(float)
        assert low <= values.min() and values.max() <= high, name
        # linear-uniform (not log-uniform, not Tables 3-4's shifted exponentials)
        if name in ("epochs", "lot_size"):
            assert (values == np.round(values)).all()
            counts = np.bincount(values.astype(int) - low, minlength=high - low + 1)
            assert stats.chisquare(counts).pvalue > 1e-3, name
        else:
            assert stats.kstest((values - low) / (high - low), "uniform").pvalue > 1e-3, name
    tuned = sample(p, 4000, np.random.default_rng(3))
    assert tuned["lot_size"].median() < 200 < points["lot_size"].median()   # Table 4: lot sizes ~ N(128, 64)


def test_output_perturbation_points_of_one_batch_keep_their_own_seeds():
    """They are trained together from one Generator (`batch_seed`), but each row's `seed` is its own:
    a figure that drops duplicates by seed would otherwise lose all but one point of the batch."""
    p = PROBLEMS["adult-logreg-outpert"]
    points = pd.DataFrame({"gamma": [1e-3, 1e-2, 1e-1], "sigma": [1.0, 2.0, 3.0]})
    rows = evaluate(p, points, _tiny_data(), repeats=2, config_seed=7, method="random", run=0, first_index=5)
    assert rows["seed"].nunique() == 3 and rows["batch_seed"].nunique() == 1
    single = evaluate(p, points.iloc[[1]], _tiny_data(), repeats=2, config_seed=7, method="random", run=0, first_index=6)
    assert single["seed"].iloc[0] == rows["seed"].iloc[1]   # a point's seed does not depend on its batch
    dpsgd_rows = evaluate(PROBLEMS["adult-logreg-sgd"], pd.DataFrame([{"epochs": 1, "lot_size": 30, "learning_rate": 0.05,
                                                                         "noise": 1.0, "clip": 1.0}]),
                          _tiny_data(), repeats=1, config_seed=7, method="random", run=0)
    assert dpsgd_rows["batch_seed"].isna().all()
