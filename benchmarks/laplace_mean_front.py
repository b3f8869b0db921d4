"""Does DPareto find the front of a problem nobody here tuned? A pure epsilon-DP clamped Laplace mean over a
user's own column (examples/laplace_mean.py: the ages of Adult's 32,561 adult.data rows, from the embedded
wheel), whose exact front is known in closed form.

Problem: scale in [1e-3, 10] (log), lower in [0, 35], upper in [40, 120]; utility 1 - |error|/100, R = 3;
queries epsilon <= 0.001 and utility >= 0.99. Per seed, from the same 8 random initial points, two DPareto
chains of `--rounds` proposals (default 24: the README's 8 + 24), one point a round:
- `before`: the previous behaviour, the fixed region [0.01, 10] (statistics.region) and no query rounds;
  its answers the GP's search of the whole domain (`FrontQuery`, the answers carried before the `query` rule);
- `now`: the problem's region (`region: auto`, stats.region.DerivedRegion) and query rounds (every 4th); each
  question answered by the one rule (`bo.query_round.question_clock` and `timed_answer`: searched for
  `--question-seconds`, default the config's `dpareto.question_seconds`, then stated by fresh trainings made
  after the choice).
Every seed's chains, questions and retrainings have seeds of their own (from the seed index).
Per chain:
- `front`: the region metric of the chain's points at their EXPECTED utilities (closed form: the points found,
  not their noisy measurements) over the problem's own region (the rule applied to the exact front), as a
  share of the exact front's; target >= 0.98;
- `eps<=0.001`: the answer's 200 retrainings' mean utility minus the best expected utility at epsilon <= 0.001
  (exact front); target >= -0.003;
- `utility>=0.99`: the share of its answer's 200 retrainings that reach 0.99 (target >= 0.85), its true P
  (closed form), its epsilon over the least epsilon at which one release reaches 0.99 with the probability the
  answer states (closed form, `laplace_mean.least_epsilon_reaching`) and at P 0.9 (the level asked); `now`: the
  search's trainings and the fresh ones that state the answer.
Retrainings are the plain oracle's (no `--epsilon-ms`/`--training-ms` delays: scoring is not what a method spends).
Last line: front_now_over_before=<mean ratio> eps_answer_gap_now=<mean> eps_answer_gap_before=<mean> ...
utility_eps_ratio_now=<median> ...
`--column skewed --epsilon-ms 1 --variants now --seeds 16`: the heavy-tailed problem of issue SURE, a skewed
log-normal column (`skewed`) whose clamped mean's utility has outliers, and an epsilon oracle of about 1 ms
(`--training-ms 25`: a training of 25 ms as well; `--no-calibrate`: the oracle without `calibrate`).
`setting`, `K0`, `QUERIES`, `true_reach` and `retrainings` are benchmarks/time_budget.py's too.
Run: ./in-env python benchmarks/laplace_mean_front.py [--seeds 8] [--rounds 24]   (the chains, and the `now`
questions' seconds: 2 x 10 s a seed by default)
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import time

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy import stats  # noqa: E402

from dptradeoff.baselines.random_search import sample  # noqa: E402
from dptradeoff.bo.propose import Context, DPareto, Settings  # noqa: E402
from dptradeoff.bo.query import FrontQuery, query_rng  # noqa: E402
from dptradeoff.bo.query_round import question_clock, timed_answer  # noqa: E402
from dptradeoff.problems import resolve  # noqa: E402
from dptradeoff.problems.evaluate import evaluate  # noqa: E402
from dptradeoff.problems.oracle import Data  # noqa: E402
from dptradeoff.seeds import rng  # noqa: E402
from dptradeoff.stats.front_metrics import region_hypervolume  # noqa: E402
from dptradeoff.stats.region import DerivedRegion  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFINITION = {"oracle": os.path.join(ROOT, "examples", "laplace_mean.py") + ":ClampedLaplaceMean",
              "utility": "1 - |error|/100", "delta": 1e-5, "repeats": 3,
              "domain": {"scale": {"low": 1e-3, "high": 10.0, "log": True}, "lower": {"low": 0.0, "high": 35.0},
                         "upper": {"low": 40.0, "high": 120.0}}}
QUERIES = (("eps", 0.001), ("utility", 0.99))
K0, RETRAIN = 8, 200


def skewed() -> np.ndarray:
    """A skewed column with a long right tail (32,561 log-normal values, median 27, 99th percentile 137, clipped to
    [1, 400], rounded; seed 3): its clamped mean's utility has outliers where the clamp or the noise is wide."""
    return np.clip(np.round(np.exp(np.random.default_rng(3).normal(3.3, 0.7, 32561))), 1, 400)


