"""Privacy of paper 004's ex-post mechanisms, checked against their exact output distributions.

For small discrete instances we compute every output probability of Algs. 1-3 on neighbouring
inputs by summing over the algorithms' own randomness (the threshold/dropping variable k and the
query noises), check that the implementation samples from that distribution (Monte Carlo), and
check the ex-post bound of Thms 8-11 (and 13) for *every* output. Negative controls show the
checks fail for a bound that is too small."""
from __future__ import annotations

import itertools
import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as rdp_lib
from scipy import stats

from dptradeoff.expost import above_threshold as at
from dptradeoff.expost import baselines, distributions, filter as expost_filter, tuning

KMAX = 4000  # truncation of the geometric threshold noise; its tail beyond is < e^{-eps' KMAX}


def geom_pmf(x, eps):
    """Geom_{e^{-eps}}(x) = (1 - e^{-eps}) e^{-eps x} on x >= 0 (0 below)."""
    x = np.asarray(x)
    return np.where(x >= 0, -math.expm1(-eps) * np.exp(-eps * np.maximum(x, 0)), 0.0)


def geom_below(x, eps):
    """P[Geom_{e^{-eps}} < x] = 1 - e^{-eps x} for x >= 0, 0 for x <= 0."""
    x = np.asarray(x, dtype=float)
    return np.where(x > 0, -np.expm1(-eps * np.maximum(x, 0)), 0.0)


# --- Alg. 1 ------------------------------------------------------------------------------------

def alg1_distribution(f, eps, eps_prime, omax):
    """P[(o, i)] for o = 0..omax and P[bottom], summing over k and the query noises y_i."""
    k = np.arange(KMAX)
    pk = geom_pmf(k, eps_prime)
    out = np.zeros((len(f), omax + 1))
    below = np.ones(KMAX)  # P[all earlier queries below the threshold | k]
    for i, (fi, ei) in enumerate(zip(f, eps)):
        for o in range(omax + 1):
            out[i, o] = np.sum(pk * below * geom_pmf(o + k - fi, ei))
        below = below * geom_below(k - fi, ei)
    return out, float(np.sum(pk * below))


ALG1_CASES = [([0, 1, -1], [0.4, 0.2, 0.7], 0.3), ([2, 0], [0.05, 0.5], 0.1), ([-3, 5, 0, 1], [1.0, 0.3, 0.3, 0.2], 0.5)]


@pytest.mark.parametrize("f, eps, eps_prime", ALG1_CASES)
def test_alg1_exact_distribution_satisfies_theorem_8(f, eps, eps_prime):
    omax = int(40 / min(eps))  # the mass beyond is < e^{-40}
    dist, bottom = alg1_distribution(f, eps, eps_prime, omax)
    assert dist.sum() + bottom == pytest.approx(1.0, abs=1e-6)
    for shift in itertools.product((-1, 0, 1), repeat=len(f)):
        other, other_bottom = alg1_distribution(np.add(f, shift), eps, eps_prime, omax)
        for i, e in enumerate(eps):
            bound = at.above_threshold_cost(e, eps_prime)
            assert np.all(dist[i] <= math.exp(bound) * other[i] * (1 + 1e-9) + 1e-300)
        assert bottom <= math.exp(at.above_threshold_cost(None, eps_prime)) * other_bottom * (1 + 1e-9)


@pytest.mark.parametrize("f, eps, eps_prime", ALG1_CASES)
def test_alg1_monotone_theorem_9_and_its_negative_control(f, eps, eps_prime):
    omax = 60
    dist, _ = alg1_distribution(f, eps, eps_prime, omax)
    worst = 0.0
    for shift in itertools.product((-1, 0, 1), repeat=len(f)):
        other, _ = alg1_distribution(np.add(f, shift), eps, eps_prime, omax)
        monotone = all(s >= 0 for s in shift) or all(s <= 0 for s in shift)
        for i, e in enumerate(eps):
            ratio = np.max(np.log(dist[i] / other[i])[dist[i] > 1e-250])
            if monotone:
                assert ratio <= at.above_threshold_cost(e, eps_prime, monotone=True) + 1e-9
            else:
                worst = max(worst, ratio - at.above_threshold_cost(e, eps_prime, monotone=True))
    assert worst > 1e-3, "non-monotone neighbours must be able to exceed Thm 9's bound (the check can fail)"


