"""Questions answered by the clock (bo/timed_questions.py) and rounds that train as long as they choose
(bo/batch_rounds.py): the statistics an answer states, against independent computations; the answer stated by
fresh trainings only; the budget's counts; the batch sizes and perturbations; the GPs' rows of a batch chain."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dptradeoff.baselines.random_search import sample
from dptradeoff.bo import batch_rounds
from dptradeoff.bo.propose import Settings, gp_rows
from dptradeoff import UserError
from dptradeoff.bo.query_round import timed_answer
from dptradeoff.bo.timed_questions import (LEVEL_TOLERANCE, ORDER_LEAST, QuestionClock, TimedQuestion, cost_tier,
                                           fresh_statement, measure, order_interval, settle_level, wilson)
from dptradeoff.problems import resolve
from dptradeoff.problems.evaluate import evaluate
from dptradeoff.problems.oracle import Data
from dptradeoff.seeds import rng

REPO = Path(__file__).parent.parent
FAST = Settings(candidates=200, gp_restarts=1, privacy_model="exact", acquisition="hvpoi-region")


def test_the_order_statistics_interval_holds_a_new_draw_at_its_level_from_19_draws():
    """1 - 2k/(N+1) >= 0.9 exactly (exchangeability), checked by simulation for a skewed law; None below 19."""
    assert order_interval(np.arange(ORDER_LEAST - 1)) is None
    draw = np.random.default_rng(0)
    for n in (19, 39, 200):
        k = math.floor((n + 1) * 0.1 / 2 + 1e-12)
        samples = draw.lognormal(0.0, 1.0, (20_000, n + 1))
        inside = []
        for row in samples:
            low, high = order_interval(row[:n])
            inside.append(low <= row[n] <= high)
        nominal = 1 - 2 * k / (n + 1)
        assert nominal >= 0.9
        assert abs(np.mean(inside) - nominal) < 4 * math.sqrt(nominal * (1 - nominal) / len(inside)), n


def test_wilsons_interval_is_scipys():
    for hits, n in ((9, 10), (180, 200), (0, 40), (40, 40)):
        ours = wilson(hits, n, stats.norm.ppf(0.975))
        theirs = stats.binomtest(hits, n).proportion_ci(0.95, method="wilson")
        assert ours == pytest.approx((theirs.low, theirs.high), abs=1e-12)


def test_cost_tiers_round_up_to_a_quarter_decade():
    assert cost_tier(1e-4) == pytest.approx(1e-4)
    assert cost_tier(1.01e-4) == pytest.approx(10 ** -3.75)
    assert cost_tier(0.5) == pytest.approx(10 ** -0.25)
    clock = QuestionClock(10.0, cost_tier(1e-4), cost_tier(1e-5))
    assert clock.trainings == 100_000


def test_a_dear_trainings_budget_is_raised_to_the_least_trainings_and_says_so():
    """10 s buy 20 trainings of 0.5 s: the question gets 200 trainings' worth (its row's budget says why); tiers
    given are pinned, not measured."""
    problem = coin_problem(0.9)
    clock = measure(problem, None, [{"noise": 1.0, "shape": 0.5}], 10.0, 0, recorded=0.5, least_trainings=200)
    assert clock.training == pytest.approx(cost_tier(0.5))
    assert clock.seconds == pytest.approx(200 * (cost_tier(0.5) + clock.candidate / 8) + clock.overhead)
    assert "the 10 s asked buy fewer" in clock.tier_text()
    pinned = measure(problem, None, [{"noise": 1.0, "shape": 0.5}], 10.0, 0,
                     tiers={"training": 1e-3, "candidate": 1e-4, "overhead": 0.01})
    assert pinned.pinned and pinned.tiers() == {"training": 1e-3, "candidate": 1e-4, "overhead": 0.01}
    assert pinned.seconds == 10.0 and "pinned" in pinned.tier_text()


def test_a_settled_levels_margin_keeps_its_fresh_share_above_the_level_in_95_percent():
    """A point exactly at settle_level(F) gives a fresh share of F trainings below 0.9 in at most 5 % (binomial)."""
    for fresh in (50, 200, 2000, 20000):
        p = settle_level(fresh)
        below = stats.binom.cdf(math.ceil(0.9 * fresh) - 1, fresh, p)
        assert below <= 0.055 and (fresh < 2000 or below > 0.03), (fresh, below)   # not needlessly strict


def coin_problem(p: float):
    return resolve("coin", {"oracle": str(REPO / "tests/user_problems/coin.py") + ":Coin", "options": {"p": p},
                            "delta": 0.0, "repeats": 3,
                            "domain": {"noise": {"low": 0.1, "high": 10.0, "log": True}, "shape": {"low": 0.0, "high": 1.0}}})


def test_a_utility_answer_states_its_fresh_trainings_not_the_search_that_chose_it():
    """Every point reaches 0.5 with P 0.9 exactly. The race settles a level only on candidates whose trainings
    came out lucky; the answer's P (the query rule's row) must be its fresh trainings' share, about 0.9, not its
    search trainings'."""
    problem = coin_problem(0.9)
    evals = evaluate(problem, sample(problem, 6, rng(1, "coin")), None, 3, 1, "initial", 0)
    clock = QuestionClock(1.5, 1e-5, 1e-5)   # counted, not measured: 150,000 trainings' worth
    answer, row = timed_answer(problem, evals, None, "utility", 0.5, clock, 7, 0)
    assert answer.point is not None and row["search_trainings"] > 1000
    assert row["fresh_trainings"] >= 200 and len(answer.trainings) == row["fresh_trainings"]
    fresh = np.asarray(answer.trainings)
    assert answer.reach_probability == pytest.approx(np.mean(fresh >= 0.5))
    assert abs(answer.reach_probability - 0.9) < 4 * math.sqrt(0.09 / len(fresh))
    assert row["probability_source"].startswith(f"{len(fresh)} fresh trainings after it was chosen")
    assert (answer.interval_low, answer.interval_high) == order_interval(fresh)
    # fresh trainings are drawn from a stream of their own, not the search's
    again = problem.oracle.utilities(answer.point, None, 2, rng(7, "coin", "timed-question", "utility", 0.5, 0, "fresh", 1))
    assert np.array_equal(fresh[1:3], again)   # the second chunk (two trainings) from its own stream


