"""Every declared question, and `dptradeoff front --epsilon/--utility`, answered with the user's time: searched for its
seconds, then stated by trainings made after the choice (the `query` rule; one rule whatever a training costs).

A question's budget is `dpareto.question_seconds` (or the problem's `seconds.question`, or `--seconds`), and at least
`dpareto.question_trainings` trainings of its measured cost (a dear training: DP-SGD's 0.1-3 s buy few trainings in
10 s, and an answer needs ORDER_LEAST fresh ones for its interval). The row states the budget it had and why.

1. **Measured cost, in tiers.** One training's and one candidate's wall seconds are measured (a dear oracle's
   training from the chain's own records) and rounded up to a tier (COST_TIERS_PER_DECADE a decade); what measuring
   and setting up took is counted too (`overhead`). The seconds become counts of trainings and candidates, so the
   search is a function of its seeds and tiers, and a rerun given the recorded tiers (`QuestionClock.pinned`)
   replays it bit for bit on another machine. Without pinned tiers, answers depend on the machine and its load.
2. **Search where the answer must lie** (`SEARCH_SHARE` of the seconds). Epsilon is known before a training: every
   candidate is placed on the epsilon level asked, by the oracle's `calibrate` (the release's interface) where it
   has one, else by a one-dimensional search on the exact epsilon along the hyperparameter that moves it most
   (`_onto_level`: within LEVEL_TOLERANCE below the level; a candidate no such move brings there is dropped).
   Candidates are random points of the domain and perturbations of the best so far, trained in blocks:
   - utility >= U: a bisection on epsilon levels, at each a Wilson race on P(one training reaches U); a candidate
     whose one-sided ACCEPT_Z lower bound clears the level plus the planned fresh trainings' own margin
     (`settle_level`) is confirmed once on new trainings and settles it, so that the fresh share a settled level
     states falls below the level in at most 5 % of questions;
   - epsilon <= E: a race at epsilon = E on the mean utility; the answer is the candidate of best lower bound.
3. **Fresh trainings state the answer** (the rest of the seconds): the chosen point trained again with seeds the
   search never used; only they state its mean, its P (their share reaching U) and its interval for one new
   training (order statistics, distribution-free from ORDER_LEAST). A budget that cannot buy ORDER_LEAST says so.
   A utility answer whose fresh share is below the level says "P below" it, plainly.
4. **By the clock.** A question stops searching when its counted seconds are spent or its wall-clock share is, and
   trains its fresh trainings only while the wall-clock allows one more chunk: it takes at most its seconds plus one
   training (a stop by the wall-clock, on a machine slower than measured, is recorded: that answer is not a replay).
   Pinned tiers are a replay: the counts decide, and the wall clock does not stop it.
"""
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
from ..release.trainers import calibrate_hook, oracle_target
from ..seeds import rng as derived_rng
from .query import INTERVAL_LEVEL
from .replication import REACH_LEVEL
from .transforms import InputScaler

log = logging.getLogger(__name__)

COST_TIERS_PER_DECADE = 4  # a measured cost is rounded up to 10 ** (k / 4) s: a tier decides the counts
MEASURE_SECONDS = 0.2      # measuring a training's cost takes about this long (at least MEASURE_LEAST trainings)
MEASURE_LEAST = 8
SEARCH_SHARE = 0.75        # of a question's seconds (less its overhead), its search; the rest buys fresh trainings
FRESH_MOST = 20000         # fresh trainings of an answer, at most (its share of P is then known to +- 0.002)
ORDER_LEAST = 19           # fresh trainings from which the interval is distribution-free (order statistics)
FRESH_CHUNK_SECONDS = 0.25  # fresh trainings are trained in chunks of about this long (one training at least)
BLOCK = 8                  # trainings per step of a race (fewer where the budget buys few: `TimedQuestion.block`)
NEW_CANDIDATES = 8         # candidates added at once to a level's race, half random, half around the best so far
GENERATION = 32            # candidates added at once to an epsilon question's race
OPEN_MOST = 16             # a race keeps at most this many candidates open before it adds new ones
ARM_MOST = 512             # trainings of one candidate in a race, at most
ACCEPT_Z = 1.645           # a level is settled by a candidate whose one-sided 95 % Wilson lower bound on P clears
                           # `settle_level`, on its search trainings and then, once, on new ones (`_confirmed`)
