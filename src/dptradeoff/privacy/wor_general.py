"""RDP of any mechanism run on a subsample drawn without replacement (replace-one neighbours): Wang,
Balle, Kasiviswanathan 2019 (WBK19) Thm 9.

A mechanism M on m rows that is (alpha, eps(alpha))-RDP for replace-one neighbours of m rows, run on m
rows drawn uniformly without replacement from n (q = m/n), is, for every integer alpha >= 2,
(alpha, log A / (alpha - 1))-RDP for replace-one neighbours of n rows, with

  A = 1 + q^2 C(alpha, 2) min(4 (e^{eps(2)} - 1), e^{eps(2)} min(2, (e^{eps(inf)} - 1)^2))
        + sum_{j=3}^{alpha} q^j C(alpha, j) e^{(j - 1) eps(j)} min(2, (e^{eps(inf)} - 1)^j).

eps(inf) is taken as infinite (always valid: it only selects the min's 2), so

  A = 1 + q^2 C(alpha, 2) min(4 (e^{eps(2)} - 1), 2 e^{eps(2)}) + sum_{j=3}^{alpha} 2 q^j C(alpha, j) e^{(j - 1) eps(j)}.

For a Gaussian, Thm 27 (`wor_gaussian`) refines the same sum; this is the form for a mechanism whose only
known property is its RDP curve, e.g. a whole private hyperparameter search run on a subsample
(Koskela & Kulkarni 2023; docs/release.md). Orders: the bound is computed at the integers 2..MAX_ORDER from
the mechanism's RDP at every integer 2..MAX_ORDER; a fractional order between them interpolates log A
linearly (WBK19 Cor. 10: (alpha - 1) times a Renyi divergence is convex in alpha, so the interpolation of
bounds at the neighbouring integers bounds it); an order below 2 takes order 2's value (a Renyi divergence
does not decrease with the order); above MAX_ORDER, inf (that order is not used: a valid bound).

Where the mechanism's own RDP is smaller (a large q: Thm 9's factor 2 costs more than the subsampling saves), it is
taken: subsampling never hurts, since the output on D is the mixture over samples S of M(S), on a neighbour D' the
same mixture of M(S') with S' = S or a neighbour of it, and exp((alpha - 1) D_alpha) is jointly convex.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
from scipy import special

MAX_ORDER = 64   # the sum needs the mechanism's RDP at every integer up to the order; a total near 1 uses orders < 40


def rdp(q: float, inner: Callable[[np.ndarray], np.ndarray], orders) -> np.ndarray:
    """The subsampled mechanism's RDP at each order; `inner(orders)` is the mechanism's RDP (on m rows)."""
    orders = np.asarray(orders, dtype=float)
    if not 0 <= q <= 1:
        raise ValueError(f"a sampling ratio is in [0, 1], got {q}")
    if q == 0:
        return np.zeros(len(orders))
    integers = np.arange(2, MAX_ORDER + 1)
    eps = np.asarray(inner(integers.astype(float)), dtype=float)
    log_a = (integers - 1) * eps if q == 1 else np.array([_log_a(q, eps, int(alpha)) for alpha in integers])
    out = np.full(len(orders), np.inf)
    for i, order in enumerate(orders):
        if order > MAX_ORDER:
            continue
        at = max(order, 2.0)
        lo, hi = int(math.floor(at)), int(math.ceil(at))
        t = at - lo
        out[i] = ((1 - t) * log_a[lo - 2] + t * log_a[hi - 2] if t else log_a[lo - 2]) / (at - 1)
    return np.minimum(out, np.asarray(inner(orders), dtype=float))   # subsampling never hurts


def _log_a(q: float, eps: np.ndarray, alpha: int) -> float:
    """log A of Thm 9 at integer alpha >= 2; eps[k] is the mechanism's RDP at order k + 2."""
    eps2 = eps[0]
    if not np.isfinite(eps2):
        return math.inf
    second = min(math.log(4.0) + _log_expm1(eps2), math.log(2.0) + eps2)
    terms = [2 * math.log(q) + math.log(alpha * (alpha - 1) / 2) + second]
    if alpha >= 3:
        j = np.arange(3, alpha + 1)
        log_binom = special.gammaln(alpha + 1) - special.gammaln(j + 1) - special.gammaln(alpha - j + 1)
        with np.errstate(invalid="ignore"):
            terms.extend(math.log(2.0) + j * math.log(q) + log_binom + (j - 1) * eps[j - 2])
    terms = np.asarray(terms)
    if np.isposinf(terms).any() or np.isnan(terms).any():
        return math.inf
    top = terms.max()
    return float(np.logaddexp(0.0, top + math.log(np.exp(terms - top).sum())))


def _log_expm1(x: float) -> float:
    return x + math.log(-math.expm1(-x)) if x > 0 else -math.inf
