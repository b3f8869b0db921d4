"""Noise calibration: the noise at which an event reaches a target epsilon, checked by the
accountant itself (used for DP-SGD: Table 3's grid and propose-test's final training)."""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .. import UserError
from .accountant import Accountant, check_delta

MIN_NOISE, MAX_NOISE = 0.05, 1e3


@dataclass(frozen=True)
class Calibration:
    """A noise multiplier and the epsilon of the run at exactly that multiplier (never above the target)."""
    noise: float
    epsilon: float


def calibrate_noise(accountant: Accountant, event_at: Callable[[float], object], eps: float, delta: float,
                    root=None) -> Calibration | None:
    """The noise z at which `event_at(z)` is (eps, delta)-DP by `accountant`, within 0.5% of the smallest
    such z, with the accountant's epsilon at that z; None when even z = MAX_NOISE does not reach eps
    (with RDP orders up to 1024 the RDP -> DP conversion alone costs about 0.02 at delta = 1e-6).

    A root of epsilon(z) = eps is only a starting point: with dp_accounting's float64 RDP, epsilon(z)
    was jagged at large z (a root finder stopped at a spurious crossing), and a root is only accurate
    to its tolerance anyway. The z returned has been checked with `accountant.epsilon` itself, and
    raised until the check passed (whatever `root`, the root finder, returns: `root_of` by default)."""
    check_delta(delta)
    if not eps > 0:
        raise UserError(f"The target epsilon must be > 0, got {eps}.")
    z = (root or root_of)(accountant, event_at, eps, delta)
    return None if z is None else _raise_until_within(accountant, event_at, z, eps, delta)


def _raise_until_within(accountant: Accountant, event_at, z: float, eps: float, delta: float) -> Calibration | None:
    """From z (rounded up by 0.1%), raise z in doubling steps until epsilon(z) <= eps, then bisect back
    towards the last z that failed; only a z whose epsilon was checked is returned. None if even
    MAX_NOISE fails."""
    def check(z):
        achieved = accountant.epsilon(event_at(z), delta)
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


def root_of(accountant: Accountant, event_at, eps: float, delta: float) -> float | None:
    """A root in z of epsilon(z) = eps over ALL_ORDERS (one fixed set, so the function is smooth);
    None if z = MAX_NOISE does not reach eps."""
    from scipy import optimize

    @functools.lru_cache(maxsize=None)
    def gap(log_z):   # log epsilon - log eps: close to linear in log z, with slope -1 to -2
        e = accountant.epsilon_at_all_orders(event_at(math.exp(log_z)), delta)
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
