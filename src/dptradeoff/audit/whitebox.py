"""White-box audits of the built-in linear DP-SGD / DP-Adam trainer (train/linear.py).

Threat model: the one the accountant's composition analyses. Each step releases the noised sum of
clipped gradients (the update is post-processing of it); the adversary sees every step's release, knows
every row but one and the model at every step, and does not see which rows each lot drew or the noise.
The rows it does not know are the canary's slot: D_in holds the canary (x_c, +1), D_out the canary with
its label flipped (x_c, -1), a replace-one neighbour.

The canary (Nasr et al. 2023's recipe for a near-tight audit, in data space): a row whose only non-zero
feature is an extra coordinate, of value `canary_norm`, which no real row uses. The weight on that
coordinate then moves only by the canary's clipped contribution (when its lot draws it) plus the noise, so
step t's release restricted to it is o_t = B_t s_t + N(0, (2 L z)^2), B_t ~ Bernoulli(m / n), where s_t is
the canary's clipped gradient there: +-L a / sqrt(a^2 + 1) while the canary's gradient exceeds the clipping
norm (a = canary_norm; the adversary computes s_t from the model, so a canary that is being fitted costs
power, not validity). The score of a training is the sum over steps of the log-likelihood ratio of o_t
under D_in and D_out: the Neyman-Pearson statistic of each step. When lots are the whole dataset and, at
every step of every run, both hypotheses' canary gradients are at the clipping norm with opposite signs
(s_in - s_out = -2 L a / sqrt(a^2 + 1), constant), the score is linear in the Gaussian noise with one
variance under both hypotheses, and the Gaussian fit of `bounds` is exact (`Trainings.exact`); otherwise
it is a sum of mixtures, or its steps' weights depend on earlier noise.

How the release is observed: with SGD the update is -lr o_t / m, so o_t is read off the weights of every
step (the real update code is audited too); with Adam the update is a lossy function of o_t (the first step
reveals only its sign), so the adversary reads the trainer's first moment, mu_t = b1 mu_{t-1} + (1 - b1) o_t / m.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..train import linear
from ..train.hyper import ADAM_BETA1, DPSGDHyper

MEMORY = 3e8         # bytes of training states held at once
CANARY_NORM = 100.0   # the largest canary feature: its gradient stays above any clipping norm <= ~|c| 100


def canary_norm_for(hp: DPSGDHyper, optimizer: str, n: int) -> float:
    """The canary's feature value a: large, so its coordinate carries almost all of its clipped gradient
    (a share a / sqrt(a^2 + 1)), but not so large that the weight there, moved by the noise and the canary,
    fits it (a w >> 1) and its gradient falls below the clipping norm. The weight's expected spread after T
    steps is lr sqrt(T) for Adam (steps of about lr each) and lr (2 L z sqrt(T) + L T m / n) / m for SGD;
    a = 1 / spread, between 3 and CANARY_NORM, and at least 4 L."""
    steps = hp.steps(n)
    if optimizer == "adam":
        spread = hp.learning_rate * math.sqrt(steps)
    else:
        spread = hp.learning_rate * hp.clip * (2 * hp.noise * math.sqrt(steps) + steps * hp.lot_size / n) / hp.lot_size
    # at least 4 L: then a loss derivative |c| >= 1/4 (a score within about 1 of the boundary) still
    # reaches the clipping norm, whatever the spread
    a = max(4.0 * hp.clip, min(CANARY_NORM, max(3.0, 1.0 / max(spread, 1e-12))))
    return float(np.float32(a))   # the trainer stores features as float32: the adversary uses the same number


@dataclass(frozen=True)
class Trainings:
    """What one white-box audit trained: the scores of the runs on D_in and on D_out."""
    scores_in: np.ndarray
    scores_out: np.ndarray
    steps: int
    sampling_rate: float
    clipped_share: float     # the share of steps at which both hypotheses' canary gradients were at the clipping
                             # norm with opposite signs (s_in - s_out = -2 L a / sqrt(a^2 + 1))
    canary_norm: float
    exact: bool = False      # every step of every run so, with lots of the whole dataset: the score is exactly
                             # Gaussian with one variance under both hypotheses (the Gaussian fit is exact)
    seen: object = None      # composed.StepObservations: every step's release, the canary's count in its lot, the sign


def canary_datasets(x: np.ndarray, y: np.ndarray, canary_norm: float = CANARY_NORM, copies: int = 1):
    """(x with an extra all-zero column and the canary row appended, y_in, y_out): the canary is the last
    row, its only feature the extra column; y_in labels it +1, y_out -1 (labels y in {-1, +1}). `copies` > 1
    plants a sampler bug: the canary's row is drawn `copies` times as often as the others."""
    x = np.asarray(x, dtype=np.float32)
    wide = np.zeros((len(x) + copies, x.shape[1] + 1), np.float32)
    wide[:len(x), :-1] = x
    wide[len(x):, -1] = canary_norm
    y = np.asarray(y, dtype=np.float64)
    return wide, np.append(y, [1.0] * copies), np.append(y, [-1.0] * copies)


