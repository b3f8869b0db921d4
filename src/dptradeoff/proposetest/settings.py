"""The config's `proposetest` section as typed settings, built once by the rule layer and passed down."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Simulation:
    """Figs 1-2's simulated tuning: `seeds` runs over `candidates` utilities drawn from U(0, 1)."""
    seeds: int
    candidates: int
    partitions: int
    eps0: float
    granularity: float
    u0: float


@dataclass(frozen=True)
class Gaps:
    """Fig. 2: `seeds` runs at each granularity g."""
    granularities: tuple[float, ...]
    seeds: int


@dataclass(frozen=True)
class CandidateGrid:
    """The adult run's hyperparameter candidates: every combination of these values."""
    learning_rate: tuple[float, ...]
    epochs: tuple[int, ...]
    lot_size: tuple[int, ...]
    clip: tuple[float, ...]


@dataclass(frozen=True)
class AdultRun:
    """The config's `proposetest.adult`: propose-test tuning of adult logistic regression, then DP-SGD
    calibrated to (epsilon, delta) with the selected hyperparameters."""
    partitions: int
    eps0: float
    granularity: float
    u0: float
    epsilon: float
    delta: float
    delta_prime: float
    validation_fraction: float
    grid: CandidateGrid

    @classmethod
    def from_config(cls, adult: dict) -> "AdultRun":
        grid = adult["grid"]
        return cls(**{**adult, "grid": CandidateGrid(*(tuple(grid[key]) for key in
                                                       ("learning_rate", "epochs", "lot_size", "clip")))})


@dataclass(frozen=True)
class ProposeTestSettings:
    """The config's `proposetest` section (paper 003)."""
    simulation: Simulation
    gaps: Gaps
    adult: AdultRun

    @classmethod
    def from_config(cls, proposetest: dict) -> "ProposeTestSettings":
        gaps = proposetest["gaps"]
        return cls(Simulation(**proposetest["simulation"]), Gaps(tuple(gaps["granularities"]), gaps["seeds"]),
                   AdultRun.from_config(proposetest["adult"]))