CONFIRM_FACTOR = 2         # ... CONFIRM_FACTOR times as many as its search trainings, at least CONFIRM_LEAST
CONFIRM_LEAST = 64
DROP_Z = 1.0               # a candidate is closed when its Wilson upper bound (z = 1) on P falls below the level
LEVEL_SPAN = 16.0          # a utility question's bisection starts between hi / LEVEL_SPAN and hi
LEVEL_STOP = 1.05          # ... and stops when hi / lo is below this
LEVEL_TOLERANCE = 1e-3     # without calibrate, a candidate is moved to epsilon in [level (1 - this), level]
ONTO_STEPS = 40            # ... by at most this many bisection steps on one hyperparameter
FIRST_LEVEL_QUANTILE = 0.25   # a utility question's first level: this quantile of epsilon where the chain reached U
GROW = 4.0                 # no level settled at hi: hi grows by this factor (at most GROW_STEPS times)
GROW_STEPS = 4
LOCAL_SCALES = (0.1, 0.03, 0.01)   # perturbations of the best points, shares of the unit box
ELITE = 4                  # perturbations are around this many of the best candidates
LOWER_Z = stats.norm.ppf(INTERVAL_LEVEL)   # an epsilon question's pick: mean - z_0.9 se
FRESH_SOURCE = ("{n} fresh trainings after it was chosen: P their share, the interval their order statistics "
                "(distribution-free for one new training; not a guarantee of the mechanism)")
FEW_FRESH_SOURCE = ("{n} fresh trainings after it was chosen: P their share; no interval (it needs "
                    f"{ORDER_LEAST} fresh trainings, and the question's budget bought fewer)")


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


def trainings(problem: Problem, point: dict, data, count: int, rng: np.random.Generator) -> np.ndarray:
    """`count` trainings of `point` from `rng`, checked; a traced oracle's to the point's own epochs (its trace's
    last checkpoint: the training a chain's row of that epoch measured)."""
    oracle = problem.oracle
    if oracle.trace_axis is not None:
        end = int(point[oracle.trace_axis])
        runs = oracle.utilities_trace(point, data, count, rng, [end])[end]
    else:
        runs = oracle.utilities(point, data, count, rng)
    return checked_utilities(problem, point, runs, count)


def settle_level(fresh: int, level: float = REACH_LEVEL) -> float:
    """What a candidate's P must clear to settle a level whose answer `fresh` trainings will state: the level plus
    the one-sided 95 % margin of a share of `fresh` draws at the level, so a truly settled point's fresh share falls
    below the level in at most 5 % of questions (at most 1)."""
    return min(1.0, level + ACCEPT_Z * math.sqrt(level * (1 - level) / max(fresh, 1)))


@dataclass
class QuestionClock:
    """A question's time budget as counts: measured costs in tiers (`cost_tier`), what the seconds buy, and the wall
    clock it stops by. `pinned`: the tiers were given (a replay), not measured."""
    seconds: float
    training: float            # one training's seconds, tiered
    candidate: float           # placing one candidate on a level (calibration, its exact epsilon), tiered
    overhead: float = 0.0      # measuring and setting up, tiered: taken from the seconds before the search
    units: float = 0.0         # the seconds the search and the fresh trainings spent, counted (not measured)
    asked: float = math.nan    # the seconds asked for (NaN: `seconds`), where a dear training raised them
    pinned: bool = False
    started: float = field(default_factory=time.perf_counter)
    rate: float = 0.0          # one training's wall seconds as this question's trainings took them (the wall checks')
    stopped: str = ""          # why the wall clock stopped the question early ("": it did not)

    @property
    def trainings(self) -> int:
        """The trainings the whole budget buys."""
        return int(self.seconds / self.training)

    @property
    def usable(self) -> float:
        """The seconds for the search and the fresh trainings."""
        return max(self.seconds - self.overhead, 0.0)

    def spend(self, trainings: int = 0, candidates: int = 0) -> None:
        self.units += trainings * self.training + candidates * self.candidate

    def left(self, until: float) -> float:
        return until - self.units

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def per_training(self) -> float:
        """One training's wall seconds for the wall checks: the slower of its tier and what trainings took here."""
        return max(self.training, self.rate)

    def observe(self, trainings: int, seconds: float) -> None:
        """`trainings` took `seconds` of wall clock: the running rate (the latest block weighs a half, all of it where
        it is slower: a machine that slows is believed at once)."""
        if trainings > 0:
            now = seconds / trainings
            self.rate = now if self.rate == 0.0 else max(now, 0.5 * (self.rate + now))

    def wall_allows(self, until_share: float, seconds: float = 0.0) -> bool:
        """Whether the wall clock allows `seconds` more before `until_share` of the question's seconds; records the
        stop where it does not. Pinned tiers (a replay) are not stopped: the counts decide, as on the run replayed."""
        if self.pinned or self.elapsed() + seconds <= until_share * self.seconds:
            return True
        self.stopped = self.stopped or (f"stopped by the wall clock at {self.elapsed():.3g} s of {self.seconds:g} s "
                                        f"(the machine ran slower than its measured tiers: not a replay)")
        return False

    def tiers(self) -> dict:
        """What a rerun pins to replay this question (`dpareto.question_tiers` / a problem's `seconds.tiers`)."""
        return {"training": self.training, "candidate": self.candidate, "overhead": self.overhead}

    def tier_text(self) -> str:
        raised = (f" (the {self.asked:g} s asked buy fewer than the least trainings a question gets)"
                  if math.isfinite(self.asked) and self.asked < self.seconds else "")
        how = "pinned" if self.pinned else "tiers"
        return (f"{self.seconds:.4g} s{raised}; a training {self.training:.3g} s, a candidate {self.candidate:.3g} s, "
                f"overhead {self.overhead:.3g} s ({how})")


