"""Answers bought with the user's time: a cheap mechanism's declared questions answered by the clock
(`bo.timed_questions`) beside today's count rules and beside the random search any user could write, all three at
the wall-clock today's chain and search spend, measured in the same run (issue BUDGET).

Problem: the clamped Laplace mean of `benchmarks/laplace_mean_front.py` (examples/laplace_mean.py), over Adult's ages
(`--column ages`) or the skewed heavy-tailed column (`--column skewed --epsilon-ms 1`: an epsilon oracle of 1 ms).
Questions epsilon <= 0.001 and utility >= 0.99. Per seed:
- `count`: today's default: the DPareto chain (8 + `--rounds` proposals, R = 3), then each question's count search
  (`dpareto.question_trainings`, 8) and settling (`bo.query_round`). Its wall-clock W (chain and both questions) is
  the budget of the other two.
- `time`: the new default: the chain with batch rounds (`bo.batch_rounds`: each round's batch sized from the round
  before's proposal and evaluation seconds, as `chain_round.propose_round` sizes it), then each question answered
  by the clock with the default `dpareto.question_seconds` (`query_round.timed_answer`); its wall-clock T (chain and
  questions) is the random search's budget;
- `time@W`: today's chain (the same points as `count`'s), each question answered by the clock with
  (W - the chain's seconds) / 2: today's wall-clock;
- `random`: T seconds of random search with the answer rule a user would write: 80 % of W on random points of the
  domain (log-uniform where log) x 3 trainings; then, for utility >= U, the least-epsilon points whose 3 trainings
  all reached U get 40 fresh trainings each, in epsilon order, and the answer is the first whose fresh trainings'
  Wilson lower bound (z = 1.645) reaches 0.9 (stated P: their share); for epsilon <= E, the 8 best points by their
  3-training mean with epsilon <= E get 40 fresh trainings each and the answer is the best fresh mean.
Each chain's front: its region metric at its points' expected utilities (closed form) over the exact front's.
Each answer is retrained 200 times (seeds apart from everything above). Scores: utility answers' epsilon over the
closed form's least epsilon at which one release reaches U with the answer's stated P (`least_epsilon_reaching`;
the issue's measure) and at the share of its retrainings reaching U, capped at 0.995 (the paired measure: a stated P
of 1 from 40 trainings has no least epsilon), their share of retrainings reaching U, and stated P minus that share; epsilon answers' retrained mean minus the best
expected utility at epsilon <= E (closed form). Paired differences over seeds with t-test p-values.
Last line: the medians of the epsilon ratios and the mean epsilon gaps of the three, and time's ratio to random.
Run: ./in-env python benchmarks/time_budget.py [--seeds 8] [--column ages|skewed] [--epsilon-ms 0]
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import yaml  # noqa: E402
from scipy import stats  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))

from laplace_mean_front import K0, QUERIES, setting  # noqa: E402

from dptradeoff.baselines.random_search import sample  # noqa: E402
from dptradeoff.bo import batch_rounds  # noqa: E402
from dptradeoff.bo.propose import Context, DPareto, Settings  # noqa: E402
from dptradeoff.problems.evaluate import evaluate  # noqa: E402
from dptradeoff.bo.query_round import question_clock, settled_answer, timed_answer  # noqa: E402
from dptradeoff.bo.question_search import search_question  # noqa: E402
from dptradeoff.bo.timed_questions import wilson  # noqa: E402
from dptradeoff.seeds import rng  # noqa: E402
from dptradeoff.stats.front_metrics import region_hypervolume  # noqa: E402
from dptradeoff.stats.region import DerivedRegion  # noqa: E402

RETRAIN, FRESH, FINALISTS, SCREEN_SHARE = 200, 40, 8, 0.8
SHARE_CAP = 0.995   # the paired ratio is at the share of retrainings reaching U, capped (P = 1: no least epsilon)


def chain(problem, data, settings: Settings, context: Context, seed: int, rounds: int, batched: bool) -> pd.DataFrame:
    """The DPareto chain of 8 + `rounds` rounds, as the pipeline runs it (`chain_round.propose_round`): with
    `batched`, each round after the first a batch sized by the round before's proposal and evaluation seconds."""
    initial = sample(problem, K0, rng(seed, problem.name, "laplace", "initial"))
    evals = evaluate(problem, initial, data, 3, seed, "initial", 0)
    proposer, previous, size = DPareto(settings), None, 1
    for r in range(rounds):
        start = time.perf_counter()
        points, previous = batch_rounds.propose_batch(proposer, problem, evals, size, seed, 0, r, K0, previous,
                                                      context, len(evals))
        proposed = time.perf_counter() - start
        new = evaluate(problem, points[problem.names], data, 3, seed, "dpareto", 0, len(evals))
        per_point = (time.perf_counter() - start - proposed) / len(new)
        new["batch_size"] = len(points)
        evals = pd.concat([evals, new.assign(steers=points["steers"].to_numpy())], ignore_index=True)
        size = batch_rounds.batch_size(proposed, per_point) if batched else 1
    return evals


