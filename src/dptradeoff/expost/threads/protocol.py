"""Paper 004 §6.1: estimate the number of unique users of as many threads as possible, each to
within 10% relative error, under one total privacy budget (Tables 1 and 2).

The protocol (the paper leaves it open; a reconstruction found the settings that reproduce its
numbers, README "Ex-post private tuning"; the same for every method of a table):
- Threads are visited in the order a `ThreadOrder` gives (config `expost.thread_order`, orders.py).
- Each estimate of a count (sensitivity 1) has a level eps_i = start * ratio^i (paper:
  0.001 * sqrt(2)^i). Table 1: Laplace noise of scale b = 1/eps_i. Table 2: Gaussian noise with
  sigma^2 = 1/eps_i, i.e. rho_i = eps_i / 2 zCDP, under the total rho with
  rho + 2 sqrt(rho log(1/delta)) = budget (1.353 for (10, 1e-6)).
- An estimate y is *accepted* when |y| >= s and |(y + s)/(y - s)| is in [0.9, 1.1]; s is the
  Gaussian's sigma, and for Laplace noise `Setting.laplace_check` times the scale b (config
  `expost.accept_sigma`; the paper says the standard deviation, but s = b reproduces its numbers). The check sees only y and the public level: post-processing.
- "Produced answers" counts the accepted estimates; "precision" is the fraction of them within
  10% of the true count.

A method (a column of a table) is a `ThreadMethod`: a `guarantee(setting)` label, printed beside
its numbers, and `run(counts, setting, rng)`. A table is a `ThreadTable`: the methods it compares,
their settings (the config's `expost.table1` or `expost.table2`) and the paper's values.
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Callable, ClassVar

import numpy as np

from ... import UserError
from ..baselines import zcdp_rho
from ..distributions import keep_probability_mean
from ..filter import ExPostFilter
from ..tuning import random_dropping_tuning

RELATIVE_ERROR = 0.1
# What sigma the accept test uses for Laplace noise of scale b, as a multiple of b.
ACCEPT_SIGMAS = {"laplace_scale": 1.0, "standard_deviation": math.sqrt(2.0)}


def accepted(y: float, sigma: float) -> bool:
    """Paper 004 §6.1's check that an estimate is (probably) within 10%."""
    if not abs(y) >= sigma:
        return False
    ratio = abs((y + sigma) / (y - sigma))
    return 0.9 <= ratio <= 1.1


@dataclass(frozen=True)
class Setting:
    """What every method of a table shares."""
    budget: float              # total epsilon
    delta: float               # Table 2's delta (Table 1 ignores it)
    grid: np.ndarray           # the levels eps_i
    laplace_check: float = 1.0  # the accept test's sigma for Laplace noise, per unit of scale b

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


class ThreadMethod(ABC):
    """A column of Table 1 or 2: how one run estimates the threads' counts under the total budget."""
    name: ClassVar[str]   # the column's name, as `expost.table<k>.methods` lists it

    @classmethod
    def from_table(cls, table: "ThreadTable") -> "ThreadMethod":
        """The method with its table's settings (a method without settings takes none)."""
        return cls()

    @abstractmethod
    def guarantee(self, s: Setting) -> str:
        """What the method's numbers guarantee, in words ("NONE: ..." where they guarantee nothing)."""

    @abstractmethod
    def run(self, counts: np.ndarray, s: Setting, rng: np.random.Generator) -> Outcome:
        """Estimate the threads in the order given until the budget runs out."""


class ThreadTable(ABC):
    """One of paper 004's thread tables: the methods it compares (`method_names`, in column order),
    the settings they take, and the paper's published values."""
    name: ClassVar[str]                                 # "table1": the wildcard of its files
    title: ClassVar[str]                                # "Table 1"
    available: ClassVar[tuple[type[ThreadMethod], ...]]  # every method the table can run
    published: ClassVar[dict]                           # row: {method: (precision, sd, answers, sd)}
    method_names: tuple[str, ...]

    def __post_init__(self):
        known = [m.name for m in self.available]
        unknown = [name for name in self.method_names if name not in known]
        if unknown:
            raise UserError(f"expost.{self.name}.methods names {unknown}; use some of {', '.join(known)}.")

    @classmethod
    def default_methods(cls) -> tuple[str, ...]:
        return tuple(m.name for m in cls.available)

    def methods(self) -> list[ThreadMethod]:
        by_name = {m.name: m for m in self.available}
        return [by_name[name].from_table(self) for name in self.method_names]

    @abstractmethod
    def describe(self, budget: float, delta: float) -> str:
        """What the table runs, for its note (budget and delta as the config states them)."""


class _Tally:
    def __init__(self):
        self.answers = self.correct = 0

    def add(self, estimate: float, count: int) -> None:
        self.answers += 1
        self.correct += int(abs(estimate - count) <= RELATIVE_ERROR * count)


END = object()   # what a thread's answer returns when the run must end


def run_threads(counts, filt: ExPostFilter, answer: Callable) -> Outcome:
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


def select(count: float, noise_scales: np.ndarray, check_sigmas: np.ndarray, eps_run: np.ndarray, copies: np.ndarray,
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


def copies(eps: np.ndarray, eps_prime: float, dropping: str, expected_runs: float) -> np.ndarray:
    """Copies of each level so that Alg. 3 runs it `expected_runs` times on average."""
    return np.ceil(expected_runs / keep_probability_mean(eps, eps_prime, dropping)).astype(np.int64)
