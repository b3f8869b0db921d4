"""Answers a practitioner can act on: the region of interest from the problem (stats.region), the rounds that
steer a chain towards its declared queries (bo.answer_rounds), and the answer rules (bo.query): a utility answer
whose one new training reaches the target, trained answers with their trainings, and the domain's edge."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dptradeoff import UserError
from dptradeoff.bo.answer_rounds import AnswerImprovement, choose_for_query, query_of_round
from dptradeoff.bo.propose import Context, DPareto, Settings
from dptradeoff.bo.query import FrontQuery
from dptradeoff.problems import resolve
from dptradeoff.problems.evaluate import evaluate
from dptradeoff.problems.oracle import Data
from dptradeoff.stats.front_metrics import MetricSettings, Region
from dptradeoff.stats.region import DerivedRegion, FixedRegion, region_rule

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
from laplace_mean import exact_front  # noqa: E402

LAPLACE = {"oracle": str(ROOT / "examples" / "laplace_mean.py") + ":ClampedLaplaceMean", "delta": 1e-5,
           "utility": "1 - |error|/100", "repeats": 3,
           "domain": {"scale": {"low": 1e-3, "high": 10.0, "log": True}, "lower": {"low": 0.0, "high": 35.0},
                      "upper": {"low": 40.0, "high": 120.0}}}
FAST = Settings(candidates=500, gp_restarts=1, refit_every=1, privacy_model="exact", acquisition="hvpoi-region")


def ages(n: int = 32561) -> np.ndarray:
    """An ages-like column of Adult's size: a skewed spread over [17, 90] (Adult's age has mean 38.6)."""
    rng = np.random.default_rng(1)
    return np.clip(np.round(17 + rng.gamma(3.0, 7.2, n)), 17, 90)


@pytest.fixture(scope="module")
def laplace():
    values = ages()
    problem = resolve("laplace-mean", LAPLACE)
    data = problem.oracle.prepare(Data(values[:, None], np.zeros(len(values)), values[:, None], np.zeros(len(values)),
                                       "test", "ages"))
    return problem, data, values


# -- the region of interest ---------------------------------------------------------------------------------
def test_the_derived_region_is_where_the_utility_moves():
    """A front at its floor below eps 0.001, level from eps 0.05 on: the region spans 0.001 / 3 to 3 x 0.05, the error
    floor the front's worst error where the problem states none."""
    eps = np.geomspace(1e-5, 10, 200)
    error = np.interp(np.log(eps), np.log([1e-3, 5e-2]), [0.2, 0.01])
    region = DerivedRegion().region(eps, error, 1.0, (1e-5, 10))
    assert region.epsilon_low == pytest.approx(1e-3 / 3, rel=0.1)
    assert region.epsilon_high == pytest.approx(3 * 5e-2, rel=0.1)
    assert region.error_floor == pytest.approx(0.2)
    stated = DerivedRegion().region(eps, error, 0.24, (1e-5, 10))
    assert stated.error_floor == 0.24                           # a stated floor stays
    asked = DerivedRegion().region(eps, error, 1.0, (1e-5, 10), query_epsilons=[1.0])
    assert asked.epsilon_high == pytest.approx(3.0)             # a declared query is inside
    flat = DerivedRegion().region(eps, np.full_like(eps, 0.1), 1.0, (1e-5, 10))
    assert (flat.epsilon_low, flat.epsilon_high) == (1e-5, 10)  # nothing moves: the reachable range


def test_the_laplace_means_region_is_below_the_fixed_one(laplace):
    """On the closed-form front of the clamped Laplace mean the rule finds the trade-off below eps 0.01, where the
    fixed statistics.region [0.01, 10] sees none of it."""
    _, _, values = laplace
    grid = np.geomspace(1e-5, 4.0, 300)
    region = DerivedRegion().region(grid, 1 - exact_front(values, grid), 1.0, (grid[0], grid[-1]))
    below = np.log(0.01 / region.epsilon_low) / np.log(region.epsilon_high / region.epsilon_low)
    assert region.epsilon_low < 1e-4 and below > 0.7, region     # most of it (log scale) below eps 0.01


def test_a_problem_gets_its_region_rule_from_the_config():
    assert region_rule({}, (0.01, 10), own=False) == FixedRegion(0.01, 10)     # built in: statistics.region
    assert isinstance(region_rule({}, (0.01, 10), own=True), DerivedRegion)     # your own: derived
    assert region_rule({"region": [0.1, 2]}, (0.01, 10), own=True) == FixedRegion(0.1, 2)
    assert isinstance(region_rule({"region": "auto"}, (0.01, 10), own=False), DerivedRegion)
    with pytest.raises(UserError, match=r"needs 0 < low < high; fix the range or say region: auto"):
        region_rule({"region": [2, 1]}, (0.01, 10), own=True)


