"""The first-order estimate of paper 002: eq. 6 (dL/d eps), eq. 9 (loss at another eps), eq. 17
(the eps for a target loss) and eq. 18 (the model at another eps).

With W = Hessian L(theta_eps) + (lam + delta_eps) I (eq. 6's W_eps) and v = b'_eps / n + delta'_eps theta_eps,
d theta / d eps = -W^{-1} v and dL/d eps = -grad L(theta_eps)' W^{-1} v. For our noise b = (G u)/beta_eps,
b'_eps = -b_eps beta'_eps / beta_eps: paper 002 eq. 13 with the same uniform draws.
"""
from __future__ import annotations

import numpy as np

from .objective_perturbation import Noise, gradient, loss_derivatives


def solve_w(x: np.ndarray, y: np.ndarray, theta: np.ndarray, loss: str, c: float, ridge: float, v: np.ndarray,
            gram: np.ndarray | None = None) -> np.ndarray:
    """W^{-1} v for W = (1/n) X' D X + ridge I, D = diag(loss''(z_i)) (z_i = y_i theta'x_i; y^2 = 1).

    Dense for d <= n; otherwise Woodbury with Z = D^{1/2} X / sqrt(n): W^{-1} = (I - Z'(ridge I + Z Z')^{-1} Z)/ridge,
    where Z Z' = D^{1/2} gram D^{1/2} / n when `gram` = X X' is given (n^2 instead of n^2 d)."""
    n, d = x.shape
    second = loss_derivatives(loss, y * (x @ theta), c)[1]
    if d <= n:
        w = (x.T * second) @ x / n + ridge * np.eye(d)
        return np.linalg.solve(w, v)
    scale = np.sqrt(second / n)
    if gram is None:
        z = x * scale[:, None]
        inner = ridge * np.eye(n) + z @ z.T
        return (v - z.T @ np.linalg.solve(inner, z @ v)) / ridge
    inner = ridge * np.eye(n) + scale[:, None] * gram * scale[None, :]
    return (v - x.T @ (scale * np.linalg.solve(inner, scale * (x @ v)))) / ridge


def theta_derivative(x, y, theta, b, noise: Noise, loss: str, c: float, lam: float, gram=None) -> np.ndarray:
    """d theta_eps / d eps (one model: theta, b of shape (d,)); `gram` as in `solve_w`."""
    n = len(x)
    b_prime = -b * noise.d_beta / noise.beta
    v = b_prime / n + noise.d_delta * theta
    return -solve_w(x, y, theta, loss, c, lam + noise.delta, v, gram)


def loss_derivative(x, y, theta, b, noise: Noise, loss: str, c: float, lam: float, gram=None) -> float:
    """Paper 002 eq. 6: dL(theta_eps, D)/d eps; `gram` as in `solve_w`."""
    grad = gradient(theta[None, :], x, y, loss, c)[0]
    return float(grad @ theta_derivative(x, y, theta, b, noise, loss, c, lam, gram))


def estimate_loss(loss_at_eps: float, derivative: float, eps: float, targets) -> np.ndarray:
    """Eq. 9: L(theta_eps') ~ L(theta_eps) + dL/d eps (eps' - eps)."""
    return loss_at_eps + derivative * (np.asarray(targets, dtype=float) - eps)


def epsilon_for_loss(loss_at_eps: float, derivative: float, eps: float, target_loss: float) -> float:
    """Eq. 17: the eps' whose estimated loss is `target_loss`."""
    return eps + (target_loss - loss_at_eps) / derivative


def estimate_model(theta: np.ndarray, d_theta: np.ndarray, eps: float, target: float) -> np.ndarray:
    """Eq. 18: theta_eps' ~ theta_eps + (d theta/d eps)(eps' - eps)."""
    return theta + d_theta * (target - eps)
