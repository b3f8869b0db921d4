"""Quality numbers for a privacy-utility Pareto front; both objectives are minimised.

Points are given as two arrays: epsilon (privacy loss, > 0) and error (1 - utility, in [0, 1]). A row with a NaN in
either array is a failed evaluation and is ignored by every function here.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .. import UserError

from .hypervolume import ANTI_IDEAL  # the paper's anti-ideal point: epsilon 10, error 1


@dataclass(frozen=True)
class Region:
    """The practitioner's region of interest: epsilon in [epsilon_low, epsilon_high] on a log scale,
    error below error_floor (the error of a trivial predictor, e.g. the majority class)."""

    epsilon_low: float = 0.01
    epsilon_high: float = 10.0
    error_floor: float = 1.0

    def __post_init__(self) -> None:
        if not (0 < self.epsilon_low < self.epsilon_high and self.error_floor > 0):
            raise UserError(
                f"The region needs 0 < epsilon_low < epsilon_high and error_floor > 0, "
                f"not epsilon in [{self.epsilon_low:g}, {self.epsilon_high:g}] with error floor {self.error_floor:g}."
            )


def _points(epsilon, error) -> tuple[np.ndarray, np.ndarray]:
    """The (epsilon, error) rows as float arrays, rows with a NaN dropped."""
    e = np.asarray(epsilon, dtype=float).ravel()
    r = np.asarray(error, dtype=float).ravel()
    if e.shape != r.shape:
        raise ValueError(f"epsilon has {e.size} values but error has {r.size}")
    ok = ~(np.isnan(e) | np.isnan(r))
    return e[ok], r[ok]


def _staircase(x: np.ndarray, y: np.ndarray, ref_x: float, ref_y: float) -> float:
    """Area dominated by the points (x, y) inside the box below (ref_x, ref_y); points outside it count nothing."""
    inside = (x < ref_x) & (y < ref_y)
    x, y = x[inside], y[inside]
    order = np.lexsort((y, x))
    x, y = x[order], y[order]
    best_before = np.minimum.accumulate(np.concatenate(([ref_y], y)))[:-1]
    front = y < best_before
    x, y = x[front], y[front]
    return float(np.sum(np.diff(np.append(x, ref_x)) * (ref_y - y)))


def raw_hypervolume(epsilon, error, reference=ANTI_IDEAL) -> float:
    """Paper 001's stated metric: the area in (epsilon, error) the points dominate, bounded by `reference`
    (the anti-ideal point); points not strictly inside the reference box count nothing."""
    e, r = _points(epsilon, error)
    return _staircase(e, r, float(reference[0]), float(reference[1]))


def log_epsilon_hypervolume(epsilon, error, reference=ANTI_IDEAL) -> float:
    """The area in (ln epsilon, error) as the original DPareto code computes it.

    This is amzn/differential-privacy-bayesian-optimization, experiments/scripts/pf_utils.py (commit 23c32cc),
    compute_pf_points (lines 28-42) followed by compute_pf_volume (lines 45-69) with log_transform_x=True:
    the points sorted by epsilon (stably) form the front, a point kept unless an earlier one has strictly smaller
    error; front points with epsilon >= reference[0] or error >= reference[1] are dropped; the volume is the sum over
    the remaining front of (ln eps_next - ln eps) * (reference[1] - error), the last point's eps_next being
    reference[0]. Widths run from the front's leftmost point, with no left bound: moving that point to a smaller
    epsilon always adds area. An empty front gives 0.0 (the original raised IndexError).
    """
    e, r = _points(epsilon, error)
    order = np.argsort(e, kind="stable")
    e, r = e[order], r[order]
    best_before = np.minimum.accumulate(np.concatenate(([np.inf], r)))[:-1]
    front = ~(best_before < r)
    e, r = e[front], r[front]
    inside = (e < reference[0]) & (r < reference[1])
    e, r = e[inside], r[inside]
    widths = np.diff(np.log(np.append(e, float(reference[0]))))
    return float(np.sum(widths * (reference[1] - r)))


def region_hypervolume(epsilon, error, region: Region) -> float:
    """The practitioner's metric: the share of the region, in (ln epsilon, error), that the points dominate.

    Widths are in ln(epsilon) over [epsilon_low, epsilon_high] (a point below epsilon_low counts at epsilon_low; a
    point at or above epsilon_high counts nothing), heights are error_floor - error (a point with error >= floor
    counts nothing). 1 = a perfect front (error 0 at epsilon_low), 0 = nothing better than the floor.
    """
    e, r = _points(epsilon, error)
    low, high = np.log(region.epsilon_low), np.log(region.epsilon_high)
    area = _staircase(np.maximum(np.log(e), low), r, high, region.error_floor)
    return area / ((high - low) * region.error_floor)


def best_error_at(epsilon, error, level: float, floor: float) -> float:
    """The lowest error of a point with epsilon <= level, or `floor` when no such point beats the floor
    (a practitioner with nothing at that level deploys the trivial predictor)."""
    e, r = _points(epsilon, error)
    return float(min(floor, np.min(r[e <= level], initial=np.inf)))


def gap_to_reference(epsilon, error, reference_epsilon, reference_error, region: Region) -> float:
    """How much region hypervolume the reference points add to the points: region_hypervolume(reference and points)
    - region_hypervolume(points); 0 when the points' front is as good as the reference front throughout the region."""
    e, r = _points(epsilon, error)
    ref_e, ref_r = _points(reference_epsilon, reference_error)
    union = region_hypervolume(np.concatenate([ref_e, e]), np.concatenate([ref_r, r]), region)
    return max(0.0, union - region_hypervolume(e, r, region))  # max: rounding only


