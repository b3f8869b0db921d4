"""Privacy of DP-SGD / DP-Adam as trained here (paper 001 Alg. 3/4).

Each step samples a lot of m of the n examples uniformly *without replacement*, clips every
per-example gradient to L2 norm L and adds N(0, (2Lz)^2) to the sum. Under the replace-one
neighbouring relation the sum has L2 sensitivity 2L, so each step is a subsampled Gaussian
mechanism with noise multiplier z and sampling ratio m/n, composed T = epochs * round(n/m)
times. Its RDP is Wang-Balle-Kasiviswanathan 2019 Thm 27, the bound dp_accounting's
`SampledWithoutReplacementDpEvent` implements under `REPLACE_ONE`, evaluated by `wor_gaussian`
without dp_accounting's float64 cancellation (which errs both ways at high orders).

Two RDP -> (epsilon, delta) conversions:
- "dp_accounting" (default): dp_accounting's improved conversion (Canonne-Kamath-Steinke 2020);
- "classic": epsilon = min_alpha RDP(alpha) + log(1/delta) / (alpha - 1), the conversion of
  autodp that the original DPareto code used (looser), to reproduce the paper's numbers.

How the order is chosen: `epsilon()` evaluates the RDP at every order of ALL_ORDERS in one pass
(`wor_gaussian` computes the moments Thm 27 needs up to order 256 once, in about 2 ms) and
converts at the best order of ORDERS, or of ALL_ORDERS when dp_accounting's best order in ORDERS
is >= 96: the rule of the previous, slower evaluation, kept so that every epsilon is the same
(tests compare with a frozen copy of it to 1e-9). It is an exhaustive minimum, not a search: a
search over the orders finds the same minimum only where epsilon(alpha) is quasi-convex, and it
is not, measured at paper scale: above order 256 the bound drops its moment term, and in about
3% of settings epsilon(alpha) falls, rises, then falls again between orders 384 and 1024; and for
the classic conversion the rule above can miss a high order that the minimum over ALL_ORDERS
takes (1 setting in 1,200). Any order gives a valid bound; the rule only decides which one is
reported.
"""
from __future__ import annotations

import functools
import logging
import math
from dataclasses import dataclass

import numpy as np

from .. import UserError
from . import wor_gaussian

log = logging.getLogger(__name__)

CONVERSIONS = ("dp_accounting", "classic")

# RDP orders. The high orders count only when the optimum sits at the top of the base set (small
# epsilon): a rule from when they doubled the cost (Thm 27 at order alpha needs the forward
# differences up to alpha), kept so that epsilon() stays what it was; any set of orders gives a
# valid bound, and tests check the set costs at most 3% against a dense grid.
ORDERS = (1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0,
          14.0, 16.0, 18.0, 20.0, 24.0, 28.0, 32.0, 40.0, 48.0, 56.0, 64.0, 80.0, 96.0, 128.0, 512.0, 1024.0)
HIGH_ORDERS = (160.0, 192.0, 256.0, 384.0)
ALL_ORDERS = tuple(sorted(ORDERS + HIGH_ORDERS))
_BASE = [ALL_ORDERS.index(a) for a in ORDERS]   # where ORDERS sit in ALL_ORDERS


def steps(n: int, lot_size: int, epochs: int) -> int:
    """T = epochs * round(n / m): the number of noisy gradient steps of a training run."""
    if not (float(epochs).is_integer() and epochs >= 1):
        raise UserError(f"The number of epochs must be a positive integer, got {epochs!r}.")
    return int(epochs) * max(1, int(round(n / lot_size)))


def rdp_curve(n: int, lot_size: int, noise: float, num_steps: int, orders=ORDERS) -> np.ndarray:
    """RDP(alpha) at each order of the whole run (inf where the noise is zero): WBK19 Thm 27 for one
    step (`wor_gaussian`, free of the float64 cancellation of dp_accounting's evaluation) times the
    number of steps."""
    _check(n, lot_size, noise)
    with np.errstate(over="ignore", invalid="ignore"):
        curve = num_steps * wor_gaussian.rdp(lot_size / n, noise, orders)
    return np.where(np.isnan(curve), np.inf, curve)


