"""Privacy of the sparse vector technique of paper 000 Alg. 1 (a reparametrisation of
Lyu et al. 2017 Alg. 7 with epsilon_3 = 0, queries of sensitivity 1).

b1 = b / (1 + (2C)^(1/3)) is the threshold noise, b2 = b - b1 the query noise, and
epsilon = 1/b1 + 2C/b2 = (1 + (2C)^(1/3)) (1 + (2C)^(2/3)) / b (paper 000 Appx. B)."""
from __future__ import annotations

import numpy as np

from .. import UserError


def noise_split(b: float, bound: int) -> tuple[float, float]:
    b1 = b / (1 + (2 * bound) ** (1 / 3))
    return b1, b - b1


def epsilon(bound: int, b: float) -> float:
    if not (bound >= 1 and b > 0):
        raise UserError(f"SVT needs an answer bound C >= 1 and noise b > 0, got C={bound}, b={b}.")
    c2 = 2 * bound
    return (1 + c2 ** (1 / 3)) * (1 + c2 ** (2 / 3)) / b


def epsilon_many(bounds: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`epsilon` over arrays of C and b (the acquisition's candidates)."""
    bounds, b = np.asarray(bounds, dtype=float), np.asarray(b, dtype=float)
    if not (np.all(bounds >= 1) and np.all(b > 0)):
        raise UserError("SVT needs answer bounds C >= 1 and noise b > 0.")
    c2 = 2 * bounds
    return (1 + np.cbrt(c2)) * (1 + np.cbrt(c2) ** 2) / b
