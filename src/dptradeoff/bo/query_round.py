"""The `query` rule's body: ask a finished chain's front (bo.query), settle the answer, then train the suggestion
R times with the problem's own oracles, so the prediction is checked against real trainings.

Settling (`settled_answer`): an answer resting on few trainings of its own point (one lucky training of R = 1,
three of a heavy-tailed point) has an interval the GP cannot make honest, because the GP fits the point's mean of
those trainings as if it were typical. So an answer with fewer than ANSWER_TRAININGS trainings of its own is
trained up to that many, the new trainings join its row of the chain (its mean, min, max and `utility_runs`), and
the question is asked again, at most SETTLE_ROUNDS times (the answer may move to another point, which is then
settled too). The trainings it took are the answer's `added_trainings`. On MNIST MLP2 (R = 1), a point the chain
measured at 0.176 whose 40 fresh trainings average 0.101 (sd 0.023) was an answer predicting 0.17-0.18."""
from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd

from ..problems.evaluate import evaluate, load_data, source_label
from ..problems.problem import Problem
from ..problems.tables import read_frame, succeeded
from .propose import Settings
from .query import ANSWER_TRAININGS, FrontQuery, query_rng, with_more_trainings
from .question_search import search_question
from .replication import REACH_LEVEL
from .support import best_evaluated
from .timed_questions import (CHEAP_TRAININGS, FRESH_SOURCE, QuestionClock, TimedQuestion, cost_tier, fresh_statement,
                              measure)

log = logging.getLogger(__name__)

SETTLE_ROUNDS = 4      # questions asked again after training an answer more, at most
DEAR_MARGIN = 3        # the chain's recorded cost of a training this many times a cheap one's: dear, not measured
CONTENDERS = 2         # a utility question's more private points meeting the target in mean, settled each round


def settled_answer(problem: Problem, evals: pd.DataFrame, data, kind: str, target: float, settings: Settings,
                   seed: int, run: int, search: bool = False):
    """(the answer, its FrontQuery, the trainings added): the question asked of `evals`, its answer trained to
    ANSWER_TRAININGS trainings of its own and the question asked again (the module's rule). A utility question
    also settles its CONTENDERS: the most private trained points more private than the answer whose measured mean
    meets the target, on fewer trainings: where they truly reach it, the answer moves to them."""
    method, added = f"query-{kind}{target:g}-settle", 0
    for attempt in range(SETTLE_ROUNDS + 1):
        last = attempt == SETTLE_ROUNDS   # the last question is over trained points only: the answer is one
        query = FrontQuery(problem, evals, data, settings, query_rng(seed, problem.name, kind, target, run))
        searching = search and not last
        answer = query.for_epsilon(target, searching) if kind == "eps" else query.for_utility(target, searching)
        if answer.point is None or last:
            return answer, query, added
        points = [answer.point] if len(answer.trainings) < ANSWER_TRAININGS else []
        if kind == "utility":
            points += contenders(query, target, answer.epsilon)
        if not points:
            return answer, query, added
        evals = query.evals
        for j, point in enumerate(points):
            trained = query.trainings_at(np.array([point[n] for n in problem.names], dtype=float))
            more = evaluate(problem, pd.DataFrame([point]), data, ANSWER_TRAININGS - len(trained), seed, method, run,
                            first_index=attempt * (1 + CONTENDERS) + j)
            runs = more["utility_runs"].iloc[0]
            if more["failure"].iloc[0] is not None or not len(runs):
                return answer, query, added
            log.info("%s %s: %s had %d trainings of its own; trained %d more", problem.name, answer.question,
                     "the answer" if j == 0 and point is answer.point else "a more private contender", len(trained),
                     len(runs))
            if trained:
                evals = with_more_trainings(evals, problem.names, point, runs)
            else:   # a point of the GP's search: its trainings join the chain as a row of their own
                evals = pd.concat([evals, more.reindex(columns=evals.columns)], ignore_index=True)
            added += len(runs)
    raise AssertionError("unreachable")


def contenders(query: FrontQuery, target: float, epsilon: float) -> list[dict]:
    """Up to CONTENDERS trained points more private than `epsilon` whose measured mean utility meets `target`, on
    fewer than ANSWER_TRAININGS trainings, the most private first."""
    evals, names = query.evals, query.problem.names
    rows = evals[(evals["utility"] >= target) & (evals["epsilon"] < epsilon)].sort_values("epsilon", kind="stable")
    out = []
    for _, row in rows.drop_duplicates(names).iterrows():
        if len(out) >= CONTENDERS:
            break
        point = row[names].to_numpy(float)
        if len(query.trainings_at(point)) < ANSWER_TRAININGS:
            out.append(query.as_dict(point))
    return out


