"""Noise sampled exactly on a grid: what a release under `release.randomness: os` adds wherever it spends
privacy (docs/release.md), so that the numbers it releases have exactly the distribution the accountant
analyses.

The mechanism. Values v (one vector released together: a DP-SGD step's clipped sum, a noisy score, a
statistic) of sensitivity Delta are released as

    gamma * (j + K),   j = rint(v / gamma) per coordinate,   K = round(2^c N) with N ~ N(0, 1) (or Laplace),

on the grid gamma = sigma' 2^-c. That is the Gaussian (Laplace) mechanism with scale sigma' applied to
gamma j, followed by rounding to the grid (round(j + 2^c N) = j + K): a post-processing of it. gamma j moves
by at most Delta + 2 gamma sqrt(d) between neighbours (each coordinate's rounding is off by less than one
grid step, `MAX_QUOTIENT` keeps the division's own error below 1/8 of one), so the released integers
are exactly as private as the continuous mechanism of that sensitivity. The grid is fine enough that this
costs 2^(1-b) of the noise (b = GRID_BITS): 2^c >= 2^b sqrt(d) Z with Z = 2^ceil(log2 max(1, sigma/Delta)),
so 2 gamma sqrt(d) <= 2^(1-b) sigma' Delta / sigma, and the sampler draws sigma' = sigma / (1 - 2^(1-b))
instead of the nominal sigma: sigma' / (Delta + 2 gamma sqrt(d)) >= sigma / Delta. The accountant then
charges the nominal noise multiplier sigma / Delta, unchanged, and the release is exactly what it analyses.
For Laplace noise the same with the L1 norm: 2^c >= 2^b d Z, scale lambda' = lambda / (1 - 2^(1-b)).

The samplers draw K with exactly the probability of round(2^c N) (of the rounded Laplace), using only
uniform random bits: no floating point, no cap in the tails.
The normal:
- The cell. |N| falls in cell i, [i 2^-m, (i + 1) 2^-m) with m = CELL_BITS = 4, with probability
  C_(i+1) - C_i; the boundaries C_i are tabulated as 256-bit binary expansions (`exact_cells`, recomputed by
  the tests with mpmath) and read in whole w-bit digits, the first 212 bits at w = 53. A uniform U compared
  digit by digit with them lands in cell i exactly where C_i <= U < C_(i+1); its first digit almost always
  decides (a guide table of its leading 8 bits, then the boundaries' first digits), further digits only where
  it ties a boundary's (about 2^-47 of draws). Where U ties a boundary on all its tabulated digits (2^-212 a
  boundary), the boundary's next digits are computed exactly (`exact_cells.boundary_bits`, mpmath, called
  from the jitted code in object mode: only this path holds the GIL) and the comparison goes on.
- Inside the cell, x = (i + v) 2^-m with v uniform, kept with probability e^-(x^2 - (i 2^-m)^2)/2 =
  exp(-v (2i + v) / 2^(2m+1)) and redrawn otherwise: von Neumann's trial, a
  descending run of uniforms below v whose every step also passes a die of 2^(2m+1) faces (below 2i it passes;
  at 2i, a fresh uniform under v), first failing at an odd step. Most draws end at the first face (above 2i).
  Conditioned on its cell, x then has the normal's density there.
- Beyond NORMAL_BODY = 4 scales (6.3e-5 of the normal's mass): Karney's algorithm N (C. F. F. Karney,
  "Sampling exactly from the normal distribution", ACM TOMS 42, 2016) restricted to integer parts k >= 4 (its
  geometric proposal is memoryless: k = 4 + j with j's weight e^-(4 + 1/2) j, kept with e^-j(j-1)/2, then its
  k + 1 fraction trials).
- A random sign.
The Laplace (one draw a released statistic): von Neumann's exponential (x kept with probability e^-x, else
k + 1) and a sign.
Uniforms are lazy: their base-2^w digits are drawn only as far as a comparison needs, so every comparison
is exact; the output needs only the fraction's first c + 1 bits. Fresh bits for the dice and the sign come
from a pool of digits' bits. A normal reads about 2.3 digits of 53 bits. `_fast_normal` writes the common case
out (26 ns a draw against 600 ns for Karney's algorithm alone) and reads the same digits for the same value as
the general functions, which the tests check draw for draw.

A lazy uniform has at most MAX_DIGITS digits (1,060 bits at w = 53): a comparison still tied there (2^-1060)
stops the draw and its caller raises, releasing nothing.

Random digits come from a numpy Generator (its 53-bit uniforms, `random()`, read as 53 random bits: the
release's AES generator) or from an array of digits (the tests enumerate every array of w-bit digits to
compute each output's exact probability; `enumerate_attempt`, `enumerate_cell_trial`). A Generator is taken
only over a bit generator whose `random()` is known to be 53 uniformly random bits, (next_uint64 >> 11) 2^-53
or MT19937's two 32-bit words (`check_generator`, `GENERATORS`): a bit generator may define its doubles
otherwise (randomgen's DSFMT has 52 random bits), and its digits would not be uniform.

The boundaries (and CELL_BITS, NORMAL_BODY) are compiled into the jitted code as constants. numba's on-disk
cache checks only this file, so it is keyed on this file's and exact_cells.py's bytes too (`COMPILED_FROM`,
`jit_cache`), as is that of the jitted code that calls this module's (`train/linear.py`): code compiled
against another table is never loaded.
"""
from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numba
import numpy as np
from numba import types
from numba.extending import overload

