"""Paper 003: the propose-test loop, its iteration bound and its privacy accounting."""
from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.pld import pld_privacy_accountant

from dptradeoff.proposetest import accounting
from dptradeoff.proposetest.algorithm import propose_test, worst_case_iterations, zigzag_path


def test_noise_free_run_doubles_then_halves():
    """With the noise scales driven to ~0 the loop is deterministic: accumulate while the best
    utility clears u + step g, doubling the step, then halve back to 0."""
    utilities = np.array([0.2, 0.55, 0.4])
    trace = propose_test(utilities, partitions=1, eps0=1e12, granularity=0.05, u0=0.0, rng=np.random.default_rng(0))
    assert trace.accumulated[:3] == [True, True, True]        # u: 0.05, 0.15, 0.35
    assert trace.u[2] == pytest.approx(0.35) and trace.step[-1] == 0
    assert max(trace.u) <= 0.55 + 1e-12 and trace.selected == 1
    assert trace.iterations <= worst_case_iterations(0.55, 0.0, 0.05)


@pytest.mark.parametrize("seed", range(20))
def test_iterations_never_exceed_the_guarded_worst_case(seed):
    rng = np.random.default_rng(seed)
    g = float(rng.choice([0.01, 0.05, 0.2]))
    trace = propose_test(rng.uniform(0, 1, 50), partitions=int(rng.integers(1, 20)), eps0=float(rng.choice([0.05, 1, 10])),
                         granularity=g, u0=0.0, rng=rng)
    assert trace.iterations <= worst_case_iterations(1.0, 0.0, g)
    assert trace.step[-1] == 0 or trace.u[-1] >= 1


def test_zigzag_is_the_worst_case_path():
    us, steps = zigzag_path(0.0, 0.01, 9)
    assert steps == [2, 1, 2, 1, 2, 1, 2, 1, 2]
    assert us[-1] == pytest.approx(0.05)    # g every two iterations
    assert worst_case_iterations(1.0, 0.0, 0.01) == 201


def test_advanced_composition_formula_and_validity():
    eps0, t, delta = 0.1, 100, 1e-6
    expected = math.sqrt(2 * t * math.log(1e6)) * eps0 + t * eps0 * math.expm1(eps0)
    assert accounting.advanced_composition(eps0, t, delta) == pytest.approx(expected)
    # consistent with the exact composition of t Laplace(1/eps0) mechanisms (each eps0-DP),
    # computed independently with dp_accounting's PLD accountant: ours bounds it from above
    acc = pld_privacy_accountant.PLDAccountant()
    acc.compose(dp_accounting.LaplaceDpEvent(1 / eps0), t)
    exact = acc.get_epsilon(delta)
    assert exact <= expected and exact >= 0.6 * expected
    assert accounting.advanced_composition(1.0, 3, delta) == 3.0   # basic composition when it is smaller


def test_total_adds_training_and_tuning():
    total = accounting.total(1.0, 1e-5, 0.1, 7, 1e-6)
    assert total.epsilon == pytest.approx(1.0 + accounting.advanced_composition(0.1, 7, 1e-6))
    assert total.delta == pytest.approx(1.1e-5) and total.iterations == 7


def test_float_rounding_cannot_add_an_accumulation():
    """The guard counts accumulated steps as an integer m (u = u0 + m g), so floating-point sums of
    0.1 (ten of which stay below 1) cannot buy an accumulation beyond the bound. Noise-free,
    u* just above 1, g = 0.1: the exact-arithmetic run S S S F F S F F S, ending at u = 1."""
    trace = propose_test(np.array([1.0 + 1e-9]), partitions=1, eps0=1e12, granularity=0.1, u0=0.0, rng=np.random.default_rng(0))
    assert trace.accumulated == [True, True, True, False, False, True, False, False, True]
    assert trace.u[-1] == pytest.approx(1.0) and trace.iterations <= worst_case_iterations(1.0, 0.0, 0.1)


@pytest.mark.parametrize("utility", [0.1, 0.5, 0.9])
def test_noise_scales_are_2_and_4_over_k_eps0(utility):
    """The first iteration accumulates iff u_s + Lap(4/(k eps0)) >= u0 + g + Lap(2/(k eps0)) (AboveThreshold
    for queries of sensitivity 1/k). Its frequency over many runs matches that probability, integrated
    here from the two Laplace laws; other scales (e.g. noise calibrated to sensitivity 1 or halved) do not."""
    from scipy import integrate

    k, eps0, g = 10, 0.5, 0.3
    threshold_scale, query_scale = 2 / (k * eps0), 4 / (k * eps0)

    def exact(b_threshold, b_query):
        # P[Q - T >= g - u] with T ~ Lap(b_threshold), Q ~ Lap(b_query)
        tail = lambda t: 0.5 * math.exp(-t / b_query) if t >= 0 else 1 - 0.5 * math.exp(t / b_query)
        density = lambda t: math.exp(-abs(t) / b_threshold) / (2 * b_threshold)
        return integrate.quad(lambda t: density(t) * tail(g - utility + t), -40, 40, points=[utility - g, 0], limit=200)[0]

    p = exact(threshold_scale, query_scale)
    rng = np.random.default_rng(int(utility * 10))
    n = 20_000
    freq = np.mean([propose_test(np.array([utility]), k, eps0, g, 0.0, rng).accumulated[0] for _ in range(n)])
    assert freq == pytest.approx(p, abs=4 * math.sqrt(p * (1 - p) / n) + 2e-3)
    # the check can tell the scales apart
    for wrong in ((threshold_scale / 2, query_scale), (threshold_scale, query_scale / 2)):
        if abs(exact(*wrong) - p) > 0.02:
            assert abs(freq - exact(*wrong)) > 4 * math.sqrt(p * (1 - p) / n)
