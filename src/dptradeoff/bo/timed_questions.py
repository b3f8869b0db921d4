"""A declared question answered with the user's time, not a count of trainings (the `query` rule, cheap oracles).

A clamped mean or a count trains in microseconds to milliseconds: a question's count budget
(`dpareto.question_trainings`, 8) then leaves almost all of the answer to the chain's GP, and a random search any
user could write buys four to seven times better answers in the same wall-clock. So where a training is cheap
(`QuestionClock.cheap`: the question's seconds buy at least CHEAP_TRAININGS of them) a question spends
`dpareto.question_seconds` (or the problem's own `question_seconds`):

1. **Measured cost, in tiers.** One training's and one epsilon's wall seconds are measured on the chain's points
   and rounded up to a tier (COST_TIERS_PER_DECADE a decade): the seconds become a count of trainings and epsilon
   calls, so the search is a function of its seeds and tier and replays bit for bit where the tier is the same
   (a cost near a tier's edge may fall in the next on a busier machine: the row records the tier).
2. **Search where the answer must lie** (`SEARCH_SHARE` of the seconds). Epsilon is known before a training, and
   an oracle with `calibrate` (the release's interface) sets its privacy parameter so a point spends exactly a
   given epsilon: every candidate is then placed on the level asked (without `calibrate`, candidates are filtered
   by their exact epsilon into the level's band). Candidates are random points of the domain and perturbations of
   the best points so far (local refinement, at shrinking scales), each trained in blocks of BLOCK:
   - utility >= U: a bisection on an epsilon level; at each level a race: the open candidate of highest Wilson
     upper bound on P(one training reaches U) trains next; a candidate whose one-sided ACCEPT_Z Wilson lower
     bound reaches REACH_LEVEL settles the level (hi = its epsilon), one whose DROP_Z upper bound falls below it
     or that has ARM_MOST trainings is closed; a level whose share of the budget ends unsettled is too private
     (lo = the level). It stops when hi / lo < LEVEL_STOP and lo is a level that failed (a bracket settled down to
     its untested lower end goes on LEVEL_SPAN further down).
   - epsilon <= E: a race at epsilon = E (and in [E / NEAR_BUDGET, E] without `calibrate`): the open candidate of
     highest upper confidence bound on its mean trains next, candidates whose upper bound falls below the best
     lower bound are closed; the answer is the candidate of best lower bound (mean - z_0.9 se).
3. **Fresh trainings state the answer** (the rest of the seconds, at least FRESH_LEAST on a cheap oracle): the
   chosen point is trained again with seeds the search never used, and only those trainings state its
   probability of reaching U (their share) and its interval for one new training (order statistics:
   `order_interval`, distribution-free from ORDER_LEAST trainings): no winner's curse from the search's choice.

`search_question`'s count rules (`bo.question_search`) stay for oracles whose training is dear (DP-SGD), where
the chain's GP is the better guide and the count is the right budget."""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from .. import UserError
from ..problems.evaluate import checked_utilities, epsilon as exact_epsilon, training_rows
from ..problems.problem import Problem
from ..problems.tables import succeeded
from ..release.trainers import oracle_target
from ..seeds import rng as derived_rng
from .query import INTERVAL_LEVEL, NEAR_BUDGET
from .replication import REACH_LEVEL
from .transforms import InputScaler

log = logging.getLogger(__name__)

