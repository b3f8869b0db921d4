"""Paper 004 §6.2 / Table 3: the smallest ex-post (eps, 1e-6) at which a model meets a utility bar.
The tasks (data, bar, models, the Brownian method's statistic) are ml_tasks.py's.

Methods:
- Brownian + AboveThreshold (Whitehouse et al. 2022 / Wu et al. 2019): one non-private estimate
  theta (Twitter: the sufficient statistics X'X, X'y; MNIST, Gisette: the weights of bolt-on
  private PSGD, i.e. output perturbation) is released along one Brownian path at the times
  whose ex-post epsilon is 0.1, 0.2, ..., 1; AboveThreshold (eps_AT = 0.01) on the training
  utility (sensitivity 1/n) decides when to stop. Ex-post cost eps(t_stop) + eps_AT.
- Doubling with Papernot-Steinke: for budgets 0.1, 0.2, 0.4, 0.8, ... run P&S tuning (K ~
  TNB(eta, gamma) DP-SGD runs with random hyperparameters at that budget, keep the best) until
  the best meets the bar; RDP adds up at order alpha, converted once (Lemma 7).
- Alg. 3 (exponential dropping, Thm 13 at order alpha): every grid point (eps, learning rate,
  epochs, batch size, clipping norm) is a candidate with budget its DP-SGD RDP at alpha; the
  order prefers models meeting the bar, then smaller eps, then utility. Repeated until a model
  meets the bar; ex-post RDP adds up in the filter, converted by Lemma 7.
DP-SGD's noise multiplier for a target eps is calibrated at delta = 1e-6 (dpsgd.calibrate_noise).
"""
from __future__ import annotations

import functools
import itertools
import logging
import math
from dataclasses import dataclass

import numpy as np

from .. import UserError
from ..privacy import dpsgd
from ..train.hyper import DPSGDHyper
from .baselines import brownian_epsilon, papernot_steinke_rdp
from .distributions import sample_tnb, tnb_gamma
from .filter import rdp_to_dp
from .ml_tasks import TaskData
from .settings import DPSGDGrid
from .tuning import random_dropping_tuning

log = logging.getLogger(__name__)


# --- DP-SGD candidates ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Candidate:
    eps: float            # the grid's target epsilon (at delta)
    learning_rate: float
    epochs: int
    batch_size: int
    clip: float
    noise: float
    eps_achieved: float   # the run's epsilon (at delta) at `noise`: <= eps

    def hyper(self) -> DPSGDHyper:
        return DPSGDHyper(self.epochs, self.batch_size, self.learning_rate, self.noise, self.clip)


@functools.lru_cache(maxsize=None)
def calibrate_noise(n: int, batch_size: int, epochs: int, eps: float, delta: float,
                    conversion: str = "dp_accounting") -> dpsgd.Calibration | None:
    return dpsgd.calibrate_noise(n, batch_size, epochs, eps, delta, conversion)


def candidates(grid: DPSGDGrid, n: int, delta: float, conversion: str = "dp_accounting") -> list[Candidate]:
    batch_sizes = [min(b, n) for b in grid.batch_size]
    out = []
    for eps, lr, epochs, batch, clip in itertools.product(grid.eps, grid.learning_rate, grid.epochs,
                                                          sorted(set(batch_sizes)), grid.clip):
        calibration = calibrate_noise(n, int(batch), int(epochs), float(eps), delta, conversion)
        if calibration is None:
            log.warning("No noise multiplier <= %g makes DP-SGD (n=%d, m=%d, %d epochs) %g-DP; candidate dropped.",
                        dpsgd.MAX_NOISE, n, batch, epochs, eps)
            continue
        out.append(Candidate(float(eps), float(lr), int(epochs), int(batch), float(clip), calibration.noise,
                             calibration.epsilon))
    if not out:
        raise UserError("No DP-SGD candidate of the grid can be calibrated to its epsilon; widen the grid.")
    return out


def rdp_curve(c: Candidate, n: int, orders=dpsgd.ORDERS) -> np.ndarray:
    return dpsgd.rdp_curve(n, c.batch_size, c.noise, c.hyper().steps(n), orders)


def train_and_score(task: TaskData, c: Candidate, rng: np.random.Generator) -> float:
    """Test utility of one DP-SGD run."""
    return task.model.score(task, c.hyper(), rng)


# --- the three methods ---------------------------------------------------------------------------

@dataclass(frozen=True)
class TrialResult:
    epsilon: float        # ex-post epsilon at delta of the released model (inf if none was released)
    met: bool
    runs: int             # model trainings
    spent: float          # ex-post epsilon at delta actually spent, whether or not a model was released


