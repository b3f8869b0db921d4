"""The `query` rule's body: ask a finished chain's front (bo.query), then train the suggestion R
times with the problem's own oracles, so the prediction is checked against a real training."""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from ..problems.evaluate import evaluate, load_data, source_label
from ..problems.problem import Problem
from ..problems.tables import read_frame
from .propose import Settings
from .query import FrontQuery, query_rng

log = logging.getLogger(__name__)


def answer_and_train(problem: Problem, chain: str, kind: str, target: float, settings: Settings, repeats: int,
                     seed: int, run: int, search: bool = False) -> pd.DataFrame:
    """One row: the question, the suggestion with its exact epsilon, predicted utility and predictive
    interval for one training (interval_low, interval_high at interval_level: GP, not a guarantee), the
    nearest and best evaluated points, and the suggestion's evaluation (utility, its replications,
    failure, and `runs_in_interval`: the share of those R single trainings inside the interval).
    With no feasible suggestion, the row has no hyperparameters and NaN utilities. The answer is a trained point
    of the chain, its trainings in `trainings` (`search`: the GP's search of the whole domain too)."""
    data = load_data(problem)
    query = FrontQuery(problem, read_frame(chain), data, settings, query_rng(seed, problem.name, kind, target, run))
    answer = query.for_epsilon(target, search) if kind == "eps" else query.for_utility(target, search)
    row = {**answer.row(), "source_label": source_label(problem, data)}
    log.info("%s %s: %s", problem.name, answer.question, row)
    if answer.point is None:
        return pd.DataFrame([{**row, "target": target, "utility": np.nan, "error": np.nan, "utility_min": np.nan,
                              "utility_max": np.nan, "runs_in_interval": np.nan, "repeats": repeats,
                              "failure": "no feasible suggestion"}])
    method = f"query-{kind}{target:g}"
    evaluated = evaluate(problem, pd.DataFrame([answer.point]), data, repeats, seed, method, run).iloc[0].to_dict()
    keep = {k: v for k, v in evaluated.items() if k not in row or k == "epsilon"}
    runs = np.asarray(evaluated["utility_runs"], dtype=float)
    keep["runs_in_interval"] = (float(np.mean((runs >= answer.interval_low) & (runs <= answer.interval_high)))
                                if len(runs) else np.nan)
    if kind == "utility":   # what the answer promises: one training reaches the target
        keep["runs_reaching_target"] = float(np.mean(runs >= target)) if len(runs) else np.nan
    if not np.isnan(evaluated["epsilon"]) and evaluated["epsilon"] != row["epsilon"]:
        raise AssertionError("the evaluation's epsilon differs from the query's: the privacy oracle is not deterministic")
    return pd.DataFrame([{**row, **keep, "target": target}])