from . import exact_cells
from .exact_cells import CELL_BITS, EXPANSION_BITS, NORMAL_BODY, boundary_bits, table
from .jit_cache import key_caches, source_digest

GRID_BITS = 18               # b: the input's rounding costs 2^(1 - b) = 7.6 ppm more noise than the nominal
MAX_QUOTIENT = 2.0 ** 50     # |v| / gamma at most this: rint(v / gamma) is then within 5/8 of v / gamma
MAX_BITS = 40                # c at most this: j + K stays below 2^53 (exact in float64, no int64 overflow) unless
                             # |N| > 2^12
GENERATOR_BITS = 53          # the bits of one digit drawn from a Generator (its 53-bit uniforms)
MAX_DIGITS = 20              # a lazy uniform grows to at most this many digits (a tie of 1,060 bits: then it raises)
_SLOTS = 4                   # lazy uniforms alive at once: the fraction, two of a descending run, one spare
ACCEPTED, REJECTED, SHORT = 0, 1, 2   # an attempt's outcome; short: the digits ran out (an array)
_SAFETY = 1.0 + 2.0 ** -40   # covers the rounding of sigma' itself
_NORMAL = table()            # the cells' boundaries (numba reads them as constants: the cache is keyed on them)
_NORMAL_CELLS = NORMAL_BODY << CELL_BITS
_NORMAL_FIRST = (_NORMAL[:, 0] >> np.uint64(64 - GENERATOR_BITS)).copy()   # each boundary's first 53-bit digit
_GUIDE_BITS = 8              # the fast path finds U's first digit among those from a guide of its leading 8 bits:
_NORMAL_GUIDE = (np.searchsorted(_NORMAL_FIRST, np.arange(2**_GUIDE_BITS, dtype=np.uint64)
                                 << np.uint64(GENERATOR_BITS - _GUIDE_BITS), side="right") - 1).astype(np.int64)
PARALLEL_FROM = 4096         # a vector at least this long is drawn in parallel parts where more generators are given
COMPILED_FROM = source_digest(__file__, exact_cells.__file__)   # what the jitted code is compiled from (`jit_cache`)
GENERATORS = (("numpy.random", ("PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937")),
              ("randomgen", ("AESCounter", "ChaCha")))   # bit generators whose random() is 53 random bits


@dataclass(frozen=True)
class Grid:
    """The grid of one release of `coordinates` values (module doc): the nominal scale (the Gaussian's sd or
    the Laplace scale the accountant charges), the sensitivity in the norm of the noise (L2 Gaussian, L1
    Laplace), and a bound on every |value| that holds whatever the data."""
    scale: float
    sensitivity: float
    coordinates: int
    bound: float
    laplace: bool = False
    grid_bits: int = GRID_BITS

    def __post_init__(self):
        if not (self.scale > 0 and self.sensitivity > 0 and self.coordinates >= 1 and self.bound >= 0):
            raise ValueError(f"a noise grid needs a positive scale and sensitivity, at least one coordinate and a "
                             f"bound >= 0, got {self}")
        if self.bits > MAX_BITS:
            raise ValueError(f"an exact grid for {self.coordinates} coordinates at noise {self.scale:g} against sensitivity "
                             f"{self.sensitivity:g} needs 2^{self.bits} steps a scale, more than 2^{MAX_BITS}; release "
                             f"fewer coordinates together or at a smaller noise multiplier")
        if self.bound / self.spacing > MAX_QUOTIENT:
            raise ValueError(f"values up to {self.bound:g} against noise of scale {self.scale:g} are too far apart for "
                             f"the exact grid (2^{self.bits} steps a scale); use more noise or a smaller bound")

    @property
    def drawn_scale(self) -> float:
        """sigma' (lambda'): the scale the sampler draws, 2^(1-b) above the nominal one (module doc)."""
        return self.scale / (1.0 - 2.0 ** (1 - self.grid_bits)) * _SAFETY

    @property
    def bits(self) -> int:
        """c: the grid is 2^-c drawn scales; 2^c >= 2^b sqrt(d) Z (L1: 2^b d Z)."""
        spread = self.coordinates if self.laplace else math.sqrt(self.coordinates)
        multiplier = max(1.0, self.scale / self.sensitivity)
        return self.grid_bits + math.ceil(math.log2(spread)) + math.ceil(math.log2(multiplier))

    @property
    def spacing(self) -> float:
        """gamma, the released values' grid."""
        return math.ldexp(self.drawn_scale, -self.bits)

    def release(self, values, rng: np.random.Generator, more: tuple[np.random.Generator, ...] = ()) -> np.ndarray:
        """gamma (rint(v / gamma) + K) for every value (float64, the shape of `values`): `place` with `noise`."""
        return self.place(values, self.noise(np.size(values), rng, more))

    def noise(self, count: int, rng: np.random.Generator, more: tuple[np.random.Generator, ...] = ()) -> np.ndarray:
        """K for `count` values (int64), independent of them. With `more` generators, a long vector is cut into
        1 + len(more) parts, each drawn from its own generator in its own thread (the samplers release the GIL):
        the same distribution, independent draws."""
        if count > self.coordinates:
            raise ValueError(f"{count} values released on a grid made for {self.coordinates}")
        for source in (rng, *more):
            check_generator(source)
        sources = (rng, *more) if count >= PARALLEL_FROM else (rng,)
        if len(sources) == 1:
            return _noise(count, self.bits, self.laplace, rng)
        sizes = [len(part) for part in np.array_split(np.empty(count, np.int8), len(sources))]
        with ThreadPoolExecutor(len(sources)) as pool:
            return np.concatenate(list(pool.map(lambda size, source: _noise(size, self.bits, self.laplace, source),
                                                sizes, sources)))

    def place(self, values, noise: np.ndarray) -> np.ndarray:
        """gamma (rint(v / gamma) + K): the values released with noise K drawn for them (`noise`, one K each)."""
        flat = np.ascontiguousarray(values, dtype=np.float64).ravel()
        if len(flat) > self.coordinates or noise.shape != flat.shape:
            raise ValueError(f"{len(flat)} values released with {noise.size} noises on a grid made for {self.coordinates}")
        return _place(flat, noise, self.spacing).reshape(np.shape(values))


