"""Hypervolume-based probability of improvement (HVPoI), as in GPflowOpt and paper 001 §3.

For a candidate with independent Gaussian predictions N(mu_d, s_d^2) of the two (transformed)
objectives, given the current front F (GP means at the observed inputs) and a reference point:
  PoI(x)  = sum over the cells [l, u] of the non-dominated region of prod_d (Phi((u_d - mu_d)/s_d) - Phi((l_d - mu_d)/s_d)),
  dHV(x)  = the hypervolume that the mean mu adds to F within the reference box,
  HVPoI   = dHV(mu) * PoI.
"""
from __future__ import annotations

import numpy as np
from scipy import special

from ..pareto import nondominated_cells, pareto_front


def adaptive_reference(front: np.ndarray) -> np.ndarray:
    """GPflowOpt's reference: max(front) + 2 * range(front) / size(front), per objective."""
    f = pareto_front(front)
    return f.max(axis=0) + 2.0 * (f.max(axis=0) - f.min(axis=0)) / len(f)


def hvpoi(mean: np.ndarray, var: np.ndarray, front: np.ndarray, reference) -> np.ndarray:
    """HVPoI of N candidates; mean and var have shape (N, 2)."""
    lower, upper = nondominated_cells(front, reference)
    return added_hypervolume(mean, lower, upper) * improvement_probability(mean, var, lower, upper)


def added_hypervolume(mean: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """dHV: the hypervolume each mean (N, 2) adds to the front whose non-dominated region is the
    cells (lower, upper corners). Zero for a dominated mean, whatever its variance: the
    acquisition search needs variances only where this is positive."""
    mean = np.atleast_2d(mean)
    # per objective, the extent of each cell (N, C) beyond the mean, 0 where the mean is past it
    extents = [np.maximum(upper[None, :, d] - np.maximum(lower[None, :, d], mean[:, d, None]), 0.0) for d in (0, 1)]
    return np.einsum("nc,nc->n", *extents)


def improvement_probability(mean: np.ndarray, var: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """PoI: the Gaussian probability mass of each candidate in the non-dominated cells."""
    mean = np.atleast_2d(mean)
    std = np.sqrt(np.maximum(np.atleast_2d(var), 1e-12))
    z_up = (upper[None, :, :] - mean[:, None, :]) / std[:, None, :]  # (N, C, 2)
    z_lo = (lower[None, :, :] - mean[:, None, :]) / std[:, None, :]
    return np.sum(np.prod(special.ndtr(z_up) - special.ndtr(z_lo), axis=2), axis=1)   # ndtr: the normal cdf
