"""Paper 003 Alg. 1, the propose-test loop, on candidate utilities u_s in [0, 1].

Each iteration proposes the threshold u + step * g + Lap(2/(k eps0)) and walks the candidates
in order, adding Lap(4/(k eps0)) to each u_s; the first candidate at or above the threshold is
recorded (s* <- s), u grows by step * g and step doubles; if none is, step halves (floor).
The loop ends when step = 0 or u >= 1 (the guard that makes termination certain).

Each iteration is AboveThreshold on utilities of sensitivity 1/k (u_s is an average over k
disjoint partitions, each accuracy in [0, 1]), so it is eps0-DP (paper 003 eq. 1).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .. import UserError


@dataclass
class Trace:
    """The run: the selected candidate (None if no iteration accumulated) and the state after each
    iteration (u, step, whether it accumulated)."""
    selected: int | None
    u: list[float] = field(default_factory=list)
    step: list[int] = field(default_factory=list)
    accumulated: list[bool] = field(default_factory=list)

    @property
    def iterations(self) -> int:
        return len(self.u)


def propose_test(utilities: np.ndarray, partitions: int, eps0: float, granularity: float, u0: float,
                 rng: np.random.Generator) -> Trace:
    """Run the while loop of Alg. 1 (lines 12-32) on the averaged utilities u_s."""
    utilities = np.asarray(utilities, dtype=float)
    if not (eps0 > 0 and 0 < granularity < 1 and 0 <= u0 < 1 and partitions >= 1):
        raise UserError(f"Alg. 1 needs eps0 > 0, g in (0, 1), u0 in [0, 1) and k >= 1; got eps0 = {eps0}, "
                        f"g = {granularity}, u0 = {u0}, k = {partitions}.")
    # u = u0 + m g with m the integer sum of the accumulated steps: the guard u >= 1 becomes
    # m >= accumulations_to_one, so float rounding cannot allow one accumulation too many.
    m, step = 0, 1
    cap = accumulations_to_one(u0, granularity)
    trace = Trace(selected=None)
    threshold_scale, query_scale = 2.0 / (partitions * eps0), 4.0 / (partitions * eps0)
    while step != 0:
        u = u0 + m * granularity
        proposal = u + step * granularity + rng.laplace(0.0, threshold_scale)
        accumulated = False
        for s, us in enumerate(utilities):
            if us + rng.laplace(0.0, query_scale) >= proposal:
                trace.selected = s
                m += step
                accumulated = True
                step *= 2
                break
        if not accumulated:
            step //= 2
        trace.u.append(u0 + m * granularity)
        trace.step.append(step)
        trace.accumulated.append(accumulated)
        if m >= cap:   # u >= 1
            break
    return trace


def accumulations_to_one(u0: float, granularity: float) -> int:
    """The smallest m with u0 + m g >= 1 (up to rounding of (1 - u0)/g by 1e-9)."""
    return max(0, math.ceil((1.0 - u0) / granularity - 1e-9))


def worst_case_iterations(u_star: float, u0: float, granularity: float) -> int:
    """The zig-zag bound: every accumulation adds >= g and at most one halving follows each
    doubling (log2(step) rises by one per accumulation and falls by one per failure), so
    T <= 2 A + 1 with A <= ceil((u_top - u0) / g) accumulations. u_top = 1 is the guard's bound;
    the paper states it with the best utility u*."""
    if u_star >= 1.0:
        return 2 * accumulations_to_one(u0, granularity) + 1
    return 2 * max(0, math.ceil((u_star - u0) / granularity - 1e-9)) + 1


def zigzag_path(u0: float, granularity: float, iterations: int) -> tuple[list[float], list[int]]:
    """The worst-case (u, step) path: True, False, True, False, ... (paper 003 eq. 2)."""
    u, step, us, steps = u0, 1, [], []
    for t in range(iterations):
        if t % 2 == 0:
            u += step * granularity
            step *= 2
        else:
            step //= 2
        us.append(u)
        steps.append(step)
    return us, steps
