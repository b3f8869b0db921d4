"""Paper 004 §6.1: estimate the number of unique users of as many threads as possible, each to
within 10% relative error, under one total privacy budget (Tables 1 and 2).

The protocol (the paper leaves it open; a reconstruction found the settings that reproduce its
numbers, README "Ex-post private tuning"; the same for every method of a table):
- Threads are visited in the order `order_threads` gives (config `expost.thread_order`).
- Each estimate of a count (sensitivity 1) has a level eps_i = start * ratio^i (paper:
  0.001 * sqrt(2)^i). Table 1: Laplace noise of scale b = 1/eps_i. Table 2: Gaussian noise with
  sigma^2 = 1/eps_i, i.e. rho_i = eps_i / 2 zCDP, under the total rho with
  rho + 2 sqrt(rho log(1/delta)) = budget (1.353 for (10, 1e-6)).
- An estimate y is *accepted* when |y| >= s and |(y + s)/(y - s)| is in [0.9, 1.1]; s is the
  Gaussian's sigma, and for Laplace noise `Setting.laplace_check` times the scale b (config
  `expost.accept_sigma`; the paper says the standard deviation, but s = b reproduces its numbers). The check sees only y and the public level: post-processing.
- "Produced answers" counts the accepted estimates; "precision" is the fraction of them within
  10% of the true count.

Each method is an object with a `guarantee(setting)` label, printed beside its numbers, and
`run(counts, setting, rng)`. `Alg3AsPublished` and `Alg3GaussianAsPublished` reproduce the paper's
Alg. 3 numbers and are labelled as *not* guarantees: they never drop a candidate.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .. import UserError
from .baselines import (brownian_noise_reduction, doubling_gaussian, doubling_laplace, geometric_grid,
                        noise_reduction_laplace, zcdp_brownian_rho, zcdp_rho)
from .distributions import keep_probability_mean
from .filter import ExPostFilter, dp_to_rdp_budget
from .tuning import random_dropping_tuning, rdp_cost

RELATIVE_ERROR = 0.1
# What sigma the accept test uses for Laplace noise of scale b, as a multiple of b.
ACCEPT_SIGMAS = {"laplace_scale": 1.0, "standard_deviation": math.sqrt(2.0)}


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
class Setting:
    """What every method of a table shares."""
    budget: float              # total epsilon
    delta: float               # Table 2's delta (Table 1 ignores it)
    grid: np.ndarray           # the levels eps_i
    laplace_check: float = 1.0  # the accept test's sigma for Laplace noise, per unit of scale b

    @classmethod
    def from_config(cls, cfg: dict) -> "Setting":
        name = cfg.get("accept_sigma", "laplace_scale")
        if name not in ACCEPT_SIGMAS:
            raise UserError(f"expost.accept_sigma is {name!r}; use one of {', '.join(ACCEPT_SIGMAS)}.")
        grid = geometric_grid(cfg["grid"]["start"], cfg["grid"]["ratio"], cfg["budget"])
        return cls(float(cfg["budget"]), float(cfg["delta"]), grid, ACCEPT_SIGMAS[name])

    @property
    def rho(self) -> float:
        """Table 2's total zCDP budget: (budget, delta)-DP by Bun & Steinke's conversion."""
        return float(zcdp_rho(self.budget, self.delta))


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


END = object()   # what a thread's answer returns when the run must end


def _run(counts, filt: ExPostFilter, answer) -> Outcome:
    """Estimate the threads in order: `answer(count)` returns the accepted estimate, None (no answer,
    go on to the next thread) or END (the run ends here)."""
    tally = _Tally()
    for count in counts:
        estimate = answer(count)
        if estimate is END:
            break
        if estimate is not None:
            tally.add(estimate, count)
    return Outcome(tally.answers, tally.correct, tuple(filt.charges))


def _select(count: float, noise_scales: np.ndarray, check_sigmas: np.ndarray, eps_run: np.ndarray, copies: np.ndarray,
            eps_prime: float, dropping: str, noise: str, rng: np.random.Generator) -> tuple[int | None, float | None]:
    """One run of Alg. 3 (`tuning.random_dropping_tuning`) over `copies[i]` copies of the release
    count + noise(noise_scales[i]) (noise "laplace": scale b; "gaussian": sigma).

    Returns (index of the selected level or None for bottom, its estimate if accepted else None).
    Order on outputs: accepted first, then smaller level, then *smaller* estimate (the acceptance
    check favours large draws; taking the smallest accepted one offsets that)."""
    draw = rng.laplace if noise == "laplace" else rng.normal

    def release(i):
        return lambda r: count + draw(0.0, noise_scales[i])

    def key(y, i):
        return accepted(y, float(check_sigmas[i])), -i, -y

    i, y, _ = random_dropping_tuning([release(i) for i in range(len(noise_scales))], eps_run, eps_prime, rng, key,
                                     dropping, copies)
    if i is None:
        return None, None
    return i, (y if accepted(y, float(check_sigmas[i])) else None)


def _copies(eps: np.ndarray, eps_prime: float, dropping: str, expected_runs: float) -> np.ndarray:
    """Copies of each level so that Alg. 3 runs it `expected_runs` times on average."""
    return np.ceil(expected_runs / keep_probability_mean(eps, eps_prime, dropping)).astype(np.int64)


# --- Table 1: pure DP, Laplace -------------------------------------------------------------------

class Doubling:
    """Fresh Laplace releases up the grid, every thread starting again at the bottom; every attempt
    is paid; the run ends at the first attempt that does not fit the remaining budget."""
    name = "doubling"

    def guarantee(self, s: Setting) -> str:
        return f"{s.budget:g}-DP (basic composition of every release)"

    def run(self, counts, s: Setting, rng) -> Outcome:
        filt = ExPostFilter(s.budget)

        def answer(count):
            release = doubling_laplace(count, s.grid, filt.remaining, accepted, rng, s.laplace_check)
            filt.charge(release.cost, release.cost)
            return END if release.estimate is None else release.estimate
        return _run(counts, filt, answer)


class NoiseReduction:
    """Koufogiannis' correlated Laplace noise up to the largest level that fits (the ex-post filter
    needs the worst case to fit); pays the level of the accepted release (or of the last one)."""
    name = "noise_reduction"

    def guarantee(self, s: Setting) -> str:
        return f"{s.budget:g}-DP (ex-post noise reduction under the ex-post filter, Alg. 4)"

    def run(self, counts, s: Setting, rng) -> Outcome:
        filt = ExPostFilter(s.budget)

        def answer(count):
            top = s.grid[s.grid <= filt.remaining]
            if not len(top):
                return END
            release = noise_reduction_laplace(count, top, accepted, rng, s.laplace_check)
            filt.charge(release.cost, float(top[-1]))
            return release.estimate
        return _run(counts, filt, answer)


@dataclass(frozen=True)
class Alg3:
    """Alg. 3 with geometric dropping (Thm 11): per thread the candidates are the levels that fit
    (2 eps + eps' within the remaining budget), each given `expected_runs / P(run)` times so that it
    runs `expected_runs` times on average; bottom or an unaccepted output is retried, every attempt
    paid its ex-post cost through the filter (bottom is free)."""
    eps_prime: float
    expected_runs: float
    name = "alg3"

    def guarantee(self, s: Setting) -> str:
        return f"{s.budget:g}-DP (Thm 11's ex-post 2 eps_i + eps' under the ex-post filter, Alg. 4)"

    def run(self, counts, s: Setting, rng) -> Outcome:
        filt = ExPostFilter(s.budget)
        return _run(counts, filt, lambda count: self._thread(count, s, filt, rng))

    def _thread(self, count, s: Setting, filt: ExPostFilter, rng):
        while True:
            fits = s.grid[[filt.admits(2 * float(e) + self.eps_prime) for e in s.grid]]
            if not len(fits):
                return END
            i, estimate = _select(count, 1.0 / fits, s.laplace_check / fits, fits,
                                  _copies(fits, self.eps_prime, "geometric", self.expected_runs), self.eps_prime,
                                  "geometric", "laplace", rng)
            cost = 0.0 if i is None else 2 * float(fits[i]) + self.eps_prime  # Thm 11
            filt.charge(cost, 2 * float(fits[-1]) + self.eps_prime)
            if estimate is not None:
                return estimate


@dataclass(frozen=True)
class Alg3AsPublished:
    """What reproduces paper 004's Alg. 3 column: every level that fits runs exactly once (no random
    dropping), the accepted estimate with the smallest level is output and charged 2 eps + eps'
    (Thm 11), and the run ends at the first thread with no accepted level. Without dropping Thm 11
    does not apply: with the order "accepted first, then the smaller level", the output has the
    distribution of doubling's first accepted release, whose loss at level i is the sum of the levels
    up to i (~3.4 eps_i on this grid), not 2 eps_i + eps'."""
    eps_prime: float
    name = "alg3_as_published"

    def guarantee(self, s: Setting) -> str:
        return ("NONE: no random dropping, so Thm 11's charge 2 eps_i + eps' is not a guarantee (as published; an output "
                "at level i is distributed as doubling's, whose loss is the sum of the levels up to i, ~3.4 eps_i)")

    def run(self, counts, s: Setting, rng) -> Outcome:
        filt = ExPostFilter(s.budget)

        def answer(count):
            fits = s.grid[2 * s.grid + self.eps_prime <= filt.remaining * (1 + 1e-12)]
            if not len(fits):
                return END
            i, estimate = _select(count, 1.0 / fits, s.laplace_check / fits, fits, np.ones(len(fits), dtype=np.int64),
                                  self.eps_prime, "none", "laplace", rng)
            filt.charge(2 * float(fits[i]) + self.eps_prime, 2 * float(fits[-1]) + self.eps_prime)
            return END if estimate is None else estimate
        return _run(counts, filt, answer)