def epsilon(n: int, lot_size: int, epochs: int, noise: float, delta: float, conversion: str = "dp_accounting") -> float:
    """(epsilon, delta)-DP of a DP-SGD/DP-Adam run: n examples, lots of m, `epochs` epochs, noise multiplier z."""
    return _epsilon(n, lot_size, steps(n, lot_size, epochs), noise, delta, conversion)


def _epsilon(n: int, lot_size: int, num_steps: int, noise: float, delta: float, conversion: str) -> float:
    """epsilon over ORDERS, plus HIGH_ORDERS when dp_accounting's optimum over ORDERS is >= 96."""
    _check_conversion(conversion, delta)
    curve = rdp_curve(n, lot_size, noise, num_steps, ALL_ORDERS)
    base = curve[_BASE]
    if not np.isfinite(base).any():
        return math.inf
    if _convert(ORDERS, base, delta, "dp_accounting")[1] >= 96:
        return _convert(ALL_ORDERS, curve, delta, conversion)[0]
    return _convert(ORDERS, base, delta, conversion)[0]


def convert_curves(curves: np.ndarray, delta: float, conversion: str) -> np.ndarray:
    """`_epsilon`'s conversion for many runs at once: curves (N, len(ALL_ORDERS)) of whole-run RDP,
    converted at the best order of ORDERS, or of ALL_ORDERS where dp_accounting's best order in
    ORDERS is >= 96 (the rule of `_epsilon`; tests compare the two)."""
    _check_conversion(conversion, delta)
    curves = np.atleast_2d(np.asarray(curves, dtype=float))
    orders = np.asarray(ALL_ORDERS)
    base = np.zeros(len(ALL_ORDERS), dtype=bool)
    base[_BASE] = True
    improved = _improved_many(orders, curves, delta)
    best_base_order = orders[_BASE][np.argmin(improved[:, base], axis=1)]
    chosen = improved if conversion == "dp_accounting" else _classic_many(orders, curves, delta)
    eps = np.where(best_base_order >= 96, chosen.min(axis=1), chosen[:, base].min(axis=1))
    out = np.maximum(0.0, eps)
    return np.where(np.isfinite(curves[:, base]).any(axis=1), out, np.inf)


