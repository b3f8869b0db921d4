"""Do the one rule's answers hold for ONE new training, on problems nobody here tuned? Every question answered by
the `query` rule's one rule (`bo.query_round.question_clock` and `timed_answer`: searched for its seconds, then
stated by fresh trainings made after the choice), then retrained `--retrain` times (default 40): the coverage of
its order-statistics interval for one training (nominal 90 %), and for utility questions the share of retrainings
reaching the target against the P the answer states. Beside it, the anchor: the GP's predictive interval for one
training at the same answer (`bo.query.FrontQuery.interval`, what answers carried before the one rule) and the
GP's P of reaching the target there (`FrontQuery.reach_probability`).

Two sets of chains:
- default: the default run's DPareto chains of the three adult problems (adult-logreg-sgd, adult-logreg-adam,
  adult-svm-sgd), built first with
    ./in-env snakemake --cores 2 results/dpareto/adult-logreg-sgd/dpareto/0/evaluations.parquet \
        results/dpareto/adult-logreg-adam/dpareto/0/evaluations.parquet \
        results/dpareto/adult-svm-sgd/dpareto/0/evaluations.parquet
- `--panel DIR`: a panel of six unlike problems, their chains built by Snakemake in DIR from one config
  (DIR/panel.yaml, written here: 16 initial points + `--rounds` proposals each, the default config otherwise):
  adult LogReg+SGD and LogReg+Adam and SVM+SGD (DP-SGD, built in), an MNIST MLP (mnist-mlp2-sgd, R = 1, epochs
  1-4), a pure epsilon-DP clamped Laplace mean over a column of a user CSV (examples/laplace_mean.py on Adult's
  ages, written to DIR/ages.csv; a user oracle whose region is derived) and IBM diffprivlib's logistic regression
  in its own numpy 2 environment (examples/diffprivlib_logreg.py). `--problems`: a part of it.

Questions per problem: `--eps-targets` epsilon targets log-spaced over the chain front's epsilon range
(its smallest to its largest, 3 significant digits) and `--utility-targets` utility targets at the
front's utility quantiles (evenly spaced inside (0, 1)): each answered by the one rule as the `query` rule answers
it (the problem's `seconds.question`, else the config's `dpareto.question_seconds`, raised to
`dpareto.question_trainings` trainings of the measured cost; the problem's `seconds.tiers` or the config's
`question_tiers` where given; the config's seed), then retrained `--retrain` times, each one training by the
problem's own oracle (`timed_questions.trainings`, a fresh Generator per answer, seeds apart from the rule's).
Coverage = the share of those single retrainings inside the interval, per problem and overall (answers whose
budget bought fewer than ORDER_LEAST fresh trainings state no interval: counted apart). Utility answers: their
stated P (the fresh share) against the share of their retrainings reaching the target, pooled over the utility
answers (each answer weighs the same) and per problem; their epsilon over the most private measured point of the
chain that meets the target (the Laplace mean: also over the closed form's least epsilon reaching it at the
stated P and at P 0.9). Each question's wall-clock against its seconds plus one training. Questions with no
feasible answer are counted, not scored.
Targets (issue HONEST): per problem, coverage in [0.85, 0.95]; every utility answer's retrained share >= 0.85;
stated P within 0.03 of the retrained share pooled over the utility answers, within 0.1 on each problem; a
question's wall-clock <= its seconds plus one training.

Run: ./in-env python benchmarks/query_coverage.py   (last line:
coverage_new=<x> coverage_gp=<y> queries=<n> worst_problem_coverage=<p: x> utility_reaching=<x> ...)
     ./in-env python benchmarks/query_coverage.py --panel DIR   (same last line; on 2 cores the chains take
minutes, each question 10 s, or 200 trainings of its measured cost where those cost more: mnist-mlp2-sgd's)
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time

import numpy as np
import pandas as pd
import threadpoolctl

from dptradeoff import paths
from dptradeoff.bo.propose import Settings
from dptradeoff.bo.query import INTERVAL_LEVEL, FrontQuery, front, query_rng
from dptradeoff.bo.query_round import question_clock, timed_answer
from dptradeoff.bo.replication import REACH_LEVEL
from dptradeoff.bo.timed_questions import trainings
from dptradeoff.config import load
from dptradeoff.problems import definition, resolve
from dptradeoff.problems.evaluate import load_data
from dptradeoff.problems.tables import read_frame
from dptradeoff.seeds import rng as derived_rng
from dptradeoff.privacy.accountant import accounting_name  # noqa: E402

PROBLEMS = ["adult-logreg-sgd", "adult-logreg-adam", "adult-svm-sgd"]
PANEL = [*PROBLEMS, "mnist-mlp2-sgd", "laplace-mean", "diffprivlib-logreg"]
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "examples"))
from laplace_mean import least_epsilon_reaching  # noqa: E402   the closed form, the anchor of its answers


def questions(problem, evals, eps_targets: int, utility_targets: int) -> list[tuple[str, float]]:
    """(kind, target): epsilons log-spaced over the chain front's epsilon range, utilities at its quantiles."""
    chain_front = front(problem, evals)
    eps = np.geomspace(chain_front["epsilon"].min(), chain_front["epsilon"].max(), eps_targets)
    quantiles = np.arange(1, utility_targets + 1) / (utility_targets + 1)
    utilities = np.quantile(chain_front["utility"], quantiles)
    return ([("eps", float(f"{t:.3g}")) for t in eps] + [("utility", float(f"{t:.3g}")) for t in utilities])


