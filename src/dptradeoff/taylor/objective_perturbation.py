"""Objective perturbation (Chaudhuri, Monteleoni, Sarwate 2011, Alg. 2) as written in paper 002 §3.2.

theta_eps = argmin L(theta, D) + (lam/2)||theta||^2 + (1/n) b'theta + (delta_eps/2)||theta||^2,
L the mean loss over n rows with ||x|| <= 1, labels +-1, b with density proportional to
exp(-beta_eps ||b||) (its norm is Gamma(d, 1/beta), its direction uniform). With
L0 = log(1 + 2c/(n lam) + c^2/(n lam)^2) (c bounds the loss's second derivative):
  eps >  L0: beta = (eps - L0)/2, delta_eps = 0;
  eps <= L0: beta = eps/4,         delta_eps = c/(n(e^{eps/4} - 1)) - lam.
Either way the privacy loss 2 beta + 2 log(1 + c/(n(lam + delta_eps))) equals eps (pure DP,
replace-one neighbours; tests recompute it).

Paper 002 §6.1 calls its mechanism "output perturbation" and samples each coordinate of b from
a Laplace distribution; its analysis and formulas are objective perturbation, which is what we
build, with the noise density the privacy proof needs.

Losses (paper 002 eq. 19), on the margin z = y theta'x: logistic log(1 + e^{-z}) (c = 1/4) and
Huber SVM with h = 1/(2c) (c = 1/(2h), second derivative 1/(2h) on |1 - z| <= h).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import UserError

LOSSES = ("logistic", "huber")


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


def noise_shape(d: int, rng: np.random.Generator, size: int) -> np.ndarray:
    """`size` draws of G u with G ~ Gamma(d, 1) and u uniform on the sphere: b = (G u)/beta has
    density proportional to exp(-beta ||b||). Keeping G u fixed while eps varies couples the noises
    of different eps (paper 002's "same uniform draws")."""
    u = rng.normal(size=(size, d))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    return rng.gamma(d, 1.0, size=(size, 1)) * u


def huber_h(c: float) -> float:
    return 1.0 / (2.0 * c)


def loss_terms(loss: str, z: np.ndarray, c: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Value, first and second derivative of the loss at margins z."""
    return (loss_value(loss, z, c), *loss_derivatives(loss, z, c))


def loss_value(loss: str, z: np.ndarray, c: float) -> np.ndarray:
    if loss == "logistic":
        return np.logaddexp(0.0, -z)
    if loss == "huber":
        h = huber_h(c)
        return np.where(z > 1 + h, 0.0, np.where(z < 1 - h, 1 - z, (1 + h - z) ** 2 / (4 * h)))
    raise UserError(f"Unknown loss {loss!r}; use one of {', '.join(LOSSES)}.")


def loss_derivatives(loss: str, z: np.ndarray, c: float) -> tuple[np.ndarray, np.ndarray]:
    """First and second derivative of the loss at margins z (what training needs: the value's
    logaddexp was a third of gradient descent's elementwise work)."""
    if loss == "logistic":
        s = 0.5 * (1.0 - np.tanh(0.5 * z))          # sigmoid(-z)
        return -s, s * (1.0 - s)
    if loss == "huber":
        h = huber_h(c)
        first = np.where(z > 1 + h, 0.0, np.where(z < 1 - h, -1.0, -(1 + h - z) / (2 * h)))
        second = np.where(np.abs(1 - z) <= h, 1 / (2 * h), 0.0)
        return first, second
    raise UserError(f"Unknown loss {loss!r}; use one of {', '.join(LOSSES)}.")


def empirical_loss(theta: np.ndarray, x: np.ndarray, y: np.ndarray, loss: str, c: float) -> np.ndarray:
    """L(theta, D) for each row of theta (shape (r, d)) -> (r,)."""
    z = y[:, None] * (x @ theta.T)
    return loss_value(loss, z, c).mean(axis=0)


def gradient(theta: np.ndarray, x: np.ndarray, y: np.ndarray, loss: str, c: float) -> np.ndarray:
    """grad L(theta, D) for each row of theta -> (r, d)."""
    z = y[:, None] * (x @ theta.T)
    first = loss_derivatives(loss, z, c)[0]
    return ((first * y[:, None]).T @ x) / len(x)


def train_gd_with_derivative(x: np.ndarray, y: np.ndarray, loss: str, c: float, lam: float, noises: list[Noise],
                             shape: np.ndarray, iterations: int, learning_rate: float,
                             gram: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Gradient descent from 0 for every eps (b = shape / beta_eps) and, alongside, the exact
    derivative J = d theta_T / d eps of the iterate it returns (forward sensitivity:
    J <- J - lr (H J + (lam + delta) J + delta' theta + b'/n)). At convergence J equals eq. 6's
    -W^{-1}(b'/n + delta' theta); after 100 small steps it does not, and this is the derivative of
    the model actually trained.

    With `gram` = x x' (worth it when d > n: Gisette) the same iteration runs in the row space:
    both iterates stay of the form C x + k shape (C: (r, n), k: (r, 1)), so x theta' = gram C' + (x shape) k'
    and a step costs n^2 instead of n d per model. Equal to the form above up to rounding (tests)."""
    n, d = x.shape
    beta = np.array([nz.beta for nz in noises])[:, None]
    delta = np.array([nz.delta for nz in noises])[:, None]
    d_beta = np.array([nz.d_beta for nz in noises])[:, None]
    d_delta = np.array([nz.d_delta for nz in noises])[:, None]
    if gram is not None:
        return _train_gd_with_derivative_gram(x, gram, y, loss, c, lam + delta, beta, d_beta, d_delta, shape,
                                              iterations, learning_rate)
    b = shape[None, :] / beta
    b_prime = -b * d_beta / beta
    theta, jac = np.zeros_like(b), np.zeros_like(b)
    for _ in range(iterations):
        z = y[:, None] * (x @ theta.T)
        first, second = loss_derivatives(loss, z, c)
        grad = ((first * y[:, None]).T @ x) / n
        hess_j = ((second * (x @ jac.T)).T @ x) / n            # y^2 = 1
        step_theta = grad + (lam + delta) * theta + b / n
        step_jac = hess_j + (lam + delta) * jac + d_delta * theta + b_prime / n
        theta = theta - learning_rate * step_theta
        jac = jac - learning_rate * step_jac
    return theta, jac


def _train_gd_with_derivative_gram(x, gram, y, loss, c, ridge, beta, d_beta, d_delta, shape, iterations, learning_rate):
    """`train_gd_with_derivative` with theta = A x + p shape and J = B x + q shape (ridge = lam + delta_eps;
    every per-eps array of shape (r, 1)): the coefficients take the same gradient-descent steps."""
    n, r = len(x), len(beta)
    along_shape = x @ shape                                    # x shape, (n,)
    a, b = np.zeros((r, n)), np.zeros((r, n))                  # row-space coefficients of theta and J
    p, q = np.zeros((r, 1)), np.zeros((r, 1))                  # their coefficients on the noise direction
    for _ in range(iterations):
        scores = gram @ np.concatenate([a, b]).T               # x (A x)' and x (B x)', (n, 2r)
        x_theta = scores[:, :r] + along_shape[:, None] * p.T   # x theta'
        x_jac = scores[:, r:] + along_shape[:, None] * q.T     # x J'
        first, second = loss_derivatives(loss, y[:, None] * x_theta, c)
        step_a = (first * y[:, None]).T / n + ridge * a        # grad L = (first y)' x / n
        step_p = ridge * p + 1.0 / (beta * n)                  # b / n = shape / (beta n)
        step_b = (second * x_jac).T / n + ridge * b + d_delta * a   # H J = (second x J')' x / n (y^2 = 1)
        step_q = ridge * q + d_delta * p - d_beta / (beta**2 * n)   # b' / n = -shape d_beta / (beta^2 n)
        a, p = a - learning_rate * step_a, p - learning_rate * step_p
        b, q = b - learning_rate * step_b, q - learning_rate * step_q
    return a @ x + p * shape[None, :], b @ x + q * shape[None, :]


def train(x: np.ndarray, y: np.ndarray, loss: str, c: float, lam: float, deltas: np.ndarray, b: np.ndarray,
          solver: str, iterations: int, learning_rate: float) -> np.ndarray:
    """Minimise the perturbed objective for each row of b (shape (r, d)) with its delta_eps.

    solver "gd": `iterations` steps of full-batch gradient descent from 0 with `learning_rate`
    (paper 002 §6.1: 100 steps, 0.01); "exact": L-BFGS to convergence (the minimiser the Taylor
    analysis assumes)."""
    n, d = x.shape
    deltas = np.asarray(deltas, dtype=float)[:, None]
    if solver == "gd":
        theta = np.zeros_like(b)
        for _ in range(iterations):
            theta -= learning_rate * (gradient(theta, x, y, loss, c) + (lam + deltas) * theta + b / n)
        return theta
    if solver == "exact":
        from scipy import optimize

        out = np.empty_like(b)
        for i in range(len(b)):
            def objective(t, i=i):
                th = t[None, :]
                value = empirical_loss(th, x, y, loss, c)[0] + 0.5 * (lam + deltas[i, 0]) * t @ t + b[i] @ t / n
                grad = gradient(th, x, y, loss, c)[0] + (lam + deltas[i, 0]) * t + b[i] / n
                return value, grad
            res = optimize.minimize(objective, np.zeros(d), jac=True, method="L-BFGS-B",
                                    options={"maxiter": 10_000, "gtol": 1e-12, "ftol": 1e-15})
            out[i] = res.x
        return out
    raise UserError(f"Unknown solver {solver!r}; use gd or exact.")
