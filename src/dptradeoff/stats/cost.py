"""Training cost: what a method spent, so that methods (traced or not) are compared at equal cost.

Every evaluation row records the training cost it added (`problems.evaluate.cost_columns`):
`cost_epochs`, trace-axis units of one replication (a traced training's rows share its epochs, each
row the epochs since the row before). Rows without a trace axis (SVT, output perturbation) or
written before costs were recorded count one evaluation each.
"""
from __future__ import annotations

import numpy as np
import pandas as pd


def in_training_order(evals: pd.DataFrame) -> pd.DataFrame:
    """The rows in the order they were trained: by evaluation index, a trace's rows in their own order. A
    continued training's rows (`segment_start` > 0) keep the training's index but were trained later: they
    stay after the rows before them in the given (file) order."""
    key = evals["index"].to_numpy(float)
    if "segment_start" in evals:
        resumed = evals["segment_start"].fillna(0).to_numpy(float) > 0
        if resumed.any():
            before = np.maximum.accumulate(np.where(resumed, -np.inf, key))
            key = np.where(resumed, before + 0.5, key)
    return evals.iloc[np.argsort(key, kind="stable")]


def row_costs(evals: pd.DataFrame) -> np.ndarray:
    """The cost each row added: its `cost_epochs`, or one evaluation where it has none."""
    if "cost_epochs" not in evals:
        return np.ones(len(evals))
    cost = evals["cost_epochs"].to_numpy(float)
    return np.where(np.isnan(cost), 1.0, cost)


def cumulative_cost(evals: pd.DataFrame) -> np.ndarray:
    """The cost spent up to and including each row, in the rows' order."""
    return np.cumsum(row_costs(evals))


def spent(evals: pd.DataFrame) -> float:
    return float(row_costs(evals).sum())


def within(evals: pd.DataFrame, budget: float) -> pd.DataFrame:
    """The rows (in training order) a method had when it had spent `budget`: a training cut by the
    budget keeps the trace rows it reached."""
    ordered = in_training_order(evals)
    return ordered[cumulative_cost(ordered) <= budget * (1 + 1e-12)]


def is_traced(evals: pd.DataFrame) -> bool:
    """Whether any training of the rows recorded a trace (rows other than its own point)."""
    return "trace_final" in evals and not evals["trace_final"].astype(bool).all()


def trainings(evals: pd.DataFrame) -> int:
    """The number of trainings behind the rows (each has one `trace_final` row per segment, the first with
    `segment_start` 0; older files: one per row)."""
    if "trace_final" not in evals:
        return len(evals)
    final = evals["trace_final"].astype(bool)
    if "segment_start" in evals:
        final &= evals["segment_start"].fillna(0) == 0
    return int(final.sum())


def parts_of_equal_cost(evals: pd.DataFrame, budget: float, parts: int) -> list[pd.DataFrame]:
    """`parts` consecutive groups of whole trainings (in training order), each spending at most `budget`
    and as close to it as whole trainings allow: Table 2's random parts at a chain's training cost."""
    ordered = in_training_order(evals)
    costs = ordered.assign(_cost=row_costs(ordered)).groupby("index", sort=False)["_cost"].sum()
    groups, current, total = [], [], 0.0
    for index, cost in costs.items():
        if total + cost > budget * (1 + 1e-12) and current:
            groups.append(current)
            current, total = [], 0.0
            if len(groups) == parts:
                break
        current.append(index)
        total += cost
    if len(groups) < parts:
        raise ValueError(f"the random sample's {trainings(ordered)} trainings cannot make {parts} parts of training cost "
                         f"{budget:g}")
    return [ordered[ordered["index"].isin(g)] for g in groups[:parts]]
