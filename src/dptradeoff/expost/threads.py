"""Paper 004 §6.1: estimate the number of unique users of as many threads as possible, each to
within 10% relative error, under one total privacy budget (Tables 1 and 2).

Protocol (the paper leaves these choices open; the same for every method):
- Threads are visited in the order `order_threads` gives (config `expost.thread_order`): by
  default the histogram's own order, which reads no count (for the synthetic rows it is the
  thread index, the public law's ranking, close to decreasing count). Decreasing true count
  (`by_count`) reads the private counts and stands for a public ranking only.
- Each estimate of a count (sensitivity 1) uses a budget from the grid eps_i = start * ratio^i
  (paper: 0.001 * sqrt(2)^i). An estimate y with noise standard deviation sigma is *accepted*
  when |y| >= sigma and |(y + sigma)/(y - sigma)| is in [0.9, 1.1] (the paper's check: it sees
  only y and sigma, so it is post-processing).
- A run ends when the next thread cannot be started within the remaining budget. "Produced
  answers" counts the accepted estimates; "precision" is the fraction of them within 10% of
  the true count.

Methods and what they pay (Table 1: pure DP, Laplace; Table 2: (eps, delta) with delta = 1e-6):
- doubling: fresh releases up the grid, paying the sum (Laplace) or the zCDP sum (Gaussian).
- noise reduction (Laplace): Koufogiannis' correlated noise up to the largest grid budget that
  fits the remaining budget (the ex-post filter needs the worst case to fit); pays the eps of
  the accepted release (or of the last one).
- Brownian (Gaussian): one Brownian path, stopping at the first accepted release; ex-post
  (eps(t), delta_thread) from the linear boundary; delta is split evenly over the threads and
  epsilons add up (basic composition in the ex-post filter).
- Alg. 3 (Laplace, Thm 11; Gaussian, Thm 13 + Lemma 7): per thread, candidates are the grid
  budgets that fit, each repeated so that it runs `expected_runs` times on average; the order
  prefers accepted estimates, then smaller budgets. An attempt that returns bottom (nothing ran)
  or an unaccepted estimate is repeated; every attempt pays its ex-post cost through the filter.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .baselines import (brownian_boundary, brownian_epsilon, brownian_noise_reduction, doubling_gaussian,
                        doubling_laplace, geometric_grid, noise_reduction_laplace, zcdp_rho)
from .distributions import keep_probability_mean
from .filter import ExPostFilter, dp_to_rdp_budget
from .tuning import random_dropping_tuning, rdp_cost

PURE_METHODS = ("doubling", "noise_reduction", "alg3")
APPROX_METHODS = ("brownian", "doubling", "alg3")
RELATIVE_ERROR = 0.1


def accepted(y: float, sigma: float) -> bool:
    """Paper 004 §6.1's check that an estimate is (probably) within 10%."""
    if not abs(y) >= sigma:
        return False
    ratio = abs((y + sigma) / (y - sigma))
    return 0.9 <= ratio <= 1.1


THREAD_ORDERS = ("given", "random", "by_count")


def order_threads(counts: np.ndarray, order: str, rng: np.random.Generator) -> np.ndarray:
    """The counts in the order a trial estimates them: "given" (the histogram's own order) and "random"
    (a permutation drawn from rng) read no count; "by_count" (decreasing true count) reads the private
    counts and stands for a public ranking (e.g. last year's counts)."""
    counts = np.asarray(counts)
    if order == "given":
        return counts
    if order == "random":
        return counts[rng.permutation(len(counts))]
    if order == "by_count":
        return np.sort(counts)[::-1]
    raise ValueError(f"unknown thread order {order!r}; use one of {', '.join(THREAD_ORDERS)}")


@dataclass(frozen=True)
class Outcome:
    answers: int          # accepted estimates before the budget ran out
    correct: int          # of those, within 10% of the true count
    charges: tuple        # (realised, worst case) cost of every mechanism the filter admitted

    @property
    def spent(self) -> float:
        return sum(realised for realised, _ in self.charges)

    @property
    def precision(self) -> float:
        return self.correct / self.answers if self.answers else math.nan


class _Tally:
    def __init__(self):
        self.answers = self.correct = 0

    def add(self, estimate: float, count: int) -> None:
        self.answers += 1
        self.correct += int(abs(estimate - count) <= RELATIVE_ERROR * count)


def run_pure(counts: np.ndarray, method: str, budget: float, grid_start: float, grid_ratio: float,
             eps_prime: float, expected_runs: float, rng: np.random.Generator) -> Outcome:
    """One trial of Table 1 (pure DP, Laplace noise) on the thread counts, in the order given."""
    grid = geometric_grid(grid_start, grid_ratio, budget)
    filt, tally = ExPostFilter(budget), _Tally()
    for count in counts:
        if method == "doubling":
            release = doubling_laplace(count, grid, filt.remaining, accepted, rng)
            filt.charge(release.cost, release.cost)
            if release.estimate is None:
                break
            tally.add(release.estimate, count)
        elif method == "noise_reduction":
            top = grid[grid <= filt.remaining]
            if not len(top):
                break
            release = noise_reduction_laplace(count, top, accepted, rng)
            filt.charge(release.cost, float(top[-1]))
            if release.estimate is not None:
                tally.add(release.estimate, count)
        elif method == "alg3":
            estimate = _alg3_laplace_thread(count, grid, filt, eps_prime, expected_runs, rng)
            if estimate is None:
                break
            tally.add(estimate, count)
        else:
            raise ValueError(f"unknown pure-DP method {method!r}")
    return Outcome(tally.answers, tally.correct, tuple(filt.charges))


