"""The release's exact samplers on a grid (src/dptradeoff/exact_noise.py): each output's probability, by
enumerating every sequence of random bits one attempt can read; no cap in the tail; and the grid's argument,
by the exact privacy of the released integers against the accountant's closed form."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dptradeoff import exact_noise, secure_random

WINDOW = 6


def _rounded_normal(c: int, ks: np.ndarray) -> np.ndarray:
    """P(round(2^c N) = k), N ~ N(0, 1) (from the tail nearer k: precise far out)."""
    a, h = np.abs(np.asarray(ks, dtype=float)), 2.0**-c
    return np.where(a == 0, 1 - 2 * stats.norm.sf(0.5 * h), stats.norm.sf((a - 0.5) * h) - stats.norm.sf((a + 0.5) * h))


def _rounded_laplace(c: int, ks: np.ndarray) -> np.ndarray:
    """P(round(2^c L) = k), L ~ Laplace(1)."""
    a, h = np.abs(ks), 2.0**-c
    return np.where(ks == 0, 1 - np.exp(-0.5 * h), 0.5 * (np.exp(-(a - 0.5) * h) - np.exp(-(a + 0.5) * h)))


@pytest.mark.parametrize("c", [0, 1])
def test_each_output_of_a_normal_attempt_has_the_rounded_gaussians_probability(c):
    # Karney's attempt accepts k + x (with a sign) with density (1 - e^-1/2) / 2 * e^-(k+x)^2/2: every output's
    # probability is that constant times sqrt(2 pi) P(round(2^c N) = K). The enumeration knows each output's
    # probability up to the mass of the bit sequences it cut (longer than 22 bits): exact lies in [lo, lo + cut].
    masses, beyond, rejected, cut = exact_noise.enumerate_attempt(c, False, 22, WINDOW)
    ks = np.arange(-WINDOW, WINDOW + 1)
    exact = (1 - math.exp(-0.5)) / 2 * math.sqrt(2 * math.pi) * _rounded_normal(c, ks)
    assert cut < 0.2 and (masses[WINDOW - 3:WINDOW + 4] > 0).all()   # |K| <= 3 within 22 bits; farther, longer paths
    assert (masses <= exact * (1 + 1e-12)).all() and (exact <= masses + cut).all(), (masses, exact, cut)
    accepted = (1 - math.exp(-0.5)) / 2 * math.sqrt(2 * math.pi)         # the attempt's acceptance, 0.493
    assert masses.sum() + beyond <= accepted <= masses.sum() + beyond + cut and rejected <= 1 - accepted


@pytest.mark.parametrize("c", [0, 2])
def test_each_output_of_the_laplace_sampler_has_the_rounded_laplaces_probability(c):
    masses, beyond, rejected, cut = exact_noise.enumerate_attempt(c, True, 20, WINDOW)
    exact = _rounded_laplace(c, np.arange(-WINDOW, WINDOW + 1))
    assert rejected == 0 and cut < 0.15 and (masses > 0).all()
    assert (masses <= exact * (1 + 1e-12)).all() and (exact <= masses + cut).all(), (masses, exact, cut)


def test_draws_from_the_generator_have_the_exact_probabilities():
    # the production path (digits from a Generator, 53 bits each) against the exact pmf at a coarse grid
    rng = np.random.default_rng(5)
    for laplace, pmf in ((False, _rounded_normal), (True, _rounded_laplace)):
        grid = exact_noise.Grid(1.0, 1.0, 1, 0.0, laplace=laplace, grid_bits=2)   # 2^c = 4 steps a scale
        k = np.rint(exact_noise._release(np.zeros(200_000), grid.spacing, grid.bits, laplace, rng) / grid.spacing)
        edges = np.arange(-12, 13)
        observed = np.array([(k < -12).sum(), *[(k == e).sum() for e in edges], (k > 12).sum()])
        p = pmf(grid.bits, edges)
        expected = 200_000 * np.array([(1 - p.sum()) / 2, *p, (1 - p.sum()) / 2])
        assert stats.chisquare(observed, expected).pvalue > 1e-4, (laplace, observed, expected)


def _digits_for_k(k: int) -> np.ndarray:
    """Bits that drive a normal attempt (1-bit digits) to integer part k, x < 1/2, a positive sign: k e^-1/2
    trials won (a first bit 1), one lost (0 then 1), k(k - 1) won, k + 1 of the fraction's trials won (a
    uniform above x, whose first bit is 0), then the sign 0."""
    return np.array([1] * k + [0, 1] + [1] * (k * (k - 1)) + [1, 0] + [1] * k + [0], np.uint64)


def test_the_normal_sampler_has_no_cap_in_the_tail():
    # numpy's ziggurat never exceeds 12.23 standard deviations (a release there would be reachable from one
    # dataset and not its neighbour); here every integer part has a path, each of positive probability
    for k in (3, 20, 40):
        outcome, value = exact_noise.attempt_from_digits(_digits_for_k(k), 0, False)
        assert (outcome, value) == (exact_noise.ACCEPTED, k)


def _gaussian_delta(mu: float, eps: float) -> float:
    return float(stats.norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * stats.norm.cdf(-mu / 2 - eps / mu))


def _pmf_on(grid: exact_noise.Grid, offsets: np.ndarray) -> np.ndarray:
    """P(K = offset) for the grid's noise (K = round(2^c N'), N' standard)."""
    return (_rounded_laplace if grid.laplace else _rounded_normal)(grid.bits, offsets)