def test_alg1_implementation_samples_the_exact_distribution():
    f, eps, eps_prime = [0, 1, -1], [0.4, 0.2, 0.7], 0.3
    dist, bottom = alg1_distribution(f, eps, eps_prime, 60)
    rng = np.random.default_rng(1)
    n = 40_000
    counts = np.zeros((3, 4))
    n_bottom = 0
    for _ in range(n):
        s = at.above_threshold(f, eps, eps_prime, rng)
        if s.index is None:
            n_bottom += 1
        elif s.output < 4:
            counts[s.index, s.output] += 1
    assert np.allclose(counts / n, dist[:, :4], atol=4 * np.sqrt(dist[:, :4] / n) + 1e-3)
    assert n_bottom / n == pytest.approx(bottom, abs=4 * math.sqrt(bottom / n) + 1e-3)


# --- generic eps-DP mechanisms on a finite output set --------------------------------------------

def dp_pair(m, eps, rng):
    """Two output distributions on {0..m-1} whose ratio is within e^{eps} everywhere (tightly)."""
    q = rng.dirichlet(np.ones(m))
    tilt = rng.uniform(-eps / 2, eps / 2, size=m)
    tilt[0], tilt[-1] = eps / 2, -eps / 2
    q2 = q * np.exp(tilt)
    q2 /= q2.sum()
    assert np.all(np.abs(np.log(q / q2)) <= eps + 1e-12)
    return q, q2


def alg2_distribution(qs, eps, eps_prime, tau):
    k = np.arange(KMAX)
    pk = geom_pmf(k, eps_prime)
    none_yet = np.ones(KMAX)
    out = np.zeros((len(qs), len(qs[0])))
    for i, (q, e) in enumerate(zip(qs, eps)):
        keep = np.exp(-e * k)
        for o in range(tau, len(q)):
            out[i, o] = np.sum(pk * none_yet * keep * q[o])
        none_yet = none_yet * (1 - keep * q[tau:].sum())
    return out, float(np.sum(pk * none_yet))


def dropping_weights(eps_prime, dropping):
    """Points k and weights of the dropping variable: Geom_{e^{-eps'}} exactly (truncated at KMAX), or
    Exp_{eps'} by the midpoint rule on u = 1 - e^{-eps' k}."""
    if dropping == "geometric":
        k = np.arange(KMAX, dtype=float)
        return k, geom_pmf(k, eps_prime)
    u = (np.arange(200_000) + 0.5) / 200_000
    return -np.log1p(-u) / eps_prime, np.full(len(u), 1 / len(u))


def alg3_distribution(qs, eps, eps_prime, dropping="geometric", key=lambda o, i: (o, i)):
    """P[(o, i)] and P[bottom] of Alg. 3 over mechanisms i with output laws qs[i] on {0..m-1}, for the
    total order `key` on (output, index) pairs (default: the paper's lexicographic order)."""
    d, m = len(qs), len(qs[0])
    k, weights = dropping_weights(eps_prime, dropping)
    out = np.zeros((d, m))
    for i in range(d):
        for o in range(m):
            prod = weights * np.exp(-eps[i] * k) * qs[i][o]
            for j in range(d):
                if j != i:
                    above = sum(qs[j][o2] for o2 in range(m) if key(o2, j) > key(o, i))
                    prod = prod * (1 - np.exp(-eps[j] * k) * above)
            out[i, o] = prod.sum()
    bottom = float(np.sum(weights * np.prod([1 - np.exp(-e * k) for e in eps], axis=0)))
    return out, bottom


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_alg2_exact_distribution_satisfies_theorem_10(seed):
    rng = np.random.default_rng(seed)
    eps, eps_prime, tau = np.array([0.3, 0.8, 0.1]), 0.2, 2
    pairs = [dp_pair(5, e, rng) for e in eps]
    d0, b0 = alg2_distribution([p[0] for p in pairs], eps, eps_prime, tau)
    d1, b1 = alg2_distribution([p[1] for p in pairs], eps, eps_prime, tau)
    assert d0.sum() + b0 == pytest.approx(1.0, abs=1e-9)
    for a, b, ba, bb in ((d0, d1, b0, b1), (d1, d0, b1, b0)):
        for i, e in enumerate(eps):
            assert np.all(a[i] <= math.exp(2 * e + eps_prime) * b[i] * (1 + 1e-9) + 1e-300)
        assert ba <= math.exp(eps_prime) * bb * (1 + 1e-9)