# --- Table 2: (budget, delta)-DP, Gaussian -------------------------------------------------------

def _gaussian_rhos(s: Setting) -> np.ndarray:
    """Level eps_i as a Gaussian with sigma^2 = 1/eps_i: rho_i = eps_i / 2."""
    return s.grid / 2.0


def _gaussian_levels(s: Setting, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """The levels' noise sigmas and their RDP at order alpha (alpha rho_i)."""
    return 1.0 / np.sqrt(s.grid), alpha * _gaussian_rhos(s)


class DoublingGaussian:
    """Fresh Gaussian releases up the grid, every thread starting again at the bottom; pays the sum
    of the rho_i under the zCDP budget."""
    name = "doubling"

    def guarantee(self, s: Setting) -> str:
        return (f"({s.budget:g}, {s.delta:g})-DP (zCDP composition of every release, rho = {s.rho:.4g}; "
                f"Bun & Steinke's conversion)")

    def run(self, counts, s: Setting, rng) -> Outcome:
        filt = ExPostFilter(s.rho)

        def answer(count):
            release = doubling_gaussian(count, _gaussian_rhos(s), filt.remaining, accepted, rng)
            filt.charge(release.cost, release.cost)
            return END if release.estimate is None else release.estimate
        return _run(counts, filt, answer)


class Brownian:
    """One Brownian path per thread, released at the times t_i = eps_i (noise variance 1/t_i) that fit
    (t/2 within the remaining rho), stopping at the first accepted release; pays rho = t_stop / 2
    (or t_last / 2) in the zCDP filter (`baselines.zcdp_brownian_rho` says why that is a guarantee)."""
    name = "brownian"

    def guarantee(self, s: Setting) -> str:
        return (f"({s.budget:g}, {s.delta:g})-DP (zCDP filter: rho = t/2 per stopped path, total rho = "
                f"{s.rho:.4g}; Bun & Steinke's conversion)")

    def run(self, counts, s: Setting, rng) -> Outcome:
        filt = ExPostFilter(s.rho)

        def answer(count):
            times = s.grid[[filt.admits(float(zcdp_brownian_rho(t))) for t in s.grid]]
            if not len(times):
                return END
            release = brownian_noise_reduction(count, times, accepted, rng, zcdp_brownian_rho)
            filt.charge(release.cost, float(zcdp_brownian_rho(times[-1])))
            return release.estimate
        return _run(counts, filt, answer)


@dataclass(frozen=True)
class Alg3Gaussian:
    """Alg. 3 with exponential dropping, charged by Thm 13 at RDP order `alpha` in an RDP filter whose
    budget Lemma 7 converts to (budget, delta). Thm 13 charges every other candidate, so a window of
    `window` consecutive levels slides up the grid; copies make each level run `expected_runs` times
    on average; bottom or an unaccepted output is retried and paid."""
    eps_prime: float
    expected_runs: float
    alpha: float
    window: int
    name = "alg3"

    def guarantee(self, s: Setting) -> str:
        return (f"({s.budget:g}, {s.delta:g})-DP (Thm 13's ex-post RDP at order {self.alpha:g} under the RDP "
                f"filter, Lemma 7)")

    def run(self, counts, s: Setting, rng) -> Outcome:
        filt = ExPostFilter(dp_to_rdp_budget(s.budget, self.alpha, s.delta))
        sigmas, eps_rdp = _gaussian_levels(s, self.alpha)
        cost_cache: dict[int, tuple[np.ndarray, float, np.ndarray]] = {}

        def answer(count):
            estimate, low = None, 0
            while estimate is None and low < len(s.grid):
                window = slice(low, min(low + self.window, len(s.grid)))
                if window.start not in cost_cache:
                    copies = _copies(eps_rdp[window], self.eps_prime, "exponential", self.expected_runs)
                    cost_cache[window.start] = (*rdp_cost(eps_rdp[window], self.eps_prime, self.alpha, copies), copies)
                costs, bottom, copies = cost_cache[window.start]
                worst = max(float(costs.max()), bottom)
                if not filt.admits(worst):
                    break
                i, estimate = _select(count, sigmas[window], sigmas[window], eps_rdp[window], copies, self.eps_prime,
                                      "exponential", "gaussian", rng)
                filt.charge(bottom if i is None else float(costs[i]), worst)
                if i is not None and estimate is None:
                    low += max(1, self.window // 2)   # nothing accepted: slide the window up
            return END if estimate is None else estimate
        return _run(counts, filt, answer)


@dataclass(frozen=True)
class Alg3GaussianAsPublished:
    """What reproduces paper 004's Table 2 Alg. 3 column: the no-dropping selection of
    `Alg3AsPublished` over the Gaussian levels, charged Thm 13's bound at one order `alpha` (each
    l_i minimised, tau = the number of candidates) in the RDP filter of Lemma 7. The candidates are the
    longest run of levels from the bottom whose largest charge fits. `alpha` (100) was fitted to the
    paper's numbers. Without dropping Thm 13 does not apply."""
    eps_prime: float
    alpha: float
    name = "alg3_as_published"

    def guarantee(self, s: Setting) -> str:
        return (f"NONE: no random dropping, so Thm 13's charge at order {self.alpha:g} (fitted to the paper) is not "
                f"a guarantee (as published; the output is distributed as Gaussian doubling's)")

    def run(self, counts, s: Setting, rng) -> Outcome:
        filt = ExPostFilter(dp_to_rdp_budget(s.budget, self.alpha, s.delta))
        sigmas, eps_rdp = _gaussian_levels(s, self.alpha)
        costs_of = lru_cache(maxsize=None)(
            lambda m: rdp_cost(eps_rdp[:m], self.eps_prime, self.alpha, tau=float(m))[0])

        def answer(count):
            m = 0
            while m < len(s.grid) and filt.admits(float(costs_of(m + 1).max())):
                m += 1
            if m == 0:
                return END
            costs = costs_of(m)
            i, estimate = _select(count, sigmas[:m], sigmas[:m], eps_rdp[:m], np.ones(m, dtype=np.int64),
                                  self.eps_prime, "none", "gaussian", rng)
            filt.charge(float(costs[i]), float(costs.max()))
            return END if estimate is None else estimate
        return _run(counts, filt, answer)


def methods(table: str, cfg: dict) -> list:
    """The methods of `table` ("table1" pure DP, "table2" approximate DP) that config `expost` names."""
    t = cfg[table]
    if table == "table1":
        available = {"doubling": Doubling(), "noise_reduction": NoiseReduction(),
                     "alg3": Alg3(t["eps_prime"], t["expected_runs"]),
                     "alg3_as_published": Alg3AsPublished(t["eps_prime"])}
    else:
        available = {"brownian": Brownian(), "doubling": DoublingGaussian(),
                     "alg3": Alg3Gaussian(t["eps_prime"], t["expected_runs"], t["alpha"], t["window"]),
                     "alg3_as_published": Alg3GaussianAsPublished(t["eps_prime"], t.get("as_published_alpha", 100.0))}
    names = t.get("methods", list(available))
    unknown = [name for name in names if name not in available]
    if unknown:
        raise UserError(f"expost.{table}.methods names {unknown}; use some of {', '.join(available)}.")
    return [available[name] for name in names]

