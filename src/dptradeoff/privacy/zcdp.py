"""Zero-concentrated DP (Bun & Steinke 2016): its conversion to (epsilon, delta)-DP, both ways."""
from __future__ import annotations

import math

import numpy as np


def rho_for_epsilon(eps: float | np.ndarray, delta: float):
    """The largest rho whose zCDP -> DP conversion eps = rho + 2 sqrt(rho log(1/delta)) (Bun-Steinke
    2016 Prop. 1.3) gives `eps`."""
    log_inv = math.log(1.0 / delta)
    return (np.sqrt(log_inv + np.asarray(eps, dtype=float)) - math.sqrt(log_inv)) ** 2


def epsilon_of_rho(rho: float, delta: float) -> float:
    """Bun-Steinke 2016 Prop. 1.3: rho-zCDP implies (rho + 2 sqrt(rho log(1/delta)), delta)-DP."""
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))
