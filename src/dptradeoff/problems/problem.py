"""A problem: a hyperparameter domain (the BO search space, paper 001 Table 1), random-sampling
distributions (paper 001 Tables 3-4, whose accept ranges can exceed Table 1: e.g. adult learning
rates up to 0.1), delta, the dataset its oracles train on, R, and the oracles themselves (`oracle`).
A point is valid when it lies in the hull of the domain and the accept ranges, with integers where
the parameter is integer-valued."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from .. import UserError
from .oracle import Oracle
from .rows import RowSplit
from .sampling import Sampler


@dataclass(frozen=True)
class Param:
    name: str
    low: float
    high: float
    integer: bool = False
    log: bool = False          # searched (and sampled, where no distribution is given) on a log scale


@dataclass(frozen=True)
class Problem:
    name: str
    dataset: str | None        # a dataset of the pipeline (results/data/<dataset>), or None
    oracle: Oracle
    domain: tuple[Param, ...]
    samplers: dict[str, Sampler] = field(default_factory=dict)
    delta: float = 1e-5
    utility: str = "accuracy"  # what the utility oracle measures (axis labels)
    default_repeats: int = 10  # R of the paper
    description: str = ""
    rows: RowSplit | None = None   # a part of the dataset's training rows (a release's tuning split), or all

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.domain]

    def bounds(self, name: str) -> tuple[float, float]:
        """Valid range of a parameter: the hull of its domain and its random-sampling accept range."""
        p = next(p for p in self.domain if p.name == name)
        s = self.samplers.get(name)
        return (min(p.low, s.low), max(p.high, s.high)) if s else (p.low, p.high)

    def check(self, point: dict, in_range: bool = True) -> dict:
        """The point as typed values; a clear error if it is outside the problem's valid range (`in_range`;
        an audit of given hyperparameters checks names and types only: it audits the trainer, not the search)."""
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
            if in_range and not (low <= v <= high):
                raise UserError(f"{self.name}: {p.name} = {point[p.name]} is outside its range [{low:g}, {high:g}]; choose a value inside it.")
            out[p.name] = v
        return out

    def error_floor(self, data, utility_floor: float | None = None) -> float:
        """The error no front point needs to beat: 1 - the trivial predictor's utility (`utility_floor` where
        the config states it, else the oracle's `trivial_utility(data)`, else utility 0)."""
        trivial = utility_floor if utility_floor is not None else self.oracle.trivial_utility(data)
        return 1.0 - (float(trivial) if trivial is not None else 0.0)

    def on_rows(self, name: str, rows: RowSplit) -> "Problem":
        """The problem, named `name`, on a part of its dataset's training rows (`rows.RowSplit`)."""
        if self.dataset is None:
            raise UserError(f"{self.name} has no dataset of the pipeline, so its rows cannot be split; use "
                            f"release.tuning: {{public: <problem>}} instead.")
        return replace(self, name=name, rows=rows)

    def with_conversion(self, conversion: str) -> "Problem":
        """The problem accounting with the RDP -> (epsilon, delta) conversion `privacy.conversion` names."""
        from ..privacy.accountant import accountant_named

        return replace(self, oracle=self.oracle.with_accountant(accountant_named(conversion)))

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
