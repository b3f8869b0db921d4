"""Evaluate points of a problem: its privacy oracle (epsilon at the problem's delta) and utility
oracle (R independent replications: their mean, min, max and the per-run list). The oracles come
from the problem (`Problem.oracle`); nothing here knows which algorithm they belong to.

An oracle that raises for a point records the failure in that point's row (`failure`, utilities
NaN) and the other points go on: the original DPareto averaged failed runs (accuracy -1) into the
utility. An oracle that returns something that is not a privacy or utility value (epsilon NaN or
negative, utilities outside [0, 1] or of the wrong count) stops the run with a UserError.
"""
from __future__ import annotations

import logging
import math
import time
import traceback

import numpy as np
import pandas as pd

from .. import UserError, __version__, paths
from ..io import read_matrix, read_provenance
from ..seeds import derive_seed
from .oracle import Data
from .problem import Problem

log = logging.getLogger(__name__)


def load_data(problem: Problem, data_dir: str = paths.DATA_DIR) -> Data | None:
    """The problem's dataset as its oracle prepares it (None for a problem without one)."""
    if problem.dataset is None:
        return None
    train, test = (paths.data(problem.dataset, part, data_dir) for part in ("train", "test"))
    xtr, ytr = read_matrix(train)
    xte, yte = read_matrix(test)
    meta = read_provenance(train)
    data = Data(xtr, ytr, xte, yte, meta.get("source", "unknown"), meta.get("source_label", "unknown"))
    if problem.rows is not None:
        data = problem.rows.select(data)
    return problem.oracle.prepare(data)


def error_floor(problem: Problem, utility_floor: float | None = None, data_dir: str = paths.DATA_DIR) -> float:
    """The problem's error floor for front-quality metrics (`Problem.error_floor`) on its dataset."""
    return problem.error_floor(load_data(problem, data_dir), utility_floor)


def training_rows(data: Data | None) -> int | None:
    return data.n_train if data is not None else None


def epsilon(problem: Problem, point: dict, n: int | None) -> float:
    """The point's epsilon at the problem's delta (n training rows), checked to be a privacy parameter."""
    eps = problem.oracle.epsilon(point, n=n, delta=problem.delta)
    try:
        eps = float(eps)
    except (TypeError, ValueError):
        eps = math.nan
    if math.isnan(eps) or eps < 0:
        raise UserError(f"The privacy oracle of {problem.name} returned epsilon {eps!r} for {point}; an epsilon must be a "
                        f"number >= 0 (inf for no guarantee): fix the oracle's epsilon.")
    return eps


def checked_utilities(problem: Problem, point: dict, utils, repeats: int) -> np.ndarray:
    values = np.asarray(utils, dtype=float).reshape(-1)
    if len(values) != repeats or not np.all((values >= 0) & (values <= 1)):
        raise UserError(f"The utility oracle of {problem.name} returned {values.tolist()} for {point}; it must return "
                        f"{repeats} utilities in [0, 1] (higher is better): fix the oracle.")
    return values


def source_label(problem: Problem, data: Data | None) -> str:
    return data.source_label if data else f"{problem.name}: {problem.oracle.own_data}"


def _failure(exc: BaseException, problem: Problem, point: dict, oracle: str) -> str:
    log.error("%s: the %s oracle raised for %s; the point is recorded as failed:\n%s", problem.name, oracle, point,
              "".join(traceback.format_exception(exc)))
    return f"{oracle} oracle: {type(exc).__name__}: {exc}"


def evaluate(problem: Problem, points: pd.DataFrame, data: Data | None, repeats: int, config_seed: int,
             method: str, run: int, first_index: int = 0) -> pd.DataFrame:
    """One row per point: hyperparameters, epsilon, delta, utility mean/min/max and per-run list,
    error = 1 - utility, failure (None, or what the oracle raised), seed, wall seconds, data source,
    package version. `seed` is each point's own; the points of an oracle that trains a job's points
    together are trained from one Generator seeded with `batch_seed` (None for the others)."""
    oracle = problem.oracle
    checked = [problem.check(raw.to_dict()) for _, raw in points.iterrows()]
    batch_seed = batched = None
    batch_failure = None
    if oracle.trains_batches and checked:
        batch_seed = derive_seed(config_seed, problem.name, method, run, first_index, "batch")
        start = time.perf_counter()
        try:
            batched = oracle.utilities_of_batch(checked, data, repeats, np.random.default_rng(batch_seed))
        except UserError:
            raise
        except Exception as exc:
            batch_failure = _failure(exc, problem, checked, "utility")
        batch_wall = (time.perf_counter() - start) / len(checked)
    rows = []
    for offset, point in enumerate(checked):
        index = first_index + offset
        seed = derive_seed(config_seed, problem.name, method, run, index)   # each point's own, batched or not
        start = time.perf_counter()
        failure, eps, utils = batch_failure, math.nan, np.array([])
        try:
            eps = epsilon(problem, point, training_rows(data))
        except UserError:
            raise
        except Exception as exc:   # no epsilon, no point: recorded (and logged) as failed, never guessed
            failure = _failure(exc, problem, point, "privacy")
        if failure is None:
            try:
                if batch_seed is None:
                    utils = oracle.utilities(point, data, repeats, np.random.default_rng(seed))
                else:
                    utils = batched[offset]
            except UserError:
                raise
            except Exception as exc:
                failure = _failure(exc, problem, point, "utility")
        if failure is None:
            utils = checked_utilities(problem, point, utils, repeats)
        wall = time.perf_counter() - start + (batch_wall if batch_seed is not None else 0.0)
        mean = float(np.mean(utils)) if failure is None else math.nan
        rows.append({
            "problem": problem.name, "method": method, "run": run, "index": index, **point,
            "epsilon": eps, "delta": problem.delta, "conversion": oracle.conversion,
            "neighbouring": oracle.neighbouring, "utility": mean, "error": 1.0 - mean,
            "utility_min": float(np.min(utils)) if failure is None else math.nan,
            "utility_max": float(np.max(utils)) if failure is None else math.nan,
            "utility_runs": [float(u) for u in utils], "repeats": repeats, "failure": failure, "seed": seed,
            "batch_seed": batch_seed, "wall_seconds": wall,
            "data_source": data.source if data else oracle.own_data,
            "source_label": source_label(problem, data),
            "package_version": __version__,
        })
        log.info("%s %s run %d #%d: %s -> epsilon %.4g, %s %s (%.1fs)", problem.name, method, run, index,
                 point, eps, problem.utility, f"{mean:.4f}" if failure is None else f"FAILED ({failure})", wall)
    return pd.DataFrame(rows)
