"""The analytic Gaussian mechanism (Balle & Wang 2018): the exact epsilon of N(0, sigma^2) noise
on a query of L2 sensitivity `sensitivity`, at a given delta (via dp_accounting)."""
from __future__ import annotations

import math

from .. import UserError


def epsilon(sigma: float, sensitivity: float, delta: float) -> float:
    if not (sensitivity > 0 and 0 < delta < 1):
        raise UserError(f"The analytic Gaussian mechanism needs sensitivity > 0 and delta in (0, 1), got {sensitivity}, {delta}.")
    if sigma <= 0:
        return math.inf
    from dp_accounting import gaussian_mechanism  # imported here: about 1.2 s, paid only by the jobs that use it

    return float(gaussian_mechanism.get_epsilon_gaussian(sigma / sensitivity, delta))
