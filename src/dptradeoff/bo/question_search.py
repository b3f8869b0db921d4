"""A search for each declared question, after the chain and before its answer is settled (the `query` rule).

The chain spends its rounds on the whole front (a quarter of them steered towards the questions:
`bo.answer_rounds`), so a question's answer may rest on no training near where it must be. Epsilon is known
exactly before a training, so each question gets a search of its own, over candidates restricted to where its
answer must lie, of at most `budget` trainings (`dpareto.question_trainings`), each step training one candidate
R times (the problem's `repeats`, fewer when the budget has fewer left):

- epsilon <= E: the candidates of exact epsilon in [E / NEAR_BUDGET, E] (`query.NEAR_BUDGET`), random and around the
  answer and the best measured trained points; each step trains the untrained one of best lower confidence bound of
  utility (the GP's mean of R trainings minus z_0.9 its sd: a point the GP is sure is good) and asks again, until the
  budget is spent (measured: stopping when the answer did not move left the seeds where the first pick missed with
  5 of 8 trainings unspent).
- utility >= U: a bisection on an epsilon level, between `lo` (the most private level not yet shown to reach U) and
  `hi` (the epsilon of a trained point that reaches U with probability >= 0.9, its own trainings' where it has
  them: `FrontQuery.point_reach`); it starts at hi = the current answer's epsilon, lo = hi / LEVEL_SPAN. Each step
  tries level sqrt(lo hi): among candidates of exact epsilon in (lo, level], it trains the one the GP finds
  likeliest to reach U; where its trainings establish the probability, hi becomes its epsilon, else lo the level.
  It stops when hi / lo < LEVEL_STOP or the budget is spent (then said, with the level it reached).

What it trained joins the chain's evaluations for the settling (`query_round.settled_answer`) and the answer; the
`query` rule's row counts its trainings (`search_trainings`) and says when the budget ran out first (`search_note`).
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from ..problems.evaluate import evaluate
from ..problems.problem import Problem
from ..seeds import rng as derived_rng
from .propose import Settings
from .query import (ANSWER_TRAININGS, EXACT_CHECKS, NEAR_BUDGET, RANKING_MARGIN, FrontQuery, query_rng, rows_at,
                    with_more_trainings)
from .replication import REACH_LEVEL

log = logging.getLogger(__name__)

LEVEL_SPAN = 16.0    # a utility question's bisection starts between the answer's epsilon / this and the answer's
LEVEL_STOP = 1.25    # it stops when its bracket is narrower than this factor
LEVEL_BAND = 2.0     # a level is tried with candidates of epsilon in [level / LEVEL_BAND, level]: near it, where its
                     # privacy buys the most utility
LOCAL_SCALES = (0.1, 0.03)   # candidates also around the trained points that matter (shares of the GPs' box)
EXACT_SEARCH = 256   # oracle epsilons per step where the ranking is not exact (`_in_range`)
AROUND = 8           # candidates are also around this many trained points of best measured utility


@dataclass
class Search:
    """What a question's search spent and found: its trainings, the points it trained, and a sentence where the
    budget ran out before the search was done ("" : it finished)."""
    trainings: int = 0
    points: int = 0
    note: str = ""


def _add(evals: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    return pd.concat([evals, new.reindex(columns=evals.columns)], ignore_index=True)


class QuestionSearch:
    """One question's search (the module's rules) over a chain's evaluations."""

    def __init__(self, problem: Problem, evals: pd.DataFrame, data, kind: str, target: float, settings: Settings,
                 seed: int, run: int, budget: int, repeats: int):
        self.problem, self.evals, self.data, self.kind, self.target = problem, evals, data, kind, float(target)
        self.settings, self.seed, self.run_index, self.budget = settings, seed, run, int(budget)
        self.repeats = max(1, int(repeats))
        self.spent = Search()
        self.method = f"query-{kind}{target:g}-search"

    # -- pieces -------------------------------------------------------------------------------
    def _query(self) -> FrontQuery:
        return FrontQuery(self.problem, self.evals, self.data, self.settings,
                          query_rng(self.seed, self.problem.name, self.kind, self.target, self.run_index))

    def _candidates(self, query: FrontQuery, around: list[np.ndarray]) -> np.ndarray:
        """Random points of the GPs' box and perturbations of `around`, none already trained."""
        rng = derived_rng(self.seed, self.problem.name, "question-search", self.kind, self.target, self.run_index,
                          self.spent.points)
        box = query.scaler.upper - query.scaler.lower
        unit = [query.scaler.lower + rng.random((query.settings.candidates, len(box))) * box]
        for point in around:
            for scale in LOCAL_SCALES:
                near = query.scaler.to_unit(point[None, :]) + rng.normal(0.0, scale, (256, len(box))) * box
                unit.append(np.clip(near, query.scaler.lower, query.scaler.upper))
        points = np.unique(query.scaler.from_unit(np.concatenate(unit)), axis=0)
        taken = {tuple(np.round(p, 12)) for p in query.evals[self.problem.names].to_numpy(float)}
        return points[np.array([tuple(np.round(p, 12)) not in taken for p in points], dtype=bool)]

    def _in_range(self, query: FrontQuery, points: np.ndarray, low: float, high: float) -> np.ndarray:
        """The points whose epsilon lies in [low, high]: by the ranking where it is exact (to RANKING_MARGIN), else
        by the oracle's own epsilon for the EXACT_SEARCH points the ranking (a privacy GP, or WBK19's bound under the
        tight accountant) puts nearest the range in ln epsilon. Measured: checking only the GP's first 64 found no
        point in range on most seeds of a 1 ms oracle, and the question went unsearched."""
        ranked = np.asarray(query.ranking.ranking(points), dtype=float)
        if query.ranking.ranking_is_exact:
            return points[(ranked <= high * (1 + RANKING_MARGIN)) & (ranked >= low * (1 - RANKING_MARGIN))]
        with np.errstate(divide="ignore", invalid="ignore"):
            distance = np.abs(np.log(np.maximum(ranked, 1e-300)) - 0.5 * np.log(max(low, 1e-300) * high))
        nearest = np.argsort(np.nan_to_num(distance, nan=np.inf))[:EXACT_SEARCH]
        exact = np.array([query.epsilon(points[i]) for i in nearest])
        return points[nearest[(exact >= low) & (exact <= high)]]

    def _first_exact(self, query: FrontQuery, points: np.ndarray, order: np.ndarray, low: float,
                     high: float) -> np.ndarray | None:
        """The first of `points` in `order` whose exact epsilon lies in [low, high] (EXACT_CHECKS oracle calls)."""
        for i in order[:EXACT_CHECKS]:
            if low <= query.epsilon(points[i]) <= high:
                return points[i]
        return None

    def _train(self, point: np.ndarray) -> bool:
        """Train `point` R times (fewer where the budget has fewer left) into the evaluations; False: it failed."""
        count = min(self.repeats, self.budget - self.spent.trainings)
        frame = pd.DataFrame([{p.name: (int(v) if p.integer else float(v)) for p, v in zip(self.problem.domain, point)}])
        new = evaluate(self.problem, frame, self.data, count, self.seed, self.method, self.run_index,
                       first_index=self.spent.points)
        self.spent.trainings += count
        self.spent.points += 1
        if new["failure"].iloc[0] is not None or not len(new["utility_runs"].iloc[0]):
            return False
        if rows_at(self.evals, self.problem.names, point).any():   # a trained point: its row gets the trainings
            self.evals = with_more_trainings(self.evals, self.problem.names, frame.iloc[0].to_dict(),
                                             new["utility_runs"].iloc[0])
        else:
            self.evals = _add(self.evals, new)
        return True

    def _best_measured(self, query: FrontQuery, ceiling: float) -> list[np.ndarray]:
        """The AROUND trained points of best measured utility with epsilon <= `ceiling`: a point a little beyond an
        epsilon budget moves inside it with a little more noise, and where the GP is flat what was measured is the
        best guide to where good points are."""
        trained, epsilons = query._trained()
        within = np.flatnonzero(epsilons <= ceiling)
        means = np.array([query.measured(trained[i]) for i in within])
        return list(trained[within[np.argsort(-means)[:AROUND]]])

    # -- the two searches ---------------------------------------------------------------------
    def run_epsilon(self) -> None:
        low = self.target / NEAR_BUDGET
        z = stats.norm.ppf(REACH_LEVEL)
        moved = False
        while self.spent.trainings < self.budget:
            query = self._query()
            answer = query.for_epsilon(self.target)
            around = [np.array([answer.point[n] for n in self.problem.names], dtype=float)] if answer.point else []
            around += self._best_measured(query, NEAR_BUDGET * self.target)
            points = self._in_range(query, self._candidates(query, around), low, self.target)
            if not len(points):
                self.spent.note = f"no untrained candidate of epsilon in [{low:.3g}, {self.target:.3g}] was found"
                return
            mean, sd = query.predict(points)
            chosen = self._first_exact(query, points, np.argsort(-(mean - z * sd)), low, self.target)
            if chosen is None:
                self.spent.note = f"no candidate checked had an exact epsilon in [{low:.3g}, {self.target:.3g}]"
                return
            if not self._train(chosen):
                return
            again = self._query().for_epsilon(self.target)
            moved = again.point is not None and np.allclose([again.point[n] for n in self.problem.names], chosen)
            log.info("%s epsilon <= %g: trained %s (epsilon %.3g)%s", self.problem.name, self.target,
                     query.as_dict(chosen), query.epsilon(chosen), ": the answer moved there" if moved else "")
        if moved:
            self.spent.note = (f"the budget of {self.budget} trainings ran out while the answer was still moving to the "
                               f"points it trained")

    def run_utility(self) -> None:
        query = self._query()
        answer = query.for_utility(self.target)
        reached = answer.point is not None and answer.reach_probability >= REACH_LEVEL
        hi = answer.epsilon if reached else math.inf
        lo = hi / LEVEL_SPAN if reached else 0.0
        while self.spent.trainings < self.budget:
            if math.isfinite(hi) and hi / max(lo, 1e-300) < LEVEL_STOP:
                return
            level = math.sqrt(lo * hi) if math.isfinite(hi) and lo > 0 else hi
            around = self._best_measured(query, level)
            floor = max(lo, level / LEVEL_BAND) if math.isfinite(level) else lo
            points = self._in_range(query, self._candidates(query, around), floor, level)
            if not len(points):
                self.spent.note = f"no untrained candidate of epsilon in ({lo:.3g}, {level:.3g}] was found"
                return
            probability = query.reach_probability(points, self.target)
            ranking = np.asarray(query.ranking.ranking(points), dtype=float)
            # the trained points in the band that their trainings have not yet settled compete by their own
            # trainings' probability (`point_reach`): where the GP is flat, what a point measured says most
            trained, epsilons = query._trained()
            unsettled = [i for i in np.flatnonzero((epsilons > floor) & (epsilons <= level))
                         if len(query.trainings_at(trained[i])) < ANSWER_TRAININGS]
            if unsettled:
                points = np.concatenate([points, trained[unsettled]])
                probability = np.concatenate([probability, [query.point_reach(trained[i], self.target)[0]
                                                            for i in unsettled]])
                ranking = np.concatenate([ranking, epsilons[unsettled]])
            chosen = self._first_exact(query, points, np.lexsort((ranking, -probability)), floor, level)
            if chosen is None:
                self.spent.note = f"no candidate checked had an exact epsilon in ({lo:.3g}, {level:.3g}]"
                return
            if not self._train(chosen):
                return
            query = self._query()
            reach, source = query.point_reach(chosen, self.target)
            log.info("%s utility >= %g: level %.3g, trained %s (epsilon %.3g): P %.2f from %s", self.problem.name,
                     self.target, level, query.as_dict(chosen), query.epsilon(chosen), reach, source)
            if reach >= REACH_LEVEL:
                if not math.isfinite(hi):
                    lo = query.epsilon(chosen) / LEVEL_SPAN
                hi = query.epsilon(chosen)
            elif math.isfinite(hi):
                lo = level
        if not math.isfinite(hi):
            self.spent.note = (f"the budget of {self.budget} trainings ran out before any point reached {self.target:g} "
                               f"with probability {REACH_LEVEL:g}")
        elif hi / max(lo, 1e-300) >= LEVEL_STOP:
            self.spent.note = (f"the budget of {self.budget} trainings ran out before the level was reached: the least "
                               f"epsilon reaching {self.target:g} at P {REACH_LEVEL:g} lies between {lo:.3g} and "
                               f"{hi:.3g} as far as the search went")

    def run(self) -> tuple[pd.DataFrame, Search]:
        if self.budget > 0:
            (self.run_epsilon if self.kind == "eps" else self.run_utility)()
        return self.evals, self.spent


def search_question(problem: Problem, evals: pd.DataFrame, data, kind: str, target: float, settings: Settings,
                    seed: int, run: int, budget: int, repeats: int) -> tuple[pd.DataFrame, Search]:
    """`evals` with the trainings of the question's search added, and what the search spent (the module's rules)."""
    return QuestionSearch(problem, evals, data, kind, target, settings, seed, run, budget, repeats).run()
