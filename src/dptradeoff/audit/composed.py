"""The composed-step bound of a white-box audit: what each step does, bounded from every step of every
training, then composed by an exact accountant.

A white-box audit (`whitebox`, `torch_whitebox`) sees, at every step t of every training, the release on
the canary's coordinate o_t = K_t c + N_t, where K_t counts the canary in the step's lot (0 or 1 for a
lot of distinct rows), c is the canary's clipped contribution (+c on D_in, -c on D_out, the label
flipped) and N_t the noise; no other row moves that coordinate. It also sees the lots (the auditor runs
the trainer), so it knows K_t. From the steps it bounds, each at confidence 1 - alpha / 3 (a union
bound makes them hold together at 1 - alpha):
- the noise's standard deviation from above: the releases of the steps without the canary are the
  noise alone, those with it the contribution plus the noise (chi-square bound on the mean square of the
  first about 0 and of the second about their mean: an offset, or a contribution that varies, only
  raises it);
- the canary's inclusion rate P(K_t >= 1) from below (Clopper-Pearson on the steps' counts);
- its contribution c from below: the mean of the signed releases of the steps that drew it (one-sided t).
  The noise the trainer records (the linear trainer does) is not subtracted: the bound would then rest on the
  record, and a record biased on the steps that draw the canary would raise it. The record is checked
  instead (`StepBounds.record_agrees`): on the steps without the canary it must equal the release, and on
  those with it its signed mean must be the noise's, zero.

The step the bounds describe is the Gaussian mechanism of sensitivity 2 c (the canary's and its twin's
contributions differ by 2 c) on a lot drawn at rate q, which is what the accountant analyses. Its worst
neighbours are the canary among copies of its twin (every lot then sums the same, but for the canary's
+2 c when drawn): the pair N(0, s^2) against (1 - q) N(0, s^2) + q N(2 c, s^2), the subsampled Gaussian of
dp_accounting's `from_gaussian_mechanism` (add/remove form, both directions). A larger c / s or q only
makes the pair easier to tell apart (each smaller one is a post-processing of it: scale and add noise;
replace the release by fresh noise at a rate), so the T-fold composition's epsilon at (q_lb, c_lb, s_ub),
computed by dp_accounting's PLD with optimistic rounding (a lower estimate), is a lower bound on the
trainer's epsilon at the stated confidence: `composed_bound`.

It assumes what the accountant assumes: the steps compose, each step's lot and noise fresh given the
past (so the training's privacy loss is the sum of its steps'), the noise Gaussian, and the contribution
the same at every step that draws the canary (true while the canary's gradient is at the clipping norm;
the audit reports the share of steps where it is). The run-level bound of `bounds.clopper_pearson` on
the mixture log-likelihood score assumes nothing and sits beside it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from . import bounds

ASSUMPTION = ("assumes the accountant's model: each step's lot and noise fresh given the past, Gaussian noise, "
              "the canary's contribution the same at every step that draws it")
VALUE_INTERVAL = 1e-2   # the PLD grid at T steps: VALUE_INTERVAL / T, so optimistic rounding lowers epsilon by <= ~VALUE_INTERVAL


@dataclass(frozen=True)
class StepObservations:
    """What the auditor saw at every step of every training: releases on the canary's coordinate, the
    canary's count in each step's lot, and the sign of its contribution (+1 on D_in, -1 on D_out)."""
    releases: np.ndarray       # (trainings, T)
    counts: np.ndarray         # (trainings, T) the canary's copies in the lot
    signs: np.ndarray          # (trainings,) or (trainings, T)
    noise: np.ndarray | None = None   # (trainings, T) the noise the trainer says it added there, where it says:
                                      # checked against the releases, never used in a bound

    @property
    def steps(self) -> int:
        return int(self.releases.shape[-1])

    def without_canary(self) -> np.ndarray:
        """The releases of the steps whose lot did not draw the canary: the noise alone."""
        return self.releases[self.counts == 0]

    def signed_releases(self) -> np.ndarray:
        """The signed releases of the steps that drew the canary: its contribution plus the noise."""
        return (self.releases * self._signs())[self.counts > 0]

    def contributions(self) -> np.ndarray:
        """The signed releases of the steps that drew the canary, per copy of the canary in the lot: its
        contribution plus the noise, from the releases alone (the record is not trusted: module doc)."""
        hit = self.counts > 0
        return (self.releases * self._signs())[hit] / self.counts[hit]

    def record_agrees(self, confidence: float) -> bool | None:
        """Whether the trainer's noise record agrees with the releases (None: no record): equal to them on the
        steps without the canary, and, on the steps that drew it, a signed mean within the two-sided
        `confidence` interval of zero-mean noise of their spread."""
        if self.noise is None:
            return None
        missed = self.counts == 0
        scale = max(1.0, float(np.max(np.abs(self.releases))))
        if not np.allclose(self.noise[missed], self.releases[missed], rtol=0, atol=1e-9 * scale):
            return False
        signed = (self.noise * self._signs())[self.counts > 0]
        if len(signed) < 2:
            return True
        spread = float(np.std(signed, ddof=1)) / math.sqrt(len(signed))
        return bool(abs(float(np.mean(signed))) <= stats.norm.ppf(1 - (1 - confidence) / 2) * spread)

    def _signs(self) -> np.ndarray:
        return np.broadcast_to(np.asarray(self.signs, float).reshape(len(self.releases), -1), self.releases.shape)

    @classmethod
    def concatenate(cls, parts: list["StepObservations"]) -> "StepObservations":
        recorded = all(p.noise is not None for p in parts)
        return cls(np.concatenate([p.releases for p in parts]), np.concatenate([p.counts for p in parts]),
                   np.concatenate([p._signs() for p in parts]),
                   np.concatenate([p.noise for p in parts]) if recorded else None)


@dataclass(frozen=True)
class StepBounds:
    """Bounds on one step, holding together at `confidence`."""
    noise_std_upper: float
    rate_lower: float
    contribution_lower: float
    confidence: float
    noise_steps: int
    drawn_steps: int
    total_steps: int
    most_copies: int          # the most copies of the canary one lot drew (1 for lots of distinct rows)
    record_agrees: bool | None = None   # the trainer's noise record against the releases (None: no record)

    def broken_premises(self, noise_std: float, rate: float, clip: float) -> list[str]:
        """What these bounds prove wrong (at their confidence) of a trainer that claims Gaussian noise of std
        `noise_std`, lots drawing a row at `rate` and contributions clipped to `clip`: the accountant's
        premises, each of which can fail without the claimed epsilon failing (the accountant's bound may
        have room), and each a bug."""
        broken = []
        if self.noise_std_upper < noise_std:
            broken.append(f"the noise's std is at most {self.noise_std_upper:.4g}, below the {noise_std:.4g} claimed")
        if self.rate_lower > rate:
            broken.append(f"lots draw the canary at a rate of at least {self.rate_lower:.4g}, above the {rate:.4g} claimed")
        if self.contribution_lower > clip:
            broken.append(f"the canary contributes at least {self.contribution_lower:.4g}, above the clipping norm {clip:.4g}")
        if self.most_copies > 1:
            broken.append(f"a lot drew the canary {self.most_copies} times: lots are not sets of distinct rows")
        if self.record_agrees is False:
            broken.append("the trainer's noise record disagrees with its releases (not used in any bound)")
        return broken

    def detail(self) -> str:
        return (f"per step: noise std <= {self.noise_std_upper:.4g} ({self.noise_steps} steps without the canary), "
                f"inclusion rate >= {self.rate_lower:.4g} ({self.drawn_steps} of {self.total_steps} steps drew it), "
                f"contribution >= {self.contribution_lower:.4g}")


PREMISE_STRICTNESS = 100   # premises are judged at 1 - (1 - confidence) / 100: a correct trainer is flagged at
                           # most once in 2,000 tables at 95 %, while the bugs they catch miss by far more


def premise_bounds(seen: StepObservations, confidence: float = bounds.CONFIDENCE) -> StepBounds:
    """The step bounds the accountant's premises are judged by (`StepBounds.broken_premises`): `step_bounds` at a
    confidence PREMISE_STRICTNESS times stricter than the table's (still a claim at the table's confidence)."""
    return step_bounds(seen, 1 - (1 - confidence) / PREMISE_STRICTNESS)


def step_bounds(seen: StepObservations, confidence: float = bounds.CONFIDENCE) -> StepBounds:
    """The three bounds of the module doc, each at 1 - (1 - confidence) / 3."""
    alpha = (1 - confidence) / 3
    noise, drawn = seen.without_canary(), seen.contributions()
    total = seen.releases.size
    if len(drawn) < 2:
        raise ValueError(f"a composed-step bound needs at least 2 steps that drew the canary, got {len(drawn)} of "
                         f"{total}; train more runs")
    # the noise's square: the releases without the canary about 0, and those with it about their mean (their
    # spread is the noise's plus the contribution's own, so any variation in the contribution only raises it)
    released = seen.signed_releases()
    squares = float(np.sum(np.square(noise)) + np.sum(np.square(released - released.mean())))
    noise_upper = math.sqrt(squares / stats.chi2.ppf(alpha, len(noise) + len(released) - 1))
    rate_lower = float(stats.beta.ppf(alpha, len(drawn), total - len(drawn) + 1))
    spread = float(np.std(drawn, ddof=1)) / math.sqrt(len(drawn))
    contribution_lower = max(0.0, float(np.mean(drawn)) - stats.t.ppf(1 - alpha, len(drawn) - 1) * spread)
    return StepBounds(noise_upper, rate_lower, contribution_lower, confidence, len(noise), len(drawn), total,
                      int(seen.counts.max()), seen.record_agrees(1 - alpha))


MAX_STEPS = 1000         # steps composed at most: fewer steps than the training's bound it from below (the adversary
                         # may ignore the rest), at a cost the audit of any front point can pay
GRID_POINTS = 1e6        # the PLD's grid over one step's privacy losses (12 noise deviations either side)


def steps_composed(steps: int) -> int:
    return min(int(steps), MAX_STEPS)


def composed_epsilon(rate: float, contribution: float, noise_std: float, steps: int, delta: float,
                     optimistic: bool = True) -> float:
    """epsilon at delta of T compositions of the step N(0, s^2) against (1 - q) N(0, s^2) + q N(2 c, s^2)
    (module doc), by dp_accounting's PLD: rounded down (`optimistic`, a lower estimate) or up (an upper one).
    A lower estimate composes at most MAX_STEPS of the T steps, on a grid of VALUE_INTERVAL / T or one
    GRID_POINTS-th of a step's loss range, whichever is coarser: each only lowers it."""
    from dp_accounting.pld import privacy_loss_distribution

    if contribution <= 0 or rate <= 0:
        return 0.0
    if noise_std <= 0:
        return math.inf
    shift = 2 * contribution / noise_std                       # the step's mu
    used = steps_composed(steps) if optimistic else int(steps)
    interval = max(VALUE_INTERVAL / used, (24 * shift + shift**2) / GRID_POINTS)
    pld = privacy_loss_distribution.from_gaussian_mechanism(
        1 / shift, sensitivity=1.0, sampling_prob=min(1.0, rate), pessimistic_estimate=not optimistic,
        value_discretization_interval=interval, use_connect_dots=not optimistic)
    return max(0.0, float(pld.self_compose(used).get_epsilon_for_delta(delta)))


def composed_bound(seen: StepObservations, delta: float, confidence: float = bounds.CONFIDENCE
                   ) -> tuple[bounds.Bound, StepBounds]:
    """epsilon_lb of the composed step at its bounds (module doc), and the bounds."""
    found = step_bounds(seen, confidence)
    eps = composed_epsilon(found.rate_lower, found.contribution_lower, found.noise_std_upper, seen.steps, delta)
    used = steps_composed(seen.steps)
    composed = f"{seen.steps} steps composed" if used == seen.steps else f"{used} of its {seen.steps} steps composed"
    return bounds.Bound(eps, "composed steps", confidence, delta, len(seen.releases), len(seen.releases),
                        f"{found.detail()}, {composed}; {ASSUMPTION}"), found
