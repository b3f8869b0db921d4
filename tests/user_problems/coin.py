"""A coin as a DP algorithm (tests/test_timed_questions.py): every point reaches utility 1 with probability `p`, else
0; epsilon = 1 / noise, and `calibrate` sets noise so a point spends a given epsilon."""
from __future__ import annotations

from dptradeoff.problems.oracle import Oracle


class Coin(Oracle):
    """Every point reaches utility 1 with probability `p` (else 0): nothing to find, and a search that keeps the
    luckiest candidate's own trainings as its statement overstates p. epsilon = 1 / noise; `calibrate` sets noise."""
    neighbouring = "replace-one"

    def __init__(self, p: float = 0.9):
        self.p = p

    def epsilon(self, point, *, n, delta):
        return 1.0 / point["noise"]

    def calibrate(self, point, *, n, epsilon, delta):
        return {**point, "noise": 1.0 / epsilon}

    def utilities(self, point, data, repeats, rng):
        return (rng.random(repeats) < self.p).astype(float)


class PlainCoin(Coin):
    """The coin without `calibrate`: a question's candidates are moved onto its epsilon level by the exact epsilon."""
    calibrate = None


class PartialCoin(Coin):
    """A `calibrate` that returns only the key it changes, and None where the noise would leave [0.1, 10]."""

    def calibrate(self, point, *, n, epsilon, delta):
        return {"noise": 1.0 / epsilon} if 0.1 <= 1.0 / epsilon <= 10.0 else None


class WrongCoin(Coin):
    """A `calibrate` that returns something that is not a point."""

    def calibrate(self, point, *, n, epsilon, delta):
        return [1.0 / epsilon]


class SlowCoin(Coin):
    """The coin, each training `seconds` long."""

    def __init__(self, p: float = 0.9, seconds: float = 0.01):
        super().__init__(p)
        self.seconds = seconds

    def utilities(self, point, data, repeats, rng):
        import time

        time.sleep(self.seconds * repeats)
        return super().utilities(point, data, repeats, rng)
