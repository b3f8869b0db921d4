"""Composition of (epsilon, delta) guarantees: advanced composition of pure-DP mechanisms
(Dwork-Rothblum-Vadhan 2010), and the basic composition of propose-test's tuning with its final
training (paper 003)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from .. import UserError


def advanced_composition(eps0: float, iterations: int, delta_prime: float) -> float:
    """T-fold adaptive composition of eps0-DP mechanisms is (eps, delta')-DP with
    eps = sqrt(2 T ln(1/delta')) eps0 + T eps0 (e^eps0 - 1); never worse than basic T eps0."""
    if not (eps0 > 0 and iterations >= 0 and 0 < delta_prime < 1):
        raise UserError(f"Advanced composition needs eps0 > 0, T >= 0 and delta' in (0, 1); got {eps0}, {iterations}, {delta_prime}.")
    advanced = math.sqrt(2 * iterations * math.log(1 / delta_prime)) * eps0 + iterations * eps0 * math.expm1(eps0)
    return min(advanced, iterations * eps0)


@dataclass(frozen=True)
class TotalPrivacy:
    epsilon: float
    delta: float
    tuning_epsilon: float
    iterations: int


def training_and_tuning(eps_train: float, delta_train: float, eps0: float, iterations: int,
                        delta_prime: float) -> TotalPrivacy:
    """(eps_train + eps_tuning, delta_train + delta'): an (eps_train, delta_train)-DP training after
    `iterations` eps0-DP tests composed by advanced composition at delta'."""
    tuning = advanced_composition(eps0, iterations, delta_prime)
    return TotalPrivacy(eps_train + tuning, delta_train + delta_prime, tuning, iterations)
