"""Black-box one-run audits (dptradeoff/audit/blackbox.py) against the accountant's proven epsilon, the
anchor: (a) the Opacus CNN example (examples/opacus_cnn.py, add/remove-one, Poisson sampling) and (b) the
built-in MLP DP-SGD, MLP2 (mnist-mlp2-sgd: 784-128-64-10, replace-one; cheaper than MLP1), each at a
proven epsilon of 1 (the example config's query) and 8, on the embedded MNIST digits, on the CPU.

Scaled down for a 2-core CPU (Steinke et al. audit 50,000 CIFAR-10 rows with 1,000 canaries): the CNN
trains on 2,000 of the digits (its `train_rows`) for 3 epochs (lot 64, learning rate 0.25, clip 1); MLP2
on all 4,000 for 30 epochs (lot 128, learning rate 0.3, clip 1: about 80 % test accuracy at epsilon 8).
Each audit: 500 canaries (mislabelled training rows, each in with probability 1/2), 100 guesses, 50 "in"
(lowest losses) and 50 "out" (highest). The noise is calibrated so that the training's proven epsilon
(delta 1e-5; for the CNN at its expected n, its rows less half the canaries) is the target. One training
per audit.

Run: ./in-env python benchmarks/audit_blackbox.py   (about 5 minutes; needs results/data/mnist:
./in-env snakemake --cores 2 results/data/mnist/train.parquet results/data/mnist/test.parquet)
Last line: one_run_eps_lb/proven: cnn=<ratio> mlp=<ratio>, at proven epsilon 8.
"""
from __future__ import annotations

import importlib.util
import logging
import math
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import optimize

from dptradeoff.audit import blackbox
from dptradeoff.audit.one_run import one_run_ceiling
from dptradeoff.problems import get_problem
from dptradeoff.problems.evaluate import load_data

ROOT = Path(__file__).resolve().parents[1]
DELTA, TARGETS = 1e-5, (1.0, 8.0)
CNN = {"rows": 2000, "point": {"epochs": 3, "lot_size": 64, "learning_rate": 0.25, "clip": 1.0}}
MLP = {"point": {"epochs": 30, "lot_size": 128, "learning_rate": 0.3, "clip": 1.0}}
CANARIES, GUESSES = 500, 100


def opacus_example():
    spec = importlib.util.spec_from_file_location("opacus_cnn_example", ROOT / "examples/opacus_cnn.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def calibrate(oracle, point: dict, n: int, target: float) -> dict:
    """The point with the noise at which its proven epsilon is `target`."""
    gap = lambda log_z: oracle.epsilon({**point, "noise": math.exp(log_z)}, n=n, delta=DELTA) - target  # noqa: E731
    return {**point, "noise": math.exp(optimize.brentq(gap, math.log(0.2), math.log(200.0), xtol=1e-5))}


def audit(name, oracle, data, point, n_claim, seed):
    proven = oracle.epsilon(point, n=n_claim, delta=DELTA)
    start = time.perf_counter()
    result = blackbox.one_run(oracle, point, data, np.random.default_rng(seed), canaries=CANARIES, guesses=GUESSES,
                              delta=DELTA)
    return {"algorithm": name, "rows": data.n_train, "result": result, "proven": proven, "noise": point["noise"],
            "seconds": time.perf_counter() - start}


def main() -> None:
    warnings.filterwarnings("ignore", category=UserWarning)   # Opacus's and torch's hook notices
    logging.disable(logging.WARNING)    # dp_accounting's notices at the small noises the calibration tries
    mnist = get_problem("mnist-mlp2-sgd")
    mlp_data = load_data(mnist)
    example = opacus_example()
    cnn = example.OpacusCNN(train_rows=CNN["rows"], test_rows=200)
    cnn_data = cnn.prepare(mlp_data)      # MLPDPSGD prepares nothing: the stored digits, as the CNN's prepare expects
    rows = []
    for k, target in enumerate(TARGETS):
        n_claim = cnn_data.n_train - CANARIES // 2
        point = calibrate(cnn, CNN["point"], n_claim, target)
        rows.append(audit("Opacus CNN (examples/opacus_cnn.py)", cnn, cnn_data, point, n_claim, 10 + k))
        point = calibrate(mnist.oracle, MLP["point"], mlp_data.n_train, target)
        rows.append(audit("MLP2 DP-SGD (mnist-mlp2-sgd)", mnist.oracle, mlp_data, point, mlp_data.n_train, 20 + k))
        for row in rows[-2:]:
            r = row["result"]
            print(f"# {row['algorithm']}: proven {row['proven']:.3g} at noise {row['noise']:.3g}; {r.detail}; "
                  f"{row['seconds']:.0f} s", flush=True)

    print("\n| algorithm | data rows | canaries | guesses | correct | proven epsilon | delta | one-run epsilon_lb "
          "| trainings | seconds |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        r = row["result"]
        print(f"| {row['algorithm']} ({r.neighbouring}) | {row['rows']:,} | {r.canaries} | {r.guesses} | {r.correct} "
              f"| {row['proven']:.3g} | {r.delta:g} | {r.epsilon_lb:.3f} | {r.trainings} | {row['seconds']:.0f} |")
    main_cnn, main_mlp = rows[-2], rows[-1]
    print(f"\nnote: the most a one-run audit with these guesses can certify (every guess right): "
          f"{one_run_ceiling(main_cnn['result'].guesses, main_cnn['result'].canaries, DELTA):.2f} (CNN), "
          f"{one_run_ceiling(main_mlp['result'].guesses, main_mlp['result'].canaries, DELTA):.2f} (MLP2)")
    print(f"one_run_eps_lb/proven: cnn={main_cnn['result'].epsilon_lb / main_cnn['proven']:.2f} "
          f"mlp={main_mlp['result'].epsilon_lb / main_mlp['proven']:.2f}")


if __name__ == "__main__":
    main()
