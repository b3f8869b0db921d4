"""The DPareto proposal step: fit both GPs to every evaluation so far, maximise HVPoI, return q points.

q = 1 is the paper's sequential algorithm. For q > 1 (batch proposals, beyond the paper) each
chosen point is added to both GPs as a fantasised observation at its predicted mean (the
"Kriging believer"), hyperparameters kept, and HVPoI is maximised again: the q points can then
be evaluated in parallel.

Acquisition maximisation (as in the original code): the best of N uniformly random candidates
in the unit cube, then L-BFGS-B from it; integer hyperparameters are rounded; a point equal to
one already evaluated or already in the batch is replaced by the next-best candidate.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize

from ..problems.registry import Problem
from . import gp
from .hvpoi import adaptive_reference, hvpoi
from .pareto import pareto_front
from .transforms import InputScaler, error_to_gp, objectives_from_gp, objectives_to_gp, privacy_to_gp

log = logging.getLogger(__name__)

# The paper's anti-ideal point (epsilon 10, error 1) in GP space; error 1 maps to logit(0.999).
FIXED_REFERENCE = np.array([float(privacy_to_gp(10.0)), float(error_to_gp(0.999))])
REFERENCES = ("fixed", "adaptive")


@dataclass(frozen=True)
class Settings:
    candidates: int = 5000
    gp_restarts: int = 3
    reference: str = "fixed"


@dataclass
class Surrogates:
    """The two fitted GPs (privacy, utility) over the unit cube, and how long fitting took."""
    privacy: gp.Posterior
    utility: gp.Posterior
    scaler: InputScaler
    fit_seconds: float

    def predict(self, unit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mp, vp = self.privacy.predict(unit)
        mu, vu = self.utility.predict(unit)
        return np.stack([mp, mu], axis=1), np.stack([vp, vu], axis=1)

    def condition(self, unit: np.ndarray) -> "Surrogates":
        mean, _ = self.predict(unit)
        return Surrogates(self.privacy.condition(unit, mean[:, 0]), self.utility.condition(unit, mean[:, 1]),
                          self.scaler, self.fit_seconds)


def fit_surrogates(problem: Problem, evals: pd.DataFrame, settings: Settings, rng: np.random.Generator) -> Surrogates:
    gp.backend()  # TensorFlow's import (seconds) is start-up, not fitting
    start = time.perf_counter()
    scaler = InputScaler(problem)
    x = scaler.to_unit(evals[problem.names].to_numpy(dtype=float))
    y = objectives_to_gp(evals["epsilon"].to_numpy(), evals["error"].to_numpy())
    fitter = gp.Fitter(x.shape[1])
    privacy = fitter.fit(x, y[:, 0], noiseless=True, restarts=settings.gp_restarts, rng=rng)
    utility = fitter.fit(x, y[:, 1], noiseless=False, restarts=settings.gp_restarts, rng=rng)
    return Surrogates(privacy, utility, scaler, time.perf_counter() - start)


def acquisition_function(surrogates: Surrogates, observed_unit: np.ndarray, settings: Settings):
    """HVPoI over the unit cube, with the front of the GP means at the observed inputs."""
    front_mean, _ = surrogates.predict(observed_unit)
    front = pareto_front(front_mean)
    reference = FIXED_REFERENCE if settings.reference == "fixed" else adaptive_reference(front)

    def acquisition(unit: np.ndarray) -> np.ndarray:
        mean, var = surrogates.predict(np.atleast_2d(unit))
        return hvpoi(mean, var, front, reference)

    return acquisition


def propose(problem: Problem, evals: pd.DataFrame, q: int, settings: Settings, rng: np.random.Generator) -> pd.DataFrame:
    """q new points (one row each) maximising HVPoI given every evaluation in `evals`."""
    if settings.reference not in REFERENCES:
        raise ValueError(f"reference must be one of {REFERENCES}")
    surrogates = fit_surrogates(problem, evals, settings, rng)
    start = time.perf_counter()
    scaler = surrogates.scaler
    observed = scaler.to_unit(evals[problem.names].to_numpy(dtype=float))
    taken = {tuple(np.round(p, 12)) for p in scaler.from_unit(observed)}
    rows = []
    for position in range(q):
        acquisition = acquisition_function(surrogates, observed, settings)
        candidates = rng.random((settings.candidates, observed.shape[1]))
        values = acquisition(candidates)
        order = np.argsort(-values)
        best = candidates[order[0]]
        result = optimize.minimize(lambda u: -float(acquisition(u)[0]), best, method="L-BFGS-B",
                                   bounds=[(0.0, 1.0)] * len(best), options={"maxiter": 100})
        tries = [result.x] + [candidates[i] for i in order]
        for unit in tries:
            point = scaler.from_unit(unit)
            key = tuple(np.round(point, 12))
            if key not in taken:
                break
        taken.add(key)
        unit = scaler.to_unit(point)  # the rounded point, as the GPs will see it
        mean, var = surrogates.predict(unit[None, :])
        eps, err = objectives_from_gp(mean)[0]
        rows.append({**{n: (int(v) if p.integer else float(v)) for n, v, p in zip(problem.names, point, problem.domain)},
                     "acquisition": float(acquisition(unit)[0]), "predicted_epsilon": float(eps),
                     "predicted_error": float(err), "batch_position": position})
        if position + 1 < q:
            surrogates = surrogates.condition(unit[None, :])
            observed = np.vstack([observed, unit])
    frame = pd.DataFrame(rows)
    frame["fit_seconds"] = surrogates.fit_seconds
    frame["acquisition_seconds"] = time.perf_counter() - start
    return frame
