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
from ..io import nonfinite, read_matrix, read_provenance
from ..seeds import derive_seed
from .oracle import Data
from .problem import Problem
from .traces import Continuation, TraceSettings

log = logging.getLogger(__name__)


def load_data(problem: Problem, data_dir: str = paths.DATA_DIR) -> Data | None:
    """The problem's dataset as its oracle prepares it (None for a problem without one); a NaN or
    infinite feature, in the file or from the oracle's `prepare`, stops it before any training."""
    if problem.dataset is None:
        return None
    train, test = (paths.data(problem.dataset, part, data_dir) for part in ("train", "test"))
    xtr, ytr = read_matrix(train)
    xte, yte = read_matrix(test)
    meta = read_provenance(train)
    data = Data(xtr, ytr, xte, yte, meta.get("source", "unknown"), meta.get("source_label", "unknown"))
    if problem.rows is not None:
        data = problem.rows.select(data)
    prepared = problem.oracle.prepare(data)
    for rows, x, path in (("training", prepared.x_train, train), ("test", prepared.x_test, test)):
        if where := nonfinite(x):   # read_matrix found the file's features finite: prepare() made these
            raise UserError(f"The prepare() of {problem.name}'s oracle turns the finite features of {path} into "
                            f"non-finite ones (NaN or inf) in {where} of its {rows} rows, which training turns into "
                            f"NaN weights; make prepare() return finite features (impute, clip or drop them).")
    return prepared


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


# How a row of an oracle with `seedable = False` replays: what its provenance and every output built from it say.
NOT_SEEDABLE = "rows replay in distribution, not bit for bit"
REPLAY_NOTE = f"noise from the oracle's own generator (seedable = False): {NOT_SEEDABLE}"


def seedable(problem: Problem) -> bool:
    return bool(getattr(problem.oracle, "seedable", True))


def replay_provenance(problem: Problem) -> dict:
    """What an evaluation file's provenance says of how its rows replay: `seedable` and `replay`."""
    return {"seedable": seedable(problem),
            "replay": "bit for bit from each row's seed" if seedable(problem) else REPLAY_NOTE}


def source_label(problem: Problem, data: Data | None) -> str:
    """The rows' source as every table and figure built from them prints it, with REPLAY_NOTE for an oracle
    that is not seedable."""
    label = data.source_label if data else f"{problem.name}: {problem.oracle.own_data}"
    return label if seedable(problem) else f"{label}; {REPLAY_NOTE}"


def _failure(exc: BaseException, problem: Problem, point: dict, oracle: str) -> str:
    log.error("%s: the %s oracle raised for %s; the point is recorded as failed:\n%s", problem.name, oracle, point,
              "".join(traceback.format_exception(exc)))
    return f"{oracle} oracle: {type(exc).__name__}: {exc}"


