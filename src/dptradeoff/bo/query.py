"""Asking a finished study's front for hyperparameters (paper 001 §5's open problem).

`for_epsilon(target)`: the hyperparameters that maximise the GP-predicted utility subject to the
*exact* privacy oracle's epsilon <= target; `for_utility(target)`: the smallest exact epsilon among
hyperparameters whose predicted utility is >= target. Privacy is always computed by the problem's
oracle, never predicted: a suggestion's epsilon is a guarantee (as far as the oracle is), its
utility a GP prediction until the `query` rule trains it.

The search: `candidates` random points of the GPs' input box (as the acquisition search draws
them, integers rounded), ranked by the GPs, exact epsilons computed in rank order only as far as
the answer needs, then two rounds of local perturbations around the answer (scale 0.05 and 0.01
of the box). The GPs are fitted as a full chain round fits them (`fit_surrogates`) to the chain's
successful evaluations.
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
from .propose import Settings, Surrogates, fit_surrogates
from .transforms import error_from_gp

LOCAL_SCALES = (0.05, 0.01)
LOCAL_TRIES = 200
UTILITY_EXACT_EPSILONS = 200   # for_utility: exact epsilons of the most private-looking feasible candidates


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


class FrontQuery:
    """The GPs of one finished chain and the exact privacy oracle, ready for questions."""

    def __init__(self, problem: Problem, evals: pd.DataFrame, data: Data | None, settings: Settings,
                 rng: np.random.Generator):
        self.problem, self.data, self.settings, self.rng = problem, data, settings, rng
        self.evals = succeeded(evals).reset_index(drop=True)
        if len(self.evals) < 2:
            raise ValueError(f"{problem.name}: {len(self.evals)} successful evaluations; a GP needs at least 2")
        initial = int((self.evals["method"] != "dpareto").sum()) if "method" in self.evals else None
        self.surrogates: Surrogates = fit_surrogates(problem, self.evals, settings, rng, initial=initial or None)
        self.scaler = self.surrogates.scaler
        self.observed = self.scaler.to_unit(self.evals[problem.names].to_numpy(float))
        self._epsilons: dict[tuple, float] = {}

    # -- pieces -------------------------------------------------------------------------------
    def _points(self, unit: np.ndarray) -> np.ndarray:
        return self.scaler.from_unit(unit)

    def _as_dict(self, point: np.ndarray) -> dict:
        return {p.name: (int(v) if p.integer else float(v)) for p, v in zip(self.problem.domain, point)}

    def epsilon(self, point: np.ndarray) -> float:
        key = tuple(np.round(point, 12))
        if key not in self._epsilons:
            self._epsilons[key] = exact_epsilon(self.problem, self._as_dict(point), training_rows(self.data))
        return self._epsilons[key]

    def predict(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The mean and sd of a new measurement's utility (the GP's latent uncertainty plus its learned
        observation noise: what a training of the point is compared with), and the privacy GP's latent
        mean, at hyperparameter points."""
        mean, var = self.surrogates.predict(self.scaler.to_unit(points))
        gp = self.surrogates.utility
        utility, sd = utility_moments(mean[:, 1], var[:, 1] + gp.y_std**2 * gp.noise)
        return utility, sd, mean[:, 0]

    def _candidates(self) -> np.ndarray:
        box = self.scaler.upper - self.scaler.lower
        unit = self.scaler.lower + self.rng.random((self.settings.candidates, len(box))) * box
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
        utility, sd, _ = self.predict(point[None, :])
        distances = np.linalg.norm(self.observed - self.scaler.to_unit(point[None, :]), axis=1)
        near = self.evals.iloc[int(np.argmin(distances))]
        nearest = {k: near[k] for k in [*self.problem.names, "epsilon", "utility", "index"]}
        return Answer(question, self._as_dict(point), self.epsilon(point), float(utility[0]), float(sd[0]),
                      nearest, evaluated, len(self._epsilons))

    # -- questions ------------------------------------------------------------------------------
    def for_epsilon(self, target: float) -> Answer:
        """Maximise predicted utility subject to the exact epsilon <= target."""
        candidates = self._candidates()
        utility, _, _ = self.predict(candidates)
        best, best_utility = None, -np.inf
        for i in np.argsort(-utility):            # the first feasible one in this order is the best candidate
            if self.epsilon(candidates[i]) <= target:
                best, best_utility = candidates[i], utility[i]
                break
        if best is not None:
            for scale in LOCAL_SCALES:
                nearby = self._around(best, scale)
                predicted, _, _ = self.predict(nearby)
                for i in np.argsort(-predicted):
                    if predicted[i] <= best_utility:
                        break
                    if self.epsilon(nearby[i]) <= target:
                        best, best_utility = nearby[i], predicted[i]
                        break
        evaluated = self.evals[self.evals["epsilon"] <= target].sort_values("utility", ascending=False)
        return self._answer(f"epsilon <= {target:g}", best, evaluated)

    def for_utility(self, target: float) -> Answer:
        """Minimise the exact epsilon subject to predicted utility >= target."""
        def most_private(points: np.ndarray, best, best_eps):
            utility, _, latent_privacy = self.predict(points)
            feasible = np.flatnonzero(utility >= target)
            for i in feasible[np.argsort(latent_privacy[feasible])][:UTILITY_EXACT_EPSILONS]:
                eps = self.epsilon(points[i])
                if eps < best_eps:
                    best, best_eps = points[i], eps
            return best, best_eps

        best, best_eps = most_private(self._candidates(), None, np.inf)
        if best is not None:
            for scale in LOCAL_SCALES:
                best, best_eps = most_private(self._around(best, scale), best, best_eps)
        evaluated = self.evals[self.evals["utility"] >= target].sort_values("epsilon")
        return self._answer(f"utility >= {target:g}", best, evaluated)
