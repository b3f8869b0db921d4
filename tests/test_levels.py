"""Searching on epsilon levels (bo/levels.py): a candidate placed on a level spends it by the oracle's own accountant,
a level the domain cannot reach is dropped, and the utility GP sees log epsilon where the box has the noise."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dptradeoff.baselines.random_search import sample
from dptradeoff.bo import levels
from dptradeoff.bo.exact_privacy import DPSGDTable, for_problem
from dptradeoff.bo.propose import Context, Settings, fit_surrogates, propose
from dptradeoff.bo.transforms import InputScaler
from dptradeoff.privacy import dpsgd
from dptradeoff.problems import PROBLEMS

N_ADULT = 26048


def _coordinate(conversion: str = "dp_accounting"):
    problem = PROBLEMS["adult-logreg-sgd"].with_conversion(conversion)
    table = DPSGDTable(problem, N_ADULT)
    return problem, levels.EpsilonCoordinate(problem, InputScaler(problem), table)


def _evaluated(count: int, seed: int):
    """Adult LogReg+SGD (RDP accounting), `count` sampled points with their epsilon and a smooth error."""
    problem = PROBLEMS["adult-logreg-sgd"].with_conversion("dp_accounting")
    table = DPSGDTable(problem, N_ADULT)
    points = sample(problem, count, np.random.default_rng(seed))
    points["epsilon"] = table.exact(points[problem.names].to_numpy(float))
    points["error"] = np.clip(0.16 + 0.1 / (1 + points["epsilon"]), 0.01, 0.99)
    return problem, table, points


def test_a_placed_candidate_spends_its_level_by_the_oracles_accountant():
    """Placed on a level, a candidate's epsilon by dpsgd.epsilon itself (not the table that placed it) is the level
    within 5 % (median 0.3 %), whatever its other hyperparameters; the noise is the only coordinate moved."""
    problem, coordinate = _coordinate()
    rng = np.random.default_rng(0)
    unit = rng.random((60, len(problem.names)))
    wanted = rng.uniform(np.log(0.05), np.log(5.0), 60)
    placed, reachable = coordinate.place(unit, wanted)
    assert reachable.sum() >= 30
    noise = problem.names.index("noise")
    np.testing.assert_array_equal(np.delete(placed, noise, axis=1), np.delete(unit, noise, axis=1))
    points = coordinate.scaler.from_unit(placed[reachable])
    oracle = np.array([dpsgd.epsilon(N_ADULT, int(p[1]), int(p[0]), float(p[3]), problem.delta, "dp_accounting")
                       for p in points])
    gap = np.abs(np.log(oracle) - wanted[reachable])   # the table's interpolation error, a few per cent at most
    assert np.median(gap) < 3e-3 and gap.max() < 0.05


def test_a_level_the_domain_cannot_reach_is_dropped_not_clipped():
    problem, coordinate = _coordinate()
    unit = np.full((3, len(problem.names)), 0.5)
    too_low = coordinate.log_epsilon(np.column_stack([unit[:, :3], np.ones(3), unit[:, 4:]])) - 1.0   # below max noise
    too_high = coordinate.log_epsilon(np.column_stack([unit[:, :3], np.zeros(3), unit[:, 4:]])) + 1.0  # above min noise
    placed, reachable = coordinate.place(np.vstack([unit[:1], unit[:1], unit[:1]]),
                                         np.array([too_low[0], too_high[0], 0.5 * (too_low[0] + too_high[0])]))
    assert reachable.tolist() == [False, False, True]
    np.testing.assert_array_equal(placed[:2], unit[:2])   # unchanged, not moved to a bound of the noise
    box = np.random.default_rng(2).random((200, len(problem.names)))
    kept = levels.placed_candidates(coordinate, box, (1e-6, 1e-5), 1.0, np.random.default_rng(1))
    # a region below everything the domain reaches: no candidate on a level, a quarter of the box's own instead
    np.testing.assert_array_equal(kept, box[:50])


def test_the_utility_gp_learns_over_log_epsilon_where_the_box_has_the_noise():
    problem, table, points = _evaluated(24, 5)
    settings = Settings(candidates=500, gp_restarts=1, privacy_model="exact", acquisition="hvpoi-region",
                        search="levels")
    surrogates = fit_surrogates(problem, points, settings, np.random.default_rng(0), on_levels=table)
    coordinate = surrogates.epsilon_coordinate
    assert isinstance(surrogates.utility, levels.OnLevels)
    seen = surrogates.utility.posterior.x[:, problem.names.index("noise")]
    expected = (np.log(table.ranking(points[problem.names].to_numpy(float))) - coordinate.low) / (coordinate.high - coordinate.low)
    np.testing.assert_allclose(seen, expected, rtol=1e-9)
    # asked at a point of the box, the posterior reads the point's epsilon, not its noise
    unit = coordinate.scaler.to_unit(points[problem.names].to_numpy(float))
    assert not np.allclose(coordinate.inputs(unit), unit)


def test_a_levels_round_proposes_inside_the_region_and_says_it_searched_on_levels():
    problem, _, points = _evaluated(16, 7)
    context = Context(N_ADULT, 0.24)
    settings = Settings(candidates=400, gp_restarts=1, privacy_model="exact", acquisition="hvpoi-region",
                        search="levels", region=(0.1, 3.0))
    proposal = propose(problem, points, 2, settings, np.random.default_rng(3), context=context).points
    assert (proposal["search"] == "levels").all()
    assert ((proposal["predicted_epsilon"] > 0.1 * 0.9) & (proposal["predicted_epsilon"] < 3.0 * 1.1)).all()
    box = propose(problem, points, 1, Settings(candidates=400, gp_restarts=1, privacy_model="exact",
                                               acquisition="hvpoi-region", region=(0.1, 3.0)),
                  np.random.default_rng(3), context=context).points
    assert (box["search"] == "box").all()


def test_an_unknown_search_is_named():
    problem = PROBLEMS["adult-logreg-sgd"]
    points = pd.DataFrame(sample(problem, 4, np.random.default_rng(0)))
    with pytest.raises(ValueError, match="search must be one of"):
        propose(problem, points.assign(epsilon=1.0, error=0.2), 1, Settings(search="grid"), np.random.default_rng(0))


def test_under_the_tight_accountant_levels_are_placed_by_the_ratio_of_the_ranking_to_the_oracle():
    """The ranking is WBK19's bound (above the tight epsilon); a tight level is placed at level x the median ratio of
    the two over the evaluated points, so the placed candidates' tight epsilons straddle the levels."""
    problem = PROBLEMS["adult-logreg-sgd"]
    rng = np.random.default_rng(4)
    evaluated = sample(problem, 12, rng)[problem.names].to_numpy(float)
    model = for_problem(problem, N_ADULT, 5000, evaluated)
    coordinate = levels.EpsilonCoordinate(problem, InputScaler(problem), model)
    ratio = coordinate.ranking_over_exact(evaluated, model.exact(evaluated))
    assert 1.2 < ratio < 3.0
    placed = levels.placed_candidates(coordinate, rng.random((40, len(problem.names))), (0.5, 0.5000001), ratio, rng)
    tight = model.exact(coordinate.scaler.from_unit(placed[:8]))
    assert 0.5 / 1.6 < np.median(tight) < 0.5 * 1.6
