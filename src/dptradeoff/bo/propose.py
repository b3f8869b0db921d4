"""The DPareto proposal step: fit both GPs to every evaluation so far, maximise HVPoI, return q points.

q = 1 is the paper's sequential algorithm. For q > 1 (batch proposals, beyond the paper) each
chosen point is added to both GPs as a fantasised observation at its predicted mean (the
"Kriging believer"), hyperparameters kept, and HVPoI is maximised again: the q points can then
be evaluated in parallel.

Acquisition maximisation (as in the original code): the best of N uniformly random candidates
in the GPs' input box (`dpareto.inputs`, see transforms), then L-BFGS-B from it; integer
hyperparameters are rounded; a point equal to one already evaluated or already in the batch is
replaced by the next-best candidate.

GP hyperparameters (ML-II): every `Settings.refit_every`-th round (and whenever no previous
round's hyperparameters are given) both GPs are fitted with `gp_restarts` starts, the first
from the previous round's hyperparameters as GPflowOpt did; in the rounds between, one
L-BFGS-B run refines the previous round's hyperparameters, which one new observation moves
little (~15 likelihood evaluations instead of ~400), and stops at a looser relative tolerance
(`REFINEMENT_TOLERANCE`). refit_every = 1 is the paper's behaviour.
The hyperparameters a round ends with are returned (`GPState`) for the next round.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize

from ..problems.problem import Problem
from . import gp
from .hvpoi import adaptive_reference, added_hypervolume, improvement_probability
from .pareto import nondominated_cells, pareto_front
from .transforms import (INPUTS, InitialMaxScaler, InputScaler, error_to_gp, input_scaler, objectives_from_gp,
                         objectives_to_gp, privacy_to_gp)

log = logging.getLogger(__name__)

# The paper's anti-ideal point (epsilon 10, error 1) in GP space; error 1 maps to logit(0.999).
FIXED_REFERENCE = np.array([float(privacy_to_gp(10.0)), float(error_to_gp(0.999))])
REFERENCES = ("fixed", "adaptive")
# A refinement stops when an L-BFGS-B iteration lowers the negative log marginal likelihood by less
# than this fraction of it (~1e-5 nats at the 100-600 nats of 256 points; scipy's default, 2.2e-9,
# which full refits keep): half the likelihood evaluations of a refinement round (29 -> 14, median
# over 14 rounds at 256 points), hyperparameters equal to within a likelihood ratio of 1.0001.
REFINEMENT_TOLERANCE = 1e-7


@dataclass(frozen=True)
class Settings:
    candidates: int = 5000
    gp_restarts: int = 3
    reference: str = "adaptive"  # GPflowOpt's, which the published runs used (README: fixed vs adaptive)
    refit_every: int = 1       # rounds between full ML-II restarts (1: every round, as the paper)
    inputs: str = "log-unit-cube"  # the GPs' input geometry (transforms.INPUTS)

    @classmethod
    def from_config(cls, dpareto: dict) -> "Settings":
        """The settings of the config's `dpareto` section."""
        return cls(candidates=dpareto["candidates"], gp_restarts=dpareto["gp_restarts"], reference=dpareto["reference"],
                   refit_every=dpareto["gp_refit_every"], inputs=dpareto["inputs"])

    def full_refit(self, round_index: int) -> bool:
        return round_index % self.refit_every == 0


@dataclass(frozen=True)
class GPState:
    """The hyperparameters both GPs ended a round with: where the next round's ML-II starts."""
    privacy: gp.Hyperparameters
    utility: gp.Hyperparameters

    def as_dict(self) -> dict:
        return {"privacy": self.privacy.as_dict(), "utility": self.utility.as_dict()}

    @classmethod
    def from_dict(cls, values: dict) -> "GPState":
        return cls(gp.Hyperparameters.from_dict(values["privacy"]), gp.Hyperparameters.from_dict(values["utility"]))


@dataclass
class Proposal:
    points: pd.DataFrame       # q rows: the hyperparameters, predictions, acquisition value, timings
    gp_state: GPState


