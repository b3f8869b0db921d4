"""Answers a practitioner can bet on (issue SURE): each declared question searched where its answer must be
(`bo.question_search`), a trained point's probability and interval from its own trainings (`FrontQuery.own_law`),
an epsilon answer far below its budget only when measured at least as well as what was tried near it, and a front
whose points say what their trainings support (`bo.support`)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dptradeoff.bo import support
from dptradeoff.bo.propose import Settings
from dptradeoff.bo.query import GP_SOURCE, NEAR_BUDGET, FrontQuery
from dptradeoff.bo.question_search import search_question
from dptradeoff.bo.replication import REACH_LEVEL
from dptradeoff.bo.transforms import error_to_gp
from test_least_epsilon_answers import FAST, chain, laplace  # noqa: F401  (the fixtures)

SEARCH = Settings(**{**FAST.__dict__, "question_trainings": 8})


def points_of(frame: pd.DataFrame, names) -> set:
    return {tuple(np.round(p, 9)) for p in frame[names].to_numpy(float)}


# -- the search of each question ------------------------------------------------------------------------
def test_an_epsilon_questions_search_trains_only_near_its_budget_and_within_it(chain, laplace):  # noqa: F811
    problem, data = laplace
    target = 0.001
    searched, spent = search_question(problem, chain, data, "eps", target, SEARCH, 0, 0, 8, 3)
    new = searched.iloc[len(chain):]
    assert 0 < spent.trainings <= 8 and len(new) == spent.points
    assert spent.trainings == sum(len(r) for r in new["utility_runs"])
    assert ((new["epsilon"] >= target / NEAR_BUDGET) & (new["epsilon"] <= target)).all(), new["epsilon"].tolist()
    assert (new["method"] == "query-eps0.001-search").all()
    pd.testing.assert_frame_equal(searched.iloc[:len(chain)], chain)      # the chain's rows untouched


def test_a_utility_questions_search_bisects_below_the_answer_and_keeps_to_its_budget(chain, laplace):  # noqa: F811
    problem, data = laplace
    target = 0.99
    before = FrontQuery(problem, chain, data, SEARCH, np.random.default_rng(0)).for_utility(target)
    assert before.point is not None and before.reach_probability >= REACH_LEVEL
    searched, spent = search_question(problem, chain, data, "utility", target, SEARCH, 0, 0, 8, 3)
    assert 0 < spent.trainings <= 8
    added = searched.iloc[len(chain):]
    assert (added["epsilon"] < before.epsilon).all()       # every level tried is below the answer it started from
    after = FrontQuery(problem, searched, data, SEARCH, np.random.default_rng(0)).for_utility(target)
    assert after.epsilon <= before.epsilon
    if spent.note:
        assert "budget of 8 trainings ran out" in spent.note or "no " in spent.note


def test_no_budget_no_search(chain, laplace):  # noqa: F811
    problem, data = laplace
    searched, spent = search_question(problem, chain, data, "eps", 0.001, SEARCH, 0, 0, 0, 3)
    assert spent.trainings == 0 and searched is chain


# -- a point's own trainings ----------------------------------------------------------------------------
def with_runs(chain: pd.DataFrame, i: int, runs) -> pd.DataFrame:
    out = chain.copy()
    out["utility_runs"] = out["utility_runs"].astype(object)
    runs = np.asarray(runs, dtype=float)
    out.at[out.index[i], "utility_runs"] = runs.tolist()
    out.loc[out.index[i], ["utility", "utility_min", "utility_max", "error"]] = (runs.mean(), runs.min(), runs.max(),
                                                                                 1 - runs.mean())
    return out


def test_a_trained_points_probability_is_its_own_trainings_student_t(chain, laplace):  # noqa: F811
    """P(one training >= u) from a settled point's n >= 6 trainings: the Student-t predictive law in logit(error) with
    its centre the trainings' mean logit, its scale their sd sqrt(1 + 1/n), n - 1 degrees of freedom (checked
    against scipy directly); from 3-5, the spread pooled with its neighbours'; and the answer says so."""
    problem, data = laplace
    runs = [0.995, 0.996, 0.9955, 0.9962, 0.9958, 0.9951]
    evals = with_runs(chain, 0, runs)
    query = FrontQuery(problem, evals, data, FAST, np.random.default_rng(0))
    point = evals[problem.names].to_numpy(float)[0]
    centre, scale, dof = query.own_law(point)
    logits = error_to_gp(1 - np.array(runs))
    assert centre == pytest.approx(logits.mean())
    assert scale == pytest.approx(logits.std(ddof=1) * np.sqrt(1 + 1 / 6)) and dof == 5
    probability, source = query.point_reach(point, 0.99)
    goal = error_to_gp(np.array([0.01]))[0]
    assert probability == pytest.approx(stats.t.cdf((goal - centre) / scale, dof))
    assert "its own 6 trainings" in source
    low, high, _, _ = query.point_interval(point)
    assert low < np.mean(runs) < high
    # 3-5 trainings: centred on their mean, the spread pooled with the neighbours' (ReplicationNoise)
    four = with_runs(chain, 0, runs[:4])
    pooled = FrontQuery(problem, four, data, FAST, np.random.default_rng(0))
    centre, scale, dof = pooled.own_law(point, 3)
    unit = pooled.scaler.to_unit(point[None])
    assert centre == pytest.approx(error_to_gp(1 - np.array(runs[:4])).mean())
    assert scale == pytest.approx(np.sqrt(pooled.replication.at(unit, np.array([centre]))[0] * (1 + 1 / 4)))
    assert dof == pytest.approx(pooled.replication.dof(unit, np.array([centre]))[0])
    assert "its own 4 trainings" in pooled.point_reach(point, 0.99)[1]
    # fewer than REACH_TRAININGS: the GP's
    short = with_runs(chain, 0, runs[:2])
    assert FrontQuery(problem, short, data, FAST, np.random.default_rng(0)).point_reach(point, 0.99)[1] == GP_SOURCE


