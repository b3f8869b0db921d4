"""Paper 002: objective perturbation's privacy parameters and noise, and the first-order estimate."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dptradeoff.taylor import estimate, objective_perturbation as op


def problem(n=300, d=5, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    y = np.where(x @ rng.normal(size=d) + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return x, y, rng


@pytest.mark.parametrize("eps", [0.05, 0.3, 1.0, 5.0, 20.0])
@pytest.mark.parametrize("n, lam", [(10_000, 1e-6), (300, 0.01)])
def test_privacy_loss_recomputed_equals_eps(eps, n, lam):
    """Chaudhuri et al.'s bound 2 beta + 2 log(1 + c/(n(lam + delta))) gives back eps in both branches."""
    nz = op.noise_parameters(eps, n, lam, 0.25)
    assert nz.delta >= 0
    assert op.privacy_loss(nz.beta, nz.delta, n, lam, 0.25) == pytest.approx(eps)
    h = 1e-6   # derivatives of beta and delta
    up, down = op.noise_parameters(eps + h, n, lam, 0.25), op.noise_parameters(eps - h, n, lam, 0.25)
    assert nz.d_beta == pytest.approx((up.beta - down.beta) / (2 * h), rel=1e-5)
    assert nz.d_delta == pytest.approx((up.delta - down.delta) / (2 * h), rel=1e-4, abs=1e-12)


def test_noise_has_density_proportional_to_exp_minus_beta_norm():
    d, beta = 7, 0.8
    b = op.noise_shape(d, np.random.default_rng(0), 20_000) / beta
    norms = np.linalg.norm(b, axis=1)
    assert stats.kstest(norms, stats.gamma(d, scale=1 / beta).cdf).pvalue > 1e-3
    directions = b / norms[:, None]
    assert np.abs(directions.mean(axis=0)).max() < 0.02      # uniform direction


@pytest.mark.parametrize("loss", ["logistic", "huber"])
@pytest.mark.parametrize("eps, lam", [(0.3, 0.01), (3.0, 0.01), (0.3, 1e-3)])
def test_eq6_derivative_matches_finite_difference(loss, eps, lam):
    x, y, rng = problem()
    c = 0.25
    shape = op.noise_shape(x.shape[1], rng, 1)[0]

    def solve(e):
        nz = op.noise_parameters(e, len(x), lam, c)
        b = shape / nz.beta
        return op.train(x, y, loss, c, lam, np.array([nz.delta]), b[None], "exact", 0, 0.0)[0], nz, b

    theta, nz, b = solve(eps)
    h = 1e-4
    fd = (op.empirical_loss(solve(eps + h)[0][None], x, y, loss, c)[0]
          - op.empirical_loss(solve(eps - h)[0][None], x, y, loss, c)[0]) / (2 * h)
    assert estimate.loss_derivative(x, y, theta, b, nz, loss, c, lam) == pytest.approx(fd, rel=1e-4, abs=1e-9)
    # eq. 18: the model at eps + h predicted from eps
    d_theta = estimate.theta_derivative(x, y, theta, b, nz, loss, c, lam)
    np.testing.assert_allclose(estimate.estimate_model(theta, d_theta, eps, eps + h), solve(eps + h)[0], rtol=1e-5, atol=1e-7)


def test_woodbury_solve_equals_dense():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(20, 50))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    y = np.sign(rng.normal(size=20))
    theta, v = rng.normal(size=50), rng.normal(size=50)
    for loss in ("logistic", "huber"):
        second = op.loss_terms(loss, y * (x @ theta), 0.25)[2]
        w = (x.T * second) @ x / 20 + 0.01 * np.eye(50)
        np.testing.assert_allclose(estimate.solve_w(x, y, theta, loss, 0.25, 0.01, v), np.linalg.solve(w, v), rtol=1e-8)


def test_eq17_inverts_eq9():
    eps = estimate.epsilon_for_loss(0.5, -0.2, 0.25, 0.45)
    assert estimate.estimate_loss(0.5, -0.2, 0.25, [eps])[0] == pytest.approx(0.45)
    assert math.isclose(eps, 0.5)


def test_huber_loss_is_continuous_with_bounded_curvature():
    z = np.linspace(-3, 5, 10_001)
    value, first, second = op.loss_terms("huber", z, 0.25)
    assert np.max(np.abs(np.diff(value))) < 1e-3 and np.max(second) == pytest.approx(0.25)
    np.testing.assert_allclose(np.gradient(value, z)[1:-1], first[1:-1], atol=2e-3)


@pytest.mark.parametrize("loss", ["logistic", "huber"])
def test_unrolled_derivative_of_gradient_descent_matches_finite_difference(loss):
    x, y, rng = problem(n=200, d=4, seed=3)
    c, lam, eps = 0.25, 0.01, 0.4
    shape = op.noise_shape(x.shape[1], rng, 1)[0]
    h = 1e-5
    noises = [op.noise_parameters(e, len(x), lam, c) for e in (eps - h, eps, eps + h)]
    thetas, jacs = op.train_gd_with_derivative(x, y, loss, c, lam, noises, shape, 100, 0.5)
    # the same iterate as the plain solver
    b = np.stack([shape / nz.beta for nz in noises])
    np.testing.assert_allclose(thetas, op.train(x, y, loss, c, lam, np.array([nz.delta for nz in noises]), b, "gd", 100, 0.5))
    np.testing.assert_allclose(jacs[1], (thetas[2] - thetas[0]) / (2 * h), rtol=1e-4, atol=1e-8)