def test_a_utility_question_finds_the_least_epsilon_that_reaches_on_the_laplace_mean():
    """The example's clamped Laplace mean over Adult's ages: with the default 10 counted seconds the answer is within
    1.3x of the closed form's least epsilon at the probability its fresh trainings state (at least 0.9), and that
    probability is theirs."""
    sys.path.insert(0, str(REPO / "examples"))
    from adult_income_csv import adult_people
    from laplace_mean import least_epsilon_reaching

    values = adult_people()["age"].astype(float).to_numpy()
    problem = resolve("laplace-mean", {
        "oracle": str(REPO / "examples/laplace_mean.py") + ":ClampedLaplaceMean", "delta": 0.0, "repeats": 3,
        "domain": {"scale": {"low": 1e-3, "high": 10.0, "log": True}, "lower": {"low": 0.0, "high": 35.0},
                   "upper": {"low": 40.0, "high": 120.0}}})
    data = problem.oracle.prepare(Data(values[:, None], np.zeros(len(values)), values[:, None], np.zeros(len(values)),
                                       "user CSV", "ages"))
    evals = evaluate(problem, sample(problem, 8, rng(0, problem.name, "laplace", "initial")), data, 3, 0, "initial", 0)
    clock = QuestionClock(10.0, 1.78e-4, 1.78e-5, pinned=True)   # the default seconds; the counts decide (a replay)
    search = TimedQuestion(problem, evals, data, "utility", 0.99, clock, 0, 0)
    found = search.run()
    said = fresh_statement(search.fresh(found.point), "utility", 0.99)
    assert said["reach_probability"] >= 0.9
    assert found.epsilon <= 1.3 * least_epsilon_reaching(values, 0.99, said["reach_probability"])
    retrained = problem.oracle.utilities(found.point, data, 400, rng(0, "test-retrain"))
    assert abs(np.mean(retrained >= 0.99) - said["reach_probability"]) < 0.06


