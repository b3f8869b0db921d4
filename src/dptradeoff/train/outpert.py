"""Output-perturbation logistic regression (paper 000 §2.2): Wu et al. 2017 "bolt-on" private
strongly convex PSGD (their Alg. 2), then Gaussian noise on the output.

Loss: logistic + (gamma/2)||w||^2 on rows normalised to ||x|| = 1 (a per-example transform, so
it needs no privacy budget; the bias is a constant feature before normalising). On the ball
||w|| <= R = 1/gamma, which contains the minimiser, the loss is L = 1 + gamma R = 2 Lipschitz,
beta = 1/4 + gamma smooth and gamma strongly convex. Projected SGD with lot size 1, 10 passes
over a fresh random permutation each (paper 000 footnote 6), step size min(1/beta, 1/(gamma t)),
has L2 sensitivity 2L/(gamma n) (Wu et al. Thm 6), so releasing w + N(0, sigma^2 I) is
(epsilon, delta)-DP with epsilon from the analytic Gaussian mechanism
(`privacy.output_perturbation`, `privacy.events.OutputPerturbationDpEvent`).
"""
from __future__ import annotations

import numba
import numpy as np

from ..privacy.output_perturbation import sensitivity  # noqa: F401 - where callers look for it

EPOCHS = 10


def normalise(x: np.ndarray) -> np.ndarray:
    xb = np.concatenate([np.asarray(x, dtype=np.float64), np.ones((len(x), 1))], axis=1)
    return xb / np.linalg.norm(xb, axis=1, keepdims=True)


def train(x: np.ndarray, y: np.ndarray, gammas: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Non-private PSGD weights, one row per entry of `gammas` (each with its own permutations).
    x must be normalised (`normalise`), y in {-1, +1}. The permutations are drawn here (numpy), the
    n * EPOCHS projected steps of every run in one compiled loop (`_psgd`)."""
    gammas = np.asarray(gammas, dtype=np.float64)
    k, n = len(gammas), len(x)
    orders = np.empty((EPOCHS, k, n), dtype=np.int32 if n < 2**31 else np.int64)   # (epochs, k, n)
    for epoch in range(EPOCHS):
        orders[epoch] = np.argsort(rng.random((k, n)), axis=1)
    x = np.ascontiguousarray(x, dtype=np.float64)
    rows, features = np.nonzero(x)   # row-major: each row's non-zero features in increasing order
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n))])
    return _psgd(indptr, features, x[rows, features], x.shape[1], np.asarray(y, dtype=np.float64), gammas, orders)


@numba.njit(cache=True)
def _psgd(indptr, features, values, d, y, gammas, orders):
    """The rows x_i as CSR (features, values per row). Every step is the plain transcription's
    arithmetic, float for float (no fastmath), up to the sign of zero weights:
    - w.x sums w_f x_f over the non-zero x_f only, in increasing f: a skipped term is w_f * 0 = +-0,
      which leaves a sum unchanged (adult rows: 14 of 124 features);
    - w_f -= eta (c x_f + gamma w_f) is w_f - eta (gamma w_f) where x_f = 0 (c * 0 + a = a);
    - the projection is computed, with the serial sum of squares, only when ||w||^2 could reach
      1/gamma^2: a vectorised sum (`_fast_sum_of_squares`) differs from the serial one by under
      d * 2^-52 relative, so below radius^2 (1 - 4 (d + 1) 2^-52) the serial norm is below the
      radius, min(1, radius / norm) is exactly 1 and the scaling would change nothing."""
    k = len(gammas)
    w = np.zeros((k, d))
    updated = np.empty(d)
    margin_factor = 1.0 - 4.0 * (d + 1) * 2.0**-52
    for r in range(k):
        wr = w[r]
        gamma = gammas[r]
        beta, radius, t = 0.25 + gamma, 1.0 / gamma, 0
        below = radius * radius * margin_factor
        for epoch in range(orders.shape[0]):
            for j in range(orders.shape[2]):
                t += 1
                i = orders[epoch, r, j]
                start, stop = indptr[i], indptr[i + 1]
                margin = 0.0
                for p in range(start, stop):
                    margin += wr[features[p]] * values[p]
                c = -y[i] * 0.5 * (1.0 - np.tanh(0.5 * y[i] * margin))   # -y sigmoid(-y w.x)
                eta = min(1.0 / beta, 1.0 / (gamma * t))
                for p in range(start, stop):
                    f = features[p]
                    updated[p - start] = wr[f] - eta * (c * values[p] + gamma * wr[f])
                for f in range(d):
                    wr[f] -= eta * (gamma * wr[f])
                for p in range(start, stop):
                    wr[features[p]] = updated[p - start]
                if not _fast_sum_of_squares(wr) < below:
                    norm2 = 0.0
                    for f in range(d):
                        norm2 += wr[f] * wr[f]
                    scale = min(1.0, radius / max(np.sqrt(norm2), 1e-300))   # project onto ||w|| <= 1/gamma
                    for f in range(d):
                        wr[f] *= scale
    return w


@numba.njit(cache=True, fastmath={"reassoc"})
def _fast_sum_of_squares(v):
    """sum v_f^2 in any order (vectorised): within d * 2^-52 relative of the serial sum."""
    s = 0.0
    for f in range(len(v)):
        s += v[f] * v[f]
    return s


def release(w: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    return w + rng.normal(0.0, sigma, size=w.shape)


def accuracy(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return ((x @ w.T >= 0) == (y[:, None] > 0)).mean(axis=0)
