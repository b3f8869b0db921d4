"""Our closed-form DP-SGD for logistic regression vs Opacus's PrivacyEngine, same model and data
shape (32,561 x 123 binary features, lot 256, clip 1, noise 1), examples per second side by side.

Run: ./in-env python benchmarks/linear_trainer_vs_opacus.py   (last line: speedup_vs_opacus=<x>)
"""
from __future__ import annotations

import time

import numpy as np
import torch

from _opacus_reference import opacus_examples_per_second
from dptradeoff.train import linear
from dptradeoff.train.hyper import DPSGDHyper

N, D, LOT, CLIP, NOISE = 32561, 123, 256, 1.0, 1.0


def main() -> None:
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    x = (rng.random((N, D)) < 0.11).astype(np.float32)  # a9a's density: 14 of 123 features set
    y = np.where(x[:, :5].sum(1) + rng.normal(0, 1, N) > 0.6, 1.0, -1.0)

    hp = DPSGDHyper(epochs=3, lot_size=LOT, learning_rate=0.05, noise=NOISE, clip=CLIP)
    linear.train(x, y, "logistic", "sgd", DPSGDHyper(1, LOT, 0.05, NOISE, CLIP), 1, rng)  # warm-up
    results = {}
    for runs in (1, 10):
        start = time.perf_counter()
        linear.train(x, y, "logistic", "sgd", hp, runs, rng)
        results[runs] = hp.steps(N) * LOT * runs / (time.perf_counter() - start)

    model = torch.nn.Linear(D, 1)
    loss = lambda out, t: torch.nn.functional.binary_cross_entropy_with_logits(out[:, 0], t)
    opacus = opacus_examples_per_second(model, loss, x, ((y + 1) / 2).astype(np.float32), LOT, NOISE, CLIP, seconds=10)

    print(f"data {N} x {D}, lot {LOT}, clip {CLIP}, noise {NOISE}, 1 thread")
    print(f"opacus PrivacyEngine:            {opacus:12,.0f} examples/s")
    print(f"ours, 1 run:                     {results[1]:12,.0f} examples/s  ({results[1] / opacus:.0f}x)")
    print(f"ours, 10 replications at once:   {results[10]:12,.0f} examples/s  ({results[10] / opacus:.0f}x)")
    print(f"speedup_vs_opacus={results[1] / opacus:.1f}")


if __name__ == "__main__":
    main()
