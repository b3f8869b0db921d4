"""The release's candidates: the training settings of the front's points (the tuning study's), and
optionally jittered copies of them, or, where the tuning is private, settings drawn from the domain's prior.
Only the tuning rows (given up, or public) and seeds decide them."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import UserError
from ..pareto import pareto_mask
from ..problems.problem import Problem
from ..problems.tables import succeeded
from .settings import CandidateSettings


def front_points(evaluations: pd.DataFrame, problem: Problem, error_floor: float) -> tuple[pd.DataFrame, bool]:
    """The Pareto-optimal evaluations in (epsilon, error), one row per distinct setting, by increasing
    epsilon: those that beat the trivial predictor (error below `error_floor`), or, where none does (a
    short tuning study), the whole front; and whether they beat it."""
    ok = succeeded(evaluations)
    ok = ok[np.isfinite(ok["epsilon"]) & np.isfinite(ok["error"])]
    front = ok[pareto_mask(ok[["epsilon", "error"]].to_numpy())] if len(ok) else ok
    better = front[front["error"] < error_floor]
    chosen = better if len(better) else front
    return chosen.drop_duplicates(subset=problem.names).sort_values("epsilon").reset_index(drop=True), bool(len(better))


def choose(front: pd.DataFrame, problem: Problem, total_epsilon: float, settings: CandidateSettings,
           rng: np.random.Generator) -> tuple[list[dict], list[tuple[float, float]], list[str]]:
    """(points, (front epsilon, front utility) of each, origin of each): at most `settings.max` front
    points, those whose epsilon is nearest `total_epsilon` on a log scale (the part of the front a release
    at that total competes with), then `settings.perturbations` jittered copies of each."""
    if front.empty:
        raise UserError(f"The tuning study of {problem.name} has no successful evaluation, so there is no front to "
                        f"release from; fix the failures its evaluation rows record, then rerun it.")
    distance = np.abs(np.log(front["epsilon"].clip(lower=1e-300)) - math.log(total_epsilon))
    kept = front.iloc[np.argsort(distance.to_numpy(), kind="stable")[:settings.max]].sort_values("epsilon")
    points, values, origins = [], [], []
    for _, row in kept.iterrows():
        point = problem.check({name: row[name] for name in problem.names})
        for copy in range(1 + settings.perturbations):
            points.append(point if copy == 0 else perturbed(point, problem, settings.scale, rng))
            values.append((float(row["epsilon"]), float(row["utility"])))
            origins.append("front" if copy == 0 else "perturbed")
    return points, values, origins


def prior_points(problem: Problem, count: int, rng: np.random.Generator) -> list[dict]:
    """`count` settings drawn from the domain's prior (the random-sampling distributions, paper 001 Tables
    3-4, or uniform / log-uniform over the domain) by a seeded generator: chosen before any data is read."""
    from ..baselines.random_search import sample

    return [problem.check(row) for row in sample(problem, count, rng).to_dict("records")]


def perturbed(point: dict, problem: Problem, scale: float, rng: np.random.Generator) -> dict:
    """`point` with each parameter moved by a factor exp(U(-scale, scale)) (integers rounded), kept in
    the problem's domain; `noise` is left alone (the release recalibrates it)."""
    out = dict(point)
    for param in problem.domain:
        if param.name == "noise":
            continue
        value = float(point[param.name]) * math.exp(rng.uniform(-scale, scale))
        value = min(max(value, param.low), param.high)
        out[param.name] = int(round(value)) if param.integer else value
    return out