def canary_contribution(loss: str, w: np.ndarray, label: float, clip: float, canary_norm: float) -> np.ndarray:
    """The canary's clipped gradient on its coordinate, for weights w (..., d + 1) whose last two entries are
    the canary's coordinate and the bias (`linear.clipped_gradient_sum` for the one row, in closed form)."""
    score = canary_norm * w[..., -2] + w[..., -1]
    c = linear.loss_derivative(loss, score, np.full_like(score, label))
    norm = np.abs(c) * math.hypot(canary_norm, 1.0)
    return c * np.minimum(1.0, clip / np.maximum(norm, np.finfo(float).tiny)) * canary_norm


def step_log_ratios(o: np.ndarray, s_in: np.ndarray, s_out: np.ndarray, q: float, sigma: float) -> np.ndarray:
    """log p_in(o) - log p_out(o) of each release o ~ (1 - q) N(0, sigma^2) + q N(s, sigma^2), s = s_in or s_out."""
    if q >= 1.0:
        return ((o - s_out) ** 2 - (o - s_in) ** 2) / (2 * sigma**2)
    base = math.log1p(-q) - o**2 / (2 * sigma**2)
    lq = math.log(q)
    return (np.logaddexp(base, lq - (o - s_in) ** 2 / (2 * sigma**2))
            - np.logaddexp(base, lq - (o - s_out) ** 2 / (2 * sigma**2)))


def releases(weights: np.ndarray, first_moments: np.ndarray | None, hp: DPSGDHyper) -> np.ndarray:
    """The noised sums o_t on the canary's coordinate (steps, runs) from the weights after every step
    (steps, runs, d + 1) (SGD) or the first moments after every step (Adam)."""
    if first_moments is None:
        before = np.concatenate([np.zeros_like(weights[:1]), weights[:-1]])
        return (before[..., -2] - weights[..., -2]) / hp.learning_rate * hp.lot_size
    mu = first_moments[..., -2]
    previous = np.concatenate([np.zeros_like(mu[:1]), mu[:-1]])
    return (mu - ADAM_BETA1 * previous) / (1 - ADAM_BETA1) * hp.lot_size


def train_and_score(x, y, loss: str, optimizer: str, hp: DPSGDHyper, runs: int, rng: np.random.Generator, *,
                    model: DPSGDHyper | None = None, canary_norm: float | None = None, chunk: int = 100,
                    copies: int = 1) -> Trainings:
    """`runs` trainings on D_in and `runs` on D_out with hyperparameters `hp`, each scored by the adversary,
    who assumes the mechanism `model` states (default: hp's own clipping norm and noise; an audit of a
    planted bug trains with one and assumes the other). `copies` > 1 plants the sampler bug of
    `canary_datasets`: the lots count every copy as the canary."""
    from .composed import StepObservations

    model = model or hp
    canary_norm = canary_norm or canary_norm_for(model, optimizer, len(y) + 1)   # the adversary chooses it
    wide, y_in, y_out = canary_datasets(x, y, canary_norm, copies)
    n = len(y_in) - copies + 1      # the rows the accountant counts: the data and one canary
    steps, q, sigma = hp.steps(n), hp.lot_size / n, 2.0 * model.clip * model.noise
    checkpoints = np.arange(1, steps + 1)
    # per run: the states of every step (weights, moments, the step before), its lots and noise: ~MEMORY at most
    per_run = 8 * steps * (4 * (wide.shape[1] + 1) + hp.lot_size)
    chunk = max(1, min(chunk, int(MEMORY // per_run)))
    scores, clipped, seen = {}, [], []
    for name, labels in (("in", y_in), ("out", y_out)):
        parts = []
        for start in range(0, runs, chunk):
            size = min(chunk, runs - start)
            w, mu, lots, noise = _states(wide, labels, loss, optimizer, hp, size, rng, checkpoints)
            o = releases(w, mu, hp)
            before = np.concatenate([np.zeros_like(w[:1]), w[:-1]])
            s_in = canary_contribution(loss, before, 1.0, model.clip, canary_norm)
            s_out = canary_contribution(loss, before, -1.0, model.clip, canary_norm)
            parts.append(step_log_ratios(o, s_in, s_out, q, sigma).sum(axis=0))
            full = -2.0 * model.clip * canary_norm / math.hypot(canary_norm, 1.0)
            clipped.append(np.isclose(s_in - s_out, full, rtol=1e-12, atol=0.0))
            counts = (lots >= len(y_in) - copies).sum(axis=2)          # (runs, steps): the canary is the last row(s)
            sign = np.sign(s_in if name == "in" else s_out).T           # its contribution's sign, from the model
            seen.append(StepObservations(o.T, counts, sign, noise[..., -2]))   # the canary's coordinate's noise
        scores[name] = np.concatenate(parts)
    separated = np.concatenate([c.ravel() for c in clipped])
    return Trainings(scores["in"], scores["out"], steps, q, float(np.mean(separated)), canary_norm,
                     exact=bool(q >= 1.0 and separated.all()), seen=StepObservations.concatenate(seen))


def _states(x, y, loss, optimizer, hp, runs, rng, checkpoints):
    """The weights after every step (steps, runs, d + 1), for Adam its first moments (None for SGD), and every
    step's lot (runs, steps, m) and noise (runs, steps, d + 1) as the trainer drew them."""
    w, moments, lots, noise = linear.trace_states(x, y, loss, optimizer, hp, runs, rng, checkpoints, record_lots=True)
    return w, (moments if optimizer == "adam" else None), lots, noise
