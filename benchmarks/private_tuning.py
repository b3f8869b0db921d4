"""Private tuning against today's split release (docs/release.md, "Private tuning: every row protected"): on
adult LogReg+SGD at total (epsilon, delta) = (1, 1e-5), for each seed, the same release made three ways, paired:

- split: today's default. The front is characterised on a 20 % tuning split (the default `all`'s tuning study:
  16 random points and 12 DPareto rounds on those rows, which are given up); random stopping over its points on
  the other 80 %.
- prior: `release.tuning: {private: prior}`. Random stopping (Papernot & Steinke) over 32 settings drawn from the
  domain's prior, on every training row.
- subsampled: `release.tuning: {private: subsampled}`. The same search on a secret random 10 % of the rows, the
  chosen setting then trained on every row (Koskela & Kulkarni), the search amplified by the subsampling.

Per method and seed: the released model's test accuracy, the share of the training rows protected, the total
epsilon and its independent recomputation (`tests/independent_release_epsilon.py`: Papernot-Steinke Thm 2, WBK19
Thm 9, the composition and the conversion written out again in 60-digit arithmetic from the trainings' RDP), and the
release's wall-clock (the split release's with and without its tuning study). Paired differences over the seeds
with two-sided p (t-test). Each seed's config sets `seed:`, so every draw differs between seeds; the methods of one
seed share the seed.

    ./in-env python benchmarks/private_tuning.py --work DIR [--seeds 8] [--first-seed 1] [--methods ...]

Results are cached per (seed, method) in --work/private_tuning/, so a killed run resumes. Last line: the private
method's mean test accuracy minus the split release's, and the subsampled minus the prior, with p.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import yaml
from scipy import stats

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from independent_release_epsilon import independent_total  # noqa: E402

from dptradeoff import paths  # noqa: E402
from dptradeoff.config import load  # noqa: E402
from dptradeoff.privacy.accountant import accountant_named, accounting_name  # noqa: E402
from dptradeoff.problems import definition, resolve  # noqa: E402
from dptradeoff.problems.tables import read_frame  # noqa: E402
from dptradeoff.release.run import release  # noqa: E402
from dptradeoff.release.settings import ReleaseSettings  # noqa: E402

PROBLEM = "adult-logreg-sgd"
TUNING = {"split": {"split": 0.2}, "prior": {"private": "prior"}, "subsampled": {"private": "subsampled"}}
SELECTION: dict = {}   # overrides of release.selection (--mean-trials)


def build(work: Path, seed: int, target: str) -> float:
    """`target` built by Snakemake in `work` under the default config at `seed` (the split release's tuning
    study, the default `all`'s, or the data alone); its wall-clock seconds."""
    work.mkdir(parents=True, exist_ok=True)
    if not (work / "config").exists():
        (work / "config").symlink_to(REPO / "config")
    (work / "seed.yaml").write_text(yaml.safe_dump({"seed": seed}))
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(work), target,
               "--cores", "1", "--configfile", str(REPO / "config/config.yaml"), str(work / "seed.yaml"), "--quiet", "rules"]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    if done.returncode:
        sys.exit(f"the tuning study of seed {seed} failed:\n{(done.stdout + done.stderr)[-3000:]}")
    return time.perf_counter() - start


