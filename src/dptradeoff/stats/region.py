"""A problem's region of interest: the epsilon range (and error floor) where its trade-off lives.

The acquisition (`bo.propose`, the region acquisitions), the front metrics (`front_metrics.Region`: Table 2,
Fig. 5, tables/front_quality, figures/front_cost) and the front figure use it. A problem gets one of two rules:

- `FixedRegion`: an epsilon range declared in the config (`problems.<name>.region: [low, high]`, or for a
  built-in problem `statistics.region`, [0.01, 10], the range that fits DP-SGD on Adult).
- `DerivedRegion` (`region: auto`, a problem of your own unless it declares one): from the problem itself,
  where its utility still moves. Given the points evaluated so far and the epsilon range the domain can reach,
  with f(eps) the best error at epsilon <= eps (the observed front), e_best its best error and e_top its worst
  (the error at its smallest epsilon, at most the problem's error floor), span = e_top - e_best:
      high = MARGIN x the smallest epsilon where f <= e_best + TOLERANCE x span  (the utility stops moving),
      low  = the largest epsilon where f >= e_top - TOLERANCE x span, / MARGIN  (the utility starts moving;
             the domain's smallest epsilon where the front moves from its first point),
  both clipped to the domain's range, high raised to cover every declared query: MARGIN x an epsilon query's
  target (`queries.epsilon`), MARGIN x the smallest epsilon where the observed front reaches a utility query's
  target (`queries.utility`; the domain's largest epsilon while no evaluated point reaches it: the target may
  need more than was seen), and the range at least a decade wide. The error floor is the problem's where it states one (the oracle's
  `trivial_utility`, or `utility_floor`, above 0), else e_top: the metric then measures the front between its worst
  and best errors instead of against utility 0. A chain re-derives its region every round from its own
  evaluations (the acquisition follows what it learns); the metrics derive one region per problem and run
  from every method's evaluations pooled, so every method is measured in the same region.

Why: a clamped Laplace mean (utility 1 - |error|/100, scale in [1e-3, 10]) is within 0.0006 of its best utility
at every epsilon >= 0.01, and its whole trade-off lies below. In [0.01, 10] the acquisition saw nothing to gain
where the front could still improve, and 44 of 48 proposals went to epsilon >= 0.01.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .. import UserError
from .front_metrics import Region

TOLERANCE = 0.01   # a share of the front's error span: within it the utility has stopped (or not started) moving
MARGIN = 3.0       # a factor on epsilon beyond where the utility stops and starts moving
MIN_DECADES = 1.0  # the narrowest derived range, in decades of epsilon


class RegionRule(ABC):
    """How a problem's region of interest is chosen."""

    name: str
    needs_domain = False   # whether `region` uses the domain's epsilon range

    @abstractmethod
    def region(self, epsilon, error, error_floor: float, domain: tuple[float, float] | None = None,
               query_epsilons: Sequence[float] = (), query_utilities: Sequence[float] = ()) -> Region:
        """The region for the evaluated points (epsilon, error), the problem's error floor (1: none stated, the
        error of utility 0), the domain's epsilon range (None: the points') and the declared epsilon and utility
        queries."""

    def describe(self, region: Region) -> str:
        return f"epsilon in [{region.epsilon_low:.3g}, {region.epsilon_high:.3g}] ({self.name})"


@dataclass(frozen=True)
class FixedRegion(RegionRule):
    """An epsilon range declared in the config; the error floor the problem's."""
    low: float
    high: float
    name = "declared"

    def __post_init__(self) -> None:
        Region(self.low, self.high, 1.0)   # the one-sentence error for a bad range

    def region(self, epsilon, error, error_floor, domain=None, query_epsilons=(), query_utilities=()) -> Region:
        return Region(self.low, self.high, error_floor)


@dataclass(frozen=True)
class DerivedRegion(RegionRule):
    """The range where the problem's utility still moves (the module's rule)."""
    tolerance: float = TOLERANCE
    margin: float = MARGIN
    name = "derived from the problem"
    needs_domain = True

    def region(self, epsilon, error, error_floor, domain=None, query_epsilons=(), query_utilities=()) -> Region:
        e, r = np.asarray(epsilon, dtype=float), np.asarray(error, dtype=float)
        ok = np.isfinite(e) & np.isfinite(r) & (e > 0)
        e, r = e[ok], np.minimum(r[ok], error_floor)
        if domain is None:
            if not len(e):
                raise ValueError("a derived region needs evaluated points or the domain's epsilon range")
            domain = (float(e.min()), float(e.max()))
        low_limit, high_limit = max(float(domain[0]), 1e-300), float(domain[1])
        if not len(e):
            return self._widened(low_limit, high_limit, low_limit, high_limit, error_floor)
        order = np.argsort(e, kind="stable")
        e, front = e[order], np.minimum.accumulate(r[order])
        best, top = float(front[-1]), float(front[0])
        span = top - best
        if span <= 0:   # the utility does not move in what was seen: the whole reachable range
            low, high = low_limit, high_limit
        else:
            high = self.margin * float(e[np.argmax(front <= best + self.tolerance * span)])
            still = np.flatnonzero(front >= top - self.tolerance * span)
            low = float(e[still[-1]]) / self.margin if still[-1] > 0 else low_limit
        if len(query_epsilons):
            high = max(high, self.margin * max(float(q) for q in query_epsilons))
        for target in query_utilities:
            reached = np.flatnonzero(front <= 1.0 - float(target))
            high = max(high, self.margin * float(e[reached[0]]) if len(reached) else high_limit)
        floor = error_floor if error_floor < 1.0 or span <= 0 else top
        return self._widened(max(low, low_limit), min(high, high_limit), low_limit, high_limit, floor)

    @staticmethod
    def _widened(low: float, high: float, low_limit: float, high_limit: float, floor: float) -> Region:
        """[low, high], widened about its log-centre to at least MIN_DECADES (within the domain where it can)."""
        if high <= low or np.log10(high / low) < MIN_DECADES:
            centre, half = np.sqrt(max(low, 1e-300) * max(high, low)), 10 ** (MIN_DECADES / 2)
            low, high = centre / half, centre * half
            if high > high_limit > low_limit:
                low, high = max(high_limit / half**2, low_limit), high_limit
            elif low < low_limit < high_limit:
                low, high = low_limit, min(low_limit * half**2, high_limit)
            if high <= low:
                low, high = low / half, high * half
        return Region(float(low), float(high), float(floor) if floor > 0 else 1.0)


def region_rule(settings: dict, default: tuple[float, float], own: bool) -> RegionRule:
    """The rule of `problems.<name>.region`: [low, high] declared, `auto` derived; unset, a built-in problem's
    `default` (statistics.region), a problem of your own (`own`) derived."""
    value = settings.get("region", "auto" if own else list(default))
    if value == "auto":
        return DerivedRegion()
    if isinstance(value, (list, tuple)) and len(value) == 2:
        low, high = (float(v) for v in value)
        if not 0 < low < high:
            raise UserError(f"region [{low:g}, {high:g}] needs 0 < low < high; fix the range or say region: auto.")
        return FixedRegion(low, high)
    raise UserError(f"region must be [epsilon_low, epsilon_high] or auto, not {value!r}; fix it (config/README.md).")