def answer_and_train(problem: Problem, chain: str, kind: str, target: float, settings: Settings, repeats: int,
                     seed: int, run: int, search: bool = False, seconds: float | None = None) -> pd.DataFrame:
    """One row: the question, the suggestion with its exact epsilon, predicted utility and predictive
    interval for one training (interval_low, interval_high at interval_level: not a guarantee), the
    nearest and best evaluated points, and the suggestion's evaluation (utility, its replications,
    failure, and `runs_in_interval`: the share of those R single trainings inside the interval).
    With no feasible suggestion, the row has no hyperparameters and NaN utilities.

    A cheap oracle (`timed_questions.QuestionClock.cheap`: `seconds`, else `settings.question_seconds`, buy at least
    CHEAP_TRAININGS trainings) is answered by the clock (`timed_questions`): searched for those seconds, its P and
    interval stated by fresh trainings after the choice (`fresh_trainings`). A dear one by the count: the answer is a
    trained point of the chain or of the question's own search (`question_search`: its trainings `search_trainings`
    over `search_points` points, `search_note` where its budget ran out first), settled (`settled_answer`): its
    trainings in `trainings`, those the settling added counted in `added_trainings` (`search`: the GP's search of the
    whole domain too)."""
    data = load_data(problem)
    evals = read_frame(chain)
    clock = question_clock(problem, data, evals, seconds if seconds is not None else settings.question_seconds, seed)
    if clock is not None and clock.cheap:
        answer, row = timed_answer(problem, evals, data, kind, target, settings, clock, seed, run)
    else:
        evals, spent = search_question(problem, evals, data, kind, target, settings, seed, run,
                                       settings.question_trainings, repeats)
        answer, _, added = settled_answer(problem, evals, data, kind, target, settings, seed, run, search)
        row = {**answer.row(), "added_trainings": added, "search_trainings": spent.trainings,
               "search_points": spent.points, "search_note": spent.note, "fresh_trainings": 0,
               "budget": "count" if clock is None else f"count (a training costs more than {clock.seconds:g} s / "
                                                       f"{CHEAP_TRAININGS}: {clock.tier_text()})"}
    row["source_label"] = source_label(problem, data)
    log.info("%s %s: %s", problem.name, answer.question, row)
    if answer.point is None:
        return pd.DataFrame([{**row, "target": target, "utility": np.nan, "error": np.nan, "utility_min": np.nan,
                              "utility_max": np.nan, "runs_in_interval": np.nan, "repeats": repeats,
                              "failure": "no feasible suggestion"}])
    method = f"query-{kind}{target:g}"
    evaluated = evaluate(problem, pd.DataFrame([answer.point]), data, repeats, seed, method, run).iloc[0].to_dict()
    keep = {k: v for k, v in evaluated.items() if k not in row or k == "epsilon"}
    runs = np.asarray(evaluated["utility_runs"], dtype=float)
    keep["runs_in_interval"] = (float(np.mean((runs >= answer.interval_low) & (runs <= answer.interval_high)))
                                if len(runs) else np.nan)
    if kind == "utility":   # what the answer promises: one training reaches the target
        keep["runs_reaching_target"] = float(np.mean(runs >= target)) if len(runs) else np.nan
    if not np.isnan(evaluated["epsilon"]) and evaluated["epsilon"] != row["epsilon"]:
        raise AssertionError("the evaluation's epsilon differs from the query's: the privacy oracle is not deterministic")
    return pd.DataFrame([{**row, **keep, "target": target}])


def question_clock(problem: Problem, data, evals: pd.DataFrame, seconds: float | None, seed: int):
    """The question's clock (`timed_questions.measure`, on the chain's best points), None without seconds or where
    the oracle trains epochs (a traced oracle's training is dear: the count rules)."""
    ok = succeeded(evals)
    if not seconds or problem.oracle.trace_axis is not None or not len(ok):
        return None
    if "wall_seconds" in ok and "utility_runs" in ok:   # the chain's own trainings: a dear oracle is not measured again
        recorded = float(np.median(ok["wall_seconds"] / ok["utility_runs"].map(len).clip(lower=1)))
        if recorded * CHEAP_TRAININGS > DEAR_MARGIN * seconds:
            return QuestionClock(float(seconds), cost_tier(recorded), math.nan)
    best = ok.sort_values("utility", ascending=False, kind="stable").head(4)
    points = [problem.check(row[problem.names].to_dict()) for _, row in best.iterrows()]
    return measure(problem, data, points, seconds, seed)


def timed_answer(problem: Problem, evals: pd.DataFrame, data, kind: str, target: float, settings: Settings,
                 clock, seed: int, run: int):
    """(the answer, its row) of a question answered by the clock (`timed_questions`): the search's choice, stated by
    its fresh trainings (mean, the order-statistics interval, and for a utility question their share reaching the
    target as its probability)."""
    search = TimedQuestion(problem, evals, data, kind, target, clock, seed, run)
    found = search.run()
    query = FrontQuery(problem, evals, data, settings, query_rng(seed, problem.name, kind, target, run))
    question = f"epsilon <= {target:g}" if kind == "eps" else f"utility >= {target:g}"
    best = best_evaluated(query.evals, kind, target)
    extra = {"added_trainings": 0, "search_trainings": found.trainings, "search_points": found.candidates,
             "search_note": found.note, "budget": f"time: {clock.tier_text()}; spent {clock.units:.3g} s counted"}
    if found.point is None:
        answer = query._answer(question, None, best)
        return answer, {**answer.row(), **extra, "fresh_trainings": 0}
    point = np.array([found.point[n] for n in problem.names], dtype=float)
    answer = query._answer(question, point, best, reach_target=target if kind == "utility" else None)
    fresh = search.fresh(found.point)
    said = fresh_statement(fresh, kind, target)
    answer.predicted_utility, answer.predicted_sd, answer.single_sd = said["fresh_mean"], math.nan, said["fresh_sd"]
    answer.trainings = list(fresh)
    if said["interval"] is not None:
        answer.interval_low, answer.interval_high = said["interval"]
        answer.probability_source = FRESH_SOURCE.format(n=len(fresh))
    else:   # fewer than ORDER_LEAST: the GP's calibrated interval stays, P from the fresh share
        answer.probability_source = f"probability: {len(fresh)} fresh trainings' share; interval: {answer.probability_source}"
    if kind == "utility":
        answer.reach_probability, answer.reach_level = said["reach_probability"], REACH_LEVEL
        extra["reach_low"], extra["reach_high"] = said["reach_low"], said["reach_high"]
    log.info("%s %s: searched %d trainings over %d candidates (levels %s), then %d fresh trainings", problem.name,
             question, found.trainings, found.candidates, found.levels, len(fresh))
    return answer, {**answer.row(), **extra, "fresh_trainings": len(fresh)}