def ages() -> np.ndarray:
    """Adult's adult.data ages (the embedded fairness wheel): the user's own column."""
    import sys

    sys.path.insert(0, os.path.join(ROOT, "examples"))
    from adult_income_csv import adult_people

    return adult_people()["age"].astype(float).to_numpy()


def setting(column: str, epsilon_ms: float = 0.0, training_ms: float = 0.0, calibrate: bool = True):
    """(the column's values, the problem, its prepared data): `column` ages or skewed, each epsilon made to take
    `epsilon_ms` milliseconds (a computed privacy oracle) and each training `training_ms` milliseconds (a dear
    release: a sleep before each, so it costs wall-clock, not CPU); `calibrate` False: the oracle has no
    `calibrate` (the one rule then moves candidates onto an epsilon level by `_onto_level`)."""
    import sys
    import time

    sys.path.insert(0, os.path.join(ROOT, "examples"))
    from laplace_mean import ClampedLaplaceMean

    values = ages() if column == "ages" else skewed()
    problem = resolve("laplace-mean", DEFINITION)
    if epsilon_ms > 0 or training_ms > 0 or not calibrate:
        class Slow(ClampedLaplaceMean):
            def epsilon(self, point, *, n, delta):
                if epsilon_ms > 0:
                    time.sleep(epsilon_ms / 1000)
                return super().epsilon(point, n=n, delta=delta)

            def utility(self, point, data, rng):
                if training_ms > 0:
                    time.sleep(training_ms / 1000)
                return super().utility(point, data, rng)

        if not calibrate:
            Slow.calibrate = None   # no calibrate(): `callable(getattr(oracle, "calibrate", None))` is False
        problem = dataclasses.replace(problem, oracle=Slow())
    raw = Data(values[:, None], np.zeros(len(values)), values[:, None], np.zeros(len(values)), "user CSV", column)
    return values, problem, problem.oracle.prepare(raw)


P_CAP = 1 - 1e-4   # a probability read as at most this where a least epsilon is taken at it (1: none exists)


def true_reach(values: np.ndarray, point: dict, target: float) -> float:
    """P(one release of `point` reaches utility `target`), by the closed form (`laplace_mean.reach_probability` at
    the point's clamping bias and scale): the truth an answer's stated P is held to."""
    from laplace_mean import reach_probability

    bias = np.clip(values, point["lower"], point["upper"]).mean() - values.mean()
    return float(reach_probability(bias, point["scale"], 100.0 * (1.0 - target)))


def retrainings(values: np.ndarray, point: dict, data, count: int, generator: np.random.Generator) -> np.ndarray:
    """`count` releases of `point` by the plain oracle (no delays: scoring is not what a method spends)."""
    from laplace_mean import ClampedLaplaceMean

    return np.asarray(ClampedLaplaceMean().utilities(point, data, count, generator), dtype=float)


