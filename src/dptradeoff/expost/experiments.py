"""Paper 004's experiments as tables of numbers: Fig. 1's invocation statistics, the per-trial
results behind Tables 1-3, and the tables themselves (our mean +- std beside the paper's)."""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
import pandas as pd

from ..io import read_matrix, read_provenance
from ..seeds import rng as make_rng
from . import ml, threads
from .distributions import alg3_invocations, tnb_gamma, tnb_moments
from .tuning import rdp_cost

# The paper's Tables 1-3 (mean, std), for side-by-side comparison.
PAPER_TABLE1 = {  # row: {method: (precision, sd, answers, sd)}
    "S8000": {"doubling": (0.911, 0.07, 14.77, 0.47), "noise_reduction": (0.999, 0.02, 2.22, 1.45), "alg3": (0.912, 0.06, 20.37, 0.52)},
    "S16000": {"doubling": (0.912, 0.06, 22.47, 0.54), "noise_reduction": (0.999, 0.02, 4.47, 2.22), "alg3": (0.911, 0.05, 30.63, 0.57)},
    "S32000": {"doubling": (0.910, 0.05, 33.96, 0.56), "noise_reduction": (0.998, 0.12, 8.12, 3.29), "alg3": (0.905, 0.04, 45.74, 0.63)},
    "S64000": {"doubling": (0.909, 0.04, 50.90, 0.61), "noise_reduction": (0.998, 1.72, 15.14, 5.25), "alg3": (0.911, 0.03, 68.39, 0.73)},
    "S128000": {"doubling": (0.909, 0.03, 76.09, 0.74), "noise_reduction": (0.997, 0.01, 27.68, 9.15), "alg3": (0.912, 0.03, 102.1, 0.88)},
    "Reddit": {"doubling": (0.911, 0.02, 279.7, 1.10), "noise_reduction": (0.992, 0.01, 207.2, 42.1), "alg3": (0.922, 0.01, 327.5, 13.9)},
}
PAPER_TABLE2 = {
    "S8000": {"brownian": (0.974, 0.03, 28.63, 0.74), "doubling": (0.969, 0.05, 17.20, 0.57), "alg3": (0.970, 0.09, 6.694, 0.46)},
    "S16000": {"brownian": (0.973, 0.02, 50.44, 0.89), "doubling": (0.971, 0.03, 30.75, 0.65), "alg3": (0.972, 0.05, 11.97, 0.33)},
    "S32000": {"brownian": (0.974, 0.02, 88.58, 1.01), "doubling": (0.973, 0.02, 54.74, 0.80), "alg3": (0.971, 0.04, 20.61, 0.51)},
    "S64000": {"brownian": (0.975, 0.01, 154.8, 1.29), "doubling": (0.974, 0.02, 96.95, 1.01), "alg3": (0.973, 0.03, 33.84, 0.63)},
    "S128000": {"brownian": (0.977, 0.01, 269.7, 1.50), "doubling": (0.980, 0.01, 173.6, 1.23), "alg3": (0.970, 0.03, 52.33, 1.17)},
}
PAPER_TABLE3 = {"twitter": {"brownian": 0.77, "doubling": 0.55, "alg3": 0.28},
                "mnist": {"brownian": 0.62, "doubling": 0.38, "alg3": 0.32},
                "gisette": {"brownian": 0.33, "doubling": 0.54, "alg3": 0.23}}


def synthetic_row(samples: int) -> str:
    return f"S{samples}"


# --- Fig. 1 ----------------------------------------------------------------------------------------

def invocation_curves(eps: float, eps_prime: float, max_mean: float, points: int = 60) -> pd.DataFrame:
    """Std vs mean of the number of runs: Alg. 3 (Thm 11, geometric dropping) with d copies of one
    eps-DP mechanism, and Papernot-Steinke Cor. 3 with eta = eps'/eps (same (2 eps + eps') cost)."""
    ours_d = np.unique(np.geomspace(1, max_mean / alg3_invocations(1, eps, eps_prime)[0], points).astype(int))
    m, s = alg3_invocations(ours_d, eps, eps_prime, "geometric")
    rows = [{"method": "Theorem 11", "parameter": float(d), "mean": float(a), "std": float(b)} for d, a, b in zip(ours_d, m, s)]
    eta = eps_prime / eps
    for target in np.geomspace(1.05, max_mean, points):
        gamma = tnb_gamma(eta, float(target))
        mean, std = tnb_moments(eta, gamma)
        rows.append({"method": "Papernot & Steinke 2022", "parameter": gamma, "mean": mean, "std": std})
    return pd.DataFrame(rows)


# --- Tables 1-2 ------------------------------------------------------------------------------------

def thread_trials(counts_of_trial: Callable[[int], np.ndarray], table: str, cfg: dict, trials: int,
                  seed_parts: tuple) -> pd.DataFrame:
    """Per-trial answers and precision of every method of `table` ("table1" pure DP, "table2" approximate).

    `counts_of_trial(trial)` gives the thread counts of a trial (a fresh synthetic draw per trial,
    or the same histogram); every method of a trial sees the same counts in the same order."""
    setting = threads.Setting.from_config(cfg)
    methods = threads.methods(table, cfg)
    rows = []
    for trial in range(trials):
        ordered = threads.order_threads(counts_of_trial(trial), cfg["thread_order"],
                                        make_rng(*seed_parts, "thread_order", trial))
        for method in methods:
            out = method.run(ordered, setting, make_rng(*seed_parts, table, method.name, trial))
            rows.append({"method": method.name, "trial": trial, "answers": out.answers, "correct": out.correct,
                         "precision": out.precision, "spent": out.spent})
    return pd.DataFrame(rows)


