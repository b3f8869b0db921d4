"""RDP -> (epsilon, delta) conversions: a conversion is an object, chosen once when an accountant
is built (`privacy.conversion` in the config names one).

- `ImprovedConversion` ("dp_accounting", the default): dp_accounting's conversion
  (Canonne-Kamath-Steinke 2020 Prop. 12);
- `ClassicConversion` ("classic"): epsilon = min_alpha RDP(alpha) + log(1/delta) / (alpha - 1), the
  conversion of autodp that the original DPareto code used (looser), to reproduce the paper's
  numbers. At one fixed order it is paper 004's Lemma 7 for ex-post RDP (`rdp_to_dp`).
"""
from __future__ import annotations

import logging
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .. import UserError

log = logging.getLogger(__name__)


class Conversion(ABC):
    name: ClassVar[str]   # as `privacy.conversion` names it; every evaluation row records it

    @abstractmethod
    def epsilon(self, orders, curve, delta: float) -> tuple[float, float]:
        """(epsilon, the order attaining it) of an RDP curve. Any set of orders gives a valid bound."""

    @abstractmethod
    def epsilons(self, orders: np.ndarray, curves: np.ndarray, delta: float) -> np.ndarray:
        """The epsilon each order of each curve (rows) gives, inf where none: `epsilon` for many curves
        at once, before its minimum over the orders."""


@dataclass(frozen=True)
class ImprovedConversion(Conversion):
    name: ClassVar[str] = "dp_accounting"

    def epsilon(self, orders, curve, delta: float) -> tuple[float, float]:
        eps, order = improved_conversion(list(orders), list(curve), delta)
        return float(eps), float(order)

    def epsilons(self, orders: np.ndarray, curves: np.ndarray, delta: float) -> np.ndarray:
        """`improved_conversion`'s epsilon at every order (its argmin is taken by the caller)."""
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            eps = curves + np.log1p(-1 / orders) - np.log(delta * orders) / (orders - 1)
            eps = np.where(delta**2 + np.expm1(-curves) > 0, 0.0, eps)
        eps = np.where(curves < 0, 0.0, eps)
        return np.where(np.isnan(eps), np.inf, eps)


@dataclass(frozen=True)
class ClassicConversion(Conversion):
    name: ClassVar[str] = "classic"

    def epsilon(self, orders, curve, delta: float) -> tuple[float, float]:
        orders = np.asarray(orders, dtype=float)
        values = self.epsilons(orders, np.asarray(curve), delta)
        best = int(np.argmin(values))
        return float(values[best]), float(orders[best])

    def epsilons(self, orders: np.ndarray, curves: np.ndarray, delta: float) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            values = _classic(curves, orders, delta)
        return np.where(np.isfinite(values), values, np.inf)


IMPROVED, CLASSIC = ImprovedConversion(), ClassicConversion()
CONVERSIONS: dict[str, Conversion] = {c.name: c for c in (IMPROVED, CLASSIC)}


def conversion_named(name: str) -> Conversion:
    """The conversion `privacy.conversion` names."""
    if name not in CONVERSIONS:
        raise UserError(f"Unknown RDP conversion {name!r}; use one of {', '.join(CONVERSIONS)}.")
    return CONVERSIONS[name]


def _classic(rdp, order, delta: float):
    return rdp + math.log(1 / delta) / (order - 1)


def rdp_to_dp(eps_rdp: float, alpha: float, delta: float) -> float:
    """Paper 004 Lemma 7: ex-post (alpha, eps~)-RDP implies ex-post (eps~ + log(1/delta)/(alpha - 1), delta)-DP
    (the classic conversion at the one order alpha)."""
    if not alpha > 1 or not 0 < delta < 1:
        raise UserError(f"Lemma 7 needs alpha > 1 and delta in (0, 1), got alpha = {alpha}, delta = {delta}.")
    return _classic(eps_rdp, alpha, delta)


def dp_to_rdp_budget(eps: float, alpha: float, delta: float) -> float:
    """The RDP budget at order alpha whose Lemma 7 conversion is exactly (eps, delta)."""
    budget = eps - math.log(1.0 / delta) / (alpha - 1.0)
    if budget <= 0:
        raise UserError(f"At RDP order {alpha}, log(1/delta)/(alpha - 1) = {eps - budget:.3g} already exceeds "
                        f"the budget {eps}; use a larger order.")
    return budget


def improved_conversion(orders, curve, delta: float) -> tuple[float, float]:
    """dp_accounting 0.6's `rdp_privacy_accountant.compute_epsilon` line for line (Canonne-Kamath-
    Steinke 2020 Prop. 12): importing dp_accounting costs a job about 1.2 s (its package imports
    scipy.signal and scipy.stats for the PLD accountant), this function microseconds. Tests check it
    returns exactly what dp_accounting's does."""
    if delta < 0:
        raise ValueError(f"Delta cannot be negative. Found {delta}.")
    if delta == 0:
        return (0, 0) if all(r == 0 for r in curve) else (np.inf, 0)
    if len(orders) != len(curve):
        raise ValueError("Input lists must have the same length.")
    eps = []
    for a, r in zip(orders, curve):
        if a < 1:
            raise ValueError(f"Renyi divergence order must be at least 1. Found {a}.")
        if r < 0:
            log.warning("Negative Renyi divergence of %s, probably caused by numerical instability from extreme "
                        "DpEvents. Returning an epsilon of zero.", r)
            epsilon = 0.0
        elif delta**2 + math.expm1(-r) > 0:
            epsilon = 0  # delta <= sqrt(1 - exp(-KL)): epsilon 0
        elif a > 1.01:
            epsilon = r + math.log1p(-1 / a) - math.log(delta * a) / (a - 1)
        else:
            epsilon = np.inf
        eps.append(epsilon)
    optimal_index = np.argmin(eps)
    return max(0, eps[optimal_index]), orders[optimal_index]
