"""Searching on epsilon levels (`dpareto.search: levels`): DP-SGD's epsilon is known before a training.

The accountant gives the epsilon of any (noise, lot, epochs) exactly and in microseconds, and it can be inverted: for
any lot, length, learning rate and clipping norm, the noise multiplier that spends a chosen epsilon is found by
bisection (what Opacus' `make_private_with_epsilon` does for its users). So the chain spends its trainings only on what
the accountant cannot tell, which setting wins at an epsilon:
- the utility GP models utility over (log epsilon, the other hyperparameters): the noise multiplier's coordinate of its
  input box is replaced by log epsilon (`EpsilonCoordinate.inputs`). At a fixed epsilon the noise, the lot and the
  length trade off against each other, a ridge a GP over the noise multiplier has to learn from trainings; over
  epsilon that ridge is the accountant's, and the GP learns only how utility moves along it;
- every candidate of a round is placed on an epsilon level (`EpsilonCoordinate.place`): the level is drawn
  log-uniformly over the round's region, the other hyperparameters uniformly in their box, and the noise multiplier
  solved so that the candidate spends that level. A level the domain's noise range cannot reach at a candidate's lot
  and length is not clipped to the range: the candidate is dropped. The acquisition then chooses which epsilon and
  which setting there, as it does over the box; the finalists' and the proposed point's epsilon are the oracle's.

The coordinate is the privacy model's *ranking* epsilon (`exact_privacy.DPSGDTable`: the tabulated RDP bound, under
the tight accountant 1.6-2.4x the tight epsilon), computed the same way for the observed points and the candidates,
so the GP sees one smooth, monotone function of the hyperparameters. The levels a round draws are tight epsilons
(the region's), turned into ranking epsilons by the median ratio of the two over the evaluated points.

Only problems whose privacy model has a vectorised, exact ranking that falls with the noise multiplier (the built-in
DP-SGD / DP-Adam oracles) search on levels; others search the box, and the proposal file's `search` says which.
"""
from __future__ import annotations

import numpy as np

from .exact_privacy import DPSGDTable, finite_log
from .transforms import EPS_RANGE, InputScaler

NOISE = "noise"
# halvings of the noise multiplier's unit coordinate: 2.4e-4 of its log range, noise within 0.1 % of the level's. A
# level is a draw, not a target: what a candidate spends is computed from the point it ends on, so closer is not needed
BISECTION_STEPS = 12
SEARCHES = ("box", "levels")


def searches_on_levels(problem, privacy, scaler) -> bool:
    """Whether this round can search on epsilon levels: a DP-SGD table ranks its epsilons, the noise multiplier is a
    continuous hyperparameter of the box, and the box is the log unit cube."""
    return (isinstance(privacy, DPSGDTable) and NOISE in problem.names and isinstance(scaler, InputScaler)
            and not scaler.integer[problem.names.index(NOISE)])