def test_alg2_implementation_samples_the_exact_distribution():
    """`random_dropping_threshold` (Alg. 2) samples the distribution that Thm 10 is checked on."""
    rng = np.random.default_rng(4)
    eps, eps_prime, tau = np.array([0.3, 0.8, 0.1]), 0.2, 2
    qs = [dp_pair(5, e, rng)[0] for e in eps]
    dist, bottom = alg2_distribution(qs, eps, eps_prime, tau)
    mechanisms = [lambda r, q=q: int(r.choice(len(q), p=q)) for q in qs]
    n = 30_000
    counts, n_bottom = np.zeros_like(dist), 0
    for _ in range(n):
        s = at.random_dropping_threshold(mechanisms, eps, eps_prime, tau, rng)
        if s.index is None:
            n_bottom += 1
            assert s.cost == eps_prime
        else:
            counts[s.index, s.output] += 1
            assert s.cost == pytest.approx(2 * eps[s.index] + eps_prime)
    assert np.allclose(counts / n, dist, atol=4 * np.sqrt(dist / n) + 1e-3)
    assert n_bottom / n == pytest.approx(bottom, abs=4 * math.sqrt(bottom / n) + 1e-3)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_alg3_exact_distribution_satisfies_theorem_11(seed):
    rng = np.random.default_rng(10 + seed)
    eps, eps_prime = np.array([0.5, 0.2, 1.0, 0.2]), 0.1
    pairs = [dp_pair(4, e, rng) for e in eps]
    d0, b0 = alg3_distribution([p[0] for p in pairs], eps, eps_prime)
    d1, b1 = alg3_distribution([p[1] for p in pairs], eps, eps_prime)
    assert d0.sum() + b0 == pytest.approx(1.0, abs=1e-9)
    assert b0 == pytest.approx(b1, rel=1e-12)  # bottom is data independent: ex-post cost 0
    for a, b in ((d0, d1), (d1, d0)):
        for i, e in enumerate(eps):
            assert np.all(a[i] <= math.exp(tuning.pure_dp_cost(e, eps_prime)) * b[i] * (1 + 1e-9))


def test_alg3_check_detects_a_mechanism_that_is_not_eps_dp():
    """Negative control: mechanisms whose true budget is 4 eps_i but are declared eps_i violate Thm 11's bound."""
    rng = np.random.default_rng(3)
    eps, eps_prime = np.array([0.5, 0.2, 1.0]), 0.1
    pairs = [dp_pair(4, 4 * e, rng) for e in eps]
    d0, _ = alg3_distribution([p[0] for p in pairs], eps, eps_prime)
    d1, _ = alg3_distribution([p[1] for p in pairs], eps, eps_prime)
    excess = max(np.max(np.log(a[i] / b[i])) - tuning.pure_dp_cost(e, eps_prime)
                 for a, b in ((d0, d1), (d1, d0)) for i, e in enumerate(eps))
    assert excess > 0.01


