"""Lower bounds on epsilon from a distinguishing test between two neighbouring datasets.

An audit runs a mechanism many times on D_in (with a canary) and D_out (its neighbour) and records one
score per run, larger meaning "more like D_in". If the mechanism is (epsilon, delta)-DP, every test
"score >= t" has TPR <= e^epsilon FPR + delta and 1 - FPR <= e^epsilon (1 - TPR) + delta; error rates
that break these for some epsilon prove the mechanism is not (epsilon, delta)-DP. Two estimators:

- `clopper_pearson`: assumption-free. The threshold (and which of the two inequalities) is chosen on
  the first half of each sample, the rates are bounded on the second half by Clopper-Pearson
  intervals, each at 1 - alpha/2 (a union bound over the two), so the bound holds at 1 - alpha
  whatever the scores' distribution (Jagielski et al. 2020; Nasr et al. 2021, Thm 1).
- `gaussian_fit`: Gaussian DP (Dong, Roth & Su 2019; Nasr et al. 2023). When the score is Gaussian
  with one variance under both hypotheses, the test "score >= t" traces exactly the trade-off curve of
  mu-GDP with mu = (mean_in - mean_out) / sd, so the mechanism's own trade-off curve lies below it and
  its epsilon at delta is at least mu-GDP's. A lower confidence bound on mu follows exactly from the
  noncentral t distribution of the two-sample t statistic; epsilon_lb is mu_lb-GDP's epsilon at delta.
  The confidence statement holds when the scores are Gaussian with equal variances: true of a white-box
  statistic that is linear in Gaussian noise (full-batch DP-SGD, the Gaussian mechanism); for others it
  is an approximation, and `clopper_pearson` is the bound to quote.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Bound:
    """epsilon_lb: the mechanism is not (epsilon, delta)-DP for any epsilon < epsilon_lb, at `confidence`."""
    epsilon_lb: float
    estimator: str        # "gaussian fit" or "clopper-pearson"
    confidence: float
    delta: float
    runs_in: int
    runs_out: int
    detail: str           # the statistic behind it (mu and its lower bound; the threshold's rates)


def gdp_delta(mu: float, epsilon: float) -> float:
    """delta(epsilon) of mu-GDP (Dong, Roth & Su 2019, Cor. 2.13)."""
    if mu <= 0:
        return 0.0
    # e^eps Phi(.) in log space: finite for any mu (a planted bug's mu can be in the hundreds)
    return float(stats.norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon + stats.norm.logcdf(-epsilon / mu - mu / 2)))


def gdp_epsilon(mu: float, delta: float) -> float:
    """The smallest epsilon >= 0 at which mu-GDP is (epsilon, delta)-DP."""
    if mu <= 0 or gdp_delta(mu, 0.0) <= delta:
        return 0.0
    high = 1.0
    while gdp_delta(mu, high) > delta:
        high *= 2
    return float(optimize.brentq(lambda e: gdp_delta(mu, e) - delta, 0.0, high, xtol=1e-12))


def gdp_mu(epsilon: float, delta: float) -> float:
    """The mu of the mu-GDP mechanism whose epsilon at delta is `epsilon` (the inverse of gdp_epsilon)."""
    if epsilon <= 0:
        return 0.0
    high = 1.0
    while gdp_epsilon(high, delta) < epsilon:
        high *= 2
    return float(optimize.brentq(lambda m: gdp_epsilon(m, delta) - epsilon, 1e-9, high, xtol=1e-12))


def _sample(scores) -> np.ndarray:
    scores = np.asarray(scores, dtype=float).ravel()
    if len(scores) < 4 or not np.all(np.isfinite(scores)):
        raise ValueError(f"an audit needs at least 4 finite scores per hypothesis, got {len(scores)}")
    return scores


def gaussian_fit(scores_in, scores_out, delta: float, confidence: float = CONFIDENCE) -> Bound:
    """epsilon_lb from a lower confidence bound on the GDP parameter mu of the two samples (module doc)."""
    a, b = _sample(scores_in), _sample(scores_out)
    n1, n0 = len(a), len(b)
    pooled = math.sqrt(((n1 - 1) * a.var(ddof=1) + (n0 - 1) * b.var(ddof=1)) / (n1 + n0 - 2))
    scale = math.sqrt(1 / n1 + 1 / n0)
    if pooled > 0:
        mu_hat = (a.mean() - b.mean()) / pooled
    else:   # constant scores: a perfect test where the two constants differ, none where they are equal
        mu_hat = math.inf if a.mean() > b.mean() else 0.0
    mu_low = _mu_lower(mu_hat / scale, n1 + n0 - 2, confidence) * scale if math.isfinite(mu_hat) else math.inf
    mu_low = max(mu_low, 0.0)
    eps = gdp_epsilon(mu_low, delta) if math.isfinite(mu_low) else math.inf
    ratio = a.var(ddof=1) / b.var(ddof=1) if b.var(ddof=1) > 0 else math.inf
    return Bound(eps, "gaussian fit", confidence, delta, n1, n0,
                 f"mu={mu_hat:.4g}, mu_lb={mu_low:.4g}, variance ratio in/out={ratio:.3g}")


def _mu_lower(t: float, df: int, confidence: float) -> float:
    """The lower confidence bound on the noncentrality nc of a noncentral t(df, nc) observed at t:
    the nc at which P(T >= t) = 1 - confidence (P(T >= t) increases with nc)."""
    alpha = 1 - confidence
    if stats.nct.sf(t, df, 0.0) <= alpha:      # even nc = 0 makes t unlikely: the bound is positive
        high = max(1.0, 2 * t)
        while stats.nct.sf(t, df, high) <= alpha:
            high *= 2
        return float(optimize.brentq(lambda nc: stats.nct.sf(t, df, nc) - alpha, 0.0, high, xtol=1e-10))
    return 0.0


def _rate_upper(errors: int, total: int, level: float) -> float:
    """Clopper-Pearson upper bound on a rate at one-sided confidence `level`."""
    return 1.0 if errors >= total else float(stats.beta.ppf(level, errors + 1, total - errors))


def _rates_upper(errors: np.ndarray, total: int, level: float) -> np.ndarray:
    return np.where(errors >= total, 1.0, stats.beta.ppf(level, errors + 1, np.maximum(total - errors, 1)))


def _epsilons_of_rates(fpr, fnr, delta: float) -> np.ndarray:
    """The largest epsilon >= 0 that tests with false-positive rates <= fpr and false-negative rates <= fnr
    refute: TPR <= e^eps FPR + delta and TNR <= e^eps FNR + delta, with TPR = 1 - FNR, TNR = 1 - FPR."""
    fpr, fnr = np.asarray(fpr, float), np.asarray(fnr, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        one = np.log(np.maximum(1 - delta - fnr, 0) / fpr)
        other = np.log(np.maximum(1 - delta - fpr, 0) / fnr)
    return np.maximum(np.nan_to_num(np.maximum(one, other), nan=0.0, neginf=0.0), 0.0)


def _epsilon_of_rates(fpr: float, fnr: float, delta: float) -> float:
    return float(_epsilons_of_rates(fpr, fnr, delta))


def clopper_pearson(scores_in, scores_out, delta: float, confidence: float = CONFIDENCE,
                    rng: np.random.Generator | None = None) -> Bound:
    """epsilon_lb from Clopper-Pearson bounds on one test's error rates (module doc): the threshold is
    the one whose bound is largest on a random half of each sample, bounded on the other half."""
    a, b = _sample(scores_in), _sample(scores_out)
    rng = rng or np.random.default_rng(0)
    a, b = rng.permutation(a), rng.permutation(b)
    (a_pick, a_test), (b_pick, b_test) = np.array_split(a, 2), np.array_split(b, 2)
    level = 1 - (1 - confidence) / 2
    # every candidate threshold at once: the pick half's errors at each, sorted
    thresholds = np.unique(np.concatenate([a_pick, b_pick]))
    fn = np.searchsorted(np.sort(a_pick), thresholds, side="left")                  # a_pick < t
    fp = len(b_pick) - np.searchsorted(np.sort(b_pick), thresholds, side="left")    # b_pick >= t
    fpr, fnr = _rates_upper(fp, len(b_pick), level), _rates_upper(fn, len(a_pick), level)
    chosen = thresholds[int(np.argmax(_epsilons_of_rates(fpr, fnr, delta)))]
    fn, fp = int((a_test < chosen).sum()), int((b_test >= chosen).sum())
    fpr, fnr = _rate_upper(fp, len(b_test), level), _rate_upper(fn, len(a_test), level)
    eps = _epsilon_of_rates(fpr, fnr, delta)
    return Bound(eps, "clopper-pearson", confidence, delta, len(a), len(b),
                 f"threshold {chosen:.4g} (chosen on half the runs): {fp}/{len(b_test)} false positives, "
                 f"{fn}/{len(a_test)} false negatives on the other half")


def clopper_pearson_ceiling(runs_in: int, runs_out: int, delta: float, confidence: float = CONFIDENCE) -> float:
    """The most `clopper_pearson` can certify with this many runs: a perfect test, no error on the half it
    is bounded on."""
    level = 1 - (1 - confidence) / 2
    half_in, half_out = runs_in // 2, runs_out // 2   # array_split's second halves (the smaller, when odd)
    return _epsilon_of_rates(_rate_upper(0, half_out, level), _rate_upper(0, half_in, level), delta)


def gaussian_fit_expected(mu: float, runs_in: int, runs_out: int, delta: float, confidence: float = CONFIDENCE) -> float:
    """The epsilon_lb `gaussian_fit` gives, with this many runs, when the samples' mu is exactly `mu`: what an
    audit of a mu-GDP statistic can certify at best with these runs (its estimate's sampling error aside)."""
    scale = math.sqrt(1 / runs_in + 1 / runs_out)
    return gdp_epsilon(_mu_lower(mu / scale, runs_in + runs_out - 2, confidence) * scale, delta)
