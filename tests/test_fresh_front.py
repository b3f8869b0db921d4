"""The front a user reads, restated by fresh trainings (bo.fresh_front): a chain's listed front holds lucky points,
the restated one does not; the table and the figure list the fresh trainings, say what an answer rests on, and draw
no degenerate interval; the fresh seeds are no method's; traced points are retrained at their own epochs."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dptradeoff.baselines.random_search import sample
from dptradeoff.bo import fresh_front
from dptradeoff.bo.query import front as listed_front
from dptradeoff.problems import resolve
from dptradeoff.problems.evaluate import evaluate
from dptradeoff.problems.oracle import Data, Oracle
from dptradeoff.problems.problem import Param, Problem
from dptradeoff.problems.tables import read_frame
from dptradeoff.seeds import derive_seed, rng

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "examples"))
from laplace_mean import ClampedLaplaceMean, exact_front  # noqa: E402

DOMAIN = {"scale": {"low": 1e-3, "high": 10.0, "log": True}, "lower": {"low": 0.0, "high": 35.0},
          "upper": {"low": 40.0, "high": 120.0}}


@pytest.fixture(scope="module")
def laplace():
    """The example's clamped Laplace mean over a column of 4,000 ages, and a 'chain' of 600 random points of 3
    trainings each (the mechanism's law drawn with numpy: fast), as a study's evaluations file holds them."""
    values = np.clip(np.round(np.random.default_rng(5).gamma(9.0, 4.3, 4000)), 17, 90).astype(float)
    problem = resolve("laplace-mean", {"oracle": str(REPO / "examples/laplace_mean.py") + ":ClampedLaplaceMean",
                                       "delta": 0.0, "repeats": 3, "domain": DOMAIN})
    data = problem.oracle.prepare(Data(values[:, None], np.zeros(len(values)), values[:, None], np.zeros(len(values)),
                                       "test", "ages"))
    points = sample(problem, 600, rng(0, "test-fresh-front", "points"))
    draw = np.random.default_rng(1)
    rows = []
    for index, (_, point) in enumerate(points.iterrows()):
        point = problem.check(point.to_dict())
        bias = np.clip(values, point["lower"], point["upper"]).mean() - values.mean()
        runs = np.maximum(0.0, 1.0 - np.abs(bias + draw.laplace(0.0, point["scale"], 3)) / 100.0)
        rows.append({**point, "method": "random", "run": 0, "index": index, "seed": index,
                     "epsilon": problem.oracle.epsilon(point, n=len(values), delta=0.0), "utility": runs.mean(),
                     "error": 1.0 - runs.mean(), "utility_min": runs.min(), "utility_max": runs.max(),
                     "utility_runs": list(runs), "repeats": 3, "failure": None, "wall_seconds": 0.05,
                     "source_label": "test ages"})
    evals = pd.DataFrame(rows)
    restated = fresh_front.restate(problem, evals, data, 3, 20201, count=40)
    return values, problem, data, evals, restated


def above_best(values, frame) -> float:
    """The share of a front's points listed above the best expected utility any setting has at their epsilon."""
    best = exact_front(values, frame["epsilon"].to_numpy(float))
    return float(np.mean(frame["utility"].to_numpy(float) > best + 1e-12))


def test_the_listed_front_has_lucky_points_and_the_restated_front_does_not(laplace):
    values, problem, _, evals, restated = laplace
    listed = listed_front(problem, evals)
    assert above_best(values, listed) > 0.15                         # the winner's curse of the search means:
    expected = np.array([ClampedLaplaceMean.expected_utility(r, values) for _, r in listed.iterrows()])
    assert np.mean(listed["utility"] - expected) > 0.004             # listed above what the points deliver
    rows = fresh_front.front_rows(problem, evals, restated.rows)
    assert not restated.capped and len(rows) >= 10
    assert above_best(values, rows) <= 0.1
    truth = np.array([ClampedLaplaceMean.expected_utility(r, values) for _, r in rows.iterrows()])
    assert abs(np.mean(rows["utility"] - truth)) < 0.002             # unbiased over the front
    assert (rows["n_trainings"] == 40).all() and (rows["search_n_trainings"] == 3).all()
    assert np.mean(rows["search_utility"] > rows["utility"]) > 0.5  # what the search saw was mostly luck
    # the rounds ran until every front point rested on fresh trainings, and each point was trained once
    chose = restated.rows[restated.rows["round"] != fresh_front.LISTING]
    listing = restated.rows[restated.rows["round"] == fresh_front.LISTING]
    assert restated.rounds >= 2 and chose["key"].is_unique and listing["key"].is_unique
    assert set(rows.index) and restated.rows["on_front"].sum() == len(rows) == len(listing)
    # listed by the listing's trainings, which chose nothing: not those that chose the front
    assert np.allclose(rows["utility"], listing.set_index("key").loc[
        [fresh_front.point_key(problem, r) for _, r in rows.iterrows()], "utility"])
    assert not np.allclose(rows["utility"], rows["chosen_utility"])


def test_the_front_table_lists_the_fresh_trainings_and_keeps_the_search_mean_beside(laplace):
    """Would fail if the table listed the chain's means (utility = search_utility)."""
    from dptradeoff.plots.front import front_table

    values, problem, _, evals, restated = laplace
    table = front_table(problem, {"random": evals}, [], restated.rows)
    table = table[table["kind"] == "front"]
    assert above_best(values, table) <= 0.1
    expected = np.array([ClampedLaplaceMean.expected_utility(r, values) for _, r in table.iterrows()])
    assert abs(np.mean(table["utility"].astype(float) - expected)) < 0.002   # unbiased: the search means are not
    fresh = restated.rows[restated.rows["round"] == fresh_front.LISTING].set_index("key")
    keys = [fresh_front.point_key(problem, row) for _, row in table.iterrows()]
    assert np.allclose(table["utility"].astype(float), [np.mean(fresh.loc[k, "utility_runs"]) for k in keys])
    assert np.allclose(table["search_utility"].astype(float), fresh.loc[keys, "search_utility"].astype(float))
    assert (table["utility_supported"].astype(float) < table["utility"].astype(float)).all()


def test_a_resumed_job_restates_the_same_front(laplace, tmp_path):
    _, problem, data, evals, restated = laplace
    first = restated.rows[restated.rows["round"] == 0].drop(columns=["on_front"])
    again = fresh_front.restate(problem, evals, data, 3, 20201, done=first, count=40)
    pd.testing.assert_frame_equal(again.rows.drop(columns=["wall_seconds"]),
                                  restated.rows.drop(columns=["wall_seconds"]))


def test_fresh_seeds_are_no_methods_and_their_trainings_are_new():
    values = np.arange(17.0, 91.0).repeat(20)
    problem = resolve("laplace-mean", {"oracle": str(REPO / "examples/laplace_mean.py") + ":ClampedLaplaceMean",
                                       "delta": 0.0, "repeats": 3, "domain": DOMAIN})
    data = problem.oracle.prepare(Data(values[:, None], np.zeros(len(values)), values[:, None], np.zeros(len(values)),
                                       "test", "ages"))
    points = sample(problem, 40, rng(0, "test-fresh-front", "seeds"))
    evals = pd.concat([evaluate(problem, points.iloc[:20], data, 3, 7, "random", 0),
                       evaluate(problem, points.iloc[20:], data, 3, 7, "dpareto", 0, first_index=20)],
                      ignore_index=True)
    restated = fresh_front.restate(problem, evals, data, 3, 7)
    rows = restated.rows
    used = {derive_seed(7, problem.name, method, 0, i) for method in ("random", "dpareto", "uniform", "optuna-tpe",
                                                                    "optuna-gp", "botorch", "comparison")
            for i in range(200)} | set(evals["seed"])
    assert len(rows) and not set(rows["seed"]) & used
    assert (rows["seed"] == [fresh_front.fresh_seed(7, problem.name, 0, r, k)
                             for r, k in zip(rows["round"], rows["key"])]).all()
    chain = fresh_front.pooled_rows(problem, evals).set_index("key")
    for _, row in rows.iterrows():
        assert not np.array_equal(np.asarray(row["utility_runs"][:3]), np.asarray(chain.loc[row["key"], "utility_runs"]))
    # cheap trainings: as many as FRESH_POINT_SECONDS buy at the chain's cost, within [max(R, 3), FRESH_MOST]
    assert fresh_front.FRESH_LEAST < restated.count <= fresh_front.FRESH_MOST
    assert fresh_front.fresh_count(1, 5.0) == 3 and fresh_front.fresh_count(5, 5.0) == 5


class Traced(Oracle):
    """A traced oracle that records its calls: utility 1 - 1/(1 + epochs * a), noise 0.01; fails where a > 0.9."""
    trace_axis = "epochs"

    def __init__(self):
        self.calls = []

    def epsilon(self, point, *, n, delta):
        return point["epochs"] * (1.0 - point["a"]) + 0.01 * point["a"]

    def utilities_trace(self, point, data, repeats, rng, checkpoints):
        self.calls.append((dict(point), list(checkpoints)))
        if point["a"] > 0.9:
            raise FloatingPointError("training diverged")
        noise = rng.normal(0.0, 0.01, repeats)
        return {e: np.clip(1.0 - 1.0 / (1.0 + e * point["a"]) + noise, 0, 1) for e in checkpoints}

    def utilities(self, point, data, repeats, rng):
        raise AssertionError("a traced point is retrained by its trace")


def test_traced_front_points_are_retrained_at_their_own_epochs_one_training_a_trace_and_failures_drop_out():
    oracle = Traced()
    problem = Problem("traced", None, oracle, domain=(Param("a", 0.0, 1.0), Param("epochs", 1, 8, integer=True)),
                      delta=0.0)
    rows = []
    for index, a in enumerate([0.3, 0.95]):      # two trainings, each traced over 8 epochs
        for e in range(1, 9):
            u = 1.0 - 1.0 / (1.0 + e * a) + 0.05 * (a > 0.9)
            rows.append({"a": a, "epochs": e, "epsilon": e * (1 - a) + 0.01 * a, "utility": u, "error": 1 - u,
                         "utility_runs": [u], "failure": None, "method": "random", "index": index})
    evals = pd.DataFrame(rows)
    restated = fresh_front.restate(problem, evals, None, 1, 3)
    # one traced training a group of a round's front points, to the largest of their epochs, at each of them
    order = restated.rows.assign(_order=restated.rows["round"].replace(fresh_front.LISTING, 10**6))
    groups = order.groupby(["_order", "a"])   # in the order trained: the rounds, then the listing
    assert len(oracle.calls) == groups.ngroups >= 2
    for (point, checkpoints), (_, group) in zip(oracle.calls, groups):
        assert np.isclose(point["a"], group["a"].iloc[0]) and point["epochs"] == checkpoints[-1]
        assert checkpoints == sorted(group["epochs"].astype(int))
    failed = restated.rows[restated.rows["failure"].notna()]
    assert len(failed) and (failed["a"] > 0.9).all() and failed["failure"].str.contains("training diverged").all()
    on_front = fresh_front.front_rows(problem, evals, restated.rows)
    assert (on_front["a"] < 0.9).all() and len(on_front)
    assert (on_front["n_trainings"] == fresh_front.FRESH_LEAST).all()     # R = 1: three fresh trainings


def test_the_front_figure_says_what_an_answer_rests_on_draws_no_degenerate_interval_and_keeps_its_legend_narrow(
        laplace, tmp_path):
    from dptradeoff.plots import common, front

    values, problem, _, evals, restated = laplace
    answer = pd.DataFrame([{"question": "epsilon <= 0.01", "scale": 1.0, "lower": 20.0, "upper": 60.0,
                            "epsilon": 0.01, "predicted_utility": 0.9999, "predicted_sd": np.nan,
                            "interval_low": 0.9999, "interval_high": 0.9999, "interval_level": 0.9,
                            "probability_source": "7903 fresh trainings after it was chosen", "fresh_trainings": 7903,
                            "trainings": [0.9999] * 30, "utility": 0.9999, "error": 1e-4, "utility_min": 0.9999,
                            "utility_max": 0.9999, "repeats": 3, "target": 0.01}])
    fig = front.front_figure(problem.name, problem.utility, {"random": evals.assign(source_label="test")}, [answer],
                             str(tmp_path / "front.pdf"), "test config", None, None, restated.rows, problem)
    ax = fig.axes[0]
    labels = ax.get_legend_handles_labels()[1]
    assert not any("GP prediction" in label for label in labels)
    assert any("mean of 7903 fresh trainings" in label for label in labels)
    assert any("front restated by fresh trainings" in label for label in labels)
    # no zero-width bar: every errorbar drawn spans something
    for collection in ax.collections:
        if collection.__class__.__name__ == "LineCollection":
            for segment in collection.get_segments():
                assert np.ptp(np.asarray(segment)[:, 1]) > 0 or np.ptp(np.asarray(segment)[:, 0]) > 0
    # the staircase is the restated front
    rows = fresh_front.front_rows(problem, evals, restated.rows)
    staircase = next(line for line in ax.get_lines() if line.get_label().startswith("front restated"))
    assert np.allclose(np.unique(staircase.get_ydata()), np.unique(rows["error"]))
    fig.canvas.draw()
    legend, frame = ax.get_legend().get_window_extent(), ax.get_window_extent()
    assert legend.width <= frame.width + 1 and legend.y1 <= frame.y0        # below the plot, never wider
    del common


def test_dptradeoff_front_prints_the_restated_front_where_the_rule_has_run_and_says_so_otherwise(tmp_path, monkeypatch,
                                                                                               capsys):
    import os

    import yaml

    from dptradeoff import paths
    from dptradeoff.__main__ import main
    from dptradeoff.problems.tables import write_frame

    entry = {"oracle": str(REPO / "tests/user_problems/gaussian_mean.py"), "delta": 1e-6, "utility": "closeness",
             "domain": {"sigma": {"low": 0.001, "high": 1.0, "log": True}, "clip": {"low": 0.1, "high": 1.0}}}
    problem = resolve("gaussian-mean", entry)
    draw = np.random.default_rng(3)
    points = pd.DataFrame({"sigma": np.exp(draw.uniform(np.log(0.001), 0, 14)), "clip": draw.uniform(0.1, 1.0, 14)})
    chain = evaluate(problem, points, None, 2, 1, "dpareto", 0)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config").symlink_to(REPO / "config")
    path = paths.RunFiles("gaussian-mean", "dpareto").evaluations
    os.makedirs(os.path.dirname(path))
    write_frame(chain, path, {})
    config = tmp_path / "mine.yaml"
    config.write_text(yaml.safe_dump({"dpareto": {"problems": ["gaussian-mean"], "initial_points": 4},
                                      "random_sampling": {"points": 10, "points_per_job": 5, "uniform": False},
                                      "problems": {"gaussian-mean": {**entry, "methods": ["dpareto"]}}}))
    main(["front", "--problem", "gaussian-mean", f"--configfile={config}"])
    listed = capsys.readouterr().out
    assert "at its search means" in listed and "not built" in listed
    fresh_front.run_rule(problem, chain, None, 2, 1, paths.fresh_front("gaussian-mean"))
    main(["front", "--problem", "gaussian-mean", f"--configfile={config}"])
    restated = capsys.readouterr().out
    assert "restated by fresh trainings after the front was chosen" in restated and "search_utility" in restated
    rows = fresh_front.front_rows(problem, chain, read_frame(paths.fresh_front("gaussian-mean")))
    assert f"{rows['utility'].iloc[-1]:.4g}" in restated
