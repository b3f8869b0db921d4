"""The tight accountant of the trainers' steps: a Gaussian on a lot of m of n rows drawn without
replacement, under replace-one neighbours, composed adaptively, by a privacy loss distribution (PLD).
docs/accounting.md states the argument; in short:

1. One step releases sum(clipped gradients of the lot) + N(0, (2Lz)^2). On the lot alone, replacing
   a row moves the sum by at most 2L, so the step before sampling is G_mu-DP with mu = 1/z (Dong,
   Roth & Su 2019 (DRS) Thm 2.7: the Gaussian mechanism is mu-GDP at sensitivity/sigma = mu).
2. Sampling m of n without replacement under replace-one: DRS Thm 4.2 (the subsampling theorem)
   makes the step C_q(G_mu)-DP, q = m/n, C_q(f) = min{f_q, f_q^-1}** with f_q = q f + (1 - q) Id:
   the trade-off of testing N(0, 1) against (1 - q) N(0, 1) + q N(mu, 1) is exactly f_q, so C_q(G_mu)
   is the symmetrised trade-off of that pair ("pair A", dp_accounting's Poisson-subsampled Gaussian at
   noise multiplier z in one direction; "pair B", the other direction). Zhu, Dong & Wang 2022 reach
   the same pair (their Prop. 30 and Cor. 32).
3. The privacy profile (hockey-stick curve) of C_q(G_mu) is the pointwise maximum of pair A's and
   pair B's profiles, delta(eps) = max(delta_A(eps), delta_B(eps)): a profile is the convex
   conjugate of the trade-off function up to a change of variable, the conjugate of a minimum is the
   maximum of the conjugates, and a function and its biconjugate have one conjugate. Both profiles
   are closed forms here (`step_profile`).
4. Composition: C_q(G_mu) is symmetric (it equals its own inverse), so a mechanism whose every step
   is C_q(G_mu)-DP is (C_q(G_mu) composed T times)-DP under adaptive composition, whichever direction
   each step's data take it (DRS Thm 3.2); a pair of one direction composed, or each direction
   composed apart, would not be (Lebeda, Regehr, Kamath & Steinke 2024).
5. Discretisation: the step's PLD is built from its profile on a grid eps_i = i * d by pessimistic
   connect-the-dots (Doroshenko, Ghazi, Kamath, Kumar & Manurangsi 2022, Alg. 1, fixed gap), whose profile
   is >= the step's at every eps; the tail beyond the grid goes to the infinite loss. It is composed T times
   by FFT in a Chernoff window and epsilon read at delta: dp_accounting's algorithm written vectorised
   (`step_pmf`, `compose`, `epsilon_for_delta`; equal to dp_accounting's to 1e-6, tested). Every
   approximation raises epsilon.
6. Full batch (q = 1): T steps of the Gaussian compose to a Gaussian of noise multiplier z / sqrt(T),
   whose epsilon is the analytic Gaussian mechanism's (Balle & Wang 2018): exact.

What would break it: a lot that is not a uniform draw of exactly m rows independent of the data
(Poisson sampling is analysed under add/remove, `PoissonSampledDpEvent`); a row drawn twice in a lot;
noise that is not Gaussian with the stated sd (rounding it to a grid, `release.randomness`); a
per-row contribution above L; a step count or q other than the trainer's.

`step_rdp` is the Renyi divergence of the symmetrised pair itself, for the places that need RDP (the
release's random stopping, Papernot & Steinke 2022): a pair that dominates the step in the
hockey-stick sense dominates it in every f-divergence, so this is a valid RDP of the step.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import special

# The PLD's grid of privacy losses: a share of one step's loss spread s = q sqrt(e^{mu^2} - 1) (the sd of
# pair A's likelihood ratio), within [MIN_, MAX_DISCRETIZATION]: a fixed grid is far too coarse where a step
# moves the loss by less than it (halving 1e-4 moved epsilon 22 % at lot 12, z = 11.7, 19,888 steps) and
# needlessly fine where steps are large. Halving it moves epsilon < 1 % (tested on random settings).
STEPS_PER_SPREAD = 8
MIN_DISCRETIZATION, MAX_DISCRETIZATION = 1e-7, 2e-3
TAIL_SD = 10.0             # the step's grid spans the losses of x in [-(TAIL_SD + mu), TAIL_SD + mu]
MIN_NOISE = 0.05   # below, one step's losses reach float64's exp limit: the accountant takes WBK19's bound
MAX_NOISE = 1e6    # above, z is capped: epsilon falls with z, so this only raises it (it is 0.0 there anyway)
TAIL_MASS_TRUNCATION = 1e-15   # dp_accounting's default: each composition's dropped tails go to the infinite loss
_SQRT_HALF_PI = math.sqrt(math.pi / 2)


def _mills(x):
    """Phi-bar(x) / phi(x), computed without underflow."""
    return _SQRT_HALF_PI * special.erfcx(np.asarray(x, float) / math.sqrt(2))


def _log_phi(x):
    return -0.5 * np.square(x) - 0.5 * math.log(2 * math.pi)


def _x_of_loss(q: float, mu: float, eps):
    """The x at which pair A's loss log(1 - q + q e^{mu x - mu^2/2}) equals eps (where e^eps > 1 - q)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return (np.log(np.expm1(eps) + q) - math.log(q) + mu * mu / 2) / mu


