"""The `query` rule's body: one answering rule for every declared question and `dptradeoff front --epsilon/--utility`,
whatever a training costs (`bo.timed_questions`): the question searched for its seconds, then stated by trainings made
after the choice; the rule then trains the answer R more times with the problem's own oracles (`repeats`), so the
statement is checked against trainings it never saw."""
from __future__ import annotations

import logging
import math
import time

import numpy as np
import pandas as pd

from ..problems.evaluate import evaluate, load_data, source_label
from ..problems.problem import Problem
from ..problems.tables import read_frame, succeeded
from .fresh_front import training_seconds
from .propose import Settings
from .replication import REACH_LEVEL
from .support import best_evaluated
from .timed_questions import (FEW_FRESH_SOURCE, FRESH_SOURCE, ORDER_LEAST, QuestionClock, TimedQuestion, fresh_statement,
                              measure)
from .query import EDGE, Answer
from .transforms import InputScaler

log = logging.getLogger(__name__)

DEAR_TRAINING = 0.1     # seconds: a training the chain recorded at this cost or more is not timed again (32 trainings)


def answer_and_train(problem: Problem, chain: str, kind: str, target: float, settings: Settings, repeats: int,
                     seed: int, run: int, seconds: float | None = None, tiers: dict | None = None,
                     stream: str | None = None) -> pd.DataFrame:
    """One row: the question, its answer with its exact epsilon, stated by fresh trainings after the choice (the
    mean, P for a utility question, the distribution-free interval for one training from ORDER_LEAST of them), what
    the search spent and the budget it had, then the answer retrained `repeats` times (`runs_in_interval`,
    `runs_reaching_target`: on trainings the statement never saw; 0: not retrained). With no answer, the row has no
    hyperparameters and NaN utilities.

    The budget: `seconds`, else the problem's or `settings.question_seconds`, and at least
    `settings.question_trainings` trainings of the measured cost (`timed_questions.measure`); `tiers` pins the
    measured costs (a replay of a run's recorded `tier_*` columns). `stream`: the seeds' stream where it is not the
    rule's own (`dptradeoff front --seconds` answers with trainings the rule never made)."""
    started = time.perf_counter()
    data = load_data(problem)
    evals = read_frame(chain)
    asked = seconds if seconds is not None else settings.question_seconds
    clock = question_clock(problem, data, evals, asked, seed, settings.question_trainings, tiers, started)
    answer, row = timed_answer(problem, evals, data, kind, target, clock, seed, run if stream is None else stream)
    row["source_label"] = source_label(problem, data)
    log.info("%s %s: %s", problem.name, answer.question, row)
    if answer.point is None:
        return pd.DataFrame([{**row, "target": target, "utility": np.nan, "error": np.nan, "utility_min": np.nan,
                              "utility_max": np.nan, "runs_in_interval": np.nan, "repeats": repeats,
                              "failure": "no feasible suggestion"}])
    if not repeats:
        return pd.DataFrame([{**row, "target": target, "repeats": 0}])
    method = f"query-{kind}{target:g}"
    evaluated = evaluate(problem, pd.DataFrame([answer.point]), data, repeats, seed, method, run).iloc[0].to_dict()
    keep = {k: v for k, v in evaluated.items() if k not in row or k == "epsilon"}
    runs = np.asarray(evaluated["utility_runs"], dtype=float)
    keep["runs_in_interval"] = (float(np.mean((runs >= answer.interval_low) & (runs <= answer.interval_high)))
                                if len(runs) and math.isfinite(answer.interval_low) else np.nan)
    if kind == "utility":   # what the answer promises: one training reaches the target
        keep["runs_reaching_target"] = float(np.mean(runs >= target)) if len(runs) else np.nan
    if not np.isnan(evaluated["epsilon"]) and evaluated["epsilon"] != row["epsilon"]:
        raise AssertionError("the evaluation's epsilon differs from the query's: the privacy oracle is not deterministic")
    return pd.DataFrame([{**row, **keep, "target": target}])


def question_clock(problem: Problem, data, evals: pd.DataFrame, seconds: float, seed: int, least_trainings: int,
                   tiers: dict | None = None, started: float | None = None) -> QuestionClock:
    """The question's clock (`timed_questions.measure`): a dear training's cost from the chain's records (trained
    again only to be timed, it would spend the question's seconds), a cheap one's measured on the chain's best points;
    `tiers` as given (a replay). Its wall clock runs from `started` (the rule's start: loading counts)."""
    ok = succeeded(evals)
    recorded = training_seconds(evals)   # the chain's records, as the restated front reads them
    if recorded is not None and recorded < DEAR_TRAINING:
        recorded = None   # cheap: measured now, on this machine, as the search will train
    if len(ok):
        best = ok.sort_values("utility", ascending=False, kind="stable").head(4)
        points = [problem.check(row[problem.names].to_dict()) for _, row in best.iterrows()]
    else:
        points = [problem.check(dict(zip(problem.names, InputScaler(problem).from_unit(np.full((1, len(problem.names)),
                                                                                               0.5))[0])))]
    clock = measure(problem, data, points, float(seconds), seed, recorded, least_trainings, tiers)
    if started is not None:
        clock.started = started
    return clock