@pytest.mark.parametrize("loss", ["logistic", "huber"])
def test_row_space_form_equals_the_feature_space_form(loss):
    """With more features than rows (Gisette), training and W^-1 v run on the Gram matrix x x':
    the same iterates, derivatives and solves up to rounding."""
    rng = np.random.default_rng(8)
    n, d = 40, 300
    x = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.2)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    y = np.sign(rng.normal(size=n))
    c, lam = 0.25, 1e-6
    noises = [op.noise_parameters(e, n, lam, c) for e in (0.05, 0.3, 1.0, 4.0)]   # delta_eps > 0 and = 0
    shape = op.noise_shape(d, rng, 1)[0]
    gram = x @ x.T
    plain = op.train_gd_with_derivative(x, y, loss, c, lam, noises, shape, 100, 0.5)
    rows = op.train_gd_with_derivative(x, y, loss, c, lam, noises, shape, 100, 0.5, gram)
    for ours, theirs in zip(rows, plain):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12 * np.abs(theirs).max())
    theta, v = plain[0][1], rng.normal(size=d)
    np.testing.assert_allclose(estimate.solve_w(x, y, theta, loss, c, 0.01, v, gram),
                               estimate.solve_w(x, y, theta, loss, c, 0.01, v), rtol=1e-10)


def _chaudhuri_parameters(eps, n, lam, c):
    """Chaudhuri, Monteleoni, Sarwate 2011, Alg. 2, as printed: eps' = eps - log(1 + 2c/(n lam) + c^2/(n^2 lam^2));
    Delta = 0 if eps' > 0, else Delta = c/(n(e^{eps/4} - 1)) - lam and eps' = eps/2; b ~ exp(-(eps'/2) ||b||)."""
    eps_p = eps - math.log(1 + 2 * c / (n * lam) + c**2 / (n**2 * lam**2))
    if eps_p > 0:
        return eps_p / 2, 0.0
    return eps / 4, c / (n * math.expm1(eps / 4)) - lam


def _log_density_of_theta(theta, x, y, beta, big_lambda):
    """log p(theta | D) up to a constant shared by neighbours: theta is the minimiser of
    L(theta) + (Lambda/2)||theta||^2 + b'theta/n iff b = -n(grad L(theta) + Lambda theta), so
    p(theta) = nu(b(theta)) |det db/dtheta| with nu proportional to exp(-beta ||b||) (logistic loss, d = 2)."""
    n = len(x)
    z = y[:, None] * (x @ theta.T)                       # (n, points)
    first = -1 / (1 + np.exp(z))                         # d/dz log(1 + e^{-z})
    second = np.exp(-np.logaddexp(0, z) - np.logaddexp(0, -z))   # sigmoid(z) sigmoid(-z)
    grad = ((first * y[:, None]).T @ x) / n              # (points, 2)
    b = -n * (grad + big_lambda * theta)
    h = np.einsum("np,ni,nj->pij", second, x, x) / n + big_lambda * np.eye(2)
    return -beta * np.linalg.norm(b, axis=1) + np.log(np.linalg.det(h))


@pytest.mark.parametrize("eps, lam", [(4.0, 0.1), (0.5, 0.1), (1.0, 0.02)])
def test_objective_perturbation_privacy_loss_from_the_density_of_theta(eps, lam):
    """Independent of the module's own bound: the module's beta and delta are Chaudhuri et al.'s, and the
    log density ratio of the released theta on neighbouring datasets (one row replaced), computed by
    change of variables on a grid of theta, never exceeds eps."""
    c, n = 0.25, 4
    nz = op.noise_parameters(eps, n, lam, c)
    beta, big_delta = _chaudhuri_parameters(eps, n, lam, c)
    assert nz.beta == pytest.approx(beta, rel=1e-12) and nz.delta == pytest.approx(big_delta, rel=1e-12, abs=1e-15)
    angles = np.linspace(0, 2 * np.pi, 181)[:-1]
    radii = np.concatenate([np.linspace(0, 5, 26), np.geomspace(5.5, 400, 40)])
    theta = (radii[:, None, None] * np.stack([np.cos(angles), np.sin(angles)], axis=-1)[None]).reshape(-1, 2)
    base = np.array([[1.0, 0.0], [0.0, 1.0], [-0.6, 0.8], [0.8, 0.6]])
    labels = np.array([1.0, -1.0, 1.0, 1.0])
    worst = 0.0
    for a in angles[::15]:
        for label in (1.0, -1.0):
            other_x, other_y = base.copy(), labels.copy()
            other_x[-1], other_y[-1] = [math.cos(a), math.sin(a)], label
            ratio = (_log_density_of_theta(theta, base, labels, nz.beta, lam + nz.delta)
                     - _log_density_of_theta(theta, other_x, other_y, nz.beta, lam + nz.delta))
            worst = max(worst, np.abs(ratio).max())
    assert worst <= eps + 1e-9
    assert worst >= 0.4 * eps    # the grid reaches the bound's order: the check can fail