def guarantees(table: str, cfg: dict) -> dict[str, str]:
    """What each method's numbers guarantee, as printed beside them. An order that reads the true counts
    (`by_count`) makes every guarantee conditional on that ranking being public."""
    setting = threads.Setting.from_config(cfg)
    condition = ("; only if the ranking of the threads by count is public, and only for neighbours that keep it "
                 "(thread_order by_count reads the true counts; without such a public ranking these numbers are NOT "
                 "covered by the stated budget)" if cfg["thread_order"] == "by_count" else "")
    return {m.name: m.guarantee(setting) + ("" if m.guarantee(setting).startswith("NONE") else condition)
            for m in threads.methods(table, cfg)}


def thread_table(frames: dict[str, pd.DataFrame], table: str, cfg: dict) -> pd.DataFrame:
    """One row per dataset and method: our precision and answers (mean, sd over trials), what they
    guarantee, and the paper's values for that method (for an `*_as_published` mode: the paper's
    column it reproduces)."""
    paper = PAPER_TABLE1 if table == "table1" else PAPER_TABLE2
    labels = guarantees(table, cfg)
    out = []
    for row, frame in frames.items():
        for method, g in frame.groupby("method", sort=False):
            record = {"dataset": row, "method": method, "guarantee": labels[method],
                      "precision": g["precision"].mean(), "precision_sd": g["precision"].std(ddof=0),
                      "answers": g["answers"].mean(), "answers_sd": g["answers"].std(ddof=0)}
            published = paper.get(row, {}).get(method.removesuffix("_as_published"))
            if published is not None:
                record.update(zip(("paper_precision", "paper_precision_sd", "paper_answers", "paper_answers_sd"),
                                  published))
                record["answers_within_paper_sd"] = bool(abs(record["answers"] - published[2]) <= published[3])
            out.append(record)
    return pd.DataFrame(out)


# --- Table 3 ---------------------------------------------------------------------------------------

def load_task(dataset: str, train_path: str, test_path: str, table3: dict) -> tuple[ml.TaskData, dict]:
    """The prepared task and the provenance every Table 3 file carries."""
    task = ml.prepare(dataset, *read_matrix(train_path), *read_matrix(test_path), table3["thresholds"][dataset],
                      table3["twitter_target_bound"], table3.get("mnist_model") if dataset == "mnist" else None)
    meta = {"dataset": dataset, "source_label": read_provenance(train_path).get("source_label", "unknown"),
            "threshold": table3["thresholds"][dataset], "model": task.model}
    return task, meta


def ml_candidates(task: ml.TaskData, grid: dict, alpha: float, eps_prime: float, delta: float,
                  conversion: str = "dp_accounting") -> pd.DataFrame:
    """The calibrated DP-SGD grid (noise calibrated by `conversion`), each candidate's RDP at alpha,
    and Thm 13's ex-post cost."""
    n = len(task.x_train)
    cands = ml.candidates(grid, n, delta, conversion)
    eps_rdp = np.array([ml.rdp_curve(c, n, (alpha,))[0] for c in cands])
    costs, bottom = rdp_cost(eps_rdp, eps_prime, alpha)
    frame = pd.DataFrame([vars(c) for c in cands])
    frame["rdp_at_alpha"], frame["expost_rdp"] = eps_rdp, costs
    frame["bottom_rdp"] = bottom   # bottom's ex-post RDP (the same for every row)
    return frame


def ml_trials(task: ml.TaskData, candidates: pd.DataFrame, bottom: float, cfg: dict, trials: int,
              seed_parts: tuple) -> pd.DataFrame:
    t3 = cfg["table3"]
    n = len(task.x_train)
    cands = [ml.Candidate(r.eps, r.learning_rate, int(r.epochs), int(r.batch_size), r.clip, r.noise, r.eps_achieved)
             for r in candidates.itertuples()]
    eps_rdp, costs = candidates["rdp_at_alpha"].to_numpy(), candidates["expost_rdp"].to_numpy()
    b = t3["brownian"]
    theta_cache: dict = {}
    rows = []
    for trial in range(trials):
        results = {
            "brownian": ml.brownian_trial(task, np.asarray(b["eps"], dtype=float), b["above_threshold_eps"], cfg["delta"],
                                          b["ridge"], b["gamma"], make_rng(*seed_parts, "brownian", trial), theta_cache),
            "doubling": ml.doubling_trial(task, cands, n, t3["doubling"]["budgets"], t3["doubling"]["eta"],
                                          t3["doubling"]["mean_runs"], t3["alpha"], cfg["delta"],
                                          make_rng(*seed_parts, "doubling", trial)),
            "alg3": ml.alg3_trial(task, cands, eps_rdp, costs, bottom, t3["eps_prime"], t3["alpha"], cfg["delta"],
                                  t3["max_attempts"], make_rng(*seed_parts, "alg3", trial)),
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
        for method, value in PAPER_TABLE3.get(dataset, {}).items():
            record[f"paper_{method}_epsilon"] = value
        out.append(record)
    return pd.DataFrame(out)
