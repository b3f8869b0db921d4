"""Rounds that train while they are cheap to: a cheap oracle's DPareto round proposes a batch (issue BUDGET).

A DPareto proposal costs 0.1-3 s (the GPs' fit, 5,000 candidates, exact epsilons); a clamped mean trains in
0.1 ms. One point a round then spends 99.9 % of a chain's wall-clock choosing. So a round of the default chain
(`batch_size` 1, no epoch traces) measures, from the files it reads, what the round before cost to choose
(`job_seconds` of its proposal) and what one point cost to evaluate (`job_seconds` of the last evaluation file over
its rows: the training's replications, its epsilon and the job around them), and proposes

    B = the power of two <= TRAIN_SHARE x (proposal seconds) / (one point's seconds), 1 <= B <= BATCH_MOST,

so a round trains for at most half as long as it chose (the chain then takes at most 1.5x its proposals' time), or,
where the problem gives the chain seconds (`seconds.chain` / rounds, less the proposal's), the power of two >= those
seconds / (one point's seconds). B > 1 only
where a training is cheaper than a proposal: a DP-SGD training (0.05-2 s) keeps one point a round, and a traced
chain (whose trainings stop and resume) is never batched. B in powers of two: a rerun on a machine of the same
speed proposes the same batches (a cost near a power's edge may fall in the next: the rows record B).

The batch: the round's acquisition point (the chain's rule, query rounds included) and, outside query rounds, up to
BELIEVED - 1 more by the Kriging believer (`propose.choose_with_known_privacy`), then perturbations (Gaussian in the
GPs' unit box, at LOCAL_SCALES) around those points, around the observed front's points inside the round's region
where the front still moves (`flat_tail`: not where more privacy buys less than FLAT_SHARE of the front's error
range), and around each declared question's best evaluated point: local refinement where the trade-off and the
answers are.
The whole batch is trained inside the round's one evaluation job (`chain_round.evaluate_point`), each point with its
R replications, written to one Parquet file: resumable as any evaluation. The GPs learn from at most `gp_points` rows
(`propose.gp_rows`: the observed front first)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..problems.problem import Problem
from ..problems.tables import succeeded
from ..seeds import rng as derived_rng
from .answer_rounds import query_of_round
from ..pareto import pareto_mask
from .transforms import InputScaler

BATCH_MOST = 256            # points a round, at most (1,024: the same fronts, twice the wall-clock)
TRAIN_SHARE = 0.5           # a round's batch trains for at most this share of its proposal's seconds: the chain takes
                            # at most 1.5 times its proposals' time (a 25 ms training's chain took 3.5x the count chain's
                            # with batches as long as the proposal: 354 s against 102)
BELIEVED = 4                # acquisition points a batch round chooses by the Kriging believer, at most
LOCAL_SCALES = (0.1, 0.03, 0.01)   # perturbations' sd, shares of the unit box
RECENT = 4                  # a point's cost: the median over this many last evaluation files
FLAT_SHARE = 0.02           # a front point within this share of the front's error range of its least error is flat


def point_seconds(evaluations: list[str], read) -> float | None:
    """One evaluated point's seconds (the evaluation job over its rows), the median of the last RECENT files; None
    before any."""
    costs = []
    for path in evaluations[-RECENT:]:
        frame = read(path)
        if len(frame) and "job_seconds" in frame:
            costs.append(float(frame["job_seconds"].iloc[0]) / len(frame))
    return float(np.median(costs)) if costs else None


def batch_size(proposal_seconds: float | None, per_point: float | None, chain_share: float | None = None) -> int:
    """B (module doc): the power of two of points whose evaluation takes at most TRAIN_SHARE of the proposal's
    seconds, or, where the problem gives the chain seconds, at least its share of them less the proposal's."""
    if proposal_seconds is None or per_point is None or per_point <= 0:
        return 1
    if chain_share:
        wanted = max(proposal_seconds, chain_share - proposal_seconds) / per_point
        rounded = math.ceil(math.log2(wanted) - 1e-9) if wanted >= 2 else 0
    else:
        wanted = TRAIN_SHARE * proposal_seconds / per_point
        rounded = math.floor(math.log2(wanted) + 1e-9) if wanted >= 2 else 0
    return int(min(BATCH_MOST, 2 ** rounded))


def flat_tail(epsilon: np.ndarray, error: np.ndarray) -> np.ndarray:
    """Which front points lie where the front is flat: errors within FLAT_SHARE of the front's error range above its
    least error, all but the most private of them (where the flat part begins). More privacy spent there buys almost
    nothing, and perturbations around them would spend the batch where the trade-off is not."""
    flat = np.zeros(len(epsilon), bool)
    if len(epsilon) < 3:
        return flat
    low, high = float(np.min(error)), float(np.max(error))
    near = error - low <= FLAT_SHARE * (high - low)
    if near.sum() > 1:
        flat[near] = True
        flat[np.flatnonzero(near)[int(np.argmin(epsilon[near]))]] = False
    return flat


