"""Paper 004's Table 3 as tables of numbers: each task's DP-SGD candidates, the per-trial results of
the three methods, and the table (our mean ex-post epsilon beside the paper's) with its note."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..io import read_matrix, read_provenance
from ..seeds import rng as make_rng
from . import ml
from .ml_tasks import TaskData, prepare, task_on
from .settings import ExpostSettings, Table3Settings
from .tuning import rdp_cost

# Paper 004's Table 3: the mean ex-post epsilon of each method, for side-by-side comparison.
PAPER_004_TABLE3 = {"twitter": {"brownian": 0.77, "doubling": 0.55, "alg3": 0.28},
                    "mnist": {"brownian": 0.62, "doubling": 0.38, "alg3": 0.32},
                    "gisette": {"brownian": 0.33, "doubling": 0.54, "alg3": 0.23}}


def load_task(dataset: str, train_path: str, test_path: str, table3: Table3Settings) -> tuple[TaskData, dict]:
    """The prepared task and the provenance every Table 3 file carries."""
    task = prepare(dataset, *read_matrix(train_path), *read_matrix(test_path), table3.thresholds[dataset],
                   table3.twitter_target_bound, task_on(dataset).configured_model(table3))
    meta = {"dataset": dataset, "source_label": read_provenance(train_path).get("source_label", "unknown"),
            "threshold": table3.thresholds[dataset], "model": task.model.name}
    return task, meta


def ml_candidates(task: TaskData, table3: Table3Settings, delta: float, conversion: str = "dp_accounting") -> pd.DataFrame:
    """The calibrated DP-SGD grid (noise calibrated by `conversion`), each candidate's RDP at alpha,
    and Thm 13's ex-post cost."""
    n = len(task.x_train)
    cands = ml.candidates(table3.grid, n, delta, conversion)
    eps_rdp = np.array([ml.rdp_curve(c, n, (table3.alpha,))[0] for c in cands])
    costs, bottom = rdp_cost(eps_rdp, table3.eps_prime, table3.alpha)
    frame = pd.DataFrame([vars(c) for c in cands])
    frame["rdp_at_alpha"], frame["expost_rdp"] = eps_rdp, costs
    frame["bottom_rdp"] = bottom   # bottom's ex-post RDP (the same for every row)
    return frame


def ml_trials(task: TaskData, candidates: pd.DataFrame, settings: ExpostSettings, seed_parts: tuple) -> pd.DataFrame:
    """`expost.table3.trials` trials of the three methods on the task, from its candidates' table."""
    t3 = settings.table3
    n = len(task.x_train)
    cands = [ml.Candidate(r.eps, r.learning_rate, int(r.epochs), int(r.batch_size), r.clip, r.noise, r.eps_achieved)
             for r in candidates.itertuples()]
    eps_rdp, costs = candidates["rdp_at_alpha"].to_numpy(), candidates["expost_rdp"].to_numpy()
    bottom = float(candidates["bottom_rdp"].iloc[0])
    b = t3.brownian
    theta_cache: dict = {}
    rows = []
    for trial in range(t3.trials):
        results = {
            "brownian": ml.brownian_trial(task, np.asarray(b.eps, dtype=float), b.above_threshold_eps, settings.delta,
                                          b.ridge, b.gamma, make_rng(*seed_parts, "brownian", trial), theta_cache),
            "doubling": ml.doubling_trial(task, cands, n, t3.doubling.budgets, t3.doubling.eta,
                                          t3.doubling.mean_runs, t3.alpha, settings.delta,
                                          make_rng(*seed_parts, "doubling", trial)),
            "alg3": ml.alg3_trial(task, cands, eps_rdp, costs, bottom, t3.eps_prime, t3.alpha, settings.delta,
                                  t3.max_attempts, make_rng(*seed_parts, "alg3", trial)),
        }
        for method, r in results.items():
            rows.append({"method": method, "trial": trial, "epsilon": r.epsilon, "met": r.met, "runs": r.runs,
                         "spent": r.spent})
    return pd.DataFrame(rows)


def ml_table(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    out = []
    for dataset, frame in frames.items():
        record = {"dataset": dataset}
        for method, g in frame.groupby("method", sort=False):
            finite = g["epsilon"][np.isfinite(g["epsilon"])]
            record[f"{method}_epsilon"] = finite.mean() if len(finite) else math.inf
            record[f"{method}_epsilon_sd"] = finite.std(ddof=0) if len(finite) else math.nan
            # every trial spent budget, including those that never released a model
            record[f"{method}_epsilon_spent_all_trials"] = g["spent"].mean()
            record[f"{method}_stopped"] = f"{len(finite)}/{len(g)}"
            record[f"{method}_met"] = f"{int(g['met'].sum())}/{len(g)}"
        for method, value in PAPER_004_TABLE3.get(dataset, {}).items():
            record[f"paper_{method}_epsilon"] = value
        out.append(record)
    return pd.DataFrame(out)


def ml_table_report(frames: dict[str, pd.DataFrame], provenance: list[dict], settings: ExpostSettings,
                    config_label: str) -> tuple[pd.DataFrame, str]:
    """Table 3 from each dataset's trials (`frames`, in the order of `provenance`, their files' metadata),
    with the model, data source, bar and trial count of each row; and its note."""
    frame = ml_table(frames)
    frame.insert(1, "model", [meta.get("model", "unrecorded") for meta in provenance])
    frame.insert(2, "source", [meta["source_label"] for meta in provenance])
    frame.insert(3, "threshold", [meta["threshold"] for meta in provenance])
    frame.insert(4, "trials", [int(f["trial"].nunique()) for f in frames.values()])
    t3 = settings.table3
    note = (f"Paper 004 Table 3: *_epsilon = average ex-post (epsilon, {settings.delta})-DP at which a model was "
            f"released, over the trials that released one (*_stopped; *_met = trials whose model meets the bar on the "
            f"test set); *_epsilon_spent_all_trials = the ex-post epsilon actually spent, averaged over all trials (a "
            f"trial that never stopped spent its budget too). Alg. 3 at RDP order {t3.alpha}, eps' = {t3.eps_prime}, at most "
            f"{t3.max_attempts} attempts; doubling over budgets {list(t3.doubling.budgets)} with Papernot-Steinke "
            f"(eta = {t3.doubling.eta}, E[K] = {t3.doubling.mean_runs}; RDP summed at order {t3.alpha} and "
            f"converted there, like Alg. 3); Brownian + AboveThreshold "
            f"(eps_AT = {t3.brownian.above_threshold_eps}). model = what Alg. 3 and doubling train with DP-SGD "
            f"(MNIST: expost.table3.mnist_model, mlp2 = the 784-128-64-10 MLP or cnn = PyTorch's Basic MNIST Example "
            f"CNN, which the paper trains); Brownian releases a linear model in every row (sufficient statistics for "
            f"Twitter, bolt-on PSGD otherwise). paper_* = the "
            f"paper's values (100 trials). Config: {config_label}.")
    return frame, note
