"""The DP-SGD privacy oracle as it was before the fast evaluation (commit 51426ce), frozen: the
reference that tests/test_privacy.py compares `dpsgd.epsilon` with (to 1e-9 relative) and that
benchmarks/privacy_oracle.py times side by side. Every RDP order of ORDERS (plus HIGH_ORDERS when
dp_accounting's optimum over ORDERS is >= 96) evaluated in full, each Thm 27 moment by a trapezoid
rule of step 0.01 whose peaks come from a coarse grid, one Python loop iteration per order.
Not used by the pipeline; do not edit except to retire it."""
from __future__ import annotations

import math

import numpy as np
from dp_accounting.rdp import rdp_privacy_accountant as rdp_accountant
from scipy import special

from dptradeoff.privacy.dpsgd import steps

ORDERS = (1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0,
          14.0, 16.0, 18.0, 20.0, 24.0, 28.0, 32.0, 40.0, 48.0, 56.0, 64.0, 80.0, 96.0, 128.0, 512.0, 1024.0)
HIGH_ORDERS = (160.0, 192.0, 256.0, 384.0)
ALL_ORDERS = tuple(sorted(ORDERS + HIGH_ORDERS))

SAFETY = 1e-9
MOMENTS_FROM_SIGMA = 0.5
TINY_SIGMA, HUGE_SIGMA = 1e-100, 1e100
EXACT_UP_TO = 256
_STEP = 0.01
_HALF_WIDTH = 12.0


def epsilon(n: int, lot_size: int, epochs: int, noise: float, delta: float, conversion: str = "dp_accounting") -> float:
    """The previous `dpsgd.epsilon` (without its argument checks)."""
    num_steps = steps(n, lot_size, epochs)
    orders, curve = ORDERS, rdp_curve(n, lot_size, noise, num_steps)
    if not np.isfinite(curve).any():
        return math.inf
    if _convert(orders, curve, delta, "dp_accounting")[1] >= 96:
        orders = ALL_ORDERS
        curve = np.concatenate([curve, rdp_curve(n, lot_size, noise, num_steps, HIGH_ORDERS)])[
            np.argsort(ORDERS + HIGH_ORDERS)]
    return _convert(orders, curve, delta, conversion)[0]


def rdp_curve(n: int, lot_size: int, noise: float, num_steps: int, orders=ORDERS) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        curve = num_steps * rdp(lot_size / n, noise, orders)
    return np.where(np.isnan(curve), np.inf, curve)


def _convert(orders, curve, delta: float, conversion: str) -> tuple[float, float]:
    if conversion == "classic":
        orders = np.asarray(orders, dtype=float)
        with np.errstate(invalid="ignore"):
            values = np.asarray(curve) + math.log(1 / delta) / (orders - 1)
        values = np.where(np.isfinite(values), values, np.inf)
        best = int(np.argmin(values))
        return float(values[best]), float(orders[best])
    eps, order = rdp_accountant.compute_epsilon(list(orders), list(curve), delta)
    return float(eps), float(order)


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
