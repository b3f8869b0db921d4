"""RDP of the Gaussian mechanism under subsampling without replacement (replace-one neighbours):
Wang, Balle, Kasiviswanathan 2019 (WBK19) Thm 27, evaluated without cancellation.

For an integer order alpha >= 2, sampling ratio q and noise multiplier sigma, Thm 27 bounds one
step's RDP by (1/(alpha - 1)) log A with

  A = 1 + q^2 C(alpha, 2) min(4 (e^{eps(2)} - 1), 2 e^{eps(2)})
        + sum_{j=3}^{alpha} q^j C(alpha, j) min(4 sqrt(D_{2 floor(j/2)} D_{2 ceil(j/2)}), 2 e^{(j-1) eps(j)}),

eps(l) = l / (2 sigma^2) the Gaussian's RDP, and D_k the k-th forward difference at 0 of
l -> e^{(l-1) eps(l)}. dp_accounting and autodp compute D_k as alternating sums in float64,
which cancel catastrophically at high orders: measured against 300-digit arithmetic they are
up to 24x too large (conservative; it is the 'floor' that stops calibrating small epsilons at
small n) and sometimes too small by up to 1.5e-5 relative (an understated epsilon).

Here D_k is computed as what it is: e^{(l-1) l/(2 sigma^2)} = E[X^l] for the lognormal
X = exp(Z/sigma - 1/(2 sigma^2)), Z ~ N(0, 1), so D_k = E[(X - 1)^k]. Thm 27 needs only even k,
where the integrand (X - 1)^k phi(z) is non-negative: its logarithm is integrated by the
trapezoid rule on fine grids around its (at most two) humps, with no cancellation at all. The
result is raised by a relative 1e-9 to cover the quadrature's rounding; tests check it against
Thm 27 in exact arithmetic. Above order 256 the forward-difference term is dropped (min(a, b) <= b),
as dp_accounting does there. Non-integer orders interpolate log A between the neighbouring
integers (WBK19 Cor. 10), as dp_accounting does.

The quadrature, in detail. On each side of z0 = 1/(2 sigma) (where X = 1) the log-integrand
f(z) = 2m log|X - 1| - z^2/2 has f'' <= -1: it has one peak, found by Newton's method on f'
(`_peaks`), and falls away from it at least as fast as the standard normal's logarithm, so at
+-12 from the peak (rounded to the lattice) it is below e^{-70} of its maximum. Both humps lie on
one lattice z0 + k h, so together they are one trapezoid rule over the line, and log|X - 1| at
each lattice point is shared by every moment. The humps are smooth, with widths
1/sqrt(-f''(peak)) of 0.45 or more (sigma >= 0.5, m <= 128, measured), so at h = 0.05 the
trapezoid rule's error (about e^{-2 pi^2 (0.45/h)^2}) is far below float64 rounding; tests check
the moments against a ten times finer step and a wider window. Every moment is computed the same
way whichever others are asked for, and only those the orders asked for need.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import special

SAFETY = 1e-9          # relative margin on the RDP (quadrature rounding, measured: < 1e-10)
MOMENTS_FROM_SIGMA = 0.5
TINY_SIGMA, HUGE_SIGMA = 1e-100, 1e100
EXACT_UP_TO = 256      # above, only the min's second argument (dp_accounting's choice: valid, looser, cheap)
_STEP = 0.05           # quadrature step in z; each hump has width >= 0.45
_HALF_WIDTH = 12.0     # integrate each hump over its peak +- this (the integrand falls by > e^{-70})


def rdp(q: float, sigma: float, orders) -> np.ndarray:
    """One step's RDP at each order (>= 1); inf where sigma = 0."""
    orders = np.asarray(orders, dtype=float)
    if not sigma > TINY_SIGMA:      # (also NaN) 1/sigma^2 would overflow: inf is a valid bound
        return np.full(len(orders), np.inf)
    sigma = min(sigma, HUGE_SIGMA)  # RDP decreases in sigma, so capping it only raises the bound
    if q == 0:
        return np.zeros(len(orders))
    if q >= 1:
        return orders / (2 * sigma**2)
    lo, hi = np.floor(orders).astype(int), np.ceil(orders).astype(int)
    integers = np.union1d(lo, hi)
    log_a = np.zeros(integers.max(initial=1) + 1)   # log A(1) = 0; only the entries at `integers` are read
    log_a[integers[integers >= 2]] = _log_a(q, sigma, integers[integers >= 2])
    t = orders - lo
    with np.errstate(invalid="ignore"):   # order 1: 0/0
        out = ((1 - t) * log_a[lo] + t * log_a[hi]) / (orders - 1)
    # the RDP at order 1 is a limit we never use; Thm 27 is for alpha >= 2
    return np.where(orders == 1, 0.0, out) * (1 + SAFETY)


