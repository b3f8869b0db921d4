"""The release's exact samplers on a grid (src/dptradeoff/exact_noise.py): each output's probability, by
enumerating every sequence of random bits one draw can read; each cell's trial and boundaries; the written-out
fast path draw for draw against the general one; the tail; no cap in the tail; and the grid's argument, by the
exact privacy of the released integers against the accountant's closed form."""
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


@pytest.mark.parametrize("c", [0, 4])
def test_each_output_of_the_normal_sampler_has_the_rounded_gaussians_probability(c):
    # one draw (the cell of |N| among the boundaries' expansions, the normal's density within it, a sign) reads
    # random bits; every sequence of up to 22 bits enumerated: each output's exact probability lies in
    # [lower, lower + cut]. At c = 4 the first bit of v within a cell decides the output too.
    masses, beyond, rejected, cut = exact_noise.enumerate_attempt(c, False, 22, WINDOW)
    exact = _rounded_normal(c, np.arange(-WINDOW, WINDOW + 1))
    assert rejected == 0 and cut < 0.08 and (masses[WINDOW - 2:WINDOW + 3] > 0.85 * exact[WINDOW - 2:WINDOW + 3]).all()
    assert (masses <= exact * (1 + 1e-12)).all() and (exact <= masses + cut).all(), (masses, exact, cut)


@pytest.mark.parametrize("c", [0, 2])
def test_each_output_of_the_laplace_sampler_has_the_rounded_laplaces_probability(c):
    masses, beyond, rejected, cut = exact_noise.enumerate_attempt(c, True, 20, WINDOW)
    exact = _rounded_laplace(c, np.arange(-WINDOW, WINDOW + 1))
    assert rejected == 0 and cut < 0.15 and (masses > 0).all()
    assert (masses <= exact * (1 + 1e-12)).all() and (exact <= masses + cut).all(), (masses, exact, cut)


@pytest.mark.parametrize("cell", [0, 1])
def test_a_cells_trial_keeps_v_with_the_densitys_exact_ratio(cell):
    # within cell i (x = (i + v) / 16) v is kept with probability exp(-v (2i + v) / 512): enumerated for dyadic v
    # to 40 bits (a one-face error in the die moves it by about 1e-3, the cut is below 1e-5)
    for bits in ([1, 0, 1], [0, 0, 1, 1], [1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 0, 1]):
        v = sum(b * 2.0 ** -(i + 1) for i, b in enumerate(bits))
        kept, redrawn, cut = exact_noise.enumerate_cell_trial(bits, cell, 40)
        exact = math.exp(-v * (2 * cell + v) / 512)
        assert cut < 1e-5 and kept <= exact * (1 + 1e-12) and exact <= kept + cut, (bits, kept, exact, cut)


def test_the_tails_fraction_trial_keeps_x_with_karneys_probability():
    # Karney's fraction trial at integer part k = 4 keeps x with probability exp(-x (2k + x) / (2k + 2)):
    # enumerated to 28 bits for x = 1/8 and 1/4 (a (2k + 3)-sided die instead moves it by 8e-3 and 1.5e-2)
    for bits in ([0, 0, 1], [0, 1]):
        x = sum(b * 2.0 ** -(i + 1) for i, b in enumerate(bits))
        kept, lost, cut = exact_noise.enumerate_fraction_trial(bits, 4, 28)
        exact = math.exp(-x * 8.0 * (1 + x / 8) / 10)
        assert cut < 0.007 and kept <= exact * (1 + 1e-12) and exact <= kept + cut, (bits, kept, exact, cut)


def test_the_cell_boundaries_are_the_cumulative_probabilities_to_256_bits():
    # the table written in exact_cells.py, recomputed by mpmath at 600 bits (which also checks no boundary is
    # within 2^-200 of a 256-bit number), and against scipy's float64 as a second computation
    from dptradeoff import exact_cells

    rows = exact_cells.table()
    written = [int("".join(f"{int(word):016x}" for word in row), 16) for row in rows]
    assert written == exact_cells.expansions()
    x = np.arange(len(rows)) / 2**exact_cells.CELL_BITS
    assert np.allclose([w / 2.0**256 for w in written], 2 * stats.norm.cdf(x) - 1, rtol=0, atol=1e-15)