def test_heavy_tails_elsewhere_do_not_leak_into_a_points_own_probability(chain, laplace):  # noqa: F811
    """A point whose 6 trainings all sit well above the target reaches it at >= REACH_LEVEL from its own trainings,
    though a far corner of the domain has wild trainings that widen the GP's noise everywhere; its GP probability
    is below. Broken on purpose (the GP's probability for a trained point) this fails."""
    problem, data = laplace
    evals = chain.copy()
    evals["utility_runs"] = evals["utility_runs"].astype(object)
    wild = np.random.default_rng(5)
    far = evals["epsilon"].to_numpy() < np.quantile(evals["epsilon"], 0.3)
    for i in np.flatnonzero(far):   # heavy tails where epsilon is small
        runs = np.clip(0.9 - 0.3 * wild.pareto(1.5, 3), 0.0, 1.0)
        evals.at[evals.index[i], "utility_runs"] = runs.tolist()
        evals.loc[evals.index[i], ["utility", "utility_min", "utility_max", "error"]] = (runs.mean(), runs.min(),
                                                                                         runs.max(), 1 - runs.mean())
    good = int(np.argmax(evals["epsilon"].to_numpy()))
    evals = with_runs(evals, good, [0.9965, 0.997, 0.9968, 0.9972, 0.9966, 0.9969])
    query = FrontQuery(problem, evals, data, FAST, np.random.default_rng(0))
    point = evals[problem.names].to_numpy(float)[good]
    own, _ = query.point_reach(point, 0.995)
    assert own >= REACH_LEVEL
    assert query.reach_probability(point[None], 0.995)[0] < own


# -- epsilon answers near their budget ------------------------------------------------------------------
def test_an_epsilon_answer_far_below_its_budget_stands_only_if_measured_as_well(chain, laplace):  # noqa: F811
    problem, data = laplace
    query = FrontQuery(problem, chain, data, FAST, np.random.default_rng(0))
    points, epsilons = query._trained()
    target = float(np.quantile(epsilons, 0.5))
    far = np.flatnonzero(epsilons < target / NEAR_BUDGET)
    near = np.flatnonzero((epsilons >= target / NEAR_BUDGET) & (epsilons <= target))
    assert len(far) and len(near)
    means = np.array([query.measured(p) for p in points])
    best_near = near[int(np.argmax(means[near]))]
    worse_far = far[means[far] < means[best_near]]
    better_far = far[means[far] > means[best_near]]
    assert len(worse_far)
    feasible = epsilons <= target
    chosen = query.near_the_budget(points[feasible], epsilons[feasible], points[worse_far[0]], target)
    np.testing.assert_allclose(chosen, points[best_near])
    for i in better_far:
        np.testing.assert_allclose(query.near_the_budget(points[feasible], epsilons[feasible], points[i], target),
                                   points[i])


# -- the front says what its points' trainings support ----------------------------------------------------
def test_a_point_on_few_lucky_trainings_is_not_the_best_evaluated_point():
    """Three lucky trainings close together (0.9964) against six of a truly good point (0.995): the lucky point's
    supported utility is its mean minus 1.28 standard errors with the sd shrunk to the pooled one, so the settled
    point is the best evaluated; each row's columns match the formula computed by hand."""
    rng = np.random.default_rng(0)
    rows = [{"a": float(i), "epsilon": 1.0, "utility_runs": list(0.9 + 0.03 * rng.standard_normal(3))} for i in range(8)]
    rows.append({"a": 8.0, "epsilon": 0.5, "utility_runs": [0.9962, 0.9965, 0.9966]})        # lucky
    rows.append({"a": 9.0, "epsilon": 0.6, "utility_runs": [0.995, 0.9952, 0.9948, 0.9951, 0.9949, 0.995]})
    frame = pd.DataFrame(rows)
    frame["utility"] = [np.mean(r) for r in frame["utility_runs"]]
    frame["error"] = 1 - frame["utility"]
    supported = support.with_support(frame)
    s2 = np.array([np.var(r, ddof=1) for r in frame["utility_runs"]])
    dof = np.array([len(r) - 1 for r in frame["utility_runs"]])
    pooled = (dof * s2).sum() / dof.sum()
    se = np.sqrt((dof * s2 + support.PRIOR_DOF * pooled) / (dof + support.PRIOR_DOF)
                 / np.array([len(r) for r in frame["utility_runs"]]))
    np.testing.assert_allclose(supported["utility_se"], se)
    np.testing.assert_allclose(supported["utility_supported"], frame["utility"] - stats.norm.ppf(0.9) * se)
    best = support.best_evaluated(frame, "eps", 1.0)
    assert best.iloc[0]["a"] == 9.0, best[["a", "utility", "utility_supported"]]
    assert frame.sort_values("utility").iloc[-1]["a"] == 8.0    # by its mean alone, the lucky point
