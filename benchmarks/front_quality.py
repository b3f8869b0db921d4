"""Which optimiser finds the privacy-utility front best on the same budget? DPareto (the default config's
settings) beside the optimisers practitioners would otherwise use (Optuna TPE, Optuna's GPSampler,
BoTorch qLogNEHVI: `dptradeoff.peers`, configured as their documentation recommends) and random
sampling from the paper's Tables 3-4, on the same oracles, initial points and seeds.

For each problem and seed, 16 initial points are drawn from Tables 3-4 (SVT: its domain) and shared
by every method. The budget is training cost: the total epochs (per replication) that the default
DPareto chain spends on its 16 + 48 evaluations for that seed (`--rounds`); every method proposes
sequentially (q = 1), each point evaluated at once, until it has spent the budget, and is scored on
the rows it had within it (`--equal evaluations`: 16 + 48 trainings each, the protocol of
docs/dpareto-acquisition.md's tables). A method named `<method>+traces` evaluates with epoch traces
(`dptradeoff.problems.traces`): each training records every epoch as a row (the shared initial
points too), and the optimiser sees every row (DPareto: its GPs a subsample, `Settings.gp_points`;
Optuna: as completed trials; BoTorch: as training data). `random+traces` trains random points at the
domain's largest epochs, every epoch kept. `moasha+traces` is Syne Tune's MOASHA (`peers.moasha`), whose
stretches between rungs continue a training. DPareto's `+traces` chains with `dpareto.resume` (the default)
continue trainings too: a continuation's first row costs only the epochs it adds (the CRN training is the
same one, and a continued training equals the uninterrupted one, tests/test_resume.py). `dpareto-no-resume`
is the default before trainings stopped, `dpareto-resume` values a training by its last epoch instead of its
path. Problems without a trace axis (SVT) have no cost: there
the budget is 16 + 48 evaluations and `+traces` methods equal their plain ones.
Common random numbers: an evaluation's replications are seeded by (seed, problem, the point), so two
methods proposing the same point see the same utilities (and the point is trained once); a traced
training is seeded by its point without the epochs, so a longer trace extends a shorter one exactly. Problems at
the default config's scale (embedded data; R = 3 and epochs <= 16 on adult, R = 1 and epochs <= 4 on
MNIST) and SVT (R = 50, whose exact front the illustration grid gives).

Per metric (`dptradeoff.stats.front_metrics`: raw, log-epsilon, region, best error at epsilon <= 0.1,
0.3, 1, 3): each method's mean over seeds with a 95 % t interval, the paired difference DPareto -
method with its 95 % interval and two-sided p (paired t-test over seeds), and the optimiser's seconds
per proposal (median; no training). Also the share of proposals whose utility is within 0.01 of the
floor (the majority-class error; SVT: F1 0), per block of 16 rounds.

Fronts by what their settings deliver (`region_fresh`, the scores the targets of issue LEAD read): each method's
front within the budget (its non-dominated rows inside the region) is retrained, FRESH (5) new trainings a point at
the point's epochs, untraced, seeded from a stream no chain draws from; the region metric of those fresh means, their
best error at each epsilon level, the mean of listed - fresh error, and the gap to the pooled front of every method
retrained the same way. At equal wall-clock (`region_fresh_clock`): every method of a seed is cut where the fastest of
them (the untraced default aside) had spent its budget, training seconds and proposal seconds counted, and that
front is retrained the same way. `--no-fresh` skips the retraining. `dpareto-levels` is the chain searching on
epsilon levels (`dpareto.search: levels`, bo/levels.py). `--reference` names the method every other is paired with.

Results are cached per (problem, method, seed) in --work/front_quality/, so a killed run resumes and
subsets can run in parallel processes. Needs the default config's data in --work:
  ./in-env snakemake --cores 2 --directory DIR results/data/adult/train.parquet results/data/mnist/train.parquet
Run:  ./in-env python benchmarks/front_quality.py --work DIR [--problems ...] [--seeds 8] [--methods ...]
      [--summary-only]
Besides every metric at the budget: the share of the budget each method needed to reach the default
chain's final region score (per seed; > 1: not reached), and the gap to the best-known front (every
row of every method and seed pooled with 1,000 random points traced at the largest epochs) as a share
of its region score.
Last line: region_fresh_over_tpe=<ratio of mean fresh region scores> on adult LogReg+SGD (the reference over Optuna
TPE with traces, at equal training cost) with their paired difference, where both ran; else
region_traced_over_default=<ratio of mean region scores> (DPareto with traces over the default DPareto without them).
"""
from __future__ import annotations