def nearest_evaluated(problem: Problem, evals: pd.DataFrame, point: np.ndarray) -> dict:
    """The chain's evaluated point nearest `point` in the unit box, with its epsilon, mean utility and index."""
    if not len(evals):
        return {}
    scaler = InputScaler(problem)
    distances = np.linalg.norm(scaler.to_unit(evals[problem.names].to_numpy(float)) - scaler.to_unit(point[None, :]),
                               axis=1)
    near = evals.iloc[int(np.argmin(distances))]
    return {k: near[k] for k in [*problem.names, "epsilon", "utility", "index"] if k in near}


def at_bounds(problem: Problem, point: np.ndarray) -> str:
    """The hyperparameters of `point` within EDGE of a bound of the domain (in the unit box), "" : none. A wider
    domain may give a better answer there (whether the bound binds is not tested)."""
    unit = InputScaler(problem).to_unit(point[None, :])[0]
    parts = []
    for p, u, value in zip(problem.domain, unit, point):
        low, high = problem.bounds(p.name)
        if high <= low:
            continue
        if u <= EDGE or u >= 1 - EDGE:
            parts.append(f"{p.name} = {value:g} is at its {'lower' if u <= EDGE else 'upper'} bound "
                         f"{low if u <= EDGE else high:g}")
    return "; ".join(parts)


def timed_answer(problem: Problem, evals: pd.DataFrame, data, kind: str, target: float, clock: QuestionClock,
                 seed: int, run):
    """(the answer, its row) of a question answered by the rule (`timed_questions`): the search's choice, stated by
    its fresh trainings only (mean, the order-statistics interval from ORDER_LEAST, and for a utility question their
    share reaching the target as its P, "P below" the level said where it is)."""
    search = TimedQuestion(problem, evals, data, kind, target, clock, seed, run)
    found = search.run()
    question = f"epsilon <= {target:g}" if kind == "eps" else f"utility >= {target:g}"
    ok = succeeded(evals).reset_index(drop=True) if len(evals) else evals
    best = best_evaluated(ok, kind, target) if len(ok) else ok
    evaluated = {}
    if len(best):
        top = best.iloc[0]
        evaluated = {k: top[k] for k in [*problem.names, "epsilon", "utility", "n_trainings", "utility_se",
                                         "utility_supported", "index"] if k in top}
    extra = {"added_trainings": 0, "search_trainings": found.trainings, "search_points": found.candidates,
             "search_note": found.note, "budget": f"time: {clock.tier_text()}",
             **{f"tier_{k}": v for k, v in clock.tiers().items()}, "seconds": clock.seconds}
    if found.point is None:
        answer = Answer(question, None, best_evaluated=evaluated)
        extra["question_seconds"] = clock.elapsed()
        return answer, {**answer.row(), **extra, "fresh_trainings": 0, "stopped": clock.stopped}
    point = np.array([found.point[n] for n in problem.names], dtype=float)
    fresh = search.fresh(found.point)
    said = fresh_statement(fresh, kind, target)
    answer = Answer(question, found.point, found.epsilon, said["fresh_mean"], math.nan,
                    nearest_evaluated(problem, ok, point), evaluated, 0, math.nan, math.nan,
                    single_sd=said["fresh_sd"], trainings=list(fresh), edge=at_bounds(problem, point))
    if said["interval"] is not None:
        answer.interval_low, answer.interval_high = said["interval"]
        answer.probability_source = FRESH_SOURCE.format(n=len(fresh))
    else:   # fewer than ORDER_LEAST: no interval is stated
        answer.probability_source = FEW_FRESH_SOURCE.format(n=len(fresh))
        extra["search_note"] = "; ".join(filter(None, [found.note, f"the budget bought {len(fresh)} fresh trainings, "
                                                                   f"fewer than the {ORDER_LEAST} an interval needs"]))
    if kind == "utility":
        answer.reach_probability, answer.reach_level = said["reach_probability"], REACH_LEVEL
        extra["reach_low"], extra["reach_high"] = said["reach_low"], said["reach_high"]
        extra["below_level"] = bool(not said["reach_probability"] >= REACH_LEVEL)
        extra["settled"] = found.settled
    extra["question_seconds"] = clock.elapsed()
    log.info("%s %s: searched %d trainings over %d candidates (levels %s), then %d fresh trainings in %.3g s",
             problem.name, question, found.trainings, found.candidates, found.levels, len(fresh), clock.elapsed())
    return answer, {**answer.row(), **extra, "fresh_trainings": len(fresh), "stopped": clock.stopped}
