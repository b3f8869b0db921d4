"""How tight the white-box audit is (docs/audit.md): linear DP-SGD (logistic loss) on Adult, 10 epochs,
proven epsilon `--eps` (default 1, 2, 4) at delta 1e-5, each audited by `--runs` trainings with the canary and
as many without: lots of the whole dataset, and of each `--lot`. Each row: the proven epsilon (the config's
accountant's: the tight PLD one by default), the exact epsilon of the composed step the audit bounds at the trainer's true
parameters (dp_accounting's PLD, rounded up: the most any audit of this step certifies), the quoted
composed-step bound epsilon_lb (`audit/composed.py`), the assumption-free Clopper-Pearson bound on the
run-level score, and the CPU seconds. Last line: epsilon_lb / proven epsilon per row of the last lot
(`linear@<eps>=<ratio>`), and in brackets epsilon_lb / exact.

    ./in-env python benchmarks/audit_tightness.py [--runs 1000] [--lot 1024] [--torch 200] [--bugs 1000]

`--torch R` also audits the MLP (mlp2) white-box (Dirac gradient canary, `audit/torch_whitebox.py`) on 200
rows of the embedded MNIST, lots of 20, 10 epochs, proven epsilon 4, R trainings a side.
`--bugs R` audits the planted bugs at a subsampled point (lots of 256, proven epsilon 8), R trainings a side.
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np
import pandas as pd

from dptradeoff.audit import bounds, composed, whitebox
from dptradeoff.config import load
from dptradeoff.privacy import dpsgd
from dptradeoff.privacy.accountant import accounting_name
from dptradeoff.problems import definition, resolve
from dptradeoff.problems.evaluate import load_data
from dptradeoff.train.hyper import DPSGDHyper

DELTA = 1e-5
TARGETS = (1.0, 2.0, 4.0)
ACCOUNTING = "pld"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1000, help="trainings per hypothesis")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--eps", type=float, nargs="+", default=list(TARGETS), help="proven epsilons audited")
    parser.add_argument("--lot", type=int, action="append", default=[], help="also audit lots of this size")
    parser.add_argument("--torch", type=int, default=0, help="also audit the MLP at a subsampled point with this many runs")
    parser.add_argument("--skip-linear", action="store_true")
    parser.add_argument("--skip-full-batch", action="store_true")
    parser.add_argument("--bugs", type=int, default=0,
                        help="also audit the planted bugs at a subsampled point with this many runs")
    args = parser.parse_args()
    config = load([])
    global ACCOUNTING
    ACCOUNTING = accounting_name(config["privacy"])   # the proven epsilon is the config's accountant's
    problem = resolve("adult-logreg-sgd", definition(config, "adult-logreg-sgd"), ACCOUNTING)
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
    print(table.drop(columns=["premises"]).to_markdown(index=False, floatfmt=".3g"))
    linear = table[table["trainer"] == "linear"]
    last = linear[linear["lot"] == linear["lot"].iloc[-1]] if len(linear) else table
    print(f"eps_lb/proven (lot {last['lot'].iloc[0]}): " + " ".join(f"{r.trainer}@{r.proven_eps:.2g}={r.ratio:.2f}" for r in last.itertuples())
          + " (eps_lb/exact: " + " ".join(f"{r.of_exact:.2f}" for r in last.itertuples()) + ")")


def _row(trainer, n, hp, found_eps, trained, seconds) -> dict:
    """One table row: the composed-step bound, the exact epsilon of its step at the true parameters, the
    assumption-free bound."""
    quoted, steps = composed.composed_bound(trained.seen, DELTA)
    cp = bounds.clopper_pearson(trained.scores_in, trained.scores_out, DELTA)
    share = trained.canary_norm / math.hypot(trained.canary_norm, 1.0) if math.isfinite(trained.canary_norm) else 1.0
    exact = composed.composed_epsilon(hp.lot_size / n, hp.clip * share, 2 * hp.clip * hp.noise, hp.steps(n), DELTA,
                                      optimistic=False)
    return {"trainer": trainer, "rows": n, "lot": hp.lot_size, "steps": hp.steps(n), "noise": round(hp.noise, 4),
            "proven_eps": found_eps, "exact_eps": exact, "eps_lb": quoted.epsilon_lb,
            "ratio": quoted.epsilon_lb / found_eps, "of_exact": quoted.epsilon_lb / exact,
            "eps_lb_clopper_pearson": cp.epsilon_lb, "noise_ub/true": steps.noise_std_upper / (2 * hp.clip * hp.noise),
            "rate_lb/true": steps.rate_lower * n / hp.lot_size, "contribution_lb/true": steps.contribution_lower / (hp.clip * share),
            "canary_clipped": trained.clipped_share, "trainings": len(trained.scores_in) + len(trained.scores_out),
            "cpu_seconds": seconds, "premises": "; ".join(composed.premise_bounds(trained.seen).broken_premises(
                2 * hp.clip * hp.noise, hp.lot_size / n, hp.clip))}


def torch_rows(runs: int, config) -> list[dict]:
    from dptradeoff.audit import torch_whitebox

    problem = resolve("mnist-mlp2-sgd", definition(config, "mnist-mlp2-sgd"), accounting_name(config["privacy"]))
    data = load_data(problem)
    size, lot, epochs = 200, 20, 10
    n = size + 1
    found = dpsgd.calibrate_noise(n, lot, epochs, 4.0, DELTA, ACCOUNTING)
    hp = DPSGDHyper(epochs, lot, 0.1, found.noise, 1.0)
    start = time.process_time()
    trained = torch_whitebox.train_and_score(torch_whitebox.mlp_trainer("mlp2"), data.x_train[:size],
                                             data.y_train[:size], hp, runs, 4)
    row = _row("mlp2", n, hp, found.epsilon, trained, time.process_time() - start)
    print(f"mlp2: {row}", flush=True)
    return [row]


def bug_rows(runs: int, data, n: int) -> None:
    """The planted bugs at a subsampled point (lots of 256, 10 epochs, proven epsilon 8: where halving the noise
    or drawing the canary twice as often breaks the claimed epsilon, not only the accountant's premises); the
    trainer runs with its bug, the adversary and the accountant assume the correct mechanism."""
    lot = 256
    found = dpsgd.calibrate_noise(n, lot, 10, 8.0, DELTA, ACCOUNTING)
    claimed = DPSGDHyper(10, lot, 0.1, found.noise, 1.0)
    bugs = {"none": (claimed, 1),
            "noise halved": (DPSGDHyper(10, lot, 0.1, found.noise / 2, 1.0), 1),
            "clipping removed": (DPSGDHyper(10, lot, 0.1, found.noise / 1000, 1000.0), 1),
            "noise divided by sqrt(lot)": (DPSGDHyper(10, lot, 0.1, found.noise / math.sqrt(lot), 1.0), 1),
            "canary's row drawn twice as often": (claimed, 2)}
    rows = []
    for bug, (trained_hp, copies) in bugs.items():
        start = time.process_time()
        trained = whitebox.train_and_score(data.x_train, data.y_train, "logistic", "sgd", trained_hp, runs,
                                           np.random.default_rng(7), model=claimed, copies=copies)
        quoted, _ = composed.composed_bound(trained.seen, DELTA)
        cp = bounds.clopper_pearson(trained.scores_in, trained.scores_out, DELTA)
        rows.append({"bug": bug, "claimed_eps": found.epsilon, "eps_lb": quoted.epsilon_lb,
                     "eps_lb_clopper_pearson": cp.epsilon_lb, "exceeds_claim": quoted.epsilon_lb > found.epsilon,
                     "broken_premises": "; ".join(composed.premise_bounds(trained.seen).broken_premises(
                         2 * claimed.clip * claimed.noise, lot / n, claimed.clip)) or "none",
                     "cpu_seconds": time.process_time() - start})
        print(rows[-1], flush=True)
    print(pd.DataFrame(rows).to_markdown(index=False, floatfmt=".3g"))


def linear_rows(args, data, n) -> list[dict]:
    rows = []
    for lot in ([] if args.skip_full_batch else [n]) + args.lot:
        for target in args.eps:
            found = dpsgd.calibrate_noise(n, lot, args.epochs, target, DELTA, ACCOUNTING)
            if found is None:
                continue
            hp = DPSGDHyper(args.epochs, lot, 0.1, found.noise, 1.0)
            start = time.process_time()
            trained = whitebox.train_and_score(data.x_train, data.y_train, "logistic", "sgd", hp, args.runs,
                                               np.random.default_rng(int(target * 100) + lot))
            rows.append(_row("linear", n, hp, found.epsilon, trained, time.process_time() - start))
            print(f"lot {lot} eps {target}: {rows[-1]}", flush=True)
    return rows


if __name__ == "__main__":
    main()
