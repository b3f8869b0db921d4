"""Answers at the least epsilon, with epsilon computed (issue ASK): a derived region that covers the declared
utility targets, a utility answer whenever a training met the target (with the probability that one new training
reaches it), an oracle too slow for
every candidate that keeps epsilon exact in the acquisition, and one region in the front figure and table."""
from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dptradeoff.baselines.random_search import sample
from dptradeoff.bo import exact_privacy
from dptradeoff.bo.propose import Context, DPareto, Settings
from dptradeoff.bo.query import REACH_LEVEL, FrontQuery
from dptradeoff.plots.front import chain_privacy, shaded_region
from dptradeoff.problems import resolve
from dptradeoff.problems.evaluate import evaluate
from dptradeoff.problems.oracle import Data
from dptradeoff.problems.user import user_problem
from dptradeoff.stats.front_metrics import Region
from dptradeoff.stats.region import DerivedRegion

ROOT = Path(__file__).resolve().parents[1]
LAPLACE = {"oracle": str(ROOT / "examples" / "laplace_mean.py") + ":ClampedLaplaceMean", "delta": 0.0,
           "utility": "1 - |error|/100", "repeats": 3,
           "domain": {"scale": {"low": 1e-3, "high": 10.0, "log": True}, "lower": {"low": 0.0, "high": 35.0},
                      "upper": {"low": 40.0, "high": 120.0}}}
FAST = Settings(candidates=500, gp_restarts=1, refit_every=1, privacy_model="exact", acquisition="hvpoi-region")


@pytest.fixture(scope="module")
def laplace():
    values = np.clip(np.round(17 + np.random.default_rng(1).gamma(3.0, 7.2, 32561)), 17, 90)
    problem = resolve("laplace-mean", LAPLACE)
    data = problem.oracle.prepare(Data(values[:, None], np.zeros(len(values)), values[:, None], np.zeros(len(values)),
                                       "test", "ages"))
    return problem, data


@pytest.fixture(scope="module")
def chain(laplace):
    problem, data = laplace
    return evaluate(problem, sample(problem, 40, np.random.default_rng(11)), data, 3, 0, "dpareto", 0)


# -- the region covers the utility targets -------------------------------------------------------------------
def test_a_derived_region_covers_the_declared_utility_targets():
    """High is raised to MARGIN x the smallest epsilon where the observed front reaches a utility target, and to
    the domain's top while no evaluated point reaches it (a target the chain has not reached may need more)."""
    eps = np.geomspace(1e-4, 1.0, 41)
    error = 0.02 + 0.5 * np.exp(-eps / 2e-3)          # stops moving near 0.01: the region ends near 0.03
    plain = DerivedRegion().region(eps, error, 1.0, (1e-5, 10))
    assert plain.epsilon_high < 0.05
    target = 1 - 0.0201                                # error 0.0201: first reached at epsilon ~0.018
    reached = eps[np.argmax(error <= 1 - target)]
    covered = DerivedRegion().region(eps, error, 1.0, (1e-5, 10), query_utilities=[target])
    assert covered.epsilon_high == pytest.approx(3.0 * reached) and covered.epsilon_high > plain.epsilon_high
    unreached = DerivedRegion().region(eps, error, 1.0, (1e-5, 10), query_utilities=[0.99])
    assert unreached.epsilon_high == pytest.approx(10.0)
    easy = DerivedRegion().region(eps, error, 1.0, (1e-5, 10), query_utilities=[0.5])
    assert easy == plain                               # a target reached inside the region changes nothing


# -- utility answers ----------------------------------------------------------------------------------------
def test_one_trainings_reach_probability_is_the_one_sided_interval(chain, laplace):
    """P(one training >= u) >= REACH_LEVEL exactly where the central (2 REACH_LEVEL - 1) interval's lower end is
    >= u: the probability is the interval's own law, read one-sided."""
    problem, data = laplace
    query = FrontQuery(problem, chain, data, FAST, np.random.default_rng(2))
    points = chain[problem.names].to_numpy(float)[:10]
    low = query.interval(points, 2 * REACH_LEVEL - 1)[0]
    assert query.reach_probability(points, 0.99).shape == (10,)
    for point, bound in zip(points, low):
        if 0.0 < bound < 1.0:
            assert query.reach_probability(point[None], float(bound))[0] == pytest.approx(REACH_LEVEL, abs=1e-6)


def test_a_utility_answer_reaches_the_target_with_the_stated_probability(chain, laplace):
    problem, data = laplace
    query = FrontQuery(problem, chain, data, FAST, np.random.default_rng(2))
    answer = query.for_utility(0.99)
    assert answer.point is not None and answer.reach_level == REACH_LEVEL
    assert answer.reach_probability >= REACH_LEVEL
    points = chain[problem.names].to_numpy(float)
    # each trained point's probability: its own trainings' where it has OWN_TRAININGS, else the GP's
    reaching = np.array([query.point_reach(p, 0.99)[0] for p in points]) >= REACH_LEVEL
    assert answer.epsilon == pytest.approx(chain["epsilon"].to_numpy()[reaching].min())   # the most private of them


