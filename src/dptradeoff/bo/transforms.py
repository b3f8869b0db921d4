"""Transforms between the problem's spaces and the GPs' spaces.

Outputs: privacy as log(epsilon), utility as logit(error) (paper 001 §3); both clipped so that
infinite epsilon or a perfect / useless model stay finite. Inputs (`dpareto.inputs`), two
geometries of the GPs' input box, in which HVPoI's random candidates are drawn uniformly:
- `log-unit-cube` (`InputScaler`): each hyperparameter mapped to [0, 1], on a log scale where the
  parameter is searched on one, so candidates are log-uniform in learning rate, noise and clip;
- `initial-max` (`InitialMaxScaler`, the original code's): each hyperparameter divided by its
  maximum over the initial points, linear, so candidates are uniform in the linear domain.
Integers are rounded on the way back.
"""
from __future__ import annotations

import numpy as np

from ..problems.problem import Problem

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


INPUTS = ("log-unit-cube", "initial-max")


class InputScaler:
    """Hyperparameter points <-> the unit cube, per dimension (log scale where the parameter is).
    The GPs' input box is [lower, upper] = [0, 1]^d."""

    def __init__(self, problem: Problem):
        self.problem = problem
        self.low = np.array([np.log(p.low) if p.log else p.low for p in problem.domain], dtype=float)
        self.high = np.array([np.log(p.high) if p.log else p.high for p in problem.domain], dtype=float)
        self.log = np.array([p.log for p in problem.domain])
        self.integer = np.array([p.integer for p in problem.domain])
        self.lower, self.upper = np.zeros(len(problem.domain)), np.ones(len(problem.domain))

    def unrounded(self, unit) -> np.ndarray:
        """Points of the box as hyperparameters, integers not rounded (a smooth plot grid)."""
        return self._natural(self.low + np.asarray(unit, dtype=float) * (self.high - self.low))

    def _natural(self, x: np.ndarray) -> np.ndarray:
        """exp on the log-scaled dimensions only (not on, say, a lot size of 4,000: exp overflows)."""
        x = np.array(x, dtype=float)
        x[..., self.log] = np.exp(x[..., self.log])
        return x

    def to_unit(self, points) -> np.ndarray:
        x = np.asarray(points, dtype=float)
        x = np.where(self.log, np.log(np.maximum(x, 1e-300)), x)
        span = np.where(self.high > self.low, self.high - self.low, 1.0)
        return (x - self.low) / span

    def from_unit(self, unit) -> np.ndarray:
        x = self.unrounded(np.clip(np.asarray(unit, dtype=float), 0.0, 1.0))
        x = np.where(self.integer, np.round(x), x)
        lows = np.array([p.low for p in self.problem.domain])
        highs = np.array([p.high for p in self.problem.domain])
        return np.clip(x, lows, highs)


class InitialMaxScaler:
    """The original DPareto code's input scaling: each hyperparameter divided by its maximum over the
    initial points (linear, whatever the parameter's search scale). The box is the domain so scaled."""

    def __init__(self, problem: Problem, initial_points):
        self.problem = problem
        self.integer = np.array([p.integer for p in problem.domain])
        self.domain_low = np.array([p.low for p in problem.domain], dtype=float)
        self.domain_high = np.array([p.high for p in problem.domain], dtype=float)
        peak = np.max(np.asarray(initial_points, dtype=float), axis=0)
        self.factor = np.where(peak > 0, peak, self.domain_high)
        self.lower, self.upper = self.domain_low / self.factor, self.domain_high / self.factor

    def to_unit(self, points) -> np.ndarray:
        return np.asarray(points, dtype=float) / self.factor

    def unrounded(self, unit) -> np.ndarray:
        return np.asarray(unit, dtype=float) * self.factor

    def from_unit(self, unit) -> np.ndarray:
        x = self.unrounded(np.clip(np.asarray(unit, dtype=float), self.lower, self.upper))
        x = np.where(self.integer, np.round(x), x)
        return np.clip(x, self.domain_low, self.domain_high)


def input_scaler(problem: Problem, inputs: str, initial_points) -> InputScaler | InitialMaxScaler:
    """The scaler of geometry `inputs` (INPUTS); `initial_points` (an array, one row per initial
    point) set the original's scale."""
    if inputs == "log-unit-cube":
        return InputScaler(problem)
    if inputs == "initial-max":
        return InitialMaxScaler(problem, initial_points)
    raise ValueError(f"inputs must be one of {INPUTS}, got {inputs!r}")
