"""Our compiled DP-SGD for linear models vs Opacus's PrivacyEngine, one thread each, examples per second.

Adult-shaped data (32,561 x 123 binary features, one set in each of a9a's 14 one-hot groups, logistic loss, SGD, lot 256, clip 1,
noise 1) for Opacus and for ours at R = 1 and R = 10 replications per call, plus two dense shapes:
Gisette (6,000 x 5,000 floats in [0, 1], logistic) and Twitter (16,000 x 77 log-counts, squared loss).
Examples/s = steps x lot x runs / seconds of one `linear.train` call (data preparation included),
the median of REPEATS calls after a warm-up call (which loads or compiles the numba kernel).

Run: ./in-env python benchmarks/linear_trainer_vs_opacus.py
(last lines: speedup_vs_opacus_r10=<x>, then examples_per_second_r10=<x>)
"""
from __future__ import annotations

import os

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # before numpy / numba / torch load their thread pools

import time

import numpy as np
import torch

from _opacus_reference import opacus_examples_per_second
from dptradeoff.data import twitter
from dptradeoff.train import linear
from dptradeoff.train.hyper import DPSGDHyper

N, D, LOT, CLIP, NOISE = 32561, 123, 256, 1.0, 1.0
REPEATS = 5


# a9a's one-hot groups (age, workclass, fnlwgt, education, education-num, marital status, occupation,
# relationship, race, sex, capital gain, capital loss, hours per week, native country): 123 features.
A9A_GROUPS = (5, 8, 5, 16, 5, 7, 14, 6, 5, 2, 2, 2, 5, 41)


def adult_like(rng):
    """Adult-shaped: one feature set in each of a9a's 14 groups, so 14 of 123 per row, as in a9a."""
    offsets = np.cumsum((0,) + A9A_GROUPS[:-1])
    x = np.zeros((N, D), dtype=np.float32)
    for offset, size in zip(offsets, A9A_GROUPS):
        x[np.arange(N), offset + rng.integers(0, size, N)] = 1.0
    y = np.where(x[:, 5:20].sum(1) + rng.normal(0, 1, N) > 1.0, 1.0, -1.0)
    return x, y


def cases(rng):
    """(name, x, y, loss, epochs) of each shape we time."""
    x, y = adult_like(rng)
    xg = rng.random((6000, 5000)).astype(np.float32)
    yg = np.where(xg[:, :50].sum(1) + rng.normal(0, 1, 6000) > 25, 1.0, -1.0)
    xt, yt = twitter.preprocess(*twitter.synthetic(16000, rng))
    return [("adult-shaped, sparse", x, y, "logistic", 20), ("gisette-shaped, dense", xg, yg, "logistic", 2),
            ("twitter-shaped, dense", xt, yt, "squared", 20)]


def examples_per_second(train, x, y, loss, epochs, runs, rng) -> float:
    hp = DPSGDHyper(epochs=epochs, lot_size=LOT, learning_rate=0.05, noise=NOISE, clip=CLIP)
    train(x, y, loss, "sgd", DPSGDHyper(1, LOT, 0.05, NOISE, CLIP), 1, rng)  # warm-up: compile or cache load
    seconds = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        train(x, y, loss, "sgd", hp, runs, rng)
        seconds.append(time.perf_counter() - start)
    return hp.steps(len(x)) * LOT * runs / float(np.median(seconds))


def measure(train=linear.train) -> dict:
    rng = np.random.default_rng(0)
    return {(name, runs): examples_per_second(train, x, y, loss, epochs, runs, rng)
            for name, x, y, loss, epochs in cases(rng) for runs in (1, 10)}


def main() -> None:
    torch.set_num_threads(1)
    ours = measure()
    x, y = adult_like(np.random.default_rng(0))
    model = torch.nn.Linear(D, 1)
    loss = lambda out, t: torch.nn.functional.binary_cross_entropy_with_logits(out[:, 0], t)
    opacus = opacus_examples_per_second(model, loss, x, ((y + 1) / 2).astype(np.float32), LOT, NOISE, CLIP, seconds=10)

    print(f"lot {LOT}, clip {CLIP}, noise {NOISE}, SGD, 1 thread; median of {REPEATS} calls after a warm-up")
    print(f"{'case':<40}{'runs':>5}{'examples/s':>14}{'vs opacus':>11}")
    print(f"{'opacus PrivacyEngine, adult-shaped':<40}{1:>5}{opacus:>14,.0f}")
    for (name, runs), rate in ours.items():
        print(f"{'ours, ' + name:<40}{runs:>5}{rate:>14,.0f}{rate / opacus:>10.0f}x")
    adult_r10 = ours[("adult-shaped, sparse", 10)]
    print(f"speedup_vs_opacus_r10={adult_r10 / opacus:.1f}")
    print(f"examples_per_second_r10={adult_r10:.0f}")


if __name__ == "__main__":
    main()
