"""The baselines of paper 004's experiments, each a sequence of ever more accurate releases of one
statistic (sensitivity 1) that stops at the first release passing a check, and what it pays.

- Doubling (Wu et al. 2019): independent releases at budgets eps_0 < eps_1 < ...; pays the sum
  (Laplace, pure DP) or the sum of zCDP rho_i (Gaussian, Bun-Steinke 2016).
- Laplace noise reduction (Koufogiannis et al. 2016; Wu et al. 2019): correlated Laplace noises
  whose j-th release alone is a Laplace(1/eps_j) mechanism; stopping at j is ex-post eps_j-DP.
- Brownian noise reduction (Whitehouse et al. 2022): releases y + W(t_j)/t_j of one Brownian
  path W at times t_0 < t_1 < ...; the privacy loss at time t is W(t) + t/2 (sensitivity 1), and the
  linear boundary P(exists t: W(t) >= a + b t) = exp(-2ab) makes stopping at t ex-post
  (a + (b + 1/2) t, delta)-DP with a b = log(1/delta) / 2.
- Papernot & Steinke 2022: repeat an RDP mechanism K ~ TNB(eta, gamma) times and keep the best;
  RDP of their Thm 2.
What each costs is computed in privacy/ (zcdp, brownian, repeat_and_select), whose functions are
imported here under the names the experiments use.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..privacy.brownian import expost_epsilon as brownian_epsilon  # noqa: F401 - the experiments' names
from ..privacy.brownian import linear_boundary as brownian_boundary  # noqa: F401
from ..privacy.brownian import zcdp_rho_of_stop as zcdp_brownian_rho  # noqa: F401
from ..privacy.repeat_and_select import papernot_steinke_rdp  # noqa: F401
from ..privacy.zcdp import epsilon_of_rho as zcdp_epsilon, rho_for_epsilon as zcdp_rho  # noqa: F401


@dataclass(frozen=True)
class Release:
    """The outcome of one sequence of releases: the accepted estimate (None if none passed), the
    noise standard deviation it had, the index of the last release, and what was paid."""
    estimate: float | None
    sigma: float
    last: int
    cost: float


def geometric_grid(start: float, ratio: float, top: float) -> np.ndarray:
    """start * ratio^i for i = 0, 1, ... while <= top (paper 004 §6.1: 0.001 * sqrt(2)^i)."""
    n = int(math.floor(math.log(top / start) / math.log(ratio) + 1e-9)) + 1 if top >= start else 0
    return start * ratio ** np.arange(n)


# --- pure DP, Laplace ------------------------------------------------------------------------

def _doubling(value: float, costs: np.ndarray, sigmas: np.ndarray, budget: float, accept: Callable[[float, float], bool],
              noise: Callable[[float], float]) -> Release:
    """Fresh releases value + noise(sigma_i) while the running sum of costs fits in `budget`."""
    spent, last = 0.0, -1
    for i, (cost, sigma) in enumerate(zip(costs, sigmas)):
        if spent + cost > budget:
            break
        spent, last = spent + cost, i
        y = value + noise(float(sigma))
        if accept(y, float(sigma)):
            return Release(y, float(sigma), i, spent)
    return Release(None, math.nan, last, spent)


def doubling_laplace(value: float, grid: np.ndarray, budget: float, accept: Callable[[float, float], bool],
                     rng: np.random.Generator, check_per_scale: float = 1.0) -> Release:
    """Fresh Laplace(1/eps_i) releases while the running sum of eps_i fits in `budget`, starting at
    grid[0]. `accept(y, sigma)` sees sigma = check_per_scale / eps_i: 1 is the Laplace scale b
    (paper 004's check), sqrt(2) the standard deviation."""
    grid = np.asarray(grid, dtype=float)
    return _doubling(value, grid, check_per_scale / grid, budget, accept,
                     lambda sigma: rng.laplace(0.0, sigma / check_per_scale))


def laplace_noise_reduction_noises(grid: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Noises eta_j with eta_j ~ Laplace(1/eps_j) marginally, coupled as Koufogiannis et al.'s Markov
    chain: drawn from the least noisy end, eta_j = eta_{j+1} with probability (eps_j/eps_{j+1})^2,
    else eta_{j+1} + Laplace(1/eps_j)."""
    eta = np.empty(len(grid))
    eta[-1] = rng.laplace(0.0, 1.0 / grid[-1])
    for j in range(len(grid) - 2, -1, -1):
        keep = rng.random() < (grid[j] / grid[j + 1]) ** 2
        eta[j] = eta[j + 1] if keep else eta[j + 1] + rng.laplace(0.0, 1.0 / grid[j])
    return eta


def noise_reduction_laplace(value: float, grid: np.ndarray, accept: Callable[[float, float], bool],
                            rng: np.random.Generator, check_per_scale: float = 1.0) -> Release:
    """Release value + eta_j for j = 0, 1, ... and stop at the first accepted; pays eps_j (ex post),
    or the last eps when none is accepted. The whole grid must fit the budget before starting.
    `accept` sees sigma = check_per_scale / eps_j (as `doubling_laplace`)."""
    eta = laplace_noise_reduction_noises(grid, rng)
    for j, e in enumerate(grid):
        y, sigma = value + eta[j], check_per_scale / e
        if accept(y, sigma):
            return Release(y, sigma, j, float(e))
    return Release(None, math.nan, len(grid) - 1, float(grid[-1]))


# --- approximate DP, Gaussian --------------------------------------------------------------------

def doubling_gaussian(value: float, rhos: np.ndarray, rho_budget: float, accept: Callable[[float, float], bool],
                      rng: np.random.Generator) -> Release:
    """Fresh Gaussian releases with sigma_i = 1/sqrt(2 rho_i) while the zCDP sum fits `rho_budget`."""
    return _doubling(value, rhos, 1.0 / np.sqrt(2.0 * np.asarray(rhos)), rho_budget, accept,
                     lambda sigma: rng.normal(0.0, sigma))


def brownian_noise_reduction(value: float, times: np.ndarray, accept: Callable[[float, float], bool],
                             rng: np.random.Generator, cost: Callable[[float], float]) -> Release:
    """Release value + W(t_j)/t_j (noise sd 1/sqrt(t_j)) along one Brownian path and stop at the first
    accepted; pays cost(t_stop), or cost(t_last) when none is accepted. The cost is the caller's
    accounting: `privacy.brownian.zcdp_rho_of_stop` (zCDP filter) or `privacy.brownian.expost_epsilon` on a
    boundary (ex-post (eps, delta))."""
    increments = rng.normal(0.0, np.sqrt(np.diff(np.concatenate([[0.0], times]))))
    w = np.cumsum(increments)
    for j, t in enumerate(times):
        y, sigma = value + w[j] / t, 1.0 / math.sqrt(t)
        if accept(y, sigma):
            return Release(y, sigma, j, float(cost(t)))
    return Release(None, math.nan, len(times) - 1, float(cost(times[-1])))
