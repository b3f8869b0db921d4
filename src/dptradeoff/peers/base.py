"""What every peer optimiser shares with DPareto's chain: the search box (the problem's domain, the
same box DPareto's GPs search), the objectives as the GPs see them (log epsilon, logit error), and
one proposal from every evaluation so far, deterministic for a seed.

A peer keeps no state between rounds: each round rebuilds the optimiser from the evaluations
(Optuna: a fresh in-memory study given every evaluation as a completed trial; BoTorch: GPs fitted
afresh), so a resumed chain proposes exactly what an uninterrupted one does.
"""
from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ..bo.propose import gp_rows
from ..bo.transforms import objectives_to_gp
from ..problems.problem import Problem
from ..seeds import derive_seed

# Torch's global RNG and thread settings are per process, and Snakemake runs chain rounds as threads
# of one process: rounds of torch-based peers hold this lock so that each is deterministic.
TORCH_LOCK = threading.Lock()


class Peer(ABC):
    """A multi-objective optimiser that proposes q points from a problem's evaluations."""
    name: str
    # What the proposal file records of the peer's configuration (its library's documented settings).
    settings: dict

    def propose(self, problem: Problem, evals: pd.DataFrame, q: int, seed: int) -> pd.DataFrame:
        """q points (one row each, the problem's hyperparameters, `batch_position`, `proposal_seconds`)."""
        start = time.perf_counter()
        points = self._propose(problem, evals, q, seed)
        frame = pd.DataFrame([{**self.typed(problem, p), "batch_position": i} for i, p in enumerate(points)])
        frame["proposal_seconds"] = time.perf_counter() - start
        return frame

    def round(self, problem: Problem, evals: pd.DataFrame, q: int, seed: int, run: int, round_index: int,
              initial: int, previous: dict | None, context=None) -> tuple[pd.DataFrame, dict]:
        """A chain round (as DPareto's, `bo.propose.DPareto.round`): the points and what the proposal file
        records; the seed is the round's own, the previous round's file and the context are not needed."""
        rows = self.learning_rows(evals)
        points = self.propose(problem, rows, q, derive_seed(seed, problem.name, self.name, run, round_index))
        return points, {"settings": self.settings, "learned_from": len(rows)}

    def learning_rows(self, evals: pd.DataFrame) -> pd.DataFrame:
        """The evaluation rows the optimiser learns from: every one."""
        return evals

    def configured(self, gp_points: int) -> "Peer":
        """The peer as a chain runs it, given the config's `dpareto.peer_gp_points`."""
        return self

    @abstractmethod
    def _propose(self, problem: Problem, evals: pd.DataFrame, q: int, seed: int) -> list[dict]:
        """q points as {name: value} inside the problem's domain."""

    @staticmethod
    def typed(problem: Problem, point: dict) -> dict:
        """The point clipped to the domain, integers as ints (the evaluation rule checks the range)."""
        out = {}
        for p in problem.domain:
            v = float(np.clip(point[p.name], p.low, p.high))
            out[p.name] = int(round(v)) if p.integer else v
        return out

    @staticmethod
    def objectives(evals: pd.DataFrame) -> np.ndarray:
        """(log epsilon, logit error) per evaluation, clipped as the GPs' (transforms), both minimised."""
        return objectives_to_gp(evals["epsilon"].to_numpy(float), evals["error"].to_numpy(float))


@dataclass(frozen=True)
class GPPeer(Peer, ABC):
    """A peer that fits GPs: it learns from the rows DPareto's GPs would (`bo.propose.gp_rows`) capped at
    `gp_points` (`dpareto.peer_gp_points`), every training's own point first, then epoch-trace rows on the
    observed front. A round's cost grows with its rows; with epoch traces a chain's rows outnumber its
    trainings about 8 to 1 (benchmarks/peer_rows.py)."""
    gp_points: int | None = None

    def learning_rows(self, evals: pd.DataFrame) -> pd.DataFrame:
        return evals if self.gp_points is None else gp_rows(evals, self.gp_points)

    def configured(self, gp_points: int) -> "Peer":
        return replace(self, gp_points=gp_points)
