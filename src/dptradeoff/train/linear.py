"""DP-SGD / DP-Adam for linear models with closed-form per-example gradients, vectorised over the
lot and over R independent replications at once.

Every loss here is phi(w.x, y) for a scalar function phi, so the per-example gradient is
c_i * x_i with c_i = dphi/d(w.x), its norm is |c_i| * ||x_i||, and the sum of clipped
gradients is sum_i c_i min(1, L / (|c_i| ||x_i||)) x_i: no per-example gradient is ever stored.
A constant 1 feature is appended, so w includes the bias.

Losses (labels y in {-1, +1} for the classifiers):
- "logistic": log(1 + exp(-y w.x));
- "hinge": max(0, 1 - y w.x), the standard (non-squared) hinge of a linear SVM, with
  subgradient -y x where the margin is < 1 and 0 otherwise;
- "squared": (w.x - y)^2 / 2, linear regression (Twitter task).
"""
from __future__ import annotations

import numpy as np

from .hyper import ADAM_BETA1, ADAM_BETA2, ADAM_KAPPA, DPSGDHyper

LOSSES = ("logistic", "hinge", "squared")
OPTIMIZERS = ("sgd", "adam")


def with_bias(x: np.ndarray) -> np.ndarray:
    return np.concatenate([x, np.ones((len(x), 1), dtype=x.dtype)], axis=1)


def loss_derivative(loss: str, score: np.ndarray, y: np.ndarray) -> np.ndarray:
    """d loss / d score at score = w.x, elementwise."""
    if loss == "logistic":
        margin = y * score
        return -y * 0.5 * (1.0 - np.tanh(0.5 * margin))  # -y * sigmoid(-margin), overflow-free
    if loss == "hinge":
        return np.where(y * score < 1.0, -y, 0.0)
    if loss == "squared":
        return score - y
    raise ValueError(f"unknown loss {loss!r}; use one of {LOSSES}")


def clipped_gradient_sum(loss: str, w: np.ndarray, xb: np.ndarray, yb: np.ndarray, clip: float,
                         xb_norms: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Sum over the lot of per-example gradients clipped to L2 norm `clip`, and the unclipped norms.

    Shapes: w (..., d), xb (..., m, d), yb (..., m); leading dimensions are independent runs.
    """
    score = np.matmul(xb, w[..., None])[..., 0]
    c = loss_derivative(loss, score, yb)
    if xb_norms is None:
        xb_norms = np.linalg.norm(xb, axis=-1)
    norms = np.abs(c) * xb_norms
    scale = np.minimum(1.0, clip / np.maximum(norms, np.finfo(norms.dtype).tiny))
    return np.matmul((c * scale)[..., None, :], xb)[..., 0, :], norms


def train(x: np.ndarray, y: np.ndarray, loss: str, optimizer: str, hp: DPSGDHyper, runs: int,
          rng: np.random.Generator) -> np.ndarray:
    """Train `runs` independent replications; returns weights of shape (runs, d + 1) (bias last).

    Each step: every run samples its own lot of m examples uniformly without replacement, clips,
    adds N(0, (2 L z)^2 I) to the sum, divides by m and takes an SGD or Adam step (paper 001 Alg. 3/4).
    """
    if loss not in LOSSES or optimizer not in OPTIMIZERS:
        raise ValueError(f"unknown loss/optimizer {loss!r}/{optimizer!r}")
    # float32 lots (as Opacus uses): the gather of the lot is the main cost of a step.
    xs = with_bias(np.asarray(x, dtype=np.float32))
    ys = np.asarray(y, dtype=np.float32)
    row_norms = np.linalg.norm(xs, axis=1)
    n, d = xs.shape
    m, L, z, lr = hp.lot_size, hp.clip, hp.noise, hp.learning_rate
    w = np.zeros((runs, d))
    mu, nu = np.zeros_like(w), np.zeros_like(w)
    for step in range(1, hp.steps(n) + 1):
        idx = np.stack([rng.choice(n, m, replace=False) for _ in range(runs)])
        gsum, _ = clipped_gradient_sum(loss, w.astype(np.float32), xs[idx], ys[idx], L, row_norms[idx])
        g = (gsum + rng.normal(0.0, 2.0 * L * z, size=w.shape)) / m
        if optimizer == "sgd":
            w -= lr * g
        else:
            mu = ADAM_BETA1 * mu + (1 - ADAM_BETA1) * g
            nu = ADAM_BETA2 * nu + (1 - ADAM_BETA2) * g * g
            mu_hat = mu / (1 - ADAM_BETA1**step)
            nu_hat = nu / (1 - ADAM_BETA2**step)
            w -= lr * mu_hat / (np.sqrt(nu_hat) + ADAM_KAPPA)
    return w


def accuracy(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Test accuracy of each run's weights (w: (runs, d+1)); labels y in {-1, +1}."""
    scores = with_bias(np.asarray(x, dtype=np.float64)) @ w.T
    return ((scores >= 0) == (y[:, None] > 0)).mean(axis=0)


def mse(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    scores = with_bias(np.asarray(x, dtype=np.float64)) @ w.T
    return ((scores - y[:, None]) ** 2).mean(axis=0)