@dataclass
class Surrogates:
    """The two fitted GPs (privacy, utility) over the scaler's input box, and how long fitting took."""
    privacy: gp.Posterior
    utility: gp.Posterior
    scaler: InputScaler | InitialMaxScaler
    fit_seconds: float

    @property
    def state(self) -> GPState:
        return GPState(self.privacy.hyperparameters, self.utility.hyperparameters)

    def predict(self, unit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mp, vp = self.privacy.predict(unit)
        mu, vu = self.utility.predict(unit)
        return np.stack([mp, mu], axis=1), np.stack([vp, vu], axis=1)

    def condition(self, unit: np.ndarray) -> "Surrogates":
        mean, _ = self.predict(unit)
        return Surrogates(self.privacy.condition(unit, mean[:, 0]), self.utility.condition(unit, mean[:, 1]),
                          self.scaler, self.fit_seconds)


def fit_surrogates(problem: Problem, evals: pd.DataFrame, settings: Settings, rng: np.random.Generator,
                   previous: GPState | None = None, round_index: int = 0, initial: int | None = None) -> Surrogates:
    """Both GPs fitted to `evals`: full restarts, or (between full refits) one run from `previous`.
    The first `initial` rows of `evals` (all when None) are the initial points."""
    fitter = gp.fitter(len(problem.domain))  # TensorFlow's import and tracing (seconds, once) are not fitting
    start = time.perf_counter()
    raw = evals[problem.names].to_numpy(dtype=float)
    scaler = input_scaler(problem, settings.inputs, raw[:initial])
    x = scaler.to_unit(raw)
    y = objectives_to_gp(evals["epsilon"].to_numpy(), evals["error"].to_numpy())
    full = previous is None or settings.full_refit(round_index)

    def fit(values, noiseless, start):
        if not full:
            try:
                return fitter.fit(x, values, noiseless=noiseless, restarts=1, rng=rng, start=start,
                                  tolerance=REFINEMENT_TOLERANCE)
            except RuntimeError:   # the likelihood is not finite anywhere L-BFGS-B went from the warm start
                log.warning("round %d: refining the %s GP from the previous round's hyperparameters found no finite "
                            "likelihood; fitting it with %d starts instead", round_index,
                            "privacy" if noiseless else "utility", settings.gp_restarts)
        return fitter.fit(x, values, noiseless=noiseless, restarts=settings.gp_restarts, rng=rng, start=start)

    privacy = fit(y[:, 0], True, previous and previous.privacy)
    utility = fit(y[:, 1], False, previous and previous.utility)
    return Surrogates(privacy, utility, scaler, time.perf_counter() - start)


def acquisition_function(surrogates: Surrogates, observed_unit: np.ndarray, settings: Settings):
    """HVPoI over the input box, with the front of the GP means at the observed inputs."""
    front_mean, _ = surrogates.predict(observed_unit)
    front = pareto_front(front_mean)
    reference = FIXED_REFERENCE if settings.reference == "fixed" else adaptive_reference(front)
    lower, upper = nondominated_cells(front, reference)

    posteriors = (surrogates.privacy, surrogates.utility)

    def acquisition(unit: np.ndarray) -> np.ndarray:
        kernels = [posterior.cross_kernel(unit) for posterior in posteriors]
        mean = np.stack([posterior.mean_from(k) for posterior, k in zip(posteriors, kernels)], axis=1)
        gain = added_hypervolume(mean, lower, upper)
        out = np.zeros(len(mean))
        useful = gain > 0     # HVPoI = dHV(mean) * PoI: variances only where dHV > 0
        if useful.any():
            var = np.stack([posterior.variance_from(k[useful]) for posterior, k in zip(posteriors, kernels)], axis=1)
            out[useful] = gain[useful] * improvement_probability(mean[useful], var, lower, upper)
        return out

    return acquisition


FD_STEP = np.sqrt(np.finfo(float).eps)   # scipy's forward-difference step


def negative_with_gradient(acquisition, unit: np.ndarray, upper: np.ndarray) -> tuple[float, np.ndarray]:
    """-acquisition and its forward-difference gradient, the d + 1 points in one vectorised call
    (L-BFGS-B's own finite differences would make d + 1 calls); steps point into the box below `upper`."""
    step = FD_STEP * np.maximum(1.0, np.abs(unit))
    step = np.where(unit + step <= upper, step, -step)
    values = acquisition(np.vstack([unit, unit + np.diag(step)]))
    return -float(values[0]), -(values[1:] - values[0]) / step


def propose(problem: Problem, evals: pd.DataFrame, q: int, settings: Settings, rng: np.random.Generator,
            previous: GPState | None = None, round_index: int = 0, initial: int | None = None) -> Proposal:
    """q new points maximising HVPoI given every evaluation in `evals`; `previous` is the GP state
    of the round before (None in the first round), `round_index` decides a full refit; the first
    `initial` rows of `evals` (all when None) are the initial points."""
    if settings.reference not in REFERENCES:
        raise ValueError(f"reference must be one of {REFERENCES}")
    if settings.inputs not in INPUTS:
        raise ValueError(f"inputs must be one of {INPUTS}")
    surrogates = fit_surrogates(problem, evals, settings, rng, previous, round_index, initial)
    return Proposal(choose(problem, surrogates, evals, q, settings, rng), surrogates.state)


def choose(problem: Problem, surrogates: Surrogates, evals: pd.DataFrame, q: int, settings: Settings,
           rng: np.random.Generator) -> pd.DataFrame:
    """The q points maximising HVPoI under fitted `surrogates` (one row each, with predictions)."""
    start = time.perf_counter()
    scaler = surrogates.scaler
    box = scaler.upper - scaler.lower
    observed = scaler.to_unit(evals[problem.names].to_numpy(dtype=float))
    taken = {tuple(np.round(p, 12)) for p in scaler.from_unit(observed)}
    rows = []
    for position in range(q):
        acquisition = acquisition_function(surrogates, observed, settings)
        candidates = scaler.lower + rng.random((settings.candidates, observed.shape[1])) * box
        values = acquisition(candidates)
        order = np.argsort(-values)
        best = candidates[order[0]]
        result = optimize.minimize(lambda u: negative_with_gradient(acquisition, u, scaler.upper), best, jac=True,
                                   method="L-BFGS-B", bounds=list(zip(scaler.lower, scaler.upper)), options={"maxiter": 100})
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
    # jitter the kernel matrices needed to factorise (0: none; gp.robust_cholesky)
    frame["privacy_jitter"], frame["utility_jitter"] = surrogates.privacy.jitter, surrogates.utility.jitter
    frame["fit_seconds"] = surrogates.fit_seconds
    frame["acquisition_seconds"] = time.perf_counter() - start
    frame["proposal_seconds"] = frame["fit_seconds"] + frame["acquisition_seconds"]   # as the peers report it
    return frame


@dataclass(frozen=True)
class DPareto:
    """DPareto as a chain method (beside the peers of `dptradeoff.peers`): one round proposes from every
    evaluation so far, its ML-II starting from the GP state the previous round's proposal file holds."""
    settings: Settings
    name = "dpareto"

    def round(self, problem: Problem, evals: pd.DataFrame, q: int, seed: int, run: int, round_index: int,
              initial: int, previous: dict | None) -> tuple[pd.DataFrame, dict]:
        """The round's points and what its proposal file records (settings, GP state, the kind of fit)."""
        from ..seeds import rng

        state = GPState.from_dict(previous["gp_state"]) if previous else None
        proposal = propose(problem, evals, q, self.settings, rng(seed, problem.name, "dpareto", run, round_index),
                           state, round_index, initial=initial)
        full = state is None or self.settings.full_refit(round_index)
        return proposal.points, {"settings": self.settings.__dict__, "full_refit": full,
                                 "gp_state": proposal.gp_state.as_dict()}
