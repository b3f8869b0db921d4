"""Random-sampling distributions of single hyperparameters: paper 001 Tables 3-4 (each truncated to
its accept range [low, high] by rejection) and the uniform and log-uniform distributions a
user-defined problem may name in its config (`SAMPLER_KINDS`)."""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from .. import UserError

MAX_DRAWS = 100_000


@dataclass(frozen=True)
class Sampler(ABC):
    """A distribution truncated to its accept range [low, high] by rejection."""
    low: float
    high: float

    @abstractmethod
    def draw_untruncated(self, rng: np.random.Generator) -> float:
        """One draw of the distribution before truncation."""

    def draw(self, rng: np.random.Generator) -> float:
        for _ in range(MAX_DRAWS):
            v = self.draw_untruncated(rng)
            if self.low <= v <= self.high:
                return v
        raise RuntimeError(f"rejection sampling of {self} accepted nothing in {MAX_DRAWS:,} draws")


@dataclass(frozen=True)
class UniformInt(Sampler):
    """Uniform over the integers a..b (inclusive)."""
    a: int = 0
    b: int = 0

    def draw_untruncated(self, rng):
        return float(rng.integers(int(self.a), int(self.b) + 1))


@dataclass(frozen=True)
class NormalInt(Sampler):
    """N(mean, sd^2) rounded to an integer."""
    mean: float = 0.0
    sd: float = 1.0

    def draw_untruncated(self, rng):
        return float(round(rng.normal(self.mean, self.sd)))


@dataclass(frozen=True)
class ShiftedExponential(Sampler):
    """shift + Exp(rate)."""
    rate: float = 1.0
    shift: float = 0.0

    def draw_untruncated(self, rng):
        return self.shift + rng.exponential(1.0 / self.rate)


@dataclass(frozen=True)
class Uniform(Sampler):
    """Uniform over [low, high]."""

    def draw_untruncated(self, rng):
        return float(rng.uniform(self.low, self.high))


@dataclass(frozen=True)
class LogUniform(Sampler):
    """exp(Uniform(log low, log high))."""

    def draw_untruncated(self, rng):
        return float(np.exp(rng.uniform(np.log(self.low), np.log(self.high))))


# The names a config's `sampling:` entries use, and the parameters (besides low/high) each takes.
SAMPLER_KINDS: dict[str, type[Sampler]] = {
    "uniform_int": UniformInt, "normal_int": NormalInt, "shifted_exp": ShiftedExponential,
    "uniform": Uniform, "log_uniform": LogUniform,
}


def sampler_from_config(where: str, entry: dict) -> Sampler:
    """A sampler from a config mapping such as {kind: shifted_exp, rate: 10, shift: 0.001, low: 0.001, high: 0.1}."""
    entry = dict(entry)
    kind = entry.pop("kind", None)
    if kind not in SAMPLER_KINDS:
        raise UserError(f"{where}.kind is {kind!r}; use one of {', '.join(SAMPLER_KINDS)}.")
    cls = SAMPLER_KINDS[kind]
    fields = [f for f in cls.__dataclass_fields__]
    unknown = sorted(set(entry) - set(fields))
    if unknown or "low" not in entry or "high" not in entry:
        raise UserError(f"{where} ({kind}) takes {', '.join(fields)} (low and high required), got {sorted(entry)}; fix its keys.")
    try:
        values = {k: float(v) for k, v in entry.items()}
    except (TypeError, ValueError):
        raise UserError(f"{where} has a non-numeric value in {entry}; give numbers.") from None
    if not (all(math.isfinite(v) for v in values.values()) and values["low"] <= values["high"]):
        raise UserError(f"{where} needs finite values with low <= high, got {entry}; fix its range.")
    if kind == "log_uniform" and values["low"] <= 0:
        raise UserError(f"{where} is log_uniform with low = {entry['low']}; a log-uniform range must be positive.")
    return cls(**values)
