"""What an evaluated point's own trainings support: how many there are, the standard error of their mean and a
lower bound on the point's expected utility, for the front's table and figure and the best evaluated point
(`dptradeoff front`, the query rule's answers). A point measured on few trainings is not taken at its mean: three
lucky trainings of a point whose expected utility is 0.890 measured 0.9964 (OpenDP's Laplace mean at epsilon
7.5e-5, where 5 % of trainings reach 0.993) and were printed as the best evaluated point.

A row's sd is its trainings' sample sd shrunk towards the pooled sd of every row of the frame with two or more
trainings, with PRIOR_DOF degrees of freedom (one or two trainings say little about their own spread):
    sd_i^2 = ((n_i - 1) s_i^2 + PRIOR_DOF s_pool^2) / (n_i - 1 + PRIOR_DOF),  se_i = sd_i / sqrt(n_i),
and its supported utility is mean_i - z_SUPPORT_LEVEL se_i (a normal approximation; not a guarantee)."""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from ..problems.tables import succeeded

PRIOR_DOF = 2.0
SUPPORT_LEVEL = 0.9
SUPPORT_LABEL = (f"utility_supported = mean - {stats.norm.ppf(SUPPORT_LEVEL):.2f} standard errors of the point's own "
                 f"trainings (sd shrunk towards the study's pooled sd; not a guarantee)")


def _runs(evals: pd.DataFrame) -> list[np.ndarray]:
    if "utility_runs" in evals:
        return [np.asarray(r if r is not None else [], dtype=float) for r in evals["utility_runs"]]
    return [np.array([u], dtype=float) for u in evals["utility"]]


def with_support(evals: pd.DataFrame) -> pd.DataFrame:
    """`evals` with `n_trainings`, `utility_se` and `utility_supported` (the module's formula)."""
    runs = _runs(evals)
    n = np.array([max(len(r), 1) for r in runs], dtype=float)
    dof = np.array([max(len(r) - 1, 0) for r in runs], dtype=float)
    s2 = np.array([r.var(ddof=1) if len(r) > 1 else 0.0 for r in runs])
    pooled = float((dof * s2).sum() / dof.sum()) if dof.sum() > 0 else 0.0
    sd2 = (dof * s2 + PRIOR_DOF * pooled) / (dof + PRIOR_DOF)
    se = np.sqrt(sd2 / n)
    return evals.assign(n_trainings=n.astype(int), utility_se=se,
                        utility_supported=evals["utility"].to_numpy(float) - stats.norm.ppf(SUPPORT_LEVEL) * se)


def best_evaluated(evals: pd.DataFrame, kind: str, target: float) -> pd.DataFrame:
    """The evaluated rows that meet the question, best first, by what their trainings support: `eps` the highest
    `utility_supported` with epsilon <= target; `utility` the smallest epsilon whose `utility_supported` >= target."""
    ok = with_support(succeeded(evals))
    if kind == "eps":
        return ok[ok["epsilon"] <= target].sort_values("utility_supported", ascending=False, kind="stable")
    return ok[ok["utility_supported"] >= target].sort_values("epsilon", kind="stable")