def gp_anchor(problem, evals, data, settings: Settings, seed: int):
    """The chain's GPs (`FrontQuery`), for the anchor's interval and P at each answer; None where they cannot be
    fitted (the rule answers without them)."""
    try:
        return FrontQuery(problem, evals, data, settings, query_rng(seed, problem.name, "coverage-anchor", 0, 0))
    except Exception as error:  # noqa: BLE001 - the anchor only: its failure is printed, the rule's answers stand
        print(f"  {problem.name}: no GP anchor ({type(error).__name__}: {error})", flush=True)
        return None


def ask(name: str, config: dict, settings: Settings, retrain: int, eps_targets: int, utility_targets: int) -> list[dict]:
    """One row per question on problem `name`'s chain: the one rule's answer, its interval and the GP's at the
    same point, the single retrainings and the share of them inside each (utility questions: the stated P, the
    GP's, and the share reaching the target), and the question's wall-clock against its seconds."""
    problem = resolve(name, definition(config, name), accounting_name(config["privacy"]))
    path = paths.RunFiles(name, paths.DPARETO, 0).evaluations
    if not os.path.exists(path):
        raise SystemExit(f"{path} does not exist; build it first: ./in-env snakemake --cores 2 {path}")
    evals, data = read_frame(path), load_data(problem)
    own = config.get("problems", {}).get(name, {}).get("seconds", {}) or {}   # as the `query` rule reads them
    seconds = float(own.get("question") or settings.question_seconds)
    tiers = own.get("tiers") or settings.question_tiers
    seed = config["seed"]
    anchor = gp_anchor(problem, evals, data, settings, seed)
    print(f"{name}: {len(evals)} chain rows; {seconds:g} s a question (at least {settings.question_trainings} "
          f"trainings)" + (f"; the GP anchor's inflation c = {anchor.inflation():.2f}" if anchor is not None else ""),
          flush=True)
    rows = []
    for kind, target in questions(problem, evals, eps_targets, utility_targets):
        started = time.perf_counter()
        clock = question_clock(problem, data, evals, seconds, seed, settings.question_trainings, tiers, started)
        answer, said = timed_answer(problem, evals, data, kind, target, clock, seed, 0)
        elapsed = time.perf_counter() - started
        met = evals[evals["utility"] >= target] if kind == "utility" else None
        row = {"problem": name, "question": answer.question, "answered": answer.point is not None,
               "met_by_a_training": bool(kind == "utility" and max(
                   (max(r) for r in evals["utility_runs"] if len(r)), default=-1) >= target),
               "seconds": elapsed, "seconds_asked": clock.seconds, "training_tier": clock.training,
               "training_rate": clock.rate, "overrun": elapsed - clock.seconds - clock.per_training(),
               "rule_overrun": float(said["question_seconds"]) - clock.seconds - clock.per_training(),
               "stopped": said["stopped"], "fresh": int(said["fresh_trainings"]),
               "searched": int(said["search_trainings"])}
        if answer.point is None:
            rows.append(row)
            print(f"  {name:18s} {answer.question:16s} no answer ({said.get('search_note', '')})", flush=True)
            continue
        point = problem.check(dict(answer.point))
        runs = trainings(problem, point, data, retrain, derived_rng(seed, name, "query-coverage", kind, target))
        runs = np.asarray(runs, dtype=float)
        intervals = {"new": (answer.interval_low, answer.interval_high)}
        if anchor is not None:
            low, high, _ = anchor.interval(np.array([[point[n] for n in problem.names]], dtype=float))
            intervals["gp"] = (float(low[0]), float(high[0]))
        row.update(fresh_mean=answer.predicted_utility, runs=runs, has_interval=math.isfinite(answer.interval_low),
                   **{f"{k}_low": lo for k, (lo, _) in intervals.items()},
                   **{f"{k}_high": hi for k, (_, hi) in intervals.items()},
                   **{f"in_{k}": float(np.mean((runs >= lo) & (runs <= hi))) for k, (lo, hi) in intervals.items()
                      if math.isfinite(lo)})
        if kind == "utility":
            row["reaching"] = float(np.mean(runs >= target))
            row["stated"] = answer.reach_probability
            row["settled"] = bool(said.get("settled", True))
            if anchor is not None:
                row["gp_stated"] = float(anchor.reach_probability(
                    np.array([[point[n] for n in problem.names]], dtype=float), target)[0])
            # the anchor of the answer's epsilon: the most private measured point of the chain that meets the target
            row["eps_ratio"] = answer.epsilon / met["epsilon"].min() if len(met) else float("nan")
            # and the most private measured point every one of whose trainings met it (an empirical reach of 1)
            every = evals[[len(r) > 0 and min(r) >= target for r in evals["utility_runs"]]]
            row["eps_ratio_every"] = answer.epsilon / every["epsilon"].min() if len(every) else float("nan")
            if name == "laplace-mean":   # and the closed form: the least epsilon reaching it at the stated P and 0.9
                ages = pd.read_csv(definition(config, name)["options"]["csv"])["age"].to_numpy(float)
                row["eps_ratio_exact"] = answer.epsilon / least_epsilon_reaching(ages, target,
                                                                                 min(answer.reach_probability, 1 - 1e-4))
                row["eps_ratio_exact_09"] = answer.epsilon / least_epsilon_reaching(ages, target, REACH_LEVEL)
        rows.append(row)
        gp = (f"gp [{row['gp_low']:.4f}, {row['gp_high']:.4f}] " if "gp_low" in row else "")
        print(f"  {name:18s} {answer.question:16s} {row['searched']} searched, {row['fresh']} fresh (mean "
              f"{answer.predicted_utility:.4f}) in {elapsed:.1f} s of {clock.seconds:.3g}  new [{answer.interval_low:.4f}, "
              f"{answer.interval_high:.4f}] {gp} retrained {runs.mean():.4f} +- {runs.std(ddof=1):.4f} (min "
              f"{runs.min():.4f})  inside new {row.get('in_new', float('nan')):.2f} gp {row.get('in_gp', float('nan')):.2f}"
              + (f"  P {row['stated']:.3f} (gp {row.get('gp_stated', float('nan')):.3f}) reaching {row['reaching']:.3f}"
                 f"{'' if row['settled'] else ' (not settled)'} eps x{row['eps_ratio']:.2f} the most private measured "
                 f"point meeting it, x{row['eps_ratio_every']:.2f} the one all of whose trainings did"
                 + (f", x{row['eps_ratio_exact']:.2f} the closed form's least at the stated P, "
                    f"x{row['eps_ratio_exact_09']:.2f} at 0.9" if "eps_ratio_exact" in row else "")
                 if kind == "utility" else ""),
              flush=True)
    return rows