def _copies(eps: np.ndarray, eps_prime: float, dropping: str, expected_runs: float) -> np.ndarray:
    """Copies of each budget so that Alg. 3 runs it `expected_runs` times on average."""
    return np.ceil(expected_runs / keep_probability_mean(eps, eps_prime, dropping)).astype(np.int64)


def _alg3_attempt(count: float, sigmas: np.ndarray, eps_run: np.ndarray, copies: np.ndarray, eps_prime: float,
                  dropping: str, noise: str, rng: np.random.Generator) -> tuple[int | None, float | None]:
    """One run of Alg. 3 (`tuning.random_dropping_tuning`) over `copies[i]` copies of the release
    with noise sd sigmas[i].

    Returns (index of the selected budget or None for bottom, its estimate if accepted else None).
    Order on outputs: accepted first, then smaller budget (larger sigma), then *smaller* estimate
    (the acceptance check favours large draws; taking the smallest accepted one offsets that)."""
    def release(i):
        if noise == "laplace":
            return lambda r: count + r.laplace(0.0, sigmas[i] / math.sqrt(2.0))
        return lambda r: count + r.normal(0.0, sigmas[i])

    def key(y, i):
        return accepted(y, float(sigmas[i])), -i, -y

    i, y, _ = random_dropping_tuning([release(i) for i in range(len(sigmas))], eps_run, eps_prime, rng, key,
                                     dropping, copies)
    if i is None:
        return None, None
    return i, (y if accepted(y, float(sigmas[i])) else None)


def _alg3_laplace_thread(count, grid, filt: ExPostFilter, eps_prime, expected_runs, rng) -> float | None:
    while True:
        fits = grid[[filt.admits(2 * float(e) + eps_prime) for e in grid]]
        if not len(fits):
            return None
        worst = 2 * float(fits[-1]) + eps_prime
        i, estimate = _alg3_attempt(count, math.sqrt(2.0) / fits, fits, _copies(fits, eps_prime, "geometric", expected_runs),
                                    eps_prime, "geometric", "laplace", rng)
        cost = 0.0 if i is None else 2 * float(fits[i]) + eps_prime  # Thm 11
        filt.charge(cost, worst)
        if estimate is not None:
            return estimate


def run_approx(counts: np.ndarray, method: str, budget: float, delta: float, grid_start: float, grid_ratio: float,
               eps_prime: float, expected_runs: float, alpha: float, window_size: int, rng: np.random.Generator) -> Outcome:
    """One trial of Table 2 ((budget, delta)-DP overall, Gaussian noise).

    The threads are estimated in the order given. The grid budget eps_i of one release becomes a
    Gaussian with zCDP rho_i such that rho_i-zCDP gives (eps_i, delta)-DP; sigma_i = 1/sqrt(2 rho_i).
    All three methods use the same sigmas."""
    grid = geometric_grid(grid_start, grid_ratio, budget)
    rhos = zcdp_rho(grid, delta)
    sigmas = 1.0 / np.sqrt(2.0 * rhos)
    tally = _Tally()
    if method == "doubling":
        filt = ExPostFilter(float(zcdp_rho(budget, delta)))
        for count in counts:
            release = doubling_gaussian(count, rhos, filt.remaining, accepted, rng)
            filt.charge(release.cost, release.cost)
            if release.estimate is None:
                break
            tally.add(release.estimate, count)
        return Outcome(tally.answers, tally.correct, tuple(filt.charges))
    if method == "brownian":
        filt = ExPostFilter(budget)
        delta_thread = delta / len(counts)
        times = 2.0 * rhos   # sd 1/sqrt(t) = sigma
        for count in counts:
            # the largest grid time whose worst case fits; the boundary is tightest mid-range (log scale)
            top = next((j for j in range(len(times) - 1, -1, -1)
                        if brownian_epsilon(times[j], *brownian_boundary(math.sqrt(times[0] * times[j]), delta_thread))
                        <= filt.remaining), None)
            if top is None:
                break
            usable = times[: top + 1]
            boundary = brownian_boundary(math.sqrt(usable[0] * usable[-1]), delta_thread)
            release = brownian_noise_reduction(count, usable, boundary, accepted, rng)
            filt.charge(release.cost, float(brownian_epsilon(usable[-1], *boundary)))
            if release.estimate is not None:
                tally.add(release.estimate, count)
        return Outcome(tally.answers, tally.correct, tuple(filt.charges))
    if method == "alg3":
        filt = ExPostFilter(dp_to_rdp_budget(budget, alpha, delta))
        eps_rdp = alpha * rhos     # the Gaussian's RDP at order alpha
        cost_cache: dict[int, tuple[np.ndarray, float, np.ndarray]] = {}
        for count in counts:
            estimate, low = None, 0
            while estimate is None and low < len(grid):
                window = slice(low, min(low + window_size, len(grid)))
                if window.start not in cost_cache:
                    copies = _copies(eps_rdp[window], eps_prime, "exponential", expected_runs)
                    cost_cache[window.start] = (*rdp_cost(eps_rdp[window], eps_prime, alpha, copies), copies)
                costs, bottom, copies = cost_cache[window.start]
                worst = max(float(costs.max()), bottom)
                if not filt.admits(worst):
                    break
                i, estimate = _alg3_attempt(count, sigmas[window], eps_rdp[window], copies, eps_prime,
                                            "exponential", "gaussian", rng)
                filt.charge(bottom if i is None else float(costs[i]), worst)
                if i is not None and estimate is None:
                    low += max(1, window_size // 2)   # nothing accepted: slide the window up
            if estimate is None:
                break
            tally.add(estimate, count)
        return Outcome(tally.answers, tally.correct, tuple(filt.charges))
    raise ValueError(f"unknown approximate-DP method {method!r}")
