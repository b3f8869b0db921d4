"""Output-perturbation logistic regression (paper 000 §2.2): Wu et al. 2017 "bolt-on" private
strongly convex PSGD (their Alg. 2), then Gaussian noise on the output.

Loss: logistic + (gamma/2)||w||^2 on rows normalised to ||x|| = 1 (a per-example transform, so
it needs no privacy budget; the bias is a constant feature before normalising). On the ball
||w|| <= R = 1/gamma, which contains the minimiser, the loss is L = 1 + gamma R = 2 Lipschitz,
beta = 1/4 + gamma smooth and gamma strongly convex. Projected SGD with lot size 1, 10 passes
over a fresh random permutation each (paper 000 footnote 6), step size min(1/beta, 1/(gamma t)),
has L2 sensitivity 2L/(gamma n) (Wu et al. Thm 6), so releasing w + N(0, sigma^2 I) is
(epsilon, delta)-DP with epsilon from the analytic Gaussian mechanism.
"""
from __future__ import annotations

import numpy as np

from ..privacy import gaussian

LIPSCHITZ = 2.0
EPOCHS = 10


def sensitivity(gamma: float, n: int) -> float:
    return 2.0 * LIPSCHITZ / (gamma * n)


def epsilon(gamma: float, sigma: float, n: int, delta: float) -> float:
    return gaussian.epsilon(sigma, sensitivity(gamma, n), delta)


def normalise(x: np.ndarray) -> np.ndarray:
    xb = np.concatenate([np.asarray(x, dtype=np.float64), np.ones((len(x), 1))], axis=1)
    return xb / np.linalg.norm(xb, axis=1, keepdims=True)


def train(x: np.ndarray, y: np.ndarray, gammas: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Non-private PSGD weights, one row per entry of `gammas` (each with its own permutations).

    x must be normalised (`normalise`), y in {-1, +1}. Rows are independent runs, vectorised."""
    gammas = np.asarray(gammas, dtype=np.float64)
    k, (n, d) = len(gammas), x.shape
    beta = 0.25 + gammas
    radius = 1.0 / gammas
    w = np.zeros((k, d))
    t = 0
    for _ in range(EPOCHS):
        order = np.argsort(rng.random((k, n)), axis=1)  # an independent permutation per run
        for j in range(n):
            t += 1
            xi = x[order[:, j]]
            yi = y[order[:, j]]
            margin = yi * np.einsum("kd,kd->k", w, xi)
            c = -yi * 0.5 * (1.0 - np.tanh(0.5 * margin))
            eta = np.minimum(1.0 / beta, 1.0 / (gammas * t))
            w -= eta[:, None] * (c[:, None] * xi + gammas[:, None] * w)
            norm = np.sqrt(np.einsum("kd,kd->k", w, w))
            w *= np.minimum(1.0, radius / np.maximum(norm, 1e-300))[:, None]
    return w


def release(w: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    return w + rng.normal(0.0, sigma, size=w.shape)


def accuracy(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return ((x @ w.T >= 0) == (y[:, None] > 0)).mean(axis=0)