def delta_pair_a(q: float, mu: float, eps) -> np.ndarray:
    """H_{e^eps}(P || Q) for P = (1 - q) N(0, 1) + q N(mu, 1), Q = N(0, 1), at each eps.

    The loss is increasing in x; above x(eps) it exceeds eps, so delta = P[x > x(eps)] - e^eps Q[x > x(eps)]
    = q [Phi-bar(x - mu) - e^{mu x - mu^2/2} Phi-bar(x)] = q phi(x - mu) [R(x - mu) - R(x)], R the Mills ratio."""
    eps = np.asarray(eps, float)
    out = -np.expm1(eps)                      # below log(1 - q) the loss always exceeds eps: 1 - e^eps
    inside = np.expm1(eps) + q > 0
    x = _x_of_loss(q, mu, np.where(inside, eps, 0.0))
    with np.errstate(over="ignore", invalid="ignore"):
        # the Mills-ratio form where x >= 0 (no cancellation in the far tail), the plain one where x < 0
        tail = q * np.exp(_log_phi(x - mu)) * (_mills(x - mu) - _mills(np.abs(x)))
        plain = q * special.ndtr(mu - x) - (np.expm1(eps) + q) * special.ndtr(-x)
    value = np.where(x >= 0, tail, plain)
    return np.where(inside, np.clip(value, 0.0, 1.0), out)


def delta_pair_b(q: float, mu: float, eps) -> np.ndarray:
    """H_{e^eps}(Q || P), the other direction: the loss is log Q/P = -(pair A's loss), which exceeds eps
    where pair A's is below -eps, i.e. x < y = x(-eps); delta = Phi(y) - e^eps [(1 - q) Phi(y) + q Phi(y - mu)]
    = q e^eps phi(y - mu) [R(-y) - R(mu - y)]; zero where e^-eps <= 1 - q (the loss never exceeds eps)."""
    eps = np.asarray(eps, float)
    inside = np.expm1(-eps) + q > 0
    y = _x_of_loss(q, mu, np.where(inside, -eps, 0.0))
    with np.errstate(over="ignore", invalid="ignore"):
        tail = q * np.exp(eps + _log_phi(y - mu)) * (_mills(np.abs(y)) - _mills(mu - y))
        plain = special.ndtr(y) - np.exp(eps) * ((1 - q) * special.ndtr(y) + q * special.ndtr(y - mu))
    value = np.where(y <= 0, tail, plain)
    return np.where(inside, np.clip(value, 0.0, 1.0), 0.0)


def step_profile(q: float, z: float, eps) -> np.ndarray:
    """One step's privacy profile: max of the two directions' (the symmetrised pair's, point 3 above)."""
    mu = 1.0 / z
    return np.maximum(delta_pair_a(q, mu, eps), delta_pair_b(q, mu, eps))