def test_an_epsilon_question_searches_only_at_its_budget_with_calibrate():
    problem = coin_problem(0.5)
    evals = evaluate(problem, sample(problem, 6, rng(2, "coin")), None, 3, 2, "initial", 0)
    search = TimedQuestion(problem, evals, None, "eps", 0.3, QuestionClock(0.2, 1e-5, 1e-5), 3, 0)
    found = search.run()
    assert found.point is not None and found.epsilon == pytest.approx(0.3)
    assert all(a.epsilon == pytest.approx(0.3) for a in search.arms)


def coin_of(kind: str, p: float = 0.9, **options):
    return resolve(f"coin-{kind.lower()}", {
        "oracle": str(REPO / "tests/user_problems/coin.py") + f":{kind}", "options": {"p": p, **options}, "delta": 0.0,
        "repeats": 3, "domain": {"noise": {"low": 0.1, "high": 10.0, "log": True}, "shape": {"low": 0.0, "high": 1.0}}})


def test_without_calibrate_an_epsilon_answer_spends_its_level():
    """No calibrate: every candidate is moved onto epsilon E by the exact epsilon, within LEVEL_TOLERANCE below it."""
    problem = coin_of("PlainCoin", 0.5)
    evals = evaluate(problem, sample(problem, 6, rng(2, "coin")), None, 3, 2, "initial", 0)
    search = TimedQuestion(problem, evals, None, "eps", 0.3, QuestionClock(0.2, 1e-5, 1e-5), 3, 0)
    found = search.run()
    assert search.arms and found.point is not None
    for arm in search.arms:
        assert 0.3 * (1 - LEVEL_TOLERANCE) <= arm.epsilon <= 0.3
    # a level beyond the domain's reach (epsilon = 1 / noise >= 0.1) places nothing
    assert TimedQuestion(problem, evals, None, "eps", 0.05, QuestionClock(0.05, 1e-5, 1e-5), 3, 0)._placed(
        np.random.default_rng(0).random((8, 2)), 0.05) == []


def test_calibrates_contract_none_partial_and_wrong():
    """docs/release.md: None is a level out of reach, a partial dict is merged, anything else is named."""
    partial = coin_of("PartialCoin")
    evals = evaluate(partial, sample(partial, 6, rng(3, "coin")), None, 3, 3, "initial", 0)
    search = TimedQuestion(partial, evals, None, "eps", 0.5, QuestionClock(0.1, 1e-5, 1e-5), 0, 0)
    arms = search._placed(np.random.default_rng(0).random((8, 2)), 0.5)
    assert len(arms) == 8 and all(a.epsilon == pytest.approx(0.5) for a in arms)
    assert len({a.point[1] for a in arms}) == 8        # the shape kept: merged, not replaced
    assert search._placed(np.random.default_rng(0).random((8, 2)), 20.0) == []   # None: unreachable
    wrong = coin_of("WrongCoin")
    with pytest.raises(UserError, match="calibrate.*must return the point as a dict"):
        TimedQuestion(wrong, evals, None, "eps", 0.5, QuestionClock(0.1, 1e-5, 1e-5), 0, 0)._placed(
            np.random.default_rng(0).random((1, 2)), 0.5)


def test_a_question_stops_by_the_wall_clock_and_says_so():
    """Tiers that claim a 0.1 ms training of a coin that takes 5 ms: the counts would buy 50 s, the wall clock stops
    the search at its share and the fresh trainings at the question's seconds (plus one chunk's last training)."""
    problem = coin_of("SlowCoin", 0.9, seconds=0.005)
    evals = evaluate(problem, sample(problem, 4, rng(5, "coin")), None, 1, 5, "initial", 0)
    clock = QuestionClock(1.0, 1e-4, 1e-5)
    answer, row = timed_answer(problem, evals, None, "eps", 0.5, clock, 5, 0)
    assert "stopped by the wall clock" in row["stopped"]
    assert row["search_trainings"] < 1.0 / 0.005     # not the 7,500 the counts allowed
    assert answer.point is not None and 0 < row["fresh_trainings"] < 1.0 / 0.005


