"""Transforms between the problem's spaces and the GPs' spaces.

Outputs: privacy as log(epsilon), utility as logit(error) (paper 001 §3); both clipped so that
infinite epsilon or a perfect / useless model stay finite. Inputs: each hyperparameter mapped
to [0, 1], on a log scale where the parameter is searched on one; integers are rounded on the
way back.
"""
from __future__ import annotations

import numpy as np

from ..problems.registry import Problem

EPS_RANGE = (1e-8, 1e8)
ERROR_RANGE = (1e-4, 1 - 1e-4)


def privacy_to_gp(epsilon):
    return np.log(np.clip(np.asarray(epsilon, dtype=float), *EPS_RANGE))


def privacy_from_gp(value):
    return np.exp(np.asarray(value, dtype=float))


def error_to_gp(error):
    e = np.clip(np.asarray(error, dtype=float), *ERROR_RANGE)
    return np.log(e) - np.log1p(-e)


def error_from_gp(value):
    return 1.0 / (1.0 + np.exp(-np.asarray(value, dtype=float)))


def objectives_to_gp(epsilon, error) -> np.ndarray:
    return np.stack([privacy_to_gp(epsilon), error_to_gp(error)], axis=-1)


def objectives_from_gp(values) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    return np.stack([privacy_from_gp(v[..., 0]), error_from_gp(v[..., 1])], axis=-1)


class InputScaler:
    """Hyperparameter points <-> the unit cube, per dimension (log scale where the parameter is)."""

    def __init__(self, problem: Problem):
        self.problem = problem
        self.low = np.array([np.log(p.low) if p.log else p.low for p in problem.domain], dtype=float)
        self.high = np.array([np.log(p.high) if p.log else p.high for p in problem.domain], dtype=float)
        self.log = np.array([p.log for p in problem.domain])
        self.integer = np.array([p.integer for p in problem.domain])

    def to_unit(self, points) -> np.ndarray:
        x = np.asarray(points, dtype=float)
        x = np.where(self.log, np.log(np.maximum(x, 1e-300)), x)
        span = np.where(self.high > self.low, self.high - self.low, 1.0)
        return (x - self.low) / span

    def from_unit(self, unit) -> np.ndarray:
        u = np.clip(np.asarray(unit, dtype=float), 0.0, 1.0)
        x = self.low + u * (self.high - self.low)
        x = np.where(self.log, np.exp(x), x)
        x = np.where(self.integer, np.round(x), x)
        lows = np.array([p.low for p in self.problem.domain])
        highs = np.array([p.high for p in self.problem.domain])
        return np.clip(x, lows, highs)
