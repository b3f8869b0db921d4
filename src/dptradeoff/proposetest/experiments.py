"""Paper 003's simulation (Figs 1-2) and an end-to-end tuning run on a real task."""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from .. import UserError
from ..privacy import dpsgd
from ..seeds import rng as make_rng
from ..train import linear
from ..train.hyper import DPSGDHyper
from . import accounting
from .algorithm import propose_test, worst_case_iterations
from .settings import AdultRun, CandidateGrid

log = logging.getLogger(__name__)


def simulate_paths(seeds: int, candidates: int, partitions: int, eps0: float, granularity: float, u0: float,
                   seed_parts: tuple) -> pd.DataFrame:
    """Fig. 1: the (u, step) state after every iteration, for `seeds` runs; each run draws its own
    u_s ~ U(0, 1) for the candidates (paper: 100 candidates, k = 10, eps0 = 0.1, g = 0.01)."""
    rows = []
    for s in range(seeds):
        rng = make_rng(*seed_parts, "paths", s)
        utilities = rng.uniform(0.0, 1.0, candidates)
        trace = propose_test(utilities, partitions, eps0, granularity, u0, rng)
        rows.append({"seed": s, "iteration": 0, "u": u0, "step": 1, "accumulated": False})
        for t, (u, step, acc) in enumerate(zip(trace.u, trace.step, trace.accumulated), start=1):
            rows.append({"seed": s, "iteration": t, "u": u, "step": step, "accumulated": acc})
    return pd.DataFrame(rows)


def iterations_vs_gap(granularities: list[float], seeds: int, candidates: int, partitions: int, eps0: float,
                      u0: float, seed_parts: tuple) -> pd.DataFrame:
    """Fig. 2: iterations against (u* - u0)/g, varying g; u* is the best candidate utility."""
    rows = []
    for g in granularities:
        for s in range(seeds):
            rng = make_rng(*seed_parts, "gap", g, s)
            utilities = rng.uniform(0.0, 1.0, candidates)
            u_star = float(utilities.max())
            trace = propose_test(utilities, partitions, eps0, g, u0, rng)
            rows.append({"granularity": g, "seed": s, "u_star": u_star, "gap": (u_star - u0) / g,
                         "iterations": trace.iterations,
                         # the paper's zig-zag count in terms of u* (noise can carry u past u*, so not a bound)
                         "zigzag_u_star": worst_case_iterations(u_star, u0, g),
                         # the guaranteed bound, from the u >= 1 guard
                         "worst_case": worst_case_iterations(1.0, u0, g)})
    return pd.DataFrame(rows)


def grid_candidates(grid: CandidateGrid) -> list[DPSGDHyper]:
    """Hyperparameter candidates (learning rate, epochs, lot size, clip); the noise is set later."""
    return [DPSGDHyper(int(e), int(m), float(lr), 0.0, float(c)) for lr in grid.learning_rate for e in grid.epochs
            for m in grid.lot_size for c in grid.clip]


def partition_utilities(x, y, x_valid, y_valid, cands: list[DPSGDHyper], partitions: int, private_noise: float,
                        rng: np.random.Generator) -> np.ndarray:
    """u_s: mean validation accuracy over k disjoint partitions of the training set (lines 3-11);
    `private_noise` 0 trains without noise (clipped SGD), > 0 with DP-SGD at that multiplier."""
    order = rng.permutation(len(x))
    parts = np.array_split(order, partitions)
    utilities = np.zeros(len(cands))
    for s, hp in enumerate(cands):
        for part in parts:
            hp_part = DPSGDHyper(hp.epochs, min(hp.lot_size, len(part)), hp.learning_rate, private_noise, hp.clip)
            w = linear.train(x[part], y[part], "logistic", "sgd", hp_part, 1, rng)
            utilities[s] += float(linear.accuracy(w, x_valid, y_valid)[0]) / partitions
    return utilities


