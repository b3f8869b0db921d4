"""What a release under `release.randomness: os` costs (docs/release.md): one release training of each built-in
trainer with its draws from a seeded generator (PCG64: the lots by SplitMix64 and the noise in float64 for the
linear trainer, torch's float32 streams for the MLP) and from the cryptographic one (AES-128 counter mode: the lots and the
float64 noise, snapped / rounded, `secure_random`), back to back on the same machine, the median of `--repeats`
alternating runs each.

    ./in-env python benchmarks/secure_release.py [--repeats 5]

The linear trainer: adult-logreg-sgd's default release point on Adult's 21,707 rows (10 epochs, lots of 256).
MLP2 (mnist-mlp2-sgd): 2 epochs, lots of 128, on the embedded MNIST (4,000 digits). Last line: the secure
training's time over the seeded one's, per trainer.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from dptradeoff import secure_random
from dptradeoff.config import load
from dptradeoff.problems import definition, resolve
from dptradeoff.problems.evaluate import load_data
from dptradeoff.train import linear, mlp
from dptradeoff.train.hyper import DPSGDHyper
from dptradeoff.privacy.accountant import accounting_name  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    config = load([])
    adult = load_data(resolve("adult-logreg-sgd", definition(config, "adult-logreg-sgd"), accounting_name(config["privacy"])))
    digits = load_data(resolve("mnist-mlp2-sgd", definition(config, "mnist-mlp2-sgd"), accounting_name(config["privacy"])))
    linear_hp, mlp_hp = DPSGDHyper(10, 256, 0.1, 1.0, 1.0), DPSGDHyper(2, 128, 0.1, 1.0, 1.0)
    trainers = {
        "linear": (lambda rng: linear.train(adult.x_train, adult.y_train, "logistic", "sgd", linear_hp, 1, rng),
                   lambda rng: linear.train(adult.x_train, adult.y_train, "logistic", "sgd", linear_hp, 1, rng)),
        "mlp2": (lambda rng: mlp.train(digits.x_train, digits.y_train, "mlp2", "sgd", mlp_hp, int(rng.integers(2**62))),
                 lambda rng: mlp.train(digits.x_train, digits.y_train, "mlp2", "sgd", mlp_hp, 0, secure=rng)),
    }
    ratios = {}
    for name, (seeded, secure) in trainers.items():
        seeded(np.random.default_rng(0)), secure(secure_random.generator())     # compile and warm up
        times = {"seeded": [], "secure": []}
        for r in range(args.repeats):
            for label, run, rng in (("seeded", seeded, np.random.default_rng(r)), ("secure", secure, secure_random.generator())):
                start = time.perf_counter()
                run(rng)
                times[label].append(time.perf_counter() - start)
        median = {label: statistics.median(t) for label, t in times.items()}
        ratios[name] = median["secure"] / median["seeded"]
        print(f"{name}: seeded {median['seeded']:.3f} s, secure {median['secure']:.3f} s (median of {args.repeats})",
              flush=True)
    print("secure/seeded: " + " ".join(f"{name}={ratio:.2f}" for name, ratio in ratios.items()))


if __name__ == "__main__":
    main()
