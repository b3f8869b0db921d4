"""The release's exact samplers on a grid (src/dptradeoff/exact_noise.py): each output's probability, by
enumerating every sequence of random bits one draw can read; each cell's trial and boundaries, a uniform tied
with a boundary past its table, and the boundaries as compiled (and cached); the written-out fast path draw for
draw against the general one; the Generators taken; the tail; no cap in the tail; and the grid's argument, by
the exact privacy of the released integers against the accountant's closed form."""
from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import mpmath
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


def _expansion(row: int, digits: int, width: int = 53) -> list[int]:
    """The first `digits` w-bit digits of C_row = erf(row / 16 / sqrt 2), from mpmath at 600 bits more than
    they hold (and no nearer than 2^-300 to a digit boundary, where it could round the wrong way)."""
    bits = digits * width
    with mpmath.workprec(bits + 600):
        scaled = mpmath.erf(mpmath.mpf(row) / 16 / mpmath.sqrt(2)) * mpmath.mpf(2) ** bits
        floor = int(mpmath.floor(scaled))
        assert min(scaled - floor, floor + 1 - scaled) > mpmath.mpf(2) ** -300
    return [(floor >> (width * (digits - 1 - i))) & ((1 << width) - 1) for i in range(digits)]


def test_a_uniform_tied_with_a_boundary_past_its_table_reads_the_boundarys_further_digits():
    # U equal to C_r on 6 digits of 53 bits (318 bits; the table holds 256, read as 4 whole digits, 212 bits), then
    # one above or below C_r's 7th: the cell is r or r - 1, from the boundary's digits computed past the table,
    # which are mpmath's at far higher precision. A whole attempt goes on from there (the cell's die at its top
    # face: v kept; the sign 1; v's first digit 0): K = -r or -(r - 1) at c = 4. Every row, so also every row's
    # tabulated digits as the compiled bisection reads them.
    cells = exact_noise._NORMAL_CELLS
    for row in range(1, cells + 1):
        digits = _expansion(row, 8)
        assert [exact_noise._boundary_digit(row, k, 53) for k in range(4)] == digits[:4]
        assert [exact_noise._further_boundary_digit(row, k, 53) for k in range(4, 8)] == digits[4:]
        assert 0 < digits[6] < 2**53 - 1
        for step, cell in ((1, row), (-1, row - 1)):
            u = np.array(digits[:6] + [digits[6] + step], np.uint64)
            state, slots, counts = exact_noise.scratch()
            cell_of_u = exact_noise._cell(u, state, 53, slots, counts)
            assert (cell_of_u, state[2], state[0]) == (cell, 0, 7), (row, step)
            if cell < cells:
                drawn = np.array([*u, 2**53 - 1, 0], np.uint64)
                assert exact_noise.attempt_from_digits(drawn, 4, False, 53) == (exact_noise.ACCEPTED, -cell), row


def test_the_fast_path_goes_on_past_a_boundarys_table_as_the_general_one():
    # the production path from a Generator's digits: a first draw tied with C_r past the table (as above), then
    # random draws; `_fast_normal` (resumed) and `_normal_attempt` give the same values from the same digits
    rng = np.random.default_rng(12)
    for row in range(1, exact_noise._NORMAL_CELLS + 1):
        digits = _expansion(row, 7)
        for step in (1, -1):
            stream = np.concatenate([np.array(digits[:6] + [digits[6] + step], np.uint64),
                                     (rng.random(2000) * 2.0**53).astype(np.uint64)])
            draws, differ, read = exact_noise._fast_against_general(stream, 30, 27)
            assert (draws, differ) == (30, 0) and read > 7 + 30, (row, step, draws, differ)


