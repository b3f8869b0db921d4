"""Privacy inside the acquisition: epsilon of thousands of candidate points, computed, not predicted.

Epsilon is an exact, deterministic function of the hyperparameters, so with `dpareto.privacy_model:
exact` DPareto does not learn it with a GP. A model here answers two questions about an array of
points (one row per point, the problem's hyperparameters in natural units):
- `ranking(points)`: epsilons good enough to rank a round's candidates, in one vectorised pass;
- `exact(points)`: the privacy oracle's own epsilons, for the few finalists and the proposed point.

The models, and which a problem gets (`for_problem`):
- `DPSGDTable` for the built-in DP-SGD / DP-Adam oracles. Given n and delta, epsilon depends only on
  (epochs, lot, noise): one RDP curve per step for each (lot / n, noise) serves every epochs value
  (times the steps, epochs * round(n / lot)). The curves are tabulated once per process on a grid of
  integer lots and log-spaced noise multipliers (`wor_gaussian.rdp_over_ratios`, the oracle's own
  WBK19 Thm 27 evaluation), log RDP interpolated bilinearly in (log lot, log noise), then converted
  to (epsilon, delta) by the oracle's own accountant (`Accountant.epsilons_of_rdp`). At the grid's
  nodes it is the oracle's epsilon to 1e-12 (tested, and a step count off by one fails the test); between them
  the median relative error is ~1e-4, the largest a few per cent where the bound at an order
  collapses steeply in the noise (Thm 27's sum switches terms): fine for ranking, and every
  finalist is re-scored with `exact`.
- `VectorisedOracle` for oracles that define `epsilons(points, *, n, delta)` (SVT's closed form; yours).
- `PointwiseOracle`: the oracle's `epsilon()` called per candidate, where that is cheap enough: the
  rule is measured per problem, on 16 candidates, and taken when a round's candidates would cost
  <= POINTWISE_BUDGET seconds (20 us a point for 5,000).
- `ScreenedOracle` for an oracle too slow for every candidate (OpenDP's maps take ~1 ms a point: 5 s for
  5,000 candidates; diffprivlib's in its own environment ~65 us, a worker call each): the privacy GP's mean
  screens the candidates, and the oracle's own epsilon scores the `finalists` best of them and the point
  proposed. The point a round proposes, and every epsilon its region and answers use, is the oracle's.
  The finalists come in tiers a decade of cost apart (SCREEN_TIERS: 512 below 2 ms a point, 64 below 20 ms,
  else 16), so that a machine's load moves an oracle from one tier to another only where its cost sits near
  a boundary: the tier decides the proposals, and a chain replays exactly only within its tier.
- `GPMean` only where the oracle fails on candidate points: the privacy GP's mean as if it were epsilon, said
  at warning level, in the proposal file (`privacy_model`) and in the front table.

Every model says how many finalists a round scores exactly (`finalists`), what it needs of the round
(`with_gp`: the privacy GP, for the screened oracle only) and the domain's reachable epsilons (`reachable`).
"""
from __future__ import annotations

import functools
import logging
import time

import numpy as np

from ..privacy import wor_gaussian
from ..privacy.accountant import ALL_ORDERS
from ..problems.builtin import DPSGD
from ..problems.problem import Problem

log = logging.getLogger(__name__)

POINTWISE_BUDGET = 0.1     # seconds a round may spend on exact epsilons of its candidates, pointwise
MIN_FINALISTS, MAX_FINALISTS = 16, 512
# (seconds a point, below which a screened round scores this many finalists exactly); slower: MIN_FINALISTS
SCREEN_TIERS = ((2e-3, MAX_FINALISTS), (2e-2, 64))
LOT_NODES, NOISE_NODES = 16, 200
MAX_LOG_RDP = 700.0        # log RDP above this (orders never optimal) is clipped, so exp stays finite


class ExactModel:
    """What every exact model shares: its ranking is (nearly) the oracle's, so 16 finalists suffice, it needs no
    GP, and the domain's reachable epsilons are its ranking's."""
    finalists = MIN_FINALISTS
    ranking_is_exact = True   # its ranking epsilons are the oracle's (to within a few per cent)
    needs_gp = False          # whether the round must fit the privacy GP for it (`with_gp`)

    def with_gp(self, posterior, scaler):
        return self

    def reachable(self, points: np.ndarray) -> np.ndarray | None:
        return np.asarray(self.ranking(points), dtype=float)