def gaussian(sd: float, sensitivity: float, coordinates: int, bound: float) -> Grid:
    """The grid of the Gaussian mechanism of nominal sd and L2 sensitivity on `coordinates` values."""
    return Grid(float(sd), float(sensitivity), int(coordinates), float(bound))


def laplace(scale: float, sensitivity: float, coordinates: int, bound: float) -> Grid:
    """The grid of the Laplace mechanism of nominal scale and L1 sensitivity (pure epsilon = sensitivity / scale)."""
    return Grid(float(scale), float(sensitivity), int(coordinates), float(bound), laplace=True)


def check_generator(rng) -> None:
    """Refuse (TypeError) a source of digits whose doubles are not known to be 53 uniformly random bits: anything
    but a numpy Generator over a bit generator of GENERATORS. The classes exactly: numba reads a bit generator
    through its `ctypes` interface, which a subclass could redefine."""
    bits = getattr(rng, "bit_generator", None)
    if type(rng) is np.random.Generator and _known_bits(type(bits)):
        return
    what = (f"a Generator over {type(bits).__name__}" if isinstance(rng, np.random.Generator)
            else f"a {type(rng).__name__}")
    raise TypeError(f"exact noise reads a Generator's random() as 53 uniformly random bits, which {what} does not "
                    f"promise; draw it from a numpy Generator over numpy's PCG64, PCG64DXSM, Philox, SFC64 or MT19937 "
                    f"or randomgen's AESCounter or ChaCha (a release's: secure_random.generator())")


def _known_bits(cls) -> bool:
    """Whether `cls` is one of GENERATORS (randomgen looked at only where the class comes from it)."""
    import importlib

    for package, names in GENERATORS:
        if cls.__module__ == package or cls.__module__.startswith(package + "."):
            module = importlib.import_module(package)
            if any(getattr(module, name, None) is cls for name in names):
                return True
    return False


# ---- digits ---------------------------------------------------------------------------------------------

def _digit(src, state, width):
    """One w-bit random digit: the next of an array of digits (state[0] the position; state[1] = 1 once they
    run out), or 53 bits of a numpy Generator (one whose random() is 53 random bits: `check_generator`). This is
    the Python reading; jitted code uses `_digit_impl`'s."""
    if isinstance(src, np.ndarray):
        if state[0] >= len(src):
            state[1] = 1
            return np.uint64(0)
        state[0] += 1
        return np.uint64(src[state[0] - 1])
    return np.uint64(src.random() * 9007199254740992.0)


@overload(_digit, inline="always")
def _digit_impl(src, state, width):
    if isinstance(src, types.Array):
        def from_array(src, state, width):   # the enumeration's digits; state[1] = 1 once they run out
            if state[0] >= len(src):
                state[1] = 1
                return np.uint64(0)
            state[0] += 1
            return np.uint64(src[state[0] - 1])
        return from_array

    def from_generator(src, state, width):    # (next_uint64 >> 11) * 2^-53, read back as its 53 bits (through
        return np.uint64(np.int64(src.random() * 9007199254740992.0))   # int64: one instruction, not unsigned's)
    return from_generator


_JIT = dict(nogil=True, cache=True)
_INLINE = dict(_JIT, inline="always")   # the digit helpers: inlined in numba IR (a call costs more than their work)


@numba.njit(**_INLINE)
def _stopped(state):
    """Whether the digits ran out (state[1]; an array) or a lazy uniform outgrew MAX_DIGITS (state[2] too)."""
    return state[1] != 0


@numba.njit(**_INLINE)
def _ensure(src, state, width, digits, counts, slot, index):
    """Digit `index` (< MAX_DIGITS: the caller checks) of lazy uniform `slot` drawn (its digits 0..index-1 are:
    they are drawn in order)."""
    if counts[slot] == index:
        digits[slot, index] = _digit(src, state, width)
        counts[slot] = index + 1


