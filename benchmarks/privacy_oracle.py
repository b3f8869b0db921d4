"""Milliseconds per epsilon of the DP-SGD privacy oracle at MNIST paper scale (n = 60,000,
400 epochs, lot 16: 1.5 million steps), for several noise levels, against dp_accounting with
its default RDP orders computed side by side.

Run: ./in-env python benchmarks/privacy_oracle.py   (last line: ms_per_epsilon=<x>)
"""
from __future__ import annotations

import statistics
import time

import dp_accounting
from dp_accounting.rdp import rdp_privacy_accountant as rdp

from dptradeoff.privacy import dpsgd

N, LOT, EPOCHS, DELTA = 60000, 16, 400, 1e-5


def reference(noise: float) -> float:
    accountant = rdp.RdpAccountant(neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    event = dp_accounting.SampledWithoutReplacementDpEvent(N, LOT, dp_accounting.GaussianDpEvent(noise))
    accountant.compose(dp_accounting.SelfComposedDpEvent(event, dpsgd.steps(N, LOT, EPOCHS)))
    return accountant.get_epsilon(DELTA)


def timed(fn, *args) -> tuple[float, float]:
    start = time.perf_counter()
    value = fn(*args)
    return value, (time.perf_counter() - start) * 1e3


def main() -> None:
    ours_ms, ref_ms = [], []
    for noise in (0.5, 0.8, 1.0, 2.0, 4.0, 8.0, 16.0):
        eps, ms = timed(dpsgd.epsilon, N, LOT, EPOCHS, noise, DELTA)
        ref, rms = timed(reference, noise)
        ours_ms.append(ms)
        ref_ms.append(rms)
        print(f"noise {noise:5.1f}: epsilon {eps:10.4f} in {ms:6.1f} ms | dp_accounting default orders {ref:10.4f} in {rms:6.1f} ms")
    print(f"median: ours {statistics.median(ours_ms):.1f} ms, dp_accounting default orders {statistics.median(ref_ms):.1f} ms "
          f"({statistics.median(ref_ms) / statistics.median(ours_ms):.1f}x)")
    print(f"ms_per_epsilon={statistics.median(ours_ms):.1f}")


if __name__ == "__main__":
    main()
