"""Grid search: k points per dimension between each parameter's limits (paper 001 §4: k = 3 and
4, i.e. 243 and 1,024 points for five hyperparameters). The limits are the random-sampling accept
ranges (Tables 3-4) where the paper gives them, else the domain; points are spaced on the
parameter's search scale (log for learning rate, noise and clip: `search-scale`) or evenly on every
axis (`linear`, numpy's linspace as the original code: noise {0.1, 8.05, 16} at k = 3), and rounded
for integers, or every integer of the range (`every_integer`: the fine grid of Figs 1-4)."""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from ..problems.problem import Problem


SPACINGS = ("search-scale", "linear")


def axis(problem: Problem, name: str, k: int, spacing: str = "search-scale", every_integer: bool = False) -> np.ndarray:
    if spacing not in SPACINGS:
        raise ValueError(f"grid spacing must be one of {SPACINGS}, got {spacing!r}")
    p = next(p for p in problem.domain if p.name == name)
    s = problem.samplers.get(name)
    low, high = (s.low, s.high) if s else (p.low, p.high)
    if p.integer and every_integer:
        return np.arange(low, high + 1)
    values = np.geomspace(low, high, k) if p.log and spacing == "search-scale" else np.linspace(low, high, k)
    return np.unique(np.round(values)) if p.integer else values


def grid(problem: Problem, k: int, spacing: str = "search-scale", every_integer: bool = False) -> pd.DataFrame:
    axes = [axis(problem, n, k, spacing, every_integer) for n in problem.names]
    frame = pd.DataFrame(list(itertools.product(*axes)), columns=problem.names)
    for p in problem.domain:
        if p.integer:
            frame[p.name] = frame[p.name].astype(int)
    return frame
