"""Do a front query's intervals hold for ONE new training of its answer, on problems nobody here tuned?
Coverage of the predictive interval for one training (`bo.query.FrontQuery.interval`, nominal 90 %) beside the
interval answers carried before (the anchor: the predicted utility +- z_0.95 x `predicted_sd`, the GP's latent sd
plus the noise of a mean of R replications, read as a normal 90 % interval), and the share of `--utility`
answers' retrainings that reach their target (an answer's promise: one training reaches it).

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
  in its own numpy 2 environment (examples/diffprivlib_logreg.py).

Questions per problem: `--eps-targets` epsilon targets log-spaced over the chain front's epsilon range
(its smallest to its largest, 3 significant digits) and `--utility-targets` utility targets at the
front's utility quantiles (evenly spaced inside (0, 1)): each answered as the `query` rule answers it (a trained
point, settled: `bo.query_round.settled_answer`; `--search`: the GP's search of the whole domain; the config's
seed, `query_rng`, the config's DPareto settings), then retrained `--retrain` times, each
one training by the problem's own oracle (`oracle.utilities` with a fresh Generator per answer).
Coverage = the share of those single retrainings inside the interval, per problem and overall; also the
new interval without its one-step-ahead inflation (c = 1: latent + misfit + replication noise only), the
median interval widths, and each answer's line. Questions with no feasible answer are counted, not scored.
Utility answers also print their stated probability of reaching the target, and their epsilon over the most
private measured point of the chain that meets the target (the Laplace mean: also over the closed form's least
epsilon reaching it at the stated probability); the summary counts utility questions left unanswered while a
training of the chain met the target, and the trainings settling took.
Targets (issues 44, 50): per problem, coverage in [0.85, 0.95], >= 85 % of the utility answers' retrainings at
or above the target, their epsilon within 2x the anchor, no empty utility answer while a training met it.

Run: ./in-env python benchmarks/query_coverage.py   (about 3 minutes; last line:
coverage_new=<x> coverage_old=<y> queries=<n>)
     ./in-env python benchmarks/query_coverage.py --panel DIR   (about 25 minutes on 2 cores; last line:
coverage_new=<x> coverage_old=<y> queries=<n> worst_problem_coverage=<p: x> utility_reaching=<x>)
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
import pandas as pd
import threadpoolctl
from scipy import stats

from dptradeoff import paths
from dptradeoff.bo.propose import Settings
from dptradeoff.bo.query import INTERVAL_LABEL, INTERVAL_LEVEL, FrontQuery, front, logit_interval, query_rng
from dptradeoff.bo.query_round import question_clock, settled_answer, timed_answer
from dptradeoff.bo.question_search import search_question
from dptradeoff.config import load
from dptradeoff.problems import definition, resolve
from dptradeoff.problems.evaluate import load_data
from dptradeoff.problems.tables import read_frame
from dptradeoff.seeds import rng as derived_rng
from dptradeoff.privacy.accountant import accounting_name  # noqa: E402

PROBLEMS = ["adult-logreg-sgd", "adult-logreg-adam", "adult-svm-sgd"]
SEARCH = False   # --search
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


def ask(name: str, config: dict, settings: Settings, retrain: int, eps_targets: int, utility_targets: int) -> list[dict]:
    """One row per question on problem `name`'s chain: its answer's intervals (old, new, new at c = 1), the
    single retrainings and the share of them inside each (utility questions: and the share reaching the target)."""
    problem = resolve(name, definition(config, name), accounting_name(config["privacy"]))
    path = paths.RunFiles(name, paths.DPARETO, 0).evaluations
    if not os.path.exists(path):
        raise SystemExit(f"{path} does not exist; build it first: ./in-env snakemake --cores 2 {path}")
    evals, data = read_frame(path), load_data(problem)
    print(f"{name}: {len(evals)} chain rows", flush=True)
    rows = []
    z = stats.norm.ppf(0.5 + INTERVAL_LEVEL / 2)
    for kind, target in questions(problem, evals, eps_targets, utility_targets):
        start = time.perf_counter()
        clock = question_clock(problem, data, evals, settings.question_seconds, config["seed"])
        if clock is not None and clock.cheap:   # the query rule's answer by the clock (bo.timed_questions)
            answer, _ = timed_answer(problem, evals, data, kind, target, settings, clock, config["seed"], 0)
            query, added = FrontQuery(problem, evals, data, settings, query_rng(config["seed"], name, kind, target, 0)), 0
        else:
            searched, spent = search_question(problem, evals, data, kind, target, settings, config["seed"], 0,
                                              settings.question_trainings,
                                              definition(config, name).get("repeats", problem.default_repeats))
            answer, query, added = settled_answer(problem, searched, data, kind, target, settings, config["seed"], 0,
                                                  SEARCH)
        met = evals[evals["utility"] >= target] if kind == "utility" else None
        row = {"problem": name, "question": answer.question, "answered": answer.point is not None,
               "met_by_a_training": bool(kind == "utility" and max(
                   (max(r) for r in evals["utility_runs"] if len(r)), default=-1) >= target)}
        if answer.point is None:
            rows.append(row)
            continue
        point = np.array([[answer.point[n] for n in problem.names]], dtype=float)
        bare_low, bare_high = logit_interval(*query.single_training(point, 1.0), INTERVAL_LEVEL)
        seconds = time.perf_counter() - start
        runs = problem.oracle.utilities(problem.check(dict(answer.point)), data, retrain,
                                        derived_rng(config["seed"], name, "query-coverage", kind, target))
        runs = np.asarray(runs, dtype=float)
        old = (answer.predicted_utility - z * answer.predicted_sd, answer.predicted_utility + z * answer.predicted_sd)
        intervals = {"old": old, "new": (answer.interval_low, answer.interval_high), "bare": (bare_low[0], bare_high[0])}
        row.update(predicted=answer.predicted_utility, runs=runs, seconds=seconds, inflation=query.inflation(),
                   **{f"{k}_low": lo for k, (lo, _) in intervals.items()},
                   **{f"{k}_high": hi for k, (_, hi) in intervals.items()},
                   **{f"in_{k}": float(np.mean((runs >= lo) & (runs <= hi))) for k, (lo, hi) in intervals.items()})
        row["added"] = added
        if kind == "utility":
            row["reaching"] = float(np.mean(runs >= target))
            row["stated"] = answer.reach_probability
            # the anchor of the answer's epsilon: the most private measured point of the chain that meets the target
            row["eps_ratio"] = answer.epsilon / met["epsilon"].min() if len(met) else float("nan")
            # and the most private measured point every one of whose trainings met it (an empirical reach of 1)
            every = evals[[len(r) > 0 and min(r) >= target for r in evals["utility_runs"]]]
            row["eps_ratio_every"] = answer.epsilon / every["epsilon"].min() if len(every) else float("nan")
            if name == "laplace-mean":   # and the closed form: the least epsilon reaching it at the stated probability
                ages = pd.read_csv(definition(config, name)["options"]["csv"])["age"].to_numpy(float)
                row["eps_ratio_exact"] = answer.epsilon / least_epsilon_reaching(ages, target, answer.reach_probability)
        rows.append(row)
        print(f"  {name:18s} {answer.question:16s} predicted {answer.predicted_utility:.4f}  "
              f"old [{row['old_low']:.4f}, {row['old_high']:.4f}]  new [{row['new_low']:.4f}, {row['new_high']:.4f}]  "
              f"retrained {runs.mean():.4f} +- {runs.std(ddof=1):.4f} (min {runs.min():.4f})  "
              f"inside old {row['in_old']:.2f} new {row['in_new']:.2f}  trainings {len(answer.trainings)} (+{added})"
              + (f"  P {row['stated']:.2f} reaching {row['reaching']:.2f} eps x{row['eps_ratio']:.2f} the most private "
                 f"measured point meeting it, x{row['eps_ratio_every']:.2f} the one all of whose trainings did"
                 + (f", x{row['eps_ratio_exact']:.2f} the closed form's least"
                                                 if "eps_ratio_exact" in row else "") if kind == "utility" else ""),
              flush=True)
    return rows


def coverage(rows: list[dict], key: str) -> float:
    """Share of all single retrainings (equal per answer) inside interval `key`."""
    return float(np.mean([r[f"in_{key}"] for r in rows]))


def bootstrap(rows: list[dict], key: str, draws: int = 2000) -> tuple[float, float]:
    """95 % interval of `coverage` over answers resampled with replacement (an answer's retrainings
    share its GP error, so answers, not retrainings, are the independent units)."""
    inside = np.array([r[f"in_{key}"] for r in rows])
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
    parser.add_argument("--retrain", type=int, default=8, help="single trainings per answer")
    parser.add_argument("--search", action="store_true", help="answer by the GP's search of the whole domain (the "
                        "previous answers; default: the chain's trained points, as the query rule and dptradeoff front)")
    parser.add_argument("--eps-targets", type=int, default=10)
    parser.add_argument("--utility-targets", type=int, default=3)
    args = parser.parse_args()
    threadpoolctl.threadpool_limits(1)   # as the query rule runs (threads: 1)
    global SEARCH
    SEARCH = args.search
    configfiles = panel(args.panel, args.rounds, args.problems) if args.panel else []
    args.problems = args.problems or (PANEL if args.panel else PROBLEMS)
    config = load([os.path.join(ROOT, "config", "config.yaml"), *configfiles]) if args.panel else load([])
    settings = Settings.from_config(config["dpareto"], config["statistics"])
    print(f"{INTERVAL_LABEL}, nominal {INTERVAL_LEVEL:.0%}; old: predicted_utility +- z x predicted_sd; "
          f"{args.retrain} single retrainings per answer")
    everything = []
    for name in args.problems:
        everything += ask(name, config, settings, args.retrain, args.eps_targets, args.utility_targets)
    answered = [r for r in everything if r["answered"]]
    print()
    print(f"{'problem':18s} {'asked':>5s} {'answered':>8s} {'retrainings':>11s} {'old':>6s} {'new':>6s} "
          f"{'new, c=1':>8s} {'c':>5s} {'width old':>9s} {'width new':>9s} {'reaching':>8s}")
    for name in [*args.problems, "all"]:
        mine = [r for r in answered if name == "all" or r["problem"] == name]
        asked = sum(1 for r in everything if name == "all" or r["problem"] == name)
        if not mine:
            print(f"{name:18s} {asked:5d} {0:8d}")
            continue
        widths = {k: statistics.median(r[f"{k}_high"] - r[f"{k}_low"] for r in mine) for k in ("old", "new")}
        c = statistics.median(r["inflation"] for r in mine)
        print(f"{name:18s} {asked:5d} {len(mine):8d} {sum(len(r['runs']) for r in mine):11d} "
              f"{coverage(mine, 'old'):6.3f} {coverage(mine, 'new'):6.3f} {coverage(mine, 'bare'):8.3f} {c:5.2f} "
              f"{widths['old']:9.4f} {widths['new']:9.4f} {reaching(mine):8.3f}")
    print(f"(coverage: share of single retrainings inside the nominal {INTERVAL_LEVEL:.0%} interval; c: the one-step-ahead "
          f"inflation, median; widths: median high - low in utility; query time median "
          f"{statistics.median(r['seconds'] for r in answered):.1f} s)")
    (new_low, new_high), (old_low, old_high) = bootstrap(answered, "new"), bootstrap(answered, "old")
    print(f"95 % bootstrap intervals over answers: new [{new_low:.3f}, {new_high:.3f}], old [{old_low:.3f}, {old_high:.3f}]")
    utility = [r for r in answered if "eps_ratio" in r]
    empty = [r for r in everything if not r["answered"] and r.get("met_by_a_training")]
    for key, anchor in (("eps_ratio", "whose mean meets the target"),
                        ("eps_ratio_every", "every one of whose trainings met it")):
        ratios = [r[key] for r in utility if np.isfinite(r[key])]
        print(f"utility answers' epsilon over the most private measured point {anchor}: median "
              f"{np.median(ratios) if ratios else float('nan'):.2f}, largest {max(ratios, default=float('nan')):.2f}, "
              f"within 2x {sum(x <= 2 for x in ratios)} of {len(ratios)}")
    print(f"utility answers: {len(utility)}; unanswered while a training met the target: {len(empty)}; trainings "
          f"settling added: {sum(r.get('added', 0) for r in answered)}")
    per_problem = {name: coverage([r for r in answered if r["problem"] == name], "new")
                   for name in args.problems if any(r["problem"] == name for r in answered)}
    worst = max(per_problem, key=lambda name: abs(per_problem[name] - INTERVAL_LEVEL))
    print(f"coverage_new={coverage(answered, 'new'):.3f} coverage_old={coverage(answered, 'old'):.3f} queries={len(answered)} "
          f"worst_problem_coverage={worst}: {per_problem[worst]:.3f} utility_reaching={reaching(answered):.3f}")


def reaching(rows: list[dict]) -> float:
    """Share of the utility answers' single retrainings at or above their targets (equal per answer)."""
    scored = [r["reaching"] for r in rows if "reaching" in r]
    return float(np.mean(scored)) if scored else float("nan")


if __name__ == "__main__":
    main()
