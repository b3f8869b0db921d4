"""How far ONE training's utility lands from its point's mean: the replication noise of the utility GP's output,
pooled from the evaluated points' own replications (`utility_runs`). The answers' predictive intervals
(`bo.query`) and the utility query rounds (`bo.answer_rounds`) use it."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .gp import matern52
from .transforms import error_to_gp

PRIOR_DOF = 1.0                # degrees of freedom of each shrinkage stage of ReplicationNoise
LEVEL_BANDWIDTH = 0.1          # logit(error): how near in error a row's replications count (ReplicationNoise)
REACH_LEVEL = 0.9              # a utility answer: one new training reaches the target with this probability, at least


def single_runs(evals: pd.DataFrame) -> list[np.ndarray]:
    """Each row's single trainings as logit(error) (the utility GP's output space), from `utility_runs`;
    a table without them: each row's mean utility, as one run."""
    runs = evals["utility_runs"] if "utility_runs" in evals else [[u] for u in evals["utility"]]
    return [error_to_gp(1.0 - np.asarray(r, dtype=float)) for r in runs]


class ReplicationNoise:
    """The variance of ONE training's logit(error) about its point's mean, anywhere in the GP's input box,
    from the spread of the evaluated points' own replications (`utility_runs`).

    Each row's sample variance s_i^2 over its R_i trainings (R_i - 1 degrees of freedom) is pooled
    locally, in two stages each shrunk with `PRIOR_DOF` degrees of freedom towards the one before:
        level(x) = (sum_i l_i (R_i - 1) s_i^2 + PRIOR_DOF s_pool^2) / (sum_i l_i (R_i - 1) + PRIOR_DOF),
        s^2(x)   = (sum_i k_i l_i (R_i - 1) s_i^2 + PRIOR_DOF level(x)) / (sum_i k_i l_i (R_i - 1) + PRIOR_DOF),
    l_i = exp(-(m(x) - y_i)^2 / (2 LEVEL_BANDWIDTH^2)) with m(x) the GP's mean at x and y_i row i's
    logit(error): rows at the error the GP predicts at x; k_i = k(x, x_i), the utility GP's own Matern 5/2
    correlation: rows near x in hyperparameters; s_pool^2 the chain's pooled variance.
    Why local: the spread is strongly heteroscedastic and mostly a function of how good the training is
    (default adult chains, R = 3: logit sd ~0.015 at errors below 0.18, ~0.2 above 0.25, where a
    training sometimes diverges): one pooled value is several times too wide at a good answer and too
    narrow at a poor one. Predicting each row's s_i^2 from the other trainings' rows (Gaussian
    log-likelihood of its replications, summed over the three default adult chains, one stage shrunk
    to s_pool^2 unless said): pooled 2593, near in hyperparameters only 2521, at the error level only
    2984, both 3075, both in two stages (this) 3123. Why pooled at all: R = 3 gives a point's own
    variance 2 degrees of freedom (below a fifth of its mean one time in five). Why not R x the GP's
    noise variance: it is one value for the whole box, fitted to correlated trace rows (on the adult
    chains 0.4-0.9 x the pooled replication variance / R). With no row of >= 2 trainings, `fallback`
    (R x the GP's noise variance) everywhere."""

    def __init__(self, unit: np.ndarray, evals: pd.DataFrame, lengthscales: np.ndarray, fallback: float):
        runs = single_runs(evals)
        self.dof_of_rows = np.array([max(len(r) - 1, 0) for r in runs], dtype=float)
        self.s2 = np.array([r.var(ddof=1) if len(r) > 1 else 0.0 for r in runs])
        self.level = error_to_gp(evals["error"].to_numpy(float))
        # where one training's logit(error) is centred against the logit of its row's MEAN error, which the GP
        # fits: 0 for symmetric noise; for a skewed spread (a Laplace mechanism's |error| is exponential: the mean
        # of its logs is ~0.58 below the log of its mean) one training lands off the GP's mean
        self.gap = np.array([r.mean() - lv if len(r) > 1 else 0.0 for r, lv in zip(runs, self.level)])
        self.unit, self.lengthscales = np.asarray(unit, dtype=float), np.asarray(lengthscales, dtype=float)
        total = self.dof_of_rows.sum()
        self.pooled = float((self.dof_of_rows * self.s2).sum() / total) if total > 0 else float(fallback)
        self.pooled_gap = float((self.dof_of_rows * self.gap).sum() / total) if total > 0 else 0.0
        self.measured = total > 0

    def at(self, unit: np.ndarray, mean: np.ndarray, exclude: np.ndarray | None = None) -> np.ndarray:
        """s^2 at each of `unit` (the GP's input box) where the GP's mean logit(error) is `mean`, the rows
        where `exclude` is True left out."""
        return self.moments(unit, mean, exclude)[1]

    def dof(self, unit: np.ndarray, mean: np.ndarray) -> np.ndarray:
        """The degrees of freedom s^2 rests on at each of `unit`: its second stage's weights' sum plus PRIOR_DOF."""
        if not self.measured:
            return np.full(len(unit), PRIOR_DOF)
        return self._weights(unit, mean)[1].sum(axis=1) + PRIOR_DOF

    def _weights(self, unit: np.ndarray, mean: np.ndarray, exclude: np.ndarray | None = None):
        level = np.exp(-0.5 * ((np.asarray(mean, dtype=float)[:, None] - self.level[None, :]) / LEVEL_BANDWIDTH) ** 2)
        level *= self.dof_of_rows
        if exclude is not None:
            level[:, exclude] = 0.0
        return level, matern52(np.atleast_2d(unit), self.unit, self.lengthscales, 1.0) * level

    def moments(self, unit: np.ndarray, mean: np.ndarray, exclude: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(the centre offset, s^2) of one training's logit(error) at each of `unit`: both pooled in the same two
        stages (the class's formula; the offset of row i is the mean of its single trainings' logit(error) minus
        the logit of its mean error)."""
        if not self.measured:
            return np.zeros(len(unit)), np.full(len(unit), self.pooled)
        level, weights = self._weights(unit, mean, exclude)

        def pooled(values: np.ndarray, prior: float) -> np.ndarray:
            at_level = (level @ values + PRIOR_DOF * prior) / (level.sum(axis=1) + PRIOR_DOF)
            return (weights @ values + PRIOR_DOF * at_level) / (weights.sum(axis=1) + PRIOR_DOF)

        return pooled(self.gap, self.pooled_gap), pooled(self.s2, self.pooled)
