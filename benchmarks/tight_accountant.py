"""What the tight accountant buys (docs/accounting.md): the noise for a target epsilon, the fronts of a finished
run under both accountants (the same trainings, epsilon recomputed), and the release at total epsilon 1 under each.

    ./in-env python benchmarks/tight_accountant.py                 # the noise table only
    ./in-env python benchmarks/tight_accountant.py --fronts --release   # after `snakemake --cores 2 all`

Last line: the median over the noise table of the tight noise over WBK19's (the anchor), measured in this run.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from dptradeoff import paths  # noqa: E402
from dptradeoff.config import load  # noqa: E402
from dptradeoff.privacy import dpsgd  # noqa: E402
from dptradeoff.privacy.accountant import accountant_named  # noqa: E402
from dptradeoff.problems import definition, resolve  # noqa: E402
from dptradeoff.problems.tables import read_frame  # noqa: E402

ACCOUNTANTS = {"tight (pld)": "pld", "WBK19 RDP (dp_accounting conversion)": "dp_accounting"}
TARGETS = (0.1, 0.25, 1.0, 4.0)
# (problem, training rows, lot, epochs): Adult's training split; MNIST MLP2 on the default embedded split
SETTINGS = (("adult-logreg-sgd", 21707, 256, 10), ("adult-logreg-sgd", 21707, 1024, 10),
            ("mnist-mlp2-sgd", 4000, 128, 4))


def noise_table() -> list[float]:
    print("| problem | n | lot | epochs | target ε | z (tight) | z (WBK19) | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    ratios = []
    for problem, n, lot, epochs in SETTINGS:
        for target in TARGETS:
            found = {name: dpsgd.calibrate_noise(n, lot, epochs, target, 1e-5, how) for name, how in ACCOUNTANTS.items()}
            tight, rdp = (found[name] for name in ACCOUNTANTS)
            ratio = tight.noise / rdp.noise
            ratios.append(ratio)
            print(f"| {problem} | {n} | {lot} | {epochs} | {target:g} | {tight.noise:.3f} | {rdp.noise:.3f} | {ratio:.3f} |")
    return ratios


def pareto(eps: np.ndarray, util: np.ndarray) -> list[tuple[float, float]]:
    order = np.lexsort((-util, eps))
    front, best = [], -math.inf
    for i in order:
        if util[i] > best:
            front.append((float(eps[i]), float(util[i])))
            best = util[i]
    return front


def fronts(config) -> None:
    levels = (0.1, 0.3, 1.0, 3.0)
    print("\n| problem | accountant | points on the front | best utility at ε ≤ " + " / ".join(f"{v:g}" for v in levels) + " |")
    print("|---|---|---|---|")
    for name in ("adult-logreg-sgd", "mnist-mlp2-sgd"):
        files = sorted(Path(f"results/dpareto/{name}").glob("*/*/evaluations.parquet"))
        frames = [read_frame(str(p)) for p in files]
        frames = [f for f in frames if {"epochs", "lot_size", "noise", "utility"} <= set(f.columns)]
        if not frames:
            print(f"| {name} | no evaluations under results/dpareto/{name}: run `snakemake --cores 2 all` first | | |")
            continue
        import pandas as pd
        rows = pd.concat(frames, ignore_index=True).dropna(subset=["utility"])
        n = int(rows["n_train"].iloc[0]) if "n_train" in rows else None
        if n is None:
            problem = resolve(name, definition(config, name))
            from dptradeoff.problems.evaluate import load_data
            n = load_data(problem).n_train
        for label, how in ACCOUNTANTS.items():
            eps = np.array([dpsgd.epsilon(n, int(r.lot_size), int(r.epochs), float(r.noise), float(r.delta), how)
                            for r in rows.itertuples()])
            front = pareto(eps, rows["utility"].to_numpy(float))
            best = [max((u for e, u in front if e <= level), default=math.nan) for level in levels]
            print(f"| {name} | {label} | {len(front)} | " + " / ".join(f"{b:.4f}" for b in best) + " |")


def releases(config) -> None:
    from dptradeoff.release.run import release
    from dptradeoff.release.settings import ReleaseSettings

    settings = ReleaseSettings.from_config(load([], overrides={"release": {"epsilon": 1.0}}))
    evaluations = paths.RunFiles(settings.tuning_problem, paths.DPARETO, 0).evaluations
    if not Path(evaluations).exists():
        print(f"\nno {evaluations}: run `snakemake --cores 2 all` first")
        return
    print("\n| accountant | total ε | ε0 | released noise z | test utility | seconds |")
    print("|---|---|---|---|---|---|")
    for label, how in ACCOUNTANTS.items():
        problem = resolve(settings.problem, definition(config, settings.problem), how)
        tuning = resolve(settings.tuning_problem, definition(config, settings.tuning_problem), how)
        start = time.perf_counter()
        record = release(problem, tuning, read_frame(evaluations), settings, accountant_named(how))
        seconds = time.perf_counter() - start
        print(f"| {label} | {record['guarantee']['epsilon']:.4f} | {record['eps0']:.4f} | "
              f"{record['released']['hyperparameters'].get('noise', math.nan):.3f} | {record['test_utility']:.4f} | {seconds:.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fronts", action="store_true", help="the fronts of results/dpareto under both accountants")
    parser.add_argument("--release", action="store_true", help="the release at total epsilon 1 under both accountants")
    args = parser.parse_args()
    ratios = noise_table()
    config = load([])
    if args.fronts:
        fronts(config)
    if args.release:
        releases(config)
    print(f"tight_noise_over_wbk19_median={float(np.median(ratios)):.3f} (range {min(ratios):.3f}-{max(ratios):.3f}, "
          f"{len(ratios)} settings)")


if __name__ == "__main__":
    main()