def _sample_alg3(qs, eps, eps_prime, dropping, key, copies, n, rng):
    """Frequencies of (index, output) and of bottom over n runs of `tuning.random_dropping_tuning`."""
    mechanisms = [lambda r, q=q: int(r.choice(len(q), p=q)) for q in qs]
    counts, n_bottom = np.zeros((len(qs), len(qs[0]))), 0
    for _ in range(n):
        i, o, _ = tuning.random_dropping_tuning(mechanisms, eps, eps_prime, rng, key, dropping, copies)
        if i is None:
            n_bottom += 1
        else:
            counts[i, o] += 1
    return counts / n, n_bottom / n


def test_alg3_implementation_samples_the_exact_distribution():
    rng = np.random.default_rng(5)
    eps, eps_prime = np.array([0.5, 0.2, 1.0]), 0.3
    qs = [dp_pair(3, e, rng)[0] for e in eps]
    dist, bottom = alg3_distribution(qs, eps, eps_prime)
    freq, freq_bottom = _sample_alg3(qs, eps, eps_prime, "geometric", lambda o, i: (o, i), None, 30_000, rng)
    assert np.allclose(freq, dist, atol=4 * np.sqrt(dist / 30_000) + 1e-3)
    assert freq_bottom == pytest.approx(bottom, abs=4 * math.sqrt(bottom / 30_000) + 1e-3)


def threads_key(o, i):
    """The order Tables 1-2 use (threads.protocol.select): 'accepted' outputs first (here: o >= 2), then the
    smaller index, then the smaller output - not the paper's lexicographic order."""
    return o >= 2, -i, -o


@pytest.mark.parametrize("dropping", ["geometric", "exponential"])
def test_alg3_with_copies_and_the_tables_order_samples_its_exact_distribution(dropping):
    """The sampler the tables call, with copies of each mechanism (as Tables 1-2 give them) and the
    tables' order, against the exact distribution of Alg. 3 over the expanded list of copies."""
    rng = np.random.default_rng(6)
    eps, eps_prime, copies = np.array([0.4, 0.9]), 0.3, np.array([3, 2])
    qs = [dp_pair(4, e, rng)[0] for e in eps]
    expand = np.repeat(np.arange(2), copies)
    # copies of one mechanism are ordered by output alone (equal keys are the same candidate)
    dist_copies, bottom = alg3_distribution([qs[j] for j in expand], eps[expand], eps_prime, dropping,
                                            key=lambda o, c: (*threads_key(o, expand[c]), -c))
    dist = np.array([dist_copies[expand == j].sum(axis=0) for j in range(2)])
    n = 40_000
    freq, freq_bottom = _sample_alg3(qs, eps, eps_prime, dropping, threads_key, copies, n, rng)
    assert np.allclose(freq, dist, atol=4 * np.sqrt(dist / n) + 1e-3)
    assert freq_bottom == pytest.approx(bottom, abs=4 * math.sqrt(bottom / n) + 1e-3)


@pytest.mark.parametrize("seed", [0, 1])
def test_alg3_with_the_tables_order_satisfies_theorem_11(seed):
    """Thm 11 holds for the tables' (non-lexicographic) order: every output, both directions."""
    rng = np.random.default_rng(20 + seed)
    eps, eps_prime = np.array([0.5, 0.2, 1.0]), 0.1
    pairs = [dp_pair(4, e, rng) for e in eps]
    d0, b0 = alg3_distribution([p[0] for p in pairs], eps, eps_prime, key=threads_key)
    d1, b1 = alg3_distribution([p[1] for p in pairs], eps, eps_prime, key=threads_key)
    assert b0 == pytest.approx(b1, rel=1e-12)
    for a, b in ((d0, d1), (d1, d0)):
        for i, e in enumerate(eps):
            assert np.all(a[i] <= math.exp(tuning.pure_dp_cost(e, eps_prime)) * b[i] * (1 + 1e-9))


def renyi(p, q, alpha):
    return math.log(np.sum(p**alpha * q ** (1 - alpha))) / (alpha - 1)


