"""BO overhead against training time, and batch-vs-sequential DPareto, from the chain's Parquet files."""
from __future__ import annotations

import pandas as pd

from .hypervolume import hypervolume


def overhead_row(problem: str, proposals: pd.DataFrame, evals: pd.DataFrame) -> dict:
    """Mean seconds per BO iteration: GP fit, acquisition, the whole proposal job; training (the
    oracle evaluation) and its whole job; BO's share of an iteration's job time."""
    bo_job = float(proposals.groupby("round")["job_seconds"].first().mean())
    eval_job = float(evals["job_seconds"].mean())
    return {
        "problem": problem, "iterations": len(evals),
        "fit_seconds": float(proposals.groupby("round")["fit_seconds"].first().mean()),
        "acquisition_seconds": float(proposals.groupby("round")["acquisition_seconds"].first().mean()),
        "proposal_job_seconds": bo_job,
        "training_seconds": float(evals["wall_seconds"].mean()),
        "evaluation_job_seconds": eval_job,
        "bo_fraction_of_iteration": bo_job / (bo_job + eval_job),
    }


def batch_rows(batch_size: int, initial: pd.DataFrame, proposals: pd.DataFrame, evals: pd.DataFrame) -> pd.DataFrame:
    """Hypervolume after each round, with the wall-clock a run with `batch_size` parallel workers
    takes: per round, the proposal job plus the slowest of its evaluation jobs (measured)."""
    rows, wall = [], 0.0
    seen = initial
    for r, round_evals in evals.sort_values("index").groupby("round", sort=True):
        wall += float(proposals.loc[proposals["round"] == r, "job_seconds"].iloc[0]) + float(round_evals["job_seconds"].max())
        seen = pd.concat([seen, round_evals])
        rows.append({"batch_size": batch_size, "round": int(r), "evaluations": len(seen),
                     "hypervolume": hypervolume(seen), "wall_seconds": wall})
    return pd.DataFrame(rows)


def equal_count_table(per_q: pd.DataFrame) -> pd.DataFrame:
    """Rows at the evaluation counts every batch size reached."""
    common = set.intersection(*(set(g["evaluations"]) for _, g in per_q.groupby("batch_size")))
    return per_q[per_q["evaluations"].isin(common)].sort_values(["evaluations", "batch_size"]).reset_index(drop=True)


