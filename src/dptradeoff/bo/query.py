"""Asking a finished study's front for hyperparameters (paper 001 §5's open problem).

`for_epsilon(target)`: the hyperparameters that maximise the GP-predicted utility subject to the
*exact* privacy oracle's epsilon <= target; `for_utility(target)`: the smallest exact epsilon among
hyperparameters whose predicted utility is >= target. Privacy is always computed by the problem's
oracle, never predicted: a suggestion's epsilon is a guarantee (as far as the oracle is), its
utility a GP prediction until the `query` rule trains it.

The search uses the acquisition's exact-privacy machinery (`exact_privacy.for_problem`): the
candidates' epsilons in one vectorised pass (DP-SGD: the RDP table) to filter and rank them, the
privacy oracle's own epsilon for every point that can become the answer. `SEARCH_FACTOR` x
`candidates` random points of the GPs' input box (integers rounded), then local perturbations
around the answer at shrinking scales (`LOCAL_SCALES` of the box, `LOCAL_TRIES` each, repeated while
they improve it). Only the utility GP is fitted where an exact model exists (a full fit, as a chain
round's, to the chain's successful evaluations); otherwise the privacy GP's mean ranks candidates
and the oracle is called in rank order. One seed rule serves the `query` rule and `dptradeoff front`
(`query_rng`): the same question on the same chain gets the same answer.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..bo.pareto import pareto_mask
from ..problems.evaluate import epsilon as exact_epsilon, training_rows
from ..problems.oracle import Data
from ..problems.problem import Problem
from ..problems.tables import succeeded
from ..seeds import rng as derived_rng
from . import exact_privacy
from .propose import Settings, Surrogates, fit_surrogates
from .transforms import error_from_gp

SEARCH_FACTOR = 4
LOCAL_SCALES = (0.1, 0.03, 0.01, 0.003, 0.001)
LOCAL_TRIES = 500
LOCAL_REPEATS = 4              # per scale, while a repeat improves the answer
RANKING_MARGIN = 0.05          # a candidate whose ranking epsilon exceeds the target by more is not checked
EXACT_CHECKS = 64              # oracle calls per step of the search, at most


@dataclass
class Answer:
    question: str               # e.g. "epsilon <= 1"
    point: dict | None          # None: no candidate met the constraint
    epsilon: float = math.nan   # exact, from the problem's privacy oracle
    predicted_utility: float = math.nan
    predicted_sd: float = math.nan  # sd of a new measurement's utility by the GP (latent + observation noise)
    nearest: dict = field(default_factory=dict)         # the evaluated point nearest the suggestion
    best_evaluated: dict = field(default_factory=dict)  # the evaluated point that best meets the constraint
    exact_epsilons: int = 0     # how many times the privacy oracle ran

    def row(self) -> dict:
        """One flat row: the suggestion, then nearest_* and evaluated_* columns."""
        out = {"question": self.question, **(self.point or {}), "epsilon": self.epsilon,
               "predicted_utility": self.predicted_utility, "predicted_sd": self.predicted_sd,
               "exact_epsilons": self.exact_epsilons}
        out.update({f"nearest_{k}": v for k, v in self.nearest.items()})
        out.update({f"evaluated_{k}": v for k, v in self.best_evaluated.items()})
        return out


def utility_moments(mean: np.ndarray, var: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and sd of utility = 1 - error when the GP's latent logit(error) is N(mean, var)
    (Gauss-Hermite quadrature, 40 nodes)."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(40)
    weights = weights / weights.sum()
    latent = np.asarray(mean)[..., None] + np.sqrt(np.maximum(var, 0.0))[..., None] * nodes
    utility = 1.0 - error_from_gp(latent)
    first = (utility * weights).sum(-1)
    second = (utility**2 * weights).sum(-1)
    return first, np.sqrt(np.maximum(second - first**2, 0.0))


def front(problem: Problem, evals: pd.DataFrame) -> pd.DataFrame:
    """The evaluated points no other dominates in (epsilon, error), by increasing epsilon."""
    ok = succeeded(evals)
    mask = pareto_mask(ok[["epsilon", "error"]].to_numpy(float))
    columns = ["epsilon", "utility", "utility_min", "utility_max", *problem.names, "method", "index"]
    return ok[mask].sort_values("epsilon")[[c for c in columns if c in ok.columns]].reset_index(drop=True)


def query_rng(seed: int, problem: str, kind: str, target: float, run: int) -> np.random.Generator:
    """The Generator of a question (`kind` eps or utility, `target`) about run `run`'s chain."""
    return derived_rng(seed, problem, "query", kind, target, run)