import argparse
import functools
import os
import time

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import yaml  # noqa: E402
from scipy import stats  # noqa: E402

from dptradeoff.baselines.random_search import sample  # noqa: E402
from dataclasses import replace  # noqa: E402

from dptradeoff.bo.propose import Context, DPareto, Settings  # noqa: E402
from dptradeoff.peers import PEERS  # noqa: E402
from dptradeoff.problems import get_problem  # noqa: E402
from dptradeoff.io import read_frame  # noqa: E402
from dptradeoff.pareto import pareto_mask  # noqa: E402
from dptradeoff.problems.evaluate import evaluate, load_data  # noqa: E402
from dptradeoff.problems.traces import TraceSettings  # noqa: E402
from dptradeoff.seeds import derive_seed, rng  # noqa: E402
from dptradeoff.stats import cost  # noqa: E402
from dptradeoff.stats.front_metrics import MetricSettings  # noqa: E402
from dptradeoff.stats.region import DerivedRegion  # noqa: E402
from dptradeoff.stats.front_quality import FLOOR_MARGIN  # noqa: E402

K0, BLOCK = 16, 16
TRACED = "+traces"
PROBLEMS = ["adult-logreg-sgd", "adult-logreg-adam", "adult-svm-sgd", "mnist-mlp2-sgd", "svt"]
METHODS = ["dpareto", "dpareto+traces", "optuna-tpe", "optuna-tpe+traces", "optuna-gp", "optuna-gp+traces",
           "botorch", "botorch+traces", "random", "random+traces"]
REFERENCE = "dpareto+traces"   # the method every other is compared with
DEFAULT = "dpareto"            # the default config's DPareto without traces: its 16 + rounds chain sets the budget
BEST_KNOWN_RANDOM = 1000       # random points (traced at the largest epochs) in the best-known front
# Every method's front is scored by fresh trainings of its points, this many a point (at the point's epochs, untraced),
# the same for every method, seeded from a stream no chain draws from ("fresh"): not by the means that chose them
FRESH = 5
MAX_ROUNDS = 2000              # a method that spends almost nothing per round still stops
EQUAL = "cost"                 # --equal: what the budget counts
PEER_GP_POINTS = 64            # dpareto.peer_gp_points of the config (main() reads it)
# DPareto variants (the config's settings with these changed); `dpareto` is the config's default.
VARIANTS = {
    # Each differs from the config's default (`dpareto`: exact privacy, HVPoI in the region, full refits in
    # the first 16 rounds and every 16th) in the settings it names.
    "dpareto-previous": {"privacy_model": "gp", "acquisition": "hvpoi", "full_refits_first": 0},  # the previous default
    "dpareto-hvpoi": {"privacy_model": "gp", "acquisition": "hvpoi"},  # the paper's algorithm, this config's refits
    "dpareto-exact-hvpoi-region": {"full_refits_first": 0},            # no early full refits
    "dpareto-exact-hvpoi-region-refit1": {"refit_every": 1},           # full refits every round
    "dpareto-exact-ehvi-error": {"acquisition": "ehvi"},
    "dpareto-exact-ehvi-logit": {"acquisition": "ehvi-logit"},
    "dpareto-exact-ehvi-error-refit1": {"acquisition": "ehvi", "refit_every": 1},
    "dpareto-exact-hvpoi-region-replications": {"utility_noise": "replications"},
    "dpareto-exact-hvpoi-region-cap": {"utility_cap": "floor"},
    "dpareto-margin": {"floor_margin": 0.01},   # improvement counted from 0.01 below the floor
    "dpareto-gp128": {"gp_points": 128},        # (with traces) the GPs see at most 128 rows
    "dpareto-cost": {"cost_aware": True},       # the acquisition per epoch of training
    "dpareto-resume": {"resume": True, "path_value": False},   # trainings that stop and resume, by gain per epoch
    "dpareto-path": {"resume": True, "path_value": True},      # ... each valued by the front its whole path adds
    "dpareto-no-resume": {"resume": False, "path_value": False},   # the default before trainings stopped
    "dpareto-levels": {"search": "levels"},     # candidates on epsilon levels, utility over epsilon (bo.levels)
}
# DPareto with what steers it changed (`bo.propose.Context`): the region derived from the problem
# (stats.region.DerivedRegion, `region: auto`) instead of statistics.region.
CONTEXT_VARIANTS = {"dpareto-region-auto": {"region": DerivedRegion()}}
# Peer variants: the GP-based peers learning from every row (before `dpareto.peer_gp_points`).
PEER_VARIANTS = {"optuna-gp-every-row": "optuna-gp", "botorch-every-row": "botorch"}
CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "config", "config.yaml")


