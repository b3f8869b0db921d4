"""The privacy of objective perturbation (Chaudhuri, Monteleoni, Sarwate 2011, Alg. 2) as written in
paper 002 §3.2: theta_eps = argmin L(theta, D) + (lam/2)||theta||^2 + (1/n) b'theta
+ (delta_eps/2)||theta||^2 on n rows with ||x|| <= 1, labels +-1, the loss's second derivative
bounded by c, and noise b with density proportional to exp(-beta ||b||).

`noise_parameters` chooses beta and delta_eps for a target eps; with
L0 = log(1 + 2c/(n lam) + c^2/(n lam)^2):
  eps >  L0: beta = (eps - L0)/2, delta_eps = 0;
  eps <= L0: beta = eps/4,         delta_eps = c/(n(e^{eps/4} - 1)) - lam.
Either way the privacy loss 2 beta + 2 log(1 + c/(n(lam + delta_eps))) (`privacy_loss`) equals eps
(pure DP, replace-one neighbours) - for that noise density and the exact minimiser only
(`taylor/objective_perturbation.py` has the solvers and the as-published noise that is not).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .. import UserError


@dataclass(frozen=True)
class Noise:
    """beta_eps, delta_eps and their derivatives in eps."""
    beta: float
    delta: float
    d_beta: float
    d_delta: float


def noise_parameters(eps: float, n: int, lam: float, c: float) -> Noise:
    if not (eps > 0 and n >= 1 and lam > 0 and c > 0):
        raise UserError(f"Objective perturbation needs eps, lambda, c > 0 and n >= 1; got {eps}, {lam}, {c}, {n}.")
    l0 = math.log(1 + 2 * c / (n * lam) + c * c / (n * lam) ** 2)
    if eps > l0:
        return Noise((eps - l0) / 2, 0.0, 0.5, 0.0)
    e = math.exp(eps / 4)
    return Noise(eps / 4, c / (n * (e - 1)) - lam, 0.25, -c * e / (4 * n * (e - 1) ** 2))


def privacy_loss(beta: float, delta: float, n: int, lam: float, c: float) -> float:
    """Chaudhuri et al.'s bound on the log density ratio: 2 beta (||b - b'|| <= 2) plus the Jacobian
    term 2 log(1 + c/(n(lam + delta)))."""
    return 2 * beta + 2 * math.log1p(c / (n * (lam + delta)))