def random_search(problem, data, seconds: float, seed: int) -> dict:
    """The peer (module doc): {kind: (point dict, epsilon, stated P or NaN)} within `seconds`."""
    oracle, n, start = problem.oracle, data.n_train, time.perf_counter()
    draw = rng(seed, "random-peer")
    low = np.array([p.low for p in problem.domain]); high = np.array([p.high for p in problem.domain])
    logs = np.array([p.log for p in problem.domain])
    lo, hi = np.where(logs, np.log(low), low), np.where(logs, np.log(high), high)
    seen = []
    while time.perf_counter() - start < SCREEN_SHARE * seconds:
        x = lo + draw.random(len(lo)) * (hi - lo)
        point = dict(zip(problem.names, np.where(logs, np.exp(x), x)))
        eps = oracle.epsilon(point, n=n, delta=problem.delta)
        seen.append((point, eps, oracle.utilities(point, data, 3, draw)))
    out = {}
    for kind, target in QUERIES:
        if kind == "utility":
            pool = sorted((s for s in seen if np.all(s[2] >= target)), key=lambda s: s[1])
            answer = None
            for point, eps, _ in pool:
                if time.perf_counter() - start > seconds and answer is not None:
                    break
                fresh = oracle.utilities(point, data, FRESH, draw)
                hits = int(np.sum(fresh >= target))
                if answer is None or wilson(hits, FRESH, 1.645)[0] >= 0.9:
                    answer = (point, eps, hits / FRESH)
                if wilson(hits, FRESH, 1.645)[0] >= 0.9:
                    break
            out[kind] = answer
        else:
            pool = sorted((s for s in seen if s[1] <= target), key=lambda s: -s[2].mean())[:FINALISTS]
            scored = [(oracle.utilities(point, data, FRESH, draw).mean(), point, eps) for point, eps, _ in pool]
            out[kind] = max(scored, key=lambda s: s[0])[1:] + (math.nan,) if scored else None
    return out, len(seen)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=24)
    parser.add_argument("--column", choices=["ages", "skewed"], default="ages")
    parser.add_argument("--epsilon-ms", type=float, default=0.0)
    parser.add_argument("--methods", nargs="+", default=["time", "time@W"], choices=["time", "time@W"],
                        help="time: the default question_seconds; time@W: today's wall-clock W")
    args = parser.parse_args()
    from laplace_mean import ClampedLaplaceMean, exact_front, least_epsilon_reaching

    values, problem, data = setting(args.column, args.epsilon_ms)
    best_at = float(exact_front(values, np.array([0.001]))[0])
    grid = np.geomspace(1.5e-5, 4.0, 400)
    exact = exact_front(values, grid)
    region = DerivedRegion().region(grid, 1 - exact, 1.0, (grid[0], grid[-1]), [0.001])
    exact_score = region_hypervolume(grid, 1 - exact, region)

    def front_score(evals: pd.DataFrame) -> float:
        """The chain's region metric at its points' expected utilities (closed form), over the exact front's."""
        expected = np.array([ClampedLaplaceMean.expected_utility(dict(zip(problem.names, p)), values)
                             for p in evals[problem.names].to_numpy(float)])
        return region_hypervolume(evals["epsilon"], 1 - expected, region) / exact_score
    config = yaml.safe_load(open(os.path.join(os.path.dirname(HERE), "config", "config.yaml")))
    settings = Settings.from_config(config["dpareto"], config["statistics"])
    context = Context(data.n_train, 1.0, DerivedRegion(), QUERIES)
    rows = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        answers, spent = {}, {}
        start = time.perf_counter()
        evals = chain(problem, data, settings, context, seed, args.rounds, False)
        chain_seconds = time.perf_counter() - start
        answers["count"] = {}
        for kind, target in QUERIES:
            searched, _ = search_question(problem, evals, data, kind, target, settings, config["seed"], 0,
                                          settings.question_trainings, 3)
            answer, _, _ = settled_answer(problem, searched, data, kind, target, settings, config["seed"], 0)
            answers["count"][kind] = (answer.point, answer.epsilon, answer.reach_probability)
        wall = time.perf_counter() - start
        spent["count"] = wall
        budgets = {"time": settings.question_seconds, "time@W": max(0.5, (wall - chain_seconds) / 2)}
        fronts = {"count": front_score(evals)}
        for method in args.methods:
            start = time.perf_counter()
            answers[method] = {}
            used = evals
            if method == "time":   # the new default: a batched chain, then the questions' default seconds
                used = chain(problem, data, settings, context, seed, args.rounds, True)
                fronts[method] = front_score(used)
            for kind, target in QUERIES:
                clock = question_clock(problem, data, used, budgets[method], config["seed"])
                answer, _ = timed_answer(problem, used, data, kind, target, settings, clock, config["seed"], 0)
                answers[method][kind] = (answer.point, answer.epsilon, answer.reach_probability)
            spent[method] = time.perf_counter() - start + (chain_seconds if method != "time" else 0.0)
        start = time.perf_counter()
        answers["random"], screened = random_search(problem, data, spent["time"], seed)
        spent["random"] = time.perf_counter() - start
        for method, found in answers.items():
            row = {"seed": seed, "method": method, "seconds": spent[method], "budget": wall,
                   "front": fronts.get(method, np.nan)}
            for kind, target in QUERIES:
                got = found.get(kind)
                if got is None or got[0] is None:
                    continue
                point, eps, stated = got
                runs = problem.oracle.utilities(problem.check(point), data, RETRAIN, rng(seed, "budget-retrain", kind))
                if kind == "eps":
                    row["eps_gap"] = float(runs.mean() - best_at)
                    row["eps_epsilon"] = eps
                else:
                    share = float(np.mean(runs >= target))
                    stated = stated if np.isfinite(stated) else 0.95
                    row |= {"utility_epsilon": eps, "utility_stated": stated, "utility_reaching": share,
                            "utility_ratio": eps / least_epsilon_reaching(values, target, stated),
                            "utility_ratio_reached": eps / least_epsilon_reaching(values, target, min(share, SHARE_CAP))}
            rows.append(row)
            print(f"seed {seed} {method:6s} {row['seconds']:6.1f} s (W {wall:.1f} s, chain {chain_seconds:.1f} s) front "
                  f"{row['front']:.4f}  "
                  f"eps<=0.001 gap {row.get('eps_gap', np.nan):+.5f}  utility>=0.99: eps {row.get('utility_epsilon', np.nan):.3g} "
                  f"x{row.get('utility_ratio', np.nan):.2f} stated P {row.get('utility_stated', np.nan):.3f} reaching "
                  f"{row.get('utility_reaching', np.nan):.3f}" + (f"  ({screened} points screened)" if method == "random" else ""),
                  flush=True)
    table = pd.DataFrame(rows)
    os.makedirs("time_budget", exist_ok=True)
    table.to_csv(f"time_budget/per_seed_{args.column}_{args.first_seed}.csv", index=False)
    summarise(table)