class Oracle:
    """A problem's oracles with common random numbers and a cache: one training per distinct point."""

    def __init__(self, problem, data, repeats: int, seed: int, traces: TraceSettings):
        self.problem, self.data, self.repeats, self.seed, self.traces = problem, data, repeats, seed, traces
        self.axis = problem.oracle.trace_axis
        self.cache: dict[tuple, pd.DataFrame] = {}

    def __call__(self, points: pd.DataFrame, traced: bool = False) -> pd.DataFrame:
        """The rows of `points` (traced: every checkpoint). A point whose proposal continues a training
        (`resumes` >= 0) keeps the rows beyond `resumes_from`; the training is the same (common random
        numbers: its index and seed leave out the epochs, and a continued training equals an uninterrupted
        one bit for bit, tests/test_resume.py), so its first new row costs only the epochs it adds, or all
        of them when `resumes_replayed`."""
        traced = traced and self.axis is not None
        if "resumes" in points and traced:
            parts = []
            for i in range(len(points)):
                proposal = points.iloc[i]
                rows = self(points.iloc[[i]][self.problem.names], traced)
                if proposal["resumes"] >= 0:
                    reached = int(proposal["resumes_from"])
                    rows = rows[rows[self.axis] > reached].copy()
                    paid = 0 if proposal.get("resumes_replayed", False) else reached
                    rows.iloc[0, rows.columns.get_loc("cost_epochs")] = float(rows[self.axis].iloc[0] - paid)
                    rows["segment_start"] = reached
                parts.append(rows)
            return pd.concat(parts, ignore_index=True)
        rows = []
        for _, point in points[self.problem.names].iterrows():
            key = tuple(np.round(point.to_numpy(float), 12))
            if (traced, key) not in self.cache:
                # a trace's seed leaves out its length: a longer trace of the same point extends a shorter one
                seeded = tuple(v for n, v in zip(self.problem.names, key) if not (traced and n == self.axis))
                index = derive_seed(self.seed, "crn", *(("trace",) if traced else ()), *seeded) % 2**31
                self.cache[traced, key] = evaluate(self.problem, point.to_frame().T, self.data, self.repeats, self.seed,
                                                   "crn", 0, index, self.traces if traced else None)
            rows.append(self.cache[traced, key])
        return pd.concat(rows, ignore_index=True)


    def fresh(self, points: pd.DataFrame) -> pd.DataFrame:
        """FRESH new trainings of each of `points` (untraced), seeded by the point in the "fresh" stream."""
        rows = []
        for _, point in points[self.problem.names].iterrows():
            key = tuple(np.round(point.to_numpy(float), 12))
            if ("fresh", key) not in self.cache:
                index = derive_seed(self.seed, "fresh", *key) % 2**31
                self.cache["fresh", key] = evaluate(self.problem, point.to_frame().T, self.data, FRESH, self.seed,
                                                    "fresh", 0, index, None)
            rows.append(self.cache["fresh", key])
        return pd.concat(rows, ignore_index=True)


def front_points(evals: pd.DataFrame, names: list[str], floor: float, epsilon_high: float) -> pd.DataFrame:
    """The non-dominated rows of `evals` that can count in the region (error below the floor, epsilon at most its
    top), one per point."""
    inside = evals[(evals["error"] < floor) & (evals["epsilon"] <= epsilon_high)]
    front = inside[pareto_mask(inside[["epsilon", "error"]].to_numpy(float))] if len(inside) else inside
    return front.drop_duplicates(subset=names)


def fresh_front(oracle: "Oracle", evals: pd.DataFrame, floor: float, epsilon_high: float) -> pd.DataFrame:
    """A front's points with their listed (search) error and the mean error of FRESH fresh trainings."""
    names = oracle.problem.names
    front = front_points(evals, names, floor, epsilon_high)
    if front.empty:
        return pd.DataFrame({"epsilon": [], "listed_error": [], "error": []})
    fresh = oracle.fresh(front)
    return pd.DataFrame({"epsilon": fresh["epsilon"].to_numpy(float), "listed_error": front["error"].to_numpy(float),
                         "error": fresh["error"].to_numpy(float)})


def row_costs(evals: pd.DataFrame) -> np.ndarray:
    """What each row spent: its training epochs (rows without a trace axis: one each), or, with
    `--equal evaluations`, one per training (at its own row)."""
    if EQUAL == "evaluations":
        return evals["trace_final"].to_numpy(float)
    return cost.row_costs(evals)


def spent(evals: pd.DataFrame) -> float:
    return float(row_costs(evals).sum())


