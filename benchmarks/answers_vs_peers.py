"""Is DPareto's answer better than what the best peer's search would hand a practitioner? Where a practitioner
looks (epsilon <= 0.3 and epsilon <= 1, declared as queries), at equal training cost, on adult LogReg+SGD and
LogReg+Adam, paired over seeds.

Per problem and seed (benchmarks/front_quality.py's protocol: its 16 shared initial points, common random numbers,
the budget the default DPareto without traces spends on 16 + 48 evaluations):
- DPareto with traces and the two queries declared (`problems.<name>.queries`): every 4th round steers towards one
  of them (bo.answer_rounds); each answer is the trained point the `query` rule picks (`FrontQuery.for_epsilon`);
- Optuna TPE with traces (`optuna-tpe+traces`, the peer level with DPareto on the region metric): its answer is its
  best trained point at epsilon <= the target (the highest measured utility: what a practitioner reads off its
  trials).
Both answers are retrained `--retrain` times (fresh seeds, the same for both) and compared by the mean of those
retrainings: paired difference DPareto - TPE over seeds, 95 % t interval, two-sided p. Target (issue 44): DPareto
ahead on both problems at both epsilons, p < 0.05.

Chains are cached in --work/answers/ (a killed run resumes; the default chain and TPE's are front_quality.py's
files, shared with it when --work is the same).
Run: ./in-env python benchmarks/answers_vs_peers.py --work DIR [--seeds 8] [--problems ...]
Last line: answer_gain=<problem> eps<=<e>: <mean difference> (p = <p>) ... for every problem and target.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import front_quality as fq  # noqa: E402  (sets the one-thread environment first)
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import yaml  # noqa: E402

from dptradeoff.baselines.random_search import sample  # noqa: E402
from dptradeoff.bo.propose import Context, DPareto, Settings  # noqa: E402
from dptradeoff.bo.query import FrontQuery, query_rng  # noqa: E402
from dptradeoff.problems.traces import TraceSettings  # noqa: E402
from dptradeoff.seeds import rng  # noqa: E402
from dptradeoff.stats.region import FixedRegion  # noqa: E402

PROBLEMS = ["adult-logreg-sgd", "adult-logreg-adam"]
TARGETS = (0.3, 1.0)
PEER = "optuna-tpe+traces"
OURS = "dpareto+traces+queries"


def run_ours(problem, oracle, initial, settings, seed, budget, context) -> pd.DataFrame:
    """DPareto with traces and the queries declared, until it has spent the budget."""
    evals = oracle(initial, True).assign(proposal_seconds=np.nan, steers="initial")
    proposer, previous = DPareto(settings), None
    for r in range(fq.MAX_ROUNDS):
        if fq.spent(evals) >= budget:
            break
        points, previous = proposer.round(problem, evals, 1, seed, 0, r, fq.K0, previous, context=context)
        asked = points if "resumes" in points else points[problem.names]   # a continuation pays its added epochs
        new = oracle(asked, True).assign(proposal_seconds=float(points["proposal_seconds"].iloc[0]),
                                         steers=points["steers"].iloc[0], evaluation=r)
        evals = pd.concat([evals, new], ignore_index=True)
    return evals


def retrained(problem, data, point: dict, repeats: int, seed: int, target: float) -> float:
    runs = problem.oracle.utilities(problem.check(point), data, repeats, rng(seed, problem.name, "answers", "retrain", target))
    return float(np.mean(runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", required=True)
    parser.add_argument("--problems", nargs="+", default=PROBLEMS)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--retrain", type=int, default=20)
    parser.add_argument("--summary-only", action="store_true")
    args = parser.parse_args()
    os.chdir(args.work)
    os.makedirs("front_quality", exist_ok=True)
    os.makedirs("answers", exist_ok=True)
    config = yaml.safe_load(open(fq.CONFIG))
    settings = Settings.from_config(config["dpareto"], config["statistics"])
    traces = TraceSettings.from_config({**config["dpareto"], "traces": True})
    queries = tuple(("eps", t) for t in TARGETS)
    rows = []
    for name in args.problems:
        problem, data, floor, repeats = fq.problem_setup(name, config)
        plain = Context(data.n_train, floor)
        steered = Context(data.n_train, floor, FixedRegion(*settings.region), queries)
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            files = {m: f"front_quality/{name}_{m}_{seed}_cost48.parquet" for m in (fq.DEFAULT, PEER)}
            files[OURS] = f"answers/{name}_{OURS}_{seed}_cost48.parquet"
            if args.summary_only and not all(os.path.exists(f) for f in files.values()):
                continue
            oracle = fq.Oracle(problem, data, repeats, seed, traces)
            initial = sample(problem, fq.K0, rng(seed, name, "front_quality", "initial"))
            start = time.perf_counter()
            default = fq.cached(files[fq.DEFAULT], lambda: fq.run_default(problem, oracle, initial, settings, seed, 48, plain))
            budget = fq.budget_of(default)
            peer = fq.cached(files[PEER], lambda: fq.run_chain(PEER, problem, oracle, initial, settings, seed, budget, plain))
            ours = fq.cached(files[OURS], lambda: run_ours(problem, oracle, initial, settings, seed, budget, steered))
            peer, ours = fq.within(peer, budget), fq.within(ours, budget)
            row = {"problem": name, "seed": seed,
                   "query_rounds": int((ours["steers"].str.contains("query") & ours["trace_final"].astype(bool)).sum())}
            for target in TARGETS:
                query = FrontQuery(problem, ours, data, settings, query_rng(config["seed"], name, "eps", target, 0))
                answer = query.for_epsilon(target)
                feasible = peer[peer["epsilon"] <= target].sort_values("utility", ascending=False)
                if answer.point is None or feasible.empty:
                    continue
                best = feasible.iloc[0][problem.names].to_dict()
                row[f"ours_{target:g}"] = retrained(problem, data, answer.point, args.retrain, seed, target)
                row[f"peer_{target:g}"] = retrained(problem, data, best, args.retrain, seed, target)
                row[f"ours_measured_{target:g}"] = answer.trainings and float(np.mean(answer.trainings))
                row[f"peer_measured_{target:g}"] = float(feasible.iloc[0]["utility"])
            rows.append(row)
            print(f"{name} seed {seed}: " + "  ".join(f"eps<={t:g} ours {row.get(f'ours_{t:g}', np.nan):.4f} "
                                                     f"TPE {row.get(f'peer_{t:g}', np.nan):.4f}" for t in TARGETS)
                  + f"  ({row['query_rounds']} query rounds, {time.perf_counter() - start:.0f} s)", flush=True)
    table = pd.DataFrame(rows)
    table.to_csv("answers/per_seed.csv", index=False)
    print("\n| problem | question | DPareto answer, retrained | TPE+traces best trained point, retrained | DPareto - TPE (95 % CI) | p | seeds |")
    print("|---|---|---|---|---|---|---|")
    last = []
    for name, group in table.groupby("problem", sort=False):
        for target in TARGETS:
            ours, peer = group[f"ours_{target:g}"], group[f"peer_{target:g}"]
            d = (ours - peer).dropna()
            mean, low, high, p = fq.paired(ours[d.index], peer[d.index])
            print(f"| {name} | epsilon <= {target:g} | {ours.mean():.4f} | {peer.mean():.4f} | {mean:+.4f} "
                  f"[{low:+.4f}, {high:+.4f}] | {p:.2g} | {len(d)} |")
            last.append(f"{name} eps<={target:g}: {mean:+.4f} (p = {p:.2g})")
    print("answer_gain=" + "; ".join(last))


if __name__ == "__main__":
    main()