class FrontQuery:
    """The GPs of one finished chain and the exact privacy oracle, ready for questions."""

    def __init__(self, problem: Problem, evals: pd.DataFrame, data: Data | None, settings: Settings,
                 rng: np.random.Generator):
        self.problem, self.data, self.settings, self.rng = problem, data, settings, rng
        self.evals = succeeded(evals).reset_index(drop=True)
        if len(self.evals) < 2:
            raise ValueError(f"{problem.name}: {len(self.evals)} successful evaluations; a GP needs at least 2")
        initial = int((self.evals["method"] != "dpareto").sum()) if "method" in self.evals else None
        n = training_rows(data)
        from .transforms import InputScaler

        sample = InputScaler(problem).from_unit(np.random.default_rng(0).random((16, len(problem.domain))))
        self.model = exact_privacy.for_problem(problem, n, settings.candidates, sample)
        self.surrogates: Surrogates = fit_surrogates(problem, self.evals, settings, rng, initial=initial or None,
                                                     fit_privacy=self.model is None)
        self.scaler = self.surrogates.scaler
        self.ranking = self.model or exact_privacy.GPMean(self.surrogates.privacy, self.scaler)
        self.observed = self.scaler.to_unit(self.evals[problem.names].to_numpy(float))
        self._epsilons: dict[tuple, float] = {}

    # -- pieces -------------------------------------------------------------------------------
    def _points(self, unit: np.ndarray) -> np.ndarray:
        return self.scaler.from_unit(unit)

    def _as_dict(self, point: np.ndarray) -> dict:
        return {p.name: (int(v) if p.integer else float(v)) for p, v in zip(self.problem.domain, point)}

    def epsilon(self, point: np.ndarray) -> float:
        """The privacy oracle's own epsilon (cached per point)."""
        key = tuple(np.round(point, 12))
        if key not in self._epsilons:
            self._epsilons[key] = exact_epsilon(self.problem, self._as_dict(point), training_rows(self.data))
        return self._epsilons[key]

    def predict(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The mean and sd of a new measurement's utility (the GP's latent uncertainty plus its learned
        observation noise: what a training of the point is compared with) at hyperparameter points."""
        mean, var = self.surrogates.utility.predict(self.scaler.to_unit(points))
        gp = self.surrogates.utility
        return utility_moments(mean, var + gp.y_std**2 * gp.noise)

    def _candidates(self) -> np.ndarray:
        box = self.scaler.upper - self.scaler.lower
        unit = self.scaler.lower + self.rng.random((SEARCH_FACTOR * self.settings.candidates, len(box))) * box
        return np.unique(self._points(unit), axis=0)

    def _around(self, point: np.ndarray, scale: float) -> np.ndarray:
        box = self.scaler.upper - self.scaler.lower
        unit = self.scaler.to_unit(point[None, :]) + self.rng.normal(0.0, scale, (LOCAL_TRIES, len(box))) * box
        return self._points(np.clip(unit, self.scaler.lower, self.scaler.upper))

    def _answer(self, question: str, point: np.ndarray | None, best_evaluated: pd.DataFrame) -> Answer:
        evaluated = {}
        if len(best_evaluated):
            row = best_evaluated.iloc[0]
            evaluated = {k: row[k] for k in [*self.problem.names, "epsilon", "utility", "index"]}
        if point is None:
            return Answer(question, None, best_evaluated=evaluated, exact_epsilons=len(self._epsilons))
        utility, sd = self.predict(point[None, :])
        distances = np.linalg.norm(self.observed - self.scaler.to_unit(point[None, :]), axis=1)
        near = self.evals.iloc[int(np.argmin(distances))]
        nearest = {k: near[k] for k in [*self.problem.names, "epsilon", "utility", "index"]}
        return Answer(question, self._as_dict(point), self.epsilon(point), float(utility[0]), float(sd[0]),
                      nearest, evaluated, len(self._epsilons))

    def _refine(self, best: np.ndarray, step) -> np.ndarray:
        """Local perturbations around `best` at each of LOCAL_SCALES, repeated while they improve it;
        `step(points, best)` returns the better point among `points` or None."""
        for scale in LOCAL_SCALES:
            for _ in range(LOCAL_REPEATS):
                better = step(self._around(best, scale), best)
                if better is None:
                    break
                best = better
        return best

    # -- questions ------------------------------------------------------------------------------
    def for_epsilon(self, target: float) -> Answer:
        """Maximise predicted utility subject to the exact epsilon <= target."""
        def best_feasible(points: np.ndarray, floor: float) -> np.ndarray | None:
            """The point of highest predicted utility above `floor` whose exact epsilon is <= target."""
            utility, _ = self.predict(points)
            order = np.argsort(-utility)
            order = order[utility[order] > floor]
            if self.model is not None:   # the ranking epsilons are the oracle's to within a few per cent
                order = order[self.ranking.ranking(points[order]) <= target * (1 + RANKING_MARGIN)]
            for i in order[:EXACT_CHECKS]:
                if self.epsilon(points[i]) <= target:
                    return points[i]
            return None

        best = best_feasible(self._candidates(), -np.inf)
        if best is not None:
            best = self._refine(best, lambda points, current: best_feasible(points, float(self.predict(current[None])[0][0])))
        evaluated = self.evals[self.evals["epsilon"] <= target].sort_values("utility", ascending=False)
        return self._answer(f"epsilon <= {target:g}", best, evaluated)

    def for_utility(self, target: float) -> Answer:
        """Minimise the exact epsilon subject to predicted utility >= target."""
        def most_private(points: np.ndarray, ceiling: float) -> np.ndarray | None:
            """The point of smallest exact epsilon below `ceiling` among those predicted to reach the target."""
            utility, _ = self.predict(points)
            feasible = np.flatnonzero(utility >= target)
            ranked = feasible[np.argsort(self.ranking.ranking(points[feasible]))][:EXACT_CHECKS]
            if not len(ranked):
                return None
            exact = np.array([self.epsilon(points[i]) for i in ranked])
            best = int(np.argmin(exact))
            return points[ranked[best]] if exact[best] < ceiling else None

        best = most_private(self._candidates(), np.inf)
        if best is not None:
            best = self._refine(best, lambda points, current: most_private(points, self.epsilon(current)))
        evaluated = self.evals[self.evals["utility"] >= target].sort_values("epsilon")
        return self._answer(f"utility >= {target:g}", best, evaluated)