def _exact_delta(grid: exact_noise.Grid, v: np.ndarray, w: np.ndarray, eps: float, reach: int) -> float:
    """sum over outputs of max(0, P_v(o) - e^eps P_w(o)) for the released integers o = rint(x / gamma) + K, K
    iid per coordinate (two coordinates), over a window covering all but ~1e-30 of the mass."""
    jv, jw = np.rint(v / grid.spacing).astype(int), np.rint(w / grid.spacing).astype(int)
    axes = [np.arange(min(a, b) - reach, max(a, b) + reach + 1) for a, b in zip(jv, jw)]
    pv = np.outer(_pmf_on(grid, axes[0] - jv[0]), _pmf_on(grid, axes[1] - jv[1]))
    pw = np.outer(_pmf_on(grid, axes[0] - jw[0]), _pmf_on(grid, axes[1] - jw[1]))
    assert (pw[pv > 1e-250] > 0).all()     # every output reachable from v is reachable from w (where floats hold it)
    return float(np.maximum(0.0, pv - math.exp(eps) * pw).sum())


def _exact_delta_1d(grid: exact_noise.Grid, v: float, w: float, eps: float, reach: int) -> float:
    jv, jw = int(np.rint(v / grid.spacing)), int(np.rint(w / grid.spacing))
    ks = np.arange(min(jv, jw) - reach, max(jv, jw) + reach + 1)
    pv, pw = _pmf_on(grid, ks - jv), _pmf_on(grid, ks - jw)
    assert (pw[pv > 1e-250] > 0).all()
    return float(np.maximum(0.0, pv - math.exp(eps) * pw).sum())


@pytest.mark.parametrize("z", [0.5, 1.0, 3.0])
def test_a_released_score_is_as_private_as_the_accountant_says(z):
    # the release's noisy score (one coordinate, sensitivity 1 / (validation rows - 1)) on a coarse grid
    sensitivity = 1 / 999
    grid = exact_noise.Grid(z * sensitivity, sensitivity, 1, 1.0, grid_bits=3)
    reach = int(14 * grid.drawn_scale / grid.spacing)
    for eps in (0.0, 0.5, 2.0):
        for v in (0.49 * grid.spacing, 0.51 * grid.spacing, 0.7):
            for w in (v - sensitivity, v + sensitivity):
                assert _exact_delta_1d(grid, v, w, eps, reach) <= _gaussian_delta(1 / z, eps) + 1e-12, (z, eps, v)


@pytest.mark.parametrize("z", [0.5, 1.0, 3.0])
def test_the_released_integers_are_as_private_as_the_accountant_says(z):
    # a coarse grid (b = 3: 2^c = 8 sqrt(2) Z steps a drawn sd) on two coordinates, neighbours at the sensitivity
    # (the rounding pushed to its worst: 0.49 and -0.49 steps): the exact hockey-stick divergence of the released
    # integers at several epsilon is within the Gaussian mechanism's at the nominal multiplier z (closed form)
    sensitivity = 1.0
    grid = exact_noise.Grid(z * sensitivity, sensitivity, 2, 50.0, grid_bits=3)
    step = grid.spacing
    reach = int(14 * grid.drawn_scale / step)
    rng = np.random.default_rng(int(z * 10))
    pairs = [(np.array([0.49, 0.49]) * step, np.array([0.49, 0.49]) * step - sensitivity / math.sqrt(2) * np.array([1, 1]))]
    for _ in range(3):
        u = rng.normal(size=2)
        v = rng.uniform(-20, 20, 2)
        pairs.append((v, v - sensitivity * u / np.linalg.norm(u)))
    for eps in (0.0, 0.5, 2.0):
        bound = _gaussian_delta(sensitivity / (z * sensitivity), eps)
        for v, w in pairs:
            assert _exact_delta(grid, v, w, eps, reach) <= bound + 1e-12, (z, eps, v, w)


def test_the_laplace_statistic_is_pure_epsilon_on_its_grid():
    # the released integers' largest log-ratio between neighbours (a coarse grid, b = 3) within the nominal epsilon
    for scale in (0.5, 2.0):
        grid = exact_noise.Grid(scale, 1.0, 1, 50.0, laplace=True, grid_bits=3)
        ks = np.arange(-4000, 4001)
        for v, w in ((0.49 * grid.spacing, 0.49 * grid.spacing - 1.0), (3.3, 2.3)):
            jv, jw = int(np.rint(v / grid.spacing)), int(np.rint(w / grid.spacing))
            pv, pw = _pmf_on(grid, ks - jv), _pmf_on(grid, ks - jw)
            inside = (pv > 1e-300) & (pw > 1e-300)
            assert np.max(np.abs(np.log(pv[inside] / pw[inside]))) <= 1.0 / scale * (1 + 1e-9)


def test_a_grid_refuses_values_too_far_for_it_and_releases_on_its_spacing():
    with pytest.raises(ValueError, match="too far apart"):
        exact_noise.gaussian(1e-12, 1.0, 10, 1e6)
    with pytest.raises(ValueError, match="more than 2\\^40"):      # j + K would leave float64's integers
        exact_noise.gaussian(2.0**38, 1.0, 256, 1.0)
    grid = exact_noise.gaussian(0.3, 0.1, 5, 2.0)
    out = grid.release(np.linspace(-2, 2, 5), secure_random.generator())
    assert np.array_equal(np.rint(out / grid.spacing) * grid.spacing, out)     # the float of an integer's multiple
    assert grid.drawn_scale == pytest.approx(0.3 / (1 - 2.0**-17), rel=1e-12)