def summarise(table: pd.DataFrame) -> None:
    by = {m: table[table["method"] == m].set_index("seed") for m in table["method"].unique()}
    print()
    for m, t in by.items():
        print(f"{m:6s} utility ratio median {t['utility_ratio'].median():.2f} max {t['utility_ratio'].max():.2f}; "
              f"reaching {t['utility_reaching'].min():.3f}-{t['utility_reaching'].max():.3f}; stated - reaching max "
              f"{(t['utility_stated'] - t['utility_reaching']).max():+.3f}; eps gap mean {t['eps_gap'].mean():+.5f} "
              f"worst {t['eps_gap'].min():+.5f}; ratio at the retrainings' share median "
              f"{t['utility_ratio_reached'].median():.2f}; front {t['front'].mean():.4f} (min {t['front'].min():.4f}); "
              f"seconds mean {t['seconds'].mean():.1f}")
    for other in ("random", "count"):
        for column, better in (("utility_ratio_reached", "lower"), ("eps_gap", "higher")):
            a, b = by["time"][column], by[other][column]
            d = (np.log(a) - np.log(b)) if column != "eps_gap" else (a - b)
            d = d.dropna()
            p = stats.ttest_1samp(d, 0.0).pvalue if len(d) > 1 and d.std() > 0 else float("nan")
            print(f"time - {other:6s} {column:13s} ({'log, ' if column != 'eps_gap' else ''}{better} is better): "
                  f"mean {d.mean():+.5f}, p = {p:.2g}, {len(d)} seeds")
    t, r = by["time"], by["random"]
    print(f"utility_ratio_time={t['utility_ratio'].median():.2f} utility_ratio_random={r['utility_ratio'].median():.2f} "
          f"utility_ratio_count={by['count']['utility_ratio'].median():.2f} eps_gap_time={t['eps_gap'].mean():+.5f} "
          f"eps_gap_random={r['eps_gap'].mean():+.5f} eps_gap_count={by['count']['eps_gap'].mean():+.5f} "
          f"time_over_random_ratio={np.exp(np.mean(np.log(t['utility_ratio_reached']) - np.log(r['utility_ratio_reached']))):.3f}")


if __name__ == "__main__":
    main()
