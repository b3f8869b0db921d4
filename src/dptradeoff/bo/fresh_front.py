"""The front a user reads, restated by fresh trainings: trainings made after the front was chosen.

A study's front is the Pareto front (epsilon, error) of thousands of points, each measured by a few trainings
(R). Taken at those means, the front lists the lucky points (the winner's curse): on the Laplace example 18 of
27 front points were listed above the best expected utility any setting has at their epsilon, and the default
run's adult-logreg-sgd front was listed 0.010-0.031 above ten fresh trainings of the same settings.

`restate` takes the pooled evaluations (the succeeded rows of every method), and in rounds:
1. the front of the rows at their utilities, a retrained point's utility its fresh trainings' mean, the others'
   the mean of the trainings that found them;
2. every front point without fresh trainings is trained `fresh_count` times (R, at least FRESH_LEAST; a cheap
   mechanism's point as many as FRESH_POINT_SECONDS buy at the chain's cost of a training, up to FRESH_MOST), with
   seeds no method saw (`fresh_seed`: the tag FRESH_TAG, the round and the point's key);
until every point of the front rests on fresh trainings, or MAX_ROUNDS rounds (then `capped`: the front listed is
that of the retrained points, and `left_out` counts the points that could still have entered it). A cheap mechanism's round (more
fresh trainings a point than R) retrains every point that could still enter the front (no retrained point dominates
its search mean) where that costs at most FRESH_ROUND_SECONDS at the chain's cost of a training: the front is then
settled by that round. A point whose training fails is dropped from the front; its failure is kept in its row.

3. the restated front's points are trained `fresh_count` times more, with seeds of their own (`round` LISTING), and
   those trainings alone are listed (`front_rows`). The rounds chose the front by their fresh trainings, and a
   choice by trainings curses them again, at a smaller scale (3 fresh trainings a DP-SGD point listed +0.004 above
   ten more); the listing's trainings chose nothing: the listed utilities are unbiased for the listed points.

A dear mechanism (a point gets only R trainings) runs at most DEAR_ROUNDS rounds before the listing.

A traced row (docs/traces.md) is a training's checkpoint: the point's hyperparameters with the trace axis
(`epochs`) at that checkpoint, and a training of that many epochs is, bit for bit, the trace's checkpoint. Its
fresh trainings are trainings of that many epochs. The front points of one round that differ only in the trace
axis are trained as one traced training to the largest of their checkpoints (`utilities_trace`), each point
measured at its own; points of an oracle that trains batches (`trains_batches`) are trained in one batch.

The file (`paths.fresh_front`) holds one row per retrained point: its hyperparameters, exact epsilon, `key`, the
`round` it was retrained in, `search_utility` and `search_n_trainings` (the mean and count of the trainings that
found it), `utility` (the fresh mean), `utility_runs` (the fresh trainings), `utility_min`, `utility_max`,
`n_trainings`, `failure`, `seed`, `wall_seconds`, and `on_front` (on the restated front at the end).
"""
from __future__ import annotations

import hashlib
import logging
import math
import os
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .. import UserError
from ..problems.evaluate import checked_utilities
from ..problems.problem import Problem
from ..problems.tables import succeeded
from ..seeds import derive_seed
from ..pareto import pareto_mask
from .support import with_support

log = logging.getLogger(__name__)

FRESH_TAG = "front-fresh"   # in every fresh seed, where a method's seed has the method's name
FRESH_LEAST = 3             # fresh trainings a point, at least (a problem's R where that is more)
FRESH_POINT_SECONDS = 0.02  # ... and as many more as this buys at the chain's cost of a training,
FRESH_MOST = 200            # up to this many (a cheap mechanism's point: its mean within a fraction of its spread)
MAX_ROUNDS = 12             # rounds of retraining at most; the front then says so (`capped`)
DEAR_ROUNDS = 2             # ... where a point gets only R trainings (a dear training: DP-SGD), fewer: each costs minutes
LISTING = -1                # the `round` of the listing trainings (module doc, step 3)
FRESH_ROUND_SECONDS = 10.0  # a cheap mechanism's round retrains every point that could enter the front, if that costs
                            # no more than this (one round then settles it: 5,665 points leave hundreds of candidates)