class EpsilonCoordinate:
    """The unit box with the noise multiplier's coordinate read as log epsilon (scaled to [0, 1] over the epsilons of
    the domain's corners), and the inverse: the noise multiplier that puts a point on a level."""

    def __init__(self, problem, scaler: InputScaler, privacy: DPSGDTable):
        self.scaler, self.privacy = scaler, privacy
        self.column = problem.names.index(NOISE)
        d = len(scaler.lower)
        corners = np.array(np.meshgrid(*[[0.0, 1.0]] * d)).reshape(d, -1).T
        logs = self.log_epsilon(corners)
        logs = logs[np.isfinite(logs)]
        self.low, self.high = float(logs.min()), float(logs.max())
        if not self.high > self.low:
            raise ValueError(f"{problem.name}: epsilon does not vary over the domain; it cannot be searched on levels")

    def log_epsilon(self, unit: np.ndarray) -> np.ndarray:
        """ln of the ranking epsilon at points of the unit box (integers as the ranking rounds them)."""
        points = self.scaler.unrounded(np.clip(np.atleast_2d(unit), 0.0, 1.0))
        return finite_log(np.clip(self.privacy.ranking(points), *EPS_RANGE))

    def inputs(self, unit: np.ndarray) -> np.ndarray:
        """The utility GP's inputs: `unit` with the noise coordinate replaced by the scaled log epsilon."""
        unit = np.array(np.atleast_2d(unit), dtype=float)
        unit[:, self.column] = (self.log_epsilon(unit) - self.low) / (self.high - self.low)
        return unit

    def place(self, unit: np.ndarray, log_levels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`unit` with each point's noise coordinate solved so that its ranking epsilon is `exp(log_levels)`, and
        which points reach their level within the noise range (the others are returned unchanged, not clipped)."""
        unit = np.array(np.atleast_2d(unit), dtype=float)
        log_levels = np.asarray(log_levels, dtype=float)
        low, high = np.zeros(len(unit)), np.ones(len(unit))   # the noise coordinate: epsilon falls as it grows

        def at(noise):
            trial = unit.copy()
            trial[:, self.column] = noise
            return self.log_epsilon(trial)

        reachable = (at(high) <= log_levels) & (log_levels <= at(low))
        for _ in range(BISECTION_STEPS):
            middle = 0.5 * (low + high)
            above = at(middle) > log_levels        # still spends more than the level: more noise
            low, high = np.where(above, middle, low), np.where(above, high, middle)
        unit[reachable, self.column] = high[reachable]   # the side that spends at most the level
        return unit, reachable

    def ranking_over_exact(self, points: np.ndarray, epsilon: np.ndarray) -> float:
        """The median ratio of the ranking epsilon to the oracle's over evaluated points (1 where none is finite)."""
        epsilon = np.asarray(epsilon, dtype=float)
        ranking = self.privacy.ranking(np.atleast_2d(points))
        ok = np.isfinite(epsilon) & (epsilon > 0) & np.isfinite(ranking) & (ranking > 0)
        return float(np.median(ranking[ok] / epsilon[ok])) if ok.any() else 1.0


class OnLevels:
    """A utility posterior over the epsilon coordinate, asked at points of the unit box like any other."""

    def __init__(self, posterior, coordinate: EpsilonCoordinate):
        self.posterior, self.coordinate = posterior, coordinate

    @property
    def jitter(self) -> float:
        return self.posterior.jitter

    @property
    def hyperparameters(self):
        return self.posterior.hyperparameters

    def predict(self, unit: np.ndarray):
        return self.posterior.predict(self.coordinate.inputs(unit))

    def cross_kernel(self, unit: np.ndarray) -> np.ndarray:
        return self.posterior.cross_kernel(self.coordinate.inputs(unit))

    def mean_from(self, kernel: np.ndarray) -> np.ndarray:
        return self.posterior.mean_from(kernel)

    def variance_from(self, kernel: np.ndarray) -> np.ndarray:
        return self.posterior.variance_from(kernel)

    def condition(self, unit: np.ndarray, values: np.ndarray) -> "OnLevels":
        return OnLevels(self.posterior.condition(self.coordinate.inputs(unit), values), self.coordinate)


def placed_candidates(coordinate: EpsilonCoordinate, unit: np.ndarray, region: tuple[float, float], ratio: float,
                      rng: np.random.Generator) -> np.ndarray:
    """`unit` (uniform points of the box) put on levels drawn log-uniformly over the region's epsilons (tight: times
    `ratio` for the ranking's), those that cannot reach theirs dropped. Where fewer than a quarter reach theirs (a
    region mostly outside what the domain spends), the box's own points make up the quarter: a round always has
    candidates, and the proposal file's `search` still says levels."""
    low, high = np.log(region)
    levels = low + rng.random(len(unit)) * (high - low) + np.log(ratio)
    placed, reachable = coordinate.place(unit, levels)
    placed = placed[reachable]
    short = len(unit) // 4 - len(placed)
    return np.vstack([placed, unit[~reachable][:short]]) if short > 0 else placed
