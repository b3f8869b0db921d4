"""Paper 004 §6.2 / Table 3: the smallest ex-post (eps, 1e-6) at which a model meets a utility bar.

Tasks (datasets under results/data): Twitter linear regression (test MSE <= 0.05, target scaled
by a public bound into [0, 1], rows clipped to norm 1), MNIST (test accuracy >= 0.6; DP-SGD on
the network `expost.table3.mnist_model` names: mlp2, 784-128-64-10, or the paper's CNN, PyTorch's
Basic MNIST Example, train/cnn.py), Gisette (test accuracy >= 0.4; logistic
regression on unit-norm rows). The test split is treated as public, as paper 004's footnote 5
allows.

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
from ..train import linear, outpert
from ..train.hyper import DPSGDHyper
from .baselines import brownian_epsilon, papernot_steinke_rdp
from .distributions import sample_tnb, tnb_gamma
from .filter import rdp_to_dp
from .tuning import random_dropping_tuning

log = logging.getLogger(__name__)

TASKS = {
    # dataset: (default model, utility, direction of the bar)
    "twitter": ("linear-squared", "mse", "at_most"),
    "mnist": ("mlp2", "accuracy", "at_least"),
    "gisette": ("linear-logistic", "accuracy", "at_least"),
}
MODELS = {"twitter": ("linear-squared",), "mnist": ("mlp2", "cnn"), "gisette": ("linear-logistic",)}   # the choices


@dataclass
class TaskData:
    dataset: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    threshold: float
    model: str = ""   # one of MODELS[dataset]; "" = the dataset's default (TASKS)

    def __post_init__(self):
        self.model = self.model or TASKS[self.dataset][0]

    def meets(self, utility: float) -> bool:
        return utility <= self.threshold if TASKS[self.dataset][2] == "at_most" else utility >= self.threshold

    def score(self, utility: float) -> float:
        """Larger is better."""
        return -utility if TASKS[self.dataset][2] == "at_most" else utility


def prepare(dataset: str, x_train, y_train, x_test, y_test, threshold: float, target_bound: float,
            model: str | None = None) -> TaskData:
    if dataset not in TASKS:
        raise UserError(f"Table 3 has no task for dataset {dataset!r}; use one of {', '.join(TASKS)}.")
    model = model or TASKS[dataset][0]
    if model not in MODELS[dataset]:
        raise UserError(f"Table 3 trains no model {model!r} on {dataset}; use one of {', '.join(MODELS[dataset])}.")
    if dataset == "twitter":
        def rows(x):
            return x / np.maximum(1.0, np.linalg.norm(x, axis=1, keepdims=True))
        x_train, x_test = rows(x_train), rows(x_test)
        y_train = np.clip(y_train / target_bound, 0.0, 1.0)
        y_test = np.clip(y_test / target_bound, 0.0, 1.0)
    elif dataset == "gisette":
        x_train, x_test = outpert.normalise(x_train)[:, :-1], outpert.normalise(x_test)[:, :-1]
        y_train, y_test = 2.0 * y_train - 1.0, 2.0 * y_test - 1.0
    return TaskData(dataset, np.asarray(x_train, dtype=np.float64), np.asarray(y_train), np.asarray(x_test, dtype=np.float64),
                    np.asarray(y_test), threshold, model)


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


def candidates(grid: dict, n: int, delta: float, conversion: str = "dp_accounting") -> list[Candidate]:
    batch_sizes = [min(b, n) for b in grid["batch_size"]]
    out = []
    for eps, lr, epochs, batch, clip in itertools.product(grid["eps"], grid["learning_rate"], grid["epochs"],
                                                          sorted(set(batch_sizes)), grid["clip"]):
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
    if task.model == "mlp2":
        from ..train import mlp  # torch only where needed
        params = mlp.train(task.x_train, task.y_train, "mlp2", "sgd", c.hyper(), int(rng.integers(2**31)))
        return mlp.accuracy(params, task.x_test, task.y_test)
    if task.model == "cnn":
        from ..train import cnn  # the same lots, steps and noise as mlp.train: `rdp_curve` accounts for both
        model = cnn.train(task.x_train, task.y_train, c.hyper(), int(rng.integers(2**31)))
        return cnn.accuracy(model, task.x_test, task.y_test)
    loss = "squared" if task.model == "linear-squared" else "logistic"
    w = linear.train(task.x_train, task.y_train, loss, "sgd", c.hyper(), 1, rng)
    if loss == "squared":
        pred = np.clip(linear.with_bias(task.x_test) @ w[0], 0.0, 1.0)
        return float(np.mean((pred - task.y_test) ** 2))
    return float(linear.accuracy(w, task.x_test, task.y_test)[0])


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
        theta_cache["theta"], theta_cache["sensitivity"] = _statistic(task, ridge, gamma, rng)
    theta, sens = theta_cache["theta"], theta_cache["sensitivity"]
    times, boundary = brownian_times(np.asarray(eps_grid, dtype=float), delta)
    w = np.cumsum(rng.normal(0.0, 1.0, size=(len(times), theta.size)) * np.sqrt(np.diff(np.concatenate([[0.0], times])))[:, None], axis=0)
    train_utility = [_utility_of(task, theta + sens * w[j] / t, ridge, train=True) for j, t in enumerate(times)]
    # AboveThreshold on the score (larger is better) against the bar; utilities have sensitivity 1/n
    # (MSE with predictions clipped to [0, 1], accuracy).
    stop = above_threshold_stop(np.array([task.score(u) for u in train_utility]), task.score(task.threshold), 1.0 / n,
                                eps_at, rng)
    if stop is None:   # every release was made: the path's last epsilon plus AboveThreshold's
        return TrialResult(math.inf, False, len(times), float(eps_grid[-1]) + eps_at)
    met = task.meets(_utility_of(task, theta + sens * w[stop] / times[stop], ridge, train=False))
    eps = float(eps_grid[stop]) + eps_at
    return TrialResult(eps, met, len(times), eps)


def _statistic(task: TaskData, ridge: float, gamma: float, rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """(theta, replace-one L2 sensitivity): sufficient statistics for Twitter, bolt-on PSGD weights otherwise."""
    n = len(task.x_train)
    if task.dataset == "twitter":
        xb = np.c_[task.x_train, np.ones(n)] / math.sqrt(2.0)   # rows of norm <= 1 with the bias feature
        stats = np.concatenate([(xb.T @ xb).ravel(), xb.T @ task.y_train])
        return stats, 2.0 * math.sqrt(2.0)   # each row adds vec(x x') (norm <= 1) and x y (norm <= 1)
    x = outpert.normalise(task.x_train)
    if task.dataset == "gisette":
        return outpert.train(x, task.y_train, np.array([gamma]), rng)[0], outpert.sensitivity(gamma, n)
    # MNIST: one-vs-rest, ten bolt-on models; one example moves each by <= 4/(gamma n)
    labels = np.asarray(task.y_train).astype(int)
    w = np.stack([outpert.train(x, np.where(labels == c, 1.0, -1.0), np.array([gamma]), rng)[0] for c in range(10)])
    return w.ravel(), math.sqrt(10.0) * outpert.sensitivity(gamma, n)


def _utility_of(task: TaskData, theta: np.ndarray, ridge: float, train: bool) -> float:
    x, y = (task.x_train, task.y_train) if train else (task.x_test, task.y_test)
    if task.dataset == "twitter":
        d = x.shape[1] + 1
        a, c = theta[: d * d].reshape(d, d), theta[d * d:]
        a = (a + a.T) / 2
        w = np.linalg.solve(a + ridge * len(task.x_train) * np.eye(d), c)
        pred = np.clip(np.c_[x, np.ones(len(x))] / math.sqrt(2.0) @ w, 0.0, 1.0)
        return float(np.mean((pred - y) ** 2))
    xn = outpert.normalise(x)
    if task.dataset == "gisette":
        return float(np.mean((xn @ theta >= 0) == (y > 0)))
    return float(np.mean((xn @ theta.reshape(10, -1).T).argmax(axis=1) == np.asarray(y).astype(int)))