@numba.njit(**_INLINE)
def _less(src, state, width, digits, counts, a, b):
    """Whether lazy uniform a < lazy uniform b, drawing digits until they differ (a uniform's digits are
    drawn in order, so digit i is drawn here when it has i)."""
    i = 0
    while True:
        if i == MAX_DIGITS:
            state[1], state[2] = 1, 1
            return False
        _ensure(src, state, width, digits, counts, a, i)
        _ensure(src, state, width, digits, counts, b, i)
        if state[1]:
            return False
        da, db = digits[a, i], digits[b, i]
        if da != db:
            return da < db
        i += 1


@numba.njit(**_INLINE)
def _leading(src, state, width, digits, counts, slot, bits):
    """The first `bits` bits (<= 62) of lazy uniform `slot`, as an integer."""
    value, have, i = np.uint64(0), 0, 0
    while have < bits:
        if i == MAX_DIGITS:
            state[1], state[2] = 1, 1
            return np.uint64(0)
        _ensure(src, state, width, digits, counts, slot, i)
        if state[1]:
            return np.uint64(0)
        need = bits - have
        if need >= width:
            value = (value << np.uint64(width)) | digits[slot, i]
            have += width
        else:
            value = (value << np.uint64(need)) | (digits[slot, i] >> np.uint64(width - need))
            have += need
        i += 1
    return value


@numba.njit(**_INLINE)
def _fresh_bits(src, state, width, digits, counts, bits):
    """`bits` (<= 32) fresh uniform bits as an integer, from a pool of digits' bits kept in state[3] (its value)
    and state[4] (how many): a digit's bits are used for nothing else, so any of them are fresh."""
    while state[4] < bits:
        digit = _digit(src, state, width)
        if state[1]:
            return np.uint64(0)
        take = min(width, 62 - state[4])
        state[3] = (state[3] << take) | np.int64(digit >> np.uint64(width - take))
        state[4] += take
    state[4] -= bits
    value = state[3] >> state[4]
    state[3] &= (np.int64(1) << state[4]) - 1
    return np.uint64(value)


@numba.njit(**_JIT)
def _below(src, state, width, digits, counts, m):
    """A uniform integer in [0, m), m >= 2 (rejection on ceil(log2 m) bits)."""
    bits = 1
    while (1 << bits) < m:
        bits += 1
    while True:
        v = _fresh_bits(src, state, width, digits, counts, bits)
        if _stopped(state) or v < np.uint64(m):
            return np.int64(v)


# ---- Bernoulli trials with exp(-.) probabilities (von Neumann) -------------------------------------------

@numba.njit(**_JIT)
def _exp_half(src, state, width, digits, counts):
    """True with probability e^-1/2: the run 1/2 > U1 > U2 > ... first fails at an odd step."""
    y, z = 1, 2
    counts[y] = 0
    _ensure(src, state, width, digits, counts, y, 0)
    if _stopped(state) or (digits[y, 0] >> np.uint64(width - 1)) != 0:   # U1 >= 1/2: fails at step 1
        return True
    n = 1
    while True:
        counts[z] = 0
        if not _less(src, state, width, digits, counts, z, y):
            return n % 2 == 0          # fails at step n + 1
        y, z = z, y
        n += 1


@numba.njit(**_JIT)
def _exp_b(src, state, width, digits, counts, k):
    """True with probability exp(-x (2k + x) / (2k + 2)), x the lazy uniform in slot 0: the run x > U1 > U2 > ...,
    each step also passing an event of probability (2k + x) / (2k + 2), first fails at an odd step."""
    y, n = 0, 0
    while True:
        z = 2 if y == 1 else 1
        counts[z] = 0
        if not _less(src, state, width, digits, counts, z, y):
            return n % 2 == 0
        f = _below(src, state, width, digits, counts, 2 * k + 2)   # 2k of 2k+2 pass; one passes with probability x
        if _stopped(state) or f == 2 * k + 1:
            return n % 2 == 0
        if f == 2 * k:
            counts[3] = 0
            if not _less(src, state, width, digits, counts, 3, 0):
                return n % 2 == 0
        y = z
        n += 1


@numba.njit(**_JIT)
def _rounded(src, state, width, digits, counts, whole, unit_bits, c, pooled=True):
    """round(2^c x) with a random sign, x = (whole + v) 2^-unit_bits for v the lazy uniform in slot 0 (the first
    c + 1 bits of x decide it). The sign from the pool of fresh bits, or (`pooled` false: the Laplace's) the first
    bit of a fresh digit."""
    if pooled:
        negative = _fresh_bits(src, state, width, digits, counts, 1) == np.uint64(1)
    else:
        counts[3] = 0
        negative = _leading(src, state, width, digits, counts, 3, 1) == np.uint64(1)
    shift = c + 1 - unit_bits
    if shift >= 0:
        halves = (np.int64(whole) << np.int64(shift)) + np.int64(_leading(src, state, width, digits, counts, 0, shift))
    else:
        halves = np.int64(whole) >> np.int64(-shift)
    value = (halves + 1) >> 1
    return -value if negative else value


# ---- the fast path: a cell from the boundaries' expansions, then exact rejection inside it ------------

@numba.njit(**_INLINE)
def _boundary_digit(row, index, width):
    """Digit `index` (w bits) of boundary `row`'s tabulated expansion (`exact_cells`: the compiled constant
    `_NORMAL`), or -1 past the table: a digit lies whole within its 256 bits (at w = 53 the first 4 digits)."""
    start = index * width
    if start + width > EXPANSION_BITS:
        return np.int64(-1)
    word, offset = start // 64, start % 64
    high = (_NORMAL[row, word] << np.uint64(offset)) >> np.uint64(64 - width)
    if offset + width > 64:
        high |= _NORMAL[row, word + 1] >> np.uint64(128 - offset - width)
    return np.int64(high)


