"""Hyperparameter tuning with random dropping (paper 004 Alg. 3) and its ex-post guarantees.

Alg. 3: k ~ E; for i = 1..d, run M_i with probability e^{-eps_i k} and add (o_i, i) to the
candidates; return the largest candidate in the order of (O x [d]) u {bottom} (bottom smallest,
pairs compared lexicographically: output first, then index). With the key function used here
the "output" of M_i is whatever `score(o_i)` maps it to, so any total order on outputs works.

- E = Geom_{e^{-eps'}}, each M_i eps_i-DP (Thm 11): ex-post 2 eps_i + eps' for (o, i), 0 for bottom.
- E = Exp_{eps'}, each M_i (alpha, eps_i)-RDP (Thm 13): ex-post (alpha, eps~)-RDP with
  eps~(o, i) = (2 + l_i) eps_i + (1 + l_i) eps' + (log(tau + 1) + sum_{j != i} e^{-eps_j (1 + alpha l_i)}) / (alpha - 1)
  for any l_i >= 0 (we take the minimiser), eps~(bottom) = log(tau + 1) / (alpha - 1),
  tau = sum_i E[e^{-eps_i k}] the expected number of runs.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np
from scipy import optimize

from .. import UserError
from .distributions import keep_probability_mean, sample_k


def pure_dp_cost(eps_i: float | None, eps_prime: float) -> float:
    """Thm 11: 2 eps_i + eps' for an output of mechanism i; 0 for bottom (None)."""
    return 0.0 if eps_i is None else 2.0 * eps_i + eps_prime


def expected_runs(eps: Sequence[float], eps_prime: float, dropping: str) -> float:
    """tau = sum_i E[e^{-eps_i k}]: the expected number of mechanism runs (data independent)."""
    return float(np.sum(keep_probability_mean(np.asarray(eps, dtype=float), eps_prime, dropping)))


def rdp_cost(eps: np.ndarray, eps_prime: float, alpha: float, copies: np.ndarray | None = None,
             tau: float | None = None) -> tuple[np.ndarray, float]:
    """Thm 13's ex-post RDP at order alpha of an output of each distinct mechanism, and of bottom.

    eps: the RDP at order alpha of each distinct mechanism; copies: how many times each is
    given to Alg. 3 (default once). For each i, l_i >= 0 minimises the bound; the sum over
    j != i counts every copy (including the other copies of i itself). tau defaults to Thm 13's
    expected number of runs under exponential dropping; only the as-published reproduction
    (threads.Alg3GaussianAsPublished, no dropping, not a guarantee) passes the number of candidates."""
    eps = np.asarray(eps, dtype=float)
    copies = np.ones(len(eps)) if copies is None else np.asarray(copies, dtype=float)
    if not alpha > 1:
        raise UserError(f"The RDP order alpha must be > 1, got {alpha}.")
    if tau is None:
        tau = float(np.sum(copies * keep_probability_mean(eps, eps_prime, "exponential")))
    log_tau = math.log(tau + 1.0)
    costs = np.empty(len(eps))
    for i, e in enumerate(eps):
        others = copies.copy()
        others[i] -= 1.0

        def bound(l: float) -> float:
            tail = float(np.sum(others * np.exp(-eps * (1.0 + alpha * l))))
            return (2.0 + l) * e + (1.0 + l) * eps_prime + (log_tau + tail) / (alpha - 1.0)

        # The bound is convex in l (linear plus a sum of decreasing exponentials): bracket and minimise.
        hi = 1.0
        while bound(2 * hi) < bound(hi) and hi < 1e6:
            hi *= 2
        res = optimize.minimize_scalar(bound, bounds=(0.0, 2 * hi), method="bounded", options={"xatol": 1e-10})
        costs[i] = min(float(res.fun), bound(0.0))
    return costs, log_tau / (alpha - 1.0)


def random_dropping_runs(eps: np.ndarray, eps_prime: float, dropping: str, rng: np.random.Generator,
                         copies: np.ndarray | None = None) -> np.ndarray:
    """Alg. 3's dropping step: k ~ E once, then each of the copies[i] copies of mechanism i runs
    independently with probability e^{-eps_i k}. Returns how many copies of each mechanism run
    (Binomial(copies[i], e^{-eps_i k}) given k: the same law as one coin per copy)."""
    eps = np.asarray(eps, dtype=float)
    copies = np.ones(len(eps), dtype=np.int64) if copies is None else np.asarray(copies, dtype=np.int64)
    k = sample_k(eps_prime, dropping, rng)
    return rng.binomial(copies, np.exp(-eps * k))


def random_dropping_tuning(mechanisms: Sequence[Callable[[np.random.Generator], object]], eps: Sequence[float],
                           eps_prime: float, rng: np.random.Generator,
                           key: Callable[[object, int], object] = lambda o, i: (o, i), dropping: str = "geometric",
                           copies: Sequence[int] | None = None) -> tuple[int | None, object, int]:
    """Alg. 3 with mechanism callables: returns (index, output, number of runs); index None is bottom.

    Mechanism i is given `copies[i]` times (default once). `key(o, i)` is the total order on
    (output, index) pairs, fixed before the data are seen; bottom is below every pair. The paper's
    order is lexicographic, (o, i); any other key is the same algorithm run on the post-processed
    mechanisms o -> key(o, i), so Thms 11 and 13 hold unchanged. The caller attaches the ex-post
    cost (`pure_dp_cost` or `rdp_cost`), which depends on the accounting the mechanisms satisfy.
    Every experiment of this package that tunes by Alg. 3 calls this function."""
    eps = np.asarray(eps, dtype=float)
    if len(mechanisms) != len(eps) or not np.all(eps > 0) or not eps_prime > 0:
        raise UserError("Alg. 3 needs one budget eps_i > 0 per mechanism and eps' > 0.")
    runs = random_dropping_runs(eps, eps_prime, dropping, rng, copies)
    best_key, best = None, (None, None)
    for i in np.flatnonzero(runs):
        for _ in range(int(runs[i])):
            o = mechanisms[i](rng)
            candidate = key(o, int(i))
            if best_key is None or candidate > best_key:
                best_key, best = candidate, (int(i), o)
    return best[0], best[1], int(runs.sum())
