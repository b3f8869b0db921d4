"""The GP's view of a finished study's front (paper 001 §5's open problem), and an answer's record.

No question a user asks is answered here: every declared question and `dptradeoff front --epsilon/--utility` is
answered by the one rule (`bo.timed_questions`, `bo.query_round`: searched for its seconds, stated by fresh
trainings after the choice). `Answer` is the rule's record; `front` the evaluated points' Pareto front. `FrontQuery`
stays as the benchmarks' anchor, the answers of the GP fitted to the chain (`benchmarks/laplace_mean_front.py`'s
"before", `benchmarks/query_coverage.py`'s `coverage_gp`), and is described as it works:

`for_epsilon(target)`: the hyperparameters that maximise the GP-predicted utility subject to the
*exact* privacy oracle's epsilon <= target; `for_utility(target)`: the smallest exact epsilon among
hyperparameters whose predicted utility is >= target. Privacy is always computed by the problem's
oracle, never predicted: a suggestion's epsilon is a guarantee (as far as the oracle is), its
utility a GP prediction until the `query` rule trains it.

The search uses the acquisition's exact-privacy machinery (`exact_privacy.for_problem`): the
candidates' epsilons in one vectorised pass (DP-SGD: the RDP table) to filter and rank them, the
privacy oracle's own epsilon for every point that can become the answer. `SEARCH_FACTOR` x
`candidates` random points of the GPs' input box (integers rounded), then local perturbations
around the answer at shrinking scales (`LOCAL_SCALES` of the box, `LOCAL_TRIES` each, repeated while
they improve it). Only the utility GP is fitted where an exact model exists (a full fit, as a chain
round's, to the chain's successful evaluations); otherwise the privacy GP's mean ranks candidates
and the oracle is called in rank order. One seed rule serves the `query` rule and `dptradeoff front`
(`query_rng`): the same question on the same chain gets the same answer.

An answer carries a *predictive interval for one new training* of the suggestion at a nominal level
(`INTERVAL_LEVEL`, 90 %): where one more training of the point will land, replication noise
included (`FrontQuery.interval`, its formula there). The GP fits the mean of R replications, so
its own sd (`predicted_sd`, latent + the noise of an R-replication mean) is too narrow for a single
training wherever that training's noise dominates (a user's answer of 0.800 +- 0.006 whose ten
retrainings gave 0.793 +- 0.024). The interval is the GP's, not a guarantee:
`benchmarks/query_coverage.py` measures its coverage (default adult chains, 37 answers: 0.90 of
single retrainings inside at nominal 0.90, against 0.80 inside +- z_0.95 predicted_sd).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from ..pareto import pareto_mask
from ..problems.evaluate import epsilon as exact_epsilon, training_rows
from ..problems.oracle import Data
from ..problems.problem import Problem
from ..problems.tables import succeeded
from ..seeds import rng as derived_rng
from . import exact_privacy
from .gp import Posterior
from .propose import Settings, Surrogates, fit_surrogates, gp_rows
from .replication import REACH_LEVEL, ReplicationNoise, single_runs
from .support import best_evaluated, with_support
from .transforms import ERROR_RANGE, error_from_gp, error_to_gp

SEARCH_FACTOR = 4
LOCAL_SCALES = (0.1, 0.03, 0.01, 0.003, 0.001)
LOCAL_TRIES = 500
LOCAL_REPEATS = 4              # per scale, while a repeat improves the answer
RANKING_MARGIN = 0.05          # a candidate whose ranking epsilon exceeds the target by more is not checked
EXACT_CHECKS = 64              # oracle calls per step of the search, at most
INTERVAL_LEVEL = 0.9           # nominal level of an answer's predictive interval for one training
INTERVAL_LABEL = "predictive interval for one training (GP, not a guarantee)"
MIN_CALIBRATION = 5            # trainings the acquisition chose, at least, for the one-step-ahead inflation
EDGE = 0.01                    # a share of the GPs' input box: an answer this near a domain bound is at its edge
INWARD = 0.1                   # a share of the box: how far inside the edge test looks (`FrontQuery.edge`)
ANSWER_TRAININGS = 6           # an answer rests on at least this many trainings of its own point (bo.query_round)
NEAR_BUDGET = 4                # an epsilon question's search looks in [target / NEAR_BUDGET, target]
OWN_TRAININGS = ANSWER_TRAININGS   # a point with this many trainings of its own (settled) has its interval from them
REACH_TRAININGS = 3            # ... and from this many its probability of reaching a target (conservative at few)
OWN_SOURCE = "its own {n} trainings (Student-t predictive, spread pooled with its neighbours; not a guarantee)"
GP_SOURCE = "the GP (not a guarantee)"


@dataclass
class Answer:
    question: str               # e.g. "epsilon <= 1"
    point: dict | None          # None: no candidate met the constraint
    epsilon: float = math.nan   # exact, from the problem's privacy oracle
    predicted_utility: float = math.nan
    # sd of the GP's prediction of an R-replication MEAN's utility (latent + the GP's observation noise,
    # which it fitted to means of R trainings): NOT the spread of one training; see interval_*
    predicted_sd: float = math.nan
    nearest: dict = field(default_factory=dict)         # the evaluated point nearest the suggestion
    best_evaluated: dict = field(default_factory=dict)  # the evaluated point that best meets the constraint
    exact_epsilons: int = 0     # how many times the privacy oracle ran
    # the predictive interval for ONE new training's utility at `interval_level` (FrontQuery.interval;
    # GP, not a guarantee) and that training's predicted sd
    interval_low: float = math.nan
    interval_high: float = math.nan
    interval_level: float = INTERVAL_LEVEL
    single_sd: float = math.nan
    trainings: list = field(default_factory=list)   # the chain's single trainings of the point (empty: not trained)
    edge: str = ""              # the hyperparameters at a bound of the domain ("" : none)
    # utility answers: the predicted probability that ONE new training reaches the target (GP, not a guarantee)
    # and the level asked of it; below the level where no trained point reaches it (the best there is)
    reach_probability: float = math.nan
    reach_level: float = math.nan
    # what the probability and the interval rest on: OWN_SOURCE (the point's own trainings) or GP_SOURCE
    probability_source: str = GP_SOURCE

    @property
    def trained(self) -> bool:
        return bool(self.trainings)

    def interval_text(self) -> str:
        """The interval for a reader: its bounds, its level and what it is."""
        return f"[{self.interval_low:.4f}, {self.interval_high:.4f}], the {self.interval_level:.0%} {INTERVAL_LABEL}"

    def row(self) -> dict:
        """One flat row: the suggestion, then nearest_* and evaluated_* columns."""
        out = {"question": self.question, **(self.point or {}), "epsilon": self.epsilon,
               "predicted_utility": self.predicted_utility, "predicted_sd": self.predicted_sd,
               "single_sd": self.single_sd, "interval_low": self.interval_low, "interval_high": self.interval_high,
               "interval_level": self.interval_level, "exact_epsilons": self.exact_epsilons, "trained": self.trained,
               "trainings": list(self.trainings), "edge": self.edge, "reach_probability": self.reach_probability,
               "reach_level": self.reach_level, "probability_source": self.probability_source}
        out.update({f"nearest_{k}": v for k, v in self.nearest.items()})
        out.update({f"evaluated_{k}": v for k, v in self.best_evaluated.items()})
        return out


LISTED_TRAININGS = 12   # an answer's trainings printed one by one, at most (fresh ones run to thousands)


def trainings_text(values) -> str:
    """An answer's single trainings for a reader: each, or the first LISTED_TRAININGS and how many in all."""
    values = [float(u) for u in values]
    shown = ", ".join(f"{u:.4f}" for u in values[:LISTED_TRAININGS])
    return shown if len(values) <= LISTED_TRAININGS else f"{shown}, ... ({len(values)} in all, mean {np.mean(values):.4f})"


