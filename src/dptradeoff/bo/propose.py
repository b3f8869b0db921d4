"""The DPareto proposal step: fit both GPs to every evaluation so far, maximise HVPoI, return q points.

q = 1 is the paper's sequential algorithm. For q > 1 (batch proposals, beyond the paper) each
chosen point is added to both GPs as a fantasised observation at its predicted mean (the
"Kriging believer"), hyperparameters kept, and HVPoI is maximised again: the q points can then
be evaluated in parallel.

Acquisition maximisation (as in the original code): the best of N uniformly random candidates
in the GPs' input box (`dpareto.inputs`, see transforms), then L-BFGS-B from it; integer
hyperparameters are rounded; a point equal to one already evaluated or already in the batch is
replaced by the next-best candidate.

GP hyperparameters (ML-II): every `Settings.refit_every`-th round (and whenever no previous
round's hyperparameters are given) both GPs are fitted with `gp_restarts` starts, the first
from the previous round's hyperparameters as GPflowOpt did; in the rounds between, one
L-BFGS-B run refines the previous round's hyperparameters, which one new observation moves
little (~15 likelihood evaluations instead of ~400), and stops at a looser relative tolerance
(`REFINEMENT_TOLERANCE`). refit_every = 1 is the paper's behaviour.
The hyperparameters a round ends with are returned (`GPState`) for the next round.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize

from ..problems.problem import Problem
from ..stats.front_metrics import Region
from ..stats.cost import is_traced
from ..stats.region import RegionRule
from . import exact_privacy, gp, levels, resume
from .answer_rounds import choose_for_query, query_of_round
from .ehvi import ErrorRegionEHVI, RegionEHVI
from .hvpoi import adaptive_reference, added_hypervolume, improvement_probability
from ..pareto import nondominated_cells, pareto_front
from .transforms import (ERROR_RANGE, INPUTS, InitialMaxScaler, InputScaler, error_to_gp, input_scaler, objectives_from_gp,
                         objectives_to_gp, privacy_to_gp)

log = logging.getLogger(__name__)

# The paper's anti-ideal point (epsilon 10, error 1) in GP space; error 1 maps to logit(0.999).
FIXED_REFERENCE = np.array([float(privacy_to_gp(10.0)), float(error_to_gp(0.999))])
REFERENCES = ("fixed", "adaptive")
PRIVACY_MODELS = ("gp", "exact")
ACQUISITIONS = ("hvpoi", "hvpoi-region", "ehvi", "ehvi-logit")
UTILITY_CAPS = ("none", "floor")
# A refinement stops when an L-BFGS-B iteration lowers the negative log marginal likelihood by less
# than this fraction of it (~1e-5 nats at the 100-600 nats of 256 points; scipy's default, 2.2e-9,
# which full refits keep): half the likelihood evaluations of a refinement round (29 -> 14, median
# over 14 rounds at 256 points), hyperparameters equal to within a likelihood ratio of 1.0001.
REFINEMENT_TOLERANCE = 1e-7


@dataclass(frozen=True)
class Settings:
    candidates: int = 5000
    gp_restarts: int = 3
    reference: str = "adaptive"  # GPflowOpt's, which the published runs used (docs/dpareto.md: fixed vs adaptive)
    refit_every: int = 1       # rounds between full ML-II restarts (1: every round, as the paper)
    full_refits_first: int = 0  # full ML-II restarts in each of the first this many rounds too (few points: cheap)
    inputs: str = "log-unit-cube"  # the GPs' input geometry (transforms.INPUTS)
    privacy_model: str = "gp"      # gp: learn epsilon with a GP (the paper); exact: compute it (exact_privacy)
    acquisition: str = "hvpoi"     # hvpoi (the paper), hvpoi-region, ehvi (region EHVI: bo/ehvi.py)
    region: tuple[float, float] = (0.01, 10.0)   # the acquisition's epsilon range (statistics.region)
    utility_noise: str = "learned"  # learned: one noise variance; replications: each point's own (+ a learned floor)
    utility_cap: str = "none"       # floor: errors worse than the utility floor enter the utility GP as the floor
    floor_margin: float = 0.0       # region acquisitions: improvement counts only below (floor - margin) in error
    gp_points: int = 256            # the most evaluation rows the GPs see: every training's own point, then trace points
    cost_aware: bool = False        # region acquisitions: the acquisition per epoch of training (oracles with a trace axis)
    resume: bool = False            # traced chains: also propose continuing a training (bo.resume), by gain per cost
    path_value: bool = False        # traced chains, hvpoi-region: a training is worth the front its whole path adds
    query_every: int = 4            # with declared queries, every this-many-th round steers towards one (0: never)
    question_seconds: float = 10.0  # each declared question's seconds (bo.timed_questions) ...
    question_trainings: int = 200   # ... at least this many trainings' worth of its measured cost
    question_tiers: dict | None = None   # pinned cost tiers of every question (a replay); None: measured
    batch_rounds: bool = True       # a round trains a batch where a point is cheaper than a proposal (bo.batch_rounds)
    search: str = "box"             # levels: candidates placed on epsilon levels, utility over epsilon (bo.levels)

    @classmethod
    def from_config(cls, dpareto: dict, statistics: dict | None = None) -> "Settings":
        """The settings of the config's `dpareto` section (the region from `statistics.region`)."""
        region = tuple(float(v) for v in (statistics or {}).get("region", cls.region))
        return cls(candidates=dpareto["candidates"], gp_restarts=dpareto["gp_restarts"], reference=dpareto["reference"],
                   refit_every=dpareto["gp_refit_every"], inputs=dpareto["inputs"],
                   full_refits_first=dpareto.get("gp_full_refits_first", cls.full_refits_first),
                   privacy_model=dpareto.get("privacy_model", cls.privacy_model),
                   acquisition=dpareto.get("acquisition", cls.acquisition), region=region,
                   utility_noise=dpareto.get("utility_noise", cls.utility_noise),
                   utility_cap=dpareto.get("utility_cap", cls.utility_cap),
                   floor_margin=float(dpareto.get("floor_margin", cls.floor_margin)),
                   gp_points=int(dpareto.get("gp_points", cls.gp_points)),
                   cost_aware=bool(dpareto.get("cost_aware", cls.cost_aware)),
                   resume=bool(dpareto.get("resume", cls.resume)) and bool(dpareto.get("traces", False)),
                   path_value=bool(dpareto.get("path_value", cls.path_value)) and bool(dpareto.get("traces", False)),
                   query_every=int(dpareto.get("query_every", cls.query_every)),
                   question_trainings=int(dpareto.get("question_trainings", cls.question_trainings)),
                   question_seconds=float(dpareto.get("question_seconds", cls.question_seconds) or 0.0),
                   question_tiers=dpareto.get("question_tiers"),
                   batch_rounds=bool(dpareto.get("batch_rounds", cls.batch_rounds)),
                   search=dpareto.get("search", cls.search))

    @property
    def paper(self) -> bool:
        """The paper's algorithm: both objectives learned by GPs, HVPoI."""
        return (self.privacy_model == "gp" and self.acquisition == "hvpoi" and self.utility_noise == "learned"
                and self.utility_cap == "none")

    def full_refit(self, round_index: int) -> bool:
        return round_index < self.full_refits_first or round_index % self.refit_every == 0


