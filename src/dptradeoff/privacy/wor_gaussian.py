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
"""
from __future__ import annotations

import math

import numpy as np
from scipy import special

SAFETY = 1e-9          # relative margin on the RDP (quadrature rounding, measured: < 1e-10)
MOMENTS_FROM_SIGMA = 0.5
TINY_SIGMA, HUGE_SIGMA = 1e-100, 1e100
EXACT_UP_TO = 256      # above, only the min's second argument (dp_accounting's choice: valid, looser, cheap)
_STEP = 0.01           # quadrature step in z; each hump has width >= ~0.3
_HALF_WIDTH = 12.0     # integrate each hump over its peak +- this (the integrand falls by > e^{-60})


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
    integers = sorted({int(math.floor(a)) for a in orders} | {int(math.ceil(a)) for a in orders})
    log_a = _log_a(q, sigma, [a for a in integers if a >= 2])
    log_a[1] = 0.0
    out = np.empty(len(orders))
    for n, a in enumerate(orders):
        lo, hi = int(math.floor(a)), int(math.ceil(a))
        if a == 1:
            out[n] = 0.0   # the RDP at order 1 is a limit we never use; Thm 27 is for alpha >= 2
            continue
        t = a - lo
        out[n] = ((1 - t) * log_a[lo] + t * log_a[hi]) / (a - 1)
    return out * (1 + SAFETY)


def _log_a(q: float, sigma: float, alphas: list[int]) -> dict[int, float]:
    """log A of Thm 27 for each integer alpha >= 2."""
    if not alphas:
        return {}
    top = min(max(alphas), EXACT_UP_TO)
    # Below sigma = 0.5 the min's second argument is the smaller one at every j <= 256 (measured: up to
    # sigma = 1), so the moments, whose quadrature would span z up to 2m/sigma, are not computed.
    with_moments = sigma >= MOMENTS_FROM_SIGMA
    log_d = log_even_differences(sigma, (top + 1) // 2) if with_moments else None   # log D_{2m}
    eps2 = 1.0 / sigma**2
    out = {}
    for alpha in alphas:
        j = np.arange(3, alpha + 1)
        log_binom = special.gammaln(alpha + 1) - special.gammaln(j + 1) - special.gammaln(alpha - j + 1)
        plain = math.log(2.0) + (j - 1) * j / (2 * sigma**2)
        if with_moments and alpha <= EXACT_UP_TO:
            moments = math.log(4.0) + 0.5 * (log_d[j // 2] + log_d[(j + 1) // 2])
            plain = np.minimum(moments, plain)
        terms = j * math.log(q) + log_binom + plain
        second = 2 * math.log(q) + math.log(alpha * (alpha - 1) / 2) + min(
            math.log(4.0) + _log_expm1(eps2), math.log(2.0) + eps2)
        # log(1 + S) as logaddexp(0, log S): accurate for S near 0 (A - 1 can be 1e-10)
        out[alpha] = float(np.logaddexp(0.0, special.logsumexp(np.concatenate([[second], terms]))))
    return out


def log_even_differences(sigma: float, m_max: int) -> np.ndarray:
    """log E[(X - 1)^{2m}] for m = 0..m_max, X = exp(Z/sigma - 1/(2 sigma^2)): the even forward
    differences D_{2m} of l -> e^{(l-1) l / (2 sigma^2)} at 0."""
    m = np.arange(1, m_max + 1, dtype=float)[:, None]
    z0 = 1.0 / (2 * sigma)          # where X = 1

    def log_integrand(z):
        u = z / sigma - 1.0 / (2 * sigma**2)
        with np.errstate(divide="ignore", over="ignore"):   # log|e^u - 1|, exact on both sides of u = 0
            log_abs = np.where(u > 0, u + np.log(-np.expm1(-np.abs(u))), np.log(-np.expm1(-np.abs(u))))
        return 2 * m * log_abs - 0.5 * z**2

    # Peaks: on each side of z0 the log-integrand is concave in z; locate its maximum on a coarse
    # grid, then integrate a fine grid around it.
    # the right peak sits below 2m/sigma + sqrt(2m) + z0, the left one above min(0, z0) - sqrt(2m)
    reach = math.sqrt(2 * m_max) + 2 * m_max / sigma + 15
    coarse_right = np.linspace(z0 + 1e-6, z0 + reach, int(reach / 0.25) + 2)
    left_end = min(0.0, z0) - math.sqrt(2 * m_max) - 15
    coarse_left = np.linspace(left_end, z0 - 1e-6, int((z0 - left_end) / 0.25) + 2)
    total = []
    offsets = np.arange(-round(_HALF_WIDTH / _STEP), round(_HALF_WIDTH / _STEP) + 1) * _STEP
    for coarse, side in ((coarse_left, -1), (coarse_right, 1)):
        peaks = coarse[np.argmax(log_integrand(coarse[None, :]), axis=1)]
        # both humps on one lattice z0 + k h: together they are one trapezoid rule over the line
        peaks = z0 + np.round((peaks - z0) / _STEP) * _STEP
        z = peaks[:, None] + offsets[None, :]
        # keep each hump on its own side of z0 so the two humps are not counted twice
        values = np.where(side * (z - z0) > 0, log_integrand(z), -np.inf)
        total.append(special.logsumexp(values, axis=1) + math.log(_STEP) - 0.5 * math.log(2 * math.pi))
    out = np.empty(m_max + 1)
    out[0] = 0.0
    out[1:] = np.logaddexp(total[0], total[1])
    out[1] = _log_expm1(1.0 / sigma**2)   # D_2 = Var X = e^{1/sigma^2} - 1, exactly
    return out


def _log_expm1(x: float) -> float:
    """log(e^x - 1) for x > 0, without overflow."""
    return x + math.log(-math.expm1(-x)) if x > 1 else math.log(math.expm1(x))
