"""What a job asks a scheduler for, in Snakemake's generic resources (`mem_mb`, `runtime` in
minutes, `gpu`): the evaluation jobs' from the points they train and the data they load, the
others' from measurements of the default config (docs/cluster.md). Locally these only
bound how many jobs run at once (`--resources mem_mb=...`); on SLURM they become --mem, -t, --gpus.

Requests are estimates times SAFETY, and grow with Snakemake's `attempt`: a job killed for its
time or memory is retried (profiles/slurm: `retries`) with twice, then three times, as much."""
from __future__ import annotations

import math

import pandas as pd

from .io import parquet_metadata
from .problems.problem import Problem

SAFETY = 2.0
# Interpreter, numpy/torch/TensorFlow imports, reading the dataset: 4-9 s per job measured here;
# a loaded cluster node is slower.
STARTUP_SECONDS = 60.0
# An evaluation job's memory beyond its data: 320 MB (Adult, numpy/numba) to 610 MB (MNIST, torch)
# peak RSS measured here; the data itself is counted from its shape.
BASE_MEM_MB = 1000
# Evaluations whose oracle has no cost model (a user oracle without `cost_seconds`).
UNKNOWN_EVALUATION_MINUTES = 60


def evaluation_runtime(problem: Problem, points: pd.DataFrame, repeats: int, n: int | None, attempt: int = 1) -> int:
    """Minutes for one job that evaluates `points` with `repeats` replications each."""
    costs = [problem.oracle.cost_seconds(problem.check(row), n) for row in points.to_dict("records")]
    if any(c is None for c in costs):
        return UNKNOWN_EVALUATION_MINUTES * attempt
    seconds = STARTUP_SECONDS + repeats * sum(costs)
    return math.ceil(SAFETY * attempt * seconds / 60)


def question_runtime(problem: Problem, seconds: float, least_trainings: int, repeats: int, n: int | None,
                     attempt: int = 1) -> int:
    """Minutes for one question of the one rule (`bo.timed_questions`): its seconds, raised to `least_trainings`
    trainings of the costliest point where they buy fewer, then its `repeats` retrainings."""
    cost = problem.oracle.cost_seconds(problem.check(costliest_point(problem)), n)
    if cost is None:
        return max(UNKNOWN_EVALUATION_MINUTES, math.ceil(seconds / 60)) * attempt
    total = STARTUP_SECONDS + max(float(seconds), least_trainings * cost) + repeats * cost
    return math.ceil(SAFETY * attempt * total / 60)


def evaluation_mem_mb(matrix_paths: list[str], attempt: int = 1) -> int:
    """MB for one job that loads the matrices at `matrix_paths` (train, test: float32 features):
    the base footprint plus four copies of the data (the Parquet buffers, numpy, torch, a batch)."""
    data_mb = sum(_matrix_mb(p) for p in matrix_paths)
    return math.ceil(SAFETY * attempt * (BASE_MEM_MB / SAFETY + 4 * data_mb) / 100) * 100


def _matrix_mb(path: str) -> float:
    meta = parquet_metadata(path)   # the footer only, read once: rows and the feature count
    return meta.num_rows * meta.schema.to_arrow_schema().field("x").type.list_size * 4 / 2**20


def training_rows(data_paths: list[str]) -> int | None:
    """n of a problem's dataset (the train split is listed first), or None without one."""
    return parquet_metadata(data_paths[0]).num_rows if data_paths else None


def costliest_point(problem: Problem) -> dict:
    """The corner of the domain whose training costs most (for a job whose point is not known
    before it runs: a front query's answer)."""
    corners = [{}]
    for p in problem.domain:
        values = (int(p.low), int(p.high)) if p.integer else (p.low, p.high)
        corners = [{**c, p.name: v} for c in corners for v in values]
    return max(corners, key=lambda c: problem.oracle.cost_seconds(c, 10**4) or 0.0)


# Table 3's trials (expost_ml_trials): seconds per per-example gradient of DP-SGD on one CPU core,
# measured here on the embedded MNIST digits (config/README.md): the Basic MNIST Example CNN
# 2.3-3.4 ms (lots of 32 to 1,000), MLP2 11 us (as its evaluation jobs). Linear models (Twitter,
# Gisette) keep the fixed request, as do the networks when the estimate is smaller.
TABLE3_SECONDS_PER_EXAMPLE = {"cnn": 3e-3, "mlp2": 11e-6}
TABLE3_MINUTES = 60


def table3_trials_runtime(candidates: pd.DataFrame, n: int, model: str | None, table3: dict, attempt: int = 1) -> int:
    """Minutes for one expost_ml_trials job: trials x the DP-SGD epochs one trial is expected to
    train x n x the model's seconds per example. A trial: one Alg. 3 attempt (each candidate's
    epochs times its chance of running, E[e^{-eps_i k}] at its RDP at alpha; more attempts, where the
    selected model misses the bar, are what the retries' 2x and 3x are for), plus doubling's E[K]
    runs at every budget (their mean epochs)."""
    from .expost.distributions import keep_probability_mean

    per_example = TABLE3_SECONDS_PER_EXAMPLE.get(model)
    if per_example is None:
        return TABLE3_MINUTES * attempt
    epochs = candidates["epochs"].to_numpy(dtype=float)
    alg3 = float(keep_probability_mean(candidates["rdp_at_alpha"].to_numpy(), table3["eps_prime"], "exponential") @ epochs)
    doubling = 0.0
    for budget in table3["doubling"]["budgets"]:
        pool = candidates["eps"].sub(budget).abs().lt(1e-9).to_numpy()
        doubling += table3["doubling"]["mean_runs"] * epochs[pool].mean() if pool.any() else 0.0
    seconds = STARTUP_SECONDS + table3["trials"] * (alg3 + doubling) * n * per_example
    return max(TABLE3_MINUTES * attempt, math.ceil(SAFETY * attempt * seconds / 60))
