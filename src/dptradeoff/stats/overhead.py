"""BO overhead against training time, and batch-vs-sequential DPareto, from the chain's Parquet files."""
from __future__ import annotations

import pandas as pd

from .hypervolume import hypervolume


# Paper 001 §4: DPareto's overhead (GP initialisation on the 16 seed points, then 256 proposals) was
# "approximately 45 seconds of total wall-clock time", under 0.1 % of the adult study's time.
PAPER_BO_SECONDS = 45.0


def overhead_row(problem: str, proposals: pd.DataFrame, chain: pd.DataFrame, study: pd.DataFrame) -> dict:
    """BO's cost for one problem. Totals, the paper's quantity: seconds of BO over the whole chain
    (GP fits + HVPoI maximisation; and the whole proposal jobs), the training seconds of the chain's
    evaluations (initial points included) and of every evaluation of the problem's study (`study`:
    all methods), and BO's share of each. Means per BO iteration as before."""
    rounds = proposals.groupby("round")[["fit_seconds", "acquisition_seconds", "job_seconds"]].first()
    iterations = chain[chain["method"] == "dpareto"]
    bo_seconds = float(rounds["fit_seconds"].sum() + rounds["acquisition_seconds"].sum())
    bo_job_seconds = float(rounds["job_seconds"].sum())
    chain_training = float(chain["wall_seconds"].sum())
    study_training = float(study["wall_seconds"].sum())
    bo_job = float(rounds["job_seconds"].mean())
    eval_job = float(iterations["job_seconds"].mean())
    return {
        "problem": problem, "initial_points": int(len(chain) - len(iterations)), "iterations": len(iterations),
        "bo_seconds_total": bo_seconds, "paper_bo_seconds_total": PAPER_BO_SECONDS,
        "proposal_job_seconds_total": bo_job_seconds,
        "chain_training_seconds": chain_training, "study_training_seconds": study_training,
        "study_evaluations": len(study),
        "bo_share_of_chain": bo_seconds / (bo_seconds + chain_training),
        "bo_share_of_study": bo_seconds / (bo_seconds + study_training),
        "fit_seconds": float(rounds["fit_seconds"].mean()),
        "acquisition_seconds": float(rounds["acquisition_seconds"].mean()),
        "proposal_job_seconds": bo_job,
        "training_seconds": float(iterations["wall_seconds"].mean()),
        "evaluation_job_seconds": eval_job,
        "bo_fraction_of_iteration": bo_job / (bo_job + eval_job),
    }


def batch_rows(batch_size: int, initial: pd.DataFrame, proposals: pd.DataFrame, evals: pd.DataFrame) -> pd.DataFrame:
    """Hypervolume after each round, with the wall-clock a run with `batch_size` parallel workers
    takes: per round, the proposal job plus the slowest of its evaluation jobs (measured)."""
    rows, wall = [], 0.0
    seen = initial
    for r, round_evals in evals.sort_values("index", kind="stable").groupby("round", sort=True):
        wall += float(proposals.loc[proposals["round"] == r, "job_seconds"].iloc[0]) + float(round_evals["job_seconds"].max())
        seen = pd.concat([seen, round_evals])
        rows.append({"batch_size": batch_size, "round": int(r), "evaluations": len(seen),
                     "hypervolume": hypervolume(seen), "wall_seconds": wall})
    return pd.DataFrame(rows)


def equal_count_table(per_q: pd.DataFrame) -> pd.DataFrame:
    """Rows at the evaluation counts every batch size reached."""
    common = set.intersection(*(set(g["evaluations"]) for _, g in per_q.groupby("batch_size")))
    return per_q[per_q["evaluations"].isin(common)].sort_values(["evaluations", "batch_size"]).reset_index(drop=True)