def test_the_metrics_of_a_derived_region_pool_the_points():
    rules = {"mine": DerivedRegion(), "fixed": FixedRegion(0.1, 1.0)}
    settings = MetricSettings.from_config({"region": [0.01, 10]}, rules)
    points = pd.DataFrame({"epsilon": np.geomspace(1e-4, 1, 50), "error": np.linspace(0.3, 0.05, 50)})
    assert settings.region(0.3, "fixed") == Region(0.1, 1.0, 0.3)
    assert settings.region(0.3, "built-in") == Region(0.01, 10, 0.3)
    derived = settings.region(1.0, "mine", points)
    assert derived == DerivedRegion().region(points["epsilon"], points["error"], 1.0)
    with pytest.raises(ValueError, match="derived from its evaluations"):
        settings.region(1.0, "mine")


def test_a_chain_with_the_derived_region_proposes_where_the_trade_off_is(laplace):
    """8 rounds on the Laplace mean from 8 random points: with the derived region most proposals are below eps 0.01;
    with the fixed [0.01, 10] most are above. Each proposal records its region."""
    problem, data, _ = laplace
    from dptradeoff.baselines.random_search import sample

    initial = evaluate(problem, sample(problem, 8, np.random.default_rng(3)), data, 3, 0, "initial", 0)
    shares = {}
    for name, context in {"derived": Context(data.n_train, 1.0, DerivedRegion()), "fixed": Context(data.n_train, 1.0)}.items():
        evals, previous, regions = initial, None, []
        for r in range(8):
            points, previous = DPareto(FAST).round(problem, evals, 1, 0, 0, r, 8, previous, context=context)
            regions.append((points["region_low"].iloc[0], points["region_high"].iloc[0]))
            evals = pd.concat([evals, evaluate(problem, points[problem.names], data, 3, 0, "dpareto", 0, 8 + r)],
                              ignore_index=True)
        shares[name] = float(np.mean(evals["epsilon"].iloc[8:] < 0.01))
        if name == "derived":
            assert all(high < 0.2 for _, high in regions), regions
        else:
            assert set(regions) == {(0.01, 10.0)}
    assert shares["derived"] >= 0.75 and shares["fixed"] < 0.5, shares


# -- rounds that steer towards the queries -----------------------------------------------------------------
def test_every_fourth_round_steers_towards_the_queries_in_turn():
    queries = (("eps", 0.1), ("utility", 0.9))
    plan = [query_of_round(r, 4, queries) for r in range(12)]
    assert plan == [None, None, None, ("eps", 0.1), None, None, None, ("utility", 0.9), None, None, None, ("eps", 0.1)]
    assert query_of_round(3, 0, queries) is None and query_of_round(3, 4, ()) is None


def _fitted(problem, data, rounds=0):
    from dptradeoff.baselines.random_search import sample
    from dptradeoff.bo import exact_privacy
    from dptradeoff.bo.propose import fit_surrogates

    evals = evaluate(problem, sample(problem, 16, np.random.default_rng(5)), data, 3, 0, "initial", 0)
    surrogates = fit_surrogates(problem, evals, FAST, np.random.default_rng(0), fit_privacy=False)
    privacy = exact_privacy.for_problem(problem, data.n_train, 500, evals[problem.names].to_numpy(float))
    return evals, surrogates, privacy


def test_an_epsilon_query_round_proposes_inside_its_constraint(laplace):
    problem, data, _ = laplace
    evals, surrogates, privacy = _fitted(problem, data)
    for target in (1e-4, 1e-3):
        row = choose_for_query(problem, surrogates, privacy, evals, ("eps", target), 500, np.random.default_rng(1)).iloc[0]
        eps = problem.oracle.epsilon(row[problem.names].to_dict(), n=data.n_train, delta=1e-5)
        assert eps <= target and row["predicted_epsilon"] == pytest.approx(eps)
        assert eps >= 0.3 * target          # the local search walks to the constraint, where utility is best
        assert row["steers"] == f"epsilon query {target:g}"


def test_a_utility_query_values_privacy_times_the_chance_of_reaching_the_target(laplace):
    problem, data, _ = laplace
    evals, surrogates, privacy = _fitted(problem, data)
    improvement = AnswerImprovement(("utility", 0.99), surrogates.utility, surrogates.scaler, evals, problem.names)
    point = np.array([[0.3, 35.0, 43.0]])
    unit = surrogates.scaler.to_unit(point)
    more, less = improvement(unit, np.array([1e-4])), improvement(unit, np.array([1e-3]))
    assert more[0] > less[0] >= 0      # the same chance of reaching 0.99, more private: worth more


