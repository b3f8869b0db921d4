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
uniform random bits: no floating point, no table, no cap in the tails.
- The normal: Karney's algorithm N (C. F. F. Karney, "Sampling exactly from the normal distribution", ACM
  TOMS 42, 2016). An attempt picks k >= 0 with probability (1 - e^-1/2) e^-k/2 (`_exp_half` trials), keeps it
  with probability e^-k(k-1)/2, and takes a uniform fraction x kept with probability e^-x(2k+x)/2 (k + 1
  trials of `_exp_b`): its accepted value k + x has density proportional to e^-(k+x)^2/2. Each Bernoulli
  with an exp(-.) probability is von Neumann's: the parity of the length of a descending run of uniforms.
- The exponential: von Neumann's (the fraction x kept with probability e^-x, else k + 1), and a sign.
Uniforms are lazy: their base-2^w digits are drawn only as far as a comparison needs, so every comparison
is exact; the output needs only the fraction's first c + 1 bits. A normal reads about 17 digits (two attempts
of about 9), a Laplace about 5.

Random digits come from a numpy Generator (its 53-bit uniforms, `random()`, read as 53 random bits: the
release's AES generator) or from an array of digits (the tests enumerate every array of w-bit digits to
compute each output's exact probability; `enumerate_attempt`).
"""
from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numba
import numpy as np
from numba import types
from numba.extending import overload

GRID_BITS = 18               # b: the input's rounding costs 2^(1 - b) = 7.6 ppm more noise than the nominal
MAX_QUOTIENT = 2.0 ** 50     # |v| / gamma at most this: rint(v / gamma) is then within 5/8 of v / gamma
MAX_BITS = 40                # c at most this: j + K stays below 2^53 (exact in float64, no int64 overflow) unless
                             # |N| > 2^12
GENERATOR_BITS = 53          # the bits of one digit drawn from a Generator (its 53-bit uniforms)
MAX_DIGITS = 20              # a lazy uniform grows to at most this many digits (a tie of 1,000 bits: then it raises)
_SLOTS = 4                   # lazy uniforms alive at once: the fraction, two of a descending run, one spare
ACCEPTED, REJECTED, SHORT = 0, 1, 2   # an attempt's outcome; short: the digits ran out (an array)
_SAFETY = 1.0 + 2.0 ** -40   # covers the rounding of sigma' itself
PARALLEL_FROM = 4096         # a vector at least this long is drawn in parallel parts where more generators are given


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
        """gamma (rint(v / gamma) + K) for every value (float64, the shape of `values`). With `more` generators,
        a long vector is cut into 1 + len(more) parts, each drawn from its own generator in its own thread (the
        samplers release the GIL): the same distribution, independent draws."""
        flat = np.ascontiguousarray(values, dtype=np.float64).ravel()
        if len(flat) > self.coordinates:
            raise ValueError(f"{len(flat)} values released on a grid made for {self.coordinates}")
        sources = (rng, *more) if len(flat) >= PARALLEL_FROM else (rng,)
        if len(sources) == 1:
            return _release(flat, self.spacing, self.bits, self.laplace, rng).reshape(np.shape(values))
        parts = np.array_split(flat, len(sources))
        with ThreadPoolExecutor(len(sources)) as pool:
            drawn = list(pool.map(lambda part, source: _release(part, self.spacing, self.bits, self.laplace, source),
                                  parts, sources))
        return np.concatenate(drawn).reshape(np.shape(values))


def gaussian(sd: float, sensitivity: float, coordinates: int, bound: float) -> Grid:
    """The grid of the Gaussian mechanism of nominal sd and L2 sensitivity on `coordinates` values."""
    return Grid(float(sd), float(sensitivity), int(coordinates), float(bound))


def laplace(scale: float, sensitivity: float, coordinates: int, bound: float) -> Grid:
    """The grid of the Laplace mechanism of nominal scale and L1 sensitivity (pure epsilon = sensitivity / scale)."""
    return Grid(float(scale), float(sensitivity), int(coordinates), float(bound), laplace=True)


# ---- digits ---------------------------------------------------------------------------------------------

def _digit(src, state, width):
    """One w-bit random digit: the next of an array of digits (state[0] the position; state[1] = 1 once they
    run out), or 53 bits of a numpy Generator. This is the Python reading; jitted code uses `_digit_impl`'s."""
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

    def from_generator(src, state, width):    # (next_uint64 >> 11) * 2^-53, read back as its 53 bits
        return np.uint64(src.random() * 9007199254740992.0)
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
    """`bits` fresh uniform bits as an integer (the spare slot's digits)."""
    counts[3] = 0
    return _leading(src, state, width, digits, counts, 3, bits)


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
def _rounded(src, state, width, digits, counts, k, c):
    """round(2^c (k + x)) for x the lazy uniform in slot 0 (its first c + 1 bits decide it), with a random sign."""
    negative = _fresh_bits(src, state, width, digits, counts, 1) == np.uint64(1)
    halves = _leading(src, state, width, digits, counts, 0, c + 1)
    value = (np.int64(k) << np.int64(c)) + np.int64((halves + np.uint64(1)) >> np.uint64(1))
    return -value if negative else value


@numba.njit(**_JIT)
def _normal_attempt(src, state, width, digits, counts, c):
    """One attempt of Karney's algorithm N: (outcome, round(2^c N)) (module doc)."""
    k = 0
    while _exp_half(src, state, width, digits, counts):
        if _stopped(state):
            return SHORT, 0
        k += 1
    for _ in range(k * (k - 1)):
        if not _exp_half(src, state, width, digits, counts):
            return (SHORT if _stopped(state) else REJECTED), 0
    counts[0] = 0
    for _ in range(k + 1):
        if not _exp_b(src, state, width, digits, counts, k):
            return (SHORT if _stopped(state) else REJECTED), 0
    value = _rounded(src, state, width, digits, counts, k, c)
    return (SHORT if _stopped(state) else ACCEPTED), value


@numba.njit(**_JIT)
def _laplace_attempt(src, state, width, digits, counts, c):
    """round(2^c L) for L ~ Laplace(1): von Neumann's exponential (x kept with probability e^-x, else k + 1)
    and a sign. Never rejects."""
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
    value = _rounded(src, state, width, digits, counts, k, c)
    return (SHORT if _stopped(state) else ACCEPTED), value


@numba.njit(**_JIT)
def _attempt(src, state, width, digits, counts, c, laplace):
    if laplace:
        return _laplace_attempt(src, state, width, digits, counts, c)
    return _normal_attempt(src, state, width, digits, counts, c)


@numba.njit(**_JIT)
def scratch():
    return np.zeros(3, np.int64), np.zeros((_SLOTS, MAX_DIGITS), np.uint64), np.zeros(_SLOTS, np.int64)


@numba.njit(**_JIT)
def _draw(rng, state, digits, counts, c, laplace):
    """round(2^c N) (or the rounded Laplace) from a Generator: attempts until one is accepted."""
    while True:
        outcome, value = _attempt(rng, state, GENERATOR_BITS, digits, counts, c, laplace)
        if state[2]:
            raise RuntimeError("a lazy uniform needed more than MAX_DIGITS digits")
        if outcome == ACCEPTED:
            return value


@numba.njit(**_JIT)
def released_value(value, spacing, c, laplace, rng, state, digits, counts):
    """One coordinate's release gamma (rint(v / gamma) + K) (module doc); `scratch()` gives the last three."""
    return (np.rint(value / spacing) + _draw(rng, state, digits, counts, c, laplace)) * spacing


@numba.njit(**_JIT)
def _release(values, spacing, c, laplace, rng):
    state, digits, counts = scratch()
    out = np.empty_like(values)
    for i in range(len(values)):
        out[i] = released_value(values[i], spacing, c, laplace, rng, state, digits, counts)
    return out


@numba.njit(**_JIT)
def _enumerate(c, laplace, max_bits, window, width):
    """Every sequence of w-bit digits one attempt can read, each up to max_bits digits: the attempt's
    exact probability of each output |K| <= window, of the outputs beyond, of rejecting, and the mass
    of the sequences cut at max_bits (whose outcome is not known)."""
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


def enumerate_attempt(c: int, laplace: bool, max_digits: int, window: int, width: int = 1):
    """(exact probability of each K in [-window, window] from one attempt, beyond the window, rejected, cut)
    over every digit sequence of up to `max_digits` w-bit digits (`_enumerate`): the tests compare it with
    round(2^c N)'s probabilities."""
    return _enumerate(int(c), bool(laplace), int(max_digits), int(window), int(width))


def attempt_from_digits(digits: np.ndarray, c: int, laplace: bool, width: int = 1) -> tuple[int, int]:
    """(outcome, K) of one attempt reading the given w-bit digits (SHORT where they run out)."""
    state, slots, counts = scratch()
    return _attempt(np.asarray(digits, np.uint64), state, int(width), slots, counts, int(c), bool(laplace))
