"""Milliseconds per epsilon of the DP-SGD privacy oracle (`dpsgd.epsilon`) against the previous
evaluation (tests/privacy_previous.py, a frozen copy: the same orders and rule, each Thm 27 moment on
a 5x finer quadrature grid found by a coarse peak search, one Python loop per order), timed side by
side on the same settings at Adult (n = 32,561: lots 16-512, epochs 1-64) and MNIST (n = 60,000:
lots 16-512, epochs 10-400) paper scale, noise 0.5-16, delta 1e-5. Each time is the median of 3
calls. On the MNIST lot-16, 400-epoch rows dp_accounting with its default RDP orders is also timed
(about half a second per epsilon, so only there).

Run: ./in-env python benchmarks/privacy_oracle.py
(last lines: speedup_vs_previous=<median previous ms / median ms>, epsilon_ms_median=<median ms>)
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import dp_accounting
from dp_accounting.rdp import rdp_privacy_accountant as rdp

from dptradeoff.privacy import dpsgd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import privacy_previous as previous  # noqa: E402

DELTA, REPEATS = 1e-5, 3
NOISES = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
SCALES = {"adult": (32561, (16, 128, 512), (1, 8, 64)), "mnist": (60000, (16, 128, 512), (10, 100, 400))}


def dp_accounting_default_orders(n: int, lot: int, epochs: int, noise: float) -> float:
    accountant = rdp.RdpAccountant(neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    event = dp_accounting.SampledWithoutReplacementDpEvent(n, lot, dp_accounting.GaussianDpEvent(noise))
    accountant.compose(dp_accounting.SelfComposedDpEvent(event, dpsgd.steps(n, lot, epochs)))
    return accountant.get_epsilon(DELTA)


def timed(fn, *args, repeats: int = REPEATS) -> tuple[float, float]:
    """(value, median ms over `repeats` calls)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        value = fn(*args)
        times.append((time.perf_counter() - start) * 1e3)
    return value, statistics.median(times)


def main() -> None:
    dpsgd.epsilon(60000, 16, 400, 1.0, DELTA)   # warm-up (imports, caches)
    ms = {name: ([], []) for name in SCALES}     # (ours, previous) per scale
    worst = 0.0
    print(f"{'data':5} {'lot':>4} {'epochs':>6} {'noise':>5} | {'epsilon':>12} {'ms':>6} | {'previous':>12} {'ms':>6} "
          f"{'rel diff':>8} | {'dp_accounting':>13} {'ms':>6}")
    for name, (n, lots, epochs_list) in SCALES.items():
        for lot in lots:
            for epochs in epochs_list:
                for noise in NOISES:
                    eps, ours = timed(dpsgd.epsilon, n, lot, epochs, noise, DELTA)
                    ref, old = timed(previous.epsilon, n, lot, epochs, noise, DELTA)
                    ms[name][0].append(ours)
                    ms[name][1].append(old)
                    worst = max(worst, abs(eps / ref - 1))
                    line = (f"{name:5} {lot:4d} {epochs:6d} {noise:5.1f} | {eps:12.6g} {ours:6.2f} "
                            f"| {ref:12.6g} {old:6.1f} {abs(eps / ref - 1):8.1e} |")
                    if name == "mnist" and lot == 16 and epochs == 400:
                        theirs, theirs_ms = timed(dp_accounting_default_orders, n, lot, epochs, noise, repeats=1)
                        line += f" {theirs:13.6g} {theirs_ms:6.0f}"
                    print(line)
    print()
    for name, (ours, old) in ms.items():
        print(f"{name}: ms per epsilon median {statistics.median(ours):.2f} (max {max(ours):.2f}); previous median "
              f"{statistics.median(old):.1f} (max {max(old):.1f}); {len(ours)} settings")
    ours = [t for pair in ms.values() for t in pair[0]]
    old = [t for pair in ms.values() for t in pair[1]]
    print(f"all: median {statistics.median(ours):.2f} ms (max {max(ours):.2f}) vs previous "
          f"{statistics.median(old):.1f} ms (max {max(old):.1f}); largest relative difference in epsilon {worst:.1e}")
    print(f"speedup_vs_previous={statistics.median(old) / statistics.median(ours):.1f}")
    print(f"epsilon_ms_median={statistics.median(ours):.2f}")


if __name__ == "__main__":
    main()