@pytest.mark.parametrize("laplace", [False, True])
def test_draws_from_the_generator_have_the_exact_probabilities(laplace):
    # the production path (53-bit digits from a Generator, the normal's written-out fast path) against the
    # exact pmf at 64 steps a scale: four bins a cell, so a cell's inner density shows (chi-square)
    rng = np.random.default_rng(5)
    pmf = _rounded_laplace if laplace else _rounded_normal
    c = 6                                                                          # 2^c = 64 steps a scale
    k = exact_noise._noise(1_000_000, c, laplace, rng)
    edges = np.arange(-300, 301)
    observed = np.array([(k < -300).sum(), *np.bincount(k[np.abs(k) <= 300] + 300, minlength=601), (k > 300).sum()])
    p = pmf(c, edges)
    expected = 1_000_000 * np.array([(1 - p.sum()) / 2, *p, (1 - p.sum()) / 2])
    assert stats.chisquare(observed, expected).pvalue > 1e-4, (observed, expected)


def test_the_fast_path_reads_the_same_digits_for_the_same_draws():
    # `_fast_normal` (with `_resume_normal`) against the general `_normal_attempt` at w = 53 on one digit stream:
    # the same value and the same digits read, draw after draw; the stream planted with first digits tying a
    # boundary's (the lazy bisection), with the tail's, and with dice at or below 2i
    rng = np.random.default_rng(11)
    digits = (rng.random(3_000_000) * 2.0**53).astype(np.uint64)
    first = exact_noise._NORMAL_FIRST
    digits[0:400:4] = first[rng.integers(1, len(first), 100)]         # ties (most draws read 2-3 digits)
    digits[1000:1400:4] = first[-1] + rng.integers(1, 2**20, 100).astype(np.uint64)   # the tail
    draws, differ, read = exact_noise._fast_against_general(digits, 600_000, 27)
    assert differ == 0 and draws == 600_000 and read > 1_300_000


def test_the_normal_tail_has_the_conditional_probabilities():
    # beyond 4 scales (6e-5 of the draws) Karney's algorithm from 4 up: 300,000 draws of round(4 N) given |N| >= 4
    # against P(round(4 N) = K) / P(|N| >= 4) (chi-square)
    k = np.abs(exact_noise._tail_draws(np.random.default_rng(3), 300_000, 2))
    edges = np.arange(16, 25)
    lower = np.maximum((edges - 0.5) / 4, 4.0)
    p = (stats.norm.sf(lower) - stats.norm.sf((edges + 0.5) / 4)) / stats.norm.sf(4.0)
    observed = np.array([*[(k == e).sum() for e in edges], (k > 24).sum()])
    expected = 300_000 * np.array([*p, 1 - p.sum()])
    assert k.min() >= 16 and stats.chisquare(observed, expected).pvalue > 1e-4, (observed, expected)


def _digits_for_k(k: int) -> np.ndarray:
    """Bits that drive a normal draw (1-bit digits) to |N| in [k, k + 1/2), k >= 4, positive: a uniform above
    every boundary (14 ones: the tail), j = k - 4 rounds of 9 won e^-1/2 trials, one lost (0 then 1), j(j - 1)
    won, k + 1 of the fraction's trials won (a uniform above x, whose first bit is 0), then the sign 0."""
    j = k - 4
    return np.array([1] * 14 + [1] * (9 * j) + [0, 1] + [1] * (j * (j - 1)) + [1, 0] + [1] * k + [0], np.uint64)


def test_the_normal_sampler_has_no_cap_in_the_tail():
    # numpy's ziggurat never exceeds 12.23 standard deviations (a release there would be reachable from one
    # dataset and not its neighbour); here every integer part has a path, each of positive probability
    for k in (4, 20, 40):
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
    with pytest.raises(ValueError, match="4 noises"):
        grid.place(np.zeros(5), np.zeros(4, np.int64))
    out = grid.release(np.linspace(-2, 2, 5), secure_random.generator())
    assert np.array_equal(np.rint(out / grid.spacing) * grid.spacing, out)     # the float of an integer's multiple
    assert grid.drawn_scale == pytest.approx(0.3 / (1 - 2.0**-17), rel=1e-12)