def _improved_many(orders: np.ndarray, curves: np.ndarray, delta: float) -> np.ndarray:
    """`improved_conversion`'s epsilon at every order (its argmin is taken by the caller)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        eps = curves + np.log1p(-1 / orders) - np.log(delta * orders) / (orders - 1)
        eps = np.where(delta**2 + np.expm1(-curves) > 0, 0.0, eps)
    eps = np.where(curves < 0, 0.0, eps)
    return np.where(np.isnan(eps), np.inf, eps)


def _classic_many(orders: np.ndarray, curves: np.ndarray, delta: float) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        values = curves + math.log(1 / delta) / (orders - 1)
    return np.where(np.isfinite(values), values, np.inf)


def _convert(orders, curve, delta: float, conversion: str) -> tuple[float, float]:
    """(epsilon, the order attaining it) of an RDP curve. Any set of orders gives a valid bound."""
    if conversion == "classic":
        orders = np.asarray(orders, dtype=float)
        with np.errstate(invalid="ignore"):
            values = np.asarray(curve) + math.log(1 / delta) / (orders - 1)
        values = np.where(np.isfinite(values), values, np.inf)
        best = int(np.argmin(values))
        return float(values[best]), float(orders[best])
    eps, order = improved_conversion(list(orders), list(curve), delta)
    return float(eps), float(order)


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


def _check_conversion(conversion: str, delta: float) -> None:
    if conversion not in CONVERSIONS:
        raise UserError(f"Unknown RDP conversion {conversion!r}; use one of {', '.join(CONVERSIONS)}.")
    if not 0 < delta < 1:
        raise UserError(f"delta must be in (0, 1), got {delta}; use e.g. 1e-5.")


MIN_NOISE, MAX_NOISE = 0.05, 1e3


@dataclass(frozen=True)
class Calibration:
    """A noise multiplier and the epsilon of the run at exactly that multiplier (never above the target)."""
    noise: float
    epsilon: float


def calibrate_noise(n: int, lot_size: int, epochs: int, eps: float, delta: float,
                    conversion: str = "dp_accounting") -> Calibration | None:
    """The noise multiplier z at which a run is (eps, delta)-DP, within 0.5% of the smallest such z,
    with `epsilon()` at that z; None when even z = MAX_NOISE does not reach eps (with orders up to
    1024 the RDP -> DP conversion alone costs about 0.02 at delta = 1e-6).

    A root of epsilon(z) = eps is only a starting point: with dp_accounting's float64 RDP, epsilon(z)
    was jagged at large z (a root finder stopped at a spurious crossing), and a root is only accurate
    to its tolerance anyway. The z returned has been checked with `epsilon()` itself, and raised
    until the check passed."""
    _check_conversion(conversion, delta)
    if not eps > 0:
        raise UserError(f"The target epsilon must be > 0, got {eps}.")
    num_steps = steps(n, lot_size, epochs)
    z = _root(n, lot_size, num_steps, eps, delta, conversion)
    return None if z is None else _raise_until_within(n, lot_size, num_steps, z, eps, delta, conversion)


def _raise_until_within(n: int, lot_size: int, num_steps: int, z: float, eps: float, delta: float,
                        conversion: str) -> Calibration | None:
    """From z (rounded up by 0.1%), raise z in doubling steps until epsilon(z) <= eps, then bisect back
    towards the last z that failed; only a z whose epsilon() was checked is returned. None if even
    MAX_NOISE fails."""
    def check(z):
        achieved = _epsilon(n, lot_size, num_steps, z, delta, conversion)
        return Calibration(z, achieved) if achieved <= eps else None

    failed, raise_by = None, 1e-3   # in log z
    while True:
        z = min(MAX_NOISE, z * math.exp(raise_by))
        passed = check(z)
        if passed is not None:
            break
        if z >= MAX_NOISE:
            return None
        failed, raise_by = z, raise_by * 2
    while failed is not None and passed.noise / failed > 1.002:
        middle = math.sqrt(failed * passed.noise)
        result = check(middle)
        if result is not None:
            passed = result
        else:
            failed = middle
    return passed


def _root(n: int, lot_size: int, num_steps: int, eps: float, delta: float, conversion: str) -> float | None:
    """A root in z of epsilon(z) = eps over ALL_ORDERS (one fixed set, so the function is smooth);
    None if z = MAX_NOISE does not reach eps."""
    from scipy import optimize

    @functools.lru_cache(maxsize=None)
    def gap(log_z):   # log epsilon - log eps: close to linear in log z, with slope -1 to -2
        e = _convert(ALL_ORDERS, rdp_curve(n, lot_size, math.exp(log_z), num_steps, ALL_ORDERS), delta, conversion)[0]
        return float(np.clip(math.log(e) - math.log(eps), -50.0, 50.0)) if e > 0 else -50.0

    lowest, highest = math.log(MIN_NOISE), math.log(MAX_NOISE)
    # Bracket the root from z = 1 by secant-like steps of the gap's own size (a slope of -1 or
    # steeper makes such a step reach or cross the root), then Brent's method inside the bracket.
    a = 0.0
    while True:
        step = float(np.clip(abs(gap(a)), math.log(1.5), math.log(16.0)))
        b = min(highest, max(lowest, a + step if gap(a) > 0 else a - step))
        if (gap(a) > 0) != (gap(b) > 0):
            break
        if b == highest:
            return None
        if b == lowest:
            return MIN_NOISE
        a = b
    return math.exp(optimize.brentq(gap, min(a, b), max(a, b), xtol=2e-3))


def _check(n: int, lot_size: int, noise: float) -> None:
    if not (isinstance(n, (int, np.integer)) and n >= 1):
        raise UserError(f"The dataset size n must be a positive integer, got {n!r}.")
    if not (isinstance(lot_size, (int, np.integer)) and 1 <= lot_size <= n):
        raise UserError(f"The lot size must be an integer between 1 and n = {n}, got {lot_size!r}.")
    if not noise >= 0:
        raise UserError(f"The noise multiplier must be >= 0, got {noise!r}.")
