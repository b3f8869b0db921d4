"""Table 1: pure DP, Laplace noise of scale 1/eps_i, total budget epsilon."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..baselines import doubling_laplace, noise_reduction_laplace
from ..filter import ExPostFilter
from .protocol import END, Outcome, Setting, ThreadMethod, ThreadTable, accepted, copies, run_threads, select

# Paper 004's Table 1 (mean, std), for side-by-side comparison.
PAPER_004_TABLE1 = {  # row: {method: (precision, sd, answers, sd)}
    "S8000": {"doubling": (0.911, 0.07, 14.77, 0.47), "noise_reduction": (0.999, 0.02, 2.22, 1.45), "alg3": (0.912, 0.06, 20.37, 0.52)},
    "S16000": {"doubling": (0.912, 0.06, 22.47, 0.54), "noise_reduction": (0.999, 0.02, 4.47, 2.22), "alg3": (0.911, 0.05, 30.63, 0.57)},
    "S32000": {"doubling": (0.910, 0.05, 33.96, 0.56), "noise_reduction": (0.998, 0.12, 8.12, 3.29), "alg3": (0.905, 0.04, 45.74, 0.63)},
    "S64000": {"doubling": (0.909, 0.04, 50.90, 0.61), "noise_reduction": (0.998, 1.72, 15.14, 5.25), "alg3": (0.911, 0.03, 68.39, 0.73)},
    "S128000": {"doubling": (0.909, 0.03, 76.09, 0.74), "noise_reduction": (0.997, 0.01, 27.68, 9.15), "alg3": (0.912, 0.03, 102.1, 0.88)},
    "Reddit": {"doubling": (0.911, 0.02, 279.7, 1.10), "noise_reduction": (0.992, 0.01, 207.2, 42.1), "alg3": (0.922, 0.01, 327.5, 13.9)},
}


class Doubling(ThreadMethod):
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
        return run_threads(counts, filt, answer)


class NoiseReduction(ThreadMethod):
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
        return run_threads(counts, filt, answer)


@dataclass(frozen=True)
class Alg3(ThreadMethod):
    """Alg. 3 with geometric dropping (Thm 11): per thread the candidates are the levels that fit
    (2 eps + eps' within the remaining budget), each given `expected_runs / P(run)` times so that it
    runs `expected_runs` times on average; bottom or an unaccepted output is retried, every attempt
    paid its ex-post cost through the filter (bottom is free)."""
    eps_prime: float
    expected_runs: float
    name = "alg3"

    @classmethod
    def from_table(cls, table: "Table1") -> "Alg3":
        return cls(table.eps_prime, table.expected_runs)

    def guarantee(self, s: Setting) -> str:
        return f"{s.budget:g}-DP (Thm 11's ex-post 2 eps_i + eps' under the ex-post filter, Alg. 4)"

    def run(self, counts, s: Setting, rng) -> Outcome:
        filt = ExPostFilter(s.budget)
        return run_threads(counts, filt, lambda count: self._thread(count, s, filt, rng))

    def _thread(self, count, s: Setting, filt: ExPostFilter, rng):
        while True:
            fits = s.grid[[filt.admits(2 * float(e) + self.eps_prime) for e in s.grid]]
            if not len(fits):
                return END
            i, estimate = select(count, 1.0 / fits, s.laplace_check / fits, fits,
                                 copies(fits, self.eps_prime, "geometric", self.expected_runs), self.eps_prime,
                                 "geometric", "laplace", rng)
            cost = 0.0 if i is None else 2 * float(fits[i]) + self.eps_prime  # Thm 11
            filt.charge(cost, 2 * float(fits[-1]) + self.eps_prime)
            if estimate is not None:
                return estimate


@dataclass(frozen=True)
class Alg3AsPublished(ThreadMethod):
    """What reproduces paper 004's Alg. 3 column: every level that fits runs exactly once (no random
    dropping), the accepted estimate with the smallest level is output and charged 2 eps + eps'
    (Thm 11), and the run ends at the first thread with no accepted level. Without dropping Thm 11
    does not apply: with the order "accepted first, then the smaller level", the output has the
    distribution of doubling's first accepted release, whose loss at level i is the sum of the levels
    up to i (~3.4 eps_i on this grid), not 2 eps_i + eps'."""
    eps_prime: float
    name = "alg3_as_published"

    @classmethod
    def from_table(cls, table: "Table1") -> "Alg3AsPublished":
        return cls(table.eps_prime)

    def guarantee(self, s: Setting) -> str:
        return ("NONE: no random dropping, so Thm 11's charge 2 eps_i + eps' is not a guarantee (as published; an output "
                "at level i is distributed as doubling's, whose loss is the sum of the levels up to i, ~3.4 eps_i)")

    def run(self, counts, s: Setting, rng) -> Outcome:
        filt = ExPostFilter(s.budget)

        def answer(count):
            fits = s.grid[2 * s.grid + self.eps_prime <= filt.remaining * (1 + 1e-12)]
            if not len(fits):
                return END
            i, estimate = select(count, 1.0 / fits, s.laplace_check / fits, fits, np.ones(len(fits), dtype=np.int64),
                                 self.eps_prime, "none", "laplace", rng)
            filt.charge(2 * float(fits[i]) + self.eps_prime, 2 * float(fits[-1]) + self.eps_prime)
            return END if estimate is None else estimate
        return run_threads(counts, filt, answer)


@dataclass(frozen=True)
class Table1(ThreadTable):
    """The config's `expost.table1`: Alg. 3's eps' and expected runs per level, and the methods to run."""
    eps_prime: float
    expected_runs: float
    method_names: tuple[str, ...]
    name = "table1"
    title = "Table 1"
    available = (Doubling, NoiseReduction, Alg3, Alg3AsPublished)
    published = PAPER_004_TABLE1

    @classmethod
    def from_config(cls, table1: dict) -> "Table1":
        return cls(table1["eps_prime"], table1["expected_runs"], tuple(table1.get("methods", cls.default_methods())))

    def describe(self, budget, delta):
        return (f"Pure DP, Laplace noise of scale 1/eps_i, total budget {budget}; Alg. 3 eps' = {self.eps_prime}, "
                f"each level run {self.expected_runs} times on average")
