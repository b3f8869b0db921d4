"""Ex-post AboveThreshold (paper 004 Alg. 1, Thms 8-9) and its generalisation with random dropping
(Alg. 2, Thm 10).

Alg. 1: k ~ Geom_{e^{-eps'}} (threshold noise); for i = 1..d, y_i ~ Geom_{e^{-eps_i}}; return
(f_i(D) + y_i - k, i) for the first i with f_i(D) + y_i >= k, else None (the paper's bottom).
Ex-post cost: 2 eps_i + eps' for (o, i) (Thm 8), eps_i + eps' when every f_i is monotone
(Thm 9), eps' for bottom.

Alg. 2: k ~ Geom_{e^{-eps'}}; for i = 1..d, run M_i with probability e^{-eps_i k}; return the
first (o_i, i) with o_i >= tau. Ex-post cost 2 eps_i + eps' for (o, i), eps' for bottom (Thm 10).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from .. import UserError
from .distributions import sample_k


@dataclass(frozen=True)
class Selection:
    """What a selection mechanism released: `index` (None for bottom), the output, and its ex-post cost."""
    index: int | None
    output: object
    cost: float


def _check_budgets(eps: Sequence[float], eps_prime: float) -> np.ndarray:
    eps = np.asarray(eps, dtype=float)
    if eps.ndim != 1 or not np.all(eps > 0) or not eps_prime > 0:
        raise UserError(f"Every budget eps_i and eps' must be > 0, got eps = {eps.tolist()}, eps' = {eps_prime}.")
    return eps


def above_threshold_cost(eps_i: float | None, eps_prime: float, monotone: bool = False) -> float:
    """Thm 8 (2 eps_i + eps'), Thm 9 for monotone queries (eps_i + eps'); bottom (None) costs eps'."""
    if eps_i is None:
        return eps_prime
    return (1.0 if monotone else 2.0) * eps_i + eps_prime


def above_threshold(values: Sequence[int], eps: Sequence[float], eps_prime: float, rng: np.random.Generator,
                    monotone: bool = False) -> Selection:
    """Alg. 1 on the query answers f_i(D) (integers of sensitivity 1; compare f_i - tau for a threshold tau).

    Returns the noisy gap f_i(D) + y_i - k (released for free, Ding et al. 2023) and i."""
    eps = _check_budgets(eps, eps_prime)
    values = np.asarray(values)
    if values.shape != eps.shape or not np.issubdtype(values.dtype, np.integer):
        raise UserError("Alg. 1 needs one integer query answer per budget eps_i (use Alg. 2 for real-valued outputs).")
    k = int(sample_k(eps_prime, "geometric", rng))
    for i, (f, e) in enumerate(zip(values, eps)):
        y = int(rng.geometric(-math.expm1(-e))) - 1
        if f + y >= k:
            return Selection(i, int(f + y - k), above_threshold_cost(float(e), eps_prime, monotone))
    return Selection(None, None, above_threshold_cost(None, eps_prime))


def random_dropping_threshold(mechanisms: Sequence[Callable[[np.random.Generator], float]], eps: Sequence[float],
                              eps_prime: float, threshold: float, rng: np.random.Generator) -> Selection:
    """Alg. 2: the first non-dropped mechanism whose output reaches `threshold` (each M_i eps_i-DP)."""
    eps = _check_budgets(eps, eps_prime)
    if len(mechanisms) != len(eps):
        raise UserError("Alg. 2 needs one budget eps_i per mechanism.")
    k = int(sample_k(eps_prime, "geometric", rng))
    for i, (mechanism, e) in enumerate(zip(mechanisms, eps)):
        if rng.random() < math.exp(-e * k):
            o = mechanism(rng)
            if o >= threshold:
                return Selection(i, o, 2.0 * float(e) + eps_prime)
    return Selection(None, None, eps_prime)
