"""Pareto fronts, 2-D hypervolume and the cells of the non-dominated region (both objectives minimised)."""
from __future__ import annotations

import numpy as np


def pareto_mask(points: np.ndarray) -> np.ndarray:
    """True for the points no other point dominates (<= in both, < in one); duplicates are kept once."""
    pts = np.asarray(points, dtype=float)
    order = np.lexsort((pts[:, 1], pts[:, 0]))  # by first objective, then second
    mask = np.zeros(len(pts), dtype=bool)
    best = np.inf
    for i in order:
        if pts[i, 1] < best:
            mask[i] = True
            best = pts[i, 1]
    return mask


def pareto_front(points: np.ndarray) -> np.ndarray:
    """The non-dominated points, sorted by the first objective (so the second decreases)."""
    pts = np.asarray(points, dtype=float)
    front = pts[pareto_mask(pts)]
    return front[np.argsort(front[:, 0])]


def hypervolume_2d(points: np.ndarray, reference) -> float:
    """Area dominated by `points` and bounded by `reference` (the anti-ideal point)."""
    ref = np.asarray(reference, dtype=float)
    pts = np.asarray(points, dtype=float)
    pts = pts[(pts[:, 0] < ref[0]) & (pts[:, 1] < ref[1])]
    if len(pts) == 0:
        return 0.0
    front = pareto_front(pts)
    xs = np.append(front[1:, 0], ref[0])
    return float(np.sum((xs - front[:, 0]) * (ref[1] - front[:, 1])))


def nondominated_cells(front: np.ndarray, reference) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint cells covering the region below `reference` that `front` does not dominate.

    With the front sorted by x (x_1 < ... < x_k, y decreasing), cell j is the strip
    x in [x_j, x_{j+1}], y in [-inf, y_j], with x_0 = -inf, y_0 = ref_y and x_{k+1} = ref_x.
    Returns (lower, upper) corners, shape (k+1, 2) each.
    """
    ref = np.asarray(reference, dtype=float)
    f = pareto_front(front)
    f = f[(f[:, 0] < ref[0]) & (f[:, 1] < ref[1])]
    xs = np.concatenate([[-np.inf], f[:, 0], [ref[0]]])
    ys = np.concatenate([[ref[1]], f[:, 1]])
    lower = np.stack([xs[:-1], np.full(len(ys), -np.inf)], axis=1)
    upper = np.stack([xs[1:], ys], axis=1)
    return lower, upper