def coverage(rows: list[dict], key: str) -> float:
    """Share of all single retrainings (equal per answer) inside interval `key`, over the answers that have it."""
    return mean_of(rows, f"in_{key}")


def bootstrap(rows: list[dict], key: str, draws: int = 2000) -> tuple[float, float]:
    """95 % interval of `coverage` over answers resampled with replacement (answers, not retrainings, are the
    independent units: an answer's retrainings share its point)."""
    inside = np.array([r[f"in_{key}"] for r in rows if f"in_{key}" in r])
    if not len(inside):
        return float("nan"), float("nan")
    picks = np.random.default_rng(0).integers(0, len(inside), (draws, len(inside)))
    return tuple(np.quantile(inside[picks].mean(axis=1), [0.025, 0.975]))


def panel(work: str, rounds: int, problems: list[str] | None = None) -> list[str]:
    """Write DIR/panel.yaml and DIR/ages.csv, build the panel's DPareto chains (of `problems`, else all) with
    Snakemake in DIR, and chdir there; the configfiles to load."""
    import subprocess

    import yaml

    sys.path.insert(0, HERE)
    from laplace_mean_front import DEFINITION, ages

    os.makedirs(work, exist_ok=True)
    if not os.path.exists(os.path.join(work, "config")):   # the Snakefile's configfile, relative to its directory
        os.symlink(os.path.join(ROOT, "config"), os.path.join(work, "config"))
    csv = os.path.abspath(os.path.join(work, "ages.csv"))
    if not os.path.exists(csv):
        pd.DataFrame({"age": ages()}).to_csv(csv + ".tmp", index=False)
        os.replace(csv + ".tmp", csv)
    diffprivlib = yaml.safe_load(open(os.path.join(ROOT, "config", "examples", "diffprivlib-logreg.yaml")))
    diffprivlib = diffprivlib["problems"]["diffprivlib-logreg"]
    for key in ("oracle", "environment"):
        diffprivlib[key] = os.path.join(ROOT, diffprivlib[key])
    laplace = {**DEFINITION, "options": {"csv": csv}}
    config = {"studies": ["dpareto"], "dpareto": {"problems": PANEL, "methods": ["dpareto"], "iterations": rounds},
              "problems": {"laplace-mean": laplace, "diffprivlib-logreg": diffprivlib}}
    path = os.path.abspath(os.path.join(work, "panel.yaml"))
    with open(path, "w") as f:
        yaml.safe_dump(config, f)
    targets = [paths.RunFiles(name, paths.DPARETO, 0).evaluations for name in problems or PANEL]
    command = [os.path.join(ROOT, ".venv", "bin", "snakemake"), "-s", os.path.join(ROOT, "Snakefile"), "--directory",
               os.path.abspath(work), "--cores", "2", f"--configfile={path}", *targets]
    print(" ".join(command), flush=True)
    subprocess.run(command, check=True, cwd=ROOT)
    os.chdir(work)
    return [path]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", nargs="+", default=None)
    parser.add_argument("--panel", metavar="DIR", help="the panel of six unlike problems, built in DIR")
    parser.add_argument("--rounds", type=int, default=24, help="--panel: each chain's proposals after 16 initial points")
    parser.add_argument("--retrain", type=int, default=40, help="single trainings per answer (the issue: >= 40)")
    parser.add_argument("--eps-targets", type=int, default=10)
    parser.add_argument("--utility-targets", type=int, default=3)
    args = parser.parse_args()
    threadpoolctl.threadpool_limits(1)   # as the query rule runs (threads: 1)
    configfiles = panel(args.panel, args.rounds, args.problems) if args.panel else []
    args.problems = args.problems or (PANEL if args.panel else PROBLEMS)
    config = load([os.path.join(ROOT, "config", "config.yaml"), *configfiles]) if args.panel else load([])
    settings = Settings.from_config(config["dpareto"], config["statistics"])
    print(f"the one rule's interval for one training (order statistics of the fresh trainings), nominal "
          f"{INTERVAL_LEVEL:.0%}; gp: the GP's predictive interval at the same answer; {args.retrain} single "
          f"retrainings per answer", flush=True)
    everything = []
    for name in args.problems:
        everything += ask(name, config, settings, args.retrain, args.eps_targets, args.utility_targets)
    answered = [r for r in everything if r["answered"]]
    covered = [r for r in answered if "in_new" in r]
    print()
    print(f"{'problem':18s} {'asked':>5s} {'answered':>8s} {'interval':>8s} {'retrainings':>11s} {'new':>6s} {'gp':>6s} "
          f"{'width new':>9s} {'width gp':>9s} {'utility':>7s} {'stated':>6s} {'gp P':>6s} {'reaching':>8s} "
          f"{'least':>6s} {'seconds':>7s}")
    for name in [*args.problems, "all"]:
        mine = [r for r in covered if name == "all" or r["problem"] == name]
        asked = [r for r in everything if name == "all" or r["problem"] == name]
        got = [r for r in answered if name == "all" or r["problem"] == name]
        utility = [r for r in got if "reaching" in r]
        if not got:
            print(f"{name:18s} {len(asked):5d} {0:8d}")
            continue
        widths = {k: (statistics.median(r[f"{k}_high"] - r[f"{k}_low"] for r in mine if f"{k}_low" in r)
                      if any(f"{k}_low" in r for r in mine) else float("nan")) for k in ("new", "gp")}
        print(f"{name:18s} {len(asked):5d} {len(got):8d} {len(mine):8d} {sum(len(r['runs']) for r in got):11d} "
              f"{coverage(mine, 'new'):6.3f} {coverage(mine, 'gp'):6.3f} {widths['new']:9.4f} {widths['gp']:9.4f} "
              f"{len(utility):7d} {mean_of(utility, 'stated'):6.3f} {mean_of(utility, 'gp_stated'):6.3f} "
              f"{mean_of(utility, 'reaching'):8.3f} {min((r['reaching'] for r in utility), default=float('nan')):6.3f} "
              f"{statistics.median(r['seconds'] for r in asked):7.1f}")
    print(f"(new / gp: share of single retrainings inside the nominal {INTERVAL_LEVEL:.0%} interval, equal per answer, "
          f"over the answers with an interval; widths: median high - low in utility; utility: the utility answers, "
          f"their stated P (the fresh share), the GP's P at the same point and the share of their retrainings "
          f"reaching the target, means; least: the least retrained share of one answer; seconds: a question's, median)")
    (new_low, new_high), (gp_low, gp_high) = bootstrap(covered, "new"), bootstrap(covered, "gp")
    print(f"95 % bootstrap intervals over answers: new [{new_low:.3f}, {new_high:.3f}], gp [{gp_low:.3f}, {gp_high:.3f}]")
    utility = [r for r in answered if "reaching" in r]
    empty = [r for r in everything if not r["answered"] and r.get("met_by_a_training")]
    for key, anchor in (("eps_ratio", "whose mean meets the target"),
                        ("eps_ratio_every", "every one of whose trainings met it")):
        ratios = [r[key] for r in utility if np.isfinite(r[key])]
        print(f"utility answers' epsilon over the most private measured point {anchor}: median "
              f"{np.median(ratios) if ratios else float('nan'):.2f}, largest {max(ratios, default=float('nan')):.2f}, "
              f"within 2x {sum(x <= 2 for x in ratios)} of {len(ratios)}")
    exact = [r["eps_ratio_exact_09"] for r in utility if "eps_ratio_exact_09" in r]
    if exact:
        print("laplace-mean utility answers' epsilon over the closed form's least at P 0.9: "
              + ", ".join(f"{x:.2f}" for x in exact))
    gaps = {name: mean_of([r for r in utility if r["problem"] == name], "stated")
            - mean_of([r for r in utility if r["problem"] == name], "reaching")
            for name in args.problems if any(r["problem"] == name for r in utility)}
    pooled = mean_of(utility, "stated") - mean_of(utility, "reaching")
    worst_gap = max(gaps, key=lambda name: abs(gaps[name])) if gaps else "none"
    print(f"utility answers: {len(utility)} ({sum(not r['settled'] for r in utility)} not settled, "
          f"{sum(r['stated'] < REACH_LEVEL for r in utility)} stating P below {REACH_LEVEL:g}); stated P - retrained "
          f"share pooled {pooled:+.3f} [target within 0.03], per problem "
          + ", ".join(f"{name} {gap:+.3f}" for name, gap in gaps.items()) + " [target within 0.1 each]; least "
          f"retrained share {min((r['reaching'] for r in utility), default=float('nan')):.3f} [target >= 0.85]; "
          f"unanswered while a training met the target: {len(empty)}")
    overruns = [r for r in everything if r["overrun"] > 0]
    print(f"questions: {len(everything)}, {len(answered)} answered, {len(answered) - len(covered)} without an interval "
          f"(fewer than the fresh trainings it needs); over their seconds plus one training: {len(overruns)}"
          + (f" (worst {max(r['overrun'] for r in overruns):.3f} s over; by the rule's own clock, which stops before "
             f"its answer's row is written: {sum(r['rule_overrun'] > 0 for r in everything)})" if overruns else "")
          + f"; stopped by the wall clock: {sum(bool(r['stopped']) for r in everything)}; fresh trainings "
          f"{sum(r['fresh'] for r in everything)}, search trainings {sum(r['searched'] for r in everything)}")
    per_problem = {name: coverage([r for r in covered if r["problem"] == name], "new")
                   for name in args.problems if any(r["problem"] == name for r in covered)}
    worst = max(per_problem, key=lambda name: abs(per_problem[name] - INTERVAL_LEVEL)) if per_problem else "none"
    print(f"coverage_new={coverage(covered, 'new'):.3f} coverage_gp={coverage(covered, 'gp'):.3f} queries={len(answered)} "
          f"worst_problem_coverage={worst}: {per_problem.get(worst, float('nan')):.3f} "
          f"utility_reaching={mean_of(utility, 'reaching'):.3f} stated_minus_reaching={pooled:+.3f} "
          f"worst_problem_stated_gap={worst_gap}: {gaps.get(worst_gap, float('nan')):+.3f}")


def mean_of(rows: list[dict], key: str) -> float:
    """The mean of `key` over the rows that have it (each answer weighs the same); NaN: none has it."""
    scored = [r[key] for r in rows if key in r and np.isfinite(r[key])]
    return float(np.mean(scored)) if scored else float("nan")


if __name__ == "__main__":
    main()
