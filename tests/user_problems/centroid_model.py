"""The model of `numpy2_centroid.py`, a module beside it (its oracle imports it as a sibling):
a nearest-centroid classifier for 0/1 labels from class sums released by the Laplace mechanism."""
from __future__ import annotations

import numpy as np


def clip_rows(x: np.ndarray, clip: float, l1_norms: np.ndarray) -> np.ndarray:
    """Every row scaled to L1 norm <= clip."""
    return x * np.minimum(1.0, clip / np.maximum(l1_norms, 1e-12))[:, None]


def train(x: np.ndarray, y: np.ndarray, eps: float, clip: float, l1_norms: np.ndarray,
          rng: np.random.Generator) -> np.ndarray:
    """The two class sums of the clipped rows, each coordinate with Laplace noise of scale 2 clip / eps:
    replacing one row moves at most 2 clip of L1 mass between the sums, so the release is eps-DP
    (replace-one); the centroids divide by the public row count. Returns (2, d) centroids."""
    clipped = clip_rows(x, clip, l1_norms)
    sums = np.stack([clipped[y == 0].sum(axis=0), clipped[y == 1].sum(axis=0)])
    noisy = sums + rng.laplace(0.0, 2.0 * clip / eps, size=sums.shape)
    return noisy / len(y)


def accuracy(centroids: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    scores = x @ centroids.T - 0.5 * (centroids**2).sum(axis=1)
    return float(np.mean(np.argmax(scores, axis=1) == y))


def losses(centroids: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Each row's margin loss: its score for the other class minus its score for its own."""
    scores = x @ centroids.T - 0.5 * (centroids**2).sum(axis=1)
    own = scores[np.arange(len(y)), np.asarray(y, dtype=int)]
    return scores[np.arange(len(y)), 1 - np.asarray(y, dtype=int)] - own
