"""Which HVPoI reference point and which input geometry find the better front? Hypervolume at equal
budgets, in (epsilon, error) space with the anti-ideal point (10, 1), over independent seeds.

For each seed, 16 initial points are drawn from the paper's Tables 3-4 distributions and evaluated
once; every variant then runs K sequential DPareto rounds (q = 1) from those same points, in process,
with real evaluations (the default config's scale: embedded data, its R and epoch ranges). Variants:
- reference: `fixed` (the paper's stated anti-ideal point, (log 10, logit 0.999) in GP space) vs
  `adaptive` (GPflowOpt's max of the front + 2 range / size, which the published runs used);
- inputs: `log-unit-cube` (ours) vs `initial-max` (the original: linear, divided by the initial
  points' maximum, candidates uniform in the linear domain), on adult only.
Differences are paired by seed (same initial points): mean, 95 % t interval, two-sided p.

Needs the default config's data: ./in-env snakemake --cores 2 results/data/adult/train.parquet
results/data/mnist/train.parquet (in the directory given by --work).
Run: ./in-env python benchmarks/bo_choices.py --work DIR [--seeds 5] [--problems adult-logreg-sgd mnist-mlp2-sgd]
Writes DIR/bo_choices_<problems>.csv (hypervolume after every round, per seed and variant); each problem's last
line is the ratio of the adaptive reference's mean final hypervolume to the fixed one's (log-unit-cube).
"""
from __future__ import annotations

import argparse
import os

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy as np
import pandas as pd
import yaml
from scipy import stats

from dptradeoff.baselines.random_search import sample
from dptradeoff.bo.propose import Settings, propose
from dptradeoff.problems import get_problem
from dptradeoff.problems.evaluate import evaluate, load_data
from dptradeoff.seeds import rng
from dptradeoff.stats.hypervolume import curve

K0 = 16
ROUNDS = {"adult-logreg-sgd": 64, "mnist-mlp2-sgd": 32}
VARIANTS = {"adult-logreg-sgd": [("fixed", "log-unit-cube"), ("adaptive", "log-unit-cube"),
                                 ("fixed", "initial-max"), ("adaptive", "initial-max")],
            "mnist-mlp2-sgd": [("fixed", "log-unit-cube"), ("adaptive", "log-unit-cube")]}


def chain(problem, data, repeats, initial, settings, rounds, seed) -> pd.DataFrame:
    evals, state = initial, None
    for r in range(rounds):
        proposal = propose(problem, evals, 1, settings, rng(seed, problem.name, "bo_choices", r), state, r, initial=K0)
        state = proposal.gp_state
        point = proposal.points[problem.names]
        evals = pd.concat([evals, evaluate(problem, point, data, repeats, seed, "dpareto", 0, K0 + r)], ignore_index=True)
    return evals


def paired(table: pd.DataFrame, a: str, b: str) -> tuple[float, float, float, float]:
    """Mean of b - a over seeds, its 95 % t interval, and the two-sided p of a paired t-test."""
    d = (table[b] - table[a]).to_numpy()
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    return d.mean(), d.mean() - half, d.mean() + half, stats.ttest_1samp(d, 0.0).pvalue


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", required=True)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--problems", nargs="+", default=list(ROUNDS))
    args = parser.parse_args()
    os.chdir(args.work)
    config = yaml.safe_load(open(os.path.join(os.path.dirname(__file__), "..", "config", "config.yaml")))
    rows = []
    for name in args.problems:
        settings = config["problems"][name]
        problem = get_problem(name, settings.get("ranges"))
        data = load_data(problem)
        for seed in range(args.seeds):
            points = sample(problem, K0, rng(seed, name, "bo_choices", "initial"))
            initial = evaluate(problem, points, data, settings["repeats"], seed, "random", 0, 0)
            for reference, inputs in VARIANTS[name]:
                s = Settings(candidates=config["dpareto"]["candidates"], gp_restarts=config["dpareto"]["gp_restarts"],
                             reference=reference, refit_every=config["dpareto"]["gp_refit_every"], inputs=inputs)
                evals = chain(problem, data, settings["repeats"], initial, s, ROUNDS[name], seed)
                hv = curve(evals)
                rows += [{"problem": name, "seed": seed, "reference": reference, "inputs": inputs, "evaluations": n + 1,
                          "hypervolume": v} for n, v in enumerate(hv)]
                print(f"{name} seed {seed} {reference:8s} {inputs:13s} hypervolume after {len(evals)}: {hv[-1]:.4f}", flush=True)
    frame = pd.DataFrame(rows)
    frame.to_csv(f"bo_choices_{'_'.join(args.problems)}.csv", index=False)
    for name, group in frame.groupby("problem"):
        final = group[group["evaluations"] == group["evaluations"].max()]
        wide = final.pivot_table(index="seed", columns=["reference", "inputs"], values="hypervolume")
        print(f"\n{name}, hypervolume after {group['evaluations'].max()} evaluations (mean over {len(wide)} seeds):")
        print(wide.mean().to_string())
        m, lo, hi, p = paired(wide, ("fixed", "log-unit-cube"), ("adaptive", "log-unit-cube"))
        print(f"adaptive - fixed (log-unit-cube): {m:+.4f} (95% CI {lo:+.4f}, {hi:+.4f}), p = {p:.3g}")
        if ("fixed", "initial-max") in wide:
            for reference in ("fixed", "adaptive"):
                m, lo, hi, p = paired(wide, (reference, "log-unit-cube"), (reference, "initial-max"))
                print(f"initial-max - log-unit-cube ({reference}): {m:+.4f} (95% CI {lo:+.4f}, {hi:+.4f}), p = {p:.3g}")
        means = wide.mean()
        ratio = means[("adaptive", "log-unit-cube")] / means[("fixed", "log-unit-cube")]
        print(f"adaptive_over_fixed_hypervolume_{name}={ratio:.3f}")


if __name__ == "__main__":
    main()