def rdp_over_ratios(ratios, sigma: float, orders) -> np.ndarray:
    """One step's RDP at each sampling ratio (rows) and order (columns): `rdp` for many ratios at one
    sigma, the moments (the costly part, which depends on sigma only) computed once. Equal to `rdp`
    row by row (tested)."""
    ratios = np.asarray(ratios, dtype=float)
    return np.stack([rdp(q, sigma, orders) for q in ratios]) if not sigma > TINY_SIGMA or not (
        (ratios > 0) & (ratios < 1)).all() else _rdp_inside(ratios, min(sigma, HUGE_SIGMA), np.asarray(orders, float))


def _rdp_inside(ratios: np.ndarray, sigma: float, orders: np.ndarray) -> np.ndarray:
    """`rdp` for ratios strictly between 0 and 1, vectorised over the ratios (the same operations as
    `rdp` and `_log_a`, with the ratio as a leading axis)."""
    lo, hi = np.floor(orders).astype(int), np.ceil(orders).astype(int)
    integers = np.union1d(lo, hi)
    alphas = integers[integers >= 2]
    log_a = np.zeros((len(ratios), integers.max(initial=1) + 1))
    exact = alphas <= EXACT_UP_TO
    log_d = (log_even_differences(sigma, (int(alphas[exact].max()) + 1) // 2)
             if sigma >= MOMENTS_FROM_SIGMA and exact.any() else None)
    eps2 = 1.0 / sigma**2
    second_min = min(math.log(4.0) + _log_expm1(eps2), math.log(2.0) + eps2)
    log_q = np.log(ratios)[:, None, None]
    values = np.empty((len(ratios), len(alphas)))
    for block, moments in ((exact, log_d), (~exact, None)):
        if not block.any():
            continue
        alpha = alphas[block][:, None]
        j = np.arange(3, alpha.max() + 1)
        plain = math.log(2.0) + (j - 1) * j / (2 * sigma**2)
        if moments is not None:
            plain = np.minimum(math.log(4.0) + 0.5 * (moments[j // 2] + moments[(j + 1) // 2]), plain)
        log_factorial = special.gammaln(np.arange(1.0, alpha.max() + 2))
        log_binom = log_factorial[alpha] - log_factorial[j] - log_factorial[np.maximum(alpha - j, 0)]
        terms = np.where(j <= alpha, j * log_q + (log_binom + plain), -np.inf)          # (Q, A, J)
        second = 2 * log_q + (np.log(alpha * (alpha - 1) / 2) + second_min)            # (Q, A, 1)
        both = np.concatenate([second, terms], axis=2)
        top = both.max(axis=2)
        values[:, block] = np.logaddexp(0.0, top + np.log(np.exp(both - top[..., None]).sum(axis=2)))
    log_a[:, alphas] = values
    t = orders - lo
    with np.errstate(invalid="ignore"):
        out = ((1 - t) * log_a[:, lo] + t * log_a[:, hi]) / (orders - 1)
    return np.where(orders == 1, 0.0, out) * (1 + SAFETY)


def _log_a(q: float, sigma: float, alphas) -> np.ndarray:
    """log A of Thm 27 at each integer alpha >= 2 (one matrix of terms j = 3..alpha per block of orders)."""
    alphas = np.asarray(alphas, dtype=int)
    out = np.empty(len(alphas))
    exact = alphas <= EXACT_UP_TO
    # Below sigma = 0.5 the min's second argument is the smaller one at every j <= 256 (measured: up to
    # sigma = 1), so the moments, whose quadrature would span z up to 2m/sigma, are not computed.
    log_d = (log_even_differences(sigma, (int(alphas[exact].max()) + 1) // 2)   # log D_{2m}
             if sigma >= MOMENTS_FROM_SIGMA and exact.any() else None)
    eps2 = 1.0 / sigma**2
    second_min = min(math.log(4.0) + _log_expm1(eps2), math.log(2.0) + eps2)
    for block, moments in ((exact, log_d), (~exact, None)):
        if not block.any():
            continue
        alpha = alphas[block][:, None]
        j = np.arange(3, alpha.max() + 1)
        plain = math.log(2.0) + (j - 1) * j / (2 * sigma**2)
        if moments is not None:
            plain = np.minimum(math.log(4.0) + 0.5 * (moments[j // 2] + moments[(j + 1) // 2]), plain)
        log_factorial = special.gammaln(np.arange(1.0, alpha.max() + 2))   # log k! for k = 0..max alpha
        log_binom = log_factorial[alpha] - log_factorial[j] - log_factorial[np.maximum(alpha - j, 0)]
        terms = np.where(j <= alpha, j * math.log(q) + log_binom + plain, -np.inf)   # j > alpha: no term
        second = 2 * math.log(q) + np.log(alpha * (alpha - 1) / 2) + second_min
        # log(1 + S) as logaddexp(0, log S): accurate for S near 0 (A - 1 can be 1e-10)
        out[block] = np.logaddexp(0.0, _logsumexp_rows(np.concatenate([second, terms], axis=1)))
    return out


def log_even_differences(sigma: float, m_max: int) -> np.ndarray:
    """log E[(X - 1)^{2m}] for m = 0..m_max, X = exp(Z/sigma - 1/(2 sigma^2)): the even forward
    differences D_{2m} of l -> e^{(l-1) l / (2 sigma^2)} at 0."""
    m = np.arange(1, m_max + 1, dtype=float)
    z0 = 1.0 / (2 * sigma)          # where X = 1
    half = round(_HALF_WIDTH / _STEP)
    # each hump's peak, as a point z0 + k h of the lattice shared by both humps and all moments
    peaks = [np.round((peak - z0) / _STEP).astype(np.int64) for peak in _peaks(sigma, m)]
    first = int(peaks[0].min()) - half
    k = np.arange(first, int(peaks[1].max()) + half + 1)
    u = k * (_STEP / sigma)         # log X at z0 + k h
    with np.errstate(divide="ignore"):   # log|e^u - 1|, exact on both sides of u = 0 (-inf at u = 0)
        log_abs = np.log(-np.expm1(-np.abs(u))) + np.maximum(u, 0.0)
    log_gauss = np.lib.stride_tricks.sliding_window_view(-0.5 * (z0 + k * _STEP) ** 2, 2 * half + 1)
    total = []
    for peak, side in zip(peaks, (-1, 1)):
        # each hump on its own side of z0 only, so the two humps are not counted twice
        own_side = np.lib.stride_tricks.sliding_window_view(np.where(side * k > 0, log_abs, -np.inf), 2 * half + 1)
        window = peak - half - first   # the window z0 + (peak + [-half, half]) h
        values = 2 * m[:, None] * own_side[window] + log_gauss[window]
        total.append(_logsumexp_rows(values) + math.log(_STEP) - 0.5 * math.log(2 * math.pi))
    out = np.empty(m_max + 1)
    out[0] = 0.0
    out[1:] = np.logaddexp(total[0], total[1])
    out[1] = _log_expm1(1.0 / sigma**2)   # D_2 = Var X = e^{1/sigma^2} - 1, exactly
    return out


def _peaks(sigma: float, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where f(z) = 2m log|X - 1| - z^2/2 peaks on each side of z0: (left of z0, right of z0).

    f' = -(2m/sigma) / expm1(-u) - z with u = (z - z0)/sigma falls from +inf to -inf on each side,
    between -sqrt(2m) - 15 and z0 on the left, z0 and z0 + sqrt(2m) + 2m/sigma + 15 on the
    right. It is concave on the left and convex on the right, so Newton's method converges
    monotonically from a start above the left root or below the right one: on the left
    -(the root of w^2 + (z0 + 2m/sigma) w = 2m (1 - z0/sigma)), on the right max(2m/sigma, the root
    of z (z - z0) = 2m) (both from 1 - e^{-|u|} <= |u|, and e^u >= 1 + u on the left). A step that
    rounding pushes out of the bracket of the last points known on either side of the root
    bisects it instead."""
    z0 = 1.0 / (2 * sigma)
    reach = np.sqrt(2 * m) + 15
    b, c = z0 + 2 * m / sigma, 2 * m * (1 - z0 / sigma)
    left = -0.5 * (np.sqrt(b**2 + 4 * np.maximum(c, 0.0)) - b)
    right = np.maximum(2 * m / sigma, 0.5 * (z0 + np.sqrt(z0**2 + 8 * m)))
    z = np.concatenate([left, right])
    lo = np.concatenate([-reach, np.full(len(m), z0)])
    hi = np.concatenate([np.full(len(m), z0), z0 + reach + 2 * m / sigma])
    scale = np.concatenate([m, m]) * (-2 / sigma)
    for _ in range(100):
        e = np.expm1((z0 - z) / sigma)
        slope = scale / e - z
        newton = z + slope / (1 - scale * (1 + e) / (sigma * e * e))
        lo, hi = np.where(slope > 0, z, lo), np.where(slope < 0, z, hi)
        inside = (newton >= lo) & (newton <= hi)
        step = np.where(inside, newton, 0.5 * (lo + hi))
        converged = np.abs(step - z) <= 1e-9 * (1 + np.abs(z))
        z = step
        if converged.all():
            return z[:len(m)], z[len(m):]
    raise ArithmeticError(f"no peak of the moment integrand found at sigma = {sigma}")


def _logsumexp_rows(values: np.ndarray) -> np.ndarray:
    """log sum exp along each row (each row has a finite entry)."""
    top = values.max(axis=1)
    return top + np.log(np.exp(values - top[:, None]).sum(axis=1))


def _log_expm1(x: float) -> float:
    """log(e^x - 1) for x > 0, without overflow."""
    return x + math.log(-math.expm1(-x)) if x > 1 else math.log(math.expm1(x))
