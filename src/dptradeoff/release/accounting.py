"""The privacy of a release: one trial is a candidate drawn uniformly (independently of the data),
trained on the private training rows, and scored on the private validation rows with Gaussian noise;
the selection runs K ~ TNB(eta, gamma) trials and releases only the best (Papernot & Steinke 2022).

As events (`privacy.events`): a trial is `RandomChoiceDpEvent` over the candidates of
`ComposedDpEvent([candidate's training, GaussianDpEvent(score)])`, whose RDP the accountant bounds at
each order by the largest of the candidates' (a data-independent mixture: exp((alpha - 1) D_alpha) is
jointly convex, so the mixture's divergence is at most the largest member's); the release is
`RepeatAndSelectDpEvent(trial, mean, shape = eta)`, P&S Thm 2 over the trial's RDP curve.

Every trial's training has the same training-only epsilon eps0 (each candidate's noise multiplier is
calibrated to it on the private training rows); eps0 is the largest value, found by bisection, at which
the whole release stays within the total. The total returned is the accountant's own epsilon of the
release event at the chosen eps0, never the bisection's estimate.

Neighbouring relation: the private rows are split by position (a seeded permutation) into training and
validation rows; neighbours differ in one row of one part (replace-one for the built-in DP-SGD: the
replaced row keeps its place; add/remove-one for an oracle that samples by Poisson, e.g. Opacus). The
training is analysed under that relation (its event), the score too: replacing a row changes the
accuracy on n_val rows by at most 1/n_val, adding or removing one by at most 1/(n_val - 1); the
larger, 1/(n_val - 1), is used for both, so noise of sd s is a Gaussian mechanism with noise
multiplier s * (n_val - 1).
Composing training and score (rather than using that a row lies in only one part) over-counts, safely.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from .. import UserError
from ..privacy.accountant import Accountant
from ..privacy.calibration import MAX_NOISE, calibrate_noise
from ..privacy.events import (ComposedDpEvent, GaussianDpEvent, RandomChoiceDpEvent, RepeatAndSelectDpEvent,
                              SampledWithoutReplacementDpEvent)

LOWEST_EPS0_SHARE = 1e-3     # eps0 is searched in [this * total, total]
EPS0_TOLERANCE = 1e-3        # relative width at which the bisection stops


@dataclass(frozen=True)
class Candidate:
    point: dict              # the hyperparameters, the privacy parameter recalibrated (`noise`, or the oracle's calibrate)
    front_epsilon: float     # the point's epsilon on the front (tuning rows), for the record
    front_utility: float
    training_epsilon: float  # the accountant's epsilon of its training on the private rows, at the plan's delta
    origin: str              # "front", "perturbed" or "prior"
    final: dict | None = None          # a subsampled search's: the point carried to every private row
    final_epsilon: float = math.nan    # and its training's epsilon there


@dataclass(frozen=True)
class Plan:
    eps0: float                        # every candidate's training is (eps0, delta)-DP or better
    candidates: tuple[Candidate, ...]
    score_noise_multiplier: float      # the score's Gaussian noise over its sensitivity
    trial_event: object
    release_event: object
    total_epsilon: float               # the accountant's epsilon of `release_event` at delta
    delta: float
    trial_epsilon: float               # one trial (its training and score) alone, by the same accountant: for the record


def trial_event(training_events: Sequence, score_noise_multiplier: float):
    """One trial: a candidate drawn at random, its training, then the noisy score."""
    score = GaussianDpEvent(score_noise_multiplier)
    return RandomChoiceDpEvent(tuple(ComposedDpEvent([training, score]) for training in training_events))


def release_event(trial, eta: float, mean_trials: float):
    return RepeatAndSelectDpEvent(trial, mean_trials, eta)


@dataclass(frozen=True)
class Subsampled:
    """A search run on `rows` of the `private_rows` drawn without replacement, then the chosen point trained on
    every private row (Koskela & Kulkarni 2023): `carry(point, eps0)` is (the point carried to every private row,
    its training (eps0, delta)-DP there, its epsilon) or None; `event_of(point)` its training's event there.
    The release is the search amplified by the subsampling (WBK19 Thm 9, `privacy.wor_general`) composed with the
    final training, whichever candidate it is (a random choice: the largest RDP at each order bounds every one)."""
    rows: int
    private_rows: int
    carry: Callable[[dict, float], tuple[dict, float] | None]
    event_of: Callable[[dict], object]

    def event(self, search, finals: Sequence[dict]):
        return ComposedDpEvent([SampledWithoutReplacementDpEvent(self.private_rows, self.rows, search),
                                RandomChoiceDpEvent(tuple(self.event_of(point) for point in finals))])


def plan(points: Sequence[dict], event_of: Callable[[dict], object], *, total: float, delta: float, eta: float,
         mean_trials: float, score_noise: float, validation_rows: int, accountant: Accountant,
         front_values: Sequence[tuple[float, float]] | None = None, origins: Sequence[str] | None = None,
         calibrate: Callable[[dict, float], tuple[dict, float] | None] | None = None,
         subsampled: Subsampled | None = None) -> Plan:
    """The largest eps0 (to EPS0_TOLERANCE) at which the release of `points` (each recalibrated to
    eps0) is (total, delta)-DP; `event_of(point)` is a training's event on the private training rows.
    `calibrate(point, eps0)` is (the point whose training is (eps0, delta)-DP, its training epsilon) or
    None (`trainers.calibrated`); by default the point's `noise` is recalibrated. With `subsampled`, the
    trials run on a subsample (`event_of` and `validation_rows` are the subsample's), and each candidate's
    final training on every private row is (eps0, delta)-DP too.
    A total too small for even one trial stops with the smallest total that works."""
    multiplier = score_noise * (validation_rows - 1)

    def noise_calibration(point, eps0):
        found = calibrate_noise(accountant, lambda z: event_of({**point, "noise": z}), eps0, delta)
        return None if found is None else ({**point, "noise": found.noise}, found.epsilon)

    front_values = list(front_values or [(math.nan, math.nan)] * len(points))
    origins = list(origins or ["front"] * len(points))

    def at(eps0: float) -> Plan | None:
        chosen = []
        for point, (f_eps, f_util), origin in zip(points, front_values, origins):
            found = (calibrate or noise_calibration)(point, eps0)
            final = subsampled.carry(found[0], eps0) if found is not None and subsampled else (None, math.nan)
            if found is not None and final is not None:
                chosen.append(Candidate(found[0], f_eps, f_util, found[1], origin, *final))
        if not chosen:
            return None
        trial = trial_event([event_of(c.point) for c in chosen], multiplier)
        event = release_event(trial, eta, mean_trials)
        if subsampled:
            event = subsampled.event(event, [c.final for c in chosen])
        return Plan(eps0, tuple(chosen), multiplier, trial, event, accountant.epsilon(event, delta), delta,
                    accountant.epsilon(trial, delta))

    # eps0 from the total down by halves to the first that fits (too small an eps0 fits no candidate:
    # the RDP -> DP conversion alone costs some epsilon), then bisection up to the next that does not.
    tried, best, high = [], None, total
    eps0 = total / 2
    while eps0 >= LOWEST_EPS0_SHARE * total:
        candidate = at(eps0)
        tried.append(candidate)
        if candidate is not None and candidate.total_epsilon <= total:
            best = candidate
            break
        high, eps0 = eps0, eps0 / 2
    if best is None:
        # the smallest total over eps0 from 1e-3 to 10: below it the RDP -> DP conversion alone exceeds eps0
        plans = tried + [at(e) for e in np.geomspace(1e-3, 10, 25)]
        smallest = min((p.total_epsilon for p in plans if p is not None), default=math.inf)
        raise UserError(f"A total epsilon of {total:g} at delta {delta:g} is too small for even one trial: with "
                        f"E[K] = {mean_trials:g} trials and score noise {score_noise:g}, the smallest total this "
                        f"release reaches is {_round_up(smallest)}; raise the total epsilon to at least "
                        f"{_round_up(smallest)}, or lower selection.mean_trials or raise score_noise.")
    low = best.eps0
    while high / low > 1 + EPS0_TOLERANCE:
        middle = math.sqrt(low * high)
        candidate = at(middle)
        if candidate is not None and candidate.total_epsilon <= total:
            best, low = candidate, middle
        else:
            high = middle
    return best


def _round_up(value: float) -> str:
    if not math.isfinite(value):
        return f"unreachable with noise multipliers up to {MAX_NOISE:g}"
    digits = 2 - int(math.floor(math.log10(value)))
    return f"{math.ceil(value * 10**digits) / 10**digits:g}"
