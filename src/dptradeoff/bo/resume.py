"""Trainings that stop and resume: the continuations a round may propose beside new points.

A traced training of E epochs is every shorter training on its way (docs/traces.md), so a training that
stopped at epoch e can go on to any later epoch, and its rows up to e stay rows of the front. A round
with `Settings.resume` values, beside new points, every continuation of every training so far: the same
hyperparameters at a later value of the trace axis, its epsilon exact, its cost the epochs it adds (the
oracle `resumable`: from the state kept in the evaluation file) or every epoch again (replayed from its
seed). Each candidate is valued by the acquisition per unit of cost (`bo.propose`), so a training goes on
only while its next epochs buy more front per epoch than anything new: it stops when they do not, and
resumes when the front makes them worth it again. A training none of whose continuations could improve
the front in the region (acquisition 0 at every later epoch, by the GP's prediction of its path) counts
as stopped in the round's proposal file.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..problems.problem import Problem

ENDS_PER_TRAINING = 16   # continuation candidates per training: every later epoch up to this many, else log-spaced


@dataclass(frozen=True)
class Continuations:
    """Candidate continuations: `points` (k, d) the trainings' hyperparameters at later axis values, `cost`
    (k,) the axis units each adds to the training cost, `training` (k,) the row of `trainings` it continues.
    `trainings`: one row per training that can go on (index, seed, reached, evaluation, native)."""
    points: np.ndarray
    cost: np.ndarray
    training: np.ndarray
    trainings: pd.DataFrame

    @property
    def reached(self) -> np.ndarray:
        """Each candidate's starting point: the axis value its training reached."""
        return self.trainings["reached"].to_numpy(float)[self.training]

    def without(self, index: int) -> "Continuations":
        """These candidates less the continuations of training `index` (chosen already in this batch)."""
        keep = self.trainings["index"].to_numpy()[self.training] != index
        return Continuations(self.points[keep], self.cost[keep], self.training[keep], self.trainings)

    def proposal_fields(self, candidate: int) -> dict:
        """What a proposal row records of continuation `candidate` (bo.chain_round.continuation reads it)."""
        training = self.trainings.iloc[int(self.training[candidate])]
        return {"resumes": int(training["index"]), "resumes_seed": int(training["seed"]),
                "resumes_from": int(training["reached"]), "resumes_evaluation": int(training["evaluation"]),
                "resumes_replayed": not bool(training["native"]), "cost_axis": float(self.cost[candidate])}


NEW_TRAINING = {"resumes": -1, "resumes_seed": -1, "resumes_from": 0, "resumes_evaluation": -1,
                "resumes_replayed": False}


def continuations(problem: Problem, evals: pd.DataFrame, replayed: bool = False) -> Continuations:
    """Every training in `evals` that can go on past the axis value it reached (failed ones cannot), with
    its candidate ends: each later value up to ENDS_PER_TRAINING of them, else that many log-spaced. An
    oracle that is not `resumable` has none unless `replayed` (a replay costs a new training's epochs and
    trains them again, so a round proposes a new point instead)."""
    axis = problem.oracle.trace_axis
    names = problem.names
    empty = Continuations(np.empty((0, len(names))), np.empty(0), np.empty(0, int),
                          pd.DataFrame(columns=["index", "seed", "reached", "evaluation", "native"]))
    if axis is None or axis not in names or "index" not in evals or evals.empty:
        return empty
    if not problem.oracle.resumable and not replayed:
        return empty
    top = int(problem.bounds(axis)[1])
    failed = evals["failure"].notna() if "failure" in evals else pd.Series(False, index=evals.index)
    bad = set(evals.loc[failed, "index"])
    last = evals[~evals["index"].isin(bad)].sort_values(axis, kind="stable").groupby("index", sort=True).tail(1)
    last = last[last[axis] < top]
    if last.empty:
        return empty
    evaluation = last["evaluation"] if "evaluation" in last else pd.Series(-1, index=last.index)
    trainings = pd.DataFrame({"index": last["index"].astype(int).to_numpy(), "seed": last["seed"].astype("int64").to_numpy(),
                              "reached": last[axis].astype(int).to_numpy(),
                              "evaluation": evaluation.fillna(-1).astype(int).to_numpy(),
                              "native": bool(problem.oracle.resumable)})
    points, cost, training = [], [], []
    at = names.index(axis)
    base = last[names].to_numpy(float)
    for row, (reached, native) in enumerate(zip(trainings["reached"], trainings["native"])):
        ends = np.arange(reached + 1, top + 1)
        if len(ends) > ENDS_PER_TRAINING:
            ends = np.unique(np.round(np.geomspace(reached + 1, top, ENDS_PER_TRAINING)).astype(int))
        block = np.repeat(base[row][None, :], len(ends), axis=0)
        block[:, at] = ends
        points.append(block)
        cost.append(ends - reached if native else ends.astype(float))
        training.append(np.full(len(ends), row))
    return Continuations(np.vstack(points), np.concatenate(cost).astype(float), np.concatenate(training), trainings)


PATH_POINTS = 8   # the checkpoints a training's path is valued at: every one up to this many, else log-spaced


def paths(points: np.ndarray, starts: np.ndarray, axis: int) -> np.ndarray:
    """(N, PATH_POINTS, d): each candidate's checkpoints after `starts` up to its own axis value (every value up to
    PATH_POINTS of them, else that many log-spaced, its own last), rows of NaN after a shorter path's end."""
    out = np.full((len(points), PATH_POINTS, points.shape[1]), np.nan)
    ends = np.round(points[:, axis]).astype(int)
    first = np.round(starts).astype(int) + 1
    for start, end in set(zip(first.tolist(), ends.tolist())):
        if end - start + 1 <= PATH_POINTS:
            values = np.arange(start, end + 1)
        else:
            values = np.unique(np.round(np.geomspace(start, end, PATH_POINTS)).astype(int))
        rows = np.flatnonzero((first == start) & (ends == end))
        out[rows[:, None], np.arange(len(values))[None, :]] = points[rows][:, None, :]
        out[rows[:, None], np.arange(len(values))[None, :], axis] = values[None, :]
    return out