@pytest.mark.parametrize("alpha", [2.0, 8.0])
def test_alg3_exponential_dropping_satisfies_theorem_13(alpha):
    rng = np.random.default_rng(7)
    pure = np.array([0.6, 0.3, 1.2])
    pairs = [dp_pair(3, e, rng) for e in pure]
    # the RDP at order alpha of each mechanism, both directions
    eps = np.array([max(renyi(p, q, alpha), renyi(q, p, alpha)) for p, q in pairs])
    eps_prime = 0.2
    d0, b0 = alg3_distribution([p[0] for p in pairs], eps, eps_prime, "exponential")
    d1, b1 = alg3_distribution([p[1] for p in pairs], eps, eps_prime, "exponential")
    costs, bottom_cost = tuning.rdp_cost(eps, eps_prime, alpha)
    for a, b, ba, bb in ((d0, d1, b0, b1), (d1, d0, b1, b0)):
        total = ba**alpha * bb ** (1 - alpha) * math.exp((1 - alpha) * bottom_cost)
        total += np.sum(a**alpha * b ** (1 - alpha) * np.exp((1 - alpha) * costs[:, None]))
        assert total <= 1 + 1e-6


def test_rdp_cost_minimises_over_l():
    eps, eps_prime, alpha = np.array([0.05, 0.2, 0.4]), 0.01, 10.0
    copies = np.array([30, 10, 5])
    costs, bottom = tuning.rdp_cost(eps, eps_prime, alpha, copies)
    tau = np.sum(copies * eps_prime / (eps_prime + eps))
    assert bottom == pytest.approx(math.log(tau + 1) / (alpha - 1))
    for i in range(3):
        others = copies.astype(float).copy()
        others[i] -= 1
        grid = np.linspace(0, 200, 200_001)
        values = [(2 + l) * eps[i] + (1 + l) * eps_prime + (math.log(tau + 1) + np.sum(others * np.exp(-eps * (1 + alpha * l)))) / (alpha - 1) for l in grid[::100]]
        assert costs[i] <= min(values) + 1e-9
        assert costs[i] >= min(values) - 1e-3


# --- invocation counts, TNB, Papernot-Steinke --------------------------------------------------

@pytest.mark.parametrize("dropping", ["geometric", "exponential"])
def test_alg3_invocation_count_matches_monte_carlo(dropping):
    rng = np.random.default_rng(3)
    copies, eps, eps_prime = 400, 0.1, 0.01
    k = distributions.sample_k(eps_prime, dropping, rng, size=200_000)
    runs = rng.binomial(copies, np.exp(-eps * k))
    mean, sd = distributions.alg3_invocations(copies, eps, eps_prime, dropping)
    assert runs.mean() == pytest.approx(mean, rel=0.01)
    assert runs.std() == pytest.approx(sd, rel=0.02)


@pytest.mark.parametrize("eta, mean", [(0.1, 20.0), (1.0, 5.0), (0.0, 8.0), (2.5, 50.0)])
def test_truncated_negative_binomial(eta, mean):
    gamma = distributions.tnb_gamma(eta, mean)
    m, sd = distributions.tnb_moments(eta, gamma)
    assert m == pytest.approx(mean, rel=1e-6)
    assert distributions.tnb_pmf(np.arange(1, 200_000), eta, gamma).sum() == pytest.approx(1.0, abs=1e-6)
    rng = np.random.default_rng(0)
    draws = np.array([distributions.sample_tnb(eta, gamma, rng) for _ in range(40_000)])
    assert draws.min() >= 1
    assert draws.mean() == pytest.approx(mean, rel=0.04)
    assert draws.std() == pytest.approx(sd, rel=0.06)