def _exact_boundary_digit(row, index, width):
    """Digit `index` (w bits) of boundary `row`'s expansion, exactly (`exact_cells.boundary_bits`)."""
    return boundary_bits(int(row), (int(index) + 1) * int(width)) & ((1 << int(width)) - 1)


@numba.njit(cache=True)    # (not nogil: object mode takes the GIL; numba warns of a nogil function that holds it)
def _further_boundary_digit(row, index, width):
    """`_boundary_digit` past the table: computed exactly in Python (object mode, the GIL held) where U ties a
    boundary on every tabulated digit (2^-212 a boundary at w = 53)."""
    with numba.objmode(digit="int64"):
        digit = _exact_boundary_digit(row, index, width)
    return digit


@numba.njit(**_INLINE)
def _below_boundary(src, state, width, digits, counts, slot, row):
    """Whether lazy uniform `slot` < boundary `row`, drawing its digits until they differ from the expansion's:
    the table's, then those computed past it. Only a tie of MAX_DIGITS digits (U's every digit) stops the draw
    (state[2]: its callers raise)."""
    i = 0
    while True:
        if i == MAX_DIGITS:
            state[1], state[2] = 1, 1
            return False
        _ensure(src, state, width, digits, counts, slot, i)
        if state[1]:
            return False
        limit = _boundary_digit(row, i, width)
        if limit < 0:
            limit = _further_boundary_digit(row, i, width)
        if digits[slot, i] != np.uint64(limit):
            return digits[slot, i] < np.uint64(limit)
        i += 1


@numba.njit(**_JIT)
def _cell(src, state, width, digits, counts):
    """The cell i of a uniform U (slot 1): C_i <= U < C_(i+1); the last row's index (cells) where U >= C_cells,
    beyond the body. U's first digit d places it among the boundaries' first digits D_i (a bisection): where
    D_i < d < D_(i+1), C_i < U < C_(i+1). Only where d equals some D_i (about 2^-47 of draws at w = 53) do the
    comparisons read more digits."""
    counts[1] = 0
    _ensure(src, state, width, digits, counts, 1, 0)
    if state[1]:
        return 0
    first = digits[1, 0]
    low, high = 0, _NORMAL_CELLS + 1        # C_low <= U < C_high (C_rows: 1)
    while high - low > 1:
        middle = (low + high) // 2
        if first < np.uint64(_boundary_digit(middle, 0, width)):
            high = middle
        else:
            low = middle
    if low == 0 or first != np.uint64(_boundary_digit(low, 0, width)):
        return low
    return _cell_from_first(src, state, width, digits, counts)


@numba.njit(**_JIT)
def _cell_from_first(src, state, width, digits, counts):
    """`_cell` where U's first digit ties a boundary's: every comparison digit by digit (U's first digit drawn)."""
    low, high = 0, _NORMAL_CELLS + 1
    while high - low > 1:
        middle = (low + high) // 2
        if _below_boundary(src, state, width, digits, counts, 1, middle):
            high = middle
        else:
            low = middle
        if _stopped(state):
            return 0
    return low


@numba.njit(**_JIT)
def _exp_run(src, state, width, digits, counts, bits, below, tie, face):
    """True with probability exp(-v p), v the lazy uniform in slot 0 and p = (below + v [tie]) / 2^bits:
    von Neumann's run v > U1 > U2 > ..., each step also passing an event of probability p (a die of 2^bits
    faces, the first step's `face` thrown by the caller: below it passes; at `below` with `tie`, a fresh
    uniform under v passes), first failing at an odd step. P(n steps pass) = (v p)^n / n!, so P(n even) =
    exp(-v p)."""
    y, n = 0, 0
    while True:
        if n > 0:
            face = _fresh_bits(src, state, width, digits, counts, bits)
        if _stopped(state) or face > np.uint64(below) or (face == np.uint64(below) and not tie):
            return n % 2 == 0
        if face == np.uint64(below):
            counts[3] = 0
            if not _less(src, state, width, digits, counts, 3, 0):
                return n % 2 == 0
        z = 2 if y == 1 else 1
        counts[z] = 0
        if not _less(src, state, width, digits, counts, z, y):
            return n % 2 == 0
        y = z
        n += 1


@numba.njit(**_JIT)
def _in_normal_cell(src, state, width, digits, counts, i):
    """v (slot 0) of |N| in cell i, x = (i + v) 2^-m: a uniform v kept with probability e^-(x^2 - (i 2^-m)^2)/2
    = exp(-v (2i + v) / 2^(2m+1)), redrawn otherwise: x has the normal's density within the cell."""
    while True:
        counts[0] = 0
        face = _fresh_bits(src, state, width, digits, counts, 2 * CELL_BITS + 1)
        if _exp_run(src, state, width, digits, counts, 2 * CELL_BITS + 1, 2 * i, True, face) or _stopped(state):
            return


@numba.njit(**_JIT)
def _all_exp_half(src, state, width, digits, counts, trials):
    """True with probability e^-(trials / 2)."""
    for _ in range(trials):
        if not _exp_half(src, state, width, digits, counts) or _stopped(state):
            return False
    return True