def one(work: Path, seed: int, method: str) -> dict:
    share = TUNING[method].get("subsample")
    mean = SELECTION.get("mean_trials")
    cache = work / "private_tuning" / (f"seed{seed}-{method}{'' if share is None else f'-{share:g}'}"
                                       f"{'' if mean is None else f'-k{mean:g}'}.json")
    if cache.exists():
        return json.loads(cache.read_text())
    seed_dir = work / f"seed{seed}"
    if method == "split":
        study = build(seed_dir, seed, paths.RunFiles(PROBLEM + "-tuning", paths.DPARETO, 0).evaluations)
    else:   # no tuning study: the data alone
        build(seed_dir, seed, "results/data/adult/test.parquet")
        study = 0.0
    config = load([str(REPO / "config/config.yaml")], overrides={"seed": seed, "release": {"tuning": TUNING[method],
                                                                     "selection": SELECTION}})
    settings = ReleaseSettings.from_config(config)
    conversion = accounting_name(config["privacy"])
    accountant = accountant_named(conversion)
    problem = resolve(PROBLEM, definition(config, PROBLEM), conversion)
    here = os.getcwd()
    os.chdir(seed_dir)
    try:
        tuning = resolve(settings.tuning_problem, definition(config, settings.tuning_problem), conversion) \
            if settings.tuning_problem else None
        frame = read_frame(paths.RunFiles(settings.tuning_problem, paths.DPARETO, 0).evaluations) if tuning else None
        record = release(problem, tuning, frame, settings, accountant)
    finally:
        os.chdir(here)
    reference = record["diagnostics"]["reference_without_private_tuning"]
    seconds = record["diagnostics"]["seconds"]   # the release, up to its non-private reference (not made under `os`)
    result = {"seed": seed, "method": method, "test_accuracy": record["test_utility"],
              "rows_protected": record["rows_protected"], "total_epsilon": record["guarantee"]["epsilon"],
              "independent_epsilon": independent_total(record, problem, accountant),
              "eps0": record["eps0"], "release_seconds": seconds, "tuning_study_seconds": study,
              "trials": record["diagnostics"]["trials_run"], "reference_accuracy": reference["test_utility"],
              "released": record["released"]["hyperparameters"]}
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(result, indent=1, default=float))
    return result


def paired(a: np.ndarray, b: np.ndarray) -> str:
    d = a - b
    p = stats.ttest_rel(a, b).pvalue if len(d) > 1 and d.std() > 0 else float("nan")
    return f"{d.mean():+.4f} (sd {d.std(ddof=1) if len(d) > 1 else 0:.4f}, p {p:.2g}, ahead on {(d > 0).sum()}/{len(d)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", required=True)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--methods", nargs="+", default=list(TUNING), choices=list(TUNING))
    parser.add_argument("--subsample", type=float, help="the subsampled search's share (default: the config's)")
    parser.add_argument("--mean-trials", type=float, help="E[K] of every method's random stopping (default: the config's)")
    args = parser.parse_args()
    if args.subsample:
        TUNING["subsampled"] = {"private": "subsampled", "subsample": args.subsample}
    if args.mean_trials:
        SELECTION["mean_trials"] = args.mean_trials
    work = Path(args.work).resolve()
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    results = {m: [one(work, s, m) for s in seeds] for m in args.methods}
    print("method      test acc  (sd)     rows protected  total eps  |total - independent|  eps0   release s  "
          "(+ tuning study s)  reference acc")
    for method, rows in results.items():
        acc = np.array([r["test_accuracy"] for r in rows])
        gap = max(abs(r["total_epsilon"] - r["independent_epsilon"]) for r in rows)
        print(f"{method:11s} {acc.mean():.4f}  ({acc.std(ddof=1):.4f})  {rows[0]['rows_protected']:.2f}            "
              f"{max(r['total_epsilon'] for r in rows):.4f}     {gap:.1e}              "
              f"{np.mean([r['eps0'] for r in rows]):.3f}  {np.median([r['release_seconds'] for r in rows]):7.1f}    "
              f"{np.median([r['tuning_study_seconds'] for r in rows]):7.1f}            "
              f"{np.mean([r['reference_accuracy'] for r in rows]):.4f}")
    acc = {m: np.array([r["test_accuracy"] for r in rows]) for m, rows in results.items()}
    for method in acc:
        if method != "split" and "split" in acc:
            print(f"{method} - split: {paired(acc[method], acc['split'])}")
    if {"prior", "subsampled"} <= set(acc):
        print(f"subsampled - prior: {paired(acc['subsampled'], acc['prior'])}")
    last = [f"{m}_minus_split={acc[m].mean() - acc['split'].mean():+.4f}" for m in acc if m != "split" and "split" in acc]
    if {"prior", "subsampled"} <= set(acc):
        p = stats.ttest_rel(acc["subsampled"], acc["prior"]).pvalue
        last.append(f"subsampled_minus_prior={acc['subsampled'].mean() - acc['prior'].mean():+.4f} (p {p:.2g})")
    print(" ".join(last))


if __name__ == "__main__":
    main()
