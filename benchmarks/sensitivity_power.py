"""The power of the torch trainers' statistical sensitivity tests, measured over seeds (issue 45): how often
each test catches the bug it guards against, on the batched path, CPU or CUDA.

- The white-box audit with halved noise (tests/test_audit.py,
  `test_torch_whitebox_audit_is_below_the_proof_and_exposes_halved_noise`): the MLP (mlp2) and the CNN,
  full batch on 21 rows, 2 epochs, proven epsilon 4. For each seed: trained with half the noise, does
  the Gaussian fit's epsilon_lb exceed 4 (power)? Trained as claimed, does its 99.9 % lower bound stay at
  or below the exact epsilon (validity; the test asserts it at that confidence)? With lots of the whole dataset each step's release, less the real rows' sum, is
  exactly the canary's +-L plus the trainer's Gaussian noise, so the audit's score has a known law: its
  power at R runs is also computed from 20,000 simulated audits of that law, and the real trainings
  (fewer seeds) check that they behave as simulated.
- The noise-scale checks (tests/test_mechanisms.py, tests/test_cnn.py): chi-square over every coordinate
  of a tensor, two-sided at 1e-6. Their power against halved (or doubled) noise is computed exactly from
  the chi-square law at each tensor's number of draws; the smallest tensor decides.

    ./in-env python benchmarks/sensitivity_power.py [--seeds 100] [--mlp-runs 80] [--cnn-runs 80]

Last line: the smallest measured power and its ratio to the 0.99 the tests must reach.
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import stats

from dptradeoff.audit import bounds, torch_whitebox
from dptradeoff.privacy import dpsgd
from dptradeoff.train.batch import device
from dptradeoff.train.hyper import DPSGDHyper

DELTA = 1e-5
P_MIN = 1e-6


def mnist_like(n, seed=3):
    """The audit test's data: random pixel rows with the top-left pixel 0, and digit labels."""
    rng = np.random.default_rng(seed)
    x = rng.random((n, 784)).astype(np.float32) * (rng.random((n, 784)) < 0.2)
    x[:, 0] = 0.0
    return x, rng.integers(0, 10, n)


def audit_power(which: str, runs: int, seeds: int) -> tuple[float, float, float]:
    trainer = torch_whitebox.mlp_trainer("mlp2") if which == "mlp" else torch_whitebox.cnn_trainer()
    x, y = mnist_like(20)
    n = 21
    found = dpsgd.calibrate_noise(n, n, 2, 4.0, DELTA)
    claimed = DPSGDHyper(2, n, 0.1, found.noise, 1.0)
    halved = DPSGDHyper(2, n, 0.1, found.noise / 2, 1.0)
    exact = bounds.gdp_epsilon(math.sqrt(2) / claimed.noise, DELTA)
    caught, valid, lows = 0, 0, []
    for seed in range(seeds):
        t = torch_whitebox.train_and_score(trainer, x, y, halved, runs, 1000 + seed, model=claimed)
        lb = bounds.gaussian_fit(t.scores_in, t.scores_out, DELTA).epsilon_lb
        lows.append(lb)
        caught += lb > 4.0
        t = torch_whitebox.train_and_score(trainer, x, y, claimed, runs, 2000 + seed)
        valid += bounds.gaussian_fit(t.scores_in, t.scores_out, DELTA, confidence=0.999).epsilon_lb <= exact
    return caught / seeds, valid / seeds, float(np.min(lows))


def simulated_audit_power(runs: int, audits: int = 20_000, seed: int = 0) -> float:
    """P(epsilon_lb > 4) for the halved-noise audit at `runs` a side, from the score's exact law: each step's
    release is +-L + N(0, (sigma/2)^2), scored under the claimed N(+-L, sigma^2) (whitebox.step_log_ratios)."""
    from dptradeoff.audit.whitebox import step_log_ratios

    n, steps = 21, 2
    found = dpsgd.calibrate_noise(n, n, 2, 4.0, DELTA)
    sigma = 2.0 * found.noise
    rng = np.random.default_rng(seed)
    s = np.ones(steps)
    caught = 0
    for _ in range(audits):
        o_in = 1.0 + rng.normal(0.0, sigma / 2, (runs, steps))
        o_out = -1.0 + rng.normal(0.0, sigma / 2, (runs, steps))
        scores_in = step_log_ratios(o_in, s, -s, 1.0, sigma).sum(axis=1)
        scores_out = step_log_ratios(o_out, s, -s, 1.0, sigma).sum(axis=1)
        caught += bounds.gaussian_fit(scores_in, scores_out, DELTA).epsilon_lb > 4.0
    return caught / audits


def chi_square_power(draws: int, factor: float) -> float:
    """P(the two-sided chi-square check at P_MIN fails) when the noise std is `factor` times the right one."""
    low, high = stats.chi2.ppf(P_MIN / 2, draws), stats.chi2.isf(P_MIN / 2, draws)
    scale = factor ** 2
    return float(stats.chi2.cdf(low / scale, draws) + stats.chi2.sf(high / scale, draws))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--mlp-runs", type=int, default=80)
    parser.add_argument("--cnn-runs", type=int, default=80)
    args = parser.parse_args()
    print(f"device {device()}")
    powers = []
    simulated = {runs: simulated_audit_power(runs) for runs in sorted({25, 40, args.mlp_runs, args.cnn_runs})}
    for runs, power in simulated.items():
        print(f"white-box audit, halved noise, {runs} runs a side: power {power:.4f} "
              f"(20,000 simulated audits of the score's exact law)", flush=True)
    powers.append(simulated[min(args.mlp_runs, args.cnn_runs)])
    for which, runs in (("mlp", args.mlp_runs), ("cnn", args.cnn_runs)):
        start = time.perf_counter()
        power, validity, lowest = audit_power(which, runs, args.seeds)
        print(f"white-box audit, {which}, {runs} runs a side, {args.seeds} seeds: halved noise caught in {power:.3f} "
              f"(lowest epsilon_lb {lowest:.2f} against the claimed 4); claimed noise at or below the exact epsilon in "
              f"{validity:.3f}; {time.perf_counter() - start:.0f} s", flush=True)
    # the smallest tensors the noise checks test: fc2.bias of the CNN (10 coordinates x 16 steps), the MLP's
    # last bias (10 x 40 steps, per network)
    for name, draws in (("cnn fc2.bias, 16 steps", 160), ("mlp2 last bias, 40 steps", 400)):
        for factor in (0.5, 2.0):
            power = chi_square_power(draws, factor)
            powers.append(power)
            print(f"noise check, {name} ({draws} draws), noise x {factor}: power {power:.6f}")
    print(f"min_power={min(powers):.4f} ratio_to_0.99={min(powers) / 0.99:.3f}")


if __name__ == "__main__":
    main()