class FrontMetric(ABC):
    """One number for the quality of the front of a set of (epsilon, error) points."""

    name: str  # short id used in tables and config
    label: str  # one phrase for a table note or an axis label
    higher_is_better = True

    @abstractmethod
    def value(self, epsilon, error) -> float:
        """The metric of the points (NaN rows ignored)."""

    def curve(self, epsilon, error) -> np.ndarray:
        """value() of the first n points, n = 1 .. N, in the given order.

        Keeps the front of the prefix and recomputes only when a point is not weakly dominated by it (a dominated
        point changes none of these metrics), so each step costs the size of the front.
        """
        e = np.asarray(epsilon, dtype=float).ravel()
        r = np.asarray(error, dtype=float).ravel()
        if e.shape != r.shape:
            raise ValueError(f"epsilon has {e.size} values but error has {r.size}")
        out = np.empty(e.size)
        front_e, front_r = np.empty(0), np.empty(0)  # sorted by epsilon, error decreasing
        current = self.value(front_e, front_r)
        for n, (x, y) in enumerate(zip(e, r)):
            if not (np.isnan(x) or np.isnan(y) or np.any((front_e <= x) & (front_r <= y))):
                keep = ~((front_e >= x) & (front_r >= y))
                front_e, front_r = front_e[keep], front_r[keep]
                i = np.searchsorted(front_e, x)
                front_e, front_r = np.insert(front_e, i, x), np.insert(front_r, i, y)
                current = self.value(front_e, front_r)
            out[n] = current
        return out

    def split(self, epsilon, error, floor: float) -> tuple[float, float]:
        """(value of the points with error < floor alone, what the points no better than the floor add to it)."""
        e, r = _points(epsilon, error)
        better = r < floor
        first = self.value(e[better], r[better])
        return first, self.value(e, r) - first


class RawHypervolume(FrontMetric):
    """Hypervolume in (epsilon, error) up to an anti-ideal point (paper 001's stated metric)."""

    def __init__(self, reference: Sequence[float] = ANTI_IDEAL) -> None:
        self.reference = (float(reference[0]), float(reference[1]))
        self.name = "raw"
        self.label = f"hypervolume in (epsilon, error), anti-ideal ({self.reference[0]:g}, {self.reference[1]:g})"

    def value(self, epsilon, error) -> float:
        return raw_hypervolume(epsilon, error, self.reference)


class LogEpsilonHypervolume(FrontMetric):
    """Hypervolume in (ln epsilon, error) from the leftmost point, as the original DPareto analysis code has it."""

    def __init__(self, reference: Sequence[float] = ANTI_IDEAL) -> None:
        self.reference = (float(reference[0]), float(reference[1]))
        self.name = "log-epsilon"
        self.label = (
            f"hypervolume in (ln epsilon, error) from the leftmost point, "
            f"anti-ideal ({self.reference[0]:g}, {self.reference[1]:g}) (DPareto's pf_utils)"
        )

    def value(self, epsilon, error) -> float:
        return log_epsilon_hypervolume(epsilon, error, self.reference)


class RegionHypervolume(FrontMetric):
    """Share of the practitioner's region in (ln epsilon, error) that the front dominates (0 to 1)."""

    def __init__(self, region: Region) -> None:
        self.region = region
        self.name = "region"
        self.label = (
            f"share of epsilon in [{region.epsilon_low:g}, {region.epsilon_high:g}] (log scale) x "
            f"error below {region.error_floor:g} dominated"
        )

    def value(self, epsilon, error) -> float:
        return region_hypervolume(epsilon, error, self.region)


