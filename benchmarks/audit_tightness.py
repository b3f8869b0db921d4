"""How tight the white-box audit is (docs/audit.md): linear DP-SGD (logistic loss) on Adult, proven
epsilon in {0.5, 1, 2, 4, 8} at delta 1e-5, each audited by `--runs` trainings with the canary and as many
without. Lots of the whole dataset (the white-box statistic is then exactly Gaussian and the Gaussian fit
exact); `--lot` adds subsampled settings, audited by the same trainings. Each row: the proven epsilon (the
accountant's, RDP), the mechanism's exact epsilon (mu-GDP with mu = sqrt(T) / z, full batch only), the
audited lower bound, the most an audit with these runs certifies of the exact mechanism (its Gaussian fit
at the true mu; Clopper-Pearson's ceiling), and the CPU seconds. Last line: epsilon_lb / proven epsilon.

    ./in-env python benchmarks/audit_tightness.py [--runs 1000] [--lot 1024] [--torch 200] [--bugs 500]

`--torch R` also audits the torch trainers white-box (Dirac gradient canary, `audit/torch_whitebox.py`):
the MLP (mlp2) on 200 rows of the embedded MNIST and the CNN on 20, full batch, 2 epochs, proven epsilon
4, R trainings a side (the CNN R / 2: it costs about 10 times as much on a CPU).
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np
import pandas as pd

from dptradeoff.audit import bounds, whitebox
from dptradeoff.config import load
from dptradeoff.privacy import dpsgd
from dptradeoff.problems import definition, resolve
from dptradeoff.problems.evaluate import load_data
from dptradeoff.train.hyper import DPSGDHyper

DELTA = 1e-5
TARGETS = (0.5, 1.0, 2.0, 4.0, 8.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1000, help="trainings per hypothesis")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--lot", type=int, action="append", default=[], help="also audit lots of this size")
    parser.add_argument("--torch", type=int, default=0, help="also audit the MLP and the CNN with this many runs")
    parser.add_argument("--skip-linear", action="store_true")
    parser.add_argument("--bugs", type=int, default=0,
                        help="also audit the four planted bugs on Adult at proven epsilon 2 with this many runs")
    args = parser.parse_args()
    config = load([])
    problem = resolve("adult-logreg-sgd", definition(config, "adult-logreg-sgd"), config["privacy"]["conversion"])
    data = load_data(problem)
    n = len(data.y_train) + 1          # Adult plus the canary
    rows = [] if args.skip_linear else linear_rows(args, data, n)
    if args.torch:
        rows += torch_rows(args.torch, config)
    if args.bugs:
        bug_rows(args.bugs, data, n)
    if not rows:
        return
    table = pd.DataFrame(rows)
    print(table.to_markdown(index=False, floatfmt=".3g"))
    full = table[table["lot"] == table["rows"]]
    print("eps_lb/proven (full batch, Gaussian fit): " + " ".join(f"{r.trainer}@{r.proven_eps:.2g}={r.ratio:.2f}"
                                                                   for r in full.itertuples()))


def torch_rows(runs: int, config) -> list[dict]:
    from dptradeoff.audit import torch_whitebox

    problem = resolve("mnist-mlp2-sgd", definition(config, "mnist-mlp2-sgd"), config["privacy"]["conversion"])
    data = load_data(problem)
    rows = []
    for name, trainer, size, count in (("mlp2", torch_whitebox.mlp_trainer("mlp2"), 200, runs),
                                       ("cnn", torch_whitebox.cnn_trainer(), 20, max(4, runs // 2))):
        n = size + 1
        found = dpsgd.calibrate_noise(n, n, 2, 4.0, DELTA)
        hp = DPSGDHyper(2, n, 0.1, found.noise, 1.0)
        start = time.process_time()
        trained = torch_whitebox.train_and_score(trainer, data.x_train[:size], data.y_train[:size], hp, count, 4)
        fit = bounds.gaussian_fit(trained.scores_in, trained.scores_out, DELTA)
        mu = math.sqrt(hp.steps(n)) / hp.noise
        rows.append({"trainer": name, "rows": n, "lot": n, "steps": hp.steps(n), "noise": round(hp.noise, 4),
                     "proven_eps": found.epsilon, "exact_eps": bounds.gdp_epsilon(mu, DELTA),
                     "eps_lb_gaussian_fit": fit.epsilon_lb,
                     "eps_lb_clopper_pearson": bounds.clopper_pearson(trained.scores_in, trained.scores_out, DELTA).epsilon_lb,
                     "quoted_eps_lb": fit.epsilon_lb if trained.exact else math.nan,
                     "ratio": fit.epsilon_lb / found.epsilon,
                     "most_certifiable_fit": bounds.gaussian_fit_expected(mu, count, count, DELTA),
                     "cp_ceiling": bounds.clopper_pearson_ceiling(count, count, DELTA), "canary_clipped": math.nan,
                     "trainings": 2 * count, "cpu_seconds": time.process_time() - start})
        print(f"{name}: {rows[-1]}", flush=True)
    return rows


def bug_rows(runs: int, data, n: int) -> None:
    """The planted bugs of tests/test_audit.py on Adult: full batch, 10 epochs, proven epsilon 2; the trainer
    runs the buggy mechanism, the adversary and the accountant assume the correct one."""
    found = dpsgd.calibrate_noise(n, n, 10, 2.0, DELTA)
    claimed = DPSGDHyper(10, n, 0.1, found.noise, 1.0)
    bugs = {"none": (claimed, found.epsilon),
            "noise halved": (DPSGDHyper(10, n, 0.1, found.noise / 2, 1.0), found.epsilon),
            "clipping removed": (DPSGDHyper(10, n, 0.1, found.noise / 1000, 1000.0), found.epsilon),
            "noise divided by sqrt(lot)": (DPSGDHyper(10, n, 0.1, found.noise / math.sqrt(n), 1.0), found.epsilon),
            "accountant charges half the steps": (claimed, dpsgd.epsilon(n, n, 5, found.noise, DELTA))}
    rows = []
    for bug, (trained_hp, claimed_eps) in bugs.items():
        trained = whitebox.train_and_score(data.x_train, data.y_train, "logistic", "sgd", trained_hp, runs,
                                           np.random.default_rng(7), model=claimed)
        fit = bounds.gaussian_fit(trained.scores_in, trained.scores_out, DELTA)
        cp = bounds.clopper_pearson(trained.scores_in, trained.scores_out, DELTA)
        rows.append({"bug": bug, "claimed_eps": claimed_eps, "eps_lb_gaussian_fit": fit.epsilon_lb,
                     "eps_lb_clopper_pearson": cp.epsilon_lb, "exceeds_claim": fit.epsilon_lb > claimed_eps})
        print(rows[-1], flush=True)
    print(pd.DataFrame(rows).to_markdown(index=False, floatfmt=".3g"))


def linear_rows(args, data, n) -> list[dict]:
    rows = []
    for lot in [n, *args.lot]:
        for target in TARGETS:
            found = dpsgd.calibrate_noise(n, lot, args.epochs, target, DELTA)
            if found is None:
                continue
            hp = DPSGDHyper(args.epochs, lot, 0.1, found.noise, 1.0)
            start = time.process_time()
            trained = whitebox.train_and_score(data.x_train, data.y_train, "logistic", "sgd", hp, args.runs,
                                               np.random.default_rng(int(target * 100) + lot))
            fit = bounds.gaussian_fit(trained.scores_in, trained.scores_out, DELTA)
            cp = bounds.clopper_pearson(trained.scores_in, trained.scores_out, DELTA)
            seconds = time.process_time() - start
            full = lot == n
            mu = math.sqrt(hp.steps(n)) / hp.noise if full else math.nan
            rows.append({"trainer": "linear", "rows": n, "lot": lot, "steps": hp.steps(n), "noise": round(hp.noise, 4), "proven_eps": found.epsilon,
                         "exact_eps": bounds.gdp_epsilon(mu, DELTA) if full else math.nan,
                         "eps_lb_gaussian_fit": fit.epsilon_lb, "eps_lb_clopper_pearson": cp.epsilon_lb,
                         "quoted_eps_lb": fit.epsilon_lb if trained.exact else cp.epsilon_lb,
                         "ratio": (fit.epsilon_lb if trained.exact else cp.epsilon_lb) / found.epsilon,
                         "most_certifiable_fit": bounds.gaussian_fit_expected(mu, args.runs, args.runs, DELTA) if full else math.nan,
                         "cp_ceiling": bounds.clopper_pearson_ceiling(args.runs, args.runs, DELTA),
                         "canary_clipped": trained.clipped_share, "trainings": 2 * args.runs, "cpu_seconds": seconds})
            print(f"lot {lot} eps {target}: {rows[-1]}", flush=True)
    return rows


if __name__ == "__main__":
    main()