def chain(problem, data, settings: Settings, context: Context, seed: int, rounds: int) -> pd.DataFrame:
    initial = sample(problem, K0, rng(seed, problem.name, "laplace", "initial"))
    evals = evaluate(problem, initial, data, 3, seed, "initial", 0)
    proposer, previous = DPareto(settings), None
    for r in range(rounds):
        points, previous = proposer.round(problem, evals, 1, seed, 0, r, K0, previous, context=context)
        new = evaluate(problem, points[problem.names], data, 3, seed, "dpareto", 0, K0 + r)
        evals = pd.concat([evals, new.assign(steers=points["steers"].iloc[0])], ignore_index=True)
    return evals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=24)
    parser.add_argument("--variants", nargs="+", default=["before", "now"], choices=["before", "now"])
    parser.add_argument("--column", choices=["ages", "skewed"], default="ages",
                        help="the column: Adult's ages, or a skewed log-normal one (`skewed`: a heavy-tailed utility)")
    parser.add_argument("--epsilon-ms", type=float, default=0.0,
                        help="make each epsilon take this many milliseconds (a computed privacy oracle)")
    parser.add_argument("--training-ms", type=float, default=0.0,
                        help="make each training take this many milliseconds (a dear release)")
    parser.add_argument("--no-calibrate", action="store_true",
                        help="the oracle without calibrate(): candidates moved onto a level by the exact epsilon")
    parser.add_argument("--question-seconds", type=float, default=None,
                        help="`now`: each question's seconds (default: the config's dpareto.question_seconds)")
    args = parser.parse_args()
    values, problem, data = setting(args.column, args.epsilon_ms, args.training_ms,
                                    not args.no_calibrate)   # puts examples/ on the path
    from laplace_mean import ClampedLaplaceMean, exact_front, least_epsilon_reaching

    n = data.n_train
    grid = np.geomspace(1.5e-5, 4.0, 400)
    exact = exact_front(values, grid)
    region = DerivedRegion().region(grid, 1 - exact, 1.0, (grid[0], grid[-1]), [0.001])
    exact_score = region_hypervolume(grid, 1 - exact, region)
    best_at = float(exact_front(values, np.array([0.001]))[0])
    least_at_level = least_epsilon_reaching(values, QUERIES[1][1], 0.9)
    print(f"n = {n}; the problem's region (rule on the exact front): epsilon in [{region.epsilon_low:.3g}, "
          f"{region.epsilon_high:.3g}], error below {region.error_floor:.3g}; exact front's region metric "
          f"{exact_score:.4f}; best expected utility at epsilon <= 0.001: {best_at:.5f}")
    import yaml

    config = yaml.safe_load(open(os.path.join(ROOT, "config", "config.yaml")))
    base = Settings.from_config(config["dpareto"], config["statistics"])
    seconds = args.question_seconds if args.question_seconds is not None else base.question_seconds
    variants = {
        "before": (Settings(**{**base.__dict__, "query_every": 0}), Context(n, 1.0)),
        "now": (base, Context(n, 1.0, DerivedRegion(), QUERIES)),
    }
    rows = []
    for seed in range(args.seeds):
        for name, (settings, context) in [(v, variants[v]) for v in args.variants]:
            evals = chain(problem, data, settings, context, seed, args.rounds)
            expected = np.array([ClampedLaplaceMean.expected_utility(dict(zip(problem.names, p)), values)
                                 for p in evals[problem.names].to_numpy(float)])
            score = region_hypervolume(evals["epsilon"], 1 - expected, region) / exact_score
            row = {"seed": seed, "method": name, "front": score,
                   "below_0.01": float(np.mean(evals["epsilon"].iloc[K0:] < 0.01))}
            for kind, target in QUERIES:
                if name == "before":   # the previous answers: the GP's search of the whole domain
                    query = FrontQuery(problem, evals, data, settings,
                                       query_rng(seed, problem.name, kind, target, 0))
                    answer = query.for_epsilon(target, True) if kind == "eps" else query.for_utility(target, True)
                    added = 0
                else:                  # the query rule's: the one rule (bo.timed_questions), searched for its
                    started = time.perf_counter()   # seconds, stated by fresh trainings after the choice
                    clock = question_clock(problem, data, evals, seconds, seed, settings.question_trainings, None,
                                           started)
                    answer, said = timed_answer(problem, evals, data, kind, target, clock, seed, 0)
                    added = int(said["fresh_trainings"])
                    row[f"{kind}_searched"] = said["search_trainings"]
                    row[f"{kind}_note"] = said["search_note"]
                    row[f"{kind}_seconds"] = time.perf_counter() - started
                row[f"{kind}_added"] = added
                if answer.point is None:
                    row[f"{kind}_answered"] = False
                    continue
                runs = retrainings(values, problem.check(answer.point), data, RETRAIN,
                                   rng(seed, "laplace", "retrain", kind, target))
                row[f"{kind}_answered"] = True
                row[f"{kind}_epsilon"] = answer.epsilon
                row[f"{kind}_retrained"] = runs.mean()
                row[f"{kind}_inside"] = float(np.mean((runs >= answer.interval_low) & (runs <= answer.interval_high)))
                row[f"{kind}_edge"] = answer.edge
                if kind == "eps":
                    row["eps_gap"] = runs.mean() - best_at
                else:
                    row["utility_reaching"] = float(np.mean(runs >= target))
                    stated = answer.reach_probability if np.isfinite(answer.reach_probability) else 0.95
                    row["utility_stated"] = stated
                    row["utility_true_p"] = true_reach(values, problem.check(answer.point), target)
                    row["utility_eps_ratio"] = answer.epsilon / least_epsilon_reaching(values, target,
                                                                                       min(stated, P_CAP))
                    row["utility_eps_ratio_09"] = answer.epsilon / least_at_level
            rows.append(row)
            print(f"seed {seed} {name:6s} front {score:.4f} (points below eps 0.01: {row['below_0.01']:.2f})  "
                  f"eps<=0.001: retrained {row.get('eps_retrained', np.nan):.5f} gap {row.get('eps_gap', np.nan):+.5f} "
                  f"inside {row.get('eps_inside', np.nan):.2f}  utility>=0.99: eps {row.get('utility_epsilon', np.nan):.3g} "
                  f"(x{row.get('utility_eps_ratio', np.nan):.1f} the least at stated P "
                  f"{row.get('utility_stated', np.nan):.2f}) reaching {row.get('utility_reaching', np.nan):.2f} "
                  f"true P {row.get('utility_true_p', np.nan):.3f}, x{row.get('utility_eps_ratio_09', np.nan):.2f} the least "
                  f"at P 0.9) searched {row.get('eps_searched', 0)}+{row.get('utility_searched', 0)} "
                  f"fresh {row.get('eps_added', 0)}+{row.get('utility_added', 0)} "
                  f"{row.get('utility_edge') or ''}", flush=True)
    table = pd.DataFrame(rows)
    os.makedirs("laplace_mean_front", exist_ok=True)
    table.to_csv(f"laplace_mean_front/per_seed_{args.column}.csv", index=False)
    if len(args.variants) < 2:
        now = table.set_index("seed")
        print(f"eps<=0.001 gaps: worst {now['eps_gap'].min():+.5f}; utility>=0.99: P stated >= 0.9 in "
              f"{int((now['utility_stated'] >= 0.9).sum())} of {len(now)}, reaching its target in "
              f"{now['utility_reaching'].min():.2f}-{now['utility_reaching'].max():.2f} of retrainings, epsilon over the "
              f"least at the stated P {now['utility_eps_ratio'].min():.2f}-{now['utility_eps_ratio'].max():.2f}, at P "
              f"0.9 {now['utility_eps_ratio_09'].min():.2f}-{now['utility_eps_ratio_09'].max():.2f}; stated P - true P "
              f"{(now['utility_stated'] - now['utility_true_p']).min():+.3f} to "
              f"{(now['utility_stated'] - now['utility_true_p']).max():+.3f}; "
              f"trainings searching {now.get('eps_searched', pd.Series([0])).max():.0f}/"
              f"{now.get('utility_searched', pd.Series([0])).max():.0f} at most")
        print(f"front={now['front'].mean():.4f} eps_answer_gap={now['eps_gap'].mean():+.5f} utility_reaching="
              f"{now['utility_reaching'].mean():.3f} utility_eps_ratio={now['utility_eps_ratio'].median():.2f} "
              f"utility_eps_ratio_09={now['utility_eps_ratio_09'].median():.2f} "
              f"column={args.column} seeds={args.seeds}")
        return
    now, before = (table[table["method"] == m].set_index("seed") for m in ("now", "before"))
    print()
    for column in ["front", "eps_gap", "eps_inside", "utility_reaching", "utility_true_p", "utility_inside",
                   "utility_epsilon", "utility_eps_ratio", "utility_eps_ratio_09", "below_0.01"]:
        if column not in now or column not in before:
            continue
        d = now[column] - before[column]
        p = stats.ttest_1samp(d.dropna(), 0.0).pvalue if d.dropna().std() > 0 else float("nan")
        print(f"{column:20s} now {now[column].mean():.5f}  before {before[column].mean():.5f}  now - before "
              f"{d.mean():+.5f} (p = {p:.2g}, {len(d.dropna())} seeds)")
    print(f"front_now_over_before={now['front'].mean() / before['front'].mean():.4f} front_now={now['front'].mean():.4f} "
          f"eps_answer_gap_now={now['eps_gap'].mean():+.5f} eps_answer_gap_before={before['eps_gap'].mean():+.5f} "
          f"utility_reaching_now={now['utility_reaching'].mean():.3f} "
          f"utility_eps_ratio_now={now['utility_eps_ratio'].median():.2f} "
          f"utility_eps_ratio_09_now={now['utility_eps_ratio_09'].median():.2f} "
          f"utility_eps_ratio_before={before['utility_eps_ratio'].median():.2f} seeds={args.seeds}")


if __name__ == "__main__":
    main()