def budget_of(default_evals: pd.DataFrame) -> float:
    return spent(default_evals)


def run_chain(method: str, problem, oracle: Oracle, initial: pd.DataFrame, settings: Settings, seed: int,
              budget: float, context: Context) -> pd.DataFrame:
    """A method's evaluations from the shared initial points until it has spent `budget` (its proposal
    seconds in `proposal_seconds`)."""
    base, traced = method.removesuffix(TRACED), method.endswith(TRACED)
    if base == "random":
        stream = rng(seed, problem.name, "front_quality", "initial")
        evals = []
        while spent(pd.concat(evals, ignore_index=True)) < budget if evals else True:
            # 16 at a time at equal cost; at equal trainings all at once, as the tables by evaluation count drew them
            points = sample(problem, K0 if EQUAL == "cost" else int(budget), stream)
            if traced and oracle.axis:
                points[oracle.axis] = problem.bounds(oracle.axis)[1]
            for i in range(len(points)):
                evals.append(oracle(points.iloc[[i]], traced))
                if spent(pd.concat(evals, ignore_index=True)) >= budget:
                    break
        return pd.concat(evals, ignore_index=True).assign(proposal_seconds=0.0)
    if base == "dpareto":
        proposer = DPareto(settings)
    elif base in VARIANTS:
        proposer = DPareto(replace(settings, **VARIANTS[base]))
    elif base in CONTEXT_VARIANTS:
        proposer, context = DPareto(settings), replace(context, **CONTEXT_VARIANTS[base])
    elif base == "moasha":
        from dptradeoff.peers.moasha import MOASHAPeer
        proposer = MOASHAPeer()
    elif base in PEER_VARIANTS:
        proposer = PEERS[PEER_VARIANTS[base]]             # gp_points None: every row
    else:
        proposer = PEERS[base].configured(PEER_GP_POINTS)  # as the chain rule runs it
    evals = oracle(initial, traced).assign(proposal_seconds=np.nan)
    previous = None
    for r in range(MAX_ROUNDS):
        if spent(evals) >= budget:
            break
        points, record = proposer.round(problem, evals, 1, seed, 0, r, K0, previous, context=context)
        previous = record
        asked = points if "resumes" in points else points[problem.names]
        new = oracle(asked, traced).assign(proposal_seconds=float(points["proposal_seconds"].iloc[0]), evaluation=r)
        evals = pd.concat([evals, new], ignore_index=True)
    return evals


def row_seconds(evals: pd.DataFrame) -> np.ndarray:
    """What each row took on the wall clock: its share of its training's seconds, plus the proposal's seconds on the
    first row of each round (the shared initial points: none)."""
    seconds = evals["wall_seconds"].fillna(0.0).to_numpy(float)
    if "evaluation" in evals:
        first = evals["evaluation"].notna().to_numpy() & ~evals["evaluation"].duplicated().to_numpy()
        seconds = seconds + np.where(first, evals["proposal_seconds"].fillna(0.0).to_numpy(float), 0.0)
    return seconds


def within_seconds(evals: pd.DataFrame, seconds: float) -> pd.DataFrame:
    """The rows a method had after `seconds` on the wall clock (training and proposing)."""
    return evals[np.cumsum(row_seconds(evals)) <= seconds + 1e-9]


def within(evals: pd.DataFrame, budget: float) -> pd.DataFrame:
    """The rows a method had when it had spent `budget`: a trace's rows come in training order, so a
    training cut by the budget keeps its earlier epochs."""
    return evals[np.cumsum(row_costs(evals)) <= budget + 1e-9]