def measure(problem: Problem, data, points: list[dict], seconds: float, seed: int, recorded: float | None = None,
            least_trainings: int = 0, tiers: dict | None = None) -> QuestionClock:
    """A question's clock: one training's cost (`recorded`, the chain's, where given: a dear oracle is not trained to
    be timed; else measured in blocks of BLOCK on `points`, the chain's), one candidate's (placed on an epsilon
    level as a race places them) and the overhead, in tiers, or `tiers` as given (a replay). The seconds are raised
    to `least_trainings` trainings (with a candidate placed for each BLOCK of them) where they buy fewer."""
    started = time.perf_counter()
    if tiers:
        training, candidate, overhead = (float(tiers[k]) for k in ("training", "candidate", "overhead"))
    else:
        n = training_rows(data)
        # the probe's own clock never stops it (pinned): it trains what measuring needs
        probe = TimedQuestion(problem, pd.DataFrame(), data, "eps", exact_epsilon(problem, points[0], n),
                              QuestionClock(float(seconds), 1e-9, 1e-9, pinned=True), seed, "measure")
        if not probe.calibrates:
            probe._epsilon_axes()   # once a question, not a candidate's cost
        start, placed = time.perf_counter(), 0
        while placed < MEASURE_LEAST or time.perf_counter() - start < MEASURE_SECONDS / 4:
            probe._placed(probe.rng.random((4, len(problem.domain))), probe.target)
            placed += 4
        candidate = cost_tier((time.perf_counter() - start) / placed)
        if recorded is not None:
            training = cost_tier(recorded)
        else:
            probe._train(Arm(np.array([points[0][p] for p in problem.names], float), 0.0, -1), 1)   # compiles
            start, done = time.perf_counter(), 0
            while done < 4 * BLOCK or time.perf_counter() - start < MEASURE_SECONDS:
                probe._train(Arm(np.array([points[done % len(points)][p] for p in problem.names], float), 0.0, done),
                             BLOCK)
                done += BLOCK
            training = cost_tier((time.perf_counter() - start) / done)
        overhead = cost_tier(time.perf_counter() - started)
    # the least trainings' worth: each training, a candidate placed for each block of them, and the overhead
    budget = max(float(seconds), least_trainings * (training + candidate / BLOCK) + overhead)
    return QuestionClock(budget, training, candidate, overhead, asked=float(seconds), pinned=bool(tiers),
                         started=started)


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
    candidates, a sentence where it ended short ("": it finished), the levels it tried, and whether a utility
    answer settled its level (False: the candidate likeliest to reach it, no level settled)."""
    point: dict | None
    epsilon: float
    trainings: int
    candidates: int
    note: str
    levels: list = field(default_factory=list)
    settled: bool = True


class TimedQuestion:
    """One question's search by the clock (the module's rules) from a chain's evaluations."""

    def __init__(self, problem: Problem, evals: pd.DataFrame, data, kind: str, target: float, clock: QuestionClock,
                 seed: int, run: int):
        self.problem, self.data, self.kind, self.target, self.clock = problem, data, kind, float(target), clock
        self.evals = succeeded(evals).reset_index(drop=True) if len(evals) else evals
        self.seed, self.run_index = seed, run
        self.scaler = InputScaler(problem)
        self.n = training_rows(data)
        self.calibrates = callable(getattr(oracle_target(problem), "calibrate", None))
        self.rng = derived_rng(seed, problem.name, "timed-question", kind, target, run)
        self.arms: list[Arm] = []
        self._seeds: list[Arm] | None = None
        self._axes: list[int] | None = None
        self.trainings = 0
        self.budget = clock.usable * SEARCH_SHARE
        usable_trainings = clock.usable / clock.training
        self.planned_fresh = int(min(FRESH_MOST, usable_trainings * (1 - SEARCH_SHARE)))
        # a budget of few trainings races in smaller blocks (a level still needs ~25 trainings to settle)
        self.block = int(min(BLOCK, max(1, usable_trainings * SEARCH_SHARE // 32)))

    # -- pieces -------------------------------------------------------------------------------
    def as_dict(self, point: np.ndarray) -> dict:
        return {p.name: (int(v) if p.integer else float(v)) for p, v in zip(self.problem.domain, point)}

    def _left(self) -> float:
        return self.clock.left(self.budget)

    def _spent(self, until: float) -> bool:
        """The search's counted seconds reached `until`, or its wall-clock share ran out."""
        return self.clock.units >= until or not self.clock.wall_allows(SEARCH_SHARE)

    def _epsilon_at(self, unit: np.ndarray) -> float:
        return exact_epsilon(self.problem, self.as_dict(self.scaler.from_unit(unit[None, :])[0]), self.n)

    def _epsilon_axes(self) -> list[int]:
        """The hyperparameters that move epsilon, the most first (measured at four points of the box)."""
        if self._axes is None:
            d = len(self.problem.domain)
            probe = derived_rng(self.seed, self.problem.name, "timed-question", "axes").random((4, d))
            effect = np.zeros(d)
            for u in probe:
                for j in range(d):
                    low, high = u.copy(), u.copy()
                    low[j], high[j] = 0.02, 0.98
                    try:
                        a, b = self._epsilon_at(low), self._epsilon_at(high)
                    except Exception:  # noqa: BLE001 - a privacy oracle that raises here says nothing of the axis
                        continue
                    if a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b):
                        effect[j] += abs(math.log(b) - math.log(a))
            self._axes = [int(j) for j in np.argsort(-effect) if effect[j] > 1e-9]
        return self._axes

    def _onto_level(self, unit: np.ndarray, level: float) -> np.ndarray | None:
        """`unit` moved along one hyperparameter (those that move epsilon most first) to exact epsilon in
        [level (1 - LEVEL_TOLERANCE), level] by bisection, or as near below as an integer grid allows; None where no
        single hyperparameter brings it to the level inside the domain."""
        for j in self._epsilon_axes():
            ends = []
            for value in (0.0, 1.0):
                moved = unit.copy()
                moved[j] = value
                ends.append((moved, self._epsilon_at(moved)))
            (a, ea), (b, eb) = ends
            if ea > eb:
                (a, ea), (b, eb) = (b, eb), (a, ea)
            if not ea <= level:
                continue
            if eb <= level:
                return b   # the whole axis is within the level: its most generous end
            for _ in range(ONTO_STEPS):   # invariant: eps(a) <= level < eps(b)
                if ea >= level * (1 - LEVEL_TOLERANCE):
                    break
                m = (a + b) / 2
                em = self._epsilon_at(m)
                if em <= level:
                    a, ea = m, em
                else:
                    b, eb = m, em
            return a
        return None

    def _placed(self, units: np.ndarray, level: float) -> list[Arm]:
        """Arms from unit points, each placed on epsilon `level`: by the oracle's `calibrate` under its contract
        (`release.trainers.calibrate_hook`: None, or a point outside the domain, is a level this point cannot reach),
        else by `_onto_level`; kept where the exact epsilon is within the level."""
        arms = []
        for unit in units:
            self.clock.spend(candidates=1)   # a placement, calibrated or moved (`measure` times both alike)
            if self.calibrates:
                values = calibrate_hook(self.problem, self.as_dict(self.scaler.from_unit(unit[None, :])[0]), n=self.n,
                                        epsilon=level, delta=self.problem.delta)
                if values is None:
                    continue
                try:
                    values = self.problem.check(values)
                except UserError:
                    continue   # the level is out of this point's reach inside the domain
            else:
                try:
                    moved = self._onto_level(unit, level)
                except Exception:  # noqa: BLE001 - a privacy oracle that raises fails the point, as in evaluate()
                    continue
                if moved is None:
                    continue
                values = self.as_dict(self.scaler.from_unit(moved[None, :])[0])
            try:
                eps = exact_epsilon(self.problem, values, self.n)
            except Exception:  # noqa: BLE001 - a privacy oracle that raises fails the point, as in evaluate()
                continue
            if eps <= level * (1 + 1e-9):
                arms.append(Arm(np.array([values[n] for n in self.problem.names], dtype=float), eps,
                                len(self.arms) + len(arms)))
        return arms

    def affordable(self, count: int, until: float) -> int:
        """`count` candidates, or fewer where the counted seconds left before `until` would not also train each a
        block (a dear training's small budget: a few candidates trained beat many placed), at least 1."""
        each = self.clock.candidate + self.block * self.clock.training
        return int(max(1, min(count, self.clock.left(until) / (2 * each))))

    def _new(self, level: float, elite: list[Arm], count: int = NEW_CANDIDATES) -> list[Arm]:
        """`count` candidates on `level`: half random in the box, half perturbations of `elite` (the best so far)."""
        d = len(self.problem.domain)
        random = self.rng.random((count // 2 if elite else count, d))
        local = []
        for i in range(count - len(random)):
            around = elite[i % len(elite)]
            scale = LOCAL_SCALES[self.rng.integers(len(LOCAL_SCALES))]
            local.append(self.scaler.to_unit(around.point[None, :])[0] + self.rng.normal(0.0, scale, d))
        units = np.clip(np.vstack([random, *local]) if local else random, 0.0, 1.0)
        arms = self._placed(units, level)
        self.arms += arms
        return arms

    def _train(self, arm: Arm, count: int, draw: int | None = None) -> bool:
        """`count` more trainings of `arm`, their seeds from the arm's key and `draw` (its trainings so far where
        None); False: it failed (then closed), or the wall clock stopped the search."""
        count = int(count)
        if not self.clock.wall_allows(SEARCH_SHARE, count * self.clock.per_training()):
            return False
        rng = derived_rng(self.seed, self.problem.name, "timed-question", self.kind, self.target, self.run_index,
                          arm.key, arm.n if draw is None else draw)
        self.clock.spend(trainings=count)
        self.trainings += count
        began = time.perf_counter()
        try:
            runs = trainings(self.problem, self.as_dict(arm.point), self.data, count, rng)
        except UserError:
            raise
        except Exception:  # noqa: BLE001 - a failed training closes its candidate, as a failed point in a chain
            arm.open = False
            return False
        self.clock.observe(count, time.perf_counter() - began)
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
        scored = [a for a in self.arms if a.n >= self.block]
        scored.sort(key=lambda a: -wilson(a.hits, a.n, DROP_Z)[0])
        return scored[:ELITE] or self._seed_arms()

    def _race_level(self, level: float, until: float) -> Arm | None:
        """A race at epsilon `level` until the counted seconds reach `until`: the settling candidate, or None."""
        race: list[Arm] = []
        settle = settle_level(self.planned_fresh)
        while not self._spent(until):
            live = [a for a in race if a.open]
            if len(live) < OPEN_MOST:
                fresh = self._new(level, self._elite_by_reach(), self.affordable(NEW_CANDIDATES, until))
                race += fresh
                trial = fresh
                if not fresh and not live:
                    continue
            else:
                bounds = [wilson(a.hits, a.n, DROP_Z)[1] for a in live]
                trial = [live[int(np.argmax(bounds))]]
            for arm in trial:
                if self._spent(until) or not self._train(arm, self.block):
                    continue
                n, hits = arm.n, arm.hits
                if wilson(hits, n, ACCEPT_Z)[0] >= settle:
                    if self._confirmed(arm, settle):
                        return arm
                    arm.open = False
                elif wilson(hits, n, DROP_Z)[1] < REACH_LEVEL or n >= ARM_MOST:
                    arm.open = False
        return None

    def _confirmed(self, arm: Arm, settle: float) -> bool:
        """A candidate whose running bound cleared `settle`, tested once on new trainings (CONFIRM_FACTOR times its
        search trainings, at least CONFIRM_LEAST, within the search's counted seconds): their one-sided ACCEPT_Z Wilson
        lower bound must clear it too.
        The running bound is looked at after every block, and of many candidates near the level some cross it by
        chance; one look at new trainings does not."""
        count = max(CONFIRM_LEAST, CONFIRM_FACTOR * arm.n)
        if self.clock.units + count * self.clock.training > self.budget:
            return False   # the search cannot afford the look: the fresh trainings' share is not borrowed
        check = Arm(arm.point, arm.epsilon, arm.key)   # its trainings apart from the search's, seeded after them
        if not self._train(check, count, draw=arm.n):
            return False
        arm.add(np.asarray(check.runs), self.target)   # the confirmation's trainings join its record
        return wilson(check.hits, count, ACCEPT_Z)[0] >= settle

    def _likeliest(self) -> Arm | None:
        """No level settled: the candidate of highest Wilson lower bound (z = 1) on P, least epsilon on ties."""
        scored = [a for a in self.arms if a.n]
        if not scored:
            return None
        return max(scored, key=lambda a: (wilson(a.hits, a.n, DROP_Z)[0], -a.epsilon))

    def run_utility(self) -> Outcome:
        reached = self.evals[self.evals["utility_min"] >= self.target] if "utility_min" in self.evals else self.evals[:0]
        top = float(self.evals["epsilon"].replace(np.inf, np.nan).max()) if len(self.evals) else math.nan
        # the first level: where the chain's points whose every training reached U begin (their lower quartile of
        # epsilon: a few lucky points of three trainings far below the rest do not set it)
        hi_try = float(reached["epsilon"].quantile(FIRST_LEVEL_QUANTILE)) if len(reached) else top
        levels, best = [], None
        for _ in range(GROW_STEPS + 1):   # a first level that settles: half of what is left, then half again
            share = self._left() / 2
            best = self._race_level(hi_try, self.clock.units + share)
            levels.append((hi_try, best is not None))
            if best is not None or hi_try >= top or self.clock.stopped:
                break
            hi_try = min(hi_try * GROW, top)
        if best is None:
            likeliest = self._likeliest()
            note = (f"no candidate up to epsilon {hi_try:.3g} settled P {REACH_LEVEL:g} of reaching {self.target:g} "
                    f"within the search's {self.budget:.3g} s" + (f" ({self.clock.stopped})" if self.clock.stopped else ""))
            if likeliest is None:
                return self._chain_answer(note)
            return Outcome(self.as_dict(likeliest.point), likeliest.epsilon, self.trainings, len(self.arms),
                           note + "; the answer is the candidate likeliest to reach it", levels, settled=False)
        hi, lo = best.epsilon, best.epsilon / LEVEL_SPAN
        tested = False   # whether lo is a level that failed, or only where the bracket started
        while self._left() > 0 and not self.clock.stopped:
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
            elif not self.clock.stopped:
                lo, tested = level, True
        note = "" if hi / lo < LEVEL_STOP and tested else (
            f"the search's {self.budget:.3g} s ran out with the least epsilon reaching {self.target:g} at P "
            f"{REACH_LEVEL:g} between {lo:.3g} and {hi:.3g}" + (f" ({self.clock.stopped})" if self.clock.stopped else ""))
        return Outcome(self.as_dict(best.point), best.epsilon, self.trainings, len(self.arms), note, levels)

    def _chain_answer(self, note: str) -> Outcome:
        """The search trained nothing: the chain's evaluated point that best meets the question by what its own
        trainings support (`support.best_evaluated`; a utility question's, else its row of highest least training),
        chosen by the chain and stated, as every answer, by fresh trainings; None where the chain has none."""
        from .support import best_evaluated

        rows = best_evaluated(self.evals, self.kind, self.target) if len(self.evals) else self.evals
        if not len(rows) and self.kind == "utility" and len(self.evals):
            rows = self.evals.sort_values(["utility_min" if "utility_min" in self.evals else "utility", "epsilon"],
                                          ascending=[False, True], kind="stable")
        if not len(rows):
            return Outcome(None, math.nan, self.trainings, len(self.arms), note, settled=False)
        row = rows.iloc[0]
        return Outcome(self.as_dict(row[self.problem.names].to_numpy(float)), float(row["epsilon"]), self.trainings,
                       len(self.arms), f"{note}; the answer is the chain's evaluated point that best meets it",
                       settled=False)

    # -- epsilon <= E -------------------------------------------------------------------------------
    def run_epsilon(self) -> Outcome:
        level = self.target
        z = stats.norm.ppf(0.975)
        while not self._spent(self.budget):   # a generation: new candidates, then the open ones of best upper bound
            live = [a for a in self.arms if a.open and a.n]
            elite = sorted(live, key=lambda a: -a.mean_bounds(LOWER_Z)[0])[:ELITE] or self._seed_arms()
            trial = self._new(level, elite, self.affordable(GENERATION, self.budget))
            if live:
                best_low = max(a.mean_bounds(z)[0] for a in live)
                for a in live:
                    if a.n >= 2 * self.block and a.mean_bounds(z)[1] < best_low:
                        a.open = False
                live = sorted((a for a in live if a.open and a.n < ARM_MOST), key=lambda a: -a.mean_bounds(z)[1])
                trial += live[:OPEN_MOST]

            for arm in trial:
                if not self._spent(self.budget):
                    self._train(arm, self.block)
        trained = [a for a in self.arms if a.n >= 2 * self.block] or [a for a in self.arms if a.n]
        if not trained:
            return self._chain_answer(f"no candidate of epsilon {level:.3g} was trained within the search's "
                                      f"{self.budget:.3g} s" + (f" ({self.clock.stopped})" if self.clock.stopped else ""))
        best = max(trained, key=lambda a: a.mean_bounds(LOWER_Z)[0])
        note = f"the search was {self.clock.stopped}" if self.clock.stopped else ""
        return Outcome(self.as_dict(best.point), best.epsilon, self.trainings, len(self.arms), note)

    def run(self) -> Outcome:
        return self.run_epsilon() if self.kind == "eps" else self.run_utility()

    # -- the answer's fresh trainings -----------------------------------------------------------------
    def fresh(self, point: dict) -> np.ndarray:
        """The answer's fresh trainings: what the rest of the seconds buy (at most FRESH_MOST), with seeds apart from
        the search's, in chunks of doubling size (1, 2, 4, ... up to FRESH_CHUNK_SECONDS of its tier), each started
        only where the wall clock allows it at the rate trainings took here (the last shortened to end within the
        question's seconds plus one training; a stop is recorded)."""
        count = int(min(FRESH_MOST, max(0.0, self.clock.usable - self.clock.units) / self.clock.training))
        most = max(1, int(FRESH_CHUNK_SECONDS / self.clock.training))
        runs: list[np.ndarray] = []
        done, size = 0, 1
        while done < count:
            size = min(size, most, count - done)
            room = self.clock.seconds - self.clock.elapsed()
            fits = int(room / self.clock.per_training()) + 1   # at most one training beyond the seconds
            if fits < size and not self.clock.pinned:
                self.clock.wall_allows(1.0, size * self.clock.per_training())   # records the stop
                size = fits
                if room <= 0:
                    break
            rng = derived_rng(self.seed, self.problem.name, "timed-question", self.kind, self.target, self.run_index,
                              "fresh", done)
            self.clock.spend(trainings=size)
            began = time.perf_counter()
            runs.append(trainings(self.problem, point, self.data, size, rng))
            self.clock.observe(size, time.perf_counter() - began)
            done += size
            size *= 2
        return np.concatenate(runs) if runs else np.zeros(0)


def fresh_statement(runs: np.ndarray, kind: str, target: float) -> dict:
    """What fresh trainings state of an answer: its mean utility, their sd, the interval for one new training
    (order statistics from ORDER_LEAST, else None) and, for a utility question, P (their share reaching the
    target) with its Wilson 95 % interval."""
    runs = np.asarray(runs, dtype=float)
    if not len(runs):
        out = {"fresh_trainings": 0, "fresh_mean": math.nan, "fresh_sd": math.nan, "interval": None}
        if kind == "utility":
            out.update(reach_probability=math.nan, reach_low=0.0, reach_high=1.0)
        return out
    out = {"fresh_trainings": len(runs), "fresh_mean": float(runs.mean()),
           "fresh_sd": float(runs.std(ddof=1)) if len(runs) > 1 else math.nan, "interval": order_interval(runs)}
    if kind == "utility":
        hits = int(np.sum(runs >= target))
        out["reach_probability"] = hits / len(runs)
        out["reach_low"], out["reach_high"] = wilson(hits, len(runs), stats.norm.ppf(0.975))
    return out
