"""The config's `taylor` section as typed settings, built once by the rule layer and passed down."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import UserError
from .experiments import Reading
from .objective_perturbation import NOISES, make_solver


@dataclass(frozen=True)
class ReadingSpec:
    """One entry of `taylor.readings`: a name, a solver and a noise law, by name."""
    name: str
    solver: str
    noise: str


@dataclass(frozen=True)
class Targets:
    """The epsilons whose loss is estimated: start, start + step, ..., stop."""
    start: float
    stop: float
    step: float

    def values(self) -> list[float]:
        return [round(float(t), 10) for t in np.arange(self.start, self.stop + self.step / 2, self.step)]


@dataclass(frozen=True)
class Fig2Settings:
    """Fig. 2: the estimation error of one reading against the number of training rows."""
    datasets: tuple[str, ...]
    samples: tuple[int, ...]
    repeats: int
    reading: str


@dataclass(frozen=True)
class TaylorSettings:
    """The config's `taylor` section (paper 002)."""
    datasets: tuple[str, ...]
    losses: tuple[str, ...]
    c: float                     # the bound on the loss's second derivative
    lam: float                   # the config's `lambda`: the objective's regulariser
    readings: tuple[ReadingSpec, ...]
    iterations: int              # the iterative solvers' steps (gd) or epochs (sgd)
    learning_rate: float
    batch_size: int
    repeats: int                 # noise draws of Fig. 1 and Table 1
    samples: int                 # training rows of Fig. 1 and Table 1
    targets: Targets
    measuring: tuple[float, ...]  # where the derivative is taken
    fig1_measuring: tuple[float, ...]
    fig2: Fig2Settings

    @classmethod
    def from_config(cls, taylor: dict) -> "TaylorSettings":
        fig2 = taylor["fig2"]
        return cls(tuple(taylor["datasets"]), tuple(taylor["losses"]), taylor["c"], taylor["lambda"],
                   tuple(ReadingSpec(r["name"], r["solver"], r["noise"]) for r in taylor["readings"]),
                   taylor["iterations"], taylor["learning_rate"], taylor["batch_size"], taylor["repeats"],
                   taylor["samples"], Targets(**taylor["targets"]), tuple(taylor["measuring"]),
                   tuple(taylor["fig1_measuring"]),
                   Fig2Settings(tuple(fig2["datasets"]), tuple(fig2["samples"]), fig2["repeats"], fig2["reading"]))

    def reading(self, name: str) -> Reading:
        """The reading `name` of `taylor.readings`, its solver and noise law built."""
        found = [r for r in self.readings if r.name == name]
        if not found:
            raise UserError(f"taylor.readings has no reading named {name!r}; it has "
                            f"{', '.join(r.name for r in self.readings)}.")
        spec = found[0]
        if spec.noise not in NOISES:
            raise UserError(f"Unknown noise {spec.noise!r} in taylor.readings; use one of {', '.join(NOISES)}.")
        return Reading(name, make_solver(spec.solver, self.iterations, self.learning_rate, self.batch_size),
                       NOISES[spec.noise])