class DPSGDTable(ExactModel):
    """DP-SGD's epsilon over candidates: tabulated per-step RDP for ranking, the oracle for `exact`."""
    name = "exact (DP-SGD RDP table for ranking, oracle for finalists)"

    def __init__(self, problem: Problem, n: int):
        self.problem, self.n, self.delta = problem, int(n), problem.delta
        self.accountant = problem.oracle.accountant
        names = problem.names
        self._epochs, self._lot, self._noise = (names.index(k) for k in ("epochs", "lot_size", "noise"))
        lot_range, noise_range = problem.bounds("lot_size"), problem.bounds("noise")
        lot_range = (max(1, int(lot_range[0])), min(self.n, int(lot_range[1])))
        self.lots, self.noises, self.log_rdp = _table(self.n, lot_range, noise_range)

    def per_step_rdp(self, lot: np.ndarray, noise: np.ndarray) -> np.ndarray:
        """Interpolated one-step RDP at ALL_ORDERS, (N, orders)."""
        x, y = np.log(lot), np.log(noise)
        lx, ly = np.log(self.lots), np.log(self.noises)
        i = np.clip(np.searchsorted(lx, x, side="right") - 1, 0, len(lx) - 2)
        j = np.clip(np.searchsorted(ly, y, side="right") - 1, 0, len(ly) - 2)
        tx = np.clip((x - lx[i]) / (lx[i + 1] - lx[i]), 0.0, 1.0)[:, None]
        ty = np.clip((y - ly[j]) / (ly[j + 1] - ly[j]), 0.0, 1.0)[:, None]
        t = self.log_rdp
        value = ((1 - tx) * (1 - ty) * t[i, j] + tx * (1 - ty) * t[i + 1, j]
                 + (1 - tx) * ty * t[i, j + 1] + tx * ty * t[i + 1, j + 1])
        return np.exp(value)

    def ranking(self, points: np.ndarray) -> np.ndarray:
        return self._ranking_by(self.accountant, points)

    def _ranking_by(self, accountant, points: np.ndarray) -> np.ndarray:
        points = np.atleast_2d(points)
        epochs = np.round(points[:, self._epochs])
        lot = np.clip(np.round(points[:, self._lot]), 1, self.n)
        noise = points[:, self._noise]
        num_steps = epochs * np.maximum(1, np.round(self.n / lot))
        curves = num_steps[:, None] * self.per_step_rdp(lot, noise)
        return accountant.epsilons_of_rdp(curves, self.delta)

    def exact(self, points: np.ndarray) -> np.ndarray:
        return _oracle_epsilons(self.problem, self.n, points)


class DPSGDTableForPLD(DPSGDTable):
    """Under the tight accountant (`privacy.accountant: pld`): WBK19's table ranks the candidates (a valid bound on
    the mechanism, 1.6-2.4x the tight epsilon, so the ranking is not taken as exact), and the finalists and every
    proposed point are scored by the oracle's own tight epsilon (10-50 ms a point)."""
    name = "exact (DP-SGD RDP table for ranking, the tight PLD oracle for finalists)"
    ranking_is_exact = False

    def ranking(self, points: np.ndarray) -> np.ndarray:
        from ..privacy.accountant import Accountant
        return self._ranking_by(Accountant(self.accountant.conversion), points)


class VectorisedOracle(ExactModel):
    """An oracle's own vectorised `epsilons(points, *, n, delta)` (points: an (N, d) array)."""
    name = "exact (the oracle's vectorised epsilons)"

    def __init__(self, problem: Problem, n: int | None):
        self.problem, self.n = problem, n

    def ranking(self, points: np.ndarray) -> np.ndarray:
        return np.asarray(self.problem.oracle.epsilons(np.atleast_2d(points), n=self.n, delta=self.problem.delta),
                          dtype=float)

    exact = ranking


class PointwiseOracle(ExactModel):
    """The oracle's `epsilon()` per candidate (chosen only where measured cheap enough)."""
    name = "exact (the oracle's epsilon per candidate)"

    def __init__(self, problem: Problem, n: int | None):
        self.problem, self.n = problem, n

    def ranking(self, points: np.ndarray) -> np.ndarray:
        return _oracle_epsilons(self.problem, self.n, points)

    exact = ranking


class ScreenedOracle(ExactModel):
    """An oracle too slow for every candidate (`per_call` seconds a point): the privacy GP's mean ranks the
    candidates (`ranking`), the oracle's own epsilon scores the `finalists` best of them and every point proposed
    (`exact`). Built without the GP by `for_problem`; `with_gp` gives the round's model."""
    ranking_is_exact = False
    needs_gp = True

    def __init__(self, problem: Problem, n: int | None, per_call: float, posterior=None, scaler=None):
        self.problem, self.n, self.per_call = problem, n, per_call
        self.posterior, self.scaler = posterior, scaler
        self.finalists = next((count for limit, count in SCREEN_TIERS if per_call < limit), MIN_FINALISTS)
        self.name = f"exact for the {self.finalists} finalists of each round (the privacy GP screens the candidates)"

    def with_gp(self, posterior, scaler) -> "ScreenedOracle":
        return ScreenedOracle(self.problem, self.n, self.per_call, posterior, scaler)

    def ranking(self, points: np.ndarray) -> np.ndarray:
        if self.posterior is None:
            raise RuntimeError("a screened oracle ranks by the privacy GP: call with_gp first")
        return np.exp(self.posterior.predict(self.scaler.to_unit(np.atleast_2d(points)))[0])

    def exact(self, points: np.ndarray) -> np.ndarray:
        return _oracle_epsilons(self.problem, self.n, points)

    def reachable(self, points: np.ndarray) -> np.ndarray:
        """The oracle's epsilons of the first `finalists` points (the caller puts the domain's corners first)."""
        return self.exact(np.atleast_2d(points)[:self.finalists])