class BestErrorAt(FrontMetric):
    """Lowest error at epsilon <= level, the floor when nothing there beats it (lower is better)."""

    higher_is_better = False

    def __init__(self, level: float, floor: float) -> None:
        self.level = float(level)
        self.floor = float(floor)
        self.name = f"best-error@{self.level:g}"
        self.label = f"lowest error at epsilon <= {self.level:g} (trivial predictor: {self.floor:g})"

    def value(self, epsilon, error) -> float:
        return best_error_at(epsilon, error, self.level, self.floor)


METRIC_NAMES = ("raw", "log-epsilon", "region", "best-error")


def metrics(names: Iterable[str], region: Region, levels: Sequence[float] = (0.1, 0.3, 1.0, 3.0)) -> list[FrontMetric]:
    """The metric objects for the config names (statistics.metrics), in order; "best-error" gives one BestErrorAt
    per level, with the region's error floor."""
    out: list[FrontMetric] = []
    for name in names:
        if name == "raw":
            out.append(RawHypervolume())
        elif name == "log-epsilon":
            out.append(LogEpsilonHypervolume())
        elif name == "region":
            out.append(RegionHypervolume(region))
        elif name == "best-error":
            out.extend(BestErrorAt(level, region.error_floor) for level in levels)
        else:
            raise UserError(f"Unknown front metric {name!r}; the valid ones are {', '.join(METRIC_NAMES)}.")
    return out


@dataclass(frozen=True)
class MetricSettings:
    """The config's `statistics.metrics`, `region` and `epsilon_levels`, built once, and each problem's region
    rule (`stats.region`: `problems.<name>.region`; a problem without one: `statistics.region`, fixed). A
    problem's metrics then need its error floor (`Problem.error_floor`) and, where its region is derived, its
    evaluated points (every method's, pooled: one region for all of them)."""
    names: tuple[str, ...] = METRIC_NAMES
    epsilon_range: tuple[float, float] = (0.01, 10.0)
    levels: tuple[float, ...] = (0.1, 0.3, 1.0, 3.0)
    rules: dict = field(default_factory=dict, compare=False)            # problem -> RegionRule
    query_epsilons: dict = field(default_factory=dict, compare=False)   # problem -> its declared epsilon queries
    query_utilities: dict = field(default_factory=dict, compare=False)  # problem -> its declared utility queries

    @classmethod
    def from_config(cls, statistics: dict, rules: dict | None = None, query_epsilons: dict | None = None,
                    query_utilities: dict | None = None) -> "MetricSettings":
        return cls(tuple(statistics.get("metrics", METRIC_NAMES)),
                   tuple(float(v) for v in statistics.get("region", (0.01, 10.0))),
                   tuple(float(v) for v in statistics.get("epsilon_levels", (0.1, 0.3, 1.0, 3.0))),
                   dict(rules or {}), dict(query_epsilons or {}), dict(query_utilities or {}))

    def region(self, error_floor: float, problem: str | None = None, points=None) -> Region:
        """The problem's region (its rule over `points`, a frame of epsilon and error; no rule: statistics.region)."""
        rule = self.rules.get(problem)
        if rule is None:
            return Region(self.epsilon_range[0], self.epsilon_range[1], error_floor)
        if points is None and rule.needs_domain:
            raise ValueError(f"{problem}'s region is derived from its evaluations; pass them")
        epsilon, error = (points["epsilon"], points["error"]) if points is not None else ((), ())
        return rule.region(epsilon, error, error_floor, None, self.query_epsilons.get(problem, ()),
                           self.query_utilities.get(problem, ()))

    def region_how(self, problem: str | None = None) -> str:
        """How the problem's region is chosen: its rule's name, or statistics.region."""
        rule = self.rules.get(problem)
        return rule.name if rule is not None else "statistics.region"

    def region_label(self, problem: str | None = None, points=None, error_floor: float = 1.0) -> str:
        """The problem's region for a caption: its epsilon range and how it was chosen."""
        region = self.region(error_floor, problem, points)
        return (f"epsilon in [{region.epsilon_low:.3g}, {region.epsilon_high:.3g}] ({self.region_how(problem)}), "
                f"error below {region.error_floor:.3g}")

    def metrics(self, error_floor: float, problem: str | None = None, points=None) -> list[FrontMetric]:
        return metrics(self.names, self.region(error_floor, problem, points), self.levels)