@numba.njit(**_JIT)
def _normal_tail(src, state, width, digits, counts):
    """k >= T = NORMAL_BODY and the fraction x (slot 0) of |N| given |N| >= T: Karney's algorithm from T up.
    j = k - T with probability proportional to e^-(T + 1/2) j (2T + 1 trials of e^-1/2 won, j times), kept with
    probability e^-j(j-1)/2: e^-(T j + j^2/2), proportional to e^-k^2/2 on k >= T; then Karney's k + 1
    fraction trials. The accepted k + x has density proportional to e^-(k+x)^2/2 on [T, inf). -1: stopped."""
    while True:
        j = 0
        while _all_exp_half(src, state, width, digits, counts, 2 * NORMAL_BODY + 1):
            j += 1
        if _stopped(state):
            return -1
        if not _all_exp_half(src, state, width, digits, counts, j * (j - 1)):
            if _stopped(state):
                return -1
            continue
        k = NORMAL_BODY + j
        counts[0] = 0
        kept = True
        for _ in range(k + 1):
            if not _exp_b(src, state, width, digits, counts, k):
                kept = False
                break
        if _stopped(state):
            return -1
        if kept:
            return k


@numba.njit(**_JIT)
def _normal_attempt(src, state, width, digits, counts, c):
    """(outcome, round(2^c N)): the cell of |N| (its exact probability), the normal's density within it, or
    beyond NORMAL_BODY Karney's algorithm from there up; then a sign. Never rejects."""
    i = _cell(src, state, width, digits, counts)
    if _stopped(state):
        return SHORT, 0
    return _normal_in(src, state, width, digits, counts, c, i)


@numba.njit(**_JIT)
def _normal_in(src, state, width, digits, counts, c, i):
    """`_normal_attempt` once the cell i is known."""
    if i < _NORMAL_CELLS:
        _in_normal_cell(src, state, width, digits, counts, i)
        whole, unit_bits = i, CELL_BITS
    else:
        whole, unit_bits = _normal_tail(src, state, width, digits, counts), 0
    if _stopped(state):
        return SHORT, 0
    value = _rounded(src, state, width, digits, counts, whole, unit_bits, c)
    return (SHORT if _stopped(state) else ACCEPTED), value


@numba.njit(**_INLINE)
def _pool_bits(rng, state, bits):
    """`_fresh_bits` for a Generator's 53-bit digits, written out for the fast path."""
    while state[4] < bits:
        take = min(GENERATOR_BITS, 62 - state[4])
        state[3] = (state[3] << take) | np.int64(_digit(rng, state, GENERATOR_BITS) >> np.uint64(GENERATOR_BITS - take))
        state[4] += take
    state[4] -= bits
    value = state[3] >> state[4]
    state[3] &= (np.int64(1) << state[4]) - 1
    return value


_MISS = -(1 << 62)   # `_fast_normal`'s answer where the general functions must go on (never a value it returns)


@numba.njit(**_JIT)
def _fast_normal(rng, state, c):
    """round(2^c N) from 53-bit digits: `_normal_attempt` at w = 53 written out for its common case (U's first
    digit between two boundaries' first digits, the cell's first die face above 2i so that v is kept untouched,
    then the sign and v's first digit), reading the same digits in the same order for the same value
    (tests/test_exact_noise.py checks it draw for draw). Anything else returns _MISS with where it stands in
    state[5:8] (U's first digit or the face, the cell, which), for `_resume_normal`. Needs c + 1 > CELL_BITS.
    (The general path is not called from here: a call in this function, even one never taken, costs its
    every draw ~15 ns.)"""
    first = _digit(rng, state, GENERATOR_BITS)
    low = _NORMAL_GUIDE[first >> np.uint64(GENERATOR_BITS - _GUIDE_BITS)]   # the last boundary <= the bucket's start
    while low < _NORMAL_CELLS and _NORMAL_FIRST[low + 1] <= first:
        low += 1
    if (low > 0 and first == _NORMAL_FIRST[low]) or low == _NORMAL_CELLS:   # a tie, or the tail
        state[5], state[6], state[7] = np.int64(first), low, 1
        return _MISS
    face = _pool_bits(rng, state, 2 * CELL_BITS + 1)
    if face > 2 * low:                   # the run fails at its first step: v kept as it is, undrawn
        negative = _pool_bits(rng, state, 1) == 1
        shift = c + 1 - CELL_BITS
        halves = (np.int64(low) << np.int64(shift)) + np.int64(_digit(rng, state, GENERATOR_BITS) >> np.uint64(GENERATOR_BITS - shift))
        value = (halves + 1) >> 1
        return -value if negative else value
    state[5], state[6], state[7] = face, low, 2
    return _MISS


