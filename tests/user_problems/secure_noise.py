"""A clamped Laplace mean whose noise comes from a generator of its own, as a library with secure noise
draws it (OpenDP, diffprivlib's secure mode): the operating system's entropy, which the `rng` the
pipeline hands it cannot seed. So it says `seedable = False`."""
from __future__ import annotations

import math
import random

import numpy as np

VALUES = np.random.default_rng(7).normal(40.0, 12.0, 1000)   # the oracle's own data: 1,000 ages
LOWER, UPPER = 0.0, 100.0


class SecureLaplaceMean:
    neighbouring = "replace-one"
    seedable = False
    utility_description = "1 - |error|/100"

    def __init__(self):
        self._noise = random.SystemRandom()   # OS entropy: no seed reaches it

    def epsilon(self, point, *, n, delta):
        return (UPPER - LOWER) / (len(VALUES) * point["scale"])

    def _laplace(self, scale: float) -> float:
        u = self._noise.random() - 0.5
        return -scale * math.copysign(1.0, u) * math.log(max(1.0 - 2.0 * abs(u), 1e-300))

    def utility(self, point, data, rng):
        released = np.clip(VALUES, LOWER, UPPER).mean() + self._laplace(point["scale"])
        return float(max(0.0, 1.0 - abs(released - VALUES.mean()) / 100.0))