def test_a_utility_answer_exists_while_a_training_met_the_target(chain, laplace):
    """A target only one training of the chain reached: no point reaches it at REACH_LEVEL, yet the answer is
    not empty; it is that point, its (low) probability beside it."""
    problem, data = laplace
    query = FrontQuery(problem, chain, data, FAST, np.random.default_rng(2))
    runs = np.concatenate([np.asarray(r, dtype=float) for r in chain["utility_runs"]])
    target = float(runs.max())
    answer = query.for_utility(target)
    assert answer.point is not None, "no answer although a training of the chain met the target"
    assert max(answer.trainings) == pytest.approx(target)
    assert answer.reach_probability < REACH_LEVEL
    nobody = query.for_utility(min(1.0, target + 1e-3))
    assert nobody.point is None and np.isnan(nobody.reach_probability)


# -- epsilon exact in the acquisition -------------------------------------------------------------------------
SLOW_ORACLE = '''import time


def epsilon(point, *, n, delta):
    time.sleep(0.001)                       # an OpenDP map: about a millisecond a point
    return point["width"] / point["scale"]


def utility(point, data, rng):
    return float(max(0.0, 1.0 - abs(rng.laplace(0.0, point["scale"])) - 0.01 * point["width"]))
'''


@pytest.fixture(scope="module")
def slow(tmp_path_factory):
    path = tmp_path_factory.mktemp("slow") / "slow_oracle.py"
    path.write_text(SLOW_ORACLE)
    problem = user_problem("slow", {"oracle": str(path), "domain": {"scale": {"low": 0.01, "high": 1.0, "log": True},
                                                                       "width": {"low": 0.1, "high": 2.0}}})
    evals = evaluate(problem, sample(problem, 10, np.random.default_rng(3)), None, 2, 0, "initial", 0)
    return problem, evals


def test_a_millisecond_oracle_keeps_epsilon_exact_in_the_acquisition(slow, caplog):
    """A 1 ms privacy oracle is too slow for 500 candidates a round (0.5 s > POINTWISE_BUDGET), so the privacy
    GP screens them, and the oracle scores the finalists: the proposed point's epsilon is the oracle's own, the
    proposal file says how, and nothing falls back to the GP's epsilon silently."""
    problem, evals = slow
    model = exact_privacy.for_problem(problem, None, FAST.candidates, evals[problem.names].to_numpy(float))
    assert isinstance(model, exact_privacy.ScreenedOracle), f"the GP fallback came back: {model!r}"
    assert model.finalists >= 100
    with caplog.at_level(logging.WARNING):
        for context in (Context(None, 1.0), Context(None, 1.0, DerivedRegion(), (("utility", 0.9),))):
            for round_index in (0, 3):   # a front round and (with the query) a query round
                points, _ = DPareto(FAST).round(problem, evals, 1, 0, 0, round_index, 10, None, context=context)
                row = points.iloc[0]
                exact = problem.oracle.epsilon(row[problem.names].to_dict(), n=None, delta=problem.delta)
                assert row["predicted_epsilon"] == exact
                assert row["privacy_model"].startswith("exact for the") and "screens" in row["privacy_model"]
    assert not [r for r in caplog.records if "prediction, not the oracle's" in r.getMessage()]
    query = FrontQuery(problem, evals, None, FAST, np.random.default_rng(0))
    assert isinstance(query.ranking, exact_privacy.ScreenedOracle) and query.surrogates.privacy is not None
    answer = query.for_epsilon(5.0, search=True)      # the GP's search of the domain: ranked by the GP, checked exactly
    assert answer.epsilon == problem.oracle.epsilon(answer.point, n=None, delta=problem.delta) <= 5.0


def test_the_gp_epsilon_is_never_used_silently(slow, caplog, monkeypatch):
    """Where the oracle cannot score candidates, the GP's epsilon stands in: at warning level, in the proposal
    file and in the front table."""
    problem, evals = slow
    monkeypatch.setattr(exact_privacy, "for_problem", lambda *args, **kwargs: None)
    with caplog.at_level(logging.WARNING):
        points, _ = DPareto(FAST).round(problem, evals, 1, 0, 0, 0, 10, None, context=Context(None, 1.0))
    assert points["privacy_model"].iloc[0] == exact_privacy.GP_EPSILON
    assert any("prediction, not the oracle's" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)
    assert "WARNING: 1 rounds" in chain_privacy([points])
    assert "WARNING" not in chain_privacy([points.assign(privacy_model="exact (the oracle's epsilon per candidate)")])


