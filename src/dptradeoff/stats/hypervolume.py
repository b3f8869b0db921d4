"""Hypervolumes of Pareto fronts in (epsilon, error) space with the paper's anti-ideal point (10, 1)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..pareto import hypervolume_2d

ANTI_IDEAL = (10.0, 1.0)


def objectives(evals: pd.DataFrame, utility: str = "utility") -> np.ndarray:
    """(epsilon, error) per evaluation; `utility` picks the mean, min or max replication utility."""
    return np.column_stack([evals["epsilon"].to_numpy(float), 1.0 - evals[utility].to_numpy(float)])


def hypervolume(evals: pd.DataFrame, reference=ANTI_IDEAL) -> float:
    return hypervolume_2d(objectives(evals), reference)


def curve(evals: pd.DataFrame, reference=ANTI_IDEAL) -> np.ndarray:
    """Hypervolume of the first n evaluations, n = 1 .. len(evals) (rows in evaluation order)."""
    pts = objectives(evals.sort_values("index", kind="stable"))
    return np.array([hypervolume_2d(pts[: n + 1], reference) for n in range(len(pts))])
