"""Answers bought with the user's time: a cheap or dear mechanism's declared questions answered by the one rule
(`bo.timed_questions`) beside a fair random search at the same wall-clock, paired over seeds (issues BUDGET, HONEST).

Problem: the clamped Laplace mean of `benchmarks/laplace_mean_front.py` (examples/laplace_mean.py), over Adult's ages
(`--column ages`) or the skewed heavy-tailed column (`--column skewed`); `--epsilon-ms 1`: an epsilon oracle of 1 ms;
`--training-ms 25`: a training of 25 ms (a sleep before each release, so it costs wall-clock, not CPU);
`--no-calibrate`: the oracle without `calibrate` (candidates are then moved onto a level by `_onto_level`). The
issue's problem is `--column skewed --epsilon-ms 1 --training-ms 25 --no-calibrate`.
Questions epsilon <= 0.001 and utility >= 0.99. Per seed (every replicate's chain, questions, fresh trainings,
retrainings and random peer have seeds of their own, from the seed index):
- `time` (the default): the DPareto chain with batch rounds (8 + `--rounds` rounds, R = 3; each round's batch sized
  from the round before's proposal and evaluation seconds, as `chain_round.propose_round` sizes it), then each
  question answered by the one rule (`query_round.question_clock` and `timed_answer`) with `--question-seconds`
  (default the config's `dpareto.question_seconds`, raised to `dpareto.question_trainings` trainings of the
  measured cost as the rule raises it). Its wall-clock T (chain and both questions) is the random peer's budget.
- `random`: the fair peer, T / 2 seconds a question by the rule's own clock (`timed_questions.measure`: the cost
  tiers, SEARCH_SHARE of the seconds searching, the rest buying fresh trainings, stopped by the wall clock). Its
  candidates are random points of the domain, each placed on an epsilon level exactly as the rule places its
  candidates (`TimedQuestion._placed`: the oracle's `calibrate`, else `_onto_level`) and trained by the rule's
  `_train` in its blocks. Epsilon <= E: every candidate placed on E (as many at once as the rule would place,
  `affordable`) and trained 2 blocks; the answer is the
  candidate of best mean - z_0.9 se (the rule's pick). Utility >= U: each candidate on a level drawn log-uniform
  between the least and the largest epsilon of 64 random points of the domain, and below the least epsilon
  settled so far once one is; raced alone with the rule's tests (closed when its Wilson upper bound, z = 1, falls
  below 0.9, or at ARM_MOST trainings; settled when its one-sided 95 % Wilson lower bound clears `settle_level` of
  the planned fresh trainings and then, once, on new trainings, `_confirmed`); the answer is the least-epsilon
  settled candidate, else the likeliest (as the rule's). Its answer is stated, as the rule's is, by fresh trainings
  made after the choice (`TimedQuestion.fresh`, `fresh_statement`).
Each `time` chain's front: its region metric at its points' expected utilities (closed form) over the exact front's.
Each answer is retrained 200 times by the plain oracle (no delays; seeds apart from everything above). Scores:
utility answers' true P (closed form, `laplace_mean_front.true_reach`), their stated P (the fresh share) and the share
of retrainings reaching U; their epsilon over the closed form's least epsilon at which one release reaches U with P
0.9 (the level asked: the issue's measure), with the stated P, and with the answer's true P (the paired measure: how
near the answer lies to the least epsilon of what it delivers; P read at most 1 - 1e-4); epsilon answers' retrained
mean minus the best expected utility at epsilon <= E (closed form), and their epsilon over E. Paired differences
time - random over seeds with t-test p-values.
Last line: time's median epsilon ratio at P 0.9 and its mean epsilon gap, random's, and time's ratio to random (the
geometric mean over seeds of time's ratio at the true P over random's) with its p-value.
Run: ./in-env python benchmarks/time_budget.py [--seeds 8] [--first-seed 0] [--column ages|skewed] [--epsilon-ms 0]
       [--training-ms 0] [--no-calibrate] [--rounds 24] [--question-seconds S]
     ./in-env python benchmarks/time_budget.py --combine time_budget/per_seed_*.csv   (the summary of runs' halves)
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

from laplace_mean_front import K0, P_CAP, QUERIES, retrainings, setting, true_reach  # noqa: E402

from dptradeoff.baselines.random_search import sample  # noqa: E402
from dptradeoff.bo import batch_rounds  # noqa: E402
from dptradeoff.bo.propose import Context, DPareto, Settings  # noqa: E402
from dptradeoff.bo.query_round import question_clock, timed_answer  # noqa: E402
from dptradeoff.bo.replication import REACH_LEVEL  # noqa: E402
from dptradeoff.bo.timed_questions import (ACCEPT_Z, ARM_MOST, DROP_Z, LOWER_Z, NEW_CANDIDATES, Outcome,  # noqa: E402
                                           TimedQuestion, fresh_statement, measure, settle_level, wilson)
from dptradeoff.bo.transforms import InputScaler  # noqa: E402
from dptradeoff.problems.evaluate import evaluate  # noqa: E402
from dptradeoff.seeds import rng  # noqa: E402
from dptradeoff.stats.front_metrics import region_hypervolume  # noqa: E402
from dptradeoff.stats.region import DerivedRegion  # noqa: E402

RETRAIN = 200
RANGE_POINTS = 64   # the random peer's levels span the epsilons of this many random points of the domain


def chain(problem, data, settings: Settings, context: Context, seed: int, rounds: int) -> pd.DataFrame:
    """The DPareto chain of 8 + `rounds` rounds, as the pipeline runs it (`chain_round.propose_round`): with the
    config's `batch_rounds`, each round after the first a batch sized by the round before's proposal and evaluation
    seconds."""
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
        size = batch_rounds.batch_size(proposed, per_point) if settings.batch_rounds else 1
    return evals


class RandomPeer(TimedQuestion):
    """The fair random peer of one question (module doc): random candidates of the domain, placed on epsilon levels
    as the rule places them, trained, settled and confirmed by the rule's own pieces, by the rule's clock."""

    def __init__(self, problem, data, kind: str, target: float, clock, seed: int):
        super().__init__(problem, pd.DataFrame(), data, kind, target, clock, seed, "random-peer")

    def _random(self, level: float, count: int) -> list:
        arms = self._placed(self.rng.random((count, len(self.problem.domain))), level)
        self.arms += arms
        return arms

    def _range(self) -> tuple[float, float]:
        """The least and the largest epsilon of RANGE_POINTS random points of the domain (counted as placements)."""
        units = rng(self.seed, self.problem.name, "random-peer", "range").random((RANGE_POINTS, len(self.problem.domain)))
        self.clock.spend(candidates=RANGE_POINTS)
        found = []
        for unit in units:
            try:
                eps = self._epsilon_at(unit)
            except Exception:  # noqa: BLE001 - a privacy oracle that raises fails the point, as in evaluate()
                continue
            if eps > 0 and math.isfinite(eps):
                found.append(eps)
        return (min(found), max(found)) if found else (math.nan, math.nan)

    def run_epsilon(self) -> Outcome:
        while not self._spent(self.budget):
            for arm in self._random(self.target, self.affordable(NEW_CANDIDATES, self.budget)):   # as the rule
                if self._spent(self.budget):
                    break
                self._train(arm, 2 * self.block)
        trained = [a for a in self.arms if a.n >= 2 * self.block] or [a for a in self.arms if a.n]
        if not trained:
            return Outcome(None, math.nan, self.trainings, len(self.arms), "no candidate was trained")
        best = max(trained, key=lambda a: a.mean_bounds(LOWER_Z)[0])
        return Outcome(self.as_dict(best.point), best.epsilon, self.trainings, len(self.arms), self.clock.stopped)

    def run_utility(self) -> Outcome:
        low, high = self._range()
        if not math.isfinite(low):
            return Outcome(None, math.nan, self.trainings, len(self.arms), "no epsilon of the domain", settled=False)
        settle = settle_level(self.planned_fresh)
        best = None
        while not self._spent(self.budget) and high > low:
            level = float(np.exp(self.rng.uniform(math.log(low), math.log(high))))
            for arm in self._random(level, 1):   # raced alone, to its end, by the rule's tests
                while arm.open and not self._spent(self.budget):
                    if not self._train(arm, self.block):
                        break
                    if wilson(arm.hits, arm.n, ACCEPT_Z)[0] >= settle:
                        if self._confirmed(arm, settle) and (best is None or arm.epsilon < best.epsilon):
                            best, high = arm, arm.epsilon
                        arm.open = False
                    elif wilson(arm.hits, arm.n, DROP_Z)[1] < REACH_LEVEL or arm.n >= ARM_MOST:
                        arm.open = False
        if best is not None:
            return Outcome(self.as_dict(best.point), best.epsilon, self.trainings, len(self.arms), self.clock.stopped)
        likeliest = self._likeliest()
        if likeliest is None:
            return Outcome(None, math.nan, self.trainings, len(self.arms), "nothing trained", settled=False)
        return Outcome(self.as_dict(likeliest.point), likeliest.epsilon, self.trainings, len(self.arms),
                       "no candidate settled: the likeliest", settled=False)


def random_answer(problem, data, kind: str, target: float, seconds: float, seed: int) -> dict:
    """The peer's answer to one question in `seconds` of wall-clock (its clock measured as the rule measures its
    own, on random points of the domain): point, epsilon, stated P (the fresh share), what it spent."""
    scaler = InputScaler(problem)
    units = rng(seed, problem.name, "random-peer", "measure").random((4, len(problem.domain)))
    points = [problem.check(dict(zip(problem.names, scaler.from_unit(u[None, :])[0]))) for u in units]
    clock = measure(problem, data, points, seconds, seed)
    peer = RandomPeer(problem, data, kind, target, clock, seed)
    found = peer.run_epsilon() if kind == "eps" else peer.run_utility()
    if found.point is None:
        return {"point": None, "epsilon": math.nan, "stated": math.nan, "search_trainings": found.trainings,
                "fresh_trainings": 0, "settled": False, "question_seconds": clock.elapsed(), "stopped": clock.stopped}
    said = fresh_statement(peer.fresh(found.point), kind, target)
    return {"point": found.point, "epsilon": found.epsilon, "stated": said.get("reach_probability", math.nan),
            "search_trainings": found.trainings, "candidates": found.candidates,
            "fresh_trainings": said["fresh_trainings"], "settled": found.settled, "question_seconds": clock.elapsed(),
            "seconds_asked": clock.seconds, "stopped": clock.stopped}


def rule_answer(problem, data, evals: pd.DataFrame, kind: str, target: float, seconds: float, least: int,
                seed: int) -> dict:
    """The one rule's answer to one question (what the `query` rule runs), with what it spent."""
    started = time.perf_counter()
    clock = question_clock(problem, data, evals, seconds, seed, least, None, started)
    answer, said = timed_answer(problem, evals, data, kind, target, clock, seed, 0)
    return {"point": answer.point, "epsilon": answer.epsilon, "stated": answer.reach_probability,
            "search_trainings": said["search_trainings"], "candidates": said["search_points"],
            "fresh_trainings": said["fresh_trainings"], "settled": bool(said.get("settled", True)),
            "question_seconds": time.perf_counter() - started, "seconds_asked": clock.seconds,
            "stopped": said["stopped"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=24)
    parser.add_argument("--column", choices=["ages", "skewed"], default="ages")
    parser.add_argument("--epsilon-ms", type=float, default=0.0, help="each epsilon takes this many milliseconds")
    parser.add_argument("--training-ms", type=float, default=0.0, help="each training takes this many milliseconds")
    parser.add_argument("--no-calibrate", action="store_true", help="the oracle without calibrate()")
    parser.add_argument("--question-seconds", type=float, default=None,
                        help="each question's seconds under the rule (default: the config's dpareto.question_seconds)")
    parser.add_argument("--combine", nargs="+", metavar="CSV", help="summarise these per-seed tables (runs' parts)")
    args = parser.parse_args()
    if args.combine:
        summarise(pd.concat([pd.read_csv(path) for path in args.combine], ignore_index=True))
        return
    from laplace_mean import ClampedLaplaceMean, exact_front, least_epsilon_reaching

    values, problem, data = setting(args.column, args.epsilon_ms, args.training_ms, not args.no_calibrate)
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
    seconds = args.question_seconds if args.question_seconds is not None else settings.question_seconds
    context = Context(data.n_train, 1.0, DerivedRegion(), QUERIES)
    least = {p: least_epsilon_reaching(values, QUERIES[1][1], p) for p in (0.9,)}
    print(f"{args.column}: epsilon {args.epsilon_ms:g} ms, training {args.training_ms:g} ms, calibrate "
          f"{'no' if args.no_calibrate else 'yes'}; best expected utility at epsilon <= 0.001 {best_at:.5f}; least "
          f"epsilon at which one release reaches {QUERIES[1][1]:g} with P 0.9: {least[0.9]:.3g}; question seconds "
          f"{seconds:g}", flush=True)
    # one-off costs (imports, the GPs' tracing, compiling) paid before the first seed, so no seed's T carries them
    warm = time.perf_counter()
    chain(problem, data, settings, context, 10**6 + args.first_seed, 2)
    print(f"warm-up chain: {time.perf_counter() - warm:.1f} s (not counted)", flush=True)
    rows = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        start = time.perf_counter()
        evals = chain(problem, data, settings, context, seed, args.rounds)
        chain_seconds = time.perf_counter() - start
        answers = {"time": {kind: rule_answer(problem, data, evals, kind, target, seconds,
                                              settings.question_trainings, seed) for kind, target in QUERIES}}
        spent = {"time": time.perf_counter() - start}
        start = time.perf_counter()
        answers["random"] = {kind: random_answer(problem, data, kind, target, spent["time"] / 2, seed)
                             for kind, target in QUERIES}
        spent["random"] = time.perf_counter() - start
        for method, found in answers.items():
            row = {"seed": seed, "method": method, "seconds": spent[method], "budget": spent["time"],
                   "chain_seconds": chain_seconds if method == "time" else np.nan, "chain_points": len(evals)
                   if method == "time" else np.nan, "front": front_score(evals) if method == "time" else np.nan,
                   "column": args.column, "epsilon_ms": args.epsilon_ms, "training_ms": args.training_ms,
                   "calibrate": not args.no_calibrate}
            for kind, target in QUERIES:
                got = found[kind]
                row |= {f"{kind}_{k}": got.get(k, np.nan) for k in ("search_trainings", "fresh_trainings",
                                                                   "question_seconds", "seconds_asked", "stopped")}
                if got["point"] is None:
                    continue
                point = problem.check(got["point"])
                runs = retrainings(values, point, data, RETRAIN, rng(seed, "budget-retrain", kind))
                eps = got["epsilon"]
                if kind == "eps":
                    row |= {"eps_gap": float(runs.mean() - best_at), "eps_epsilon": eps, "eps_spent": eps / target}
                else:
                    stated, truth = got["stated"], true_reach(values, point, target)
                    row |= {"utility_epsilon": eps, "utility_stated": stated, "utility_true_p": truth,
                            "utility_reaching": float(np.mean(runs >= target)), "utility_settled": got["settled"],
                            "utility_ratio": eps / least[0.9],
                            "utility_ratio_stated": (eps / least_epsilon_reaching(values, target, min(stated, P_CAP))
                                                     if np.isfinite(stated) else np.nan),
                            "utility_ratio_true": eps / least_epsilon_reaching(values, target, min(truth, P_CAP))}
            rows.append(row)
            print(f"seed {seed} {method:6s} {row['seconds']:6.1f} s ("
                  + (f"chain {chain_seconds:.1f} s, {len(evals)} points; " if method == "time" else "")
                  + f"questions {row['eps_question_seconds']:.1f} + {row['utility_question_seconds']:.1f} s) front "
                  f"{row['front']:.4f}  eps<=0.001: gap {row.get('eps_gap', np.nan):+.5f} at "
                  f"{row.get('eps_spent', np.nan):.3f} E  utility>=0.99: eps {row.get('utility_epsilon', np.nan):.3g} "
                  f"x{row.get('utility_ratio', np.nan):.2f} the least at P 0.9, x{row.get('utility_ratio_true', np.nan):.2f} "
                  f"at its true P {row.get('utility_true_p', np.nan):.3f}; stated P {row.get('utility_stated', np.nan):.3f} "
                  f"({row['utility_fresh_trainings']} fresh), retrainings reaching {row.get('utility_reaching', np.nan):.3f}"
                  f"{'' if row.get('utility_settled', True) else ' (not settled)'}; trainings searching "
                  f"{row['eps_search_trainings']}+{row['utility_search_trainings']}", flush=True)
    table = pd.DataFrame(rows)
    os.makedirs("time_budget", exist_ok=True)
    name = (f"{args.column}_e{args.epsilon_ms:g}_t{args.training_ms:g}{'_nocal' if args.no_calibrate else ''}"
            f"_{args.first_seed}")
    table.to_csv(f"time_budget/per_seed_{name}.csv", index=False)
    summarise(table)


def paired(a: pd.Series, b: pd.Series, log: bool) -> tuple[float, float, int]:
    """The mean paired difference a - b over seeds (of logs where `log`), its t-test p-value, the seeds."""
    d = (np.log(a) - np.log(b)) if log else (a - b)
    d = d.replace([np.inf, -np.inf], np.nan).dropna()
    p = stats.ttest_1samp(d, 0.0).pvalue if len(d) > 1 and d.std() > 0 else float("nan")
    return float(d.mean()) if len(d) else float("nan"), float(p), len(d)


def summarise(table: pd.DataFrame) -> None:
    keys = [k for k in ("column", "epsilon_ms", "training_ms", "calibrate", "seed") if k in table]   # a replicate
    by = {m: table[table["method"] == m].set_index(keys) for m in ("time", "random") if (table["method"] == m).any()}
    print()
    for m, t in by.items():
        gap = t["utility_stated"] - t["utility_true_p"]
        print(f"{m:6s} utility: x least at P 0.9 median {t['utility_ratio'].median():.2f} max "
              f"{t['utility_ratio'].max():.2f}; x least at its true P median {t['utility_ratio_true'].median():.2f}; "
              f"stated P >= 0.9 on {int((t['utility_stated'] >= REACH_LEVEL).sum())} of {len(t)}; true P "
              f"{t['utility_true_p'].min():.3f}-{t['utility_true_p'].max():.3f}; stated - true {gap.min():+.3f} to "
              f"{gap.max():+.3f} (|.| <= 0.03 on {int((gap.abs() <= 0.03).sum())}); retrainings reaching "
              f"{t['utility_reaching'].min():.3f}-{t['utility_reaching'].max():.3f}")
        print(f"{'':6s} eps<=0.001: gap mean {t['eps_gap'].mean():+.5f} worst {t['eps_gap'].min():+.5f} (within 0.003 on "
              f"{int((t['eps_gap'] >= -0.003).sum())} of {len(t)}); epsilon spent {t['eps_spent'].min():.3f}-"
              f"{t['eps_spent'].max():.3f} E; front {t['front'].mean():.4f}; seconds a seed mean "
              f"{t['seconds'].mean():.1f}; question seconds at most {t['eps_question_seconds'].max():.1f} / "
              f"{t['utility_question_seconds'].max():.1f} (asked {t['eps_seconds_asked'].max():.1f} / "
              f"{t['utility_seconds_asked'].max():.1f})")
    if "random" not in by or "time" not in by:
        return
    t, r = by["time"], by["random"]
    for column, log, better in (("utility_ratio_true", True, "lower"), ("utility_ratio", True, "lower"),
                                ("utility_true_p", False, "higher"), ("eps_gap", False, "higher")):
        mean, p, n = paired(t[column], r[column], log)
        print(f"time - random {column:18s} ({'log, ' if log else ''}{better} is better): mean {mean:+.5f}, "
              f"p = {p:.2g}, {n} seeds")
    ratio, p, _ = paired(t["utility_ratio_true"], r["utility_ratio_true"], True)
    print(f"utility_ratio_time={t['utility_ratio'].median():.2f} utility_ratio_random={r['utility_ratio'].median():.2f} "
          f"eps_gap_time={t['eps_gap'].mean():+.5f} eps_gap_random={r['eps_gap'].mean():+.5f} "
          f"time_over_random_ratio={math.exp(ratio):.3f} p={p:.2g} seeds={len(t)}")


if __name__ == "__main__":
    main()
