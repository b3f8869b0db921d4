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