def discretization(q: float, z: float) -> float:
    spread = q * math.sqrt(math.expm1(min(1.0 / z**2, 700.0)))
    return float(np.clip(spread / STEPS_PER_SPREAD, MIN_DISCRETIZATION, MAX_DISCRETIZATION))


def loss_range(q: float, z: float) -> tuple[float, float]:
    """The step's losses kept on the grid: pair A's loss at x = TAIL_SD + mu and its mirror (beyond it
    the profile's mass goes to the infinite loss)."""
    mu = 1.0 / z
    x = TAIL_SD + mu
    top = float(np.logaddexp(math.log1p(-q), math.log(q) + mu * x - mu * mu / 2)) if q < 1 else mu * x - mu * mu / 2
    return -top, top


@dataclass(frozen=True, eq=False)   # hashed by identity: `_log_mgf` caches per step
class LossDistribution:
    """A discrete privacy loss distribution: mass probs[i] at loss (lower + i) * grid, and `infinity` at +inf."""
    lower: int
    probs: np.ndarray
    infinity: float
    grid: float

    def losses(self) -> np.ndarray:
        return (self.lower + np.arange(self.probs.size)) * self.grid


@functools.lru_cache(maxsize=64)
def step_pmf(q: float, z: float, grid: float) -> LossDistribution:
    """One step's PLD: pessimistic connect-the-dots on the symmetrised profile (Doroshenko et al. 2022 Alg. 1 with
    a fixed gap, as dp_accounting's `create_pmf_pessimistic_connect_dots_fixed_gap` computes it, tested equal),
    then its tails trimmed pessimistically: the top TRIM of mass to the infinite loss, the bottom TRIM onto the
    lowest loss kept (raising a loss only raises every hockey-stick divergence)."""
    low, high = loss_range(q, z)
    lower, upper = math.floor(low / grid), math.ceil(high / grid)
    deltas = step_profile(q, z, np.arange(lower, upper + 1) * grid)
    if not np.isfinite(deltas).all():
        raise ArithmeticError(f"the step's privacy profile is not finite at q = {q}, z = {z}")
    deltas = np.minimum.accumulate(np.clip(deltas, 0.0, 1.0))   # a profile never rises (rounding can)
    steps = np.diff(deltas)
    probs = np.empty_like(deltas)
    probs[0] = 1 - deltas[0] + steps[0] / math.expm1(grid)
    probs[1:-1] = (steps[1:] - steps[:-1] * math.exp(grid)) / math.expm1(grid)
    probs[-1] = steps[-1] / math.expm1(-grid)
    probs = np.maximum(probs, 0.0)
    infinity = float(deltas[-1])
    top = np.cumsum(probs[::-1])[::-1]          # mass at or above each loss
    keep_to = int(np.searchsorted(-top, -TRIM, side="left"))   # first index whose mass above is <= TRIM
    keep_to = max(keep_to, 1)
    infinity += float(probs[keep_to:].sum())
    bottom = np.cumsum(probs[:keep_to])
    keep_from = min(int(np.searchsorted(bottom, TRIM, side="right")), keep_to - 1)
    kept = probs[keep_from:keep_to].copy()
    kept[0] += float(probs[:keep_from].sum())
    return LossDistribution(lower + keep_from, kept, infinity, grid)


CHERNOFF_ORDERS = (-20, -12, -8, -5, -3, -2, -1, 1, 2, 3, 5, 8, 12, 20)          # per grid length of the support
CHERNOFF_LOSS_ORDERS = (-32.0, -8.0, -2.0, -0.5, 0.5, 2.0, 8.0, 32.0)           # per unit of loss
TRIM = 1e-20   # each tail of one step's distribution trimmed (pessimistically) up to this mass