CHEAP_TRAININGS = 1000     # a question's seconds buy at least this many trainings: its time budget rules
COST_TIERS_PER_DECADE = 4  # a measured cost is rounded up to 10 ** (k / 4) s: a tier decides the counts
MEASURE_SECONDS = 0.2      # measuring a training's cost takes about this long (at least MEASURE_LEAST trainings)
MEASURE_LEAST = 8
SEARCH_SHARE = 0.75        # of a question's seconds, its search; the rest buys the answer's fresh trainings
FRESH_LEAST = 200          # fresh trainings of a cheap oracle's answer, at least
FRESH_MOST = 20000         # ... and at most (its share of P is then known to +- 0.002)
ORDER_LEAST = 19           # fresh trainings from which the interval is distribution-free (order statistics)
BLOCK = 8                  # trainings per step of a race
NEW_CANDIDATES = 8         # candidates added at once to a level's race, half random, half around the best so far
GENERATION = 32            # candidates added at once to an epsilon question's race
OPEN_MOST = 16             # a race keeps at most this many candidates open before it adds new ones
ARM_MOST = 512             # trainings of one candidate in a race, at most
ACCEPT_Z = 1.645           # a level is settled by a candidate whose one-sided 95 % Wilson lower bound on P reaches it,
                           # on its search trainings and then, once, on new ones (`_confirmed`)
CONFIRM_FACTOR = 2         # ... CONFIRM_FACTOR times as many as its search trainings, at least CONFIRM_LEAST
CONFIRM_LEAST = 64
DROP_Z = 1.0               # a candidate is closed when its Wilson upper bound (z = 1) on P falls below the level
LEVEL_SPAN = 16.0          # a utility question's bisection starts between hi / LEVEL_SPAN and hi
LEVEL_STOP = 1.05          # ... and stops when hi / lo is below this
LEVEL_BAND = 2.0           # without calibrate, a level's candidates have epsilon in [level / LEVEL_BAND, level]
FIRST_LEVEL_QUANTILE = 0.25   # a utility question's first level: this quantile of epsilon where the chain reached U
GROW = 4.0                 # no level settled at hi: hi grows by this factor (at most GROW_STEPS times)
GROW_STEPS = 4
LOCAL_SCALES = (0.1, 0.03, 0.01)   # perturbations of the best points, shares of the unit box
ELITE = 4                  # perturbations are around this many of the best candidates
LOWER_Z = stats.norm.ppf(INTERVAL_LEVEL)   # an epsilon question's pick: mean - z_0.9 se
FRESH_SOURCE = ("{n} fresh trainings after it was chosen: P their share, the interval their order statistics "
                "(distribution-free for one new training; not a guarantee of the mechanism)")


def cost_tier(seconds: float) -> float:
    """`seconds` rounded up to the next of 10 ** (k / COST_TIERS_PER_DECADE)."""
    seconds = max(float(seconds), 1e-7)
    return 10.0 ** (math.ceil(math.log10(seconds) * COST_TIERS_PER_DECADE - 1e-9) / COST_TIERS_PER_DECADE)


def order_interval(runs, level: float = INTERVAL_LEVEL) -> tuple[float, float] | None:
    """The distribution-free interval for one more draw from the law of `runs` (i.i.d.): [x_(k), x_(N+1-k)] with
    k = floor((N + 1)(1 - level) / 2) holds a new draw with probability 1 - 2k / (N + 1) >= level (exchangeability);
    None below ORDER_LEAST draws (k = 0 at level 0.9)."""
    x = np.sort(np.asarray(runs, dtype=float))
    k = int(math.floor((len(x) + 1) * (1.0 - level) / 2.0 + 1e-12))
    if k < 1:
        return None
    return float(x[k - 1]), float(x[len(x) - k])


def wilson(successes: int, n: int, z: float) -> tuple[float, float]:
    """Wilson's score interval for a share (z: its one-sided quantile on each side)."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class QuestionClock:
    """A question's time budget as counts: measured costs in tiers (`cost_tier`) and what the seconds buy."""
    seconds: float
    training: float            # one training's seconds, tiered
    candidate: float           # placing one candidate on a level (calibration, its exact epsilon), tiered
    units: float = 0.0         # the seconds the search spent, counted (not measured)

    @property
    def trainings(self) -> int:
        """The trainings the whole budget buys."""
        return int(self.seconds / self.training)

    @property
    def cheap(self) -> bool:
        return self.trainings >= CHEAP_TRAININGS

    def spend(self, trainings: int = 0, candidates: int = 0) -> None:
        self.units += trainings * self.training + candidates * self.candidate

    def left(self, until: float) -> float:
        return until - self.units

    def tier_text(self) -> str:
        return f"{self.seconds:g} s; a training {self.training:.3g} s, a candidate {self.candidate:.3g} s (tiers)"