def test_pinned_tiers_replay_a_question_bit_for_bit():
    problem = coin_problem(0.8)
    evals = evaluate(problem, sample(problem, 6, rng(6, "coin")), None, 3, 6, "initial", 0)
    rows = []
    for _ in range(2):
        clock = QuestionClock(2.0, 1e-3, 1e-4, pinned=True)   # tiers this machine meets: the counts decide
        rows.append(timed_answer(problem, evals, None, "utility", 0.5, clock, 8, 0)[1])
    for key in ("noise", "shape", "epsilon", "search_trainings", "search_points", "fresh_trainings"):
        assert rows[0][key] == rows[1][key], key
    assert rows[0]["trainings"] == rows[1]["trainings"]


def test_a_level_no_candidate_settles_is_answered_with_p_below_said_plainly():
    """Every point reaches 0.5 with P 0.5: no level settles; the answer is the likeliest candidate, and its row says
    its fresh P is below the level."""
    problem = coin_problem(0.5)
    evals = evaluate(problem, sample(problem, 6, rng(7, "coin")), None, 3, 7, "initial", 0)
    answer, row = timed_answer(problem, evals, None, "utility", 0.5, QuestionClock(0.3, 1e-5, 1e-5), 9, 0)
    assert answer.point is not None and not row["settled"] and row["below_level"]
    assert abs(answer.reach_probability - 0.5) < 0.05
    assert "likeliest" in row["search_note"]


def test_batch_sizes_are_powers_of_two_where_a_point_is_cheaper_than_a_proposal():
    assert batch_rounds.batch_size(None, 0.001) == 1                 # the first round: nothing measured
    assert batch_rounds.batch_size(0.2, 0.5) == 1                    # a dear training: one point a round
    assert batch_rounds.batch_size(0.2, 0.15) == 1                   # 1.3 points' worth: still one
    assert batch_rounds.batch_size(0.2, 0.05) == 2                   # half the proposal's 0.2 s: 2 points
    assert batch_rounds.batch_size(0.2, 0.01) == 8                   # 10 -> the power of two below
    assert batch_rounds.batch_size(0.5, 1e-6) == batch_rounds.BATCH_MOST == 256
    assert batch_rounds.batch_size(0.2, 0.05, chain_share=1.0) == 16  # the chain's seconds: 0.8 s to train


def test_a_batch_round_adds_perturbations_near_the_front_inside_the_domain():
    problem = coin_problem(0.5)
    evals = evaluate(problem, sample(problem, 6, rng(4, "coin")), None, 3, 4, "initial", 0)
    chosen = pd.DataFrame([{"noise": 1.0, "shape": 0.5, "steers": "front", "region_low": 0.1, "region_high": 10.0,
                            "proposal_seconds": 0.1, "batch_position": 0}])
    batch = batch_rounds.batch_round(problem, evals, chosen, 64, (("utility", 0.5),), 6, rng(5, "batch"))
    assert len(batch) == 64 and (batch["batch_size"] == 64).all()
    assert list(batch["point_index"]) == list(range(6, 70))
    assert batch["steers"].iloc[0] == "front" and (batch["steers"].iloc[1:] == "perturbation").all()
    assert batch["noise"].between(0.1, 10.0).all() and batch["shape"].between(0.0, 1.0).all()
    points = {tuple(np.round(p, 12)) for p in batch[problem.names].to_numpy(float)}
    assert len(points) == 64 and not points & {tuple(np.round(p, 12)) for p in evals[problem.names].to_numpy(float)}
    assert (batch["proposal_seconds"] == 0.1).all()


def test_the_gps_learn_from_a_batch_chains_front_first_and_an_untraced_chain_keeps_every_row():
    draw = np.random.default_rng(0)
    n = 600
    evals = pd.DataFrame({"epsilon": draw.random(n), "error": draw.random(n), "index": np.arange(n),
                          "trace_final": True, "batch_size": 64.0})
    kept = gp_rows(evals, 256)
    assert len(kept) == 256
    front = batch_rounds.pareto_mask(evals[["epsilon", "error"]].to_numpy())
    assert set(evals.index[front]) <= set(kept.index)
    assert len(gp_rows(evals.assign(batch_size=1.0), 256)) == n     # one point a round: every row, as before


