"""The sparse vector technique of paper 000 Alg. 1 as a utility oracle: m binary queries of which
`true_queries` answer 1, threshold 1/2, answered in random orders; utility = F1 of the returned
indicator vector against the true answers, averaged over the orders."""
from __future__ import annotations

import numpy as np

from ..privacy.svt import noise_split


def f1_scores(bound: int, b: float, orders: int, rng: np.random.Generator, queries: int = 100, true_queries: int = 10) -> np.ndarray:
    """F1 of one run of Alg. 1 per random order of the queries (vectorised over orders)."""
    b1, b2 = noise_split(b, bound)
    truth = np.zeros((orders, queries))
    truth[:, :true_queries] = 1.0
    truth = rng.permuted(truth, axis=1)
    rho = rng.laplace(0.0, b1, size=(orders, 1))
    nu = rng.laplace(0.0, b2, size=(orders, queries))
    above = truth + nu >= 0.5 + rho
    # Alg. 1 stops after its C-th positive answer: later queries stay 0.
    answered = above & (np.cumsum(above, axis=1) <= bound)
    tp = (answered & (truth > 0)).sum(1)
    fp = (answered & (truth == 0)).sum(1)
    fn = ((~answered) & (truth > 0)).sum(1)
    return 2 * tp / np.maximum(2 * tp + fp + fn, 1)