def end_to_end(x, y, x_test, y_test, run: AdultRun, seed_parts: tuple, conversion: str = "dp_accounting"
               ) -> tuple[dict, dict]:
    """Tune adult logistic regression by propose-test, then train privately with the selection.

    Returns (released, diagnostics): `released` holds only what the (epsilon, delta) total covers
    (the selection, the DP model's test accuracy on the held-out test split, the privacy totals);
    `diagnostics` holds non-private statistics of the training data (the candidates' validation
    utilities, from models trained without noise), which the total does NOT cover."""
    rng = make_rng(*seed_parts, "end-to-end")
    cands = grid_candidates(run.grid)
    # validation = a held-out part of the training split; the test split only scores the final model
    n_valid = int(round(run.validation_fraction * len(x)))
    perm = rng.permutation(len(x))
    valid, train = perm[:n_valid], perm[n_valid:]
    utilities = partition_utilities(x[train], y[train], x[valid], y[valid], cands, run.partitions, 0.0, rng)
    trace = propose_test(utilities, run.partitions, run.eps0, run.granularity, run.u0, rng)
    chosen = cands[trace.selected if trace.selected is not None else 0]
    n = len(train)
    calibration = dpsgd.calibrate_noise(n, chosen.lot_size, chosen.epochs, run.epsilon, run.delta, conversion)
    if calibration is None:
        raise UserError(f"DP-SGD with lot {chosen.lot_size} and {chosen.epochs} epochs cannot reach epsilon = "
                        f"{run.epsilon} on {n} examples; raise proposetest.adult.epsilon.")
    final = DPSGDHyper(chosen.epochs, chosen.lot_size, chosen.learning_rate, calibration.noise, chosen.clip)
    w = linear.train(x[train], y[train], "logistic", "sgd", final, 1, rng)
    accuracy = float(linear.accuracy(w, x_test, y_test)[0])
    t_max = worst_case_iterations(1.0, run.u0, run.granularity)
    # the training's epsilon at the noise actually used (<= the target), not the target
    realised = accounting.total(calibration.epsilon, run.delta, run.eps0, trace.iterations, run.delta_prime)
    worst = accounting.total(calibration.epsilon, run.delta, run.eps0, t_max, run.delta_prime)
    released = {"selected": trace.selected, "learning_rate": chosen.learning_rate, "epochs": chosen.epochs,
                "lot_size": chosen.lot_size, "clip": chosen.clip, "noise": calibration.noise, "candidates": len(cands),
                "iterations": trace.iterations, "worst_case_iterations": t_max, "test_accuracy": accuracy,
                "epsilon_train_target": run.epsilon, "epsilon_train": calibration.epsilon,
                "epsilon_tuning": worst.tuning_epsilon, "epsilon_total": worst.epsilon, "delta_total": worst.delta,
                "epsilon_total_realised_not_a_guarantee": realised.epsilon}
    diagnostics = {"selected": trace.selected,
                   "selected_validation_utility": float(utilities[trace.selected]) if trace.selected is not None
                   else float("nan"),
                   "best_validation_utility": float(utilities.max()), "best_candidate": int(np.argmax(utilities))}
    return released, diagnostics


def adult_tables(x, y, x_test, y_test, source: str, run: AdultRun, seed: int, conversion: str, config_label: str
                 ) -> tuple[tuple[pd.DataFrame, str], tuple[pd.DataFrame, str]]:
    """The adult run (labels 0/1 as stored) as two (table, note) pairs: what the DP total covers, and the
    non-private diagnostics, whose note says they are covered by no guarantee."""
    released, diagnostics = end_to_end(x, 2.0 * y - 1.0, x_test, 2.0 * y_test - 1.0, run, (seed, "proposetest"),
                                       conversion)
    note = (f"Paper 003 Alg. 1 on adult logistic regression: {run.partitions} partitions trained without noise, "
            f"eps0 = {run.eps0}, g = {run.granularity}, u0 = {run.u0}; final DP-SGD calibrated to "
            f"({run.epsilon}, {run.delta}) by the {conversion} RDP conversion, epsilon_train = its epsilon at the "
            f"noise used. (epsilon_total, "
            f"delta_total) is the DP guarantee of everything in this table: epsilon_train plus the tuning's advanced "
            f"composition (delta' = {run.delta_prime}) over the guarded bound on iterations. "
            f"epsilon_total_realised_not_a_guarantee composes only the iterations that ran (the paper's empirical view; "
            f"the count depends on the data). test_accuracy is on the held-out test split. Data: {source}. "
            f"Config: {config_label}.")
    warning = ("NOT COVERED BY ANY DP GUARANTEE: non-private statistics of the private training data (validation "
               "utilities of the candidates' partition models, trained without noise). For diagnosis only; do not "
               f"release. Config: {config_label}.")
    return ((pd.DataFrame([{"dataset": "adult", "source": source, "trials": 1, **released}]), note),
            (pd.DataFrame([{"dataset": "adult", **diagnostics}]), warning))