def test_a_batch_rounds_perturbations_never_repeat_a_point_on_a_small_integer_domain():
    problem = resolve("coin-grid", {"oracle": str(REPO / "tests/user_problems/coin.py") + ":Coin", "delta": 0.0,
                                    "repeats": 1, "domain": {"noise": {"low": 1, "high": 3, "integer": True},
                                                             "shape": {"low": 0, "high": 2, "integer": True}}})
    evals = evaluate(problem, pd.DataFrame({"noise": [1, 3], "shape": [0, 2]}), None, 1, 0, "initial", 0)
    chosen = pd.DataFrame([{"noise": 2, "shape": 1, "steers": "front"}])
    batch = batch_rounds.batch_round(problem, evals, chosen, 7, (), 2, rng(6, "batch"))
    points = [tuple(p) for p in batch[problem.names].to_numpy(int)]
    assert len(points) == 7 and len(set(points)) == 7 and not {(1, 0), (3, 2)} & set(points)


def test_pinned_batch_sizes_replace_the_measured_ones(tmp_path):
    """A round given its batch size (a run's recorded `batch_size`: `seconds.batch_sizes`) proposes that many points
    and records that it was pinned; the first round, measured, trains one."""
    from dptradeoff.bo.chain_round import propose_round
    from dptradeoff.bo.propose import DPareto
    from dptradeoff.problems.tables import read_frame, write_frame

    definition = {"oracle": str(REPO / "tests/user_problems/coin.py") + ":Coin", "options": {"p": 0.7}, "delta": 0.0,
                  "repeats": 3, "domain": {"noise": {"low": 0.1, "high": 10.0, "log": True},
                                           "shape": {"low": 0.0, "high": 1.0}}}
    problem = resolve("coin", definition)
    write_frame(evaluate(problem, sample(problem, 6, rng(9, "coin")), None, 3, 9, "initial", 0),
                str(tmp_path / "initial.parquet"), {"problem": "coin"})
    settings = Settings(candidates=100, gp_restarts=1, privacy_model="exact", acquisition="hvpoi-region")
    for pinned, expected in ((None, 1), ([5], 5)):
        out = str(tmp_path / f"round-{expected}.parquet")
        propose_round(method=DPareto(settings), problem="coin", definition=definition,
                      initial=str(tmp_path / "initial.parquet"), evaluations=[], previous=None, output=out,
                      log=str(tmp_path / "round.log"), batch_size=1, seed=1, run=0, round_index=0,
                      pinned_batch_sizes=pinned)
        proposed = read_frame(out)
        assert len(proposed) == expected and (proposed["batch_size"] == expected).all()


def test_a_batch_rounds_centres_leave_the_fronts_flat_tail_but_its_start():
    """A front that stops moving at epsilon 1: its points beyond the first flat one are no centres."""
    epsilon = np.array([0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0])
    error = np.array([0.5, 0.3, 0.1, 0.02, 0.0010, 0.0009, 0.0008])
    assert batch_rounds.flat_tail(epsilon, error).tolist() == [False] * 5 + [True, True]
    assert not batch_rounds.flat_tail(epsilon[:4], error[:4]).any()      # a front still moving: every point
    problem = coin_problem(0.5)
    evals = pd.DataFrame({"noise": 1 / epsilon, "shape": 0.5, "epsilon": epsilon, "error": error, "utility": 1 - error,
                          "failure": None})
    chosen = pd.DataFrame([{"noise": 1.0, "shape": 0.2}])
    centres = batch_rounds.centres(problem, evals, chosen, (0.0, 100.0), ())
    assert sorted(np.round(1 / centres[:, 0], 6)) == sorted([0.01, 0.03, 0.1, 0.3, 1.0, 1.0])   # chosen at 1 too


def test_measuring_times_trainings_as_they_cost():
    """A coin of 5 ms a training measures about 5 ms (tiered up to 5.6 ms), whatever the seconds asked."""
    problem = coin_of("SlowCoin", 0.9, seconds=0.005)
    for seconds in (2.0, 10.0):
        clock = measure(problem, None, [{"noise": 1.0, "shape": 0.5}], seconds, 0)
        assert 0.005 <= clock.training <= 0.02, (seconds, clock.training)


def test_the_command_prints_an_interval_near_one_with_the_digits_that_tell_its_ends_apart():
    from dptradeoff.cli.front import interval_digits

    assert interval_digits(0.99991, 0.99995, 0.99998) == 6
    assert interval_digits(0.8, 0.85, 0.9) == 4 and interval_digits(0.9999, 0.9999) == 4