def evaluate(problem: Problem, points: pd.DataFrame, data: Data | None, repeats: int, config_seed: int,
             method: str, run: int, first_index: int = 0, traces: TraceSettings | None = None,
             continues: Continuation | None = None) -> pd.DataFrame:
    """One row per point: hyperparameters, epsilon, delta, utility mean/min/max and per-run list,
    error = 1 - utility, failure (None, or what the oracle raised), seed, wall seconds, data source,
    package version, and the training it came from with the cost it added (`cost_columns`). `seed`
    is each point's own; the points of an oracle that trains a job's points together are trained
    from one Generator seeded with `batch_seed` (None for the others). `seedable` is the oracle's: False
    where its noise comes from a generator of its own, so that the seed replays the row in distribution
    only (its source_label says so too).

    With `traces`, a point of an oracle with a trace axis is one training that records its utilities
    at every checkpoint (`TraceSettings.checkpoints`): one row per checkpoint, each with the point's
    hyperparameters at that axis value and the oracle's own epsilon there, in increasing order, the
    point itself last (`trace_final`).

    `continues` (one point, traced): the point continues that training to its own axis value, from its
    state where the oracle is `resumable` (the cost counts the added epochs), else replayed from its seed
    (every epoch counted); its rows are the checkpoints beyond the value reached, with the training's index
    and seed, and `segment_start` (the value reached; 0 for a new training) and `replayed`. A resumable
    oracle's state after each training is in the frame's `attrs["training_states"]` ({index: bytes})."""
    oracle = problem.oracle
    checked = [problem.check(raw.to_dict()) for _, raw in points.iterrows()]
    traced = traces is not None and oracle.trace_axis is not None and not oracle.trains_batches
    if continues is not None and (not traced or len(checked) != 1):
        raise ValueError("only one traced point can continue a training")
    states = {}
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
    n = training_rows(data)
    for offset, point in enumerate(checked):
        index = first_index + offset
        seed = derive_seed(config_seed, problem.name, method, run, index)   # each point's own, batched or not
        reached, state, replayed = 0, None, False
        if continues is not None:
            index, seed, reached, state = continues.index, continues.seed, continues.reached, continues.state
            replayed = state is None or not oracle.resumable
            if continues.repeats != repeats:
                raise ValueError(f"training {index} has {continues.repeats} replications; it cannot continue with {repeats}")
        start = time.perf_counter()
        if traced:
            checkpoints = traces.checkpoints(point[oracle.trace_axis], problem.bounds(oracle.trace_axis)[0])
            every = checkpoints
            checkpoints = [e for e in checkpoints if e > reached]
            if not checkpoints:
                raise ValueError(f"training {index} reached {reached}; it cannot continue to {point[oracle.trace_axis]}")
        else:
            checkpoints = [point[oracle.trace_axis]] if oracle.trace_axis else [None]
        at = [point if e is None else {**point, oracle.trace_axis: e} for e in checkpoints]
        failure, eps, utils = batch_failure, [math.nan] * len(at), {}
        try:
            eps = [epsilon(problem, p, n) for p in at]
        except UserError:
            raise
        except Exception as exc:   # no epsilon, no point: recorded (and logged) as failed, never guessed
            failure = _failure(exc, problem, point, "privacy")
        if failure is None:
            try:
                if traced and oracle.resumable:
                    resume_from = None if replayed else state
                    utils, states[index] = oracle.utilities_segment(
                        point, data, repeats, np.random.default_rng(seed), every if replayed else checkpoints,
                        resume_from)
                elif traced:
                    utils = oracle.utilities_trace(point, data, repeats, np.random.default_rng(seed), every)
                elif batch_seed is None:
                    utils = {checkpoints[0]: oracle.utilities(point, data, repeats, np.random.default_rng(seed))}
                else:
                    utils = {checkpoints[0]: batched[offset]}
            except UserError:
                raise
            except Exception as exc:
                failure = _failure(exc, problem, point, "utility")
        if failure is None:
            utils = {e: checked_utilities(problem, p, utils[e], repeats) for e, p in zip(checkpoints, at) if e in utils}
        else:   # a failed training is one row, the point's own
            at, eps, checkpoints = at[-1:], eps[-1:], checkpoints[-1:]
        wall = time.perf_counter() - start + (batch_wall if batch_seed is not None else 0.0)
        kept = [k for k, e in enumerate(checkpoints) if failure is not None or e in utils]
        costs = cost_columns(checkpoints, kept, n, repeats, wall, 0 if replayed else reached)
        for k, cost in zip(kept, costs):
            values = utils.get(checkpoints[k], np.array([]))
            mean = float(np.mean(values)) if failure is None else math.nan
            rows.append({
                "problem": problem.name, "method": method, "run": run, "index": index, **at[k],
                "epsilon": eps[k], "delta": problem.delta, "conversion": oracle.conversion,
                "neighbouring": oracle.neighbouring, "utility": mean, "error": 1.0 - mean,
                "utility_min": float(np.min(values)) if failure is None else math.nan,
                "utility_max": float(np.max(values)) if failure is None else math.nan,
                "utility_runs": [float(u) for u in values], "repeats": repeats, "failure": failure, "seed": seed,
                "batch_seed": batch_seed, "seedable": seedable(problem), **cost,
                "segment_start": reached, "replayed": replayed, "device": training_device(oracle),
                "data_source": data.source if data else oracle.own_data,
                "source_label": source_label(problem, data),
                "package_version": __version__,
            })
        final = rows[-1]
        log.info("%s %s run %d #%d: %s -> epsilon %.4g, %s %s (%.1fs%s)", problem.name, method, run, index,
                 point, final["epsilon"], problem.utility,
                 f"{final['utility']:.4f}" if failure is None else f"FAILED ({failure})", wall,
                 f", a trace of {len(kept)} points" if traced else "")
        if continues is not None:
            log.info("%s: training #%d continued from %s = %d (%s)", problem.name, index, oracle.trace_axis, reached,
                     "replayed from its seed" if replayed else "from its state")
    frame = pd.DataFrame(rows)
    frame.attrs["training_states"] = states
    return frame


def cost_columns(checkpoints: list, kept: list[int], n: int | None, repeats: int, wall: float,
                 reached: float = 0) -> list[dict]:
    """What each kept row of one training records of it: `trace_final` (the training's own point, its
    last row), `trace_points` (the training's rows), and the training cost the row added:
    `cost_epochs` (trace axis units of one replication since the row before, NaN for an oracle
    without a trace axis), `cost_examples` (cost_epochs x training rows x replications: per-example
    gradients computed) and `wall_seconds` (the training's wall time, shared in proportion to
    cost_epochs, or equally without them). A row dropped (a checkpoint a user's trace did not record)
    leaves its cost to the next. `reached`: where a continued training starts, paid for before (a replayed
    training pays from 0)."""
    axis = [math.nan if e is None else float(e) for e in checkpoints]
    before = [float(reached)] + [axis[k] for k in kept[:-1]]
    added = [axis[k] - b for k, b in zip(kept, before)]
    total = sum(added)
    rows = []
    for position, (k, epochs) in enumerate(zip(kept, added)):
        share = epochs / total if total and not math.isnan(total) else 1.0 / len(kept)
        rows.append({"trace_final": position == len(kept) - 1, "trace_points": len(kept), "cost_epochs": epochs,
                     "cost_examples": epochs * n * repeats if n is not None else math.nan,
                     "wall_seconds": wall * share})
    return rows


def training_device(oracle) -> str:
    """Where the oracle trains: "cpu", or the CUDA device's name for an oracle that `uses_gpu` on a machine with
    one (its lots and noise come from the device's generators: the same seed draws other numbers there)."""
    if not getattr(oracle, "uses_gpu", False):
        return "cpu"
    import torch

    return f"cuda ({torch.cuda.get_device_name()})" if torch.cuda.is_available() else "cpu"