def alg3_trial(task: TaskData, cands: list[Candidate], eps_rdp: np.ndarray, costs: np.ndarray, bottom: float,
               eps_prime: float, alpha: float, delta: float, max_attempts: int, rng: np.random.Generator) -> TrialResult:
    """Alg. 3 with exponential dropping (`tuning.random_dropping_tuning`), repeated until the selected
    model meets the bar; each attempt's Thm 13 cost adds up at order alpha (Lemma 7 at the end)."""
    def mechanism(i):
        return lambda r: train_and_score(task, cands[i], r)

    def key(utility, i):   # models meeting the bar first, then smaller eps, then better utility
        return task.meets(utility), -cands[i].eps, task.score(utility), i

    mechanisms = [mechanism(i) for i in range(len(cands))]
    spent, runs = 0.0, 0
    for _ in range(max_attempts):
        best, utility, ran = random_dropping_tuning(mechanisms, eps_rdp, eps_prime, rng, key, "exponential")
        runs += ran
        spent += bottom if best is None else float(costs[best])
        if best is not None and task.meets(utility):
            eps = rdp_to_dp(spent, alpha, delta)
            return TrialResult(eps, True, runs, eps)
    return TrialResult(math.inf, False, runs, rdp_to_dp(spent, alpha, delta))


def doubling_trial(task: TaskData, cands: list[Candidate], n: int, budgets: list[float], eta: float, mean: float,
                   alpha: float, delta: float, rng: np.random.Generator) -> TrialResult:
    """Doubling over `budgets`, each step a Papernot-Steinke tuning; the RDP of the steps that ran
    adds up at the fixed order alpha (an RDP filter: the stopping step depends on the data) and is
    converted once with Lemma 7 / the classic conversion at that order."""
    orders = np.array(sorted(set(dpsgd.ORDERS) | {float(alpha)}))
    at_alpha = int(np.flatnonzero(orders == alpha)[0])
    total = 0.0
    gamma = tnb_gamma(eta, mean)
    runs = 0
    for budget in budgets:
        pool = [c for c in cands if math.isclose(c.eps, budget)]
        if not pool:   # every candidate at this budget was dropped by the calibration (see candidates())
            continue
        # The mechanism P&S repeats picks hyperparameters at random: its RDP is at most the worst member's.
        curve = np.max([rdp_curve(c, n, tuple(orders)) for c in pool], axis=0)
        total += float(papernot_steinke_rdp(orders, curve, eta, mean)[at_alpha])
        k = sample_tnb(eta, gamma, rng)
        utilities = [train_and_score(task, pool[rng.integers(len(pool))], rng) for _ in range(k)]
        runs += k
        best = max(utilities, key=task.score)
        if task.meets(best):
            eps = rdp_to_dp(total, alpha, delta)
            return TrialResult(eps, True, runs, eps)
    return TrialResult(math.inf, False, runs, rdp_to_dp(total, alpha, delta))


def above_threshold_stop(values: np.ndarray, threshold: float, sensitivity: float, eps: float,
                         rng: np.random.Generator) -> int | None:
    """Dwork-Roth AboveThreshold (eps-DP for sensitivity-`sensitivity` queries): the first index whose
    noisy value reaches the noisy threshold, or None."""
    noisy_threshold = threshold + rng.laplace(0.0, 2.0 * sensitivity / eps)
    for j, v in enumerate(values):
        if v + rng.laplace(0.0, 4.0 * sensitivity / eps) >= noisy_threshold:
            return j
    return None


def brownian_times(eps_grid: np.ndarray, delta: float) -> tuple[np.ndarray, tuple[float, float]]:
    """Times whose ex-post epsilon (linear boundary with a = eps_0 / 2, a b = log(1/delta)/2) is eps_grid."""
    a = eps_grid[0] / 2.0
    b = 0.5 * math.log(1.0 / delta) / a
    times = (np.asarray(eps_grid) - a) / (b + 0.5)
    assert np.allclose(brownian_epsilon(times, a, b), eps_grid)
    return times, (a, b)


def brownian_trial(task: TaskData, eps_grid: np.ndarray, eps_at: float, delta: float, ridge: float, gamma: float,
                   rng: np.random.Generator, theta_cache: dict) -> TrialResult:
    """Brownian noise reduction of one statistic + AboveThreshold on the training utility."""
    n = len(task.x_train)
    if "theta" not in theta_cache:
        theta_cache["theta"], theta_cache["sensitivity"] = task.task.statistic(task, gamma, rng)
    theta, sens = theta_cache["theta"], theta_cache["sensitivity"]
    times, boundary = brownian_times(np.asarray(eps_grid, dtype=float), delta)
    w = np.cumsum(rng.normal(0.0, 1.0, size=(len(times), theta.size)) * np.sqrt(np.diff(np.concatenate([[0.0], times])))[:, None], axis=0)
    train_utility = [task.task.released_utility(task, theta + sens * w[j] / t, ridge, train=True)
                     for j, t in enumerate(times)]
    # AboveThreshold on the score (larger is better) against the bar; utilities have sensitivity 1/n
    # (MSE with predictions clipped to [0, 1], accuracy).
    stop = above_threshold_stop(np.array([task.score(u) for u in train_utility]), task.score(task.threshold), 1.0 / n,
                                eps_at, rng)
    if stop is None:   # every release was made: the path's last epsilon plus AboveThreshold's
        return TrialResult(math.inf, False, len(times), float(eps_grid[-1]) + eps_at)
    met = task.meets(task.task.released_utility(task, theta + sens * w[stop] / times[stop], ridge, train=False))
    eps = float(eps_grid[stop]) + eps_at
    return TrialResult(eps, met, len(times), eps)