def test_a_screened_round_costs_its_budget_not_every_candidate(slow, monkeypatch):
    """The oracle runs for the finalists and the domain's reachable range (the 16-point probe, the corners and the
    finalists' budget), not for the round's 500 candidates."""
    problem, evals = slow
    scored = []
    original = exact_privacy._oracle_epsilons

    def counted(problem, n, points):
        scored.append(len(np.atleast_2d(points)))
        return original(problem, n, points)

    monkeypatch.setattr(exact_privacy, "_oracle_epsilons", counted)
    settings = Settings(**{**FAST.__dict__, "candidates": 5000})
    points, _ = DPareto(settings).round(problem, evals, 1, 0, 0, 0, 10, None, context=Context(None, 1.0, DerivedRegion()))
    assert points["privacy_model"].iloc[0].startswith("exact for the")
    limit = exact_privacy.MAX_FINALISTS
    assert exact_privacy.MIN_FINALISTS < sum(scored) <= 16 + 2 * (limit + 1) < settings.candidates / 4


# -- one region ------------------------------------------------------------------------------------------
def test_the_figure_shades_the_region_the_chain_searched():
    metrics = Region(1.9e-5, 2.91, 0.5)
    last = pd.DataFrame({"region_low": [1.9e-5], "region_high": [0.157], "privacy_model": ["exact"]})
    region, what, note = shaded_region([last.assign(region_high=0.5), last], metrics, "derived from the problem")
    assert (region.epsilon_low, region.epsilon_high, region.error_floor) == (1.9e-5, 0.157, 0.5)
    assert "searched" in what and "[1.9e-05, 2.91]" in note          # the metrics' own region named apart
    same, _, quiet = shaded_region([last.assign(region_high=2.91)], metrics, "derived from the problem")
    assert same.epsilon_high == 2.91 and quiet == ""
    paper = shaded_region([pd.DataFrame({"acquisition": [1.0]})], metrics, "statistics.region")
    assert paper[0] == metrics and "pooled" in paper[1]
    # a derived region reaching beyond every proposal (to epsilon 3 while they stop at 0.035): shaded to the proposals
    proposed = [last.assign(region_high=3.0, predicted_epsilon=e) for e in (2e-4, 0.035, 0.01)]
    clipped, what, _ = shaded_region(proposed, metrics, "derived from the problem")
    assert (clipped.epsilon_low, clipped.epsilon_high) == (2e-4, 0.035) and "proposals" in what


def test_a_screened_oracles_finalists_come_in_tiers_a_decade_of_cost_apart(slow):
    """A machine's load moves an oracle's tier only near a boundary: 1 ms and 1.9 ms a point score the same 512
    finalists, 5 ms 64, 50 ms 16; the proposal file's name does not carry the measured time."""
    problem, _ = slow
    tiers = {cost: exact_privacy.ScreenedOracle(problem, None, cost) for cost in (1e-3, 1.9e-3, 5e-3, 5e-2)}
    assert [t.finalists for t in tiers.values()] == [512, 512, 64, 16]
    assert tiers[1e-3].name == tiers[1.9e-3].name


@pytest.mark.parametrize("bias", [0.0, 0.6, -1.4])   # inside the tolerance, and beyond it
def test_the_laplace_examples_reach_probability_is_monte_carlos(bias):
    """The benchmarks' anchor, P(|b + Laplace(s)| <= t) in closed form, against 400,000 draws."""
    import sys

    sys.path.insert(0, str(ROOT / "examples"))
    from laplace_mean import reach_probability

    draws = bias + np.random.default_rng(7).laplace(0.0, 0.5, 400_000)
    assert float(reach_probability(bias, 0.5, 1.0)) == pytest.approx(np.mean(np.abs(draws) <= 1.0), abs=3e-3)


def test_the_least_epsilon_reaching_a_utility_is_a_brute_force_searchs():
    """`least_epsilon_reaching` (bisection in the scale) against a sweep of 4,000 scales per clamp on a coarse grid."""
    import sys

    sys.path.insert(0, str(ROOT / "examples"))
    from laplace_mean import least_epsilon_reaching, reach_probability

    values = np.clip(np.round(17 + np.random.default_rng(1).gamma(3.0, 7.2, 2000)), 17, 90)
    n, scales = len(values), np.geomspace(1e-3, 10.0, 4000)
    best = np.inf
    for low in np.arange(0.0, 35.1, 5.0):
        for high in np.arange(40.0, 120.1, 5.0):
            bias = np.clip(values, low, high).mean() - values.mean()
            reaching = scales[reach_probability(bias, scales, 1.0) >= 0.9]
            if len(reaching):
                best = min(best, (high - low) / (n * reaching.max()))
    assert least_epsilon_reaching(values, 0.99, 0.9, step=5.0) == pytest.approx(best, rel=3e-3)
