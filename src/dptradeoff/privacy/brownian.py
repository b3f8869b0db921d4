"""What stopping Brownian noise reduction costs (Whitehouse et al. 2022): releases y + W(t_j)/t_j of
one Brownian path W at times t_0 < t_1 < ..., stopped at a time that depends on the releases
(`expost.baselines.brownian_noise_reduction` runs it). The privacy loss at time t is W(t) + t/2
(sensitivity 1); the cost is charged either ex post on a linear boundary or in a zCDP filter."""
from __future__ import annotations

import math

import numpy as np


def linear_boundary(t_ref: float, delta: float) -> tuple[float, float]:
    """The linear boundary a + b t with exp(-2ab) = delta that is lowest at t_ref (a = b t_ref)."""
    half_log = 0.5 * math.log(1.0 / delta)
    return math.sqrt(half_log * t_ref), math.sqrt(half_log / t_ref)


def expost_epsilon(t: float | np.ndarray, a: float, b: float):
    """Ex-post epsilon of stopping at time t: P(exists t: W(t) >= a + b t) = exp(-2ab) makes it
    ex-post (a + (b + 1/2) t, delta)-DP with a b = log(1/delta) / 2."""
    return a + (b + 0.5) * np.asarray(t, dtype=float)


def zcdp_rho_of_stop(t: float | np.ndarray):
    """What stopping the Brownian release (sensitivity 1) at time t costs in a zCDP filter: t/2.

    Why this is a guarantee for a data-dependent stopping time: the released path up to t_j is a
    post-processing of its increments B(t_i) - B(t_{i-1}) = (t_i - t_{i-1}) f + N(0, t_i - t_{i-1}),
    each a Gaussian mechanism of sensitivity dt and variance dt, i.e. (dt/2)-zCDP, run one after
    another with the decision to go on taken from the outputs so far. That is fully adaptive
    composition with predictable costs, which a Renyi filter at every order covers (Feldman & Zrnic
    2021's Renyi filter; Whitehouse et al. 2023): if the costs so far plus the next one never exceed rho,
    the whole run is rho-zCDP. Directly: the privacy loss at t is W(t) + t/2, and
    E[exp((a-1)(W(T) + T/2))] = E[M_T exp(a(a-1)T/2)] <= exp(a(a-1) rho) E[M_T] = exp(a(a-1) rho) for every stopping time
    T <= 2 rho (M the exponential martingale, optional stopping). tests/test_expost_privacy.py
    checks this bound by Monte Carlo with an independently computed likelihood ratio."""
    return 0.5 * np.asarray(t, dtype=float)
