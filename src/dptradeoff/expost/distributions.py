"""The random numbers of runs behind private selection: Alg. 3's correlated random dropping and
Papernot-Steinke's truncated negative binomial (TNB), with their means and variances (paper 004 Fig. 1).

Conventions (paper 004 §2): Geom_p is supported on {0, 1, ...} with Geom_p(k) = (1 - p) p^k
(p is the *failure* probability); Exp_lam has density lam e^{-lam x}.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import special

from .. import UserError
from ..privacy.repeat_and_select import tnb_gamma, tnb_mean  # noqa: F401 - the TNB's mean, where its sampling is

# "none" never drops (k = 0): what paper 004's Table 1-2 numbers for Alg. 3 imply (docs/expost.md); Thms 11
# and 13 do not cover it, and no table labels it a guarantee.
DROPPING = ("geometric", "exponential", "none")


def keep_probability_mean(eps: np.ndarray | float, eps_prime: float, dropping: str = "geometric", power: int = 1):
    """E[e^{-power * eps * k}] for k ~ Geom_{e^{-eps'}} ("geometric") or k ~ Exp_{eps'} ("exponential").

    power = 1 is the probability that one copy of a mechanism with budget eps is run by Alg. 3
    (its expected number of runs, tau_i, per copy); power = 2 gives the second moment."""
    eps = np.asarray(eps, dtype=float) * power
    if dropping == "none":
        return np.ones_like(eps)
    if dropping == "geometric":
        p = math.exp(-eps_prime)
        return -math.expm1(-eps_prime) / (1.0 - p * np.exp(-eps))
    if dropping == "exponential":
        return eps_prime / (eps_prime + eps)
    raise UserError(f"Unknown dropping distribution {dropping!r}; use one of {', '.join(DROPPING)}.")


def sample_k(eps_prime: float, dropping: str, rng: np.random.Generator, size=None):
    """The correlated dropping variable k of Algs. 2-3."""
    if dropping == "none":
        return np.zeros(size, dtype=np.int64) if size is not None else 0
    if dropping == "geometric":
        # numpy's geometric counts trials to the first success on {1, 2, ...}; ours counts failures.
        return rng.geometric(-math.expm1(-eps_prime), size=size) - 1
    if dropping == "exponential":
        return rng.exponential(1.0 / eps_prime, size=size)
    raise UserError(f"Unknown dropping distribution {dropping!r}; use one of {', '.join(DROPPING)}.")


def alg3_invocations(copies: int | np.ndarray, eps: float, eps_prime: float, dropping: str = "geometric"):
    """Mean and standard deviation of the number of runs of a mechanism given `copies` times to Alg. 3.

    Given k, the count is Binomial(copies, q) with q = e^{-eps k}; so E = d E[q] and
    Var = d E[q(1 - q)] + d^2 Var(q) (law of total variance)."""
    d = np.asarray(copies, dtype=float)
    m1 = keep_probability_mean(eps, eps_prime, dropping, 1)
    m2 = keep_probability_mean(eps, eps_prime, dropping, 2)
    mean = d * m1
    var = d * (m1 - m2) + d**2 * (m2 - m1**2)
    return mean, np.sqrt(var)


def repetitions(alpha: float, beta: float, eps: np.ndarray | float, eps_prime: float) -> np.ndarray:
    """Thm 12: T_i = ceil((1/alpha) (2/beta)^{eps_i/eps'} ln(2/beta)) copies of each mechanism make
    Alg. 3 (geometric dropping) return at least o* with probability >= 1 - beta whenever some
    mechanism reaches o* with probability >= alpha."""
    if not (0 < alpha < 1 and 0 < beta < 1):
        raise UserError(f"Thm 12 needs alpha and beta in (0, 1), got {alpha} and {beta}.")
    eps = np.asarray(eps, dtype=float)
    log_t = -math.log(alpha) + eps / eps_prime * math.log(2 / beta) + math.log(math.log(2 / beta))
    return np.ceil(np.exp(log_t)).astype(np.int64)


# --- Papernot & Steinke 2022: truncated negative binomial D_{eta, gamma} -------------------------

def tnb_pmf(k: np.ndarray, eta: float, gamma: float) -> np.ndarray:
    """P[K = k] for k >= 1 (P&S Def. 1): eta = 0 is the logarithmic distribution,
    otherwise (1 - gamma)^k / (gamma^{-eta} - 1) * prod_{l=0}^{k-1} (l + eta) / (l + 1)."""
    k = np.asarray(k, dtype=float)
    if eta == 0:
        return np.exp(k * math.log1p(-gamma) - np.log(k) - math.log(math.log(1 / gamma)))
    # prod_{l<k} (l + eta)/(l + 1) = Gamma(k + eta) / (Gamma(eta) Gamma(k + 1)), valid for eta > 0;
    # for eta in (-1, 0) the sign of Gamma(eta) and of (eta) cancel with the denominator's sign.
    log_prod = special.gammaln(k + eta) - special.gammaln(k + 1) - special.gammaln(eta) if eta > 0 else \
        special.gammaln(k + eta) - special.gammaln(k + 1) - special.gammaln(eta + 1) + math.log(-eta)
    denom = math.expm1(-eta * math.log(gamma))   # gamma^{-eta} - 1 (negative for eta < 0)
    return np.exp(k * math.log1p(-gamma) + log_prod - math.log(abs(denom)))


def tnb_moments(eta: float, gamma: float) -> tuple[float, float]:
    """Mean and standard deviation of D_{eta, gamma}, summed from the pmf (the tail is geometric)."""
    kmax = int(min(5e7, 60 / -math.log1p(-gamma) + 1000))
    k = np.arange(1, kmax + 1, dtype=float)
    p = tnb_pmf(k, eta, gamma)
    mean = float((k * p).sum())
    return mean, math.sqrt(max(0.0, float((k * k * p).sum()) - mean**2))


def sample_tnb(eta: float, gamma: float, rng: np.random.Generator) -> int:
    """K ~ D_{eta, gamma}: for eta > 0 a negative binomial NB(eta, gamma) draw conditioned on K >= 1;
    eta = 0 the logarithmic distribution with parameter 1 - gamma."""
    if eta == 0:
        return int(rng.logseries(1 - gamma))
    if eta < 0:
        raise UserError("Sampling the TNB with eta < 0 is not supported; use eta >= 0.")
    while True:
        k = int(rng.negative_binomial(eta, gamma))
        if k >= 1:
            return k