@pytest.mark.parametrize("eta, mean", [(1.0, 10.0), (0.0, 5.0), (0.5, 30.0), (3.0, 2.0)])
def test_papernot_steinke_rdp_matches_dp_accounting(eta, mean):
    orders = np.array([1.5, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64])
    sigma = 2.0
    event = dp_accounting.PoissonSampledDpEvent(0.02, dp_accounting.GaussianDpEvent(sigma))
    inner = rdp_lib.RdpAccountant(list(orders))
    inner.compose(dp_accounting.SelfComposedDpEvent(event, 500))
    ours = baselines.papernot_steinke_rdp(orders, inner._rdp, eta, mean)
    ours_monotone = np.minimum.accumulate(ours[::-1])[::-1]  # RDP is non-decreasing in the order
    acc = rdp_lib.RdpAccountant(list(orders))
    acc.compose(dp_accounting.dp_event.RepeatAndSelectDpEvent(dp_accounting.SelfComposedDpEvent(event, 500), mean, eta))
    np.testing.assert_allclose(ours_monotone, acc._rdp, rtol=1e-9)


# --- filters and conversions ---------------------------------------------------------------------

def test_filter_never_exceeds_budget():
    rng = np.random.default_rng(0)
    for _ in range(200):
        f = expost_filter.ExPostFilter(rng.uniform(0.5, 5))
        for _ in range(100):
            worst = rng.exponential(0.5)
            if f.admits(worst):
                f.charge(worst * rng.random(), worst)
            assert f.spent <= f.budget * (1 + 1e-12)
        with pytest.raises(Exception):
            f.charge(0.0, f.remaining + 1.0)


def test_filter_charges_exactly_the_realised_costs_of_a_scripted_sequence():
    """Admission uses the worst case; the charge is the realised cost; a refused mechanism costs nothing."""
    f = expost_filter.ExPostFilter(1.0)
    script = [(0.3, 0.1, True), (0.5, 0.5, True), (0.6, 0.0, False), (0.4, 0.2, True), (0.2, 0.2, True), (0.05, 0.0, False)]
    spent = 0.0
    for worst, realised, admitted in script:
        assert f.admits(worst) is admitted, (worst, f.spent)
        if admitted:
            f.charge(realised, worst)
            spent += realised
        assert f.spent == pytest.approx(spent)
    assert f.charges == [(0.1, 0.3), (0.5, 0.5), (0.2, 0.4), (0.2, 0.2)]
    assert f.spent == pytest.approx(1.0) and not f.admits(1e-9) and f.admits(0.0)
    with pytest.raises(Exception):
        f.charge(0.3, 0.2)   # a realised cost above its declared worst case is refused


def test_lemma7_conversion_on_all_subsets():
    """Ex-post (alpha, eps~)-RDP => ex-post (eps~ + log(1/delta)/(alpha-1), delta)-DP, checked on
    every subset of a 10-point output space for an output-dependent eps~."""
    rng = np.random.default_rng(2)
    alpha, delta = 4.0, 1e-2
    p, q = rng.dirichlet(np.ones(10)), rng.dirichlet(np.ones(10))
    # an output-dependent eps~ that satisfies Def. 6 with equality
    eps_t = np.log(p / q) * 0.5
    eps_t = np.maximum(eps_t, 0.0)
    scale = np.sum(p**alpha / (np.exp(eps_t) * q) ** (alpha - 1))
    eps_t = eps_t + math.log(scale) / (alpha - 1)
    assert np.sum(p**alpha / (np.exp(eps_t) * q) ** (alpha - 1)) == pytest.approx(1.0)
    eps_dp = np.array([expost_filter.rdp_to_dp(e, alpha, delta) for e in eps_t])
    for mask in itertools.product((False, True), repeat=10):
        s = np.array(mask)
        assert p[s].sum() <= np.sum(np.exp(eps_dp[s]) * q[s]) + delta + 1e-12


# --- baselines -----------------------------------------------------------------------------------

def test_laplace_noise_reduction_marginals_and_coupling():
    grid = np.array([0.1, 0.2, 0.4])
    rng = np.random.default_rng(0)
    noises = np.array([baselines.laplace_noise_reduction_noises(grid, rng) for _ in range(40_000)])
    for j, e in enumerate(grid):
        assert stats.kstest(noises[:, j], stats.laplace(scale=1 / e).cdf).pvalue > 1e-3
    # consecutive releases coincide with probability (eps_j / eps_{j+1})^2 = 1/4
    assert np.mean(noises[:, 0] == noises[:, 1]) == pytest.approx(0.25, abs=0.01)