def measure(problem: Problem, data, points: list[dict], seconds: float, seed: int) -> QuestionClock:
    """A question's clock: one training's cost (blocks of BLOCK, as a race trains them) and one candidate's (placed
    on an epsilon level as a race places them), measured on `points` (the chain's), in tiers."""
    clock = QuestionClock(float(seconds), 1.0, 1.0)
    n = training_rows(data)
    probe = TimedQuestion(problem, pd.DataFrame(), data, "eps", exact_epsilon(problem, points[0], n), clock, seed,
                          "measure")
    start, placed = time.perf_counter(), 0
    while placed < MEASURE_LEAST or time.perf_counter() - start < MEASURE_SECONDS / 4:
        probe._placed(probe.rng.random((4, len(problem.domain))), 0.0, math.inf, probe.target)
        placed += 4
    per_candidate = (time.perf_counter() - start) / placed
    probe._train(Arm(np.array([points[0][p] for p in problem.names], float), 0.0, -1), 1)   # compiles what it compiles
    start, done = time.perf_counter(), 0
    while done < 4 * BLOCK or time.perf_counter() - start < MEASURE_SECONDS:
        probe._train(Arm(np.array([points[done % len(points)][p] for p in problem.names], float), 0.0, done), BLOCK)
        done += BLOCK
    per_training = (time.perf_counter() - start) / done
    return QuestionClock(float(seconds), cost_tier(per_training), cost_tier(per_candidate))


@dataclass
class Arm:
    """A candidate of a race: its point (domain order), exact epsilon, its search trainings and their running sums."""
    point: np.ndarray
    epsilon: float
    key: int
    runs: list = field(default_factory=list)
    open: bool = True
    total: float = 0.0
    squares: float = 0.0
    hits: int = 0

    def add(self, runs: np.ndarray, target: float) -> None:
        self.runs += [float(u) for u in runs]
        self.total += float(np.sum(runs))
        self.squares += float(np.sum(np.square(runs)))
        self.hits += int(np.sum(runs >= target))

    @property
    def n(self) -> int:
        return len(self.runs)

    def mean_bounds(self, z: float) -> tuple[float, float]:
        n = self.n
        mean = self.total / n
        se = math.sqrt(max(self.squares / n - mean * mean, 0.0) * n / (n - 1) / n) if n > 1 else 1.0
        return mean - z * se, mean + z * se


@dataclass
class Outcome:
    """What a timed search found and spent: the answer (None: none), its epsilon, the search's trainings and
    candidates, and a sentence where it ended short ("": it finished)."""
    point: dict | None
    epsilon: float
    trainings: int
    candidates: int
    note: str
    levels: list = field(default_factory=list)


