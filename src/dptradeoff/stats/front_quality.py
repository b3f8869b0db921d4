"""How well each method of a DPareto study found a problem's front, side by side on the same budget:
every front metric, the gap to the front of everything evaluated, where the proposals went (the
domain's minimum-epsilon corner, utility at the floor), and the optimiser's seconds per proposal."""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from ..problems.problem import Problem
from ..problems.tables import succeeded
from .cost import in_training_order, is_traced, spent, trainings, within
from .front_metrics import FrontMetric, Region, gap_to_reference

# A proposal "at the corner" has epsilon within this factor of the domain's smallest; "at the floor" has
# an error within this much of the error floor (or above it).
CORNER_FACTOR = 1.01
FLOOR_MARGIN = 0.01


def minimum_epsilon(problem: Problem, n: int | None) -> float:
    """The smallest epsilon over the corners of the problem's domain (DP-SGD: fewest epochs, smallest lot,
    most noise), from its privacy oracle."""
    # integer parameters as ints (a domain of your own holds its bounds as floats; a built-in trainer used as
    # your oracle refuses a lot size of 16.0)
    corners = itertools.product(*[(int(p.low), int(p.high)) if p.integer else (p.low, p.high) for p in problem.domain])
    return min(float(problem.oracle.epsilon(dict(zip(problem.names, c)), n=n, delta=problem.delta)) for c in corners)


def where_proposals_go(points: pd.DataFrame, corner_epsilon: float, floor: float) -> dict:
    """Fractions of `points` (a method's points after the shared initial ones) at the minimum-epsilon
    corner and with utility within FLOOR_MARGIN of the floor."""
    if points.empty:
        return {"at_min_epsilon_corner": np.nan, "at_utility_floor": np.nan}
    return {"at_min_epsilon_corner": float(np.mean(points["epsilon"] <= CORNER_FACTOR * corner_epsilon)),
            "at_utility_floor": float(np.mean(points["error"] >= floor - FLOOR_MARGIN))}


def method_row(problem: str, method: str, evals: pd.DataFrame, k0: int, metrics: list[FrontMetric], region: Region,
               reference: pd.DataFrame, corner_epsilon: float, proposals: pd.DataFrame | None) -> dict:
    """One method's row: `evals` in evaluation order (its first k0 are the shared initial points)."""
    ok = succeeded(evals)
    row = {"problem": problem, "method": method, "evaluations": len(evals), "trainings": trainings(evals),
           "training_cost": spent(evals), "failed": len(evals) - len(ok)}
    for metric in metrics:
        row[metric.name] = metric.value(ok["epsilon"], ok["error"])
    row["region_gap_to_reference"] = gap_to_reference(ok["epsilon"], ok["error"], reference["epsilon"],
                                                      reference["error"], region)
    after = ok[ok["index"] >= k0] if "index" in ok else ok.iloc[k0:]   # a trace's rows share their training's index
    row.update(where_proposals_go(after, corner_epsilon, region.error_floor))
    row["error_floor"] = region.error_floor
    row["seconds_per_proposal"] = (float(proposals.groupby("round")["proposal_seconds"].first().median())
                                   if proposals is not None and "proposal_seconds" in proposals else np.nan)
    return row


def front_quality_table(problem: str, chains: dict[str, pd.DataFrame], proposals: dict[str, pd.DataFrame],
                        sampling: dict[str, pd.DataFrame], others: list[pd.DataFrame], k0: int,
                        metrics: list[FrontMetric], region: Region, corner_epsilon: float) -> pd.DataFrame:
    """Rows for every chain (`chains`: method -> its evaluations, `proposals`: method -> its proposal rows)
    and every sampling baseline cut to the chains' budget: as many evaluations, or, where a chain
    recorded epoch traces, every method (chains too) cut at the training cost of the chain that spent
    least (`stats.cost`); the reference front is that of everything evaluated for the problem
    (`others`: grids, Table 2's sample)."""
    by_cost = any(is_traced(f) for f in chains.values())
    reference = succeeded(pd.concat([*chains.values(), *sampling.values(), *others], ignore_index=True))
    if by_cost:   # every method, chains too, cut at the cost of the chain that spent least
        budget = min(spent(f) for f in chains.values())
        chains = {m: within(f, budget) for m, f in chains.items()}
    else:
        budget = max(len(f) for f in chains.values())
    rows = [method_row(problem, m, f, k0, metrics, region, reference, corner_epsilon, proposals.get(m))
            for m, f in chains.items()]
    rows += [method_row(problem, m, within(f, budget) if by_cost else in_training_order(f).iloc[:budget], k0, metrics,
                        region, reference, corner_epsilon, None) for m, f in sampling.items()]
    return pd.DataFrame(rows)