def test_brownian_boundary_crossing_probability():
    """P(exists t: W(t) >= a + b t) = exp(-2ab) = delta: a fine-grid Monte Carlo stays below and near it."""
    delta = 0.1
    a, b = baselines.brownian_boundary(4.0, delta)
    assert math.exp(-2 * a * b) == pytest.approx(delta)
    rng = np.random.default_rng(1)
    times = np.linspace(0.005, 40.0, 8000)
    crossed = 0
    for _ in range(50):
        w = np.cumsum(rng.normal(0, np.sqrt(np.diff(np.concatenate([[0], times]))), size=(200, len(times))), axis=1)
        crossed += np.any(w >= a + b * times, axis=1).sum()
    assert 0.07 <= crossed / 10_000 <= delta + 0.01


def test_zcdp_conversion_against_dp_accounting():
    delta = 1e-6
    for eps in (0.01, 0.5, 10.0):
        rho = float(baselines.zcdp_rho(eps, delta))
        assert baselines.zcdp_epsilon(rho, delta) == pytest.approx(eps)
        sigma = 1 / math.sqrt(2 * rho)
        acc = rdp_lib.RdpAccountant()
        acc.compose(dp_accounting.GaussianDpEvent(sigma))
        assert acc.get_epsilon(delta) <= eps * (1 + 1e-9)   # zCDP's conversion is valid (looser)
        assert acc.get_epsilon(delta) >= 0.7 * eps


def test_thm12_repetitions():
    t = distributions.repetitions(0.1, 0.05, np.array([0.01, 0.02]), 0.01)
    assert t.tolist() == [math.ceil(10 * 40 * math.log(40)), math.ceil(10 * 1600 * math.log(40))]


@pytest.mark.parametrize("alpha", [2.0, 6.0])
def test_alg3_theorem_13_with_repeated_mechanisms(alpha):
    """Copies [2, 1, 3] of three mechanisms: the exact distribution of Alg. 3 over the six candidates
    against rdp_cost's per-mechanism bound (copies counted in tau and in the sum over j != i)."""
    rng = np.random.default_rng(11)
    pure = np.array([0.5, 1.0, 0.25])
    copies = np.array([2, 1, 3])
    pairs = [dp_pair(3, e, rng) for e in pure]
    eps = np.array([max(renyi(p, q, alpha), renyi(q, p, alpha)) for p, q in pairs])
    expand = np.repeat(np.arange(3), copies)
    eps_prime = 0.3
    d0, b0 = alg3_distribution([pairs[j][0] for j in expand], eps[expand], eps_prime, "exponential")
    d1, b1 = alg3_distribution([pairs[j][1] for j in expand], eps[expand], eps_prime, "exponential")
    costs, bottom_cost = tuning.rdp_cost(eps, eps_prime, alpha, copies)
    for a, b, ba, bb in ((d0, d1, b0, b1), (d1, d0, b1, b0)):
        total = ba**alpha * bb ** (1 - alpha) * math.exp((1 - alpha) * bottom_cost)
        total += np.sum(a**alpha * b ** (1 - alpha) * np.exp((1 - alpha) * costs[expand][:, None]))
        assert total <= 1 + 1e-6
        # every copy's output is charged, so the bound must exceed the plain RDP of one run
        assert np.all(costs > eps)


class _RecordNormals:
    """A generator whose `normal` draws are kept: the Brownian method's path increments."""

    def __init__(self, rng):
        self.rng, self.draws = rng, []

    def normal(self, loc, scale):
        out = self.rng.normal(loc, scale)
        self.draws.append(np.atleast_1d(out))
        return out


