"""The one-run lower bound on epsilon of Steinke, Nasr & Jagielski, "Privacy auditing with one (1)
training run" (NeurIPS 2023, arXiv 2305.08846).

The audit: m canaries, each included in the training data independently with probability 1/2
(S_i uniform in {-1, +1}); one training; the auditor looks at the trained model and guesses S_i for r
of the canaries, abstaining on the others; v of its guesses are right. If the training is
(epsilon, delta)-DP with respect to each canary, their main theorem (Theorem 3 of the arXiv version;
computed by the procedure of their Appendix D) bounds how many right guesses are likely:

    P[V >= v] <= beta + 2 m delta alpha,
    beta  = P[X >= v],                                   X ~ Binomial(r, q), q = e^eps / (1 + e^eps)
    alpha = max over i = 1..v of P[v - i <= X < v] / i

(q is the accuracy of eps-DP randomized response: with delta = 0 the bound is the binomial tail,
exactly what randomized response attains). `p_value` is this bound, and `one_run_epsilon` the
largest epsilon whose p-value is at most 1 - confidence, epsilon_lb: the training is not
(epsilon, delta)-DP for any epsilon < epsilon_lb, at that confidence. The number of guesses r must be
fixed before looking at the scores (trying several r and keeping the best breaks that confidence).

tests/test_audit_blackbox.py checks it against a term-by-term rewrite, against the closed form at
delta = 0, and against numbers computed by the Appendix D code as published (ubc-systopia/
panoramia-privacy-measurement) and by google-deepmind/jax_privacy's `auditing._epsilon_one_run`.
"""
from __future__ import annotations

import numpy as np
from scipy import optimize, special, stats

from .. import UserError

CONFIDENCE = 0.95


def p_value(correct: int, guesses: int, canaries: int, epsilon: float, delta: float) -> float:
    """The paper's bound on P[V >= correct] for r = `guesses` guesses among m = `canaries` canaries
    when the training is (epsilon, delta)-DP (module doc)."""
    v, r, m = int(correct), int(guesses), int(canaries)
    q = float(special.expit(epsilon))
    beta = float(stats.binom.sf(v - 1, r, q))            # P[X >= v]
    if delta == 0 or v == 0:
        return min(beta, 1.0)
    below = stats.binom.pmf(np.arange(v - 1, -1, -1), r, q)   # P[X = v-1], P[X = v-2], ..., P[X = 0]
    alpha = float(np.max(np.cumsum(below) / np.arange(1, v + 1)))
    return min(beta + 2 * m * delta * alpha, 1.0)


def one_run_epsilon(correct: int, guesses: int, canaries: int, delta: float, confidence: float = CONFIDENCE) -> float:
    """The largest epsilon >= 0 whose p-value (`p_value`) is at most 1 - confidence: with `correct` of
    `guesses` guesses right among `canaries` canaries, the training is not (epsilon, delta)-DP for any
    smaller epsilon, at `confidence`. 0 where even epsilon = 0 is not rejected."""
    v, r, m = _counts(correct, guesses, canaries)
    if not 0 <= delta < 1:
        raise UserError(f"delta must be in [0, 1) for a one-run audit, got {delta}.")
    if not 0 < confidence < 1:
        raise UserError(f"confidence must be in (0, 1) for a one-run audit, got {confidence}.")
    level = 1 - confidence

    def excess(eps):
        return p_value(v, r, m, eps, delta) - level

    if excess(0.0) > 0:
        return 0.0
    low, high = 0.0, 1.0
    while excess(high) <= 0:     # the p-value tends to 1 as epsilon grows (unless v = 0, excluded above)
        low, high = high, 2 * high
    return float(optimize.brentq(excess, low, high, xtol=1e-9, rtol=1e-12))


def one_run_ceiling(guesses: int, canaries: int, delta: float, confidence: float = CONFIDENCE) -> float:
    """The most a one-run audit with this many guesses can certify: every guess right."""
    return one_run_epsilon(guesses, guesses, canaries, delta, confidence)


def _counts(correct, guesses, canaries) -> tuple[int, int, int]:
    try:
        v, r, m = (int(x) for x in (correct, guesses, canaries))
    except (TypeError, ValueError):
        raise UserError(f"A one-run audit needs whole numbers of correct guesses, guesses and canaries, got "
                        f"{correct!r}, {guesses!r}, {canaries!r}.") from None
    if (v, r, m) != (correct, guesses, canaries) or not 0 <= v <= r <= m or m < 1:
        raise UserError(f"A one-run audit needs 0 <= correct <= guesses <= canaries (whole numbers, canaries >= 1), "
                        f"got correct={correct}, guesses={guesses}, canaries={canaries}.")
    return v, r, m


def gdp_counts_excess(correct: int, guesses: int, canaries: int, mu: float, level: float) -> float:
    """Mahloujifar, Melis & Chaudhuri, "Auditing f-differential privacy in one run" (2024, arXiv 2410.22235):
    how far `correct` right of `guesses` guesses among `canaries` canaries lie beyond what a mu-GDP training
    makes likely at significance `level`; positive: mu-GDP is rejected.

    Their bound follows the expected shares of right (r) and wrong (h) guesses that a mu-GDP training can
    reach, given that the last guesses to turn right are bounded by the trade-off curve: from the level's
    share of each, one right guess at a time, h rises to the trade-off's inverse blow-up of r,
    Phi(Phi^-1(r) - mu), and r by the share that rise buys of the guesses still open. The observed counts are
    rejected when the reachable shares fall short of guesses / canaries."""
    right = level * correct / canaries
    wrong = level * (guesses - correct) / canaries
    for still_open in range(correct - 1, -1, -1):
        raised = max(wrong, float(stats.norm.cdf(stats.norm.ppf(right) - mu)))
        if raised == wrong:     # a fixed point: neither share can move again
            break
        right = min(1.0, right + still_open / (guesses - still_open) * (raised - wrong))
        wrong = raised
    return right + wrong - guesses / canaries


def fdp_one_run_epsilon(correct: int, guesses: int, canaries: int, delta: float,
                        confidence: float = CONFIDENCE) -> float:
    """The f-DP one-run bound (`gdp_counts_excess`): the largest epsilon whose mu-GDP mechanism (the mu that is
    (epsilon, delta)-DP, `bounds.gdp_mu`) the counts reject at `confidence`; 0 where even mu = 0 is not
    rejected. Its statement is about the Gaussian family: the training's trade-off curve is not that of any
    mu-GDP mechanism with a smaller epsilon at delta, the shape DP-SGD's own analyses give it. Checked against
    google-deepmind/jax_privacy's `auditing._epsilon_one_run_fdp` (tests/test_audit_blackbox.py)."""
    from .bounds import gdp_mu

    v, r, m = _counts(correct, guesses, canaries)
    if not 0 <= delta < 1 or not 0 < confidence < 1:
        raise UserError(f"A one-run audit needs delta in [0, 1) and confidence in (0, 1), got {delta}, {confidence}.")
    level = 1 - confidence

    def excess(eps):
        return gdp_counts_excess(v, r, m, gdp_mu(eps, delta) if eps > 0 else 0.0, level)

    if excess(0.0) <= 0:
        return 0.0
    low, high = 0.0, 1.0
    while excess(high) > 0:
        low, high = high, 2 * high
    return float(optimize.brentq(excess, low, high, xtol=1e-9, rtol=1e-12))