def test_the_compiled_code_reads_exact_cells_boundaries():
    # the boundaries are constants compiled into the jitted code (and kept in numba's on-disk cache): read back
    # from it, digit by digit at several widths and as the tables the fast path reads, they are exact_cells'
    from dptradeoff import exact_cells

    rows = [int(row, 16) for row in exact_cells._NORMAL_HEX]
    for width in (1, 7, 53):
        for row, value in enumerate(rows):
            compiled = [exact_noise._boundary_digit(row, k, width) for k in range(256 // width + 1)]
            assert compiled == [(value >> (256 - (k + 1) * width)) & ((1 << width) - 1) if (k + 1) * width <= 256
                                else -1 for k in range(256 // width + 1)], (width, row)
    table, first, guide, cell_bits, body = exact_noise._compiled_tables()
    assert (cell_bits, body) == (exact_cells.CELL_BITS, exact_cells.NORMAL_BODY) == (4, 4) and len(rows) == 65
    assert [int("".join(f"{int(word):016x}" for word in row), 16) for row in table] == rows
    assert [int(f) for f in first] == [value >> (256 - 53) for value in rows]
    assert [int(g) for g in guide] == [max(i for i, value in enumerate(rows) if value >> (256 - 53) <= b << 45)
                                       for b in range(256)]


def test_a_changed_boundary_table_is_compiled_afresh_not_loaded_from_the_cache(tmp_path):
    # numba's cache checks only the file defining a function, and exact_noise's code holds exact_cells' table as
    # constants. A copy of the modules is compiled (and cached), its row 1 changed, then imported again: the
    # compiled digits are the new row's (a third import, nothing changed, loads them from the cache)
    from dptradeoff import exact_cells

    package = tmp_path / "noise_copy"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name in ("exact_noise.py", "exact_cells.py", "jit_cache.py"):
        shutil.copy(Path(exact_noise.__file__).with_name(name), package / name)
    probe = ("from noise_copy import exact_noise as e\n"
             "table, first = e._compiled_tables()[:2]\n"
             "hits = sum(e._compiled_tables.stats.cache_hits.values())\n"
             "print(e._boundary_digit(1, 0, 53), first[1], table[1, 0], hits)")
    env = {key: value for key, value in os.environ.items() if not key.startswith("NUMBA_")}

    def compiled():
        out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        return [int(word) for word in out.stdout.split()]

    def expected(row: str, hits: int):
        return [int(row, 16) >> 203, int(row, 16) >> 203, int(row[:16], 16), hits]

    old = exact_cells._NORMAL_HEX[1]
    new = "0dc2" + old[4:]                       # still between rows 0 and 2
    assert compiled() == expected(old, 0)
    cells = package / "exact_cells.py"
    cells.write_text(cells.read_text().replace(f'"{old}"', f'"{new}"'))
    assert compiled() == expected(new, 0)
    assert compiled() == expected(new, 1)


def test_the_linear_kernels_cache_is_keyed_on_the_samplers_sources():
    # the linear trainer's kernels compile exact_noise's sampler into themselves (released_value): their cache is
    # keyed on exact_noise.py's and exact_cells.py's bytes, as the sampler's own is
    from dptradeoff.jit_cache import KeyedCache
    from dptradeoff.train import linear

    for kernel in (linear._step, linear._kernel, linear._trace_kernel, exact_noise._noise,
                   exact_noise._cell_from_first):
        assert isinstance(kernel._cache, KeyedCache) and kernel._cache.digest == exact_noise.COMPILED_FROM, kernel


def test_exact_noise_takes_only_generators_whose_doubles_are_53_random_bits():
    # the samplers read a Generator's random() as 53 random bits: randomgen's DSFMT has 52 (its last bit is 0),
    # a subclass may redefine what numba reads (its ctypes interface). Refused by the grid and by the linear
    # trainer (which an AESCounter subclass passes as secure); every bit generator taken reads as raw bits
    from randomgen import DSFMT, AESCounter, ChaCha

    from dptradeoff.train import linear
    from dptradeoff.train.hyper import DPSGDHyper

    grid = exact_noise.gaussian(1.0, 1.0, 8, 1.0)
    dsfmt = np.random.Generator(DSFMT(1))
    assert not np.mod(dsfmt.random(1000) * 2.0**53, 2).any()

    class Tweaked(np.random.PCG64):
        pass

    class Mine(np.random.Generator):
        pass

    for rng in (dsfmt, np.random.Generator(Tweaked(1)), Mine(np.random.PCG64(1)), np.random.RandomState(1)):
        with pytest.raises(TypeError, match="53 uniformly random bits"):
            grid.noise(8, rng)
    with pytest.raises(TypeError, match="53 uniformly random bits, which a Generator over DSFMT"):
        grid.noise(8, np.random.default_rng(1), (dsfmt,))

    class Keyed(AESCounter):         # a subclass of randomgen's that is_secure takes
        __module__ = "randomgen.keyed"

    keyed = np.random.Generator(Keyed(key=1, counter=0))
    assert secure_random.is_secure(keyed)
    x, y = np.zeros((20, 3), np.float32), np.where(np.arange(20) % 2 == 0, 1.0, -1.0)
    with pytest.raises(TypeError, match="53 uniformly random bits"):
        linear.train(x, y, "logistic", "sgd", DPSGDHyper(1, 10, 0.1, 1.0, 1.0), 1, keyed)
    makers = [lambda: np.random.PCG64(1), lambda: np.random.PCG64DXSM(1), lambda: np.random.Philox(1),
              lambda: np.random.SFC64(1), lambda: np.random.MT19937(1), lambda: AESCounter(key=1, counter=0),
              lambda: ChaCha(key=1, counter=0, rounds=20)]
    for make in makers:
        bits, copy = make(), make()
        copy.state = bits.state
        doubles = (np.random.Generator(bits).random(1000) * 2.0**53).astype(np.uint64)
        if isinstance(copy, np.random.MT19937):   # two 32-bit words a double: (a >> 5) 2^26 + (b >> 6)
            words = copy.random_raw(2000).astype(np.uint64)
            raw = (words[0::2] >> np.uint64(5) << np.uint64(26)) + (words[1::2] >> np.uint64(6))
        else:
            raw = copy.random_raw(1000) >> np.uint64(11)
        assert np.array_equal(doubles, raw), type(bits)
        assert len(grid.noise(8, np.random.Generator(make()))) == 8


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
