"""Repeat and select (Papernot & Steinke 2022): run a mechanism K ~ TNB(eta, gamma) times (a
truncated negative binomial with mean E[K]) and release only the best run. Its RDP from the RDP
of one run is their Thm 2; dp_accounting's `RepeatAndSelectDpEvent(event, mean, shape = eta)`
describes it."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from scipy import optimize

from .. import UserError


def papernot_steinke_rdp(orders: Sequence[float], rdp: Sequence[float], eta: float, mean: float) -> np.ndarray:
    """P&S Thm 2: repeating an RDP mechanism K ~ TNB(eta, gamma) times (E[K] = mean) and returning
    the best run is (lam, eps')-RDP with eps' = eps(lam) + (1 + eta)(1 - 1/lam^)eps(lam^)
    + (1 + eta) log(1/gamma)/lam^ + log(mean)/(lam - 1), for every lam^ >= 1 (the best is taken)."""
    orders, rdp = np.asarray(orders, dtype=float), np.asarray(rdp, dtype=float)
    gamma = tnb_gamma(eta, mean)
    usable = orders >= 1
    c = (1 + eta) * np.min((1 - 1 / orders[usable]) * rdp[usable] + math.log(1 / gamma) / orders[usable])
    out = np.full(len(orders), np.inf)
    above = orders > 1
    out[above] = rdp[above] + c + math.log(mean) / (orders[above] - 1)
    return out


def tnb_mean(eta: float, gamma: float) -> float:
    """E[K] (P&S Prop.): eta (1 - gamma) / (gamma (1 - gamma^eta)), or (1/gamma - 1)/log(1/gamma) at eta = 0."""
    if eta == 0:
        return (1 / gamma - 1) / math.log(1 / gamma)
    return eta * (1 - gamma) / (gamma * -math.expm1(eta * math.log(gamma)))


def tnb_gamma(eta: float, mean: float) -> float:
    """The gamma in (0, 1) that gives D_{eta, gamma} the mean `mean` (> 1)."""
    if not mean > 1:
        raise UserError(f"The mean number of runs must be > 1, got {mean}.")
    return optimize.brentq(lambda g: tnb_mean(eta, g) - mean, 1e-15, 1 - 1e-12, xtol=1e-15, rtol=1e-14)
