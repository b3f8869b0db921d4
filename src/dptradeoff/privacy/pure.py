"""RDP of pure-DP mechanisms, at orders alpha > 1, so that a pure-DP mechanism composes with RDP
ones (e.g. a release's epsilon-DP training with a Gaussian score) by adding RDP curves.

- Any epsilon-DP mechanism: the RDP of binary randomized response that keeps its bit with
  probability e^eps / (1 + e^eps), the dominating pair of pure epsilon-DP (Kairouz, Oh & Viswanath
  2015: every epsilon-DP pair of output distributions is a post-processing of it), so the bound is
  tight over all epsilon-DP mechanisms:
  D_alpha = log((e^(alpha eps) + e^((1 - alpha) eps)) / (1 + e^eps)) / (alpha - 1).
  It is <= eps and <= alpha eps^2 / 2 (Bun & Steinke 2016).
- The Laplace mechanism of noise multiplier b (scale / sensitivity), tight (Mironov 2017, Prop. 6):
  D_alpha = log(alpha / (2 alpha - 1) e^((alpha - 1) / b) + (alpha - 1) / (2 alpha - 1) e^(-alpha / b))
  / (alpha - 1).

Both are evaluated in log space, free of overflow at any alpha eps, and without the cancellation
of the plain formulas at small eps (tests/test_pure_rdp.py checks them against dp_accounting and
direct Renyi divergences).
"""
from __future__ import annotations

import numpy as np

from .. import UserError


def _log_expm1(x: np.ndarray) -> np.ndarray:
    """log(e^x - 1) for x > 0: accurate at small x, without overflow at large x."""
    small = x < 1
    return np.where(small, np.log(np.expm1(np.where(small, x, 1.0))), x + np.log1p(-np.exp(-x)))


def _expm1_minus_x(x: np.ndarray) -> np.ndarray:
    """e^x - 1 - x (>= 0) for |x| <= 1/2, by its series: no cancellation."""
    term, total = np.ones_like(x), np.zeros_like(x)
    for k in range(1, 30):
        term = term * x / k
        if k >= 2:
            total = total + term
    return total


def epsilon_dp_rdp(epsilon: float, orders) -> np.ndarray:
    """The tight RDP of an epsilon-DP mechanism at each order (> 1): that of binary randomized response.

    The formula's ratio is 1 + S with S = expm1((alpha - 1) eps) (1 - e^(-alpha eps)) / (1 + e^(-eps)) > 0,
    so D_alpha = log1p(S) / (alpha - 1) with log S a sum of three logs, none of them cancelling. The
    curve is capped at eps and alpha eps^2 / 2, which it is below exactly, so that rounding never puts
    it above them."""
    orders = np.asarray(orders, dtype=float)
    epsilon = float(epsilon)
    if not epsilon >= 0:
        raise UserError(f"epsilon must be >= 0, got {epsilon}.")
    if epsilon == 0:
        return np.zeros(orders.shape)
    if np.isinf(epsilon):
        return np.full(orders.shape, np.inf)
    log_s = _log_expm1((orders - 1) * epsilon) + np.log(-np.expm1(-orders * epsilon)) - np.log1p(np.exp(-epsilon))
    curve = np.logaddexp(0.0, log_s) / (orders - 1)
    return np.minimum(curve, np.minimum(epsilon, orders * epsilon ** 2 / 2))


def laplace_rdp(noise_multiplier: float, orders) -> np.ndarray:
    """The RDP of the Laplace mechanism of noise multiplier b at each order (> 1), Mironov's Prop. 6.

    Written as D_alpha = 1/b + log1p((alpha - 1) / (2 alpha - 1) expm1((1 - 2 alpha) / b)) / (alpha - 1)
    (the formula with e^((alpha - 1) / b) taken out of the sum): the log1p's argument lies in (-1/2, 0]."""
    orders = np.asarray(orders, dtype=float)
    b = float(noise_multiplier)
    if not b >= 0:
        raise UserError(f"The noise multiplier must be >= 0, got {b}.")
    if b == 0:
        return np.full(orders.shape, np.inf)
    eps = 1 / b
    general = eps + np.log1p((orders - 1) / (2 * orders - 1) * np.expm1((1 - 2 * orders) * eps)) / (orders - 1)
    # At small alpha eps the two terms above cancel (the result is about alpha eps^2 / 2): there, the
    # formula's sum minus 1 is (alpha g((alpha - 1) eps) + (alpha - 1) g(-alpha eps)) / (2 alpha - 1),
    # g(x) = e^x - 1 - x >= 0, a sum of non-negative terms.
    small = orders * eps <= 0.5
    # outside `small` the series is not used (the last np.where takes `general`): a = 2 there only keeps
    # its arithmetic finite
    a = np.where(small, orders, 2.0)
    u, v = np.where(small, (a - 1) * eps, 0.0), np.where(small, -a * eps, 0.0)
    excess = (a * _expm1_minus_x(u) + (a - 1) * _expm1_minus_x(v)) / (2 * a - 1)
    return np.where(small, np.log1p(excess) / (a - 1), general)
