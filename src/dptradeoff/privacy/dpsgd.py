"""Privacy of DP-SGD / DP-Adam as trained here (paper 001 Alg. 3/4).

Each step samples a lot of m of the n examples uniformly *without replacement*, clips every
per-example gradient to L2 norm L and adds N(0, (2Lz)^2) to the sum. Under the replace-one
neighbouring relation the sum has L2 sensitivity 2L, so each step is a subsampled Gaussian
mechanism with noise multiplier z and sampling ratio m/n, composed T = epochs * round(n/m)
times. Its RDP is Wang-Balle-Kasiviswanathan 2019 Thm 27, as implemented in `dp_accounting`
(`SampledWithoutReplacementDpEvent` under `REPLACE_ONE`).

Two RDP -> (epsilon, delta) conversions:
- "dp_accounting" (default): dp_accounting's improved conversion (Canonne-Kamath-Steinke 2020);
- "classic": epsilon = min_alpha RDP(alpha) + log(1/delta) / (alpha - 1), the conversion of
  autodp that the original DPareto code used (looser), to reproduce the paper's numbers.
"""
from __future__ import annotations

import math

import dp_accounting
import numpy as np
from dp_accounting.rdp import rdp_privacy_accountant as rdp

from .. import UserError

CONVERSIONS = ("dp_accounting", "classic")

# RDP orders. dp_accounting computes orders up to 256 exactly in O(alpha^2) Python steps: its
# default set costs ~0.4 s per epsilon, order 256 alone 60 ms. We start from a base set and
# add the expensive high orders only when the optimum sits at the top of the base set (small
# epsilon); any set of orders gives a valid bound, and tests check we match dp_accounting's
# default set to within 2%.
ORDERS = (1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0,
          14.0, 16.0, 18.0, 20.0, 24.0, 28.0, 32.0, 40.0, 48.0, 56.0, 64.0, 80.0, 96.0, 128.0, 512.0, 1024.0)
HIGH_ORDERS = (160.0, 192.0, 256.0, 384.0)


def steps(n: int, lot_size: int, epochs: int) -> int:
    """T = epochs * round(n / m): the number of noisy gradient steps of a training run."""
    return int(epochs) * max(1, int(round(n / lot_size)))


def rdp_curve(n: int, lot_size: int, noise: float, num_steps: int, orders=ORDERS) -> np.ndarray:
    """RDP(alpha) at each order of the whole run (inf where the noise is zero)."""
    _check(n, lot_size, noise)
    if noise <= 0:
        return np.full(len(orders), np.inf)
    accountant = rdp.RdpAccountant(list(orders), neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    event = dp_accounting.SampledWithoutReplacementDpEvent(n, lot_size, dp_accounting.GaussianDpEvent(noise))
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        accountant.compose(dp_accounting.SelfComposedDpEvent(event, num_steps))
    curve = np.asarray(accountant.rdp, dtype=float)
    return np.where(np.isnan(curve), np.inf, curve)


def classic_epsilon(orders, curve, delta: float) -> float:
    """epsilon = min over orders of RDP(alpha) + log(1/delta)/(alpha - 1) (Mironov 2017, Prop. 3)."""
    orders = np.asarray(orders, dtype=float)
    with np.errstate(invalid="ignore"):
        values = np.asarray(curve) + math.log(1 / delta) / (orders - 1)
    values = values[np.isfinite(values)]
    return float(values.min()) if len(values) else math.inf


def epsilon(n: int, lot_size: int, epochs: int, noise: float, delta: float, conversion: str = "dp_accounting") -> float:
    """(epsilon, delta)-DP of a DP-SGD/DP-Adam run: n examples, lots of m, `epochs` epochs, noise multiplier z."""
    if conversion not in CONVERSIONS:
        raise UserError(f"Unknown RDP conversion {conversion!r}; use one of {', '.join(CONVERSIONS)}.")
    if not 0 < delta < 1:
        raise UserError(f"delta must be in (0, 1), got {delta}; use e.g. 1e-5.")
    num_steps = steps(n, lot_size, epochs)
    orders, curve = ORDERS, rdp_curve(n, lot_size, noise, num_steps)
    if not np.isfinite(curve).any():
        return math.inf
    if _best_order(orders, curve, delta) >= 96:
        orders = tuple(sorted(ORDERS + HIGH_ORDERS))
        curve = np.concatenate([curve, rdp_curve(n, lot_size, noise, num_steps, HIGH_ORDERS)])[
            np.argsort(ORDERS + HIGH_ORDERS)]
    if conversion == "classic":
        return classic_epsilon(orders, curve, delta)
    eps, _ = rdp.compute_epsilon(list(orders), list(curve), delta)
    return float(eps)


MAX_NOISE = 1e3


def calibrate_noise(n: int, lot_size: int, epochs: int, eps: float, delta: float) -> float | None:
    """The noise multiplier z at which a run is (eps, delta)-DP (root to 0.1% in z, rounded up so the
    run is at most eps), or None when even z = MAX_NOISE does not reach eps (the accountant's bound
    for sampling without replacement has a floor near 0.1 for small datasets)."""
    from scipy import optimize

    def gap(log_z):
        return epsilon(n, lot_size, epochs, math.exp(log_z), delta) - eps
    if gap(math.log(MAX_NOISE)) > 0:
        return None
    return math.exp(optimize.brentq(gap, math.log(0.05), math.log(MAX_NOISE), xtol=1e-3) + 1e-3)


def _best_order(orders, curve, delta: float) -> float:
    return float(rdp.compute_epsilon(list(orders), list(curve), delta)[1])


def _check(n: int, lot_size: int, noise: float) -> None:
    if not (isinstance(n, (int, np.integer)) and n >= 1):
        raise UserError(f"The dataset size n must be a positive integer, got {n!r}.")
    if not (isinstance(lot_size, (int, np.integer)) and 1 <= lot_size <= n):
        raise UserError(f"The lot size must be an integer between 1 and n = {n}, got {lot_size!r}.")
    if not noise >= 0:
        raise UserError(f"The noise multiplier must be >= 0, got {noise!r}.")