def rows_at(evals: pd.DataFrame, names: list[str], point) -> np.ndarray:
    """Which rows of `evals` are trainings of hyperparameter `point` (an array in `names` order; to 1e-9)."""
    return np.all(np.isclose(evals[names].to_numpy(float), np.asarray(point, dtype=float)[None, :], rtol=1e-9,
                             atol=0), axis=1)


def utility_moments(mean: np.ndarray, var: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and sd of utility = 1 - error when the GP's latent logit(error) is N(mean, var)
    (Gauss-Hermite quadrature, 40 nodes)."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(40)
    weights = weights / weights.sum()
    latent = np.asarray(mean)[..., None] + np.sqrt(np.maximum(var, 0.0))[..., None] * nodes
    utility = 1.0 - error_from_gp(latent)
    first = (utility * weights).sum(-1)
    second = (utility**2 * weights).sum(-1)
    return first, np.sqrt(np.maximum(second - first**2, 0.0))


def logit_interval(mean, var, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The central `level` interval of utility = 1 - sigmoid(Z), Z ~ N(mean, var) (its quantiles: the
    transform is monotone)."""
    half = stats.norm.ppf(0.5 + level / 2) * np.sqrt(np.maximum(var, 0.0))
    return 1.0 - error_from_gp(np.asarray(mean) + half), 1.0 - error_from_gp(np.asarray(mean) - half)


def front(problem: Problem, evals: pd.DataFrame) -> pd.DataFrame:
    """The evaluated points no other dominates in (epsilon, error), by increasing epsilon, each with what its own
    trainings support (`support.with_support`)."""
    ok = with_support(succeeded(evals))
    mask = pareto_mask(ok[["epsilon", "error"]].to_numpy(float))
    columns = ["epsilon", "utility", "n_trainings", "utility_se", "utility_supported", "utility_min", "utility_max",
               *problem.names, "method", "index"]
    return ok[mask].sort_values("epsilon")[[c for c in columns if c in ok.columns]].reset_index(drop=True)


def query_rng(seed: int, problem: str, kind: str, target: float, run: int) -> np.random.Generator:
    """The Generator of a question (`kind` eps or utility, `target`) about run `run`'s chain."""
    return derived_rng(seed, problem, "query", kind, target, run)


class FrontQuery:
    """The GPs of one finished chain and the exact privacy oracle, ready for questions."""

    def __init__(self, problem: Problem, evals: pd.DataFrame, data: Data | None, settings: Settings,
                 rng: np.random.Generator):
        self.problem, self.data, self.settings, self.rng = problem, data, settings, rng
        self.evals = succeeded(evals).reset_index(drop=True)
        if len(self.evals) < 2:
            raise ValueError(f"{problem.name}: {len(self.evals)} successful evaluations; a GP needs at least 2")
        initial = int((self.evals["method"] != "dpareto").sum()) if "method" in self.evals else None
        n = training_rows(data)
        from .transforms import InputScaler

        sample = InputScaler(problem).from_unit(np.random.default_rng(0).random((16, len(problem.domain))))
        self.model = exact_privacy.for_problem(problem, n, settings.candidates, sample)
        self.surrogates: Surrogates = fit_surrogates(problem, self.evals, settings, rng, initial=initial or None,
                                                     fit_privacy=self.model is None or self.model.needs_gp)
        self.scaler = self.surrogates.scaler
        self.ranking = (self.model.with_gp(self.surrogates.privacy, self.scaler) if self.model is not None
                        else exact_privacy.GPMean(self.surrogates.privacy, self.scaler))
        self.observed = self.scaler.to_unit(self.evals[problem.names].to_numpy(float))
        self._epsilons: dict[tuple, float] = {}
        self.oracle_calls = 0   # the privacy oracle's runs (the trained points' epsilons are the evaluations')
        gp = self.surrogates.utility
        repeats = [len(r) for r in self.evals["utility_runs"]] if "utility_runs" in self.evals else [1]
        self.repeats = max(1, int(np.median(repeats)))    # R of the means the GP was fitted to
        self.replication = ReplicationNoise(self.observed, self.evals, gp.lengthscales,
                                            self.repeats * gp.y_std**2 * gp.noise)
        self._inflation: dict[float, float] = {}

    # -- pieces -------------------------------------------------------------------------------
    def _points(self, unit: np.ndarray) -> np.ndarray:
        return self.scaler.from_unit(unit)

    def as_dict(self, point: np.ndarray) -> dict:
        return {p.name: (int(v) if p.integer else float(v)) for p, v in zip(self.problem.domain, point)}

    def epsilon(self, point: np.ndarray) -> float:
        """The privacy oracle's own epsilon (cached per point)."""
        key = tuple(np.round(point, 12))
        if key not in self._epsilons:
            self._epsilons[key] = exact_epsilon(self.problem, self.as_dict(point), training_rows(self.data))
            self.oracle_calls += 1
        return self._epsilons[key]

    def predict(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The mean and sd of the utility of a new mean of R trainings (the GP's latent uncertainty plus
        its learned observation noise, fitted to such means) at hyperparameter points: what answers are
        ranked by. Not the spread of one training: `interval`."""
        mean, var = self.surrogates.utility.predict(self.scaler.to_unit(points))
        gp = self.surrogates.utility
        return utility_moments(mean, var + gp.y_std**2 * gp.noise)

    # -- the predictive interval for one training -------------------------------------------------
    @property
    def misfit(self) -> float:
        """The part of the GP's observation noise (logit units) that is not replication noise: with a
        learned noise (`utility_noise: learned`, fitted to R-replication means) what exceeds the pooled
        replication variance / R, never negative; with `replications`, the learned floor itself."""
        gp = self.surrogates.utility
        learned = gp.y_std**2 * gp.noise
        if not self.replication.measured:   # s^2(x) is then R x this noise: all of it counted as replication
            return 0.0
        if self.settings.utility_noise == "replications":
            return learned
        return max(learned - self.replication.pooled / self.repeats, 0.0)

    def single_training(self, points: np.ndarray, inflation: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
        """The GP's latent mean at hyperparameter `points` and the variance of ONE new training's
        logit(error) there: inflation^2 (latent variance + misfit + s^2(x)), s^2 `ReplicationNoise`'s."""
        unit = self.scaler.to_unit(points)
        mean, var = self.surrogates.utility.predict(unit)
        offset, s2 = self.replication.moments(unit, mean)
        return mean + offset, inflation**2 * (var + self.misfit + s2)

    def inflation(self, level: float = INTERVAL_LEVEL) -> float:
        """The factor c >= 1 on the predictive sd for its `level` intervals to hold where answers are: at
        points chosen for looking good. Split conformal prediction with normalised scores, the calibration
        set one step ahead over the chain: each training the acquisition chose (rows of `method` dpareto,
        at least `MIN_CALIBRATION` of them; else every training after the first 3) is predicted by the GP
        (the chain's hyperparameters) conditioned on the trainings before it, with s^2(x) from those too;
        each of its single replications u scores |u - m| / (z sd), sd the predictive sd at c = 1 and z the
        normal quantile of `level`; c is the ceil((n + 1) level)-th smallest of the n scores, at least 1
        (the calibration set is a few dozen replications where the acquisition looked: it may widen the
        GP's interval, never narrow it).
        Why one step ahead on the acquisition's trainings: an answer is the GP's best-looking point under
        a constraint, where its mean is optimistic (the winner's curse), and so was every point the
        acquisition chose, before it was trained; leave-one-out residuals over the whole chain (measured,
        not kept) are mostly at points the GP did not select, and widened less than the misses needed.
        Why the whole variance is scaled (not only the GP's part): where one training's noise dominates,
        a factor on the small latent variance alone is set by the tail of a few noisy replications (median
        c 2.6 and 4.3 over the synthetic chains of tests/test_query_intervals.py, 1.1 and 1.3 scaling the
        whole variance)."""
        if level not in self._inflation:
            self._inflation[level] = self._one_step_ahead(level)
        return self._inflation[level]

    def _one_step_ahead(self, level: float) -> float:
        gp = self.surrogates.utility
        rows = gp_rows(self.evals, self.settings.gp_points)     # the GP's rows; labels: positions in self.evals
        if len(rows) != len(gp.x) or "index" not in self.evals:
            return 1.0
        trainings = self.evals["index"].to_numpy()
        order = trainings[rows.index.to_numpy()]
        runs = single_runs(rows)
        chosen = np.unique(self.evals.loc[self.evals["method"] == "dpareto", "index"]) if "method" in self.evals else []
        if len(chosen) < MIN_CALIBRATION:
            chosen = np.unique(trainings)[3:]
        z2 = stats.norm.ppf(0.5 + level / 2) ** 2
        needed = []
        for g in chosen:
            before = order < g
            own = np.flatnonzero(order == g)
            if before.sum() < 3 or not len(own) or not len(runs[own[-1]]):
                continue
            own = own[-1]                                     # the training's own point (a trace's last row)
            fixed = None if gp.fixed_noise is None else gp.fixed_noise[before]
            earlier = Posterior(gp.x[before], gp.y[before], gp.lengthscales, gp.variance, gp.noise, gp.y_mean,
                                gp.y_std, fixed)
            mean, var = earlier.predict(gp.x[own][None])
            offset, s2 = (v[0] for v in self.replication.moments(gp.x[own][None], mean, exclude=trainings >= g))
            needed.extend(((runs[own] - mean[0] - offset) ** 2 / (z2 * (var[0] + self.misfit + s2))).tolist())
        if not needed:
            return 1.0
        rank = min(math.ceil((len(needed) + 1) * level), len(needed))   # the conformal quantile's rank
        return float(np.sqrt(max(1.0, np.sort(needed)[rank - 1])))

    def interval(self, points: np.ndarray, level: float = INTERVAL_LEVEL) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The central `level` predictive interval for ONE new training's utility at hyperparameter
        `points`, and that training's predicted sd (GP, not a guarantee). In the GP's logit(error)
        space one training is N(m(x) + d(x), v(x)) with
            v(x) = c^2 (var_f(x) + misfit + s^2(x)),
        m and var_f the GP's latent mean and variance, d(x) where one training lands against the logit of a
        mean error (0 for symmetric noise; `ReplicationNoise.moments`), misfit its observation noise beyond
        replication noise (`misfit`), s^2(x) one training's replication variance near x (`ReplicationNoise`),
        c the one-step-ahead conformal factor (`inflation`); the bounds are N's quantiles mapped through
        utility = 1 - sigmoid (exact, the map is monotone, so the interval is not symmetric). The GP sees
        errors clipped to `ERROR_RANGE` ([1e-4, 1 - 1e-4]): a bound beyond a clip is moved to utility 1 (or 0),
        all the GP can say there."""
        mean, var = self.single_training(points, self.inflation(level))
        low, high = logit_interval(mean, var, level)
        # the GP sees errors clipped to ERROR_RANGE: an interval reaching a clip reaches everything beyond it
        half = stats.norm.ppf(0.5 + level / 2) * np.sqrt(np.maximum(var, 0.0))
        floor, ceiling = error_to_gp(np.array(ERROR_RANGE))
        low = np.where(mean + half >= ceiling, 0.0, low)
        high = np.where(mean - half <= floor, 1.0, high)
        return low, high, utility_moments(mean, var)[1]

    def reach_probability(self, points: np.ndarray, target: float, level: float = REACH_LEVEL) -> np.ndarray:
        """The predicted probability that ONE new training at each of `points` reaches utility `target` (GP, not a
        guarantee): P(Z <= logit(1 - target)) for the one-training law of `interval`, Z ~ N(m + d, v), its
        conformal factor the one calibrated for the central interval whose lower end is the one-sided `level`
        bound (level 2 x `level` - 1), so that a point reaches the target at `level` exactly where that
        interval's lower end is at or above it."""
        mean, var = self.single_training(points, self.inflation(2 * level - 1))
        goal = float(error_to_gp(np.array([1.0 - target]))[0])
        return stats.norm.cdf((goal - mean) / np.sqrt(np.maximum(var, 1e-300)))

    # -- a trained point's own trainings ------------------------------------------------------------
    def own_law(self, point: np.ndarray, least: int = OWN_TRAININGS) -> tuple[float, float, float] | None:
        """(centre, scale, degrees of freedom) of the Student-t predictive law of ONE new training's logit(error) at a
        trained `point` from its own trainings y_1..y_n (n >= `least`; else None):
            centre = mean(y),  scale = s sqrt(1 + 1/n),
        with n >= OWN_TRAININGS (a settled point) s the trainings' own sample sd and n - 1 degrees of freedom: the
        classical predictive law of one more draw of a normal of unknown mean and variance, which uses nothing of
        other points; with fewer, s^2 the replication variance pooled with its neighbours' (`ReplicationNoise`, its
        own rows weighted by their n - 1 degrees of freedom) and the degrees of freedom that rests on (a t of 2 is
        too wide to establish any probability from 3 trainings). Why not the GP's mean and noise: the GP smooths the
        point towards its neighbours, and where some part of the domain has heavy tails its noise, learned once for
        the whole box, widens every point's law (pooling carries some of that too: a point's six trainings within
        0.0003 of 0.9968 got P(>= 0.995) 0.90 pooled, 1.00 from its own; tests/test_question_search.py)."""
        runs = np.asarray(self.trainings_at(point), dtype=float)
        if len(runs) < max(least, 2):
            return None
        logits = error_to_gp(1.0 - runs)
        if len(runs) >= OWN_TRAININGS:
            return (float(logits.mean()), float(np.sqrt(max(logits.var(ddof=1), 1e-12) * (1 + 1 / len(runs)))),
                    float(len(runs) - 1))
        # fewer: the spread pooled with its neighbours' (`ReplicationNoise`), whose degrees of freedom it rests on
        unit, centre = self.scaler.to_unit(point[None, :]), np.array([logits.mean()])
        s2 = self.replication.at(unit, centre)[0]
        return (float(centre[0]), float(np.sqrt(max(s2, 1e-12) * (1 + 1 / len(runs)))),
                float(self.replication.dof(unit, centre)[0]))

    def point_reach(self, point: np.ndarray, target: float, least: int = REACH_TRAININGS) -> tuple[float, str]:
        """(the probability that ONE new training of `point` reaches `target`, what it rests on): its own trainings'
        law (`own_law`) where it has `least` of them, else the GP's (`reach_probability`)."""
        law = self.own_law(point, least)
        if law is None:
            return float(self.reach_probability(point[None, :], target)[0]), GP_SOURCE
        goal = float(error_to_gp(np.array([1.0 - target]))[0])
        centre, scale, dof = law
        return float(stats.t.cdf((goal - centre) / scale, dof)), OWN_SOURCE.format(n=len(self.trainings_at(point)))

    def point_interval(self, point: np.ndarray, level: float = INTERVAL_LEVEL) -> tuple[float, float, float, str]:
        """(low, high, sd, source): the central `level` interval for ONE new training's utility at `point` and its sd,
        from the point's own trainings where it has OWN_TRAININGS of them (`own_law`), else the GP's (`interval`)."""
        law = self.own_law(point)
        if law is None:
            low, high, sd = self.interval(point[None, :], level)
            return float(low[0]), float(high[0]), float(sd[0]), GP_SOURCE
        centre, scale, dof = law
        half = stats.t.ppf(0.5 + level / 2, dof) * scale
        sd = utility_moments(np.array([centre]), np.array([scale**2]))[1][0]   # the t's normal approximation
        return (float(1.0 - error_from_gp(centre + half)), float(1.0 - error_from_gp(centre - half)), float(sd),
                OWN_SOURCE.format(n=len(self.trainings_at(point))))

    def _candidates(self) -> np.ndarray:
        box = self.scaler.upper - self.scaler.lower
        unit = self.scaler.lower + self.rng.random((SEARCH_FACTOR * self.settings.candidates, len(box))) * box
        return np.unique(self._points(unit), axis=0)

    def _around(self, point: np.ndarray, scale: float) -> np.ndarray:
        box = self.scaler.upper - self.scaler.lower
        unit = self.scaler.to_unit(point[None, :]) + self.rng.normal(0.0, scale, (LOCAL_TRIES, len(box))) * box
        return self._points(np.clip(unit, self.scaler.lower, self.scaler.upper))

    def _answer(self, question: str, point: np.ndarray | None, best_evaluated: pd.DataFrame,
                reach_target: float | None = None) -> Answer:
        evaluated = {}
        if len(best_evaluated):
            row = best_evaluated.iloc[0]
            evaluated = {k: row[k] for k in [*self.problem.names, "epsilon", "utility", "n_trainings", "utility_se",
                                             "utility_supported", "index"]}
        if point is None:
            return Answer(question, None, best_evaluated=evaluated, exact_epsilons=self.oracle_calls)
        utility, sd = self.predict(point[None, :])
        distances = np.linalg.norm(self.observed - self.scaler.to_unit(point[None, :]), axis=1)
        near = self.evals.iloc[int(np.argmin(distances))]
        nearest = {k: near[k] for k in [*self.problem.names, "epsilon", "utility", "index"]}
        low, high, single, source = self.point_interval(point)
        answer = Answer(question, self.as_dict(point), self.epsilon(point), float(utility[0]), float(sd[0]),
                        nearest, evaluated, self.oracle_calls, low, high, INTERVAL_LEVEL, single,
                        self.trainings_at(point), self.edge(point, reach_target), probability_source=source)
        if reach_target is not None:
            answer.reach_probability, reach_source = self.point_reach(point, reach_target)
            answer.reach_level = REACH_LEVEL
            if reach_source != source:   # 3-5 trainings: its probability from them, its interval still the GP's
                answer.probability_source = f"probability: {reach_source}; interval: {source}"
        return answer

    def trainings_at(self, point: np.ndarray) -> list[float]:
        """The single trainings of `point` in the chain (each row's `utility_runs`; a trace row's are those of its
        epoch), [] when it was not trained."""
        at = rows_at(self.evals, self.problem.names, point)
        if not at.any():
            return []
        rows = self.evals[at]
        runs = rows["utility_runs"] if "utility_runs" in rows else [[u] for u in rows["utility"]]
        return [float(u) for r in runs for u in r]

    def edge(self, point: np.ndarray, reach_target: float | None = None) -> str:
        """Which hyperparameters of `point` lie at a bound of the domain (within EDGE of the GPs' input box) where the
        bound binds: a point INWARD of the box further inside along that coordinate is predicted worse for the
        question (lower utility; for a utility question, `reach_target`, a smaller chance of reaching it). Only
        there may a wider domain give a better answer; "" : none binds."""
        unit = self.scaler.to_unit(point[None, :])[0]
        box = self.scaler.upper - self.scaler.lower
        parts = []
        for j, (p, u, lo, width, value) in enumerate(zip(self.problem.domain, unit, self.scaler.lower, box, point)):
            if width <= 0:
                continue
            at_low, at_high = u - lo <= EDGE * width, lo + width - u <= EDGE * width
            if not (at_low or at_high):
                continue
            inside = unit.copy()
            inside[j] += (INWARD if at_low else -INWARD) * width
            pair = self._points(np.stack([unit, inside]))
            if reach_target is None:
                better_inside = self.predict(pair)[0]
            else:
                better_inside = self.reach_probability(pair, reach_target)
            if better_inside[1] >= better_inside[0]:
                continue
            parts.append(f"{p.name} = {value:g} is its {'lower' if at_low else 'upper'} bound "
                         f"{p.low if at_low else p.high:g}")
        return "; ".join(parts)

    def _trained(self) -> tuple[np.ndarray, np.ndarray]:
        """The chain's trained points (every row: a trace row is a training of its epoch), each once, and their
        epsilons as the privacy oracle gave them to the evaluations (those are cached as its own)."""
        points, first = np.unique(self.evals[self.problem.names].to_numpy(float), axis=0, return_index=True)
        epsilons = self.evals["epsilon"].to_numpy(float)[first]
        for point, epsilon in zip(points, epsilons):
            self._epsilons.setdefault(tuple(np.round(point, 12)), float(epsilon))
        return points, epsilons

    def _refine(self, best: np.ndarray, step) -> np.ndarray:
        """Local perturbations around `best` at each of LOCAL_SCALES, repeated while they improve it;
        `step(points, best)` returns the better point among `points` or None."""
        for scale in LOCAL_SCALES:
            for _ in range(LOCAL_REPEATS):
                better = step(self._around(best, scale), best)
                if better is None:
                    break
                best = better
        return best

    # -- questions ------------------------------------------------------------------------------
    def for_epsilon(self, target: float, search: bool = False) -> Answer:
        """Maximise predicted utility subject to the exact epsilon <= target over the chain's trained points, or
        (`search`) over the domain and the trained points (a trained point wins ties)."""
        def best_feasible(points: np.ndarray, floor: float) -> np.ndarray | None:
            """The point of highest predicted utility above `floor` whose exact epsilon is <= target."""
            utility, _ = self.predict(points)
            order = np.argsort(-utility)
            order = order[utility[order] > floor]
            ranked = self.ranking.ranking(points[order])
            if self.ranking.ranking_is_exact:   # the ranking epsilons are the oracle's to within a few per cent
                order = order[ranked <= target * (1 + RANKING_MARGIN)]
            else:   # the privacy GP's prediction: the points it predicts within the target are checked first
                order = np.concatenate([order[ranked <= target], order[ranked > target]])
            for i in order[:EXACT_CHECKS]:
                if self.epsilon(points[i]) <= target:
                    return points[i]
            return None

        best = None
        if search:
            best = best_feasible(self._candidates(), -np.inf)
            if best is not None:
                best = self._refine(best, lambda points, current: best_feasible(points, float(self.predict(current[None])[0][0])))
        # a trained point as good by the GP wins: it comes with its trainings
        points, epsilons = self._trained()
        feasible = epsilons <= target
        points, epsilons = points[feasible], epsilons[feasible]
        if len(points):
            utility = self.predict(points)[0]
            i = int(np.argmax(utility))
            if best is None or utility[i] >= float(self.predict(best[None])[0][0]):
                best = self.near_the_budget(points, epsilons, points[i], target)
        return self._answer(f"epsilon <= {target:g}", best, best_evaluated(self.evals, "eps", target))

    def measured(self, point: np.ndarray) -> float:
        """The mean of `point`'s own trainings (NaN: none)."""
        runs = self.trainings_at(point)
        return float(np.mean(runs)) if runs else math.nan

    def near_the_budget(self, points: np.ndarray, epsilons: np.ndarray, best: np.ndarray, target: float) -> np.ndarray:
        """An epsilon answer far below its budget (exact epsilon < target / NEAR_BUDGET) stands only if measured at
        least as well as every trained point near the budget (epsilon in [target / NEAR_BUDGET, target]): else the
        best measured of those. Why: spending less privacy rarely buys utility, and a GP that has seen little near
        the budget may rank a point of far less noise below one of its lucky neighbours."""
        if self.epsilon(best) >= target / NEAR_BUDGET:
            return best
        near = np.flatnonzero(epsilons >= target / NEAR_BUDGET)
        if not len(near):
            return best
        means = np.array([self.measured(points[i]) for i in near])
        j = int(np.nanargmax(means))
        return points[near[j]] if means[j] > self.measured(best) else best

    def for_utility(self, target: float, search: bool = False) -> Answer:
        """Minimise the exact epsilon subject to ONE new training reaching the target with probability >= REACH_LEVEL
        (`reach_probability`), over the chain's trained points, or (`search`) over the domain and the trained points
        (a trained point wins ties). Not the mean: a point whose mean reaches the target misses it in about half of
        its trainings. Where no point reaches the level but a trained point has met the target in a training, the
        answer is the trained point most likely to reach it, its probability (below the level) beside it: never no
        answer while a training has met the target."""
        def most_private(points: np.ndarray, ceiling: float) -> np.ndarray | None:
            """The point of smallest exact epsilon below `ceiling` among those whose one training reaches the target."""
            feasible = np.flatnonzero(self.reach_probability(points, target) >= REACH_LEVEL)
            ranked = feasible[np.argsort(self.ranking.ranking(points[feasible]))][:EXACT_CHECKS]
            if not len(ranked):
                return None
            exact = np.array([self.epsilon(points[i]) for i in ranked])
            best = int(np.argmin(exact))
            return points[ranked[best]] if exact[best] < ceiling else None

        best = None
        if search:
            best = most_private(self._candidates(), np.inf)
            if best is not None:
                best = self._refine(best, lambda points, current: most_private(points, self.epsilon(current)))
        points, epsilons = self._trained()
        probability = self.reach_probability(points, target) if len(points) else np.zeros(0)
        for i, point in enumerate(points):     # its own trainings' where it has enough (`point_reach`)
            if len(self.trainings_at(point)) >= REACH_TRAININGS:
                probability[i] = self.point_reach(point, target)[0]
        reaching = probability >= REACH_LEVEL
        if reaching.any():
            i = np.flatnonzero(reaching)[int(np.argmin(epsilons[reaching]))]
            if best is None or epsilons[i] <= self.epsilon(best):
                best = points[i]
        if best is None:   # none at the level: the trained point likeliest to reach the target, if a training met it
            met = np.array([max(self.trainings_at(p), default=-np.inf) >= target for p in points], dtype=bool)
            if met.any():
                candidates = np.flatnonzero(met)
                best = points[candidates[np.lexsort((epsilons[candidates], -probability[candidates]))[0]]]
        return self._answer(f"utility >= {target:g}", best, best_evaluated(self.evals, "utility", target),
                            reach_target=target)