FRESH_SOURCE = "fresh trainings after the front was chosen"


def fresh_count(repeats: int, seconds: float | None = None) -> int:
    """The fresh trainings of one front point: the problem's R, at least FRESH_LEAST; where a training costs
    `seconds` (`training_seconds`), as many as FRESH_POINT_SECONDS buys, up to FRESH_MOST. Three trainings of a
    Laplace mean whose one release's utility has an sd of 0.14 say little: with them, half of the restated front
    was still listed above the best any setting has at its epsilon; with 30, 3 %."""
    least = max(int(repeats), FRESH_LEAST)
    if seconds is None or not math.isfinite(seconds) or seconds <= 0:
        return least
    return int(max(least, min(FRESH_MOST, FRESH_POINT_SECONDS // seconds)))


def training_seconds(evaluations: pd.DataFrame) -> float | None:
    """The median wall seconds of one training in the evaluations (a traced training's rows summed: its
    `wall_seconds` are shared among them), None where the rows do not record it."""
    ok = succeeded(evaluations)
    if "wall_seconds" not in ok or not len(ok):
        return None
    runs = ok["utility_runs"].map(lambda r: max(len(r) if r is not None else 1, 1)) if "utility_runs" in ok \
        else pd.Series(1, index=ok.index)
    frame = ok.assign(_runs=runs)
    ids = [c for c in ("method", "run", "index") if c in frame]
    if "trace_points" in frame and ids and (frame["trace_points"].fillna(1) > 1).any():
        frame = frame.groupby(ids, dropna=False).agg(wall_seconds=("wall_seconds", "sum"), _runs=("_runs", "max"))
    seconds = (frame["wall_seconds"].astype(float) / frame["_runs"]).to_numpy(float)
    seconds = seconds[np.isfinite(seconds)]
    return float(np.median(seconds)) if len(seconds) else None


def point_key(problem: Problem, row, without: str | None = None) -> str:
    """A point's hyperparameters as one string (by name, 12 significant digits), `without` one of them (a trace
    group's): the same whatever order a config lists the domain in."""
    return "|".join(f"{n}={float(row[n]):.12g}" for n in sorted(problem.names) if n != without)


def fresh_seed(seed: int, problem: str, run: int, round_index: int, key: str) -> int:
    """The seed of the fresh trainings of the point (or trace group, or batch) `key` in round `round_index`:
    derived with FRESH_TAG where a method's has its name, and a key where a method's has an index."""
    return derive_seed(seed, problem, FRESH_TAG, run, round_index, key)


@dataclass
class FreshFront:
    """The retrained points (`rows`, the module's columns), the rounds run, and whether MAX_ROUNDS stopped them."""
    rows: pd.DataFrame
    count: int = 0
    rounds: int = 0
    capped: bool = False
    trainings: int = 0
    left_out: int = 0           # capped: the points that could still enter the front, not retrained (left out of it)
    max_rounds: int = MAX_ROUNDS
    wall_seconds: float = 0.0
    failures: list = field(default_factory=list)


def pooled_rows(problem: Problem, evaluations: pd.DataFrame) -> pd.DataFrame:
    """The succeeded rows of every method (`study.every_point`'s frame) with their `key`, one row per key (the
    first: the method that found it; a point evaluated again keeps its first row's trainings)."""
    ok = succeeded(evaluations)
    ok = ok[np.isfinite(ok["epsilon"].to_numpy(float)) & np.isfinite(ok["utility"].to_numpy(float))]
    ok = ok.assign(key=[point_key(problem, row) for _, row in ok.iterrows()]) if len(ok) else ok.assign(key=[])
    return ok.drop_duplicates("key").reset_index(drop=True)


def restated(pooled: pd.DataFrame, fresh: pd.DataFrame) -> pd.DataFrame:
    """`pooled` with each retrained point's utility its fresh mean (`search_utility` the mean that found it,
    `fresh` True) and the points whose fresh training failed left out."""
    out = pooled.assign(search_utility=pooled["utility"], fresh=False)
    if fresh is not None and len(fresh):
        fresh = fresh[fresh["round"] != LISTING]   # the listing's trainings choose nothing
    if fresh is None or not len(fresh):
        return out
    by_key = fresh.drop_duplicates("key", keep="last").set_index("key")
    failed = set(by_key.index[by_key["failure"].notna()])
    ok = by_key[by_key["failure"].isna()]
    out = out[~out["key"].isin(failed)].copy()
    hit = out["key"].isin(ok.index)
    keys = out.loc[hit, "key"]
    out.loc[hit, "utility"] = ok.loc[keys, "utility"].to_numpy(float)
    out.loc[hit, "error"] = 1.0 - out.loc[hit, "utility"]
    out.loc[hit, "fresh"] = True
    return out


def dominated(frame: pd.DataFrame, by: pd.DataFrame) -> np.ndarray:
    """Which rows of `frame` some row of `by` weakly dominates (epsilon and error both no larger)."""
    if not len(by) or not len(frame):
        return np.zeros(len(frame), bool)
    order = np.argsort(by["epsilon"].to_numpy(float), kind="stable")
    eps, best = by["epsilon"].to_numpy(float)[order], np.minimum.accumulate(by["error"].to_numpy(float)[order])
    at = np.searchsorted(eps, frame["epsilon"].to_numpy(float), side="right") - 1
    return (at >= 0) & (best[np.maximum(at, 0)] <= frame["error"].to_numpy(float))


def front_mask(frame: pd.DataFrame) -> np.ndarray:
    return pareto_mask(frame[["epsilon", "error"]].to_numpy(float)) if len(frame) else np.zeros(0, bool)


def restate(problem: Problem, evaluations: pd.DataFrame, data, repeats: int, seed: int, run: int = 0,
            done: pd.DataFrame | None = None, max_rounds: int = MAX_ROUNDS, saved=None,
            count: int | None = None) -> FreshFront:
    """Retrain the front of `evaluations` (every method's rows) until every point on it rests on fresh trainings
    (module doc). `done`: the rows of rounds already run (a resumed job: those rounds are not run again, their
    trainings being the same); `saved(frame)`: called with every round's rows as they grow (a job's partial file);
    `count`: fresh trainings a point (default `fresh_count` at the evaluations' cost of a training)."""
    pooled = pooled_rows(problem, evaluations)
    if not len(pooled):
        raise UserError(f"{problem.name}: no succeeded evaluation to draw a front from")
    seconds = training_seconds(evaluations)
    count = count or fresh_count(repeats, seconds)
    rows = done.copy() if done is not None and len(done) else pd.DataFrame()
    result = FreshFront(rows, count=count)
    cheap = count > max(int(repeats), FRESH_LEAST) and seconds is not None
    max_rounds = max_rounds if cheap else min(max_rounds, DEAR_ROUNDS)
    result.max_rounds = max_rounds
    start = time.perf_counter()
    for round_index in range(max_rounds + 1):
        frame = restated(pooled, rows)
        on_front = frame[front_mask(frame)]
        todo = on_front[~on_front["fresh"]]
        if todo.empty:
            result.rounds = round_index
            break
        if round_index == max_rounds:
            result.rounds, result.capped, result.left_out = round_index, True, len(todo)
            log.warning("%s: %d rounds of fresh trainings left %d front points on their search means", problem.name,
                        max_rounds, len(todo))
            break
        if len(rows) and (rows["round"] == round_index).any():   # resumed: this round's trainings are in `done`
            continue
        if cheap:   # every point that could enter
            contenders = frame[~frame["fresh"] & ~dominated(frame, frame[frame["fresh"]])]
            measured = (rows["wall_seconds"] / rows["n_trainings"].clip(lower=1)).median() if len(rows) else seconds
            if len(contenders) * count * max(seconds, float(measured)) <= FRESH_ROUND_SECONDS:
                todo = contenders
        trained = train_points(problem, todo, data, count, seed, run, round_index)
        rows = pd.concat([rows, trained], ignore_index=True) if len(rows) else trained
        log.info("%s: round %d retrained %d front points (%d failed; %d fresh trainings each)", problem.name,
                 round_index, len(trained), int(trained["failure"].notna().sum()), count)
        if saved is not None:
            saved(rows)
    frame = restated(pooled, rows)
    chosen = frame[frame["fresh"]]   # the front of the retrained points (all of it, unless capped)
    final = chosen.loc[front_mask(chosen)]
    listed = rows[rows["round"] == LISTING] if len(rows) else rows
    todo = final[~final["key"].isin(set(listed["key"]))] if len(listed) else final
    if len(todo):
        trained = train_points(problem, todo, data, count, seed, run, LISTING)
        rows = pd.concat([rows, trained], ignore_index=True)
        log.info("%s: the restated front's %d points trained %d times more for the listing", problem.name,
                 len(trained), count)
        if saved is not None:
            saved(rows)
    if len(rows):
        rows = rows.assign(on_front=rows["key"].isin(set(final["key"])) & (rows["round"] == LISTING))
    result.rows = rows
    result.trainings = int(rows["n_trainings"].sum()) if len(rows) else 0
    result.wall_seconds = time.perf_counter() - start
    result.failures = rows.loc[rows["failure"].notna(), "failure"].tolist() if len(rows) else []
    return result


def _failure(exc: BaseException) -> str:
    log.exception("a fresh training of a front point failed")
    return f"utility oracle: {type(exc).__name__}: {exc}"


def train_points(problem: Problem, points: pd.DataFrame, data, count: int, seed: int, run: int,
                 round_index: int) -> pd.DataFrame:
    """`count` fresh trainings of each row of `points` (rows of `restated`), one row each (module doc's columns).
    Traced points differing only in the trace axis share one traced training; a batch oracle's points one batch."""
    oracle = problem.oracle
    axis = oracle.trace_axis
    checked = [problem.check(row[problem.names].to_dict()) for _, row in points.iterrows()]
    keys = points["key"].tolist()
    results: dict[str, tuple] = {}   # key -> (utilities or None, failure or None, seed, wall seconds)
    if oracle.trains_batches:
        batch_seed = fresh_seed(seed, problem.name, run, round_index, "batch:" + ",".join(keys))
        begin = time.perf_counter()
        try:
            values = oracle.utilities_of_batch(checked, data, count, np.random.default_rng(batch_seed))
            wall = (time.perf_counter() - begin) / len(checked)
            for key, point, utils in zip(keys, checked, values):
                results[key] = (checked_utilities(problem, point, utils, count), None, batch_seed, wall)
        except UserError:
            raise
        except Exception as exc:
            text, wall = _failure(exc), (time.perf_counter() - begin) / len(checked)
            results.update({key: (None, text, batch_seed, wall) for key in keys})
    elif axis is not None and _traces(oracle):
        groups: dict[str, list[int]] = {}
        for i, point in enumerate(checked):
            groups.setdefault(point_key(problem, point, without=axis), []).append(i)
        for group, members in groups.items():
            epochs = sorted({checked[i][axis] for i in members})
            longest = {**checked[members[0]], axis: epochs[-1]}
            group_seed = fresh_seed(seed, problem.name, run, round_index, f"trace:{group}")
            begin = time.perf_counter()
            try:
                trace = oracle.utilities_trace(longest, data, count, np.random.default_rng(group_seed), epochs)
                found = {int(round(float(k))): v for k, v in trace.items()}
                wall = (time.perf_counter() - begin) / len(members)
                for i in members:
                    if checked[i][axis] not in found:
                        raise KeyError(f"the trace recorded no utility at {axis} = {checked[i][axis]}")
                for i in members:
                    utils = checked_utilities(problem, checked[i], found[checked[i][axis]], count)
                    results[keys[i]] = (utils, None, group_seed, wall)
            except UserError:
                raise
            except Exception as exc:
                text, wall = _failure(exc), (time.perf_counter() - begin) / len(members)
                results.update({keys[i]: (None, text, group_seed, wall) for i in members})
    else:
        for key, point in zip(keys, checked):
            point_seed = fresh_seed(seed, problem.name, run, round_index, key)
            begin = time.perf_counter()
            try:
                utils = checked_utilities(problem, point, oracle.utilities(point, data, count,
                                                                           np.random.default_rng(point_seed)), count)
                results[key] = (utils, None, point_seed, time.perf_counter() - begin)
            except UserError:
                raise
            except Exception as exc:
                results[key] = (None, _failure(exc), point_seed, time.perf_counter() - begin)
    out = []
    for (_, row), key in zip(points.iterrows(), keys):
        utils, failure, used, wall = results[key]
        runs = [] if utils is None else [float(u) for u in utils]
        mean = float(np.mean(runs)) if runs else math.nan
        searched = row.get("utility_runs")
        out.append({**{n: row[n] for n in problem.names}, "epsilon": float(row["epsilon"]), "key": key,
                    "round": round_index, "method": row.get("method"), "index": row.get("index"),
                    "search_utility": float(row["search_utility"]),
                    "search_n_trainings": len(searched) if searched is not None and np.ndim(searched) else 1,
                    "utility": mean, "error": 1.0 - mean, "utility_runs": runs,
                    "utility_min": float(np.min(runs)) if runs else math.nan,
                    "utility_max": float(np.max(runs)) if runs else math.nan, "n_trainings": len(runs),
                    "failure": failure, "seed": int(used), "wall_seconds": float(wall)})
    return pd.DataFrame(out)


def _traces(oracle) -> bool:
    """Whether the oracle's traced training is its own (a built-in's, or a user's utilities_trace/utility_trace)."""
    from ..problems.oracle import Oracle

    kind = type(oracle)
    return kind.utilities_trace is not Oracle.utilities_trace or kind.utility_trace is not Oracle.utility_trace


def front_rows(problem: Problem, evaluations: pd.DataFrame, fresh: pd.DataFrame) -> pd.DataFrame:
    """The restated front, by increasing epsilon: the front of the retrained points (every point of the restated
    front once the rounds settle it; where the cap stopped them, the points not retrained are left out, never listed
    at their search means), with `utility` their fresh trainings' mean and `n_trainings`, `utility_se`,
    `utility_supported` (`support.with_support`) from those trainings, `search_utility` and `search_n_trainings` from
    the trainings that found them, the hyperparameters, the method that found it and its row's index."""
    pooled = pooled_rows(problem, evaluations)
    frame = restated(pooled, fresh)
    frame = frame[frame["fresh"]]
    on_front = frame[front_mask(frame)].sort_values("epsilon", kind="stable")
    columns = ["epsilon", "utility", "n_trainings", "utility_se", "utility_supported", "utility_min", "utility_max",
               "chosen_utility", "search_utility", "search_n_trainings", *problem.names, "method", "index"]
    chose = frame.set_index("key")["utility"]   # the fresh trainings that chose the front
    if fresh is not None and len(fresh) and "round" in fresh and (fresh["round"] == LISTING).any():
        fresh = fresh[fresh["round"] == LISTING]   # listed by the trainings that chose nothing
    ok = fresh[fresh["failure"].isna()].drop_duplicates("key", keep="last") if fresh is not None and len(fresh) \
        else pd.DataFrame(columns=["key", "utility_runs"])
    on_front = on_front[on_front["key"].isin(set(ok["key"]))]   # a listing training that failed: not listed
    supported = with_support(ok.reset_index(drop=True)).set_index("key") if len(ok) else None
    searched = with_support(pooled).set_index("key")
    rows = []
    for _, row in on_front.iterrows():
        source, chain = supported.loc[row["key"]], searched.loc[row["key"]]
        rows.append({"epsilon": row["epsilon"], "utility": float(source["utility"]),
                     "n_trainings": int(source["n_trainings"]), "utility_se": float(source["utility_se"]),
                     "utility_supported": float(source["utility_supported"]),
                     "utility_min": float(source.get("utility_min", math.nan)),
                     "utility_max": float(source.get("utility_max", math.nan)),
                     "chosen_utility": float(chose.loc[row["key"]]),
                     "search_utility": float(row["search_utility"]), "search_n_trainings": int(chain["n_trainings"]),
                     **{n: row[n] for n in problem.names}, "method": row.get("method"), "index": row.get("index")})
    out = pd.DataFrame(rows, columns=columns)
    return out.assign(error=1.0 - out["utility"].astype(float))


# A job's rounds so far, beside its output (not one of the rule's outputs, so a killed job's rounds stay).
def partial_path(out: str) -> str:
    return f"{out}.rounds.parquet"


def signature(problem: Problem, evaluations: pd.DataFrame, repeats: int, seed: int, run: int) -> str:
    """What a partial file's rounds depend on: the pooled rows' keys and utilities, R, the seed and the run."""
    pooled = pooled_rows(problem, evaluations)
    text = "\n".join(f"{k} {u:.17g}" for k, u in zip(pooled["key"], pooled["utility"]))
    count = fresh_count(repeats, training_seconds(evaluations))
    return hashlib.sha256(f"{problem.name} {repeats} {seed} {run} {count}\n{text}".encode()).hexdigest()


def run_rule(problem: Problem, evaluations: pd.DataFrame, data, repeats: int, seed: int, out: str,
             run: int = 0) -> FreshFront:
    """The `front_fresh` rule: `restate`, resumed from the partial file of a killed job with the same signature,
    written to `out` with its provenance (rounds, whether capped, trainings, seconds, the seed rule)."""
    from ..io import read_frame, read_provenance, write_frame

    mark = signature(problem, evaluations, repeats, seed, run)
    partial = partial_path(out)
    done = None
    if os.path.exists(partial):
        try:
            if read_provenance(partial).get("signature") == mark:
                done = read_frame(partial)
                log.info("%s: resuming from %s (%d retrained points)", problem.name, partial, len(done))
        except Exception:   # a damaged partial file: start again
            done = None

    def saved(rows):
        write_frame(rows, partial, {"problem": problem.name, "signature": mark})

    result = restate(problem, evaluations, data, repeats, seed, run, done, saved=saved)
    rows = result.rows if len(result.rows) else pd.DataFrame(columns=["key", "failure", "utility_runs"])
    write_frame(rows, out, {"problem": problem.name, "rounds": result.rounds, "capped": result.capped,
                            "listing_round": LISTING,
                            "fresh_trainings_a_point": result.count, "trainings": result.trainings,
                            "left_out": result.left_out,
                            "wall_seconds": result.wall_seconds, "max_rounds": result.max_rounds,
                            "seeds": f"derive_seed(seed, problem, {FRESH_TAG!r}, run, round, key)",
                            "signature": mark})
    if os.path.exists(partial):
        os.unlink(partial)
    log.info("%s: the front restated by fresh trainings in %d round(s)%s: %d points retrained, %d trainings, %.1f s",
             problem.name, result.rounds, " (capped)" if result.capped else "", len(result.rows), result.trainings,
             result.wall_seconds)
    return result


def describe(provenance: dict) -> str:
    """The fresh front's rounds for a caption: how many, and whether the cap stopped them."""
    rounds, capped = int(provenance.get("rounds", 0)), bool(provenance.get("capped", False))
    text = (f"{FRESH_SOURCE}: {rounds} round{'s' if rounds != 1 else ''} of retraining the front and recomputing "
            f"it from {provenance.get('fresh_trainings_a_point', '?')} fresh trainings a point, then "
            f"{provenance.get('fresh_trainings_a_point', '?')} more of each point of the front, which alone are listed "
            f"(utility, n_trainings: they chose nothing; chosen_utility: the trainings that chose the front), seeds no "
            f"method used, {provenance.get('trainings', '?')} trainings in all")
    if capped:
        text += (f"; the rounds stopped at their cap ({provenance.get('max_rounds', MAX_ROUNDS)}): "
                 f"{provenance.get('left_out', '?')} points whose search means could still enter the front were not "
                 f"retrained, and the front is that of the retrained points")
    return text