def summarise(evals: pd.DataFrame, metric_settings: MetricSettings, floor: float, budget: float,
              target: float, best_known: float, fresh: pd.DataFrame | None = None,
              best_known_fresh: float = np.nan) -> dict:
    """Every metric of the rows within the budget, the share of the budget spent to reach `target`
    (the default's region score; inf: not reached), the gap to the best-known front's region score
    `best_known` as a share of it, the share of trainings at the floor per block of BLOCK after the
    initial ones, and the median optimiser seconds per proposal."""
    kept = within(evals, budget)
    out = {"trainings": cost.trainings(kept), "rows": len(kept), "spent": spent(kept) / budget,
           "continued": int((kept["trace_final"] & (kept.get("segment_start", 0) > 0)).sum())}
    for metric in metric_settings.metrics(floor):
        out[metric.name] = metric.value(kept["epsilon"], kept["error"])
    region = next(m for m in metric_settings.metrics(floor) if m.name == "region")
    curve = region.curve(kept["epsilon"], kept["error"])
    cumulative = np.cumsum(row_costs(kept))
    reached = np.flatnonzero(curve >= target - 1e-12)
    out["cost_to_default"] = float(cumulative[reached[0]] / budget) if len(reached) else np.inf
    out["gap_to_best_known"] = 1.0 - out["region"] / best_known if best_known > 0 else np.nan
    finals = kept[kept["trace_final"]].iloc[K0:]
    for block in range(min(3, -(-len(finals) // BLOCK))):
        part = finals.iloc[block * BLOCK:(block + 1) * BLOCK]
        out[f"at_floor_rounds_{block * BLOCK}_{(block + 1) * BLOCK - 1}"] = float(np.mean(part["error"] >= floor - FLOOR_MARGIN))
    out["seconds_per_proposal"] = float(kept["proposal_seconds"].median())
    if fresh is not None:   # the front by what its settings deliver: FRESH new trainings of each of its points
        out["region_fresh"] = region.value(fresh["epsilon"], fresh["error"]) if len(fresh) else 0.0
        for metric in metric_settings.metrics(floor):   # the error a practitioner gets at epsilon <= a level
            if metric.name.startswith("best-error"):
                out[f"{metric.name}_fresh"] = metric.value(fresh["epsilon"], fresh["error"]) if len(fresh) else floor
        out["front_points"] = len(fresh)
        out["listed_minus_fresh"] = float((fresh["listed_error"] - fresh["error"]).mean()) if len(fresh) else np.nan
        out["gap_fresh"] = 1.0 - out["region_fresh"] / best_known_fresh if best_known_fresh > 0 else np.nan
    return out


def paired(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float, float]:
    """Mean of a - b over seeds, its 95 % t interval, two-sided p of the paired t-test (NaN when every
    difference is equal: no spread to test against)."""
    d = np.asarray(a, float) - np.asarray(b, float)
    if len(d) < 2 or np.all(d == d[0]):
        return float(d.mean()), float(d.mean()), float(d.mean()), float("nan")
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    return float(d.mean()), float(d.mean() - half), float(d.mean() + half), float(stats.ttest_1samp(d, 0.0).pvalue)


def cached(path: str, compute) -> pd.DataFrame:
    """A frame from `path`, computed and written atomically the first time (a killed run resumes)."""
    if not os.path.exists(path):
        frame = compute()
        frame.to_parquet(path + ".tmp")
        os.replace(path + ".tmp", path)
    return read_frame(path)


def best_known_region(name, problem, oracle_of, files, metric_settings, floor, count: int) -> float:
    """The region score of every row of every method and seed pooled with `count` random points, traced at
    the largest epochs (seed 0's oracle: its common random numbers)."""
    def random_points():
        oracle = oracle_of(0)
        points = sample(problem, count, rng(0, name, "front_quality", "best-known"))
        if oracle.axis:
            points[oracle.axis] = problem.bounds(oracle.axis)[1]
        return oracle(points, traced=True)

    pool = [cached(f"front_quality/{name}_best_known_random_{count}.parquet", random_points)]
    pool += [read_frame(f) for f in files]
    pool = pd.concat([f[["epsilon", "error"]] for f in pool], ignore_index=True)
    region = next(m for m in metric_settings.metrics(floor) if m.name == "region")
    return region.value(pool["epsilon"], pool["error"])


def problem_setup(name: str, config: dict):
    """A built-in problem as the config narrows it, its prepared data, error floor and R."""
    problem_config = config["problems"].get(name, {})
    problem = get_problem(name, problem_config.get("ranges"))
    data = load_data(problem)
    return problem, data, problem.error_floor(data), problem_config.get("repeats", problem.default_repeats)


def main() -> None:
    global EQUAL, REFERENCE
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", required=True)
    parser.add_argument("--problems", nargs="+", default=PROBLEMS)
    parser.add_argument("--methods", nargs="+", default=METHODS)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=48, help="the default chain's proposals after the 16 initial "
                        "points: its training cost is every method's budget")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--summary-only", action="store_true", help="only summarise what --work holds")
    parser.add_argument("--equal", choices=["cost", "evaluations"], default="cost",
                        help="compare at equal training cost (default) or at an equal number of trainings")
    parser.add_argument("--reference", default=REFERENCE, help="the method every other is compared with")
    parser.add_argument("--no-fresh", action="store_true", help="score fronts by their search means only (no fresh "
                        "trainings of the front points)")
    parser.add_argument("--best-known-random", type=int, default=BEST_KNOWN_RANDOM,
                        help="random points (traced at the largest epochs) pooled into the best-known front")
    args = parser.parse_args()
    EQUAL, REFERENCE = args.equal, args.reference
    os.chdir(args.work)
    os.makedirs("front_quality", exist_ok=True)
    config = yaml.safe_load(open(CONFIG))
    settings = Settings.from_config(config["dpareto"], config["statistics"])
    global PEER_GP_POINTS
    PEER_GP_POINTS = int(config["dpareto"].get("peer_gp_points", PEER_GP_POINTS))
    traces = TraceSettings.from_config({**config["dpareto"], "traces": True})
    metric_settings = MetricSettings.from_config(config["statistics"])
    methods = [DEFAULT] + [m for m in args.methods if m != DEFAULT]   # the default first: it sets the budget
    rows = []
    for name in args.problems:
        problem, data, floor, repeats = problem_setup(name, config)
        context = Context(data.n_train if data is not None else None, floor)
        oracle_of = lambda seed: Oracle(problem, data, repeats, seed, traces)  # noqa: E731
        fresh_oracles = functools.lru_cache(maxsize=None)(oracle_of)   # one per seed: methods share a point's fresh trainings
        files = {}
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            oracle, initial, budget = oracle_of(seed), None, None
            for method in methods:
                path = f"front_quality/{name}_{method}_{seed}_{args.equal}{args.rounds}.parquet"
                if not os.path.exists(path) and args.summary_only:
                    continue
                if initial is None:
                    initial = sample(problem, K0, rng(seed, name, "front_quality", "initial"))
                if budget is None and method != DEFAULT:
                    continue   # no default chain for this seed: no budget
                start = time.perf_counter()
                evals = cached(path, lambda: run_chain(method, problem, oracle, initial, settings, seed,
                                                       budget if budget is not None else np.inf, context)
                               if method != DEFAULT else
                               run_default(problem, oracle, initial, settings, seed, args.rounds, context))
                if method == DEFAULT:
                    budget = budget_of(evals)
                if time.perf_counter() - start > 1:
                    print(f"{name} seed {seed} {method}: {time.perf_counter() - start:.0f} s", flush=True)
                files[(method, seed)] = (path, budget)
        if not files:
            continue
        best_known = best_known_region(name, problem, oracle_of, [p for p, _ in files.values()], metric_settings, floor,
                                       args.best_known_random)
        fresh, best_known_fresh, at_clock = ({}, np.nan, {}) if args.no_fresh else fresh_scores(
            name, files, fresh_oracles, metric_settings, floor)
        targets = {}
        for (method, seed), (path, budget) in files.items():
            evals = read_frame(path)
            if method == DEFAULT:
                region = next(m for m in metric_settings.metrics(floor) if m.name == "region")
                targets[seed] = region.value(evals["epsilon"], evals["error"])
        for (method, seed), (path, budget) in files.items():
            evals = read_frame(path)
            rows.append({"problem": name, "method": method, "seed": seed, "floor": floor, "budget": budget,
                         "best_known": best_known,
                         **summarise(evals, metric_settings, floor, budget, targets[seed], best_known,
                                     fresh.get((method, seed)), best_known_fresh),
                         **at_clock.get((method, seed), {})})
    table = pd.DataFrame(rows)
    table.to_csv("front_quality/per_seed.csv", index=False)
    report(table, metric_settings)
    compact_report(table)
    for metric in ("region_fresh", "region_fresh_clock"):
        if metric in table:
            compact_report(table, metric)
    check_targets(table, metric_settings)
    last_line(table)


def fresh_scores(name: str, files: dict, fresh_oracles, metric_settings: MetricSettings, floor: float):
    """Every method's front within its budget retrained (`fresh_front`, cached beside its evaluations), the
    region score of the pooled front retrained the same way, and each method's retrained front at equal
    wall-clock: every method of a seed cut at the least that any of them took for the budget (the untraced
    default only sets the budget: it is not one of the methods compared)."""
    region_top = metric_settings.region(floor).epsilon_high
    region = next(m for m in metric_settings.metrics(floor) if m.name == "region")
    kept = {key: within(read_frame(path), budget) for key, (path, budget) in files.items()}
    fresh = {(method, seed): cached(f"{files[method, seed][0].removesuffix('.parquet')}_fresh{FRESH}.parquet",
                                    lambda: fresh_front(fresh_oracles(seed), rows, floor, region_top))
             for (method, seed), rows in kept.items()}
    pooled = pd.concat(kept.values(), ignore_index=True)
    best = cached(f"front_quality/{name}_best_known_fresh{FRESH}_{len(files)}.parquet",
                  lambda: fresh_front(fresh_oracles(0), pooled, floor, region_top))
    took = {key: float(row_seconds(rows).sum()) for key, rows in kept.items()}
    clock = {seed: min([t for (m, s), t in took.items() if s == seed and m != DEFAULT] or [took[DEFAULT, seed]])
             for _, seed in files}
    at_clock = {}
    for (method, seed), rows in kept.items():
        front = cached(f"{files[method, seed][0].removesuffix('.parquet')}_fresh{FRESH}_clock{clock[seed]:.0f}.parquet",
                       lambda: fresh_front(fresh_oracles(seed), within_seconds(rows, clock[seed]), floor, region_top))
        at_clock[method, seed] = {"clock_seconds": clock[seed], "seconds_for_budget": took[method, seed],
                                  "region_fresh_clock": region.value(front["epsilon"], front["error"]) if len(front) else 0.0}
    return fresh, region.value(best["epsilon"], best["error"]), at_clock


def run_default(problem, oracle, initial, settings, seed, rounds, context) -> pd.DataFrame:
    """The default config's DPareto without traces: 16 + `rounds` evaluations (its cost is the budget)."""
    evals, previous = oracle(initial).assign(proposal_seconds=np.nan), None
    proposer = DPareto(settings)
    for r in range(rounds):
        points, previous = proposer.round(problem, evals, 1, seed, 0, r, K0, previous, context=context)
        new = oracle(points[problem.names]).assign(proposal_seconds=float(points["proposal_seconds"].iloc[0]))
        evals = pd.concat([evals, new], ignore_index=True)
    return evals


def check_targets(table: pd.DataFrame, metric_settings: MetricSettings) -> None:
    """Issue TRACE's targets, per problem, at equal training cost: DPareto with traces against the default
    DPareto and against random sampling with traces (better, p < 0.05); any method better than it
    (p < 0.05) on region or at a best-error level; its gap to the best-known front; the share of the
    budget at which it reached the default's final region score (per seed)."""
    print("\n### Targets\n")
    levels = [m.name for m in metric_settings.metrics(0.5) if m.name.startswith("best-error")]
    for name, group in table.groupby("problem", sort=False):
        wide = {m: g.set_index("seed") for m, g in group.groupby("method", sort=False)}
        if REFERENCE not in wide:
            continue
        ours = wide[REFERENCE]

        def diff(method, metric):
            seeds = ours.index.intersection(wide[method].index)
            return paired(ours.loc[seeds, metric].to_numpy(float), wide[method].loc[seeds, metric].to_numpy(float))

        lines = []
        for other in ("dpareto", "random+traces"):
            if other in wide:
                mean, _, _, p = diff(other, "region")
                lines.append(f"against {other}: {mean:+.4f} (p = {p:.2g}), "
                             + ("better" if mean > 0 and p < 0.05 else "not shown better"))
        better = []
        for other in wide:
            if other == REFERENCE:
                continue
            mean, _, _, p = diff(other, "region")
            if mean < 0 and p < 0.05:
                better.append(f"{other} better on region by {-mean:.4f} (p = {p:.2g})")
            for level in levels:
                mean, _, _, p = diff(other, level)
                if mean > 0 and p < 0.05:   # a lower best error is better
                    better.append(f"{other} reaches a lower {level} by {mean:.4f} (p = {p:.2g})")
        lines.append("; ".join(better) if better else "no method better (p < 0.05)")
        lines.append(f"gap to the best-known front {ours['gap_to_best_known'].mean():.1%} "
                     f"(default {wide['dpareto']['gap_to_best_known'].mean():.1%})" if "dpareto" in wide else "")
        shares = ours["cost_to_default"].to_numpy(float)
        lines.append("budget share to reach the default's region score, per seed: "
                     + ", ".join("not reached" if np.isinf(v) else f"{v:.2f}" for v in shares)
                     + f" (median {np.median(shares):.2f})")
        print(f"- **{name}**: " + "; ".join(line for line in lines if line))


def compact_report(table: pd.DataFrame, metric: str = "region") -> None:
    """Per problem, one row per method: its seeds, trainings and rows within the budget, mean ± 95 %
    half-width on `metric`, the paired difference DPareto with traces − it (95 % interval, p), the
    gap to the best-known front, the share of its first trainings at the floor, and the median
    seconds per proposal."""
    for name, group in table.groupby("problem", sort=False):
        ours = group[group["method"] == REFERENCE].set_index("seed")[metric]
        blocks = [c for c in group.columns if c.startswith("at_floor")]
        unit = "epochs" if EQUAL == "cost" else "trainings"
        print(f"\n### {name}, {metric} at equal {'training cost' if EQUAL == 'cost' else 'trainings'} "
              f"({group['budget'].mean():.0f} {unit} per seed on average)\n")
        print(f"| method | seeds | trainings / rows | {metric} | DPareto+traces − it (95 % CI), p | gap to best known | "
              "at the floor, trainings " + " / ".join(c.removeprefix("at_floor_rounds_").replace("_", "–") for c in blocks)
              + " | s per proposal |")
        print("|---|---|---|---|---|---|---|---|")
        for method, g in group.groupby("method", sort=False):
            v = g.set_index("seed")[metric]
            half = stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else np.nan
            if method == REFERENCE or ours.empty:
                diff = "—"
            else:
                seeds = ours.index.intersection(v.index)
                mean, lo, hi, p = paired(ours[seeds].to_numpy(), v[seeds].to_numpy())
                diff = f"{mean:+.4f} ({lo:+.4f}, {hi:+.4f}), p = {p:.2g}" + ("" if len(seeds) == len(v) else f" ({len(seeds)} seeds)")
            floors = " / ".join(f"{g[c].mean():.2f}" for c in blocks)
            print(f"| {method} | {len(v)} | {g['trainings'].mean():.0f} / {g['rows'].mean():.0f} | {v.mean():.4f} ± {half:.4f} "
                  f"| {diff} | {g['gap_to_best_known'].mean():.1%} | {floors} | {g['seconds_per_proposal'].median():.3g} |")


def report(table: pd.DataFrame, metric_settings: MetricSettings) -> None:
    """Every metric of every method (paired against DPareto with traces), into front_quality/paired.csv too."""
    metric_names = [m.name for m in metric_settings.metrics(0.5)]
    lines = []
    for name, group in table.groupby("problem", sort=False):
        wide = {m: g.set_index("seed") for m, g in group.groupby("method", sort=False)}
        seeds = sorted(set.intersection(*(set(g.index) for g in wide.values())))
        print(f"\n## {name}: {len(seeds)} seeds, equal training cost")
        print("| metric | " + " | ".join(wide) + " |")
        print("|---|" + "---|" * len(wide))
        extra = [c for c in ("region_fresh", "region_fresh_clock", "gap_fresh", "listed_minus_fresh", "front_points",
                             "seconds_for_budget", "best-error@1_fresh") if c in group]
        for metric in metric_names + ["cost_to_default", "gap_to_best_known"] + extra:
            cells = []
            for method, g in wide.items():
                v = g.loc[seeds, metric].to_numpy(float)
                if method == REFERENCE or REFERENCE not in wide:
                    half = stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else np.nan
                    cells.append(f"{v.mean():.4f} ± {half:.4f}")
                else:
                    mean, lo, hi, p = paired(wide[REFERENCE].loc[seeds, metric].to_numpy(float), v)
                    cells.append(f"{v.mean():.4f}; ours − it {mean:+.4f} ({lo:+.4f}, {hi:+.4f}) p={p:.2g}")
                    lines.append({"problem": name, "metric": metric, "method": method, "difference": mean, "p": p})
            print(f"| {metric} | " + " | ".join(cells) + " |")
    pd.DataFrame(lines).to_csv("front_quality/paired.csv", index=False)


def paired_ratio(rows: pd.DataFrame, anchor: str, metric: str, what: str, key: str) -> None:
    """The reference against `anchor` on `metric` over their shared seeds: the paired difference, then key=ratio."""
    ours = rows[rows["method"] == REFERENCE].set_index("seed")[metric]
    theirs = rows[rows["method"] == anchor].set_index("seed")[metric]
    seeds = ours.index.intersection(theirs.index)
    mean, lo, hi, p = paired(ours[seeds].to_numpy(), theirs[seeds].to_numpy())
    print(f"\nadult-logreg-sgd, {what}: {REFERENCE} − {anchor} {mean:+.4f} ({lo:+.4f}, {hi:+.4f}), p = {p:.3g}, "
          f"{len(seeds)} seeds")
    print(f"{key}={ours[seeds].mean() / theirs[seeds].mean():.4f}")


def last_line(table: pd.DataFrame) -> None:
    adult = table[table["problem"] == "adult-logreg-sgd"]
    if "region_fresh" in table and {REFERENCE, "optuna-tpe+traces"} <= set(adult["method"]):
        paired_ratio(adult, "optuna-tpe+traces", "region_fresh", "region of fresh trainings at equal training cost",
                     "region_fresh_over_tpe")
    elif {REFERENCE, DEFAULT} <= set(adult["method"]):
        paired_ratio(adult, DEFAULT, "region", "region at equal training cost", "region_traced_over_default")


if __name__ == "__main__":
    main()