def centres(problem: Problem, evals: pd.DataFrame, chosen: pd.DataFrame, region: tuple[float, float],
            queries: tuple[tuple[str, float], ...]) -> np.ndarray:
    """The points perturbations go around: the round's chosen points, the observed front inside the region, and
    each declared question's best evaluated point by its measured mean (the most useful at epsilon <= E, the most
    private whose mean reaches U)."""
    ok = succeeded(evals)
    points = [chosen[problem.names].to_numpy(float)]
    if len(ok):
        eps, err = ok["epsilon"].to_numpy(float), ok["error"].to_numpy(float)
        inside = (eps >= region[0]) & (eps <= region[1]) & np.isfinite(eps)
        front = np.zeros(len(ok), bool)
        front[inside] = pareto_mask(np.stack([eps[inside], err[inside]], axis=1))
        front[np.flatnonzero(front)[flat_tail(eps[front], err[front])]] = False
        points.append(ok.loc[front, problem.names].to_numpy(float))
        for kind, target in queries:   # by measured means: thousands of rows, and only a centre is asked
            meets = ok[eps <= target] if kind == "eps" else ok[ok["utility"].to_numpy(float) >= target]
            if len(meets):
                best = meets["utility"].idxmax() if kind == "eps" else meets["epsilon"].idxmin()
                points.append(ok.loc[[best], problem.names].to_numpy(float))
    return np.unique(np.concatenate(points), axis=0)


def perturbations(problem: Problem, around: np.ndarray, count: int, taken: set, rng: np.random.Generator) -> np.ndarray:
    """`count` new points (not in `taken`, rounded as the domain asks) near `around`, in turn, at LOCAL_SCALES; where
    those keep repeating points, random points of the domain; fewer where the domain has no more."""
    scaler = InputScaler(problem)
    out = []
    tries, local = 0, 10 * count + 50
    while len(out) < count and tries < 2 * local:
        if tries < local:
            i = tries % len(around)
            scale = LOCAL_SCALES[(tries // len(around)) % len(LOCAL_SCALES)]
            unit = scaler.to_unit(around[i][None, :])[0] + rng.normal(0.0, scale, len(problem.domain))
        else:   # the neighbourhoods are exhausted (a coarse integer domain): random points of the domain
            unit = rng.random(len(problem.domain))
        point = scaler.from_unit(np.clip(unit, 0.0, 1.0)[None, :])[0]
        key = tuple(np.round(point, 12))
        tries += 1
        if key not in taken:
            taken.add(key)
            out.append(point)
    return np.array(out).reshape(-1, len(problem.domain))


def batch_round(problem: Problem, evals: pd.DataFrame, points: pd.DataFrame, size: int, queries, first_index: int,
                rng: np.random.Generator) -> pd.DataFrame:
    """The round's `points` (its acquisition's) completed to `size` rows with perturbations (`centres`), each row
    with its chain index (`point_index`, from `first_index`) and the round's batch size."""
    region = (float(points["region_low"].iloc[0]), float(points["region_high"].iloc[0])) \
        if "region_low" in points else (0.0, math.inf)
    taken = {tuple(np.round(p, 12)) for p in evals[problem.names].to_numpy(float)}
    taken |= {tuple(np.round(p, 12)) for p in points[problem.names].to_numpy(float)}
    extra = perturbations(problem, centres(problem, evals, points, region, queries), size - len(points), taken, rng)
    rows = pd.DataFrame([{p.name: (int(v) if p.integer else float(v)) for p, v in zip(problem.domain, point)}
                         for point in extra])
    if len(rows):
        rows["steers"] = "perturbation"
        for column in points.columns:
            if column not in rows and column not in ("acquisition", "predicted_epsilon", "predicted_error",
                                                     "batch_position", "steers"):
                rows[column] = points[column].iloc[0]   # the round's own columns (timings, region, GP jitter)
        rows["batch_position"] = np.arange(len(points), len(points) + len(rows))
    out = pd.concat([points, rows], ignore_index=True)
    out["batch_size"] = len(out)
    out["point_index"] = first_index + np.arange(len(out))
    return out


def propose_batch(method, problem: Problem, evals: pd.DataFrame, size: int, seed: int, run: int, round_index: int,
                  initial: int, previous: dict | None, context, first_index: int) -> tuple[pd.DataFrame, dict]:
    """A DPareto round of `size` points (`method.round`'s points and record): its acquisition's point (a query round's)
    or up to BELIEVED by the Kriging believer, completed with perturbations (`batch_round`) where size > 1. Every
    row has its chain index (`point_index`, from `first_index`: the rows evaluated so far, so a chain of one point a
    round numbers its points as before) and the round's `batch_size`."""
    queries = context.queries if context is not None else ()
    steered = query_of_round(round_index, method.settings.query_every, queries) if size > 1 else None
    q = 1 if size == 1 or steered is not None else min(size, BELIEVED)
    points, record = method.round(problem, evals, q, seed, run, round_index, initial, previous, context=context)
    if size > 1:
        return batch_round(problem, evals, points, size, queries, first_index,
                           derived_rng(seed, problem.name, "batch-round", run, round_index)), record
    return points.assign(batch_size=1, point_index=first_index), record
