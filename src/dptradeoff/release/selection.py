"""Private selection by random stopping (Papernot & Steinke 2022, "Hyperparameter tuning with Renyi
differential privacy", ICLR): draw K from the truncated negative binomial D_{eta, gamma}, run K
independent trials, release only the best one's output.

D_{eta, gamma} (their §2): P[K = k] = (1 - gamma)^k / (gamma^-eta - 1) * prod_{l<k} (l + eta)/(l + 1)
for k >= 1 and eta > 0; eta = 0 is the logarithmic distribution P[K = k] = (1 - gamma)^k / (k log(1/gamma)).
For eta > 0 it is the negative binomial NB(eta, gamma) (failures before eta successes of probability
gamma) conditioned on K >= 1, which is how it is drawn here; gamma is set from E[K]
(`privacy.repeat_and_select.tnb_gamma`).

K itself is not released: the guarantee is for the best trial's output alone. Known K, the best of K
trials is K-fold composition at worst; the P&S bound relies on K staying hidden.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..privacy.repeat_and_select import tnb_gamma


def truncated_negative_binomial(eta: float, mean: float, rng: np.random.Generator) -> int:
    """One draw of K ~ D_{eta, gamma} with E[K] = mean."""
    gamma = tnb_gamma(eta, mean)
    if eta == 0:
        return int(rng.logseries(1 - gamma))
    while True:   # rejection of K = 0: accepted with probability 1 - gamma^eta
        k = int(rng.negative_binomial(eta, gamma))
        if k >= 1:
            return k


def tnb_pmf(eta: float, mean: float, ks: np.ndarray) -> np.ndarray:
    """P[K = k] of D_{eta, gamma} at each k >= 1 (the formula above; tests compare the sampler with it)."""
    gamma = tnb_gamma(eta, mean)
    ks = np.asarray(ks, dtype=float)
    if eta == 0:
        return (1 - gamma) ** ks / (ks * math.log(1 / gamma))
    from scipy.special import gammaln

    log_prod = gammaln(ks + eta) - gammaln(eta) - gammaln(ks + 1)   # log prod_{l<k} (l + eta)/(l + 1)
    return np.exp(ks * math.log1p(-gamma) + log_prod) / math.expm1(-eta * math.log(gamma))


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
    k = truncated_negative_binomial(eta, mean, rng)
    best = None
    for index in range(k):
        score, output = trial(rng)
        if best is None or score > best.score:
            best = Selected(index, float(score), output, k)
    return best