@numba.njit(**_JIT)
def _resume_normal(rng, state, digits, counts, c):
    """`_normal_attempt` from where `_fast_normal` stopped: after U's first digit (a tie: the lazy bisection
    with that digit drawn; the tail), or after the cell's first face (at or below 2i: the run goes on)."""
    low = state[6]
    if state[7] == 1:
        if low > 0 and np.uint64(state[5]) == _NORMAL_FIRST[low]:
            counts[1] = 1
            digits[1, 0] = np.uint64(state[5])
            low = _cell_from_first(rng, state, GENERATOR_BITS, digits, counts)
            if state[2]:
                return 0
        return _normal_in(rng, state, GENERATOR_BITS, digits, counts, c, low)[1]
    counts[0] = 0
    if not _exp_run(rng, state, GENERATOR_BITS, digits, counts, 2 * CELL_BITS + 1, 2 * low, True, np.uint64(state[5])):
        _in_normal_cell(rng, state, GENERATOR_BITS, digits, counts, low)
    return _rounded(rng, state, GENERATOR_BITS, digits, counts, low, CELL_BITS, c)


@numba.njit(**_JIT)
def _tail_draws(rng, count, c):
    """`count` draws of round(2^c N) given |N| >= NORMAL_BODY from a Generator: the tail alone (its test)."""
    state, digits, counts = scratch()
    out = np.empty(count, np.int64)
    for i in range(count):
        k = _normal_tail(rng, state, GENERATOR_BITS, digits, counts)
        out[i] = _rounded(rng, state, GENERATOR_BITS, digits, counts, k, 0, c)
    if state[2]:
        _stopped_draw()
    return out


@numba.njit(**_JIT)
def _laplace_attempt(src, state, width, digits, counts, c):
    """round(2^c L) for L ~ Laplace(1): von Neumann's exponential (x kept with probability e^-x, else k + 1)
    and a sign. Never rejects. (A release draws one Laplace a statistic: its speed does not matter, and the
    seeded examples keep their draws.)"""
    k = 0
    while True:
        counts[0] = 0
        y, n = 0, 0
        while True:
            z = 2 if y == 1 else 1
            counts[z] = 0
            if not _less(src, state, width, digits, counts, z, y):
                break
            y = z
            n += 1
        if _stopped(state):
            return SHORT, 0
        if n % 2 == 0:                 # the run failed at an odd step: keep x
            break
        k += 1
    value = _rounded(src, state, width, digits, counts, k, 0, c, False)
    return (SHORT if _stopped(state) else ACCEPTED), value


@numba.njit(**_JIT)
def _attempt(src, state, width, digits, counts, c, laplace):
    if laplace:
        return _laplace_attempt(src, state, width, digits, counts, c)
    return _normal_attempt(src, state, width, digits, counts, c)


@numba.njit(**_JIT)
def _compiled_tables():
    """The boundaries' table, their first 53-bit digits, the guide and (CELL_BITS, NORMAL_BODY) as compiled into
    the jitted code (its test: they are exact_cells', whatever the cache held)."""
    return _NORMAL.copy(), _NORMAL_FIRST.copy(), _NORMAL_GUIDE.copy(), CELL_BITS, NORMAL_BODY


@numba.njit(**_JIT)
def scratch():
    return np.zeros(8, np.int64), np.zeros((_SLOTS, MAX_DIGITS), np.uint64), np.zeros(_SLOTS, np.int64)


@numba.njit(**_INLINE)
def _draw(rng, state, digits, counts, c, laplace):
    """round(2^c N) (or the rounded Laplace) from a Generator; state[2] set (and the value meaningless) where a
    lazy uniform needed more than MAX_DIGITS digits: its callers raise (`_stopped_draw`), after the loop where
    they draw many (a raise inside costs every draw)."""
    if not laplace and c + 1 > CELL_BITS:
        value = _fast_normal(rng, state, c)
        if value == _MISS:
            value = _resume_normal(rng, state, digits, counts, c)
        return value
    while True:
        outcome, value = _attempt(rng, state, GENERATOR_BITS, digits, counts, c, laplace)
        if outcome == ACCEPTED or state[2]:
            return value


@numba.njit(**_INLINE)
def _stopped_draw():
    raise RuntimeError("a lazy uniform needed more than MAX_DIGITS digits: nothing released")


@numba.njit(**_JIT)
def released_value(value, spacing, c, laplace, rng, state, digits, counts):
    """One coordinate's release gamma (rint(v / gamma) + K) (module doc); `scratch()` gives the last three."""
    noise = _draw(rng, state, digits, counts, c, laplace)
    if state[2]:
        _stopped_draw()
    return (np.rint(value / spacing) + noise) * spacing


@numba.njit(**_JIT)
def _place(values, noise, spacing):
    """gamma (rint(v / gamma) + K) for each value, in one pass."""
    out = np.empty_like(values)
    for i in range(len(values)):
        out[i] = (np.rint(values[i] / spacing) + noise[i]) * spacing
    return out


@numba.njit(**_JIT)
def _noise(count, c, laplace, rng):
    """`count` draws of K = round(2^c N) (or the rounded Laplace) from a Generator."""
    state, digits, counts = scratch()
    out = np.empty(count, np.int64)
    if not laplace and c + 1 > CELL_BITS:    # `_draw`'s fast path, in a loop of its own (~15 ns a draw faster)
        for i in range(count):
            value = _fast_normal(rng, state, c)
            out[i] = value if value != _MISS else _resume_normal(rng, state, digits, counts, c)
    else:
        for i in range(count):
            out[i] = _draw(rng, state, digits, counts, c, laplace)
    if state[2]:
        _stopped_draw()
    return out


