"""Expected hypervolume improvement in the region of interest, with epsilon known exactly.

The region is FRONT's (`statistics.region`): x = ln epsilon over [ln eps_lo, ln eps_hi] (a point below
eps_lo counts at eps_lo, one above eps_hi adds nothing), y = the utility GP's output (logit of the
error) capped at the utility floor's logit: a point no better than the majority-class predictor
earns nothing, wherever its epsilon.

With x known, the front of the observed points (x_i exact, y_i the GP mean at them) is a staircase
u(x) on [x_lo, x_hi]: segment j = [a_j, a_{j+1}] at height u_j (the cap left of every front point).
A candidate at x_c with y ~ N(mu, s^2) improves segment j right of x_c by (u_j - y)^+ over its
width, so

  EHVI(x_c, mu, s) = sum_j max(0, a_{j+1} - max(a_j, x_c)) * E[(u_j - y)^+],
  E[(u - y)^+]     = (u - mu) Phi(z) + s phi(z),  z = (u - mu) / s,

a one-dimensional Gaussian integral per segment, in closed form. It is the exact EHVI in the GP's
output space (logit error), where the GP's predictive is Gaussian.
"""
from __future__ import annotations

import numpy as np
from scipy import special

from ..pareto import pareto_front

_SQRT_2PI = np.sqrt(2 * np.pi)


class RegionEHVI:
    """EHVI of candidates against the staircase of a front, in the region [x_lo, x_hi] x (-inf, cap]."""

    def __init__(self, front_x: np.ndarray, front_y: np.ndarray, x_lo: float, x_hi: float, cap: float):
        self.x_lo, self.x_hi, self.cap = float(x_lo), float(x_hi), float(cap)
        x = np.clip(np.asarray(front_x, dtype=float), x_lo, x_hi)
        y = np.minimum(np.asarray(front_y, dtype=float), cap)
        keep = (x < x_hi) & (y < cap)
        front = pareto_front(np.column_stack([x[keep], y[keep]])) if keep.any() else np.empty((0, 2))
        # segments: [x_lo, x_1] at the cap, then [x_i, x_{i+1}] at y_i, the last up to x_hi
        self.starts = np.concatenate([[self.x_lo], front[:, 0]])
        self.ends = np.concatenate([front[:, 0], [self.x_hi]])
        self.heights = np.concatenate([[self.cap], front[:, 1]])
        self.front = front

    def hypervolume(self) -> float:
        """The area between the staircase and the cap (what the front already dominates)."""
        return float(np.sum((self.ends - self.starts) * (self.cap - self.heights)))

    def __call__(self, x: np.ndarray, mean: np.ndarray, sd: np.ndarray) -> np.ndarray:
        return self.logit(x, mean, sd)

    def logit(self, x: np.ndarray, mean: np.ndarray, sd: np.ndarray) -> np.ndarray:
        x = np.clip(np.asarray(x, dtype=float), self.x_lo, self.x_hi)[:, None]
        width = np.maximum(0.0, self.ends[None, :] - np.maximum(self.starts[None, :], x))      # (N, J)
        sd = np.maximum(np.asarray(sd, dtype=float), 1e-9)[:, None]
        gap = self.heights[None, :] - np.asarray(mean, dtype=float)[:, None]
        z = gap / sd
        expected = gap * special.ndtr(z) + sd * np.exp(-0.5 * z * z) / _SQRT_2PI
        return np.einsum("nj,nj->n", width, expected)


# Gauss-Hermite nodes (probabilists') for E over the utility GP's Gaussian in logit error
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(24)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


class ErrorRegionEHVI(RegionEHVI):
    """The same EHVI with the hypervolume measured in error itself, as the region metric measures it:
    heights and cap are errors, y = sigmoid(f) with f ~ N(mu, s^2) the utility GP's logit error, and
    E[(u_j - y)^+] by 24-node Gauss-Hermite quadrature (the error is bounded, so a large logit
    variance is not rewarded without bound, as it is in logit space)."""

    def __init__(self, front_x, front_y, x_lo, x_hi, cap):
        super().__init__(front_x, front_y, x_lo, x_hi, cap)
        self.heights = _sigmoid(self.heights)
        self.cap = float(_sigmoid(cap))

    def __call__(self, x, mean, sd):
        x = np.clip(np.asarray(x, dtype=float), self.x_lo, self.x_hi)[:, None]
        width = np.maximum(0.0, self.ends[None, :] - np.maximum(self.starts[None, :], x))      # (N, J)
        errors = _sigmoid(np.asarray(mean, dtype=float)[:, None] + np.asarray(sd, dtype=float)[:, None] * _NODES)
        useful = width.any(axis=1)
        out = np.zeros(len(width))
        if useful.any():
            gain = np.maximum(0.0, self.heights[None, :, None] - errors[useful][:, None, :])    # (N, J, K)
            out[useful] = np.einsum("nj,njk,k->n", width[useful], gain, _WEIGHTS)
        return out


def _sigmoid(v):
    return 1.0 / (1.0 + np.exp(-np.asarray(v, dtype=float)))
