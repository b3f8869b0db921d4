"""A trivial DP algorithm, as a user would bring it: the mean of N values in [0, 1], released with
Gaussian noise of scale `sigma` after clipping each value to [0, `clip`].

The module's functions `epsilon` and `utility` are the oracle (config: oracle: .../gaussian_mean.py);
`Flaky` is the same algorithm as a class whose training raises for large clips (a failing point).
"""
from __future__ import annotations

import numpy as np

from dptradeoff.privacy import gaussian

N = 1000
VALUES = np.linspace(0.0, 1.0, N)


def epsilon(point, *, n, delta):
    """Gaussian mechanism on the clipped mean: sensitivity clip / N (replace-one), analytic epsilon."""
    return gaussian.epsilon(point["sigma"], point["clip"] / N, delta)


def utility(point, data, rng):
    """exp(-|released - true mean| / 0.05): 1 for an exact release, in (0, 1] always."""
    released = np.clip(VALUES, 0.0, point["clip"]).mean() + rng.normal(0.0, point["sigma"])
    return float(np.exp(-abs(released - VALUES.mean()) / 0.05))


class Flaky:
    def __init__(self, fail_above: float = 0.9):
        self.fail_above = fail_above

    def epsilon(self, point, *, n, delta):
        return epsilon(point, n=n, delta=delta)

    def utility(self, point, data, rng):
        if point["clip"] > self.fail_above:
            raise FloatingPointError(f"training diverged at clip {point['clip']:.3g}")
        return utility(point, data, rng)


class NaNEpsilon(Flaky):
    def epsilon(self, point, *, n, delta):
        return float("nan")


class NegativeEpsilon(Flaky):
    def epsilon(self, point, *, n, delta):
        return -1.0


class UtilityAboveOne(Flaky):
    def utility(self, point, data, rng):
        return 1.5


class NoEpsilon:
    def utility(self, point, data, rng):
        return 0.5


class AccountingFails(Flaky):
    """A privacy oracle that cannot account for large clips."""
    trained = 0

    def epsilon(self, point, *, n, delta):
        if point["clip"] > self.fail_above:
            raise OverflowError("RDP overflow")
        return epsilon(point, n=n, delta=delta)

    def utility(self, point, data, rng):
        AccountingFails.trained += 1
        return utility(point, data, rng)


class CountsOverlap(Flaky):
    """Records the most of its utility calls that were ever in progress at once (across threads)."""
    lock = __import__("threading").Lock()
    running = most = 0

    def utility(self, point, data, rng):
        with CountsOverlap.lock:
            CountsOverlap.running += 1
            CountsOverlap.most = max(CountsOverlap.most, CountsOverlap.running)
        __import__("time").sleep(0.05)
        with CountsOverlap.lock:
            CountsOverlap.running -= 1
        return utility(point, data, rng)


class CountsOverlapThreadSafe(CountsOverlap):
    thread_safe = True