@numba.njit(**_JIT)
def _enumerate(c, laplace, max_bits, window, width):
    """Every sequence of w-bit digits one attempt can read, each up to max_bits digits: the exact probability
    of each output |K| <= window, of the outputs beyond, of rejecting, and the mass of the sequences cut at
    max_bits (whose outcome is not known)."""
    prefix = np.zeros(max_bits, np.uint64)
    top = np.uint64((1 << width) - 1)
    length = 0
    masses = np.zeros(2 * window + 1)
    beyond, rejected, cut = 0.0, 0.0, 0.0
    state, digits, counts = scratch()
    while True:
        state[:] = 0
        outcome, value = _attempt(prefix[:length], state, width, digits, counts, c, laplace)
        mass = 2.0 ** (-width * length)
        if state[1] and not state[2] and length < max_bits:   # it needs another digit: try each, from 0
            prefix[length] = 0
            length += 1
            continue
        if state[1] or state[2]:
            cut += mass
        elif outcome == REJECTED:
            rejected += mass
        elif abs(value) <= window:
            masses[value + window] += mass
        else:
            beyond += mass
        while length > 0 and prefix[length - 1] == top:
            length -= 1
        if length == 0:
            break
        prefix[length - 1] += np.uint64(1)
    return masses, beyond, rejected, cut


@numba.njit(**_JIT)
def _enumerate_trial(v_bits, bits, below, tie, max_bits, karney):
    """(P(true), P(false), cut) of `_exp_run` (with `karney`, of `_exp_b` at k = below) for v fixed to MAX_DIGITS
    given bits (1-bit digits; a comparison tied past them is cut), over every bit sequence up to max_bits."""
    prefix = np.zeros(max_bits, np.uint64)
    length = 0
    kept, lost, cut = 0.0, 0.0, 0.0
    state, digits, counts = scratch()
    while True:
        state[:] = 0
        counts[:] = 0
        digits[0, :len(v_bits)] = v_bits
        counts[0] = len(v_bits)
        if karney:
            result = _exp_b(prefix[:length], state, 1, digits, counts, below)
        else:
            face = _fresh_bits(prefix[:length], state, 1, digits, counts, bits)
            result = _exp_run(prefix[:length], state, 1, digits, counts, bits, below, tie, face)
        mass = 2.0 ** -length
        if state[1] and not state[2] and length < max_bits:
            prefix[length] = 0
            length += 1
            continue
        if state[1] or state[2]:
            cut += mass
        elif result:
            kept += mass
        else:
            lost += mass
        while length > 0 and prefix[length - 1] == 1:
            length -= 1
        if length == 0:
            break
        prefix[length - 1] += np.uint64(1)
    return kept, lost, cut


@numba.njit(**_JIT)
def _fast_against_general(digits, draws, c):
    """(draws made, draws where `_fast_normal` and `_normal_attempt` at w = 53 differ in value or in the digits
    read so far, digits read) over one stream of 53-bit digits: the test of the fast path."""
    fast, fast_slots, fast_counts = scratch()
    general, slots, counts = scratch()
    differ = 0
    for i in range(draws):
        value = _fast_normal(digits, fast, c)
        if value == _MISS:
            value = _resume_normal(digits, fast, fast_slots, fast_counts, c)
        outcome, expected = _normal_attempt(digits, general, GENERATOR_BITS, slots, counts, c)
        if fast[1] or general[1]:
            return i, differ, fast[0]
        if value != expected or outcome != ACCEPTED or fast[0] != general[0]:
            differ += 1
    return draws, differ, fast[0]


def enumerate_attempt(c: int, laplace: bool, max_digits: int, window: int, width: int = 1):
    """(exact probability of each K in [-window, window] from one attempt, beyond the window, rejected, cut)
    over every digit sequence of up to `max_digits` w-bit digits (`_enumerate`): the tests compare it with
    round(2^c N)'s probabilities."""
    return _enumerate(int(c), bool(laplace), int(max_digits), int(window), int(width))


def enumerate_cell_trial(v_bits, cell: int, max_bits: int):
    """(P(kept), P(redrawn), cut) of a normal cell's trial (`_in_normal_cell`) for v fixed to the dyadic number of
    `v_bits` (up to MAX_DIGITS bits; a comparison tied past them is cut)."""
    v = np.zeros(MAX_DIGITS, np.uint64)
    v[:len(v_bits)] = v_bits
    return _enumerate_trial(v, 2 * CELL_BITS + 1, 2 * int(cell), True, int(max_bits), False)


def enumerate_fraction_trial(x_bits, k: int, max_bits: int):
    """(P(true), P(false), cut) of Karney's fraction trial at integer part k (`_exp_b`, the tail's) for x fixed
    to the dyadic number of `x_bits`."""
    x = np.zeros(MAX_DIGITS, np.uint64)
    x[:len(x_bits)] = x_bits
    return _enumerate_trial(x, 0, int(k), False, int(max_bits), True)


def attempt_from_digits(digits: np.ndarray, c: int, laplace: bool, width: int = 1) -> tuple[int, int]:
    """(outcome, K) of one attempt reading the given w-bit digits (SHORT where they run out)."""
    state, slots, counts = scratch()
    return _attempt(np.asarray(digits, np.uint64), state, int(width), slots, counts, int(c), bool(laplace))


key_caches(globals(), COMPILED_FROM)   # last: every jitted function above, before any is compiled
