"""The training costs behind a cluster job's `runtime` request (dptradeoff.resources): wall seconds
per epoch of each built-in DP-SGD problem on one core, at the smallest, a middle and the largest lot
of its domain, against what its `cost_seconds` model predicts (the constants in problems/builtin.py).

    ./in-env snakemake --cores 2 results/data/adult/train.parquet results/data/mnist/train.parquet
    OMP_NUM_THREADS=1 ./in-env python benchmarks/training_cost.py [--data results/data]

Last line: the smallest ratio of model to measurement; the request is SAFETY = 2 times the model, so
a ratio above 0.5 means no job under-asks for its time here."""
from __future__ import annotations

import argparse
import time

import pandas as pd

from dptradeoff.problems import PROBLEMS
from dptradeoff.problems.evaluate import evaluate, load_data

EPOCHS = 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="results/data", help="the pipeline's results/data folder")
    args = parser.parse_args()
    ratios = []
    for name in ("adult-logreg-sgd", "adult-logreg-adam", "adult-svm-sgd", "mnist-mlp1-sgd", "mnist-mlp2-sgd"):
        problem = PROBLEMS[name]
        data = load_data(problem, args.data)
        low, high = problem.bounds("lot_size")
        for i, lot in enumerate((64, int(low), 64, int(high))):   # the first run warms up (numba, torch)
            point = {"epochs": EPOCHS, "lot_size": lot, "learning_rate": 0.01, "noise": 1.0, "clip": 1.0}
            start = time.perf_counter()
            evaluate(problem, pd.DataFrame([point]), data, 1, 1, "random", 0, 0)
            seconds = time.perf_counter() - start
            if i == 0:
                continue
            model = problem.oracle.cost_seconds(point, data.n_train)
            ratios.append(model / seconds)
            print(f"{name} n={data.n_train} lot={lot}: {seconds / EPOCHS:.3f} s per epoch, "
                  f"{seconds / EPOCHS / data.n_train * 1e6:.2f} us per example; model/measured {model / seconds:.2f}")
    print(f"cost_model_vs_measured_min_ratio={min(ratios):.2f} (anchor: this run's measurements)")


if __name__ == "__main__":
    main()