class TimedQuestion:
    """One question's search by the clock (the module's rules) from a chain's evaluations."""

    def __init__(self, problem: Problem, evals: pd.DataFrame, data, kind: str, target: float, clock: QuestionClock,
                 seed: int, run: int):
        self.problem, self.data, self.kind, self.target, self.clock = problem, data, kind, float(target), clock
        self.evals = succeeded(evals).reset_index(drop=True) if len(evals) else evals
        self.seed, self.run_index = seed, run
        self.scaler = InputScaler(problem)
        self.n = training_rows(data)
        hook = getattr(oracle_target(problem), "calibrate", None)
        self.calibrate = hook if callable(hook) else None
        self.rng = derived_rng(seed, problem.name, "timed-question", kind, target, run)
        self.arms: list[Arm] = []
        self._seeds: list[Arm] | None = None
        self.trainings = 0
        self.budget = clock.seconds * SEARCH_SHARE

    # -- pieces -------------------------------------------------------------------------------
    def as_dict(self, point: np.ndarray) -> dict:
        return {p.name: (int(v) if p.integer else float(v)) for p, v in zip(self.problem.domain, point)}

    def _left(self) -> float:
        return self.clock.left(self.budget)

    def _placed(self, units: np.ndarray, low: float, high: float, level: float | None) -> list[Arm]:
        """Arms from unit points: calibrated to `level` where the oracle can (then kept at the level), else as drawn
        and kept where their exact epsilon lies in [low, high]; in the domain."""
        arms = []
        for point in self.scaler.from_unit(units):
            self.clock.spend(candidates=1)
            values = self.as_dict(point)
            floor = low
            if self.calibrate is not None and level is not None:
                try:
                    values = self.problem.check(self.calibrate(values, n=self.n, epsilon=level, delta=self.problem.delta))
                    floor = level
                except UserError:
                    continue   # the level is out of this point's reach inside the domain
                except Exception as exc:  # noqa: BLE001 - a user's calibrate that cannot: search without it
                    log.warning("%s: calibrate() raised %s: %s; the question's search filters candidates by their "
                                "exact epsilon instead", self.problem.name, type(exc).__name__, exc)
                    self.calibrate = None
            try:
                eps = exact_epsilon(self.problem, values, self.n)
            except Exception:  # noqa: BLE001 - a privacy oracle that raises fails the point, as in evaluate()
                continue
            if floor * (1 - 1e-9) <= eps <= high * (1 + 1e-9):
                arms.append(Arm(np.array([values[n] for n in self.problem.names], dtype=float), eps, len(self.arms)
                                + len(arms)))
        return arms

    def _new(self, low: float, high: float, level: float | None, elite: list[Arm], count: int = NEW_CANDIDATES) -> list[Arm]:
        """`count` candidates: half random in the box, half perturbations of `elite` (the best so far)."""
        d = len(self.problem.domain)
        random = self.rng.random((count // 2 if elite else count, d))
        local = []
        for i in range(count - len(random)):
            around = elite[i % len(elite)]
            scale = LOCAL_SCALES[self.rng.integers(len(LOCAL_SCALES))]
            local.append(self.scaler.to_unit(around.point[None, :])[0] + self.rng.normal(0.0, scale, d))
        units = np.clip(np.vstack([random, *local]) if local else random, 0.0, 1.0)
        arms = self._placed(units, low, high, level)
        self.arms += arms
        return arms

    def _train(self, arm: Arm, count: int, draw: int | None = None) -> bool:
        """`count` more trainings of `arm`, their seeds from the arm's key and `draw` (its trainings so far where
        None); False: it failed."""
        count = int(count)
        rng = derived_rng(self.seed, self.problem.name, "timed-question", self.kind, self.target, self.run_index,
                          arm.key, arm.n if draw is None else draw)
        self.clock.spend(trainings=count)
        self.trainings += count
        try:
            runs = checked_utilities(self.problem, self.as_dict(arm.point), self.problem.oracle.utilities(
                self.as_dict(arm.point), self.data, count, rng), count)
        except UserError:
            raise
        except Exception:  # noqa: BLE001 - a failed training closes its candidate, as a failed point in a chain
            arm.open = False
            return False
        arm.add(runs, self.target)
        return True

    def _seed_arms(self) -> list[Arm]:
        """The chain's best points (by measured utility) as the first perturbations' centres."""
        if self._seeds is None:
            rows = self.evals.nlargest(ELITE, "utility") if len(self.evals) else self.evals
            self._seeds = [Arm(r[self.problem.names].to_numpy(float), float(r["epsilon"]), -1) for _, r in rows.iterrows()]
        return self._seeds

    # -- utility >= U -------------------------------------------------------------------------------
    def _elite_by_reach(self) -> list[Arm]:
        scored = [a for a in self.arms if len(a.runs) >= BLOCK]
        scored.sort(key=lambda a: -wilson(a.hits, a.n, DROP_Z)[0])
        return scored[:ELITE] or self._seed_arms()

    def _race_level(self, level: float, until: float) -> Arm | None:
        """A race at epsilon `level` until the counted seconds reach `until`: the settling candidate, or None."""
        low = level / LEVEL_BAND   # without calibrate: the band a level's candidates are kept in
        race: list[Arm] = []
        while self.clock.units < until:
            live = [a for a in race if a.open]
            if len(live) < OPEN_MOST:
                fresh = self._new(low, level, level, self._elite_by_reach())
                race += fresh
                trial = fresh
                if not fresh and not live:
                    continue
            else:
                bounds = [wilson(a.hits, a.n, DROP_Z)[1] for a in live]
                trial = [live[int(np.argmax(bounds))]]
            for arm in trial:
                if self.clock.units >= until or not self._train(arm, BLOCK):
                    continue
                n, hits = arm.n, arm.hits
                if wilson(hits, n, ACCEPT_Z)[0] >= REACH_LEVEL:
                    if self._confirmed(arm):
                        return arm
                    arm.open = False
                elif wilson(hits, n, DROP_Z)[1] < REACH_LEVEL or n >= ARM_MOST:
                    arm.open = False
        return None

    def _confirmed(self, arm: Arm) -> bool:
        """A candidate whose running bound reached the level, tested once on new trainings (CONFIRM_FACTOR times its
        search trainings, at least CONFIRM_LEAST): their one-sided ACCEPT_Z Wilson lower bound must reach the level.
        The running bound is looked at after every block, and of many candidates near the level some cross it by
        chance; one look at new trainings does not."""
        count = max(CONFIRM_LEAST, CONFIRM_FACTOR * arm.n)
        check = Arm(arm.point, arm.epsilon, arm.key)   # its trainings apart from the search's, seeded after them
        if not self._train(check, count, draw=arm.n):
            return False
        return wilson(check.hits, count, ACCEPT_Z)[0] >= REACH_LEVEL

    def run_utility(self) -> Outcome:
        reached = self.evals[self.evals["utility_min"] >= self.target] if "utility_min" in self.evals else self.evals[:0]
        top = float(self.evals["epsilon"].replace(np.inf, np.nan).max())
        # the first level: where the chain's points whose every training reached U begin (their lower quartile of
        # epsilon: a few lucky points of three trainings far below the rest do not set it)
        hi_try = float(reached["epsilon"].quantile(FIRST_LEVEL_QUANTILE)) if len(reached) else top
        levels, best = [], None
        for _ in range(GROW_STEPS + 1):   # a first level that settles: half of what is left, then half again
            share = self._left() / 2
            best = self._race_level(hi_try, self.clock.units + share)
            levels.append((hi_try, best is not None))
            if best is not None or hi_try >= top:
                break
            hi_try = min(hi_try * GROW, top)
        if best is None:
            return Outcome(None, math.nan, self.trainings, len(self.arms),
                           f"no candidate up to epsilon {hi_try:.3g} reached {self.target:g} with probability "
                           f"{REACH_LEVEL:g} within the search's {self.budget:.3g} s", levels)
        hi, lo = best.epsilon, best.epsilon / LEVEL_SPAN
        tested = False   # whether lo is a level that failed, or only where the bracket started
        while self._left() > 0:
            if hi / lo < LEVEL_STOP:
                if tested:
                    break
                lo = hi / LEVEL_SPAN   # every level settled down to the bracket's untested end: look further down
            steps = max(1, math.ceil(math.log2(math.log(hi / lo) / math.log(LEVEL_STOP))))
            level = math.sqrt(lo * hi)
            settled = self._race_level(level, self.clock.units + self._left() / steps)
            levels.append((level, settled is not None))
            if settled is not None:
                best, hi = settled, settled.epsilon
            else:
                lo, tested = level, True
        note = "" if hi / lo < LEVEL_STOP and tested else (
            f"the search's {self.budget:.3g} s ran out with the least epsilon reaching {self.target:g} at P "
            f"{REACH_LEVEL:g} between {lo:.3g} and {hi:.3g}")
        return Outcome(self.as_dict(best.point), best.epsilon, self.trainings, len(self.arms), note, levels)

    # -- epsilon <= E -------------------------------------------------------------------------------
    def run_epsilon(self) -> Outcome:
        level = self.target
        low = level / NEAR_BUDGET   # without calibrate: the band the candidates are kept in
        z = stats.norm.ppf(0.975)
        while self._left() > 0:   # a generation: new candidates, then the open ones of best upper bound go on
            live = [a for a in self.arms if a.open and a.n]
            elite = sorted(live, key=lambda a: -a.mean_bounds(LOWER_Z)[0])[:ELITE] or self._seed_arms()
            trial = self._new(low, level, level, elite, GENERATION)
            if live:
                best_low = max(a.mean_bounds(z)[0] for a in live)
                for a in live:
                    if a.n >= 2 * BLOCK and a.mean_bounds(z)[1] < best_low:
                        a.open = False
                live = sorted((a for a in live if a.open and a.n < ARM_MOST), key=lambda a: -a.mean_bounds(z)[1])
                trial += live[:OPEN_MOST]
            for arm in trial:
                if self._left() > 0:
                    self._train(arm, BLOCK)
        trained = [a for a in self.arms if a.n >= 2 * BLOCK] or [a for a in self.arms if a.n]
        if not trained:
            return Outcome(None, math.nan, self.trainings, len(self.arms),
                           f"no candidate of epsilon {'' if self.calibrate else f'in [{low:.3g}, '}{level:.3g}"
                           f"{'' if self.calibrate else ']'} was found within the search's {self.budget:.3g} s")
        best = max(trained, key=lambda a: a.mean_bounds(LOWER_Z)[0])
        return Outcome(self.as_dict(best.point), best.epsilon, self.trainings, len(self.arms), "")

    def run(self) -> Outcome:
        return self.run_epsilon() if self.kind == "eps" else self.run_utility()

    # -- the answer's fresh trainings -----------------------------------------------------------------
    def fresh(self, point: dict) -> np.ndarray:
        """The answer's fresh trainings: what the rest of the seconds buy (at least FRESH_LEAST where cheap), with
        seeds apart from the search's."""
        count = int(min(FRESH_MOST, max(FRESH_LEAST, (self.clock.seconds - self.clock.units) / self.clock.training)))
        rng = derived_rng(self.seed, self.problem.name, "timed-question", self.kind, self.target, self.run_index,
                          "fresh")
        self.clock.spend(trainings=count)
        return checked_utilities(self.problem, point, self.problem.oracle.utilities(point, self.data, count, rng), count)


def fresh_statement(runs: np.ndarray, kind: str, target: float) -> dict:
    """What fresh trainings state of an answer: its mean utility, their sd, the interval for one new training
    (order statistics from ORDER_LEAST, else None) and, for a utility question, P (their share reaching the
    target) with its Wilson 95 % interval."""
    runs = np.asarray(runs, dtype=float)
    out = {"fresh_trainings": len(runs), "fresh_mean": float(runs.mean()),
           "fresh_sd": float(runs.std(ddof=1)) if len(runs) > 1 else math.nan, "interval": order_interval(runs)}
    if kind == "utility":
        hits = int(np.sum(runs >= target))
        out["reach_probability"] = hits / len(runs)
        out["reach_low"], out["reach_high"] = wilson(hits, len(runs), stats.norm.ppf(0.975))
    return out