def compose(step: LossDistribution, times: int, tail: float = TAIL_MASS_TRUNCATION) -> LossDistribution:
    """`step` composed `times` times by FFT, as dp_accounting's `self_compose` does it (tested equal): the window
    from Chernoff bounds leaves at most `tail` outside, which wraps into it and is added to the infinite loss."""
    from scipy import fft

    probs, size = step.probs, step.probs.size
    orders, log_mgf = _log_mgf(step)
    lower, upper = _window(orders, log_mgf, size, int(times), tail)
    fast = fft.next_fast_len(max(size, upper - lower + 1))
    transform = fft.rfft(probs, fast)   # a real input: half the spectrum
    # the power in polar form: one log and one exp per entry instead of complex pow's
    full = fft.irfft(np.exp(times * np.log(np.abs(transform)) + 1j * times * np.angle(transform)), fast)
    composed = np.maximum(np.roll(full, -lower)[:upper - lower + 1], 0.0)
    infinity = tail - math.expm1(times * math.log1p(-step.infinity))
    return LossDistribution(step.lower * int(times) + lower, composed, infinity, step.grid)


@functools.lru_cache(maxsize=64)
def _log_mgf(step: LossDistribution) -> tuple[np.ndarray, np.ndarray]:
    """The step's log moment generating function in grid units, at the orders the windows' Chernoff bounds use."""
    probs, size = step.probs, step.probs.size
    # Chernoff bounds at CHERNOFF_ORDERS / size (dp_accounting: every integer from -20 to 20): any order gives a
    # valid bound, the best of these a window within a few per cent of the best of all 40
    orders = np.concatenate([np.asarray(CHERNOFF_ORDERS) / size, np.asarray(CHERNOFF_LOSS_ORDERS) * step.grid])
    nonzero = probs > 0
    index = np.flatnonzero(nonzero)
    log_probs = np.log(probs[nonzero])
    return orders, np.array([special.logsumexp(o * index + log_probs) for o in orders])


def _window(orders: np.ndarray, log_mgf: np.ndarray, size: int, times: int, tail: float) -> tuple[int, int]:
    """The grid indices (from `times` x the step's lowest) outside which the composition has at most `tail`."""
    bounds = (times * log_mgf + math.log(2 / tail)) / orders
    finite = np.isfinite(bounds)
    upper = min([(size - 1) * times] + [math.ceil(b) for b in bounds[finite & (orders > 0)]])
    lower = max([0] + [math.floor(b) for b in bounds[finite & (orders < 0)]])
    return lower, upper


def epsilon_for_delta(pld: LossDistribution, delta: float) -> float:
    """The least epsilon >= 0 at which the distribution's hockey-stick divergence is <= delta (vectorised;
    dp_accounting's `get_epsilon_for_delta` loops in Python, tested equal)."""
    if pld.infinity > delta:
        return math.inf
    losses = pld.losses()
    first = int(np.searchsorted(losses, -pld.grid, side="left"))   # losses below -grid never matter for eps >= 0
    losses, probs = losses[first:], pld.probs[first:]
    if not losses.size:
        return 0.0
    above = pld.infinity + np.cumsum(probs[::-1])[::-1]               # U_j: mass at losses >= losses[j], and inf
    with np.errstate(divide="ignore"):                                  # log L_j, L_j = sum of p e^-loss over them
        log_weighted = np.logaddexp.accumulate((np.log(probs) - losses)[::-1])[::-1]
    # delta at eps = losses[k]: the losses strictly above it
    next_above = np.append(above[1:], pld.infinity)
    next_log_weighted = np.append(log_weighted[1:], -np.inf)
    at_loss = next_above - np.exp(losses + next_log_weighted)
    k = int(np.argmax(at_loss <= delta)) if (at_loss <= delta).any() else losses.size - 1
    if above[k] <= delta:
        return 0.0
    if not np.isfinite(log_weighted[k]):
        return max(0.0, float(losses[k]))
    return max(0.0, math.log(above[k] - delta) - float(log_weighted[k]))


@functools.lru_cache(maxsize=4096)
def epsilon(q: float, z: float, steps: int, delta: float, grid: float | None = None) -> float:
    """epsilon at delta of `steps` steps of sampling ratio q (m/n) and noise multiplier z (`grid`: the loss
    grid, `discretization(q, z)` by default)."""
    if steps == 0 or q == 0:
        return 0.0
    if not z > 0:
        return math.inf
    if q >= 1:
        from . import gaussian
        return gaussian.epsilon(z / math.sqrt(steps), 1.0, delta)
    if z < MIN_NOISE:
        raise ValueError(f"the PLD of noise multiplier {z} < {MIN_NOISE} overflows; the accountant uses WBK19's bound there")
    z = min(z, MAX_NOISE)
    return epsilon_for_delta(compose(step_pmf(q, z, grid or discretization(q, z)), int(steps)), delta)


