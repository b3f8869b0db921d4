"""What config/paper-adult.yaml costs on this machine: seconds of training per evaluated point for each
Adult problem (R = 10 on the a1a split, Table 4's random points, one thread, process time), and the
study's projected wall time on the given cores, against the issue's 60-minute target.

Needs the study's data: ./in-env snakemake --cores 2 results/data/adult/train.parquet
--configfile=config/paper-adult.yaml (in the directory given by --work).
Run: ./in-env python benchmarks/adult_study_cost.py --work DIR [--points 40] [--cores 2]
(last line: projected_minutes=<x> ratio_to_target=<x>)
"""
from __future__ import annotations

import argparse
import os

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import time

import numpy as np

from dptradeoff.baselines.random_search import sample
from dptradeoff.problems import get_problem
from dptradeoff.problems.evaluate import load_data

TARGET_MINUTES = 60
REPEATS = 10
# Points the study evaluates per problem: Table 2's sample (19 x 256), random and uniform runs
# (272 each), the chain's 256 iterations; grids of 243 + 1,024 points on LogReg+SGD only.
POINTS = {"adult-logreg-sgd": 4864 + 272 + 272 + 256 + 243 + 1024,
          "adult-logreg-adam": 4864 + 272 + 272 + 256, "adult-svm-sgd": 4864 + 272 + 272 + 256}
CHAIN_JOBS = 3 * 256           # one job per chain evaluation (sequential), plus the fan-out's jobs of 32 points
START_UP_SECONDS = 2.0         # per job: interpreter, imports, numba cache, data (chain jobs in the study: median
                               # 3.3 s of wall time beyond training, on a busy machine)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", required=True)
    parser.add_argument("--points", type=int, default=40)
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args()
    os.chdir(args.work)
    cpu = 0.0
    for name, count in POINTS.items():
        problem = get_problem(name, {"epochs": [1, 64]})
        data = load_data(problem)
        points = sample(problem, args.points, np.random.default_rng(0))
        problem.oracle.utilities(problem.check(points.iloc[0].to_dict() | {"epochs": 1}), data, REPEATS,
                                 np.random.default_rng(0))  # numba cache load
        start, epochs = time.process_time(), 0
        for i, row in points.iterrows():
            point = problem.check(row.to_dict())
            epochs += point["epochs"]
            problem.oracle.utilities(point, data, REPEATS, np.random.default_rng(i))
        per_point = (time.process_time() - start) / len(points)
        rate = epochs * len(data.y_train) * REPEATS / (per_point * len(points))
        print(f"{name}: {per_point:.3f} s per point ({rate / 1e6:.1f}M examples/s), {count} points: {per_point * count:.0f} s")
        cpu += per_point * count
    jobs = CHAIN_JOBS + (sum(POINTS.values()) - CHAIN_JOBS) / 32
    total = cpu + jobs * START_UP_SECONDS
    minutes = total / args.cores / 60
    print(f"training {cpu:.0f} s + start-ups {jobs * START_UP_SECONDS:.0f} s over {args.cores} cores")
    print(f"projected_minutes={minutes:.0f} ratio_to_target={minutes / TARGET_MINUTES:.2f}")


if __name__ == "__main__":
    main()
