"""Hypervolume-based probability of improvement (HVPoI), as in GPflowOpt and paper 001 §3.

For a candidate with independent Gaussian predictions N(mu_d, s_d^2) of the two (transformed)
objectives, given the current front F (GP means at the observed inputs) and a reference point:
  PoI(x)  = sum over the cells [l, u] of the non-dominated region of prod_d (Phi((u_d - mu_d)/s_d) - Phi((l_d - mu_d)/s_d)),
  dHV(x)  = the hypervolume that the mean mu adds to F within the reference box,
  HVPoI   = dHV(mu) * PoI.
"""
from __future__ import annotations

import numpy as np
from scipy import stats

from .pareto import nondominated_cells, pareto_front


def adaptive_reference(front: np.ndarray) -> np.ndarray:
    """GPflowOpt's reference: max(front) + 2 * range(front) / size(front), per objective."""
    f = pareto_front(front)
    return f.max(axis=0) + 2.0 * (f.max(axis=0) - f.min(axis=0)) / len(f)


def hvpoi(mean: np.ndarray, var: np.ndarray, front: np.ndarray, reference) -> np.ndarray:
    """HVPoI of N candidates; mean and var have shape (N, 2)."""
    mean = np.atleast_2d(mean)
    std = np.sqrt(np.maximum(np.atleast_2d(var), 1e-12))
    lower, upper = nondominated_cells(front, reference)            # (C, 2) each
    z_up = (upper[None, :, :] - mean[:, None, :]) / std[:, None, :]  # (N, C, 2)
    z_lo = (lower[None, :, :] - mean[:, None, :]) / std[:, None, :]
    poi = np.sum(np.prod(stats.norm.cdf(z_up) - stats.norm.cdf(z_lo), axis=2), axis=1)
    inside = np.all(upper[None, :, :] > mean[:, None, :], axis=2)   # (N, C)
    extent = upper[None, :, :] - np.maximum(lower[None, :, :], mean[:, None, :])
    dhv = np.sum(np.where(inside, np.prod(extent, axis=2), 0.0), axis=1)
    return dhv * poi