# --- RDP of the symmetrised pair ---------------------------------------------------------------------

def step_rdp(q: float, z: float, orders) -> np.ndarray:
    """The symmetrised pair's Renyi divergence at each order: D = log E / (alpha - 1) with

    E(alpha) = int_{x > mu/2} phi(x) [r(x)^alpha + r(x)^(1 - alpha)] dx + 1 - P[x > mu/2] - Phi-bar(mu/2),
    r(x) = 1 - q + q e^{mu x - mu^2/2}, P = (1 - q) N(0, 1) + q N(mu, 1): pair A's losses above 0 (where the
    symmetrised profile is pair A's, tested), their mirror images below 0 (the pair is symmetric) and the
    rest of the mass at loss 0. At integer orders the r^alpha part is a binomial sum of positive closed-form
    terms; the r^(1 - alpha) part (between 0 and phi) is integrated by QUADPACK and raised by its error
    estimate. Fractional orders interpolate log E linearly between integers (log E is convex in alpha, so
    this is an upper bound, WBK19 Cor. 10)."""
    orders = np.asarray(orders, dtype=float)
    if not z > 0:
        return np.full(len(orders), np.inf)
    if q == 0:
        return np.zeros(len(orders))
    return _step_rdp(float(q), float(min(z, MAX_NOISE)), tuple(float(a) for a in orders))


@functools.lru_cache(maxsize=1024)
def _step_rdp(q: float, z: float, orders: tuple) -> np.ndarray:
    mu = 1.0 / z
    orders = np.asarray(orders)
    lo, hi = np.floor(orders).astype(int), np.ceil(orders).astype(int)
    log_e = {int(a): (_log_e(q, mu, int(a)) if a >= 2 else 0.0) for a in np.union1d(lo, hi)}
    out = np.zeros(len(orders))
    for i, (a, b) in enumerate(zip(lo, hi)):
        if orders[i] > 1:
            w = orders[i] - a
            out[i] = ((1 - w) * log_e[int(a)] + w * log_e[int(b)]) / (orders[i] - 1)
    out = np.maximum(out, 0.0) * (1 + RDP_SAFETY)
    out.flags.writeable = False
    return out


RDP_SAFETY = 1e-9   # relative margin for rounding in the sums


def _log_e(q: float, mu: float, alpha: int) -> float:
    from scipy import integrate

    c = mu / 2
    k = np.arange(alpha + 1)
    log_binom = special.gammaln(alpha + 1) - special.gammaln(k + 1) - special.gammaln(alpha - k + 1)
    log_keep = math.log1p(-q) if q < 1 else -np.inf
    with np.errstate(invalid="ignore"):
        log_terms = log_binom + (alpha - k) * log_keep + k * math.log(q) + k * (k - 1) * mu * mu / 2 + special.log_ndtr(k * mu - c)
    log_terms = np.where(k == alpha, log_terms[-1] if q < 1 else (log_binom + k * math.log(q) + k * (k - 1) * mu * mu / 2
                                                                    + special.log_ndtr(k * mu - c))[-1], log_terms)
    log_upper = special.logsumexp(log_terms)                        # int_{x > c} phi r^alpha, closed form

    def lower_integrand(x):                                          # phi r^(1 - alpha), in [0, phi]
        log_r = np.logaddexp(log_keep, math.log(q) + mu * x - mu * mu / 2)
        return math.exp(_log_phi(x) + (1 - alpha) * log_r)

    lower, error = integrate.quad(lower_integrand, c, c + 40.0, epsabs=1e-15, epsrel=1e-12, limit=200)
    lower += abs(error) + special.ndtr(-c - 40.0)                    # its error estimate and the tail beyond
    above = (1 - q) * special.ndtr(-c) + q * special.ndtr(mu - c)   # P[x > c]
    rest = max(0.0, 1.0 - above - special.ndtr(-c))
    return float(np.logaddexp(log_upper, math.log(lower + rest)))
