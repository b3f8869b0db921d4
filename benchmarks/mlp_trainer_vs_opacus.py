"""Our MLP DP-SGD (ghost clipping) vs plain Opacus on MLP2 (784-128-64-10), MNIST-shaped data,
lot 256, clip 1, noise 1; examples per second side by side (CPU, or the GPU when present).

Run: ./in-env python benchmarks/mlp_trainer_vs_opacus.py   (last line: speedup_vs_opacus=<x>)
"""
from __future__ import annotations

import time

import numpy as np
import torch

from _opacus_reference import opacus_examples_per_second
from dptradeoff.train import mlp
from dptradeoff.train.hyper import DPSGDHyper

N, LOT, CLIP, NOISE = 20000, 256, 1.0, 1.0


def main() -> None:
    rng = np.random.default_rng(0)
    x = rng.random((N, 784)).astype(np.float32)
    y = rng.integers(0, 10, N)
    mlp.train(x[:2000], y[:2000], "mlp2", "sgd", DPSGDHyper(1, LOT, 0.05, NOISE, CLIP), 0)  # warm-up
    hp = DPSGDHyper(epochs=2, lot_size=LOT, learning_rate=0.05, noise=NOISE, clip=CLIP)
    start = time.perf_counter()
    mlp.train(x, y, "mlp2", "sgd", hp, 1)
    ours = hp.steps(N) * LOT / (time.perf_counter() - start)

    model = torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 10)).to(mlp.device())
    xs = torch.as_tensor(x, device=mlp.device())
    ys = torch.as_tensor(y, device=mlp.device())
    loss = torch.nn.functional.cross_entropy
    opacus = opacus_examples_per_second(model, loss, xs.cpu().numpy(), ys.cpu().numpy(), LOT, NOISE, CLIP, seconds=15) \
        if mlp.device().type == "cpu" else float("nan")

    print(f"MLP2 784-128-64-10, {N} examples, lot {LOT}, device {mlp.device()}, {torch.get_num_threads()} threads")
    print(f"opacus PrivacyEngine: {opacus:10,.0f} examples/s")
    print(f"ours (ghost clipping): {ours:10,.0f} examples/s")
    print(f"speedup_vs_opacus={ours / opacus:.2f}")


if __name__ == "__main__":
    main()
