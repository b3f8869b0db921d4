"""The problem registry.

A problem is a dataset, a model and optimizer, a hyperparameter domain (the BO search space,
paper 001 Table 1), the random-sampling distributions of paper 001 Tables 3-4 (whose accept
ranges can exceed Table 1: e.g. adult learning rates up to 0.1), a privacy oracle and a utility
oracle averaged over R independent replications. A point is valid when it lies in the hull of
the domain and the accept ranges, with integers where the parameter is integer-valued.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from .. import UserError


@dataclass(frozen=True)
class Param:
    name: str
    low: float
    high: float
    integer: bool = False
    log: bool = False          # searched (and sampled, where no distribution is given) on a log scale


@dataclass(frozen=True)
class Sampler:
    """A paper 001 Table 3/4 distribution, truncated to its accept range by rejection."""
    kind: str                  # "uniform_int", "normal_int", "shifted_exp", "log_uniform", "uniform"
    a: float = 0.0
    b: float = 0.0
    low: float = 0.0
    high: float = 0.0


@dataclass(frozen=True)
class Problem:
    name: str
    dataset: str | None
    model: str                 # logreg, svm, mlp1, mlp2, outpert-logreg, svt
    optimizer: str             # sgd, adam, psgd (bolt-on), none
    domain: tuple[Param, ...]
    samplers: dict[str, Sampler] = field(default_factory=dict)
    delta: float = 1e-5
    utility: str = "accuracy"
    default_repeats: int = 10  # R of the paper

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.domain]

    def bounds(self, name: str) -> tuple[float, float]:
        """Valid range of a parameter: the hull of its domain and its random-sampling accept range."""
        p = next(p for p in self.domain if p.name == name)
        s = self.samplers.get(name)
        return (min(p.low, s.low), max(p.high, s.high)) if s else (p.low, p.high)

    def check(self, point: dict) -> dict:
        """The point as typed values; a clear error if it is outside the problem's valid range."""
        missing = [n for n in self.names if n not in point]
        if missing:
            raise UserError(f"Point for {self.name} lacks {missing}; a point needs {self.names}.")
        out = {}
        for p in self.domain:
            v = float(point[p.name])
            if p.integer:
                if not (math.isfinite(v) and v == round(v)):
                    raise UserError(f"{self.name}: {p.name} must be an integer, got {point[p.name]}; round it or fix the point.")
                v = int(round(v))
            low, high = self.bounds(p.name)
            if not (low <= v <= high):
                raise UserError(f"{self.name}: {p.name} = {point[p.name]} is outside its range [{low:g}, {high:g}]; choose a value inside it.")
            out[p.name] = v
        return out

    def restricted(self, overrides: dict[str, list[float]]) -> "Problem":
        """The problem with some parameter ranges narrowed (domain and accept ranges alike), e.g. for
        the default config's small budgets."""
        unknown = set(overrides) - set(self.names)
        if unknown:
            raise UserError(f"{self.name} has no parameter(s) {sorted(unknown)}; its parameters are {self.names}.")
        domain = []
        samplers = dict(self.samplers)
        for p in self.domain:
            if p.name in overrides:
                low, high = overrides[p.name]
                if not (p.low <= low <= high <= max(p.high, self.bounds(p.name)[1])):
                    raise UserError(f"{self.name}: the range override {p.name}: [{low}, {high}] must lie inside [{p.low}, {p.high}].")
                p = replace(p, low=low, high=high)
                if p.name in samplers:
                    samplers[p.name] = replace(samplers[p.name], low=max(low, samplers[p.name].low), high=min(high, samplers[p.name].high))
            domain.append(p)
        return replace(self, domain=tuple(domain), samplers=samplers)


def _dpsgd(name, dataset, model, optimizer, epochs, lot, lr, noise, clip, samplers, utility="accuracy"):
    return Problem(
        name=name, dataset=dataset, model=model, optimizer=optimizer,
        domain=(Param("epochs", *epochs, integer=True), Param("lot_size", *lot, integer=True),
                Param("learning_rate", *lr, log=True), Param("noise", *noise, log=True),
                Param("clip", *clip, log=True)),
        samplers=samplers, delta=1e-5, utility=utility,
    )


# Paper 001 Table 4 (adult) and Table 3 (mnist). Shifted exponentials: shift + Exp(rate lambda).
ADULT_SAMPLERS = {
    "epochs": Sampler("uniform_int", 1, 64, 1, 64),
    "lot_size": Sampler("normal_int", 128, 64, 8, 512),
    "learning_rate": Sampler("shifted_exp", 10, 1e-3, 1e-3, 1e-1),
    "noise": Sampler("shifted_exp", 1e-1, 1e-1, 1e-1, 16),
    "clip": Sampler("shifted_exp", 1e-1, 1e-1, 1e-1, 4),
}
MNIST_SAMPLERS = {
    "epochs": Sampler("uniform_int", 1, 400, 1, 400),
    "lot_size": Sampler("normal_int", 800, 800, 16, 4000),
    "learning_rate": Sampler("shifted_exp", 10, 1e-3, 1e-3, 5e-1),
    "noise": Sampler("shifted_exp", 5e-1, 1e-1, 1e-1, 16),
    "clip": Sampler("shifted_exp", 5e-1, 1e-1, 1e-1, 12),
}
ADULT_DOMAIN = dict(epochs=(1, 64), lot=(8, 512), lr=(5e-4, 5e-2), noise=(0.1, 16), clip=(0.1, 4))
MNIST_DOMAIN = dict(epochs=(1, 400), lot=(16, 4000), lr=(1e-3, 5e-1), noise=(0.1, 16), clip=(0.1, 12))

PROBLEMS: dict[str, Problem] = {
    p.name: p
    for p in [
        _dpsgd("adult-logreg-sgd", "adult", "logreg", "sgd", samplers=ADULT_SAMPLERS, **ADULT_DOMAIN),
        _dpsgd("adult-logreg-adam", "adult", "logreg", "adam", samplers=ADULT_SAMPLERS, **ADULT_DOMAIN),
        _dpsgd("adult-svm-sgd", "adult", "svm", "sgd", samplers=ADULT_SAMPLERS, **ADULT_DOMAIN),
        _dpsgd("mnist-mlp1-sgd", "mnist", "mlp1", "sgd", samplers=MNIST_SAMPLERS, **MNIST_DOMAIN),
        _dpsgd("mnist-mlp2-sgd", "mnist", "mlp2", "sgd", samplers=MNIST_SAMPLERS, **MNIST_DOMAIN),
        Problem("adult-logreg-outpert", "adult", "outpert-logreg", "psgd",
                domain=(Param("gamma", 1e-4, 1.0, log=True), Param("sigma", 0.1, 10.0, log=True)),
                delta=1e-6, default_repeats=50),
        Problem("svt", None, "svt", "none",
                domain=(Param("bound", 1, 30, integer=True), Param("b", 1e-2, 1e2, log=True)),
                delta=0.0, utility="F1", default_repeats=50),
    ]
}


def get_problem(name: str, overrides: dict | None = None) -> Problem:
    if name not in PROBLEMS:
        raise UserError(f"Unknown problem {name!r}; the registered problems are {', '.join(PROBLEMS)}.")
    problem = PROBLEMS[name]
    return problem.restricted(overrides) if overrides else problem