@dataclass(frozen=True)
class Context:
    """What a round knows of the problem beyond the evaluations: the training rows its epsilon is computed
    for (None: the oracle's own data), the utility floor as an error (1: none stated), its region rule
    (None: `Settings.region`, fixed) and its declared queries ((kind, target): "eps" or "utility"), which
    steer every `Settings.query_every`-th round."""
    n_train: int | None
    error_floor: float
    region: RegionRule | None = None
    queries: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class GPState:
    """The hyperparameters both GPs ended a round with: where the next round's ML-II starts."""
    privacy: gp.Hyperparameters | None    # None: no privacy GP (epsilon computed exactly)
    utility: gp.Hyperparameters

    def as_dict(self) -> dict:
        return {"privacy": self.privacy.as_dict() if self.privacy else None, "utility": self.utility.as_dict()}

    @classmethod
    def from_dict(cls, values: dict) -> "GPState":
        privacy = values.get("privacy")
        return cls(gp.Hyperparameters.from_dict(privacy) if privacy else None,
                   gp.Hyperparameters.from_dict(values["utility"]))


@dataclass
class Proposal:
    points: pd.DataFrame       # q rows: the hyperparameters, predictions, acquisition value, timings
    gp_state: GPState


@dataclass
class Surrogates:
    """The two fitted GPs (privacy, utility) over the scaler's input box, and how long fitting took.
    `privacy` is None where epsilon is computed exactly (`Settings.privacy_model: exact`)."""
    privacy: gp.Posterior | None
    utility: gp.Posterior | levels.OnLevels
    scaler: InputScaler | InitialMaxScaler
    fit_seconds: float
    epsilon_coordinate: levels.EpsilonCoordinate | None = None   # the utility GP's epsilon coordinate (`search: levels`)

    @property
    def state(self) -> GPState:
        return GPState(self.privacy.hyperparameters if self.privacy else None, self.utility.hyperparameters)

    def predict(self, unit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mp, vp = self.privacy.predict(unit)
        mu, vu = self.utility.predict(unit)
        return np.stack([mp, mu], axis=1), np.stack([vp, vu], axis=1)

    def condition(self, unit: np.ndarray) -> "Surrogates":
        mean, _ = self.predict(unit)
        return Surrogates(self.privacy.condition(unit, mean[:, 0]), self.utility.condition(unit, mean[:, 1]),
                          self.scaler, self.fit_seconds, self.epsilon_coordinate)


def gp_rows(evals: pd.DataFrame, limit: int) -> pd.DataFrame:
    """The rows the GPs learn from: all of them up to `limit`; beyond, every training's own point
    (`trace_final`) and, in the places left, the trace points on the observed front (non-dominated
    in epsilon and error), then other trace points in a fixed pseudo-random order of (training,
    position in its trace). A trace has up to 64+ points per training, and a GP's cost grows with
    the cube of its rows: the cap keeps a proposal cheap. The order is fixed, so one round's rows are
    mostly the round before's, and its ML-II refinement starts close to the optimum."""
    if len(evals) <= limit:
        return evals
    final = evals["trace_final"].to_numpy(bool) if "trace_final" in evals else np.ones(len(evals), bool)
    position = evals.groupby("index", sort=False).cumcount().to_numpy(np.uint64) if "index" in evals else np.arange(len(evals), dtype=np.uint64)
    index = evals["index"].to_numpy(np.uint64) if "index" in evals else np.arange(len(evals), dtype=np.uint64)
    with np.errstate(over="ignore"):   # a multiplicative hash, modulo 2**64 on purpose
        order_key = (index * np.uint64(0x9E3779B97F4A7C15) + position * np.uint64(0xBF58476D1CE4E5B9)) >> np.uint64(11)
    batched = "batch_size" in evals and bool((evals["batch_size"].fillna(1) > 1).any())
    if final.sum() > limit and batched:   # a cheap oracle's batch rounds: their front first, then the fixed order
        front = nondominated(evals["epsilon"].to_numpy(float), evals["error"].to_numpy(float)) & final
        candidates = np.flatnonzero(final)
        ranked = candidates[np.lexsort((order_key[candidates], ~front[candidates]))]
        return evals.iloc[np.sort(ranked[:limit])]
    room = max(0, limit - int(final.sum()))
    front = nondominated(evals["epsilon"].to_numpy(float), evals["error"].to_numpy(float)) & ~final
    # front rows first, then the rest, each in the fixed order
    candidates = np.flatnonzero(~final)
    ranked = candidates[np.lexsort((order_key[candidates], ~front[candidates]))]
    keep = final.copy()
    keep[ranked[:room]] = True
    return evals[keep]


def nondominated(epsilon: np.ndarray, error: np.ndarray) -> np.ndarray:
    """Which (epsilon, error) points no other point dominates (NaN rows: none), in O(n log n)."""
    ok = ~(np.isnan(epsilon) | np.isnan(error))
    mask = np.zeros(len(epsilon), bool)
    idx = np.flatnonzero(ok)
    order = idx[np.lexsort((error[idx], epsilon[idx]))]
    best = np.inf
    for i in order:   # by epsilon, then error: kept when its error beats every point before it
        if error[i] < best:
            mask[i] = True
            best = error[i]
    return mask


def fit_surrogates(problem: Problem, evals: pd.DataFrame, settings: Settings, rng: np.random.Generator,
                   previous: GPState | None = None, round_index: int = 0, initial: int | None = None,
                   fit_privacy: bool = True, error_cap: float | None = None, on_levels=None) -> Surrogates:
    """Both GPs (only the utility GP when not `fit_privacy`) fitted to `evals` (at most
    `settings.gp_points` of its rows: `gp_rows`): full restarts, or (between full refits) one run
    from `previous`. The first `initial` rows of `evals` (all when None) are the initial points.
    `error_cap`: errors above it enter the utility GP as the cap. `on_levels`: the exact privacy model whose ranking
    epsilon replaces the noise multiplier in the utility GP's inputs (`bo.levels`), where the problem allows it."""
    fitter = gp.fitter(len(problem.domain))  # TensorFlow's import and tracing (seconds, once) are not fitting
    start = time.perf_counter()
    initial_raw = evals[problem.names].to_numpy(dtype=float)[:initial]
    evals = gp_rows(evals, settings.gp_points)
    raw = evals[problem.names].to_numpy(dtype=float)
    scaler = input_scaler(problem, settings.inputs, initial_raw)
    x = scaler.to_unit(raw)
    error = evals["error"].to_numpy(dtype=float)
    y = objectives_to_gp(evals["epsilon"].to_numpy(), error if error_cap is None else np.minimum(error, error_cap))
    full = previous is None or settings.full_refit(round_index)
    if fit_privacy and previous is not None and previous.privacy is None:
        full = True   # no privacy hyperparameters to refine (the previous round computed epsilon)

    fixed = replication_noise(evals) if settings.utility_noise == "replications" else None

    coordinate = (levels.EpsilonCoordinate(problem, scaler, on_levels)
                  if on_levels is not None and levels.searches_on_levels(problem, on_levels, scaler) else None)

    def fit(values, noiseless, start):
        own = None if noiseless else fixed
        x_in = coordinate.inputs(x) if coordinate is not None and not noiseless else x
        if not full:
            try:
                return fitter.fit(x_in, values, noiseless=noiseless, restarts=1, rng=rng, start=start,
                                  tolerance=REFINEMENT_TOLERANCE, fixed_noise=own)
            except RuntimeError:   # the likelihood is not finite anywhere L-BFGS-B went from the warm start
                log.warning("round %d: refining the %s GP from the previous round's hyperparameters found no finite "
                            "likelihood; fitting it with %d starts instead", round_index,
                            "privacy" if noiseless else "utility", settings.gp_restarts)
        return fitter.fit(x_in, values, noiseless=noiseless, restarts=settings.gp_restarts, rng=rng, start=start,
                          fixed_noise=own)

    privacy = fit(y[:, 0], True, previous and previous.privacy) if fit_privacy else None
    utility = fit(y[:, 1], False, previous and previous.utility)
    if coordinate is not None:
        utility = levels.OnLevels(utility, coordinate)
    return Surrogates(privacy, utility, scaler, time.perf_counter() - start, coordinate)


def replication_noise(evals: pd.DataFrame) -> np.ndarray | None:
    """Each evaluation's own noise variance in the utility GP's output (logit error): the squared
    standard error of its mean utility over its R replications, by the delta method
    (d logit(e) / de = 1 / (e (1 - e)), e clipped as the transform clips it); 0 where R < 2. None
    when the evaluations do not record their replications."""
    if "utility_runs" not in evals:
        return None
    runs = [np.asarray(r, dtype=float) for r in evals["utility_runs"]]
    se2 = np.array([r.var(ddof=1) / len(r) if len(r) > 1 else 0.0 for r in runs])
    error = np.clip(evals["error"].to_numpy(float), *ERROR_RANGE)
    return se2 / (error * (1 - error)) ** 2


def acquisition_function(surrogates: Surrogates, observed_unit: np.ndarray, settings: Settings):
    """HVPoI over the input box, with the front of the GP means at the observed inputs."""
    front_mean, _ = surrogates.predict(observed_unit)
    front = pareto_front(front_mean)
    reference = FIXED_REFERENCE if settings.reference == "fixed" else adaptive_reference(front)
    lower, upper = nondominated_cells(front, reference)

    posteriors = (surrogates.privacy, surrogates.utility)

    def acquisition(unit: np.ndarray) -> np.ndarray:
        kernels = [posterior.cross_kernel(unit) for posterior in posteriors]
        mean = np.stack([posterior.mean_from(k) for posterior, k in zip(posteriors, kernels)], axis=1)
        gain = added_hypervolume(mean, lower, upper)
        out = np.zeros(len(mean))
        useful = gain > 0     # HVPoI = dHV(mean) * PoI: variances only where dHV > 0
        if useful.any():
            var = np.stack([posterior.variance_from(k[useful]) for posterior, k in zip(posteriors, kernels)], axis=1)
            out[useful] = gain[useful] * improvement_probability(mean[useful], var, lower, upper)
        return out

    return acquisition


FD_STEP = np.sqrt(np.finfo(float).eps)   # scipy's forward-difference step


def negative_with_gradient(acquisition, unit: np.ndarray, upper: np.ndarray) -> tuple[float, np.ndarray]:
    """-acquisition and its forward-difference gradient, the d + 1 points in one vectorised call
    (L-BFGS-B's own finite differences would make d + 1 calls); steps point into the box below `upper`."""
    step = FD_STEP * np.maximum(1.0, np.abs(unit))
    step = np.where(unit + step <= upper, step, -step)
    values = acquisition(np.vstack([unit, unit + np.diag(step)]))
    return -float(values[0]), -(values[1:] - values[0]) / step


def propose(problem: Problem, evals: pd.DataFrame, q: int, settings: Settings, rng: np.random.Generator,
            previous: GPState | None = None, round_index: int = 0, initial: int | None = None,
            context: Context | None = None) -> Proposal:
    """q new points maximising the acquisition given every evaluation in `evals`; `previous` is the GP
    state of the round before (None in the first round), `round_index` decides a full refit; the first
    `initial` rows of `evals` (all when None) are the initial points. `context` (training rows, floor)
    is needed by the exact privacy model and the region acquisitions; without it they fall back to the
    privacy GP and a floor of error 1."""
    if settings.reference not in REFERENCES:
        raise ValueError(f"reference must be one of {REFERENCES}")
    if settings.inputs not in INPUTS:
        raise ValueError(f"inputs must be one of {INPUTS}")
    if settings.privacy_model not in PRIVACY_MODELS or settings.acquisition not in ACQUISITIONS:
        raise ValueError(f"privacy_model must be one of {PRIVACY_MODELS}, acquisition one of {ACQUISITIONS}")
    if settings.utility_cap not in UTILITY_CAPS:
        raise ValueError(f"utility_cap must be one of {UTILITY_CAPS}")
    if settings.search not in levels.SEARCHES:
        raise ValueError(f"search must be one of {levels.SEARCHES}, got {settings.search!r}")
    if settings.acquisition == "hvpoi" and not settings.paper:
        raise ValueError("acquisition hvpoi (the paper's) runs only with privacy_model gp, utility_noise learned and "
                         "utility_cap none; choose hvpoi-region, ehvi or ehvi-logit for the others")
    if settings.paper:
        surrogates = fit_surrogates(problem, evals, settings, rng, previous, round_index, initial)
        return Proposal(choose(problem, surrogates, evals, q, settings, rng), surrogates.state)
    privacy = exact_model(problem, settings, context, rng) if settings.privacy_model == "exact" else None
    # Errors worse than the floor are all worth nothing in the region: capped, the GP spends no variance on them.
    cap = context.error_floor if context is not None and settings.utility_cap == "floor" else None
    surrogates = fit_surrogates(problem, evals, settings, rng, previous, round_index, initial,
                                fit_privacy=privacy is None or privacy.needs_gp, error_cap=cap,
                                on_levels=privacy if settings.search == "levels" else None)
    if privacy is None:
        privacy = exact_privacy.GPMean(surrogates.privacy, surrogates.scaler)
        if settings.privacy_model == "exact":
            log.warning("%s: epsilon in this round's acquisition is the privacy GP's prediction, not the oracle's "
                        "(privacy_model in its proposal file says so)", problem.name)
    privacy = privacy.with_gp(surrogates.privacy, surrogates.scaler)
    # a query round proposes one point: batches (q > 1) steer only by the front
    query = query_of_round(round_index, settings.query_every, context.queries if context and q == 1 else ())
    if query is not None:
        start = time.perf_counter()
        frame = choose_for_query(problem, surrogates, privacy, evals, query, settings.candidates, rng)
        region = round_region(settings, context, evals, privacy, surrogates.scaler)
        frame["region_low"], frame["region_high"] = region.epsilon_low, region.epsilon_high
        return Proposal(with_timings(frame, privacy, surrogates, start), surrogates.state)
    return Proposal(choose_with_known_privacy(problem, surrogates, privacy, evals, q, settings, context, rng),
                    surrogates.state)


def exact_model(problem: Problem, settings: Settings, context: Context | None, rng: np.random.Generator):
    """The problem's exact privacy model (exact_privacy.for_problem), None without a context (no n)."""
    if context is None:
        log.warning("%s: no training-set size given; privacy is learned by a GP", problem.name)
        return None
    sample = InputScaler(problem).from_unit(np.random.default_rng(0).random((16, len(problem.domain))))
    return exact_privacy.for_problem(problem, context.n_train, settings.candidates, sample)


def round_region(settings: Settings, context: Context | None, evals: pd.DataFrame, privacy, scaler) -> Region:
    """This round's region of interest: the problem's rule (`stats.region`) applied to the evaluations so far,
    the domain's epsilon range from the privacy model over the domain's corners and `candidates` random points;
    `Settings.region` where the context has no rule."""
    floor = context.error_floor if context is not None else 1.0
    if context is None or context.region is None:
        return Region(*settings.region, floor)
    domain = None
    if context.region.needs_domain:
        rng = np.random.default_rng(0)   # its own stream: the round's draws stay those of a fixed region
        box = scaler.upper - scaler.lower
        d = len(box)
        corners = np.array(np.meshgrid(*[[0.0, 1.0]] * d)).reshape(d, -1).T if d <= 10 else np.empty((0, d))
        unit = np.vstack([scaler.lower + corners * box, scaler.lower + rng.random((settings.candidates, d)) * box])
        reachable = privacy.reachable(scaler.from_unit(unit))   # None: a GP's prediction, the range not known
        if reachable is not None:
            reachable = reachable[np.isfinite(reachable) & (reachable > 0)]
            domain = (float(reachable.min()), float(reachable.max())) if len(reachable) else None
    return context.region.region(evals["epsilon"], evals["error"], floor, domain,
                                 [t for kind, t in context.queries if kind == "eps"],
                                 [t for kind, t in context.queries if kind == "utility"])


def region_acquisition(settings: Settings, front_x: np.ndarray, front_y: np.ndarray, cap: float,
                       region: Region | None = None):
    """The acquisition of (ln epsilon, utility GP mean, sd) in the region (`Settings.acquisition`; `region`:
    the round's, else `Settings.region`)."""
    lo, hi = np.log((region.epsilon_low, region.epsilon_high) if region is not None else settings.region)
    if settings.acquisition == "hvpoi-region":
        return RegionHVPoI(front_x, front_y, lo, hi, cap)
    if settings.acquisition == "ehvi-logit":
        return RegionEHVI(front_x, front_y, lo, hi, cap)
    return ErrorRegionEHVI(front_x, front_y, lo, hi, cap)


class RegionHVPoI:
    """HVPoI restricted to the region: reference (ln eps_hi, cap), ln epsilon clipped below at ln eps_lo,
    epsilon known (no privacy variance)."""

    def __init__(self, front_x, front_y, lo, hi, cap):
        self.lo, self.hi = lo, hi
        points = np.column_stack([np.clip(front_x, lo, hi), front_y])
        self.lower, self.upper = nondominated_cells(pareto_front(points), np.array([hi, cap]))

    def __call__(self, x, mean, sd):
        mean2 = np.column_stack([np.clip(x, self.lo, self.hi), mean])
        var2 = np.column_stack([np.zeros(len(mean)), np.asarray(sd) ** 2])
        gain = added_hypervolume(mean2, self.lower, self.upper)
        out = np.zeros(len(mean))
        useful = gain > 0
        if useful.any():
            out[useful] = gain[useful] * improvement_probability(mean2[useful], var2[useful], self.lower, self.upper)
        return out

    def path(self, x, mean, variance_of):
        """The acquisition of N trainings whose checkpoints are (x, mean), each (N, M), x (ln epsilon)
        increasing along a row, NaN where a training has fewer checkpoints: the hypervolume the checkpoints'
        means add to the front together (every epoch of a trace is a point of the front) times the largest
        probability of improvement among them. `variance_of(mask)`: the predictive variances of the checkpoints
        where the (N, M) `mask` is true (asked only for the trainings that add something)."""
        valid = ~np.isnan(x)
        px = np.where(valid, np.clip(np.nan_to_num(x, nan=self.hi), self.lo, self.hi), np.inf)
        floor = np.minimum.accumulate(np.where(valid, mean, np.inf), axis=1)   # the path's best error so far
        following = np.concatenate([px[:, 1:], np.full((len(px), 1), np.inf)], axis=1)
        # the strip between checkpoint j and j + 1 dominates [floor_j, cell top] in each cell it crosses
        width = np.minimum(self.upper[None, None, :, 0], following[..., None]) - np.maximum(self.lower[None, None, :, 0], px[..., None])
        height = self.upper[None, None, :, 1] - floor[..., None]
        gain = np.sum(np.clip(width, 0, None) * np.clip(height, 0, None), axis=(1, 2))
        out = np.zeros(len(px))
        useful = gain > 0
        if useful.any():
            rows, cols = np.nonzero(valid[useful])
            points = np.column_stack([px[useful][rows, cols], mean[useful][rows, cols]])
            var = np.column_stack([np.zeros(len(points)), variance_of(valid & useful[:, None])])
            chance = np.zeros(valid[useful].shape)
            chance[rows, cols] = improvement_probability(points, var, self.lower, self.upper)
            out[useful] = gain[useful] * chance.max(axis=1)
        return out


def choose_with_known_privacy(problem: Problem, surrogates: Surrogates, privacy, evals: pd.DataFrame, q: int,
                              settings: Settings, context: Context | None, rng: np.random.Generator) -> pd.DataFrame:
    """The q points maximising the region acquisition with epsilon known (`privacy`: an exact_privacy
    model, or the privacy GP's mean where none is affordable). Candidates are drawn in the GPs' box
    with integers rounded (so epsilon is the rounded point's); the best is improved by L-BFGS-B over
    the continuous hyperparameters; it and the best candidates (`privacy.finalists`) are re-scored with the
    oracle's own epsilons, and the best not yet evaluated is taken. q > 1: Kriging believer (the
    utility GP conditioned on the chosen point at its mean, which joins the front)."""
    start = time.perf_counter()
    scaler, utility = surrogates.scaler, surrogates.utility
    box = scaler.upper - scaler.lower
    free = ~np.asarray(scaler.integer)
    observed = scaler.to_unit(evals[problem.names].to_numpy(dtype=float))
    taken = {tuple(np.round(p, 12)) for p in scaler.from_unit(observed)}
    region = round_region(settings, context, evals, privacy, scaler)
    cap = float(error_to_gp(region.error_floor - settings.floor_margin if context else 1.0))
    front_x = exact_privacy.finite_log(evals["epsilon"].to_numpy(float))
    front_y = utility.predict(observed)[0]
    axis = problem.oracle.trace_axis
    resuming = settings.resume and axis in problem.names and is_traced(evals)   # untraced rows: nothing to continue
    # cost-aware: the gain per epoch the training costs (Snoek et al. 2012's per cost); with resume always
    per_epoch = problem.names.index(axis) if (settings.cost_aware or resuming) and axis in problem.names else None
    open_trainings = resume.continuations(problem, evals) if resuming else None
    by_path = (settings.path_value and settings.acquisition == "hvpoi-region" and per_epoch is not None
               and is_traced(evals))
    ratio = (surrogates.epsilon_coordinate.ranking_over_exact(evals[problem.names].to_numpy(float),
                                                              evals["epsilon"].to_numpy(float))
             if surrogates.epsilon_coordinate is not None else 1.0)
    rows = []
    for position in range(q):
        acquisition = region_acquisition(settings, front_x, front_y, cap, region)

        def path_value(points: np.ndarray, starts: np.ndarray, cost: np.ndarray, epsilon_of) -> np.ndarray:
            """The acquisition of the trainings from `starts` to `points` by their whole paths
            (`RegionHVPoI.path`), per unit of `cost`."""
            walks = resume.paths(points, starts, per_epoch)
            valid = ~np.isnan(walks[:, :, 0])
            kernel = utility.cross_kernel(scaler.to_unit(walks[valid]))
            x, mean, where = np.full(valid.shape, np.nan), np.full(valid.shape, np.nan), np.full(valid.shape, -1)
            x[valid], mean[valid] = exact_privacy.finite_log(epsilon_of(walks[valid])), utility.mean_from(kernel)
            where[valid] = np.arange(valid.sum())
            return acquisition.path(x, mean, lambda mask: utility.variance_from(kernel[where[mask]])) / cost

        def new_cost(points: np.ndarray) -> np.ndarray:
            return np.maximum(points[:, per_epoch], 1.0) if per_epoch is not None else np.ones(len(points))

        def value(unit: np.ndarray, epsilon: np.ndarray, cost: np.ndarray | None = None) -> np.ndarray:
            """The acquisition per unit of cost (`cost`: a new training's, from its epochs, where None)."""
            mean, var = utility.predict(unit)
            gain = acquisition(exact_privacy.finite_log(epsilon), mean, np.sqrt(var))
            return gain / (new_cost(scaler.from_unit(np.atleast_2d(unit))) if cost is None else cost)

        unit_candidates = scaler.lower + rng.random((settings.candidates, len(box))) * box
        if surrogates.epsilon_coordinate is not None:   # each on an epsilon level of the region (bo.levels)
            unit_candidates = levels.placed_candidates(surrogates.epsilon_coordinate, unit_candidates,
                                                       (region.epsilon_low, region.epsilon_high), ratio, rng)
        points = scaler.from_unit(unit_candidates)
        costs, continues = new_cost(points), np.full(len(points), -1)
        if open_trainings is not None and len(open_trainings.points):
            points = np.vstack([points, open_trainings.points])
            costs = np.concatenate([costs, open_trainings.cost])
            continues = np.concatenate([continues, np.arange(len(open_trainings.points))])
        units = scaler.to_unit(points)
        starts = np.full(len(points), problem.bounds(axis)[0] - 1.0) if axis in problem.names else np.zeros(len(points))
        if open_trainings is not None and len(open_trainings.points):
            starts[len(points) - len(open_trainings.points):] = open_trainings.reached
        if by_path:
            values = path_value(points, starts, costs, privacy.ranking)
        else:
            values = value(units, privacy.ranking(points), costs)
        order = np.argsort(-values)
        finalists = [(points[i], costs[i], continues[i], starts[i]) for i in order[:privacy.finalists]]
        best_new = next((i for i in order if continues[i] < 0), None)
        if free.any() and best_new is not None:
            improved = _improve(units[best_new], free, scaler, privacy, value)
            finalists.insert(0, (improved, new_cost(improved[None, :])[0], -1, starts[best_new]))
        finalists = [f for f in finalists if tuple(np.round(f[0], 12)) not in taken]
        if not finalists:   # every finalist evaluated already: the best candidate that is not
            finalists = [next((points[i], costs[i], continues[i], starts[i]) for i in order
                              if tuple(np.round(points[i], 12)) not in taken)]
        candidates = np.array([f[0] for f in finalists])
        epsilons = privacy.exact(candidates)
        finalist_costs = np.array([f[1] for f in finalists], float)
        if by_path:   # every checkpoint of the finalists' paths by the oracle's own epsilon
            scores = path_value(candidates, np.array([f[3] for f in finalists], float), finalist_costs, privacy.exact)
        else:
            scores = value(scaler.to_unit(candidates), epsilons, finalist_costs)
        best = int(np.argmax(scores))
        point, epsilon, continued = candidates[best], float(epsilons[best]), int(finalists[best][2])
        taken.add(tuple(np.round(point, 12)))
        unit = scaler.to_unit(point)
        mean, _ = utility.predict(unit[None, :])
        row = {**{n: (int(v) if p.integer else float(v)) for n, v, p in zip(problem.names, point, problem.domain)},
               "acquisition": float(scores[best]), "predicted_epsilon": epsilon,
               "predicted_error": float(objectives_from_gp(np.array([[0.0, mean[0]]]))[0, 1]),
               "batch_position": position}
        if open_trainings is not None:
            row |= (open_trainings.proposal_fields(continued) if continued >= 0
                    else {**resume.NEW_TRAINING, "cost_axis": float(finalists[best][1])})
            row |= stopped_trainings(open_trainings, values[len(values) - len(open_trainings.points):])
            if continued >= 0:
                open_trainings = open_trainings.without(row["resumes"])
        rows.append(row)
        if position + 1 < q:
            utility = utility.condition(unit[None, :], mean)
            front_x = np.append(front_x, exact_privacy.finite_log(epsilon))
            front_y = np.append(front_y, mean)
    frame = pd.DataFrame(rows)
    frame["region_low"], frame["region_high"] = region.epsilon_low, region.epsilon_high
    frame["steers"] = "front"
    frame["search"] = "levels" if surrogates.epsilon_coordinate is not None else "box"
    return with_timings(frame, privacy, surrogates, start)


def stopped_trainings(open_trainings, values: np.ndarray) -> dict:
    """How many trainings could go on (`open_trainings`), and how many of them the round finds stopped: no
    continuation whose acquisition (`values`, by the ranking epsilon) is above 0."""
    trainings = len(open_trainings.trainings)
    best, has = np.zeros(trainings), np.zeros(trainings, bool)
    np.maximum.at(best, open_trainings.training, values)
    has[open_trainings.training] = True
    return {"open_trainings": int(has.sum()), "stopped_trainings": int(np.sum(has & (best <= 0)))}


def with_timings(frame: pd.DataFrame, privacy, surrogates: Surrogates, start: float) -> pd.DataFrame:
    """A round's points with its privacy model, the GPs' jitter and its seconds (fit, acquisition, both)."""
    frame["privacy_model"] = privacy.name
    frame["privacy_jitter"] = surrogates.privacy.jitter if surrogates.privacy else np.nan
    frame["utility_jitter"] = surrogates.utility.jitter
    frame["fit_seconds"] = surrogates.fit_seconds
    frame["acquisition_seconds"] = time.perf_counter() - start
    frame["proposal_seconds"] = frame["fit_seconds"] + frame["acquisition_seconds"]
    return frame


def _improve(unit: np.ndarray, free: np.ndarray, scaler, privacy, value) -> np.ndarray:
    """L-BFGS-B over the continuous coordinates from `unit` (integers held), by the ranking epsilons;
    the result as a point of the domain."""
    lower, upper = scaler.lower[free], scaler.upper[free]

    def acquisition(free_units: np.ndarray) -> np.ndarray:
        units = np.repeat(unit[None, :], len(free_units), axis=0)
        units[:, free] = free_units
        points = scaler.from_unit(units)
        return value(scaler.to_unit(points), privacy.ranking(points))

    result = optimize.minimize(lambda u: negative_with_gradient(acquisition, u, upper), unit[free], jac=True,
                               method="L-BFGS-B", bounds=list(zip(lower, upper)), options={"maxiter": 50})
    best = unit.copy()
    best[free] = result.x
    return scaler.from_unit(best)


def choose(problem: Problem, surrogates: Surrogates, evals: pd.DataFrame, q: int, settings: Settings,
           rng: np.random.Generator) -> pd.DataFrame:
    """The q points maximising HVPoI under fitted `surrogates` (one row each, with predictions)."""
    start = time.perf_counter()
    scaler = surrogates.scaler
    box = scaler.upper - scaler.lower
    observed = scaler.to_unit(evals[problem.names].to_numpy(dtype=float))
    taken = {tuple(np.round(p, 12)) for p in scaler.from_unit(observed)}
    rows = []
    for position in range(q):
        acquisition = acquisition_function(surrogates, observed, settings)
        candidates = scaler.lower + rng.random((settings.candidates, observed.shape[1])) * box
        values = acquisition(candidates)
        order = np.argsort(-values)
        best = candidates[order[0]]
        result = optimize.minimize(lambda u: negative_with_gradient(acquisition, u, scaler.upper), best, jac=True,
                                   method="L-BFGS-B", bounds=list(zip(scaler.lower, scaler.upper)), options={"maxiter": 100})
        tries = [result.x] + [candidates[i] for i in order]
        for unit in tries:
            point = scaler.from_unit(unit)
            key = tuple(np.round(point, 12))
            if key not in taken:
                break
        taken.add(key)
        unit = scaler.to_unit(point)  # the rounded point, as the GPs will see it
        mean, var = surrogates.predict(unit[None, :])
        eps, err = objectives_from_gp(mean)[0]
        rows.append({**{n: (int(v) if p.integer else float(v)) for n, v, p in zip(problem.names, point, problem.domain)},
                     "acquisition": float(acquisition(unit)[0]), "predicted_epsilon": float(eps),
                     "predicted_error": float(err), "batch_position": position})
        if position + 1 < q:
            surrogates = surrogates.condition(unit[None, :])
            observed = np.vstack([observed, unit])
    frame = pd.DataFrame(rows)
    # jitter the kernel matrices needed to factorise (0: none; gp.robust_cholesky)
    frame["privacy_jitter"], frame["utility_jitter"] = surrogates.privacy.jitter, surrogates.utility.jitter
    frame["fit_seconds"] = surrogates.fit_seconds
    frame["acquisition_seconds"] = time.perf_counter() - start
    frame["proposal_seconds"] = frame["fit_seconds"] + frame["acquisition_seconds"]   # as the peers report it
    return frame


@dataclass(frozen=True)
class DPareto:
    """DPareto as a chain method (beside the peers of `dptradeoff.peers`): one round proposes from every
    evaluation so far, its ML-II starting from the GP state the previous round's proposal file holds."""
    settings: Settings
    name = "dpareto"

    @property
    def needs_context(self) -> bool:
        """The training rows and error floor (`Context`) matter to all but the paper's algorithm."""
        return not self.settings.paper

    def round(self, problem: Problem, evals: pd.DataFrame, q: int, seed: int, run: int, round_index: int,
              initial: int, previous: dict | None, context: Context | None = None) -> tuple[pd.DataFrame, dict]:
        """The round's points and what its proposal file records (settings, GP state, the kind of fit)."""
        from ..seeds import rng

        state = GPState.from_dict(previous["gp_state"]) if previous else None
        proposal = propose(problem, evals, q, self.settings, rng(seed, problem.name, "dpareto", run, round_index),
                           state, round_index, initial=initial, context=context)
        full = state is None or self.settings.full_refit(round_index)
        return proposal.points, {"settings": self.settings.__dict__, "full_refit": full,
                                 "gp_state": proposal.gp_state.as_dict()}
