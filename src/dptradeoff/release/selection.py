"""Private selection by random stopping (Papernot & Steinke 2022, "Hyperparameter tuning with Renyi
differential privacy", ICLR): draw K from the truncated negative binomial D_{eta, gamma}, run K
independent trials, release only the best one's output.

D_{eta, gamma} (their §2): P[K = k] = (1 - gamma)^k / (gamma^-eta - 1) * prod_{l<k} (l + eta)/(l + 1)
for k >= 1 and eta > 0; eta = 0 is the logarithmic distribution P[K = k] = (1 - gamma)^k / (k log(1/gamma)).
For eta > 0 it is the negative binomial NB(eta, gamma) (failures before eta successes of probability
gamma) conditioned on K >= 1, which is how `expost.distributions.sample_tnb` draws it (tested against
the pmf there); gamma is set from E[K] (`privacy.repeat_and_select.tnb_gamma`).

K itself is not released: the guarantee is for the best trial's output alone. Known K, the best of K
trials is K-fold composition at worst; the P&S bound relies on K staying hidden.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..expost.distributions import sample_tnb
from ..privacy.repeat_and_select import tnb_gamma


@dataclass
class Selected:
    """The best trial: its index among the trials, noisy score and output; `trials` is K (not released)."""
    index: int
    score: float
    output: Any
    trials: int


def random_stopping(trial: Callable[[np.random.Generator], tuple[float, Any]], eta: float, mean: float,
                    rng: np.random.Generator) -> Selected:
    """Run `trial(rng)` -> (noisy score, output) K ~ D_{eta, gamma} times; the highest score wins (the
    first on ties). Every draw, K's included, comes from `rng`."""
    k = sample_tnb(eta, tnb_gamma(eta, mean), rng)
    best = None
    for index in range(k):
        score, output = trial(rng)
        if best is None or score > best.score:
            best = Selected(index, float(score), output, k)
    return best
