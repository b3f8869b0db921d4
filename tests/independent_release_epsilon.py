"""A release's total epsilon recomputed independently of `privacy.accountant` (used by tests/test_private_tuning.py
and benchmarks/private_tuning.py): from each candidate's training RDP (the one input taken from the accountant,
cross-checked on its own in test_accountant/test_wor_pld), everything the release adds is written out again in
60-digit arithmetic (mpmath): the Gaussian score's RDP, the random choice (largest at each order), Papernot &
Steinke's Thm 2 with gamma solved from E[K] by mpmath's root finder, WBK19 Thm 9's amplification by the
subsample (or the search's own RDP where smaller) and the final training (a subsampled search), and Canonne-Kamath-Steinke's RDP -> (epsilon, delta)
conversion at the orders the accountant reads (ORDERS; ALL_ORDERS where the best of ORDERS is >= 96)."""
from __future__ import annotations

import mpmath as mp

from dptradeoff.privacy.accountant import ALL_ORDERS, ORDERS
from dptradeoff.release.trainers import training_event

INNER_ORDERS = list(range(2, 65))   # the subsampled search's inner orders (wor_general.MAX_ORDER)


def independent_total(record: dict, problem, accountant) -> float:
    search = record["search"]
    delta = record["guarantee"]["delta"]
    eta, mean = record["selection"]["eta"], record["selection"]["mean_trials"]
    z = record["score"]["noise_multiplier"]
    with mp.workdps(60):
        def trial(orders):
            curves = [accountant.rdp(training_event(problem, c["point"], search["training_rows"]), orders)
                      for c in record["candidates"]]
            return [max(mp.mpf(float(curve[i])) for curve in curves) + mp.mpf(a) / (2 * mp.mpf(z) ** 2)
                    for i, a in enumerate(orders)]

        if search.get("subsample_rows") is None:
            curve = papernot_steinke(list(ALL_ORDERS), trial(list(ALL_ORDERS)), eta, mean)
        else:
            inner = papernot_steinke(INNER_ORDERS, trial(INNER_ORDERS), eta, mean)
            unsampled = papernot_steinke(list(ALL_ORDERS), trial(list(ALL_ORDERS)), eta, mean)
            q = mp.mpf(search["subsample_rows"]) / search["private_rows"]
            log_a = {a: thm9_log_a(q, inner, a) for a in INNER_ORDERS}
            finals = [accountant.rdp(training_event(problem, c["final"], search["private_rows"]), ALL_ORDERS)
                      for c in record["candidates"]]
            curve = []
            for i, a in enumerate(ALL_ORDERS):
                final = max(mp.mpf(float(f[i])) for f in finals)
                # Thm 9, or the search's own RDP where smaller (subsampling never hurts)
                search_rdp = min(interpolated(log_a, a), unsampled[i]) if a <= INNER_ORDERS[-1] else unsampled[i]
                curve.append(search_rdp + final)
        return convert(curve, delta)


def papernot_steinke(orders, rdp, eta, mean):
    """P&S Thm 2 at each order > 1, the best lambda-hat among `orders` >= 1."""
    eta, mean = mp.mpf(eta), mp.mpf(mean)
    gamma = mp.findroot(lambda g: eta * (1 - g) / (g * (1 - g ** eta)) - mean, (mp.mpf("1e-12"), 1 - mp.mpf("1e-12")),
                        solver="anderson") if eta > 0 else mp.findroot(lambda g: (1 / g - 1) / mp.log(1 / g) - mean,
                                                                        (mp.mpf("1e-12"), 1 - mp.mpf("1e-12")),
                                                                        solver="anderson")
    best = min((1 - mp.mpf(1) / b) * e + mp.log(1 / gamma) / b for b, e in zip(orders, rdp) if b >= 1)
    return [e + (1 + eta) * best + mp.log(mean) / (a - 1) if a > 1 else mp.inf for a, e in zip(orders, rdp)]


def thm9_log_a(q, inner, alpha: int):
    """log A of WBK19 Thm 9 (eps(inf) = inf) at integer alpha; inner[k] is the mechanism's RDP at order k + 2."""
    eps = {a: inner[a - 2] for a in range(2, alpha + 1)}
    total = 1 + q**2 * mp.binomial(alpha, 2) * min(4 * (mp.exp(eps[2]) - 1), 2 * mp.exp(eps[2]))
    for j in range(3, alpha + 1):
        total += 2 * q**j * mp.binomial(alpha, j) * mp.exp((j - 1) * eps[j])
    return mp.log(total)


def interpolated(log_a: dict, order: float):
    """log A's linear interpolation between integers over (order - 1); orders below 2 take order 2's RDP."""
    order = max(mp.mpf(order), 2)
    lo, hi = int(mp.floor(order)), int(mp.ceil(order))
    t = order - lo
    return ((1 - t) * log_a[lo] + t * log_a[hi]) / (order - 1)


def convert(curve, delta: float) -> float:
    """Canonne, Kamath & Steinke 2020 (Prop. 12, dp_accounting's): eps = rdp + log1p(-1/a) - (log delta + log a)/(a - 1),
    at the best of ORDERS, or of ALL_ORDERS where that best order is >= 96 (the accountant's rule)."""
    delta = mp.mpf(delta)
    at = {a: c + mp.log(1 - 1 / mp.mpf(a)) - (mp.log(delta) + mp.log(a)) / (a - 1) if mp.isfinite(c) else mp.inf
          for a, c in zip(ALL_ORDERS, curve)}
    base = min(ORDERS, key=lambda a: at[a])
    best = min(at.values()) if base >= 96 else at[base]
    return float(max(best, 0))

