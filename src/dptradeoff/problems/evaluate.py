"""Evaluate points of a problem: privacy oracle (epsilon at the problem's delta) and utility
oracle (mean over R independent replications, with min, max and the per-run list)."""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import __version__
from ..io import read_matrix, read_provenance
from ..privacy import dpsgd, svt as svt_privacy
from ..seeds import derive_seed
from ..train import linear, outpert, svt as svt_utility
from ..train.hyper import DPSGDHyper
from .registry import Problem

log = logging.getLogger(__name__)


@dataclass
class Data:
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    source: str
    source_label: str


def load_data(problem: Problem, data_dir: str = "results/data") -> Data | None:
    """The train/test matrices of the problem's dataset, with labels as its model needs them."""
    if problem.dataset is None:
        return None
    xtr, ytr = read_matrix(f"{data_dir}/{problem.dataset}/train.parquet")
    xte, yte = read_matrix(f"{data_dir}/{problem.dataset}/test.parquet")
    meta = read_provenance(f"{data_dir}/{problem.dataset}/train.parquet")
    if problem.model in ("logreg", "svm", "outpert-logreg"):
        ytr, yte = 2.0 * ytr - 1.0, 2.0 * yte - 1.0
    if problem.model == "outpert-logreg":
        xtr, xte = outpert.normalise(xtr), outpert.normalise(xte)
    return Data(xtr, ytr, xte, yte, meta.get("source", "unknown"), meta.get("source_label", "unknown"))


def epsilon(problem: Problem, point: dict, n_train: int | None, conversion: str = "dp_accounting") -> float:
    """The point's epsilon at the problem's delta; `conversion` is DP-SGD's RDP -> (epsilon, delta)
    rule (`privacy.conversion`: dp_accounting's improved one, or the classic one the DPareto paper used)."""
    if problem.model == "svt":
        return svt_privacy.epsilon(point["bound"], point["b"])
    if problem.model == "outpert-logreg":
        return outpert.epsilon(point["gamma"], point["sigma"], n_train, problem.delta)
    return dpsgd.epsilon(n_train, point["lot_size"], point["epochs"], point["noise"], problem.delta, conversion)


def utilities(problem: Problem, point: dict, data: Data | None, repeats: int, seed: int) -> np.ndarray:
    """The utility of each of `repeats` independent replications (accuracy or F1; higher is better)."""
    rng = np.random.default_rng(seed)
    if problem.model == "svt":
        return svt_utility.f1_scores(point["bound"], point["b"], repeats, rng)
    if problem.model == "outpert-logreg":
        w = outpert.train(data.x_train, data.y_train, np.full(repeats, point["gamma"]), rng)
        return outpert.accuracy(outpert.release(w, point["sigma"], rng), data.x_test, data.y_test)
    hp = DPSGDHyper(point["epochs"], point["lot_size"], point["learning_rate"], point["noise"], point["clip"])
    if problem.model in ("logreg", "svm"):
        loss = "logistic" if problem.model == "logreg" else "hinge"
        w = linear.train(data.x_train, data.y_train, loss, problem.optimizer, hp, repeats, rng)
        return linear.accuracy(w, data.x_test, data.y_test)
    from ..train import mlp  # torch takes seconds to import: only the MLP problems pay for it

    seeds = rng.integers(0, 2**62, size=repeats)
    return np.array([mlp.accuracy(mlp.train(data.x_train, data.y_train, problem.model, problem.optimizer, hp, int(s)),
                                  data.x_test, data.y_test) for s in seeds])


def _outpert_utilities(points: list[dict], data: Data, repeats: int, seed: int) -> tuple[list[np.ndarray], float]:
    """All points' replications trained at once: projected SGD has no per-point hyperparameter but
    gamma, and one vectorised pass over (point, replication) rows costs little more than one row."""
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    gammas = np.repeat([p["gamma"] for p in points], repeats)
    w = outpert.train(data.x_train, data.y_train, gammas, rng)
    out = []
    for i, p in enumerate(points):
        rows = w[i * repeats:(i + 1) * repeats]
        out.append(outpert.accuracy(outpert.release(rows, p["sigma"], rng), data.x_test, data.y_test))
    return out, (time.perf_counter() - start) / max(1, len(points))


def evaluate(problem: Problem, points: pd.DataFrame, data: Data | None, repeats: int, config_seed: int,
             method: str, run: int, first_index: int = 0, conversion: str = "dp_accounting") -> pd.DataFrame:
    """One row per point: hyperparameters, epsilon (DP-SGD's by `conversion`), delta, utility
    mean/min/max and per-run list, error = 1 - utility, seed, wall seconds, data source, package version.
    `seed` is each point's own; output-perturbation points are trained together, from one Generator
    seeded with `batch_seed` (None for the other problems)."""
    rows = []
    n_train = len(data.y_train) if data is not None else None
    checked = [problem.check(raw.to_dict()) for _, raw in points.iterrows()]
    batched = None
    if problem.model == "outpert-logreg" and checked:
        batch_seed = derive_seed(config_seed, problem.name, method, run, first_index, "batch")
        batched = _outpert_utilities(checked, data, repeats, batch_seed)
    for offset, point in enumerate(checked):
        index = first_index + offset
        seed = derive_seed(config_seed, problem.name, method, run, index)   # each point's own, batched or not
        start = time.perf_counter()
        eps = epsilon(problem, point, n_train, conversion)
        if batched is None:
            utils = utilities(problem, point, data, repeats, seed)
            wall = time.perf_counter() - start
        else:
            utils, wall = batched[0][offset], batched[1]
        mean = float(np.mean(utils))
        rows.append({
            "problem": problem.name, "method": method, "run": run, "index": index, **point,
            "epsilon": eps, "delta": problem.delta, "conversion": conversion, "utility": mean, "error": 1.0 - mean,
            "utility_min": float(np.min(utils)), "utility_max": float(np.max(utils)),
            "utility_runs": [float(u) for u in utils], "repeats": repeats, "seed": seed,
            "batch_seed": batch_seed if batched else None, "wall_seconds": wall,
            "data_source": data.source if data else "none (simulated queries)",
            "source_label": data.source_label if data else "svt: simulated queries",
            "package_version": __version__,
        })
        log.info("%s %s run %d #%d: %s -> epsilon %.4g, %s %.4f (%.1fs)", problem.name, method, run, index,
                 point, eps, problem.utility, mean, wall)
    return pd.DataFrame(rows)
