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

import numba
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
    x must be normalised (`normalise`), y in {-1, +1}. The permutations are drawn here (numpy), the
    n * EPOCHS projected steps of every run in one compiled loop (`_psgd`)."""
    gammas = np.asarray(gammas, dtype=np.float64)
    k, n = len(gammas), len(x)
    orders = np.stack([np.argsort(rng.random((k, n)), axis=1) for _ in range(EPOCHS)])  # (epochs, k, n)
    return _psgd(np.ascontiguousarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64), gammas, orders)


@numba.njit(cache=True)
def _psgd(x, y, gammas, orders):
    k, d = len(gammas), x.shape[1]
    w = np.zeros((k, d))
    for r in range(k):
        gamma = gammas[r]
        beta, radius, t = 0.25 + gamma, 1.0 / gamma, 0
        for epoch in range(orders.shape[0]):
            for j in range(orders.shape[2]):
                t += 1
                i = orders[epoch, r, j]
                margin = 0.0
                for f in range(d):
                    margin += w[r, f] * x[i, f]
                c = -y[i] * 0.5 * (1.0 - np.tanh(0.5 * y[i] * margin))   # -y sigmoid(-y w.x)
                eta = min(1.0 / beta, 1.0 / (gamma * t))
                norm2 = 0.0
                for f in range(d):
                    w[r, f] -= eta * (c * x[i, f] + gamma * w[r, f])
                    norm2 += w[r, f] * w[r, f]
                scale = min(1.0, radius / max(np.sqrt(norm2), 1e-300))   # project onto ||w|| <= 1/gamma
                for f in range(d):
                    w[r, f] *= scale
    return w


def release(w: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    return w + rng.normal(0.0, sigma, size=w.shape)


def accuracy(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return ((x @ w.T >= 0) == (y[:, None] > 0)).mean(axis=0)