def _oracle_epsilons(problem: Problem, n: int | None, points: np.ndarray) -> np.ndarray:
    from ..problems.evaluate import epsilon

    return np.array([epsilon(problem, _as_dict(problem, p), n) for p in np.atleast_2d(points)])


def _as_dict(problem: Problem, point: np.ndarray) -> dict:
    return {p.name: (int(round(v)) if p.integer else float(v)) for p, v in zip(problem.domain, point)}


def for_problem(problem: Problem, n: int | None, candidates: int, sample: np.ndarray):
    """The exact privacy model for `problem` (n training rows), or None where the oracle fails on the domain's
    points (then the privacy GP's mean stands in, and the caller says so): the DP-SGD table, the oracle's
    vectorised `epsilons`, the oracle per candidate when 16 calls (`sample`, points of the domain) extrapolate to
    <= POINTWISE_BUDGET s for `candidates` points, else the GP-screened oracle."""
    if isinstance(problem.oracle, DPSGD) and n is not None:
        from ..privacy.accountant import PLDAccountant
        return (DPSGDTableForPLD if isinstance(problem.oracle.accountant, PLDAccountant) else DPSGDTable)(problem, n)
    if callable(getattr(problem.oracle, "epsilons", None)):
        return VectorisedOracle(problem, n)
    probe = sample[:16]
    start = time.perf_counter()
    try:
        _oracle_epsilons(problem, n, probe)
    except Exception as exc:   # noqa: BLE001 - an oracle that cannot answer here keeps the GP
        log.warning("%s: the privacy oracle failed on candidate points (%s); privacy is learned by a GP", problem.name, exc)
        return None
    per_call = (time.perf_counter() - start) / max(1, len(probe))
    if per_call * candidates <= POINTWISE_BUDGET:
        return PointwiseOracle(problem, n)
    screened = ScreenedOracle(problem, n, per_call)
    log.info("%s: the privacy oracle takes %.2g s per point, %.2g s for %d candidates (> %.1f s): the privacy GP "
             "screens the candidates, the oracle scores the best %d", problem.name, per_call, per_call * candidates,
             candidates, POINTWISE_BUDGET, screened.finalists)
    return screened


@functools.lru_cache(maxsize=16)
def _table(n: int, lot_range: tuple[int, int], noise_range: tuple[float, float]):
    """Integer lot nodes, noise nodes and log one-step RDP at ALL_ORDERS, (lots, noises, orders)."""
    lots = np.unique(np.round(np.geomspace(lot_range[0], lot_range[1], LOT_NODES)).astype(int))
    if len(lots) < 2:
        lots = np.array([lot_range[0], lot_range[0] + 1])
    noises = np.geomspace(noise_range[0], noise_range[1], NOISE_NODES)
    with np.errstate(divide="ignore"):
        table = np.stack([np.log(wor_gaussian.rdp_over_ratios(lots / n, s, ALL_ORDERS)) for s in noises], axis=1)
    return lots, noises, np.clip(table, -MAX_LOG_RDP, MAX_LOG_RDP)


GP_EPSILON = "gp (predicted epsilon, not the oracle's)"


def finite_log(epsilon: np.ndarray) -> np.ndarray:
    """ln epsilon, inf for no guarantee (the acquisition clips it to its region)."""
    with np.errstate(divide="ignore"):
        return np.log(np.maximum(np.asarray(epsilon, dtype=float), 1e-300))



class GPMean:
    """Where the oracle cannot score candidates: the privacy GP's mean as if it were epsilon (a plug-in
    prediction, not the oracle's; the console, the proposal file's `privacy_model` and the front table say so)."""
    name = GP_EPSILON
    finalists = MIN_FINALISTS
    ranking_is_exact = False

    def with_gp(self, posterior, scaler):
        return self

    def reachable(self, points: np.ndarray) -> None:
        return None   # a prediction: the domain's reachable range is not known

    def __init__(self, posterior, scaler):
        self.posterior, self.scaler = posterior, scaler

    def ranking(self, points: np.ndarray) -> np.ndarray:
        return np.exp(self.posterior.predict(self.scaler.to_unit(np.atleast_2d(points)))[0])

    exact = ranking
