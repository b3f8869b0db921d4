"""Paper 001 Table 2: DPareto's hypervolume against equal-budget parts of a large random sample."""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from .hypervolume import hypervolume


def significance(p: float) -> str:
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else ""


def compare(dpareto_hv: float, random_hvs) -> dict:
    """Differences DPareto - random part: mean, two-sided 95% CI, t statistic and p-value of a
    one-sample t-test of the mean difference against 0 (DPareto treated as deterministic, as the paper does)."""
    d = dpareto_hv - np.asarray(random_hvs, dtype=float)
    n = len(d)
    mean = float(d.mean())
    sem = float(d.std(ddof=1) / np.sqrt(n))
    half = float(stats.t.ppf(0.975, n - 1) * sem)
    t, p = stats.ttest_1samp(d, 0.0)
    return {"parts": n, "mean_difference": mean, "ci_low": mean - half, "ci_high": mean + half,
            "t_statistic": float(t), "p_value": float(p), "significance": significance(float(p))}


def split_parts(random_evals: pd.DataFrame, part_size: int, parts: int) -> list[pd.DataFrame]:
    rows = random_evals.sort_values("index")
    if len(rows) < part_size * parts:
        raise ValueError(f"{len(rows)} random evaluations cannot make {parts} parts of {part_size}")
    return [rows.iloc[i * part_size:(i + 1) * part_size] for i in range(parts)]


# Paper 001 Table 2: mean difference and two-sided 95 % CI, all significant at p < 0.001.
PAPER_TABLE2 = {"adult-logreg-sgd": (0.158, 0.053, 0.264), "adult-logreg-adam": (0.439, 0.272, 0.607),
                "adult-svm-sgd": (0.282, 0.161, 0.402)}


def table2(runs: dict[str, tuple[pd.DataFrame, pd.DataFrame]], part_size: int, parts: int) -> pd.DataFrame:
    """runs: problem -> (DPareto's chain evaluations, large random sample). DPareto's hypervolume is
    that of its whole chain (the k0 initial points and its k BO points); each random part has
    `part_size` points. The paper's values are printed beside ours where it reports them."""
    rows = []
    for problem, (bo_points, random_evals) in runs.items():
        dp = hypervolume(bo_points)
        hvs = [hypervolume(part) for part in split_parts(random_evals, part_size, parts)]
        paper = PAPER_TABLE2.get(problem, (np.nan,) * 3)
        rows.append({"problem": problem, "dpareto_points": len(bo_points), "dpareto_hypervolume": dp,
                     "random_mean_hypervolume": float(np.mean(hvs)), "part_size": part_size, **compare(dp, hvs),
                     "paper_mean_difference": paper[0], "paper_ci_low": paper[1], "paper_ci_high": paper[2]})
    return pd.DataFrame(rows)