# -- the answer rules --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def answered(laplace):
    problem, data, _ = laplace
    from dptradeoff.baselines.random_search import sample

    evals = evaluate(problem, sample(problem, 40, np.random.default_rng(11)), data, 3, 0, "dpareto", 0)
    return FrontQuery(problem, evals, data, FAST, np.random.default_rng(2)), evals


def test_a_utility_answer_is_one_whose_single_training_reaches_the_target(answered):
    """One new training of the answer reaches the target with probability REACH_LEVEL or more (the one-sided bound:
    the lower end of the central 2 REACH_LEVEL - 1 interval is at or above it): not merely its predicted mean,
    which one training misses about half the time."""
    from dptradeoff.bo.query import REACH_LEVEL

    query, _ = answered
    answer = query.for_utility(0.99, search=True)
    assert answer.point is not None and answer.reach_probability >= REACH_LEVEL and answer.predicted_utility >= 0.99
    point = np.array([[answer.point[n] for n in query.problem.names]], dtype=float)
    assert query.interval(point, 2 * REACH_LEVEL - 1)[0][0] >= 0.99


def test_a_trained_answer_is_a_trained_point_with_its_trainings(answered):
    query, evals = answered
    answer = query.for_epsilon(1e-2)
    point = np.array([answer.point[n] for n in query.problem.names], dtype=float)
    rows = evals[np.all(np.isclose(evals[query.problem.names].to_numpy(float), point), axis=1)]
    assert len(rows) == 1 and answer.trained and answer.epsilon <= 1e-2
    assert answer.trainings == pytest.approx(list(rows["utility_runs"].iloc[0]))
    feasible = evals[evals["epsilon"] <= 1e-2]
    best = query.predict(feasible[query.problem.names].to_numpy(float))[0].max()
    assert answer.predicted_utility == pytest.approx(best)     # the trained point the GP rates best there
    untrained = query.for_epsilon(1e-2, search=True)
    assert untrained.predicted_utility >= answer.predicted_utility - 1e-12


def test_an_answer_at_a_bound_of_the_domain_says_so_where_the_bound_binds(answered, monkeypatch):
    """An answer at a bound says so only where the bound binds (inside is predicted worse): a wider domain can
    only help there."""
    query, _ = answered
    inside = np.array([0.5, 20.0, 80.0])
    assert query.edge(inside) == ""
    at = np.array([10.0, 35.0, 80.0])

    def predicted(utility_of_scale):
        return lambda points: (utility_of_scale(np.asarray(points)[:, 0]), np.zeros(len(points)))

    # utility falling with the noise scale: less noise inside is better, the bound scale = 10 does not bind
    monkeypatch.setattr(query, "predict", predicted(lambda scale: -scale))
    assert query.edge(at) == ""
    # utility rising with it: inside is worse, both bounds bind (a wider domain may do better)
    monkeypatch.setattr(query, "predict", predicted(lambda scale: scale))
    assert query.edge(at) == "scale = 10 is its upper bound 10"


def test_a_built_in_problem_proposes_as_before(laplace):
    """A problem whose region is declared (a built-in's statistics.region) and that declares no query proposes
    exactly what a chain without a region rule proposes: the built-in problems' chains are unchanged."""
    problem, data, _ = laplace
    from dptradeoff.baselines.random_search import sample

    evals = evaluate(problem, sample(problem, 10, np.random.default_rng(8)), data, 3, 0, "initial", 0)
    proposals = [DPareto(FAST).round(problem, evals, 1, 0, 0, 0, 10, None, context=context)[0]
                 for context in (Context(data.n_train, 1.0), Context(data.n_train, 1.0, FixedRegion(*FAST.region)))]
    pd.testing.assert_frame_equal(*(p[problem.names] for p in proposals))


@pytest.mark.parametrize("point", [{"scale": 0.25, "lower": 35.0, "upper": 43.0}, {"scale": 10.0, "lower": 0.0, "upper": 120.0},
                                   {"scale": 0.001, "lower": 20.0, "upper": 60.0}])
def test_the_laplace_examples_epsilon_is_dp_accountings_for_the_laplace_mechanism(laplace, point):
    """The example's epsilon, (upper - lower) / (n scale), against dp_accounting's privacy loss distribution of the
    Laplace mechanism with sensitivity (upper - lower) / n, at delta 0 (its pessimistic discretisation: within 1 %)."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    problem, data, _ = laplace
    n = data.n_train
    ours = problem.oracle.epsilon(point, n=n, delta=0.0)
    sensitivity = (point["upper"] - point["lower"]) / n
    theirs = pld.from_laplace_mechanism(point["scale"] / sensitivity, sensitivity=1.0,
                                        value_discretization_interval=1e-4 * ours).get_epsilon_for_delta(0.0)
    assert ours == pytest.approx(theirs, rel=1e-2)