def _brownian_runs(counts, s, runs, rng, method):
    """Per run: the released increments of every thread up to its stop, and the charges. The stop is
    recomputed from the released values alone (the first y_j = B(t_j)/t_j that passes the accept test)
    and must match what the method charged: t_stop/2."""
    from dptradeoff.expost import threads
    transcripts = []
    for _ in range(runs):
        recorder = _RecordNormals(rng)
        out = method.run(counts, s, recorder)
        transcript, remaining = [], s.rho
        for (realised, worst), noise, f in zip(out.charges, recorder.draws, counts):
            times = s.grid[baselines.zcdp_brownian_rho(s.grid) <= remaining * (1 + 1e-12)]
            assert worst == pytest.approx(float(baselines.zcdp_brownian_rho(times[-1])))
            dt = np.diff(np.concatenate([[0.0], times]))
            released = np.cumsum(f * dt + noise) / times
            passed = [j for j in range(len(times)) if threads.accepted(released[j], 1 / math.sqrt(times[j]))]
            stop = passed[0] if passed else len(times) - 1
            assert realised == pytest.approx(float(baselines.zcdp_brownian_rho(times[stop])))
            transcript.append((dt[: stop + 1], (f * dt + noise)[: stop + 1]))
            remaining -= realised
        transcripts.append((transcript, out.charges, out.spent))
    return transcripts


def _privacy_loss(transcript, counts, neighbour):
    """log p_D / p_D' of the released increments, from their Gaussian densities (scipy), not from the
    W(t) + t/2 formula the proof uses."""
    return sum(float(np.sum(stats.norm.logpdf(x, f * dt, np.sqrt(dt)) - stats.norm.logpdf(x, g * dt, np.sqrt(dt))))
               for (dt, x), f, g in zip(transcript, counts, neighbour))


@pytest.mark.parametrize("alpha", [2.0, 3.0])
def test_brownian_stopped_adaptively_and_charged_t_over_2_is_rho_zcdp(alpha):
    """Table 2's Brownian method in its zCDP filter: each thread's path stops at the first accepted
    release (a data-dependent time) and is charged rho = t/2. Neighbours: every count differs by 1 (a
    user in every thread). With L the privacy loss of the released increments and S the rho charged,
    E_D[exp((alpha - 1)(L - alpha S))] = 1 for every stopping rule that reads only the releases (the
    exponential martingale), so the charges are exact ex-post zCDP costs, and with S <= rho the run is
    rho-zCDP. Checked by Monte Carlo with counts at which runs stop early in some trials and exhaust the
    budget in others; the stops are recomputed from the released values, and the stopping pattern's
    probability under D' is checked against its likelihood-ratio estimate from D (a stopping rule that
    read the data rather than the releases would fail that)."""
    from dptradeoff.expost import threads
    s = threads.Setting(budget=3.0, delta=1e-6, grid=baselines.geometric_grid(0.001, math.sqrt(2), 3.0))
    counts, neighbour = np.array([150, 100, 70]), np.array([149, 99, 69])
    runs = _brownian_runs(counts, s, 10_000, np.random.default_rng(11), threads.Brownian())
    losses = np.array([_privacy_loss(t, counts, neighbour) for t, _, _ in runs])
    spent = np.array([sp for *_, sp in runs])
    assert spent.max() <= s.rho * (1 + 1e-12) and spent.std() > 0.05 * s.rho    # the stopping is adaptive
    tilted = np.exp((alpha - 1) * (losses - alpha * spent))
    assert tilted.mean() == pytest.approx(1.0, abs=4 * tilted.std() / math.sqrt(len(tilted)))
    # the stopping pattern's law under D' (run directly) equals E_D[e^{-L} 1{pattern}]
    patterns = [charges for _, charges, _ in runs]
    on_neighbour = [charges for _, charges, _ in _brownian_runs(neighbour, s, 10_000, np.random.default_rng(12),
                                                                threads.Brownian())]
    for pattern in sorted(set(patterns), key=patterns.count)[-3:]:
        weights = np.exp(-losses) * np.array([p == pattern for p in patterns])
        frequency = np.mean([p == pattern for p in on_neighbour])
        error = math.sqrt(weights.var() / len(weights) + frequency * (1 - frequency) / len(on_neighbour))
        assert weights.mean() == pytest.approx(frequency, abs=5 * error), pattern
