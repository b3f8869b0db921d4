"""Random sampling of hyperparameters: paper 001 Tables 3-4 for the DP-SGD problems (each
distribution truncated to its accept range by rejection, integer-valued where stated), and
uniform / log-uniform over the domain for parameters without a published distribution; and
`sample_uniform`, the naive baseline the paper says its distributions beat: every parameter
uniform over its accept range (the original's random_sampling_all_uniform.py)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..problems.problem import Param, Problem


def _draw_domain(p: Param, rng: np.random.Generator) -> float:
    if p.integer:
        return float(rng.integers(int(p.low), int(p.high) + 1))
    if p.log:
        return float(np.exp(rng.uniform(np.log(p.low), np.log(p.high))))
    return float(rng.uniform(p.low, p.high))


def sample(problem: Problem, count: int, rng: np.random.Generator) -> pd.DataFrame:
    """`count` points, one row each, columns in the problem's parameter order."""
    rows = []
    for _ in range(count):
        row = {}
        for p in problem.domain:
            s = problem.samplers.get(p.name)
            row[p.name] = s.draw(rng) if s else _draw_domain(p, rng)
            if p.integer:
                row[p.name] = int(row[p.name])
        rows.append(row)
    return pd.DataFrame(rows, columns=problem.names)


def uniform_range(problem: Problem, p: Param) -> tuple[float, float]:
    """A parameter's range for uniform sampling: its Tables 3-4 accept range, else its domain."""
    s = problem.samplers.get(p.name)
    return (s.low, s.high) if s else (p.low, p.high)


def sample_uniform(problem: Problem, count: int, rng: np.random.Generator) -> pd.DataFrame:
    """`count` points, every parameter uniform (linear scale; integers uniform over the integers) over
    `uniform_range`, one row each."""
    columns = {}
    for p in problem.domain:
        low, high = uniform_range(problem, p)
        columns[p.name] = rng.integers(int(low), int(high) + 1, count) if p.integer else rng.uniform(low, high, count)
    return pd.DataFrame(columns, columns=problem.names)
